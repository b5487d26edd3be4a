//! Local alignment of a query with one candidate source: seeds, fragments, chains, passages.
//!
//! The method follows the seed-extend-filter design of the best PAN text-alignment systems
//! (Sanchez-Perez, Sidorov and Gelbukh 2014; Kong et al. 2012), on units instead of sentences:
//!
//! 1. **Seeds**: every k-gram of units the query and the source share, as `(query position,
//!    source position)`.
//! 2. **Fragments**: seeds on one diagonal at consecutive positions join into an exact match.
//! 3. **Chains**: fragments in query order join when the gap between them, in the query and in
//!    the source, is at most `max_gap` units and the diagonal moved by at most `max_gap`: this
//!    bridges substituted, inserted and deleted units (a word replaced breaks the k-grams around
//!    it; the fragments on both sides still chain).
//! 4. **Passages**: chains of the same source that touch or nearly touch in the query join
//!    whatever their order in the source: a passage whose sentences were swapped, or one dropped,
//!    is one passage, whose source range spans the pieces. Pieces kept apart by a phrase the
//!    source also holds elsewhere are joined once settled ([`settle`]).
//!
//! Units an edit left equal between two fragments of a chain are aligned too (the longest
//! common subsequence of the gap). Each passage is cut to its best-scoring stretch ([`trim`]: a
//! local alignment score, so it ends where the copying ends, not where a field's shared wording
//! does), and kept when it is at least `min_units` long and at least `min_similarity` similar
//! ([`Region::similarity`]). Passages of different sources over the same query text are then
//! settled by [`settle`]: the best source takes the text, the others are listed as holding it
//! too.

use rustc_hash::FxHashMap;

/// An exact match: query units `[q0, q1)` equal source units `[s0, s1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub q0: u32,
    pub q1: u32,
    pub s0: u32,
    pub s1: u32,
}

impl Fragment {
    fn diagonal(&self) -> i64 {
        i64::from(self.s0) - i64::from(self.q0)
    }
}

/// A run of fragments: a copied region, in units of the query and of one source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Region {
    /// The source's number in the index.
    pub source: u32,
    pub q0: u32,
    pub q1: u32,
    pub s0: u32,
    pub s1: u32,
    /// Query units inside some fragment.
    pub matched: u32,
    pub fragments: Vec<Fragment>,
    /// How strongly the region says "copied" rather than "shared by chance" ([`evidence`]).
    pub evidence: f32,
    /// The longest jump in the source between two fragments of one chain (`max_gap`): the
    /// source ranges of fragments closer than this are one stretch of the copy, farther ones
    /// pieces of a reordered passage (see [`Region::similarity`]).
    pub bridge: u32,
}

impl Region {
    pub(crate) fn len(&self) -> u32 {
        self.q1 - self.q0
    }

    /// The units aligned one to one (the fewer of the query's and the source's units inside
    /// fragments) over the longer of the passage in the query and the stretches of the source
    /// it copies: 1 for a verbatim copy, 1 less the share of edited units for an edited one
    /// (one word in ten replaced: 0.9), and low for a sentence frame the two texts share with
    /// other words in it. The source's stretches are its fragments' ranges joined across the
    /// edits of one chain (gaps of at most `bridge`, a clause left out included), not across
    /// the jumps between the pieces of a reordered passage: a sentence dropped between them
    /// was not copied.
    pub fn similarity(&self) -> f64 {
        let mut ranges: Vec<(u32, u32)> = self.fragments.iter().map(|f| (f.s0, f.s1)).collect();
        ranges.sort_unstable();
        let (mut source_matched, mut covered_to) = (0, 0);
        let (mut stretches, mut open): (u32, Option<(u32, u32)>) = (0, None);
        let mut jumps = 0u32;
        for (a, b) in ranges {
            let from = a.max(covered_to);
            if b > from {
                source_matched += b - from;
                covered_to = b;
            }
            open = match open {
                Some((s0, s1)) if a <= s1.saturating_add(self.bridge) => Some((s0, s1.max(b))),
                Some((s0, s1)) => {
                    stretches += s1 - s0;
                    jumps += 1;
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        stretches += open.map_or(0, |(s0, s1)| s1 - s0);
        // Each jump to another piece costs as much as the longest edit a chain bridges: the
        // pieces of a reordered copy are whole sentences, and a handful of jumps is little
        // beside them; short matches gathered from all over the source are mostly jumps.
        stretches += jumps.saturating_mul(self.bridge);
        let longer = self.len().max(stretches);
        if longer == 0 {
            0.0
        } else {
            f64::from(self.matched.min(source_matched)) / f64::from(longer)
        }
    }

    /// Recomputes the ranges and the matched count from the fragments clipped to query units
    /// `[q0, q1)`; false when nothing is left.
    pub fn clip(&mut self, q0: u32, q1: u32) -> bool {
        let mut kept = Vec::new();
        for f in &self.fragments {
            let (a, b) = (f.q0.max(q0), f.q1.min(q1));
            if a < b {
                let shift = f.s0 as i64 - f.q0 as i64;
                kept.push(Fragment {
                    q0: a,
                    q1: b,
                    s0: (a as i64 + shift) as u32,
                    s1: (b as i64 + shift) as u32,
                });
            }
        }
        if kept.is_empty() {
            return false;
        }
        self.fragments = kept;
        self.recount();
        true
    }

    /// The aligned units at the region's two ends: `((first query unit, its source unit),
    /// (last query unit, its source unit))`.
    pub fn end_pairs(&self) -> ((u32, u32), (u32, u32)) {
        let first = self.fragments.iter().min_by_key(|f| (f.q0, f.s0)).expect("fragments");
        let last = self.fragments.iter().max_by_key(|f| (f.q1, f.s1)).expect("fragments");
        ((first.q0, first.s0), (last.q1 - 1, last.s1 - 1))
    }

    fn recount(&mut self) {
        self.fragments.sort_by_key(|f| (f.q0, f.q1));
        self.q0 = self.fragments.iter().map(|f| f.q0).min().unwrap_or(0);
        self.q1 = self.fragments.iter().map(|f| f.q1).max().unwrap_or(0);
        self.s0 = self.fragments.iter().map(|f| f.s0).min().unwrap_or(0);
        self.s1 = self.fragments.iter().map(|f| f.s1).max().unwrap_or(0);
        let mut matched = 0;
        let mut covered_to = 0;
        for f in &self.fragments {
            let from = f.q0.max(covered_to);
            if f.q1 > from {
                matched += f.q1 - from;
                covered_to = f.q1;
            }
        }
        self.matched = matched;
    }
}

/// The alignment settings, in units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AlignParams {
    pub seed: u32,
    pub max_gap: u32,
    pub min_units: u32,
    pub min_similarity: f64,
    /// The least [`evidence`] of a reported region.
    pub min_evidence: f32,
}

/// The evidence that a region is copied rather than shared by what a field's writing has in
/// common: every k-gram of the query it matches exactly counts `1 / df`, `df` being how many
/// documents of the collection hold it (`df[position]`, from the index's postings; 0 when the
/// k-gram is not in the index, which then says nothing). A phrase a thousand documents share
/// (a dateline, a stock clause, a template's sentence) adds almost nothing however long the
/// match; text only the source holds adds one a k-gram (as IDF weighs words, on k-grams).
/// `holders` documents hold the passage itself (its source, and those holding at least half of
/// its k-grams): a k-gram they all hold is as common as the *other* documents holding it make
/// it, so a text that stands in ten documents (a template's pages, a package and its `-dev`
/// twin) is not taken for what a field shares by chance.
pub(crate) fn evidence(r: &Region, df: &[u32], k: u32, holders: u32) -> f32 {
    let mut starts: Vec<u32> =
        r.fragments.iter().filter(|f| f.q1 - f.q0 >= k).flat_map(|f| f.q0..=f.q1 - k).collect();
    starts.sort_unstable();
    starts.dedup();
    starts
        .iter()
        .filter_map(|&p| df.get(p as usize).copied())
        .filter(|&d| d > 0)
        .map(|d| 1.0 / d.saturating_sub(holders - 1).max(1) as f32)
        .sum()
}

/// The query's k-grams by hash, built once per query and reused for every candidate source.
pub(crate) struct QueryGrams {
    /// Each k-gram's range in `at`.
    ranges: FxHashMap<u64, (u32, u32)>,
    /// The query positions of each k-gram, ascending, the k-grams one after another (one
    /// allocation, where a list per k-gram made an allocation for nearly every position).
    at: Vec<u32>,
}

/// A k-gram whose occurrences in the query and in the source make more pairs than this is
/// *repeated* (a phrase or a run of one character the texts repeat): pairing every occurrence
/// with every other would cost the product of the counts (a text of a small vocabulary holds
/// millions) and say nothing about where a copy is. Its occurrences are paired along the
/// diagonals that the other seeds near them lie on, and by rank (the r-th in the query with the
/// r-th in the source, which aligns a copy made of nothing but repeats); at most
/// `1 + 2 * ANCHORS` seeds per occurrence in the query, so seeds stay linear in the texts.
const MAX_GRAM_PAIRS: usize = 64;
/// The seeds on each side (before and after in the query) whose diagonals a repeated k-gram's
/// occurrence is tried on.
const ANCHORS: usize = 4;

impl QueryGrams {
    pub fn new(grams: &[u64]) -> QueryGrams {
        let mut pairs: Vec<(u64, u32)> =
            grams.iter().enumerate().map(|(i, &h)| (h, i as u32)).collect();
        pairs.sort_unstable();
        let mut ranges = FxHashMap::with_capacity_and_hasher(pairs.len(), Default::default());
        let mut start = 0usize;
        for (n, &(h, _)) in pairs.iter().enumerate() {
            if pairs.get(n + 1).is_none_or(|next| next.0 != h) {
                ranges.insert(h, (start as u32, n as u32 + 1));
                start = n + 1;
            }
        }
        QueryGrams { ranges, at: pairs.into_iter().map(|(_, i)| i).collect() }
    }

    /// The query positions of k-gram `h`, ascending.
    fn get(&self, h: &u64) -> Option<&[u32]> {
        self.ranges.get(h).map(|&(a, b)| &self.at[a as usize..b as usize])
    }
}

/// The copied regions between a query (its k-grams in `query`) and one source (its k-gram
/// hashes in `source_grams`), each at least `min_units` long and `min_similarity` similar.
pub(crate) fn align(
    query: &QueryGrams,
    source: u32,
    source_grams: &[u64],
    (query_units, source_units): (&[u64], &[u64]),
    p: &AlignParams,
) -> Vec<Region> {
    let k = p.seed;
    let mut seeds = seeds(query, source_grams);
    if seeds.is_empty() {
        return Vec::new();
    }
    // Fragments: consecutive seeds on one diagonal.
    seeds.sort_unstable();
    seeds.dedup();
    let mut fragments: Vec<Fragment> = Vec::new();
    let mut run: Option<(i64, Fragment)> = None;
    for (d, i, j) in seeds {
        match &mut run {
            Some((rd, f)) if *rd == d && i <= f.q1 + 1 - k => {
                f.q1 = i + k;
                f.s1 = j + k;
            }
            _ => {
                if let Some((_, f)) = run.take() {
                    fragments.push(f);
                }
                run = Some((d, Fragment { q0: i, q1: i + k, s0: j, s1: j + k }));
            }
        }
    }
    fragments.extend(run.map(|(_, f)| f));
    fragments.sort_unstable_by_key(|f| (f.q0, std::cmp::Reverse(f.q1)));

    // Chains: each fragment extends the best open chain it can reach, else opens one.
    let gap = i64::from(p.max_gap);
    let mut open: Vec<Region> = Vec::new();
    let mut done: Vec<Region> = Vec::new();
    for f in fragments {
        // Chains that end too far back can take nothing more.
        let (reach, keep): (Vec<Region>, Vec<Region>) =
            open.drain(..).partition(|c| i64::from(c.q1) + gap >= i64::from(f.q0));
        done.extend(keep);
        open = reach;
        let mut best: Option<(usize, i64)> = None;
        for (ci, c) in open.iter().enumerate() {
            if f.q1 <= c.q1 {
                continue;
            }
            let last = c.fragments.last().expect("a chain has fragments");
            let dq = i64::from(f.q0) - i64::from(c.q1);
            let ds = i64::from(f.s0) - i64::from(last.s1);
            let shift = (f.diagonal() - last.diagonal()).abs();
            if dq > gap || ds > gap || ds < -gap || shift > gap {
                continue;
            }
            // Prefer the chain the fragment continues most directly, then the longest.
            let score = i64::from(c.matched) - 4 * shift - dq.max(0);
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((ci, score));
            }
        }
        match best {
            Some((ci, _)) => {
                let c = &mut open[ci];
                c.matched += f.q1 - f.q0.max(c.q1);
                c.q1 = f.q1;
                c.s0 = c.s0.min(f.s0);
                c.s1 = c.s1.max(f.s1);
                c.fragments.push(f);
            }
            None => open.push(Region {
                source,
                q0: f.q0,
                q1: f.q1,
                s0: f.s0,
                s1: f.s1,
                matched: f.q1 - f.q0,
                fragments: vec![f],
                evidence: 0.0,
                bridge: p.max_gap,
            }),
        }
    }
    done.extend(open);
    // The units an edit left equal between two fragments of a chain (two words replaced
    // around a third that stayed) are aligned too: no k-gram covers them.
    for c in &mut done {
        fill_gaps(c, query_units, source_units);
    }

    // Passages: chains of this source that meet in the query join, whatever their order in the
    // source (swapped or dropped sentences). A lone k-gram is too weak to join on its own.
    done.retain(|c| c.matched > k);
    done.sort_unstable_by_key(|c| (c.q0, c.q1));
    let mut joined: Vec<Region> = Vec::new();
    for c in done {
        let near = |last: &Region| near_in_source(last, &c, p.max_gap);
        match joined.last_mut() {
            // A chain inside the region's query range either aligns text the region's
            // fragments already cover (a phrase the source repeats: it adds nothing), or
            // fills a gap the region bridged (a sentence of a reordered passage, between two
            // that stay in order): its fragments join the region.
            Some(last) if c.q1 <= last.q1 && c.q0 >= last.q0 => {
                if uncovered(&last.fragments, c.q0, c.q1) > k && near(last) {
                    last.fragments.extend(c.fragments);
                    last.recount();
                }
            }
            // Near in the query, and near in the source.
            Some(last) if i64::from(c.q0) <= i64::from(last.q1) + gap && near(last) => {
                last.fragments.extend(c.fragments);
                last.recount();
            }
            _ => joined.push(c),
        }
    }
    for r in &mut joined {
        trim(r);
        extend(r, query_units, source_units, p.max_gap);
    }
    joined.retain(|r| r.len() >= p.min_units && r.similarity() >= p.min_similarity);
    joined
}

/// The seeds of a query and a source: `(diagonal, query position, source position)` of shared
/// k-grams, unsorted, possibly repeated. A k-gram with few occurrences pairs each of them in
/// the query with each in the source; a repeated one (see [`MAX_GRAM_PAIRS`]) only along the
/// diagonals of the seeds nearest to each occurrence in the query, and by rank.
fn seeds(query: &QueryGrams, source_grams: &[u64]) -> Vec<(i64, u32, u32)> {
    // The source positions of each k-gram the query holds, grouped by k-gram, ascending.
    let mut shared: Vec<(u64, u32)> = source_grams
        .iter()
        .enumerate()
        .filter(|(_, h)| query.ranges.contains_key(h))
        .map(|(j, &h)| (h, j as u32))
        .collect();
    shared.sort_unstable();
    let in_source: Vec<u32> = shared.iter().map(|&(_, j)| j).collect();
    let diagonal = |i: u32, j: u32| i64::from(j) - i64::from(i);
    let mut seeds: Vec<(i64, u32, u32)> = Vec::new();
    let mut repeated: Vec<(&[u32], &[u32])> = Vec::new();
    let groups = shared.chunk_by(|a, b| a.0 == b.0).scan(0usize, |at, group| {
        let start = *at;
        *at += group.len();
        Some((group[0].0, &in_source[start..*at]))
    });
    for (h, ss) in groups {
        let qs = query.get(&h).expect("a k-gram of the query");
        if qs.len() * ss.len() <= MAX_GRAM_PAIRS {
            seeds.extend(qs.iter().flat_map(|&i| ss.iter().map(move |&j| (diagonal(i, j), i, j))));
        } else {
            repeated.push((qs, ss));
        }
    }
    if repeated.is_empty() {
        return seeds;
    }
    // The other seeds by query position: each gives a diagonal to try.
    let mut anchors: Vec<(u32, i64)> = seeds.iter().map(|&(d, i, _)| (i, d)).collect();
    anchors.sort_unstable();
    anchors.dedup();
    // `ss` is sorted (positions are pushed in order), so a diagonal is tried by binary search.
    for (qs, ss) in repeated {
        for (rank, &i) in qs.iter().enumerate() {
            if let Some(&j) = ss.get(rank) {
                seeds.push((diagonal(i, j), i, j));
            }
            let at = anchors.partition_point(|a| a.0 < i);
            let near = &anchors[at.saturating_sub(ANCHORS)..(at + ANCHORS).min(anchors.len())];
            for &(_, d) in near {
                let j = i64::from(i) + d;
                if let Ok(j) = u32::try_from(j) {
                    if ss.binary_search(&j).is_ok() {
                        seeds.push((d, i, j));
                    }
                }
            }
        }
    }
    seeds
}

/// Query units of `[q0, q1)` that no fragment covers.
fn uncovered(fragments: &[Fragment], q0: u32, q1: u32) -> u32 {
    let mut covered: Vec<(u32, u32)> = fragments
        .iter()
        .filter(|f| f.q0 < q1 && q0 < f.q1)
        .map(|f| (f.q0.max(q0), f.q1.min(q1)))
        .collect();
    covered.sort_unstable();
    let (mut n, mut to) = (0, q0);
    for (a, b) in covered {
        if b > to {
            n += b - a.max(to);
            to = b;
        }
    }
    (q1 - q0) - n
}

/// Aligns the units between consecutive fragments of a chain (the longest common subsequence
/// of the two gaps, each at most `2 * max_gap` long), as one-unit fragments.
fn fill_gaps(c: &mut Region, q: &[u64], s: &[u64]) {
    let mut added = Vec::new();
    for w in c.fragments.windows(2) {
        let (p, f) = (w[0], w[1]);
        if f.q0 <= p.q1 || f.s0 <= p.s1 {
            continue;
        }
        let (qa, qb, sa, sb) = (p.q1 as usize, f.q0 as usize, p.s1 as usize, f.s0 as usize);
        let (Some(x), Some(y)) = (q.get(qa..qb), s.get(sa..sb)) else { continue };
        if x.len() > 64 || y.len() > 64 {
            continue;
        }
        for (i, j) in common_subsequence(x, y) {
            let (qi, sj) = ((qa + i) as u32, (sa + j) as u32);
            added.push(Fragment { q0: qi, q1: qi + 1, s0: sj, s1: sj + 1 });
        }
    }
    if !added.is_empty() {
        c.fragments.extend(added);
        c.recount();
    }
}

/// The positions of a longest common subsequence of two short sequences.
fn common_subsequence(a: &[u64], b: &[u64]) -> Vec<(usize, usize)> {
    let w = b.len() + 1;
    let mut t = vec![0u8; (a.len() + 1) * w];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            t[i * w + j] = if a[i] == b[j] {
                t[(i + 1) * w + j + 1] + 1
            } else {
                t[(i + 1) * w + j].max(t[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if t[(i + 1) * w + j] >= t[i * w + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Keeps the best-scoring stretch of a region (Smith and Waterman's local alignment score over
/// its fragments, Kadane's maximum subarray): each query unit a fragment adds gains 1, each
/// unit left unaligned between two fragments costs `EDIT_COST`, on both sides (in the source
/// only inside one chain: the jump to another piece of a reordered passage costs its query
/// gap only). A copy, even one word in ten replaced, scores high all along; a sentence frame
/// beside it (short matches between words that differ) scores below zero and is cut off, so
/// a passage stops where the copying stops, not where the field's shared wording does.
fn trim(r: &mut Region) {
    if r.fragments.len() < 2 {
        return;
    }
    r.fragments.sort_by_key(|f| (f.q0, std::cmp::Reverse(f.q1), f.s0));
    let mut f: Vec<Fragment> = Vec::with_capacity(r.fragments.len());
    for x in r.fragments.drain(..) {
        match f.last() {
            Some(l) if x.q1 <= l.q1 => {}
            _ => f.push(x),
        }
    }
    let (mut best, mut best_at) = (i64::MIN, (0, 0));
    let (mut run, mut run_from) = (0i64, 0usize);
    for i in 0..f.len() {
        let gain = i64::from(f[i].q1 - if i > 0 { f[i].q0.max(f[i - 1].q1) } else { f[i].q0 });
        let cost = if i == 0 { 0 } else { gap_cost(&f[i - 1], &f[i], r.bridge) };
        if i > 0 && run > cost {
            run += gain - cost;
        } else {
            // A fresh start beats carrying a stretch that scores nothing.
            (run, run_from) = (gain, i);
        }
        if run > best {
            (best, best_at) = (run, (run_from, i));
        }
    }
    r.fragments = f[best_at.0..=best_at.1].to_vec();
    r.recount();
}

/// What a unit left unaligned between two fragments costs in [`trim`], against 1 for a unit
/// aligned.
const EDIT_COST: i64 = 1;

/// The cost of the units between fragments `p` and `x` of a region (in query order) left
/// unaligned: those of the query, and, where the source continues the same chain (a jump of at
/// most `bridge`), those of the source in their place. Source units skipped with nothing in
/// their place cost nothing: the copier left out a clause, and what is there is still copied.
fn gap_cost(p: &Fragment, x: &Fragment, bridge: u32) -> i64 {
    let gq = i64::from(x.q0.saturating_sub(p.q1));
    if gq == 0 {
        return 0;
    }
    let ds = i64::from(x.s0) - i64::from(p.s1);
    let gs = if (0..=i64::from(bridge)).contains(&ds) { ds } else { 0 };
    EDIT_COST * (gq + gs)
}

/// Scores of the edge extension: a shared unit gains, an edited one loses as much (a typo two
/// units from the edge is bridged; a sentence frame's name of as many units as the shared
/// run after it is not).
const MATCH: i32 = 1;
const EDIT: i32 = -1;

/// Extends a region at both ends over edits too near its edge to leave a shared k-gram (a
/// replaced word two units from the end of a copy): a small gapped alignment (Smith-Waterman
/// scores, anchored at the region's edge, at most `2 * max_gap` units out) continues the region
/// to the best-scoring unit beyond it, if any scores above the edge itself. Each unit matched on
/// the way becomes a one-unit fragment. (It may take back up to `2 * max_gap` units of a
/// sentence frame that [`trim`] cut off: stopping it at the first shared k-gram gained
/// precision on same-domain sets by 0.01 and lost a twentieth of the heavily reworded copies,
/// BENCHMARKS.md.)
fn extend(r: &mut Region, q: &[u64], s: &[u64], max_gap: u32) {
    let reach = (2 * max_gap as usize).max(1);
    let Some(last) = r.fragments.iter().max_by_key(|f| (f.q1, f.s1)).copied() else { return };
    let Some(first) = r.fragments.iter().min_by_key(|f| (f.q0, f.s0)).copied() else { return };
    let right = edge_matches(
        |i| q.get(last.q1 as usize + i).copied(),
        |j| s.get(last.s1 as usize + j).copied(),
        reach,
    );
    let left = edge_matches(
        |i| (last_index(first.q0, i)).and_then(|x| q.get(x).copied()),
        |j| (last_index(first.s0, j)).and_then(|x| s.get(x).copied()),
        reach,
    );
    let mut added = Vec::new();
    for (i, j) in right {
        let (qa, sa) = (last.q1 + i as u32, last.s1 + j as u32);
        added.push(Fragment { q0: qa, q1: qa + 1, s0: sa, s1: sa + 1 });
    }
    for (i, j) in left {
        let (qa, sa) = (first.q0 - 1 - i as u32, first.s0 - 1 - j as u32);
        added.push(Fragment { q0: qa, q1: qa + 1, s0: sa, s1: sa + 1 });
    }
    if !added.is_empty() {
        r.fragments.extend(added);
        r.recount();
    }
}

/// The position `i + 1` units before `edge`, if there is one.
fn last_index(edge: u32, i: usize) -> Option<usize> {
    (edge as usize).checked_sub(i + 1)
}

/// The matched positions `(i, j)` of the best anchored alignment of two sequences read outward
/// from an edge (`a(i)`, `b(j)`: the i-th unit out, `None` past the text's end), up to `reach`
/// units each way; empty when no extension scores above 0.
fn edge_matches(
    a: impl Fn(usize) -> Option<u64>,
    b: impl Fn(usize) -> Option<u64>,
    reach: usize,
) -> Vec<(usize, usize)> {
    let av: Vec<u64> = (0..reach).map_while(&a).collect();
    let bv: Vec<u64> = (0..reach).map_while(&b).collect();
    let (n, m) = (av.len(), bv.len());
    if n == 0 || m == 0 {
        return Vec::new();
    }
    // score[i][j]: the best score of aligning av[..i] with bv[..j], anchored at (0, 0).
    let w = m + 1;
    let mut score = vec![i32::MIN / 2; (n + 1) * w];
    score[0] = 0;
    let mut best = (0, 0usize, 0usize);
    for i in 0..=n {
        for j in 0..=m {
            if i == 0 && j == 0 {
                continue;
            }
            let mut v = i32::MIN / 2;
            if i > 0 && j > 0 {
                let step = if av[i - 1] == bv[j - 1] { MATCH } else { EDIT };
                v = v.max(score[(i - 1) * w + j - 1] + step);
            }
            if i > 0 {
                v = v.max(score[(i - 1) * w + j] + EDIT);
            }
            if j > 0 {
                v = v.max(score[i * w + j - 1] + EDIT);
            }
            score[i * w + j] = v;
            if v > best.0 {
                best = (v, i, j);
            }
        }
    }
    // Trace the matches back from the best cell.
    let (mut i, mut j) = (best.1, best.2);
    let mut out = Vec::new();
    while i > 0 && j > 0 {
        let here = score[i * w + j];
        if av[i - 1] == bv[j - 1] && here == score[(i - 1) * w + j - 1] + MATCH {
            out.push((i - 1, j - 1));
            i -= 1;
            j -= 1;
        } else if here == score[(i - 1) * w + j - 1] + EDIT {
            i -= 1;
            j -= 1;
        } else if here == score[(i - 1) * w + j] + EDIT {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    out
}

/// Which source a stretch of a query held by several is given to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attribution {
    /// The source that matches most of it (the thesis check: the closest source).
    BestMatch,
    /// The closest source, and besides it the earliest document that holds the stretch if that
    /// is another one (within a corpus: the first occurrence, from which the later ones copied).
    Earliest,
}

/// A settled region and the other sources that hold the same text.
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    pub region: Region,
    pub also: Vec<u32>,
}

/// Settles regions of different sources over the same query text: each stretch of the query
/// goes to one source, the one whose region matches most of it (ties: the longer region, then
/// the lower source number, so the answer does not depend on the order of the search). A region
/// mostly inside taken ones names its source as also holding each taken passage it covers at
/// least half of; one that overlaps taken text partly keeps its longest free stretch if that is
/// a passage by itself.
pub(crate) fn settle(mut regions: Vec<Region>, p: &AlignParams, by: Attribution) -> Vec<Settled> {
    let best = |a: &Region, b: &Region| {
        b.matched
            .cmp(&a.matched)
            .then(b.len().cmp(&a.len()))
            .then(a.source.cmp(&b.source))
            .then(a.q0.cmp(&b.q0))
    };
    regions.sort_by(best);
    let mut taken: Vec<Settled> = Vec::new();
    for mut r in regions {
        let covered = |t: &[Settled], a: u32, b: u32| -> u32 {
            t.iter().map(|s| s.region.q1.min(b).saturating_sub(s.region.q0.max(a))).sum::<u32>()
        };
        let overlap = covered(&taken, r.q0, r.q1);
        if overlap == 0 {
            taken.push(Settled { region: r, also: Vec::new() });
            continue;
        }
        let earlier_than_holders = taken
            .iter()
            .filter(|s| s.region.q0 < r.q1 && r.q0 < s.region.q1)
            .all(|s| s.region.source > r.source);
        if overlap * 2 >= r.len() && by == Attribution::Earliest && earlier_than_holders {
            // Within a corpus the first holder of a stretch is named with its own passage,
            // inside the longer one of a later document that took it.
            taken.push(Settled { region: r, also: Vec::new() });
            continue;
        }
        if overlap * 2 >= r.len() {
            // Another source holds this text too: it is named on each taken passage it holds
            // most of (an alignment over at least half of the passage), not on one it shares a
            // byline or a stock phrase with.
            for s in &mut taken {
                let shared = s.region.q1.min(r.q1).saturating_sub(s.region.q0.max(r.q0));
                if shared * 2 >= s.region.len()
                    && !s.also.contains(&r.source)
                    && s.region.source != r.source
                {
                    s.also.push(r.source);
                }
            }
            continue;
        }
        // The longest stretch of `r` that no taken region covers.
        let mut cuts: Vec<(u32, u32)> = taken
            .iter()
            .filter(|s| s.region.q0 < r.q1 && r.q0 < s.region.q1)
            .map(|s| (s.region.q0, s.region.q1))
            .collect();
        cuts.sort_unstable();
        let mut free = (0, 0);
        let mut at = r.q0;
        for (a, b) in cuts.iter().copied().chain(std::iter::once((r.q1, r.q1))) {
            if a > at && a.min(r.q1) - at > free.1 - free.0 {
                free = (at, a.min(r.q1));
            }
            at = at.max(b);
        }
        if free.1 - free.0 >= p.min_units
            && r.clip(free.0, free.1)
            && r.len() >= p.min_units
            && r.similarity() >= p.min_similarity
        {
            taken.push(Settled { region: r, also: Vec::new() });
        }
    }
    taken.sort_by_key(|s| (s.region.q0, s.region.q1));
    join_pieces(taken, p)
}

/// Joins settled passages of one source that meet in the query (at most `max_gap` units
/// apart): the sentences of a passage copied in another order, each aligned as a region of its
/// own when a phrase the source also holds elsewhere came between them. A run of such pieces
/// is joined whole when together they lie in a stretch of the source at most half as long
/// again as the run (its sentences in any order, one dropped; chance phrases lie all over the
/// source); otherwise two neighbours are joined when the second lies within the first's length
/// (and twice `max_gap`) of it in the source. A joined passage keeps its similarity of at least
/// `min_similarity`, or the pieces stay apart. A document is named as also holding it when it
/// holds pieces covering at least half of it.
fn join_pieces(taken: Vec<Settled>, p: &AlignParams) -> Vec<Settled> {
    let gap = i64::from(p.max_gap);
    let meets = |r: &Region, c: &Region| {
        r.source == c.source && c.q0 >= r.q1 && i64::from(c.q0) <= i64::from(r.q1) + gap
    };
    let mut out: Vec<Settled> = Vec::with_capacity(taken.len());
    let mut rest = taken.into_iter().peekable();
    while let Some(first) = rest.next() {
        let mut run = vec![first];
        while let Some(next) =
            rest.next_if(|n| run.last().is_some_and(|l| meets(&l.region, &n.region)))
        {
            run.push(next);
        }
        if run.len() > 1 {
            let q = i64::from(run[run.len() - 1].region.q1 - run[0].region.q0);
            let s0 = run.iter().map(|x| x.region.s0).min().unwrap_or(0);
            let s1 = run.iter().map(|x| x.region.s1).max().unwrap_or(0);
            if i64::from(s1 - s0) <= q * 3 / 2 + 2 * gap {
                let whole = run[1..]
                    .iter()
                    .try_fold(run[0].clone(), |acc, next| joined(&acc, next, p.min_similarity));
                if let Some(whole) = whole {
                    out.push(whole);
                    continue;
                }
            }
        }
        for next in run {
            if let Some(last) = out.last_mut() {
                if meets(&last.region, &next.region)
                    && near_in_source(&last.region, &next.region, p.max_gap)
                {
                    if let Some(j) = joined(last, &next, p.min_similarity) {
                        *last = j;
                        continue;
                    }
                }
            }
            out.push(next);
        }
    }
    out
}

/// True when `c` lies within `r`'s length (and twice `max_gap`) of `r` in the source: the
/// pieces of one copied passage lie within about its length of each other there too; a piece
/// from farther away is a phrase the source holds elsewhere (a name, a stock clause), not part
/// of this copy, wherever it falls in the query.
fn near_in_source(r: &Region, c: &Region, max_gap: u32) -> bool {
    let slack = i64::from(r.len()) + 2 * i64::from(max_gap);
    i64::from(c.s0) <= i64::from(r.s1) + slack && i64::from(c.s1) + slack >= i64::from(r.s0)
}

/// Passages `a` and `b` (of one source) as one, if it is at least `min_similarity` similar.
fn joined(a: &Settled, b: &Settled, min_similarity: f64) -> Option<Settled> {
    let mut region = a.region.clone();
    region.fragments.extend(b.region.fragments.iter().copied());
    region.recount();
    region.evidence = a.region.evidence + b.region.evidence;
    if region.similarity() < min_similarity {
        return None;
    }
    let mut also: Vec<u32> = Vec::new();
    for &d in a.also.iter().chain(&b.also) {
        let held = if a.also.contains(&d) { a.region.len() } else { 0 }
            + if b.also.contains(&d) { b.region.len() } else { 0 };
        if held * 2 >= region.len() && !also.contains(&d) {
            also.push(d);
        }
    }
    Some(Settled { region, also })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> AlignParams {
        AlignParams { seed: 3, max_gap: 4, min_units: 6, min_similarity: 0.5, min_evidence: 0.0 }
    }

    /// k-gram hashes of a sequence of small integers standing for units.
    fn grams(units: &[u64], k: usize) -> Vec<u64> {
        units
            .windows(k)
            .map(|w| w.iter().fold(7u64, |h, u| h.wrapping_mul(1_000_003) ^ u))
            .collect()
    }

    fn regions(q: &[u64], s: &[u64]) -> Vec<(u32, u32, u32, u32)> {
        let qg = grams(q, 3);
        let query = QueryGrams::new(&qg);
        align(&query, 0, &grams(s, 3), (q, s), &params())
            .iter()
            .map(|r| (r.q0, r.q1, r.s0, r.s1))
            .collect()
    }

    #[test]
    fn a_substitution_an_insertion_and_a_deletion_stay_inside_one_region() {
        let s: Vec<u64> = (100..130).collect();
        // Query: noise, the source with unit 110 replaced, 115 dropped, 900 inserted, noise.
        let mut q: Vec<u64> = vec![1, 2, 3, 4, 5];
        for u in 100..130u64 {
            match u {
                110 => q.push(999),
                115 => {}
                120 => {
                    q.push(u);
                    q.push(900);
                }
                _ => q.push(u),
            }
        }
        q.extend([6, 7, 8]);
        assert_eq!(regions(&q, &s), [(5, 35, 0, 30)]);
    }

    /// Alignments with the default passage settings (12 units, similarity 0.75).
    fn aligned(q: &[u64], s: &[u64]) -> Vec<Region> {
        let qg = grams(q, 3);
        let query = QueryGrams::new(&qg);
        let p = AlignParams { min_units: 12, min_similarity: 0.75, max_gap: 8, ..params() };
        align(&query, 0, &grams(s, 3), (q, s), &p)
    }

    /// A sentence frame: runs of three units with a two-unit name from `names` between them.
    fn frame(names: u64, n: usize) -> Vec<u64> {
        (0..n as u64)
            .flat_map(|i| [100 + 4 * i, 101 + 4 * i, 102 + 4 * i, names + 2 * i, names + 2 * i + 1])
            .collect()
    }

    #[test]
    fn a_sentence_frame_with_other_names_in_it_is_not_a_passage() {
        // The same frame, its names differing every three units (API pages of an encoder and
        // a decoder, code tables): short matches between edits, scoring nothing as a copy.
        let (s, q) = (frame(500, 12), frame(900, 12));
        assert!(aligned(&q, &s).is_empty(), "{:?}", aligned(&q, &s));
    }

    #[test]
    fn a_copy_ends_where_the_copying_ends_not_where_the_shared_frame_does() {
        // A copy of 30 units, followed in both texts by the same frame with other names.
        let mut s: Vec<u64> = (1000..1030).collect();
        s.extend(frame(500, 6));
        let mut q: Vec<u64> = (1000..1030).collect();
        q.extend(frame(900, 6));
        let got = aligned(&q, &s);
        assert_eq!(got.len(), 1, "{got:?}");
        // Trim cuts the frame off after the 33 units both texts share in a row (the copy and
        // the frame's first run); the edge extension takes back at most 2 * max_gap units, as
        // it takes the end of a copy past a typo. The frame's 36 units are not all taken.
        assert!(got[0].q1 <= 33 + 16, "the frame is not part of the passage: {got:?}");
        assert!(got[0].similarity() > 0.85, "{}", got[0].similarity());
    }

    #[test]
    fn a_sentence_moved_between_two_that_stay_in_order_is_part_of_the_passage() {
        // Source A B C; query A C B (a chain bridges A..B over C, which aligns on its own).
        let s: Vec<u64> = (100..120).collect();
        let mut q: Vec<u64> = (100..105).collect();
        q.extend(115..120);
        q.extend(105..115);
        let got = aligned(&q, &s);
        assert_eq!(got.iter().map(|r| (r.q0, r.q1)).collect::<Vec<_>>(), [(0, 20)], "{got:?}");
        assert_eq!(got[0].similarity(), 1.0);
    }

    #[test]
    fn a_phrase_the_source_holds_far_away_does_not_fill_a_passages_gap() {
        // Query X A Y; the source holds X Y together (the query inserted A between them) and
        // A alone 500 units before: A is a phrase found elsewhere, not part of the copy of X Y
        // (a law's "执行中查封" copied as "执行中华人民共和国查封", the name matched far back).
        let (x, a, y): (Vec<u64>, Vec<u64>, Vec<u64>) =
            ((1..4).collect(), (10..14).collect(), (20..28).collect());
        let q: Vec<u64> = [x.clone(), a.clone(), y.clone()].concat();
        let mut s = a.clone();
        s.extend(1000..1496);
        s.extend(x.iter().chain(&y));
        // With the defaults' similarity X Y is not a passage (11 of 15 units aligned)...
        assert_eq!(aligned(&q, &s), []);
        // ... and looser settings report Y alone (the gap A left costs X its place), not a
        // passage stretched over A's far stretch of the source.
        let p = AlignParams { min_units: 6, min_similarity: 0.5, max_gap: 8, ..params() };
        let got = align(&QueryGrams::new(&grams(&q, 3)), 0, &grams(&s, 3), (&q, &s), &p);
        let got: Vec<_> = got.iter().map(|r| (r.q0, r.q1, r.s0, r.s1)).collect();
        assert_eq!(got, [(7, 15, 503, 511)]);
    }

    #[test]
    fn a_copy_with_one_unit_in_ten_replaced_is_about_nine_tenths_similar() {
        let s: Vec<u64> = (100..200).collect();
        let q: Vec<u64> = s.iter().map(|&u| if u % 10 == 5 { u + 1000 } else { u }).collect();
        let got = aligned(&q, &s);
        assert_eq!(got.len(), 1, "{got:?}");
        let sim = got[0].similarity();
        assert!((0.88..=0.92).contains(&sim), "{sim}");
    }

    #[test]
    fn swapped_sentences_are_one_region_over_both_source_ranges() {
        let s: Vec<u64> = (100..140).collect();
        let mut q: Vec<u64> = (120..140).collect();
        q.extend(100..120);
        assert_eq!(regions(&q, &s), [(0, 40, 0, 40)]);
    }

    #[test]
    fn short_and_sparse_matches_are_not_passages() {
        let s: Vec<u64> = (100..140).collect();
        // Four shared units: below min_units.
        assert!(regions(&[1, 2, 100, 101, 102, 103, 3, 4], &s).is_empty());
        // Shared trigrams scattered through unrelated text.
        let q = [100, 101, 102, 50, 51, 52, 53, 54, 55, 56, 110, 111, 112, 60, 61, 62, 63];
        assert!(regions(&q, &s).is_empty());
    }

    #[test]
    fn the_sentences_of_a_passage_copied_in_another_order_are_one_passage() {
        // Query units 0..20 copy source units 30..50, 20..30 copy 0..10 (the sentences swapped),
        // 30..40 copy 500..510 (far in the source: another passage); 40..60 are another
        // source's, and 63..80 copy source 1's 10..27 again after a gap of the query.
        let r = |source, q0: u32, q1: u32, s0: u32| Region {
            source,
            q0,
            q1,
            s0,
            s1: s0 + q1 - q0,
            matched: q1 - q0,
            fragments: vec![Fragment { q0, q1, s0, s1: s0 + q1 - q0 }],
            evidence: 1.0,
            bridge: 4,
        };
        let regions = vec![
            r(1, 0, 20, 30),
            r(1, 20, 30, 0),
            r(1, 30, 40, 500),
            r(2, 40, 60, 0),
            r(1, 63, 80, 10),
        ];
        let settled = settle(regions, &params(), Attribution::BestMatch);
        let got: Vec<_> = settled
            .iter()
            .map(|s| (s.region.source, s.region.q0, s.region.q1, s.region.s0, s.region.s1))
            .collect();
        assert_eq!(
            got,
            [(1, 0, 30, 0, 50), (1, 30, 40, 500, 510), (2, 40, 60, 0, 20), (1, 63, 80, 10, 27)]
        );
        // Verbatim pieces, one jump between them in the source (bridge 4): 30 of 34.
        assert_eq!(settled[0].region.similarity(), 30.0 / 34.0);
        assert_eq!(settled[0].region.evidence, 2.0);

        // Three sentences of source units 300..340 copied as the first, the third, the second:
        // the third lies farther from the first than the first's length, but together they
        // tile the source's stretch, so they are one passage.
        let regions = vec![r(1, 100, 105, 300), r(1, 105, 125, 320), r(1, 125, 140, 305)];
        let settled = settle(regions, &params(), Attribution::BestMatch);
        let got: Vec<_> = settled
            .iter()
            .map(|s| (s.region.q0, s.region.q1, s.region.s0, s.region.s1, s.region.similarity()))
            .collect();
        assert_eq!(got, [(100, 140, 300, 340, 1.0)]);
    }

    #[test]
    fn the_better_source_takes_the_text_and_the_other_is_named_too() {
        let r = |source, q0, q1, matched| Region {
            source,
            q0,
            q1,
            s0: 0,
            s1: q1 - q0,
            matched,
            fragments: vec![Fragment { q0, q1, s0: 0, s1: q1 - q0 }],
            evidence: 0.0,
            bridge: 4,
        };
        let settled = settle(
            vec![r(1, 0, 20, 20), r(2, 0, 20, 18), r(3, 15, 40, 25)],
            &params(),
            Attribution::BestMatch,
        );
        let got: Vec<_> = settled
            .iter()
            .map(|s| (s.region.source, s.region.q0, s.region.q1, s.also.clone()))
            .collect();
        // Region 3 matches most and takes 15..40; region 1 keeps its free stretch 0..15; region 2
        // lies inside taken text and is named as holding it too.
        assert_eq!(got, [(1, 0, 15, vec![2]), (3, 15, 40, vec![])]);
    }

    #[test]
    fn a_source_sharing_a_byline_with_a_passage_is_not_named_as_holding_it() {
        let r = |source, q0, q1| Region {
            source,
            q0,
            q1,
            s0: 0,
            s1: q1 - q0,
            matched: q1 - q0,
            fragments: vec![Fragment { q0, q1, s0: 0, s1: q1 - q0 }],
            evidence: 0.0,
            bridge: 4,
        };
        // Source 1 holds the whole 100-unit passage, 2 most of it, 3 its first 15 units only.
        let settled = settle(
            vec![r(1, 0, 100), r(2, 10, 90), r(3, 0, 15)],
            &params(),
            Attribution::BestMatch,
        );
        let got: Vec<_> = settled.iter().map(|s| (s.region.source, s.also.clone())).collect();
        assert_eq!(got, [(1, vec![2])]);
    }
}
