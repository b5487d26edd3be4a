//! MinHash LSH banding (Indyk and Motwani 1998; Broder 1997; the scheme of datasketch's
//! `MinHashLSH`).
//!
//! A signature of `bands * rows` values is cut into `bands` bands of `rows` consecutive values.
//! Two signatures are candidates when they agree on every value of at least one band, which
//! happens with probability `1 - (1 - s^rows)^bands` for Jaccard similarity `s`. Each band is
//! reduced to one 64-bit key (xxh3 of its values, seeded with the band number) so that a table
//! costs 12 bytes per document whatever `rows` is. Two different bands colliding in 64 bits is
//! rare enough (about `n^2 / 2^65` per band) to leave to the caller's exact verification, which
//! rejects such a pair like any other false candidate.
//!
//! [`MinHashLsh`] is the incremental index (insert, remove, query); [`candidate_pairs`] is the
//! batch mode, which sorts keys instead of building hash maps and reports each pair once, from
//! the first band where it collides.

use rayon::prelude::*;
use std::fmt;

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

/// How a signature is cut into bands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Banding {
    bands: usize,
    rows: usize,
}

/// An error choosing bands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BandingError {
    /// `bands` and `rows` must be at least 1.
    Zero,
    /// The signature is shorter than `bands * rows`.
    SignatureTooShort {
        /// `bands * rows`.
        needed: usize,
        /// The signature length given.
        len: usize,
    },
}

impl fmt::Display for BandingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BandingError::Zero => write!(f, "bands and rows must each be at least 1"),
            BandingError::SignatureTooShort { needed, len } => {
                write!(f, "banding needs {needed} MinHash values, the signature has {len}")
            }
        }
    }
}

impl std::error::Error for BandingError {}

impl Banding {
    /// `bands` bands of `rows` values each.
    pub fn new(bands: usize, rows: usize) -> Result<Banding, BandingError> {
        if bands == 0 || rows == 0 {
            return Err(BandingError::Zero);
        }
        Ok(Banding { bands, rows })
    }

    /// The number of bands.
    pub fn bands(&self) -> usize {
        self.bands
    }

    /// Values per band.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Checks that signatures of `len` values can be banded (extra values are ignored, as
    /// datasketch does when `bands * rows < num_perm`).
    pub fn check(&self, len: usize) -> Result<(), BandingError> {
        let needed = self.bands * self.rows;
        if len < needed {
            return Err(BandingError::SignatureTooShort { needed, len });
        }
        Ok(())
    }

    /// Appends the `bands` keys of `signature` to `out`.
    ///
    /// # Panics
    /// If the signature is shorter than `bands * rows` (see [`Banding::check`]).
    pub fn keys_into(&self, signature: &[u32], out: &mut Vec<u64>) {
        let mut bytes = [0u8; 4 * 64];
        for (band, values) in signature.chunks_exact(self.rows).take(self.bands).enumerate() {
            let key = if values.len() <= 64 {
                for (i, v) in values.iter().enumerate() {
                    bytes[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
                }
                xxhash_rust::xxh3::xxh3_64_with_seed(&bytes[..4 * values.len()], band as u64)
            } else {
                let long: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                xxhash_rust::xxh3::xxh3_64_with_seed(&long, band as u64)
            };
            out.push(key);
        }
        assert!(out.len().is_multiple_of(self.bands), "signature shorter than bands * rows");
    }

    /// The `bands` keys of `signature`.
    pub fn keys(&self, signature: &[u32]) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.bands);
        self.keys_into(signature, &mut out);
        out
    }
}

/// Every pair of documents whose keys agree in at least one band, as positions `(x, y)` with
/// `x < y`, sorted. `keys` holds `bands` keys per document, document after document.
///
/// Per band, `(key, position)` is sorted and runs of equal keys give the pairs; a pair is kept
/// only in the first band where its keys agree, so no global set of seen pairs is needed. A run
/// of `m` equal keys costs `m^2 / 2` comparisons: callers should merge exact duplicates first.
pub fn candidate_pairs(keys: &[u64], bands: usize) -> Vec<(u32, u32)> {
    assert!(
        bands > 0 && keys.len().is_multiple_of(bands),
        "keys must hold `bands` keys per document"
    );
    candidate_pairs_by(keys.len() / bands, bands, |i, band| keys[i * bands + band])
}

/// [`candidate_pairs`] of `n` documents whose keys are given by `key(document, band)`, so that
/// the caller need not copy them into one array. The bands are searched in parallel (one
/// sorted column of 12 bytes per document per thread).
pub fn candidate_pairs_by(
    n: usize,
    bands: usize,
    key: impl Fn(usize, usize) -> u64 + Sync,
) -> Vec<(u32, u32)> {
    uncapped_pairs(n, bands, key, usize::MAX).expect("no bucket is larger than usize::MAX")
}

/// [`candidate_pairs_by`], or `None` as soon as some bucket holds more than `max_run`
/// documents (its pairs are not enumerated).
fn uncapped_pairs(
    n: usize,
    bands: usize,
    key: impl Fn(usize, usize) -> u64 + Sync,
    max_run: usize,
) -> Option<Vec<(u32, u32)>> {
    assert!(bands > 0, "at least one band");
    let too_large = std::sync::atomic::AtomicBool::new(false);
    let per_band: Vec<Vec<(u32, u32)>> = (0..bands)
        .into_par_iter()
        .map(|band| {
            let mut out = Vec::new();
            if too_large.load(std::sync::atomic::Ordering::Relaxed) {
                return out;
            }
            let mut column: Vec<(u64, u32)> = (0..n).map(|i| (key(i, band), i as u32)).collect();
            column.sort_unstable();
            let mut start = 0;
            while start < n {
                let mut end = start + 1;
                while end < n && column[end].0 == column[start].0 {
                    end += 1;
                }
                if end - start > max_run {
                    too_large.store(true, std::sync::atomic::Ordering::Relaxed);
                    return out;
                }
                let run = &column[start..end];
                for (x, &(_, a)) in run.iter().enumerate() {
                    let a = a as usize;
                    for &(_, b) in &run[x + 1..] {
                        let b = b as usize;
                        let earlier = (0..band).any(|e| key(a, e) == key(b, e));
                        if !earlier {
                            out.push((a.min(b) as u32, a.max(b) as u32));
                        }
                    }
                }
                start = end;
            }
            out
        })
        .collect();
    if too_large.into_inner() {
        return None;
    }
    let mut out: Vec<(u32, u32)> = per_band.concat();
    out.sort_unstable();
    Some(out)
}

/// The skew guard of a batch candidate search: a bucket (documents sharing one key in one band
/// or table) of more than `max_bucket` documents pairs only its first `star_width` members (by
/// position) with every other member, instead of all pairs, so a hot key (thousands of
/// near-copies of one text, boilerplate) costs linear time. Near-copies all match the first
/// members, so their cluster is the same; only pairs between later members of a capped bucket
/// that match nothing earlier are lost. The CLI, Python and Spark apply the same rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketCap {
    /// The largest bucket paired in full (at least 2).
    pub max_bucket: usize,
    /// How many first members of a larger bucket are paired with the others (at least 1).
    pub star_width: usize,
}

/// The pairs of one bucket (positions, ascending) under `cap`, appended to `out`.
pub fn bucket_pairs<T: Copy + Ord>(members: &[T], cap: Option<BucketCap>, out: &mut Vec<(T, T)>) {
    let heads = match cap {
        Some(c) if members.len() > c.max_bucket => c.star_width.min(members.len()),
        _ => members.len(),
    };
    for (x, &a) in members[..heads].iter().enumerate() {
        for &b in &members[x + 1..] {
            out.push((a.min(b), a.max(b)));
        }
    }
}

/// Every pair of documents that share a key in some slot (band or table) and that the bucket
/// rule of `cap` pairs there: the union over buckets, sorted and without repeats. `key(i, slot)`
/// gives document `i`'s key in each of `slots` slots; buckets of one slot never meet another's.
pub fn capped_pairs_by(
    n: usize,
    slots: usize,
    key: impl Fn(usize, usize) -> u64 + Sync,
    cap: BucketCap,
) -> Vec<(u32, u32)> {
    let per_slot: Vec<Vec<(u32, u32)>> = (0..slots)
        .into_par_iter()
        .map(|slot| {
            let mut column: Vec<(u64, u32)> = (0..n).map(|i| (key(i, slot), i as u32)).collect();
            column.sort_unstable();
            let mut out = Vec::new();
            let mut members = Vec::new();
            for run in column.chunk_by(|x, y| x.0 == y.0) {
                if run.len() > 1 {
                    members.clear();
                    members.extend(run.iter().map(|&(_, i)| i));
                    bucket_pairs(&members, Some(cap), &mut out);
                }
            }
            out
        })
        .collect();
    let mut out = per_slot.concat();
    out.par_sort_unstable();
    out.dedup();
    out
}

/// [`candidate_pairs_by`] under the skew guard `cap`: the same pairs when no bucket is larger
/// than `cap.max_bucket` (the common case costs the same one pass), else [`capped_pairs_by`]
/// (the pass stops at the first large bucket, unenumerated).
pub fn candidate_pairs_capped(
    n: usize,
    bands: usize,
    key: impl Fn(usize, usize) -> u64 + Sync,
    cap: Option<BucketCap>,
) -> Vec<(u32, u32)> {
    let Some(cap) = cap else { return candidate_pairs_by(n, bands, key) };
    match uncapped_pairs(n, bands, &key, cap.max_bucket) {
        Some(pairs) => pairs,
        None => capped_pairs_by(n, bands, key, cap),
    }
}

/// An incremental MinHash LSH index: a hash table per band from key to documents.
///
/// Memory, about 0.4 KB a document at 16 bands (it was 0.9 KB):
/// - a table holds the low 32 bits of each band key (band keys are xxh3 hashes, so any 32 of
///   their bits are as good as any other): 8 bytes an entry instead of 16. Two keys of a band
///   that differ only above bit 32 collide, so a query may return, rarely, a document that shares
///   no band key (about `n / 2^32` per band at `n` documents: 0.4% of queries at 10 million
///   over 16 bands); callers verify every candidate, so the answers are the same;
/// - most keys belong to one document, so a table maps a key to that document's slot directly;
///   a key shared by several documents maps to a list of slots instead, marked by the top bit
///   ([`LIST`]);
/// - each slot's id and its table keys (to remove them) are kept in flat arrays, not one
///   allocation per document.
#[derive(Debug, Clone)]
pub struct MinHashLsh {
    banding: Banding,
    /// Band key (low 32 bits) -> a slot, or `LIST | i` for the slots in `lists[i]` (two or more).
    tables: Vec<FxHashMap<u32, u32>>,
    /// Lists of slots of keys shared by several documents; `free_lists` are reusable.
    lists: Vec<Vec<u32>>,
    free_lists: Vec<u32>,
    /// Slot -> id (meaningless while the slot is free: no table names a free slot).
    ids: Vec<u64>,
    /// Slot -> its table keys, `bands` per slot.
    keys: Vec<u32>,
    free: Vec<u32>,
    slot_of: FxHashMap<u64, u32>,
}

/// The mark of a table value that names a list of slots, not a slot.
const LIST: u32 = 1 << 31;

/// A band key as the tables hold it.
fn table_key(key: u64) -> u32 {
    key as u32
}

impl MinHashLsh {
    /// An empty index.
    pub fn new(banding: Banding) -> MinHashLsh {
        MinHashLsh {
            banding,
            tables: vec![FxHashMap::default(); banding.bands],
            lists: Vec::new(),
            free_lists: Vec::new(),
            ids: Vec::new(),
            keys: Vec::new(),
            free: Vec::new(),
            slot_of: FxHashMap::default(),
        }
    }

    /// The banding.
    pub fn banding(&self) -> Banding {
        self.banding
    }

    /// The number of documents stored.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Stores `signature` under `id`, replacing what `id` held.
    pub fn insert(&mut self, id: u64, signature: &[u32]) -> Result<(), BandingError> {
        self.banding.check(signature.len())?;
        let keys = self.banding.keys(signature);
        self.insert_keys(id, &keys);
        Ok(())
    }

    /// Stores precomputed band keys ([`Banding::keys`]) under `id`, replacing what `id` held.
    ///
    /// # Panics
    /// If `keys` does not hold one key per band, or past 2^31 documents.
    pub fn insert_keys(&mut self, id: u64, keys: &[u64]) {
        let bands = self.banding.bands;
        assert_eq!(keys.len(), bands, "one key per band");
        self.remove(id);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                assert!(self.ids.len() < LIST as usize, "at most 2^31 documents");
                self.ids.push(0);
                self.keys.resize(self.keys.len() + bands, 0);
                (self.ids.len() - 1) as u32
            }
        };
        let at = slot as usize * bands;
        let MinHashLsh { tables, lists, free_lists, keys: kept_keys, .. } = self;
        for ((table, &key), kept) in tables.iter_mut().zip(keys).zip(&mut kept_keys[at..at + bands])
        {
            let key = table_key(key);
            *kept = key;
            match table.entry(key) {
                Entry::Vacant(e) => {
                    e.insert(slot);
                }
                Entry::Occupied(mut e) => {
                    let v = *e.get();
                    if v & LIST != 0 {
                        lists[(v & !LIST) as usize].push(slot);
                    } else {
                        let i = match free_lists.pop() {
                            Some(i) => {
                                lists[i as usize].extend([v, slot]);
                                i
                            }
                            None => {
                                lists.push(vec![v, slot]);
                                (lists.len() - 1) as u32
                            }
                        };
                        *e.get_mut() = LIST | i;
                    }
                }
            }
        }
        self.ids[slot as usize] = id;
        self.slot_of.insert(id, slot);
    }

    /// Removes `id`; returns whether it was stored.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(slot) = self.slot_of.remove(&id) else { return false };
        let bands = self.banding.bands;
        let at = slot as usize * bands;
        let MinHashLsh { tables, lists, free_lists, keys, .. } = self;
        for (table, key) in tables.iter_mut().zip(&keys[at..at + bands]) {
            let Some(v) = table.get_mut(key) else { continue };
            if *v & LIST == 0 {
                if *v == slot {
                    table.remove(key);
                }
                continue;
            }
            let i = (*v & !LIST) as usize;
            let list = &mut lists[i];
            if let Some(pos) = list.iter().position(|&s| s == slot) {
                list.swap_remove(pos);
            }
            if list.len() == 1 {
                // Back to a single slot; the list is reused.
                *v = list[0];
                list.clear();
                list.shrink_to(4);
                free_lists.push(i as u32);
            }
        }
        self.free.push(slot);
        true
    }

    /// The ids of every stored document that shares a band with `signature` (and rarely
    /// others: see [`MinHashLsh`]), sorted.
    pub fn query(&self, signature: &[u32]) -> Result<Vec<u64>, BandingError> {
        self.banding.check(signature.len())?;
        Ok(self.query_keys(&self.banding.keys(signature)))
    }

    /// The ids of every stored document that shares one of the band `keys` (and, rarely, one
    /// whose key agrees only in the 32 bits the tables keep: see [`MinHashLsh`]), sorted.
    pub fn query_keys(&self, keys: &[u64]) -> Vec<u64> {
        let id = |s: u32| self.ids[s as usize];
        let mut out: Vec<u64> = Vec::new();
        for (table, &key) in self.tables.iter().zip(keys) {
            match table.get(&table_key(key)) {
                Some(&v) if v & LIST != 0 => {
                    out.extend(self.lists[(v & !LIST) as usize].iter().map(|&s| id(s)))
                }
                Some(&v) => out.push(id(v)),
                None => {}
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The oracle for [`candidate_pairs`] and [`MinHashLsh::query`]: two signatures are candidates
/// when some band of `rows` values is equal, compared value by value.
pub fn brute_force_candidates(signatures: &[Vec<u32>], banding: Banding) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for (x, a) in signatures.iter().enumerate() {
        for (y, b) in signatures.iter().enumerate().skip(x + 1) {
            let hit = (0..banding.bands).any(|band| {
                let r = band * banding.rows..(band + 1) * banding.rows;
                a[r.clone()] == b[r]
            });
            if hit {
                out.push((x as u32, y as u32));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Signatures over a tiny alphabet, so that bands collide often, plus copies with a few
    /// values changed.
    fn signatures() -> impl Strategy<Value = (usize, usize, Vec<Vec<u32>>)> {
        (1usize..6, 1usize..5).prop_flat_map(|(bands, rows)| {
            let len = bands * rows + 1;
            (
                Just(bands),
                Just(rows),
                prop::collection::vec(prop::collection::vec(0u32..3, len..=len), 1..40),
            )
        })
    }

    /// The skew guard's oracle: a pair is a candidate when some slot gives both one key and that
    /// bucket is small, or one of the two is among its first `star_width` members.
    fn capped_oracle(keys: &[Vec<u64>], cap: BucketCap) -> Vec<(u32, u32)> {
        let n = keys.len();
        let slots = keys.first().map_or(0, Vec::len);
        let mut out = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                let paired = (0..slots).any(|s| {
                    if keys[a][s] != keys[b][s] {
                        return false;
                    }
                    let bucket: Vec<usize> = (0..n).filter(|&i| keys[i][s] == keys[a][s]).collect();
                    bucket.len() <= cap.max_bucket
                        || bucket[..cap.star_width].contains(&a)
                        || bucket[..cap.star_width].contains(&b)
                });
                if paired {
                    out.push((a as u32, b as u32));
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn capped_pairs_equal_their_oracle(
            keys in prop::collection::vec(prop::collection::vec(0u64..3, 3..=3), 1..30),
            max_bucket in 2usize..6,
            star_width in 1usize..3,
        ) {
            let cap = BucketCap { max_bucket, star_width };
            let key = |i: usize, s: usize| keys[i][s];
            prop_assert_eq!(capped_pairs_by(keys.len(), 3, key, cap), capped_oracle(&keys, cap));
            prop_assert_eq!(
                candidate_pairs_capped(keys.len(), 3, key, Some(cap)),
                capped_oracle(&keys, cap)
            );
            // A cap no bucket reaches changes nothing.
            let wide = BucketCap { max_bucket: keys.len(), star_width };
            prop_assert_eq!(
                candidate_pairs_capped(keys.len(), 3, key, Some(wide)),
                candidate_pairs_by(keys.len(), 3, key)
            );
        }

        #[test]
        fn batch_pairs_equal_brute_force((bands, rows, sigs) in signatures()) {
            let banding = Banding::new(bands, rows).expect("valid");
            let mut keys = Vec::new();
            for s in &sigs {
                banding.keys_into(s, &mut keys);
            }
            prop_assert_eq!(candidate_pairs(&keys, bands), brute_force_candidates(&sigs, banding));
        }

        #[test]
        fn index_query_equals_brute_force((bands, rows, sigs) in signatures()) {
            let banding = Banding::new(bands, rows).expect("valid");
            let mut lsh = MinHashLsh::new(banding);
            for (i, s) in sigs.iter().enumerate() {
                lsh.insert(i as u64, s).expect("long enough");
            }
            // Remove every third, then check every query against the survivors.
            for i in (0..sigs.len()).step_by(3) {
                prop_assert!(lsh.remove(i as u64));
            }
            let live: Vec<usize> = (0..sigs.len()).filter(|i| i % 3 != 0).collect();
            prop_assert_eq!(lsh.len(), live.len());
            for q in &sigs {
                let expected: Vec<u64> = live
                    .iter()
                    .filter(|&&i| {
                        (0..bands).any(|b| q[b * rows..(b + 1) * rows] == sigs[i][b * rows..(b + 1) * rows])
                    })
                    .map(|&i| i as u64)
                    .collect();
                prop_assert_eq!(lsh.query(q).expect("long enough"), expected);
            }
        }
    }

    proptest! {
        /// Any sequence of inserts (new ids and replacements) and removes leaves an index whose
        /// every query equals brute force over what a plain map holds (lists of shared keys
        /// grown, shrunk back to one slot, reused).
        #[test]
        fn index_follows_a_model_under_any_sequence(
            (bands, rows, sigs) in signatures(),
            ops in prop::collection::vec((0u64..8, any::<bool>(), 0usize..40), 0..120),
        ) {
            let banding = Banding::new(bands, rows).expect("valid");
            let mut lsh = MinHashLsh::new(banding);
            let mut model: std::collections::BTreeMap<u64, Vec<u32>> = Default::default();
            for (id, insert, which) in ops {
                if insert {
                    let sig = sigs[which % sigs.len()].clone();
                    lsh.insert(id, &sig).expect("long enough");
                    model.insert(id, sig);
                } else {
                    prop_assert_eq!(lsh.remove(id), model.remove(&id).is_some());
                }
            }
            prop_assert_eq!(lsh.len(), model.len());
            for q in &sigs {
                let expected: Vec<u64> = model
                    .iter()
                    .filter(|(_, s)| (0..bands).any(|b| q[b * rows..(b + 1) * rows] == s[b * rows..(b + 1) * rows]))
                    .map(|(&id, _)| id)
                    .collect();
                prop_assert_eq!(lsh.query(q).expect("long enough"), expected);
            }
        }
    }

    #[test]
    fn short_signatures_are_refused() {
        let banding = Banding::new(4, 8).expect("valid");
        assert_eq!(banding.check(16), Err(BandingError::SignatureTooShort { needed: 32, len: 16 }));
        let mut lsh = MinHashLsh::new(banding);
        assert!(lsh.insert(1, &[0; 16]).is_err());
        assert!(lsh.is_empty());
        assert_eq!(Banding::new(0, 3), Err(BandingError::Zero));
    }

    #[test]
    fn reinsert_replaces() {
        let banding = Banding::new(2, 2).expect("valid");
        let mut lsh = MinHashLsh::new(banding);
        lsh.insert(7, &[1, 2, 3, 4]).expect("ok");
        lsh.insert(7, &[5, 6, 7, 8]).expect("ok");
        assert_eq!(lsh.len(), 1);
        assert!(lsh.query(&[1, 2, 3, 4]).expect("ok").is_empty());
        assert_eq!(lsh.query(&[5, 6, 0, 0]).expect("ok"), vec![7]);
    }
}
