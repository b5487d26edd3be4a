//! The check of one query against a collection: its k-grams looked up, candidate sources chosen
//! in rounds and aligned, the passages settled, quotations set apart, the shares counted. It
//! reads the collection through [`Holdings`]: a [`super::PassageIndex`] in memory, or the parts
//! a distributed run ships to the query ([`super::parts`]), so both give one answer.

use std::cell::RefCell;

use rustc_hash::{FxHashMap, FxHashSet};

use super::align::{align, evidence, settle, AlignParams, Attribution, QueryGrams, Region};
use super::exclude::{quotations, reference_lists, Excluded};
use super::index::winnow;
use super::units::{kgram_hashes, units, Unit};
use super::{Exclusion, Overlap, OverlapSpec, Passage, SourceShare};

/// What a check reads of the collection: the holders of each kept k-gram key and the texts of
/// the sources it aligns.
pub(crate) trait Holdings {
    /// The documents the built postings list for `key`, ascending (empty when none).
    fn built(&self, key: u32) -> &[u32];
    /// [`Holdings::built`] of each of `keys`, in order, into `out` (cleared first): a
    /// collection whose lookups miss the caches does them all together.
    fn built_all<'a>(&'a self, keys: &[u32], out: &mut Vec<&'a [u32]>) {
        out.clear();
        out.extend(keys.iter().map(|&k| self.built(k)));
    }
    /// The holders of a key added since the postings were built, ascending (after the built
    /// ones).
    fn recent(&self, key: u32) -> &[u32];
    /// True when the collection holds no key at all.
    fn no_keys(&self) -> bool;
    /// False for a document replaced or removed since the postings were built.
    fn live(&self, doc: u32) -> bool;
    /// True when every document the postings list is live, so that a k-gram's holders can be
    /// counted from the lengths of its lists.
    fn lists_only_live(&self) -> bool {
        false
    }
    /// When [`Holdings::built`] gives each key only its first holders (the first pass of a
    /// distributed check, [`super::parts::ShippedPostings::first_holders`]): how many documents
    /// the whole list of each of `keys` holds, in order. None when the lists are whole.
    fn listed_lens(&self, _keys: &[u32]) -> Option<Vec<u32>> {
        None
    }
    /// The text of document `doc`, or None when the caller does not have it at hand (a
    /// distributed run ships the texts a check asks for: [`Halt::Needs`]).
    fn text(&self, doc: u32) -> Option<&str>;
    /// Whether [`Holdings::text`] would give document `doc`'s text, without reading it (a
    /// saved index reads a text from its file, which a source whose hashes a check kept does
    /// not need).
    fn has_text(&self, doc: u32) -> bool {
        self.text(doc).is_some()
    }
}

/// Why a check ended without its answer.
#[derive(Debug)]
pub(crate) enum Halt {
    /// The caller asked it to stop.
    Stopped,
    /// It needs the texts of these documents, which [`Holdings::text`] did not give: the
    /// round's candidates first, then those likely next.
    Needs(Vec<u32>),
}

/// How many documents hold a passage: those holding at least half of the k-grams of its query
/// range that the index knows (at least one, its source). (More than half drops more loose
/// matches and more reworded copies alike: measured on the sample sets, BENCHMARKS.md.) Counted
/// over every holder the index gives each k-gram (up to `max_postings`), not only those that
/// made candidates. `docs` is the thread's scratch list: a map made anew for each region grew
/// by doubling through up to 256 holders of each of its k-grams, its rehashing alone 5% of a
/// near-duplicate corpus's samples (BENCHMARKS.md).
fn holders<C: Holdings>(r: &Region, held: &Held<'_, C>, k: u32, docs: &mut Vec<u32>) -> u32 {
    let end = ((r.q1 + 1).saturating_sub(k) as usize).min(held.built.len());
    docs.clear();
    let mut positions = 0u32;
    for i in (r.q0 as usize).min(end)..end {
        let before = docs.len();
        docs.extend(held.at(i));
        positions += u32::from(docs.len() > before);
    }
    docs.sort_unstable();
    let n = docs.chunk_by(|a, b| a == b).filter(|run| run.len() as u32 * 2 >= positions).count();
    // A thread keeps room for a usual passage's holders, not for the largest it met.
    if docs.capacity() > KEPT_HOLDERS {
        *docs = Vec::new();
    }
    (n as u32).max(1)
}

/// The most holders whose room [`holders`] keeps between passages.
const KEPT_HOLDERS: usize = 1 << 20;

/// The documents holding each k-gram of a query: for each of its positions, the first
/// `max_postings` live documents the index lists for its key, of those the usable ones (not
/// the query itself, not an excluded source).
struct Held<'c, C: Holdings> {
    c: &'c C,
    cap: usize,
    qgrams: &'c [u64],
    /// Each k-gram's list in the built postings.
    built: Vec<&'c [u32]>,
    /// The query's own document, never its source.
    own: Option<u32>,
    /// Documents never counted as sources.
    exclude: &'c [u32],
    /// Every listed document is live ([`Holdings::lists_only_live`]).
    only_live: bool,
    /// Each position's whole list's length, when `built` holds only its first holders
    /// ([`Holdings::listed_lens`]): the hits and the counts are still exact (see
    /// [`Held::count`]), but no passage can be told apart, so nothing is aligned.
    lens: Option<Vec<u32>>,
    /// The keys the query's own document posts, when they are its text's fingerprints (within
    /// a corpus the query is its own document): it is listed for a k-gram when it posts the
    /// key and comes among the first `cap` holders, which needs no search of the list (that
    /// search was half of `check_in`'s own time, BENCHMARKS.md).
    own_keys: Option<Vec<u32>>,
}

impl<'c, C: Holdings> Held<'c, C> {
    /// `own_keys`: the keys `own` posts, when known (see [`Held::own_keys`]).
    fn new(
        c: &'c C,
        cap: usize,
        qgrams: &'c [u64],
        own: Option<u32>,
        own_keys: Option<Vec<u32>>,
        exclude: &'c [u32],
    ) -> Self {
        let keys: Vec<u32> = qgrams.iter().map(|&h| key(h)).collect();
        let mut built = Vec::with_capacity(keys.len());
        c.built_all(&keys, &mut built);
        let lens = c.listed_lens(&keys);
        // Shortened lists have no last holder to compare with: the own document is found in
        // them (the first pass ships it there).
        let own_keys = own_keys.filter(|_| lens.is_none() && own.is_some());
        let only_live = c.lists_only_live();
        Held { c, cap, qgrams, built, own, exclude, only_live, lens, own_keys }
    }

    /// True when the lists are only their first holders ([`Held::lens`]).
    fn shortened(&self) -> bool {
        self.lens.is_some()
    }

    /// Whether document `d` may be a source of the query.
    fn usable(&self, d: u32) -> bool {
        Some(d) != self.own && !self.exclude.contains(&d)
    }

    /// How many of [`Held::at`] there are for position `i`, without reading them one by one:
    /// when every listed document is live, the first `cap` listed less the query itself and
    /// the excluded ones among them (found by binary search: each list is ascending, and the
    /// recent holders come after the built ones). Lists shortened to their first holders give
    /// the query itself and the excluded ones only when they are among those (or shipped
    /// besides, as the Spark job ships a group's own documents): one beyond them still counts.
    fn count(&self, i: usize) -> Option<u32> {
        if !self.only_live {
            return None;
        }
        let (built, recent) = self.lists(i);
        let n = self.listed(i);
        if n == 0 {
            return Some(0);
        }
        let given = built.len() + recent.len();
        let last = if n > given {
            // A shortened list holds only documents among the first `n`.
            u32::MAX
        } else if n <= built.len() {
            built[n - 1]
        } else {
            recent[n - built.len() - 1]
        };
        let listed = |d: u32| {
            d <= last && (built.binary_search(&d).is_ok() || recent.binary_search(&d).is_ok())
        };
        let mut out = n;
        let own_listed = match (&self.own_keys, self.own) {
            (Some(keys), Some(own)) => {
                own <= last && keys.binary_search(&key(self.qgrams[i])).is_ok()
            }
            _ => self.own.is_some_and(listed),
        };
        if own_listed {
            out -= 1;
        }
        for (j, &e) in self.exclude.iter().enumerate() {
            // Each document once, as `usable` reads the list.
            if Some(e) != self.own && !self.exclude[..j].contains(&e) && listed(e) {
                out -= 1;
            }
        }
        Some(out as u32)
    }

    /// The documents the index lists for the k-gram at query position `i`: in the built
    /// postings, then added since, each ascending.
    fn lists(&self, i: usize) -> (&'c [u32], &'c [u32]) {
        (self.built[i], self.c.recent(key(self.qgrams[i])))
    }

    /// How many documents the index lists for the k-gram at query position `i`, up to `cap`
    /// (before the live and usable ones are chosen).
    fn listed(&self, i: usize) -> usize {
        if let Some(lens) = &self.lens {
            return (lens[i] as usize).min(self.cap);
        }
        let (built, recent) = self.lists(i);
        (built.len() + recent.len()).min(self.cap)
    }

    /// The usable holders of the k-gram at query position `i`, ascending.
    fn at(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        let (built, recent) = self.lists(i);
        built
            .iter()
            .chain(recent)
            .copied()
            .filter(|&d| self.c.live(d))
            .take(self.cap)
            .filter(|&d| self.usable(d))
    }
}

/// One source's character ranges: those its counted passages cover, and its quoted ones.
type CountedAndQuoted = (Vec<(u64, u64)>, Vec<(u64, u64)>);

thread_local! {
    pub(crate) static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Buffers reused from one check to the next on a thread.
#[derive(Default)]
pub(crate) struct Scratch {
    pub units: Vec<Unit>,
    pub grams: Vec<u64>,
    pub hashes: Vec<u64>,
    /// The query's units and k-gram hashes (taken by a check and given back when it ends).
    pub query_units: Vec<Unit>,
    pub query_grams: Vec<u64>,
    /// The hashes of sources aligned often by the checks of one unchanging collection.
    pub sources: SourceCache,
    /// The holders of a passage's k-grams ([`holders`]).
    pub holders: Vec<u32>,
}

/// Where a check may reuse the hashes of sources that earlier checks on its thread computed:
/// a number that names one collection in one state (a batch over an index it does not change,
/// a saved index), from [`new_scope`]; [`NO_SCOPE`] reuses nothing.
pub(crate) type Scope = u64;
/// The scope of a check that reuses nothing.
pub(crate) const NO_SCOPE: Scope = 0;

/// A scope no other collection or batch has had.
pub(crate) fn new_scope() -> Scope {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Slots of the source cache (one source each, placed by its number; a power of two).
const CACHE_SLOTS: usize = 8192;
/// The most units the cache of one thread holds at once, 16 bytes each (32 MiB).
const CACHE_UNITS: usize = 1 << 21;
/// A source longer than this is not cached (one would crowd out hundreds of others).
const CACHE_MAX_SOURCE_UNITS: usize = 1 << 14;

/// The k-gram and unit hashes of the sources a thread aligned, kept for the next checks of the
/// same [`Scope`]. Within a corpus most candidate sources are chance ones (they share a few
/// common k-grams with the query and are aligned to nothing), and the same few thousand
/// documents, those holding many common k-grams among the first holders, are such candidates
/// of most queries: reading their units again was most of a check's cost. A slot keeps the
/// source used more often (each use counts one, each miss that wants the slot takes one), so
/// sources aligned once do not push out those aligned for every query. The answers are the
/// same with or without it: only where the hashes come from changes.
#[derive(Default)]
pub(crate) struct SourceCache {
    scope: Scope,
    slots: Vec<CachedSource>,
    units: usize,
}

#[derive(Default)]
struct CachedSource {
    doc: u32,
    uses: u32,
    held: bool,
    grams: Vec<u64>,
    hashes: Vec<u64>,
}

impl SourceCache {
    /// Serves `scope` from now on: what another scope cached is dropped.
    pub(crate) fn enter(&mut self, scope: Scope) {
        if scope != self.scope {
            self.slots = Vec::new();
            self.units = 0;
            self.scope = scope;
        }
    }

    fn slot(doc: u32) -> usize {
        // Fibonacci hashing: the product's top bits, as many as the slots need.
        (u64::from(doc).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CACHE_SLOTS.trailing_zeros()))
            as usize
    }
}

/// The k-gram hashes and the unit hashes of source `d`: from the thread's cache when an earlier
/// check of the same scope kept them, else computed from `text` (and kept when the slot's
/// source is used less).
fn source_hashes<'s, 't>(
    s: &'s mut Scratch,
    d: u32,
    text: impl FnOnce() -> &'t str,
    spec: &OverlapSpec,
) -> (&'s [u64], &'s [u64]) {
    let Scratch { units: u, grams, hashes, sources, .. } = s;
    let cached = sources.scope != NO_SCOPE;
    if cached {
        if sources.slots.is_empty() {
            sources.slots.resize_with(CACHE_SLOTS, CachedSource::default);
        }
        let i = SourceCache::slot(d);
        if sources.slots[i].held && sources.slots[i].doc == d {
            let slot = &mut sources.slots[i];
            slot.uses = slot.uses.saturating_add(1);
            return (&slot.grams, &slot.hashes);
        }
    }
    units(text(), spec.zh_script, u);
    kgram_hashes(u, spec.seed as usize, grams);
    hashes.clear();
    hashes.extend(u.iter().map(|u| u.hash));
    if cached && hashes.len() <= CACHE_MAX_SOURCE_UNITS {
        let i = SourceCache::slot(d);
        let slot = &mut sources.slots[i];
        if slot.held && slot.uses > 0 {
            slot.uses -= 1;
        } else {
            let freed = if slot.held { slot.hashes.len() } else { 0 };
            if sources.units - freed + hashes.len() <= CACHE_UNITS {
                sources.units = sources.units - freed + hashes.len();
                slot.doc = d;
                slot.uses = 1;
                slot.held = true;
                slot.grams.clone_from(grams);
                slot.hashes.clone_from(hashes);
            }
        }
    }
    (grams, hashes)
}

/// K-grams per block of the candidate search.
const BLOCK: usize = 32;
/// Candidate sources taken per stretch of the query.
const PER_STRETCH: usize = 8;
/// Candidate sources aligned per round.
const ROUND: usize = 16;
/// Candidate sources whose texts a check that lacks some asks for at once: the round's, and the
/// documents with most hits in any stretch (any number per stretch, not the round's
/// [`PER_STRETCH`]): those later rounds take once earlier sources explain their stretches, so
/// that a distributed run ships texts in few passes.
const PREFETCH: usize = 16 * ROUND;

/// The most hits (a query position and a document holding its k-gram) a check keeps, 32 MiB of
/// them: a long query of common k-grams (a text over a small vocabulary) would otherwise hold
/// positions times holders. Past it each position keeps fewer holders, the earliest.
const MAX_HITS: usize = 1 << 22;
/// The holders of each k-gram kept, at least (unless `max_postings` is lower).
const MIN_HOLDERS: usize = 8;
/// The holders of each k-gram that make hits (candidates). A k-gram that more documents hold
/// says little of which is the source (its hits weigh under a thirty-second of a rare
/// k-gram's): a passage's source is found through its rarer k-grams, and the first holders of a
/// text that stands in many documents (boilerplate) include its earliest. Its document
/// frequency still counts every holder up to `max_postings`. (Every holder's hits cost a corpus
/// of many documents twice the time and more, for answers no better on the labelled sets:
/// BENCHMARKS.md.)
pub(crate) const HIT_HOLDERS: usize = 32;

/// The 32-bit key of a k-gram hash in the index. Two k-grams that share a key make a wrong
/// candidate at worst, which alignment (on full 64-bit hashes) then finds nothing in.
pub(crate) fn key(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// Every hit of the query's k-grams in the index, as `(doc << 32) | position`, sorted, and
/// each k-gram's document frequency. A hit is a candidate's evidence of where it may hold a
/// copy: each k-gram gives the first [`HIT_HOLDERS`] of its holders; when the query's k-grams
/// would make more than [`MAX_HITS`] hits, each gives fewer (as many as the budget allows per
/// position, at least [`MIN_HOLDERS`]), so a check's memory follows its query's length. The
/// document frequency counts every usable holder up to `max_postings`: how common the k-gram
/// is in the collection, the weight of a match on it (see `align::evidence`).
fn hits<C: Holdings>(held: &Held<'_, C>) -> (Vec<u64>, Vec<u32>) {
    let n = held.qgrams.len();
    let hit_cap = held.cap.min(HIT_HOLDERS);
    let total: usize = (0..n).map(|i| held.listed(i).min(hit_cap)).sum();
    let per_position = if total <= MAX_HITS {
        hit_cap
    } else {
        (MAX_HITS / n.max(1)).max(MIN_HOLDERS).min(hit_cap)
    };
    let mut hits: Vec<u64> = Vec::with_capacity(total.min(MAX_HITS.max(per_position)));
    let mut df: Vec<u32> = Vec::with_capacity(n);
    for i in 0..n {
        if let Some(count) = held.count(i) {
            // Only the hits are read; the count comes from the lists' lengths.
            hits.extend(held.at(i).take(per_position).map(|d| (u64::from(d) << 32) | i as u64));
            debug_assert!(held.shortened() || count as usize == held.at(i).count(), "position {i}");
            df.push(count);
            continue;
        }
        let mut count = 0u32;
        for d in held.at(i) {
            if (count as usize) < per_position {
                hits.push((u64::from(d) << 32) | i as u64);
            }
            count += 1;
        }
        df.push(count);
    }
    hits.sort_unstable();
    (hits, df)
}

/// The next candidate sources to align, best first: for every stretch of the query (two
/// blocks of [`BLOCK`] k-grams, sliding by one block), the `per_stretch` documents not yet
/// aligned with most hits there, at least two; at most `limit`, by their best stretch. Hits at
/// positions a region already found explains do not count ([`stretches`]). Choosing per
/// stretch, and among what is left unexplained, finds the source of each part of a text that
/// copies from many, even where many documents share long common text (a license,
/// boilerplate) with the query.
fn next_candidates(
    stretches: &[Stretch],
    aligned: &FxHashSet<u32>,
    limit: usize,
    per_stretch: usize,
) -> Vec<u32> {
    let mut best: FxHashMap<u32, u32> = FxHashMap::default();
    let mut i = 0;
    while i < stretches.len() {
        let b = stretches[i].0;
        let mut taken = 0;
        while i < stretches.len() && stretches[i].0 == b {
            let (_, std::cmp::Reverse(score), d) = stretches[i];
            if taken < per_stretch && !aligned.contains(&d) {
                let e = best.entry(d).or_insert(0);
                *e = (*e).max(score);
                taken += 1;
            }
            i += 1;
        }
    }
    let mut out: Vec<(u32, u32)> = best.into_iter().collect();
    out.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(limit);
    out.into_iter().map(|(d, _)| d).collect()
}

/// A stretch of the query and a document with hits there: `(block, score, document)`.
type Stretch = (u32, std::cmp::Reverse<u32>, u32);

/// The score of a hit on a k-gram that `df` documents hold: a rare k-gram says more of which
/// document is the source than one many hold (as IDF weighs words), so a source that shares a
/// passage's rare words ranks above the many that share its stock phrases.
fn hit_weight(df: u32) -> u32 {
    (1 << 16) / df.max(1)
}

/// Every stretch with at least two hits of a document, in the order [`next_candidates`] reads
/// them (by block, highest score first: its hits weighed by [`hit_weight`]); hits at positions
/// a region already found explains (`explained(doc, position)`) do not count. It depends on
/// what is explained, not on what was aligned (those are skipped when candidates are taken): a
/// round that explains nothing new keeps it.
fn stretches(hits: &[u64], df: &[u32], explained: impl Fn(u32, u32) -> bool) -> Vec<Stretch> {
    let mut counts: Vec<(u32, u32, u32, u32)> = Vec::new(); // (doc, block, hits, score)
    for &h in hits {
        let (d, pos) = ((h >> 32) as u32, h as u32);
        if explained(d, pos) {
            continue;
        }
        let w = hit_weight(df[pos as usize]);
        let b = pos / BLOCK as u32;
        match counts.last_mut() {
            Some(last) if last.0 == d && last.1 == b => {
                last.2 += 1;
                last.3 += w;
            }
            _ => counts.push((d, b, 1, w)),
        }
    }
    let mut stretches: Vec<Stretch> = Vec::new();
    for (i, &(d, b, n, w)) in counts.iter().enumerate() {
        let next = counts.get(i + 1).filter(|c| c.0 == d && c.1 == b + 1);
        let (next_n, next_w) = next.map_or((0, 0), |c| (c.2, c.3));
        if n + next_n >= 2 {
            stretches.push((b, std::cmp::Reverse(w + next_w), d));
        }
        // The stretch that starts one block earlier, when that block has no hits.
        let prev_counted = i > 0 && counts[i - 1].0 == d && counts[i - 1].1 + 1 == b;
        if b > 0 && !prev_counted && n >= 2 {
            stretches.push((b - 1, std::cmp::Reverse(w), d));
        }
    }
    stretches.sort_unstable();
    stretches
}

fn align_params(spec: &OverlapSpec) -> AlignParams {
    AlignParams {
        seed: spec.seed,
        max_gap: spec.max_gap,
        min_units: spec.min_units,
        min_similarity: spec.min_similarity,
        min_evidence: spec.min_evidence as f32,
    }
}

/// Checks `text` against the collection `c` holds. `own` and `exclude` are never sources;
/// `scope` says which earlier checks on this thread saw the same collection unchanged, whose
/// sources' hashes it may reuse ([`SourceCache`]; [`NO_SCOPE`] for none).
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_in(
    c: &impl Holdings,
    spec: &OverlapSpec,
    text: &str,
    own: Option<u32>,
    exclude: &[u32],
    by: Attribution,
    stopped: &dyn Fn() -> bool,
    s: &mut Scratch,
    scope: Scope,
) -> Result<Overlap, Halt> {
    s.sources.enter(scope);
    let p = align_params(spec);
    let seed = spec.seed as usize;
    let mut overlap = Overlap { chars: text.chars().count() as u64, ..Overlap::default() };
    let mut qunits = std::mem::take(&mut s.query_units);
    units(text, spec.zh_script, &mut qunits);
    let mut qgrams = std::mem::take(&mut s.query_grams);
    kgram_hashes(&qunits, seed, &mut qgrams);
    if qgrams.is_empty() || c.no_keys() {
        (s.query_units, s.query_grams) = (qunits, qgrams);
        return Ok(overlap);
    }

    // Within a corpus (the earliest holder is the source) the query is its own document, and
    // what it posts are its text's fingerprints.
    let own_keys = (by == Attribution::Earliest && own.is_some()).then(|| {
        let mut keys = Vec::new();
        winnow(&qgrams, spec.window as usize, &mut keys);
        keys
    });
    let held = Held::new(c, spec.max_postings as usize, &qgrams, own, own_keys, exclude);
    let (hits, df) = hits(&held);

    // Alignment in rounds: the best candidates for what is not yet explained, until
    // nothing is left with two hits or `max_sources` were aligned. A k-gram position is
    // explained by a region over it; within a corpus, only for later documents, so that
    // the earliest holder of a stretch is still aligned.
    // Built at the first alignment: most checks within a corpus align nothing.
    let mut query: Option<QueryGrams> = None;
    let min_density = spec.min_density as f32;
    let qhashes: Vec<u64> = qunits.iter().map(|u| u.hash).collect();
    let mut regions: Vec<Region> = Vec::new();
    let mut covered = vec![u32::MAX; qgrams.len()]; // lowest source explaining each k-gram
    let mut aligned = FxHashSet::default();
    let max_sources = spec.max_sources as usize;
    // The stretches of the hits left unexplained, counted again only when a round explains
    // more (most rounds, of chance candidates, explain nothing).
    let mut ranked: Option<Vec<Stretch>> = None;
    while aligned.len() < max_sources {
        let explained = |d: u32, pos: u32| {
            let c = covered[pos as usize];
            match by {
                Attribution::BestMatch => c != u32::MAX,
                Attribution::Earliest => c < d,
            }
        };
        let order: &[Stretch] = ranked.get_or_insert_with(|| stretches(&hits, &df, explained));
        let batch =
            next_candidates(order, &aligned, ROUND.min(max_sources - aligned.len()), PER_STRETCH);
        if batch.is_empty() {
            break;
        }
        if held.shortened() || batch.iter().any(|&d| !c.has_text(d)) {
            // The caller ships texts: it gets the round's candidates and those likely next
            // (ranked as they are now), and runs the check again with them. Shortened lists
            // cannot count a passage's holders (`holders`): they only say what to ship.
            let mut needs: Vec<u32> = batch.clone();
            for d in next_candidates(order, &aligned, PREFETCH, usize::MAX) {
                if !needs.contains(&d) {
                    needs.push(d);
                }
            }
            // A first pass (shortened lists) names them all: its caller checks again with the
            // whole lists and these texts.
            if !held.shortened() {
                needs.retain(|&d| !c.has_text(d));
            }
            return Err(Halt::Needs(needs));
        }
        for d in batch {
            // A long check stops between sources when the caller asks (a Ctrl-C, a
            // request given up).
            if stopped() {
                return Err(Halt::Stopped);
            }
            aligned.insert(d);
            let (grams, hashes) = source_hashes(s, d, || c.text(d).unwrap_or_default(), spec);
            let query = query.get_or_insert_with(|| QueryGrams::new(&qgrams));
            let mut found = align(query, d, grams, (&qhashes, hashes), &p);
            // Significance: a passage needs evidence for its length. Its k-grams are
            // weighed by how many documents hold them besides those holding the passage
            // itself, so that a text standing in several documents is still a copy, and a
            // long loose match made of what the field's writing shares is not. A region
            // dropped here explains nothing: another source may still hold the stretch.
            for r in &mut found {
                let n = holders(r, &held, p.seed, &mut s.holders);
                r.evidence = evidence(r, &df, p.seed, n);
            }
            found.retain(|r| {
                r.evidence >= p.min_evidence
                    && r.evidence >= min_density * r.len() as f32
                    && anchored(r, &qunits, spec.min_anchor_chars)
            });
            if !found.is_empty() {
                // What is explained changed: the stretches are counted again next round.
                ranked = None;
            }
            for r in &found {
                let end = (r.q1 as usize).min(covered.len());
                for x in &mut covered[r.q0 as usize..end] {
                    *x = (*x).min(d);
                }
            }
            regions.extend(found);
        }
    }
    let settled = settle(regions, &p, by);

    // Quotations and references are set apart (looked for only when there is a passage:
    // most checks within a corpus have none).
    let excluded = if settled.is_empty() { Vec::new() } else { exclusions(spec, text, &qunits) };
    let mut passages = Vec::new();
    let mut set_apart = Vec::new();
    for st in settled {
        let apart = set_apart_in(st.region.q0, st.region.q1, &excluded, p.min_units);
        for (q0, q1, why) in split(st.region.q0, st.region.q1, &apart) {
            if q1 - q0 < p.min_units {
                continue;
            }
            let mut r = st.region.clone();
            if !r.clip(q0, q1) || r.q1 - r.q0 < p.min_units {
                continue;
            }
            match why {
                None => passages.push((r, st.also.clone(), None)),
                Some(w) => set_apart.push((r, st.also.clone(), Some(w))),
            }
        }
    }
    overlap.passages = to_passages(c, spec, text, &qunits, passages, s);
    overlap.excluded = to_passages(c, spec, text, &qunits, set_apart, s);

    // The copied share, each character once.
    let counted: Vec<(u64, u64)> = overlap.passages.iter().map(|p| (p.start, p.end)).collect();
    overlap.copied_chars = union_len(counted.clone());
    let all: Vec<(u64, u64)> =
        counted.iter().copied().chain(overlap.excluded.iter().map(|p| (p.start, p.end))).collect();
    overlap.excluded_chars = union_len(all) - overlap.copied_chars;
    // Per source: its counted characters, and the quoted ones that no counted passage
    // covers (each character once across sources, as in the copied share).
    let mut by_source: FxHashMap<u32, CountedAndQuoted> = FxHashMap::default();
    for p in &overlap.passages {
        by_source.entry(p.source).or_default().0.push((p.start, p.end));
    }
    for p in &overlap.excluded {
        by_source.entry(p.source).or_default().1.push((p.start, p.end));
    }
    overlap.sources = by_source
        .into_iter()
        .map(|(source, (counted, quoted))| {
            let chars = union_len(counted.clone());
            let quoted_chars = union_len(counted.into_iter().chain(quoted).collect()) - chars;
            SourceShare { source, chars, quoted_chars }
        })
        .collect();
    overlap.sources.sort_unstable_by(|a, b| b.chars.cmp(&a.chars).then(a.source.cmp(&b.source)));
    Ok(overlap)
}

/// True when region `r` is long enough to stand on its similarity and evidence (at least
/// `2 * anchor` characters of units), or holds a verbatim run of at least `anchor` characters:
/// units aligned one after another in both texts, without an edit between them (punctuation
/// and spaces are not units, so a swapped comma does not break a run).
/// [`OverlapSpec::min_anchor_chars`].
fn anchored(r: &Region, qunits: &[Unit], anchor: u32) -> bool {
    let chars = |q0: u32, q1: u32| -> u32 {
        qunits[q0 as usize..(q1 as usize).min(qunits.len())].iter().map(|u| u.end - u.start).sum()
    };
    if anchor == 0 || chars(r.q0, r.q1) >= anchor.saturating_mul(2) {
        return true;
    }
    // The aligned pairs, in query order; a run continues while the next pair follows on the
    // same diagonal.
    let mut pairs: Vec<(u32, u32)> =
        r.fragments.iter().flat_map(|f| (f.q0..f.q1).map(move |i| (i, i - f.q0 + f.s0))).collect();
    pairs.sort_unstable();
    pairs.dedup_by_key(|p| p.0);
    let (mut best, mut run) = (0u32, 0u32);
    let mut last: Option<(u32, u32)> = None;
    for &(q, s) in &pairs {
        let unit = chars(q, q + 1);
        run = match last {
            Some((lq, ls)) if lq + 1 == q && ls + 1 == s => run + unit,
            _ => unit,
        };
        best = best.max(run);
        last = Some((q, s));
    }
    best >= anchor
}

/// The query's quotations and reference list as unit ranges, sorted and disjoint; a
/// quotation shorter than a passage is a term or a title, not a quotation that could hide a
/// copy, and is ignored.
fn exclusions(spec: &OverlapSpec, text: &str, qunits: &[Unit]) -> Vec<(u32, u32, Exclusion)> {
    let mut found: Vec<Excluded> = Vec::new();
    if spec.exclude_quotes {
        found.extend(quotations(text, spec.max_quote_chars as usize));
    }
    if spec.exclude_references {
        found.extend(reference_lists(text));
    }
    let mut out: Vec<(u32, u32, Exclusion)> = found
        .into_iter()
        .map(|e| {
            let u0 = qunits.partition_point(|u| u.start < e.start) as u32;
            let u1 = qunits.partition_point(|u| u.end <= e.end) as u32;
            (u0, u1.max(u0), e.why)
        })
        .filter(|&(u0, u1, why)| why == Exclusion::References || u1 - u0 >= spec.min_units)
        .collect();
    out.sort_unstable_by_key(|&(a, b, _)| (a, b));
    let mut merged: Vec<(u32, u32, Exclusion)> = Vec::new();
    for e in out {
        match merged.last_mut() {
            Some(last) if e.0 <= last.1 => last.1 = last.1.max(e.1),
            _ => merged.push(e),
        }
    }
    merged
}

/// Maps settled regions to passages with offsets in both texts.
fn to_passages(
    c: &impl Holdings,
    spec: &OverlapSpec,
    text: &str,
    qunits: &[Unit],
    regions: Vec<(Region, Vec<u32>, Option<Exclusion>)>,
    s: &mut Scratch,
) -> Vec<Passage> {
    let mut out = Vec::with_capacity(regions.len());
    let mut by_source: Vec<usize> = (0..regions.len()).collect();
    by_source.sort_by_key(|&i| regions[i].0.source);
    let mut loaded = u32::MAX;
    let mut slots: Vec<Option<Passage>> = vec![None; regions.len()];
    for i in by_source {
        let (r, also, why) = &regions[i];
        if loaded != r.source {
            units(c.text(r.source).unwrap_or_default(), spec.zh_script, &mut s.units);
            loaded = r.source;
        }
        let (qa, qb) = (&qunits[r.q0 as usize], &qunits[r.q1 as usize - 1]);
        let (sa, sb) = (&s.units[r.s0 as usize], &s.units[r.s1 as usize - 1]);
        let source_text = c.text(r.source).unwrap_or_default();
        // Punctuation both texts hold at the passage's ends belongs to it (the full stop
        // after its last word, the bracket before its first).
        let ((_, s_first), (_, s_last)) = r.end_pairs();
        let (sf, sl) = (&s.units[s_first as usize], &s.units[s_last as usize]);
        let tail = same_punctuation(
            text[qb.end_byte as usize..].chars(),
            source_text[sl.end_byte as usize..].chars(),
            |c| !is_opening(c),
        );
        let head = same_punctuation(
            text[..qa.start_byte as usize].chars().rev(),
            source_text[..sf.start_byte as usize].chars().rev(),
            is_opening,
        );
        let s_tail = if s_last + 1 == r.s1 { tail } else { (0, 0) };
        let s_head = if s_first == r.s0 { head } else { (0, 0) };
        let mut also = also.clone();
        also.sort_unstable();
        slots[i] = Some(Passage {
            source: r.source,
            also,
            start: u64::from(qa.start) - head.0,
            end: u64::from(qb.end) + tail.0,
            start_byte: u64::from(qa.start_byte) - head.1,
            end_byte: u64::from(qb.end_byte) + tail.1,
            source_start: u64::from(sa.start) - s_head.0,
            source_end: u64::from(sb.end) + s_tail.0,
            source_start_byte: u64::from(sa.start_byte) - s_head.1,
            source_end_byte: u64::from(sb.end_byte) + s_tail.1,
            similarity: (r.similarity() * 1e4).round() / 1e4,
            evidence: (f64::from(r.evidence) * 100.0).round() / 100.0,
            exclusion: *why,
        });
    }
    out.extend(slots.into_iter().flatten());
    out.sort_by_key(|p| (p.start, p.end));
    out
}

/// Opening brackets and quotation marks: they belong to what follows them.
fn is_opening(c: char) -> bool {
    matches!(
        c,
        '(' | '['
            | '{'
            | '"'
            | '\''
            | '（'
            | '［'
            | '｛'
            | '【'
            | '〔'
            | '《'
            | '〈'
            | '「'
            | '『'
            | '\u{201C}'
            | '\u{2018}'
            | '«'
    )
}

/// The code points and bytes of the punctuation two texts share from where they are read: equal
/// characters that are neither letters, digits nor whitespace, and that `belongs` accepts (a
/// passage takes the full stop after it and the bracket before it, not the other way round).
fn same_punctuation(
    a: impl Iterator<Item = char>,
    b: impl Iterator<Item = char>,
    belongs: impl Fn(char) -> bool,
) -> (u64, u64) {
    let (mut chars, mut bytes) = (0, 0);
    for (x, y) in a.zip(b) {
        if x != y || x.is_alphanumeric() || x.is_whitespace() || !belongs(x) {
            break;
        }
        chars += 1;
        bytes += x.len_utf8() as u64;
    }
    (chars, bytes)
}

/// The ranges of `excluded` that are set apart from a passage over units `q0..q1`: each but a
/// quotation embedded in it, one with at least `min_units` units of the passage outside any
/// quotation on each side. Such a quotation is not the writer's: the text around it was copied
/// from the same source too, so it is part of a copy of a text that quotes (a law quoting the
/// article it amends, a paper quoting a speech), and counts as copied with it. A quotation that
/// the copy only reaches on one side, or that stands alone, stays a quotation.
fn set_apart_in(
    q0: u32,
    q1: u32,
    excluded: &[(u32, u32, Exclusion)],
    min_units: u32,
) -> Vec<(u32, u32, Exclusion)> {
    let quoted = |a: u32, b: u32| -> u32 {
        excluded
            .iter()
            .filter(|e| e.2 == Exclusion::Quote)
            .map(|&(x, y, _)| y.min(b).saturating_sub(x.max(a)))
            .sum()
    };
    let unquoted = |a: u32, b: u32| b.saturating_sub(a) - quoted(a, b);
    excluded
        .iter()
        .filter(|&&(a, b, why)| {
            let inside = q0 <= a && b <= q1;
            why != Exclusion::Quote
                || !inside
                || unquoted(q0, a) < min_units
                || unquoted(b, q1) < min_units
        })
        .copied()
        .collect()
}

/// Splits units `[q0, q1)` at the excluded ranges: the pieces in order, each with the exclusion
/// it lies in (`None`: counted).
fn split(
    q0: u32,
    q1: u32,
    excluded: &[(u32, u32, Exclusion)],
) -> Vec<(u32, u32, Option<Exclusion>)> {
    let mut out = Vec::new();
    let mut at = q0;
    for &(a, b, why) in excluded {
        if b <= at || a >= q1 {
            continue;
        }
        if a > at {
            out.push((at, a, None));
        }
        out.push((a.max(at), b.min(q1), Some(why)));
        at = b.min(q1);
    }
    if at < q1 {
        out.push((at, q1, None));
    }
    out
}

/// The length of the union of ranges.
fn union_len(mut ranges: Vec<(u64, u64)>) -> u64 {
    ranges.sort_unstable();
    let mut total = 0;
    let mut covered_to = 0;
    for (a, b) in ranges {
        let from = a.max(covered_to);
        if b > from {
            total += b - from;
            covered_to = b;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlap::{OnExistingId, PassageIndex};

    /// The source cache gives each source's own hashes: two sources that share a slot, used in
    /// turn (the more used one stays, the other is computed each time), a long source never
    /// kept, a new scope dropping what the last one kept.
    #[test]
    fn the_source_cache_gives_each_source_its_own_hashes() {
        let spec = OverlapSpec::default();
        let direct = |text: &str| {
            let (mut u, mut g) = (Vec::new(), Vec::new());
            units(text, spec.zh_script, &mut u);
            kgram_hashes(&u, spec.seed as usize, &mut g);
            (g, u.iter().map(|u| u.hash).collect::<Vec<u64>>())
        };
        let a = 0u32;
        let b = (1..).find(|&d| SourceCache::slot(d) == SourceCache::slot(a)).expect("a collision");
        let long = "word ".repeat(CACHE_MAX_SOURCE_UNITS + 5);
        let texts = [(a, "one two three four five"), (b, "six seven eight nine ten")];
        let mut s = Scratch::default();
        for scope in [new_scope(), new_scope()] {
            s.sources.enter(scope);
            for round in 0..6 {
                for &(d, t) in &texts[..1 + round % 2] {
                    let (g, h) = source_hashes(&mut s, d, || t, &spec);
                    assert_eq!((g.to_vec(), h.to_vec()), direct(t), "doc {d} round {round}");
                }
                let (g, h) = source_hashes(&mut s, 7, || long.as_str(), &spec);
                assert_eq!((g.to_vec(), h.to_vec()), direct(&long));
            }
            assert!(s.sources.units <= CACHE_UNITS);
            assert!(s
                .sources
                .slots
                .iter()
                .all(|c| !c.held || c.hashes.len() <= CACHE_MAX_SOURCE_UNITS));
        }
        // The same number in another scope is another document.
        s.sources.enter(new_scope());
        let (g, _) = source_hashes(&mut s, a, || "eleven twelve thirteen", &spec);
        assert_eq!(g.to_vec(), direct("eleven twelve thirteen").0);
        s.sources.enter(NO_SCOPE);
        assert!(s.sources.slots.is_empty());
    }

    /// A quotation inside a copy, with copied text of the same source on both sides, is part
    /// of the copy (the source quotes it too: the writer copied a text that quotes); the same
    /// quotation standing alone in the writer's own words is still set apart, and so is one
    /// that the copy reaches on one side only.
    #[test]
    fn a_quotation_inside_a_copy_is_copied_and_one_standing_alone_is_set_apart() {
        let before =
            "第十五条 违反本条例规定，未经批准擅自在航道保护范围内从事采砂、取土等活动的，\
                      由交通行政管理部门责令停止违法行为，限期恢复原状，并处以罚款。";
        let quoted = "单位犯前款罪的，对单位判处罚金，并对其直接负责的主管人员和其他直接责任人员\
                      依照前款的规定处罚";
        let after = "第十六条 航道建设应当符合防汛安全要求，不得影响河道行洪，不得危害堤防安全，\
                     并应当征求水行政主管部门的意见，依法办理有关审批手续。";
        let source = format!("{before}\n“{quoted}。”\n{after}");
        let mut index = PassageIndex::new(OverlapSpec::default()).expect("index");
        index
            .add_documents(vec![("law".into(), source.clone())], OnExistingId::Refuse)
            .expect("added");
        index.merge_postings();
        let own = "我们在调研中走访了十二个县的基层单位，记录了各地执法人员的做法和遇到的困难，\
                   整理出以下几点看法，供讨论时参考。";

        // Copied whole, its quotation with it: one passage, counted.
        let copied = format!("{own}{source}{own}");
        let o = index.check(None, &copied, &[]).expect("checked");
        assert_eq!(o.passages.len(), 1, "{:?}", o.passages);
        assert!(o.excluded.is_empty(), "{:?}", o.excluded);
        let (start, end) =
            (own.chars().count() as u64, (own.chars().count() + source.chars().count()) as u64);
        assert!(
            o.passages[0].start <= start + 1 && o.passages[0].end + 1 >= end,
            "{:?}",
            o.passages[0]
        );

        // The quotation alone, among the writer's words: set apart, with its source.
        let alone = format!("{own}正如法律所说：“{quoted}。”{own}");
        let o = index.check(None, &alone, &[]).expect("checked");
        assert!(o.passages.is_empty(), "{:?}", o.passages);
        assert_eq!(o.excluded.len(), 1, "{:?}", o.excluded);
        assert_eq!(o.excluded[0].exclusion, Some(Exclusion::Quote));

        // The copy reaches the quotation on one side only: still a quotation.
        let one_side = format!("{own}{before}\n“{quoted}。”\n{own}");
        let o = index.check(None, &one_side, &[]).expect("checked");
        assert_eq!(o.excluded.len(), 1, "{:?}", o.excluded);
        assert_eq!(o.excluded[0].exclusion, Some(Exclusion::Quote));
        assert_eq!(o.passages.len(), 1, "{:?}", o.passages);
    }

    /// Regression (sweep 3): a long query over a small vocabulary held positions times
    /// holders (an 8 MB text over 50 words took 1.4 GB per check). The hits are bounded by
    /// [`MAX_HITS`], each position keeping at least [`MIN_HOLDERS`], the earliest.
    #[test]
    fn hits_of_a_query_of_common_k_grams_are_bounded() {
        let words = |n: usize, mut seed: u64| -> String {
            (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ["alpha", "beta", "gamma"][(seed >> 33) as usize % 3]
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut index = PassageIndex::new(OverlapSpec::default()).expect("index");
        let docs = (0..300).map(|i| (format!("d{i}"), words(600, i))).collect();
        index.add_documents(docs, OnExistingId::Refuse).expect("added");
        index.merge_postings();
        let mut qunits = Vec::new();
        units(&words(200_000, 7), neardup_text::ZhScript::Keep, &mut qunits);
        let mut qgrams = Vec::new();
        kgram_hashes(&qunits, 3, &mut qgrams);
        // The 27 k-grams are held by most documents, counted up to max_postings (256); their
        // first HIT_HOLDERS holders at every position would pass the bound.
        let held = Held::new(&index, 256, &qgrams, None, None, &[]);
        let (hits, df) = hits(&held);
        let all: usize = df.iter().map(|&d| (d as usize).min(HIT_HOLDERS)).sum();
        assert!(all > MAX_HITS, "the query is common enough to reach the bound: {all}");
        assert!(hits.len() <= MAX_HITS, "{} hits kept", hits.len());
        let per_position = (MAX_HITS / qgrams.len()).clamp(MIN_HOLDERS, HIT_HOLDERS);
        let kept: usize = df.iter().map(|&d| (d as usize).min(per_position)).sum();
        assert_eq!(hits.len(), kept);
    }

    /// A passage that stands in more documents than make hits (boilerplate, a licence) is
    /// still a copy: its holders are counted from every holder the index lists, so its k-grams
    /// are not taken for what the field shares by chance. Its earliest holder is among the
    /// candidates.
    #[test]
    fn a_passage_many_documents_hold_is_found_in_its_earliest() {
        let boilerplate = "Permission is hereby granted free of charge to any person obtaining \
            a copy of this software and associated documentation files to deal in the software \
            without restriction including without limitation the rights to use copy modify merge \
            publish distribute sublicense and or sell copies of the software";
        let own = |i: usize| (0..40).map(|w| format!("d{i}w{w}")).collect::<Vec<_>>().join(" ");
        let holders = 3 * HIT_HOLDERS;
        let mut index = PassageIndex::new(OverlapSpec::default()).expect("index");
        let docs = (0..holders)
            .map(|i| (format!("d{i}"), format!("{} {boilerplate} {}", own(i), own(i + 1000))))
            .collect();
        index.add_documents(docs, OnExistingId::Refuse).expect("added");
        index.merge_postings();
        let query = format!("{} {boilerplate} {}", own(5000), own(5001));
        let found = index.check(None, &query, &[]).expect("checked");
        assert_eq!(found.passages.len(), 1, "{found:?}");
        let p = &found.passages[0];
        assert!(p.end - p.start >= boilerplate.len() as u64 - 2, "{p:?}");
        assert!(p.evidence > 10.0, "{p:?}");
        // Within the corpus, a later holder names the earliest.
        let later = index.check(Some("d50"), index.text(50), &[]).expect("checked");
        let sources: Vec<u32> = later.passages.iter().map(|p| p.source).collect();
        assert!(
            !later.passages.is_empty()
                && later.passages.iter().any(|p| p.source == 0 || p.also.contains(&0)),
            "{sources:?}"
        );
    }

    #[test]
    fn union_counts_each_character_once() {
        assert_eq!(union_len(vec![(0, 10), (5, 15), (20, 25)]), 20);
        assert_eq!(split(0, 10, &[(3, 5, Exclusion::Quote)]).len(), 3);
    }

    /// Han characters `from..from + n`, each once: texts that share only what a test puts in.
    fn han(from: u32, n: u32) -> String {
        (from..from + n).map(|c| char::from_u32(0x4E00 + c).expect("a Han character")).collect()
    }

    /// The passages (query ranges) a check of `query` against `source` reports.
    fn passages_of(spec: OverlapSpec, source: &str, query: &str) -> Vec<(u64, u64)> {
        let mut index = PassageIndex::new(spec).expect("index");
        index
            .add_documents(vec![("s".to_string(), source.to_string())], OnExistingId::Refuse)
            .expect("added");
        let got = index.check(None, query, &[]).expect("checked");
        got.passages.iter().map(|p| (p.start, p.end)).collect()
    }

    /// A short passage needs a verbatim anchor of `min_anchor_chars` (13): twenty characters
    /// matched with an edit every seven (a dateline with other names, a stock phrase with
    /// words changed) are not reported, fourteen in a row are, and so is a longer passage
    /// edited as often; 0 turns the rule off.
    #[test]
    fn a_short_passage_is_reported_only_with_a_verbatim_anchor() {
        let source = format!("{}{}{}", han(0, 40), han(100, 40), han(200, 40));
        // Source characters 100..120 with two edits: runs of 6, 6 and 6.
        let loose =
            format!("{}{}{}{}{}", han(100, 6), han(500, 1), han(107, 6), han(501, 1), han(114, 6));
        let query = |middle: &str| format!("{}{}{}", han(600, 30), middle, han(700, 30));
        let spec = OverlapSpec::default();
        assert_eq!(spec.min_anchor_chars, 13);
        assert_eq!(passages_of(spec.clone(), &source, &query(&loose)), vec![]);
        let off = OverlapSpec { min_anchor_chars: 0, ..spec.clone() };
        assert_eq!(passages_of(off, &source, &query(&loose)), vec![(30, 50)]);
        let verbatim = han(100, 14);
        assert_eq!(passages_of(spec.clone(), &source, &query(&verbatim)), vec![(30, 44)]);
        // Thirty characters with an edit every seven: long enough to stand without an anchor.
        let long: String =
            (0..5).map(|i| format!("{}{}", han(100 + 7 * i, 6), han(510 + i, 1))).collect();
        let long = format!("{long}{}", han(135, 5));
        assert_eq!(passages_of(spec, &source, &query(&long)), vec![(30, 70)]);
    }
}
