//! Permuted tables for Hamming-distance search (Manku, Jain, Das Sarma 2007).
//!
//! The `bits` of a fingerprint are cut into `B >= k + 1` contiguous blocks. Two fingerprints at
//! distance <= k differ in at most k blocks, so they agree on at least `B - k` of them: for every
//! combination of `B - k` blocks there is one table, keyed by those blocks' bits, and a near pair
//! shares a key in at least one table (pigeonhole). Each table is a hash map from key to the slots
//! holding it; candidates are checked with the exact distance, so results are exact.
//!
//! With `B = k + 1` there are `k + 1` tables keyed by about `bits / (k + 1)` bits. More blocks mean
//! more tables with longer keys: fewer candidates per query, more memory.
//!
//! The batch all-pairs mode sorts `(key, slot)` per table and compares within runs of equal keys.
//! A pair is reported only by the first table (in combination order) whose blocks all agree, so
//! each near pair appears exactly once without a global set of seen pairs.

use std::fmt;

use rustc_hash::FxHashMap;

/// An error building an index.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexError {
    /// Fingerprints must be 64 or 128 bits (32-bit ones can be stored as 64 with zero high bits).
    UnsupportedBits {
        /// The width asked for.
        bits: u32,
    },
    /// `blocks` must be at least `k + 1` and at most `bits` (and at most 16, to bound the number
    /// of tables).
    BadBlocks {
        /// The block count asked for.
        blocks: u32,
        /// The distance.
        k: u32,
    },
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexError::UnsupportedBits { bits } => {
                write!(f, "Hamming index fingerprints must be 64 or 128 bits, not {bits}")
            }
            IndexError::BadBlocks { blocks, k } => {
                write!(f, "{blocks} blocks cannot index distance {k}: need k + 1 <= blocks <= 16")
            }
        }
    }
}

impl std::error::Error for IndexError {}

/// One table: which blocks form its key.
#[derive(Debug, Clone)]
struct Table {
    /// Bitmask over blocks.
    blocks: u32,
    /// The bits of the fingerprint that form the key.
    mask: u128,
    map: FxHashMap<u128, Vec<u32>>,
}

/// An exact index of fingerprints for "everything within Hamming distance k".
#[derive(Debug, Clone)]
pub struct HammingIndex {
    bits: u32,
    k: u32,
    /// Bit mask of each block.
    block_masks: Vec<u128>,
    tables: Vec<Table>,
    /// Slot -> (id, fingerprint); a removed slot holds None until reused.
    slots: Vec<Option<(u64, u128)>>,
    free: Vec<u32>,
    slot_of: FxHashMap<u64, u32>,
}

impl HammingIndex {
    /// An index of `bits`-bit fingerprints (64 or 128) for distance `k`, with `k + 1` blocks.
    pub fn new(bits: u32, k: u32) -> Result<HammingIndex, IndexError> {
        HammingIndex::with_blocks(bits, k, k + 1)
    }

    /// An index with `blocks` blocks (at least `k + 1`): `C(blocks, k)` tables.
    pub fn with_blocks(bits: u32, k: u32, blocks: u32) -> Result<HammingIndex, IndexError> {
        if bits != 64 && bits != 128 {
            return Err(IndexError::UnsupportedBits { bits });
        }
        if blocks < k + 1 || blocks > 16 || blocks > bits {
            return Err(IndexError::BadBlocks { blocks, k });
        }
        // Contiguous blocks, the first `bits % blocks` one bit longer.
        let mut block_masks = Vec::with_capacity(blocks as usize);
        let (base, extra) = (bits / blocks, bits % blocks);
        let mut start = 0;
        for b in 0..blocks {
            let len = base + u32::from(b < extra);
            let mask = if len == 128 { u128::MAX } else { ((1u128 << len) - 1) << start };
            block_masks.push(mask);
            start += len;
        }
        let keep = blocks - k;
        let tables = combinations(blocks, keep)
            .into_iter()
            .map(|combo| {
                let mask = (0..blocks)
                    .filter(|b| combo & (1 << b) != 0)
                    .fold(0u128, |m, b| m | block_masks[b as usize]);
                Table { blocks: combo, mask, map: FxHashMap::default() }
            })
            .collect();
        Ok(HammingIndex {
            bits,
            k,
            block_masks,
            tables,
            slots: Vec::new(),
            free: Vec::new(),
            slot_of: FxHashMap::default(),
        })
    }

    /// The distance this index answers for.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The fingerprint width.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// The number of tables.
    pub fn tables(&self) -> usize {
        self.tables.len()
    }

    /// The number of fingerprints stored.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Stores `fingerprint` under `id`, replacing what `id` held. Bits above the width are ignored.
    pub fn insert(&mut self, id: u64, fingerprint: u128) {
        let fp = self.clip(fingerprint);
        self.remove(id);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some((id, fp));
                s
            }
            None => {
                self.slots.push(Some((id, fp)));
                (self.slots.len() - 1) as u32
            }
        };
        self.slot_of.insert(id, slot);
        for t in &mut self.tables {
            t.map.entry(fp & t.mask).or_default().push(slot);
        }
    }

    /// The key of `fingerprint` in each table, for a job that groups fingerprints by key instead
    /// of holding tables (Manku et al.'s MapReduce plan): two fingerprints within distance k
    /// share at least one table's key, so the pairs of each key's group, checked for distance,
    /// are exactly the pairs [`HammingIndex::pairs`] gives. A key is the table's number and the
    /// bits of its blocks, hashed to 64 bits (a collision adds a candidate, never loses one).
    pub fn table_keys(&self, fingerprint: u128) -> impl Iterator<Item = u64> + '_ {
        let fp = self.clip(fingerprint);
        self.tables.iter().enumerate().map(move |(i, t)| {
            let mut bytes = [0u8; 17];
            bytes[0] = i as u8;
            bytes[1..].copy_from_slice(&(fp & t.mask).to_le_bytes());
            xxhash_rust::xxh3::xxh3_64(&bytes)
        })
    }

    /// Removes `id`; returns whether it was stored.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(slot) = self.slot_of.remove(&id) else { return false };
        let (_, fp) = self.slots[slot as usize].take().expect("a mapped slot is occupied");
        for t in &mut self.tables {
            let key = fp & t.mask;
            if let Some(list) = t.map.get_mut(&key) {
                if let Some(pos) = list.iter().position(|&s| s == slot) {
                    list.swap_remove(pos);
                }
                if list.is_empty() {
                    t.map.remove(&key);
                }
            }
        }
        self.free.push(slot);
        true
    }

    /// The fingerprint stored under `id`.
    pub fn get(&self, id: u64) -> Option<u128> {
        self.slot_of.get(&id).and_then(|&s| self.slots[s as usize]).map(|(_, fp)| fp)
    }

    /// Every stored `(id, distance)` within distance `k` of `fingerprint`, sorted by distance then
    /// id.
    pub fn query(&self, fingerprint: u128) -> Vec<(u64, u32)> {
        let fp = self.clip(fingerprint);
        let mut out = Vec::new();
        for (t_index, t) in self.tables.iter().enumerate() {
            let Some(list) = t.map.get(&(fp & t.mask)) else { continue };
            for &slot in list {
                let (id, other) = self.slots[slot as usize].expect("listed slots are occupied");
                let d = (fp ^ other).count_ones();
                if d <= self.k && self.first_table(fp, other) == t_index {
                    out.push((id, d));
                }
            }
        }
        out.sort_unstable_by_key(|&(id, d)| (d, id));
        out
    }

    /// Every pair of stored fingerprints within distance `k`, as `(id_a, id_b, distance)` with
    /// `id_a < id_b`, sorted.
    pub fn pairs(&self) -> Vec<(u64, u64, u32)> {
        let live: Vec<(u64, u128)> = self.slots.iter().flatten().copied().collect();
        let fps: Vec<u128> = live.iter().map(|&(_, fp)| fp).collect();
        let mut out: Vec<(u64, u64, u32)> = self
            .pairs_of(&fps)
            .into_iter()
            .map(|(x, y, d)| {
                let (a, b) = (live[x as usize].0, live[y as usize].0);
                (a.min(b), a.max(b), d)
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// Every pair of `fps` (already clipped to the width) within distance `k`, as positions
    /// `(x, y, distance)` with `x < y`, unordered. Uses the table layout, not the stored maps.
    fn pairs_of(&self, fps: &[u128]) -> Vec<(u32, u32, u32)> {
        self.pairs_below(fps, usize::MAX).expect("no group is larger than usize::MAX")
    }

    /// [`HammingIndex::pairs_of`], or `None` when some table groups more than `max_group`.
    fn pairs_below(&self, fps: &[u128], max_group: usize) -> Option<Vec<(u32, u32, u32)>> {
        let mut out = Vec::new();
        // Per table: the fingerprints grouped by key (a counting sort when the packed key is
        // short, a comparison sort otherwise), copied into bucket order so that comparing within
        // a group reads memory sequentially.
        let mut order: Vec<u32> = Vec::with_capacity(fps.len());
        let mut grouped: Vec<u128> = Vec::with_capacity(fps.len());
        let mut groups: Vec<(usize, usize)> = Vec::new();
        for (t_index, t) in self.tables.iter().enumerate() {
            group(t, fps, &mut order, &mut groups);
            if groups.iter().any(|&(start, end)| end - start > max_group) {
                return None;
            }
            grouped.clear();
            grouped.extend(order.iter().map(|&i| fps[i as usize]));
            for &(start, end) in &groups {
                for x in start..end {
                    let fa = grouped[x];
                    for y in x + 1..end {
                        let fb = grouped[y];
                        let d = (fa ^ fb).count_ones();
                        if d <= self.k && self.first_table(fa, fb) == t_index {
                            let (a, b) = (order[x], order[y]);
                            out.push((a.min(b), a.max(b), d));
                        }
                    }
                }
            }
        }
        Some(out)
    }

    /// Orders `live` by the table's key into `order`; `groups` gets the `(start, end)` ranges of
    /// `order` that share a key and have two or more members.
    /// The first table whose blocks all agree between `a` and `b` (one exists when the distance
    /// is at most k).
    fn first_table(&self, a: u128, b: u128) -> usize {
        let diff = a ^ b;
        let mut equal = 0u32;
        for (i, m) in self.block_masks.iter().enumerate() {
            if diff & m == 0 {
                equal |= 1 << i;
            }
        }
        self.tables.iter().position(|t| t.blocks & !equal == 0).unwrap_or(usize::MAX)
    }

    fn clip(&self, fp: u128) -> u128 {
        if self.bits == 128 {
            fp
        } else {
            fp & u128::from(u64::MAX)
        }
    }
}

/// Orders `fps` by the table's key into `order`; `groups` gets the `(start, end)` ranges of
/// `order` that share a key and have two or more members.
fn group(t: &Table, fps: &[u128], order: &mut Vec<u32>, groups: &mut Vec<(usize, usize)>) {
    order.clear();
    groups.clear();
    let key_bits = t.mask.count_ones();
    if key_bits <= 24 && (1usize << key_bits) <= 4 * fps.len() {
        // Counting sort on the packed key: O(n + 2^bits), used when the key space is small
        // against the number of fingerprints.
        let packed: Vec<u32> = fps.iter().map(|&fp| pack(fp, t.mask) as u32).collect();
        let mut starts = vec![0usize; (1usize << key_bits) + 1];
        for &k in &packed {
            starts[k as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        order.resize(fps.len(), 0);
        for (i, &k) in packed.iter().enumerate() {
            order[next[k as usize]] = i as u32;
            next[k as usize] += 1;
        }
        groups.extend(starts.windows(2).map(|w| (w[0], w[1])).filter(|(a, b)| b - a >= 2));
        return;
    }
    let mut keyed: Vec<(u128, u32)> =
        fps.iter().enumerate().map(|(i, &fp)| (fp & t.mask, i as u32)).collect();
    keyed.sort_unstable_by_key(|e| e.0);
    order.extend(keyed.iter().map(|e| e.1));
    let mut start = 0;
    while start < keyed.len() {
        let mut end = start + 1;
        while end < keyed.len() && keyed[end].0 == keyed[start].0 {
            end += 1;
        }
        if end - start >= 2 {
            groups.push((start, end));
        }
        start = end;
    }
}

/// The bits of `fp` selected by `mask`, packed into the low bits (a software `pext`).
fn pack(fp: u128, mask: u128) -> u128 {
    let (mut out, mut m, mut bit) = (0u128, mask, 0u32);
    while m != 0 {
        // Walk runs of ones in the mask: blocks are contiguous, so there are few of them.
        let start = m.trailing_zeros();
        let len = (m >> start).trailing_ones();
        let run = if len == 128 { u128::MAX } else { (1u128 << len) - 1 };
        out |= ((fp >> start) & run) << bit;
        bit += len;
        m &= !(run << start);
    }
    out
}

/// All `keep`-element subsets of `0..n` as bitmasks, in lexicographic order of their elements.
fn combinations(n: u32, keep: u32) -> Vec<u32> {
    let mut out: Vec<u32> = (0u32..(1 << n)).filter(|m| m.count_ones() == keep).collect();
    // Lexicographic by the sorted element list: compare bit-reversed masks descending.
    out.sort_by_key(|&m| std::cmp::Reverse(m.reverse_bits()));
    out
}

/// Every pair of `fingerprints` (64 or 128 bits wide) within Hamming distance `k`, as positions
/// `(x, y, distance)` with `x < y`, sorted: the batch all-pairs mode, without building the
/// index's hash maps.
pub fn hamming_pairs(
    bits: u32,
    k: u32,
    fingerprints: &[u128],
) -> Result<Vec<(u32, u32, u32)>, IndexError> {
    let index = HammingIndex::new(bits, k)?;
    let fps: Vec<u128> = fingerprints.iter().map(|&fp| index.clip(fp)).collect();
    let mut out = index.pairs_of(&fps);
    out.sort_unstable();
    Ok(out)
}

/// [`hamming_pairs`] under the skew guard `cap` ([`crate::BucketCap`]): a permuted table's group
/// of more than `cap.max_bucket` fingerprints pairs only its first `cap.star_width` members (by
/// position) with the others. The same pairs as [`hamming_pairs`] when no group is that large.
pub fn hamming_pairs_capped(
    bits: u32,
    k: u32,
    fingerprints: &[u128],
    cap: Option<crate::BucketCap>,
) -> Result<Vec<(u32, u32, u32)>, IndexError> {
    let Some(cap) = cap else { return hamming_pairs(bits, k, fingerprints) };
    let index = HammingIndex::new(bits, k)?;
    let fps: Vec<u128> = fingerprints.iter().map(|&fp| index.clip(fp)).collect();
    if let Some(mut out) = index.pairs_below(&fps, cap.max_bucket) {
        out.sort_unstable();
        return Ok(out);
    }
    let keys: Vec<u64> = fps.iter().flat_map(|&fp| index.table_keys(fp)).collect();
    let tables = index.tables();
    let out = crate::capped_pairs_by(fps.len(), tables, |i, t| keys[i * tables + t], cap)
        .into_iter()
        .filter_map(|(a, b)| {
            let d = (fps[a as usize] ^ fps[b as usize]).count_ones();
            (d <= k).then_some((a, b, d))
        })
        .collect();
    Ok(out)
}

/// The oracle: every `(id, distance)` within `k` of `query`, by scanning, sorted as
/// [`HammingIndex::query`].
pub fn brute_force(items: &[(u64, u128)], query: u128, k: u32) -> Vec<(u64, u32)> {
    let mut out: Vec<(u64, u32)> = items
        .iter()
        .map(|&(id, fp)| (id, (fp ^ query).count_ones()))
        .filter(|&(_, d)| d <= k)
        .collect();
    out.sort_unstable_by_key(|&(id, d)| (d, id));
    out
}

/// The oracle for [`HammingIndex::pairs`]: every pair within `k`, by comparing all pairs.
pub fn brute_force_pairs(items: &[(u64, u128)], k: u32) -> Vec<(u64, u64, u32)> {
    let mut out = Vec::new();
    for (i, &(a, fa)) in items.iter().enumerate() {
        for &(b, fb) in &items[i + 1..] {
            let d = (fa ^ fb).count_ones();
            if d <= k {
                out.push((a.min(b), a.max(b), d));
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pack_gathers_masked_bits() {
        assert_eq!(pack(0b1011_0110, 0b1111_0000), 0b1011);
        assert_eq!(pack(0b1011_0110, 0b1100_0011), 0b1010);
        assert_eq!(pack(u128::MAX, u128::MAX), u128::MAX);
    }

    #[test]
    fn combinations_are_complete_and_ordered() {
        assert_eq!(combinations(4, 3), [0b0111, 0b1011, 0b1101, 0b1110]);
        assert_eq!(combinations(6, 3).len(), 20);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert_eq!(
            HammingIndex::new(32, 3).expect_err("invalid"),
            IndexError::UnsupportedBits { bits: 32 }
        );
        assert!(matches!(HammingIndex::with_blocks(64, 3, 3), Err(IndexError::BadBlocks { .. })));
    }

    #[test]
    fn insert_replace_remove() {
        let mut idx = HammingIndex::new(64, 3).expect("valid");
        idx.insert(1, 0b1111);
        idx.insert(2, 0b0111);
        assert_eq!(idx.query(0b1111), [(1, 0), (2, 1)]);
        idx.insert(2, u128::from(u64::MAX)); // replaced
        assert_eq!(idx.query(0b1111), [(1, 0)]);
        assert!(idx.remove(1));
        assert!(!idx.remove(1));
        assert!(idx.query(0b1111).is_empty());
        assert_eq!(idx.len(), 1);
        assert_eq!(idx.get(2), Some(u128::from(u64::MAX)));
    }

    /// Random fingerprints plus near copies of them (a few flipped bits), so that every distance
    /// around k occurs.
    fn corpus(bits: u32) -> impl Strategy<Value = Vec<u128>> {
        let width = bits;
        (
            prop::collection::vec(any::<u128>(), 1..40),
            prop::collection::vec(
                (any::<prop::sample::Index>(), prop::collection::vec(0..width, 0..10)),
                0..80,
            ),
        )
            .prop_map(move |(base, flips)| {
                let clip = |v: u128| if width == 128 { v } else { v & u128::from(u64::MAX) };
                let mut all: Vec<u128> = base.iter().map(|&v| clip(v)).collect();
                for (pick, bits) in flips {
                    let mut v = all[pick.index(all.len())];
                    for b in bits {
                        v ^= 1 << b;
                    }
                    all.push(v);
                }
                all
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn query_equals_brute_force_64(fps in corpus(64), k in 0u32..=8, extra in 0u32..3) {
            check(64, k, (k + 1 + extra).min(16), &fps)?;
        }

        #[test]
        fn query_equals_brute_force_128(fps in corpus(128), k in 0u32..=8, extra in 0u32..3) {
            check(128, k, (k + 1 + extra).min(16), &fps)?;
        }

        /// The skew guard on permuted tables: with a cap no group reaches, the exact pairs;
        /// with a small one, the pairs of the bucket rule over the tables' keys within k.
        #[test]
        fn capped_hamming_pairs(fps in corpus(64), k in 0u32..=4, max_bucket in 2usize..5) {
            let cap = crate::BucketCap { max_bucket, star_width: 1 };
            let wide = crate::BucketCap { max_bucket: fps.len(), star_width: 1 };
            prop_assert_eq!(
                hamming_pairs_capped(64, k, &fps, Some(wide)).expect("valid"),
                hamming_pairs(64, k, &fps).expect("valid")
            );
            let idx = HammingIndex::new(64, k).expect("valid");
            let keys: Vec<Vec<u64>> = fps.iter().map(|&fp| idx.table_keys(fp).collect()).collect();
            let mut expected = Vec::new();
            for a in 0..fps.len() {
                for b in a + 1..fps.len() {
                    let d = (fps[a] ^ fps[b]).count_ones();
                    let paired = (0..idx.tables()).any(|t| {
                        let bucket: Vec<usize> =
                            (0..fps.len()).filter(|&i| keys[i][t] == keys[a][t]).collect();
                        keys[a][t] == keys[b][t]
                            && (bucket.len() <= max_bucket || bucket[0] == a || bucket[0] == b)
                    });
                    if paired && d <= k {
                        expected.push((a as u32, b as u32, d));
                    }
                }
            }
            prop_assert_eq!(hamming_pairs_capped(64, k, &fps, Some(cap)).expect("valid"), expected);
        }

        /// The distributed plan: group by table key, pair within each group, keep the pairs
        /// within k; exactly the brute-force pairs.
        #[test]
        fn grouping_by_table_keys_finds_every_pair(fps in corpus(64), k in 0u32..=6) {
            let idx = HammingIndex::new(64, k).expect("valid");
            let mut groups: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
            for (i, &fp) in fps.iter().enumerate() {
                let keys: Vec<u64> = idx.table_keys(fp).collect();
                prop_assert_eq!(keys.len(), idx.tables());
                for key in keys {
                    groups.entry(key).or_default().push(i);
                }
            }
            let mut found = std::collections::BTreeSet::new();
            for members in groups.values() {
                for (x, &a) in members.iter().enumerate() {
                    for &b in &members[x + 1..] {
                        let d = (fps[a] ^ fps[b]).count_ones();
                        if d <= k {
                            found.insert((a as u64, b as u64, d));
                        }
                    }
                }
            }
            let items: Vec<(u64, u128)> =
                fps.iter().enumerate().map(|(i, &fp)| (i as u64, fp)).collect();
            let expected: std::collections::BTreeSet<_> =
                brute_force_pairs(&items, k).into_iter().collect();
            prop_assert_eq!(found, expected);
        }
    }

    fn check(bits: u32, k: u32, blocks: u32, fps: &[u128]) -> Result<(), TestCaseError> {
        let mut idx = HammingIndex::with_blocks(bits, k, blocks).expect("valid");
        let mut items: Vec<(u64, u128)> =
            fps.iter().enumerate().map(|(i, &fp)| (i as u64, fp)).collect();
        for &(id, fp) in &items {
            idx.insert(id, fp);
        }
        // Remove every third one, from the index and the oracle alike.
        for id in (0..items.len() as u64).step_by(3) {
            prop_assert!(idx.remove(id));
        }
        items.retain(|&(id, _)| id % 3 != 0);
        for &(_, fp) in &items {
            prop_assert_eq!(idx.query(fp), brute_force(&items, fp, k));
            let probe = fp ^ 0b101;
            prop_assert_eq!(idx.query(probe), brute_force(&items, probe, k));
        }
        prop_assert_eq!(idx.pairs(), brute_force_pairs(&items, k));
        // The batch mode over a plain slice, by position.
        let fps: Vec<u128> = items.iter().map(|&(_, fp)| fp).collect();
        let by_position: Vec<(u64, u128)> =
            fps.iter().enumerate().map(|(i, &fp)| (i as u64, fp)).collect();
        let batch: Vec<(u64, u64, u32)> = hamming_pairs(bits, k, &fps)
            .expect("valid")
            .into_iter()
            .map(|(x, y, d)| (u64::from(x), u64::from(y), d))
            .collect();
        prop_assert_eq!(batch, brute_force_pairs(&by_position, k));
        Ok(())
    }
}
