//! The passage index: the collection's texts and their winnowed k-gram hashes, and the check of
//! a query against them.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::align::{align, evidence, settle, AlignParams, Attribution, QueryGrams, Region};
use super::exclude::{quotations, reference_lists, Excluded};
use super::units::{kgram_hashes, units, Unit};
use super::{Exclusion, Overlap, OverlapError, OverlapSpec, Passage, SourceShare};

/// How many documents hold a passage: those holding at least half of the k-grams of its query
/// range that the index knows (at least one, its source). (More than half drops more loose
/// matches and more reworded copies alike: measured on the sample sets, BENCHMARKS.md.) `by_position`: the hits as
/// `position << 32 | document`, sorted.
fn holders(r: &Region, by_position: &[u64], k: u32) -> u32 {
    let (first, end) = (u64::from(r.q0), u64::from((r.q1 + 1).saturating_sub(k)));
    let lo = by_position.partition_point(|&x| x >> 32 < first);
    let hi = by_position.partition_point(|&x| x >> 32 < end);
    let mut per_doc: FxHashMap<u32, u32> = FxHashMap::default();
    let (mut positions, mut last) = (0u32, u64::MAX);
    for &x in &by_position[lo..hi] {
        if x >> 32 != last {
            positions += 1;
            last = x >> 32;
        }
        *per_doc.entry(x as u32).or_default() += 1;
    }
    (per_doc.values().filter(|&&n| n * 2 >= positions).count() as u32).max(1)
}

/// One source's character ranges: those its counted passages cover, and its quoted ones.
type CountedAndQuoted = (Vec<(u64, u64)>, Vec<(u64, u64)>);

/// A document of the collection. Its id and text are shared, so that a clone of the index (a
/// snapshot a long check reads while writers go on) copies pointers, not texts.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub id: Arc<str>,
    pub text: Text,
    /// False once a later document with its id replaced it.
    pub live: bool,
}

/// Where a document's text is: its own string (added), or a range of the index's text arena
/// (loaded from a saved index: one allocation for every text, read straight from the file).
#[derive(Debug, Clone)]
pub(crate) enum Text {
    Owned(Arc<str>),
    Arena { start: usize, end: usize },
}

/// A collection indexed for the passage check: add documents, then check queries against them.
/// Documents are numbered from 0 in the order added; [`PassageIndex::id`] gives a number's id.
///
/// Checks take `&self` and may run on many threads at once. A clone is cheap (the texts, ids
/// and built postings are shared; it copies a pointer per document and the recent postings):
/// a live collection gives each long check a clone of its own and lets writers go on.
#[derive(Debug, Clone)]
pub struct PassageIndex {
    pub(crate) spec: OverlapSpec,
    pub(crate) docs: Vec<Doc>,
    pub(crate) by_id: FxHashMap<Arc<str>, u32>,
    /// The kept k-gram hashes (their high 32 bits), sorted, each once.
    pub(crate) keys: Arc<[u32]>,
    /// `postings[offsets[i]..offsets[i + 1]]` are the documents holding `keys[i]`, ascending.
    pub(crate) offsets: Arc<[u32]>,
    pub(crate) postings: Arc<[u32]>,
    /// The texts of a loaded index, one after another (shared by clones).
    pub(crate) arena: Arc<String>,
    /// The keys of documents added since the postings were last rebuilt: key -> documents,
    /// ascending. Adding documents one by one (a live collection) costs their own keys, not a
    /// rebuild of every posting; the two are merged when this grows past an eighth of them.
    pub(crate) recent: FxHashMap<u32, Vec<u32>>,
    /// Entries in `recent`.
    pub(crate) recent_len: usize,
    /// Set by the caller to stop a long call ([`PassageIndex::set_stop`]).
    pub(crate) stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// What [`PassageIndex::add_documents`] does with an id the index already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnExistingId {
    /// Refuse the batch ([`OverlapError::DuplicateId`]).
    #[default]
    Refuse,
    /// The new document replaces the old one (a revised thesis replaces its earlier version).
    Replace,
}

/// How [`PassageIndex::check_batch`] checks a batch of queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Batch {
    /// Against the index (the thesis check); the index is not changed.
    Against,
    /// Against the index, then the queries join it (a query replaces a document of its id):
    /// a collection that grows with every batch checked.
    AgainstThenAdd,
    /// The queries join the index, and each is checked against all the others (passages
    /// shared within a corpus; a stretch several documents hold is given to the earliest).
    Within,
}

impl Batch {
    /// The mode of a batch: without a collection apart from the queries, `Within`; else against
    /// it, the queries joining it afterwards only when asked (`add`: a revision checked later is
    /// not its own first draft's copy).
    pub fn of(within: bool, add: bool) -> Batch {
        match (within, add) {
            (true, _) => Batch::Within,
            (false, true) => Batch::AgainstThenAdd,
            (false, false) => Batch::Against,
        }
    }
}

/// How the documents given beside a saved index joined it ([`PassageIndex::join`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Joined {
    /// Documents of new ids, added.
    pub added: usize,
    /// Documents of an id the index held with another text, which replaced it (a revised paper).
    pub replaced: usize,
    /// Documents the index held already with the same text, left as they were.
    pub unchanged: usize,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Buffers reused from one check to the next on a thread.
#[derive(Default)]
struct Scratch {
    units: Vec<Unit>,
    grams: Vec<u64>,
    hashes: Vec<u64>,
}

/// K-grams per block of the candidate search.
const BLOCK: usize = 32;
/// Candidate sources taken per stretch of the query.
const PER_STRETCH: usize = 8;
/// Candidate sources aligned per round.
const ROUND: usize = 16;

/// The most hits (a query position and a document holding its k-gram) a check keeps, 32 MiB of
/// them: a long query of common k-grams (a text over a small vocabulary) would otherwise hold
/// positions times holders. Past it each position keeps fewer holders, the earliest.
const MAX_HITS: usize = 1 << 22;
/// The holders of each k-gram kept, at least (unless `max_postings` is lower).
const MIN_HOLDERS: usize = 8;

/// The 32-bit key of a k-gram hash in the index. Two k-grams that share a key make a wrong
/// candidate at worst, which alignment (on full 64-bit hashes) then finds nothing in.
fn key(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// The winnowed keys of a text's k-gram hashes (Schleimer et al. 2003, robust winnowing: the
/// rightmost minimum of each window, recorded when it changes), sorted and each once.
fn winnow(grams: &[u64], window: usize, out: &mut Vec<u32>) {
    out.clear();
    if grams.is_empty() {
        return;
    }
    let w = window.min(grams.len());
    let mut last = usize::MAX;
    for start in 0..=grams.len() - w {
        let mut best = start;
        for i in start..start + w {
            if grams[i] <= grams[best] {
                best = i;
            }
        }
        if best != last {
            out.push(key(grams[best]));
            last = best;
        }
    }
    out.sort_unstable();
    out.dedup();
}

impl PassageIndex {
    /// An empty index with these settings.
    pub fn new(spec: OverlapSpec) -> Result<PassageIndex, OverlapError> {
        spec.validate()?;
        Ok(PassageIndex {
            spec,
            docs: Vec::new(),
            by_id: FxHashMap::default(),
            keys: Arc::from([]),
            offsets: Arc::from([0]),
            postings: Arc::from([]),
            arena: Default::default(),
            recent: FxHashMap::default(),
            recent_len: 0,
            stop: None,
        })
    }

    /// A flag that stops the long calls ([`PassageIndex::add_documents`],
    /// [`PassageIndex::check_batch`]) between documents: once it is set they return
    /// [`OverlapError::Stopped`] (a Ctrl-C, a cancelled request). `add_documents` then leaves
    /// the index as it was; `check_batch` in [`Batch::Within`] may have added the batch.
    pub fn set_stop(&mut self, stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) {
        self.stop = stop;
    }

    /// True once the caller's stop flag is set.
    fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The settings.
    pub fn spec(&self) -> &OverlapSpec {
        &self.spec
    }

    /// Changes the settings of later checks. The fingerprint settings (`seed`, `window`,
    /// `max_postings`) are the index's own: another value is refused
    /// ([`OverlapError::InvalidSpec`] naming it).
    pub fn set_spec(&mut self, spec: OverlapSpec) -> Result<(), OverlapError> {
        spec.validate()?;
        for ((field, have), (_, want)) in
            self.spec.index_fields().into_iter().zip(spec.index_fields())
        {
            if have != want {
                return Err(OverlapError::InvalidSpec {
                    field,
                    message: format!(
                        "the index was built with {field} {have}; a check cannot change it \
                         (asked {want})"
                    ),
                });
            }
        }
        self.spec = spec;
        Ok(())
    }

    /// Documents in the index (replaced ones not counted).
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// True when the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The id of document `n`.
    ///
    /// # Panics
    /// If `n` is not a number this index gave.
    pub fn id(&self, n: u32) -> &str {
        &self.docs[n as usize].id
    }

    /// The text of document `n`.
    ///
    /// # Panics
    /// If `n` is not a number this index gave.
    pub fn text(&self, n: u32) -> &str {
        match &self.docs[n as usize].text {
            Text::Owned(s) => s,
            Text::Arena { start, end } => &self.arena[*start..*end],
        }
    }

    /// The number of the document with this id.
    pub fn find(&self, id: &str) -> Option<u32> {
        self.by_id.get(id).copied()
    }

    /// The numbers of the documents the index holds, in the order added.
    pub fn documents(&self) -> impl Iterator<Item = u32> + '_ {
        self.docs.iter().enumerate().filter(|(_, d)| d.live).map(|(n, _)| n as u32)
    }

    /// Removes the document with this id; returns whether the index held it. It is never a
    /// source again; its postings are dropped at the next rebuild.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(n) = self.by_id.remove(id) else { return false };
        let doc = &mut self.docs[n as usize];
        doc.live = false;
        doc.text = Text::Owned(Arc::from(""));
        true
    }

    /// Documents given for the collection join it: a new id is added, a document given again
    /// with another text replaces the one held (a revised paper), one given with the text held is
    /// left as it is. Two documents of one id among `docs` are an error.
    pub fn join(&mut self, docs: Vec<(String, String)>) -> Result<Joined, OverlapError> {
        let (mut fresh, mut changed, mut unchanged) = (Vec::new(), Vec::new(), 0usize);
        for (id, text) in docs {
            match self.find(&id) {
                Some(n) if self.text(n) == text => unchanged += 1,
                Some(_) => changed.push((id, text)),
                None => fresh.push((id, text)),
            }
        }
        let joined = Joined { added: fresh.len(), replaced: changed.len(), unchanged };
        self.add_documents(fresh, OnExistingId::Refuse)?;
        self.add_documents(changed, OnExistingId::Replace)?;
        Ok(joined)
    }

    /// The numbers of the documents of `ids` (sources to leave out of a check); an id the
    /// collection does not hold is [`OverlapError::UnknownSource`].
    pub fn numbers_of(&self, ids: &[String]) -> Result<Vec<u32>, OverlapError> {
        ids.iter()
            .map(|id| self.find(id).ok_or_else(|| OverlapError::UnknownSource { id: id.clone() }))
            .collect()
    }

    /// Adds documents `(id, text)` (fingerprinted in parallel) and returns their numbers. An id
    /// given twice in the batch is refused; one the index holds already is refused or replaces
    /// the old document, as `existing` says. Nothing is added when an error is returned.
    pub fn add_documents(
        &mut self,
        docs: Vec<(String, String)>,
        existing: OnExistingId,
    ) -> Result<Vec<u32>, OverlapError> {
        let mut batch: FxHashMap<&str, ()> = FxHashMap::default();
        for (id, text) in &docs {
            if text.len() >= u32::MAX as usize {
                return Err(OverlapError::TooLong { id: id.clone(), bytes: text.len() });
            }
            if batch.insert(id, ()).is_some()
                || (existing == OnExistingId::Refuse && self.by_id.contains_key(id.as_str()))
            {
                return Err(OverlapError::DuplicateId { id: id.clone() });
            }
        }
        let first = self.docs.len();
        if first + docs.len() >= u32::MAX as usize {
            return Err(OverlapError::InvalidSpec {
                field: "documents",
                message: "a passage index holds fewer than 4,294,967,295 documents".into(),
            });
        }
        let (seed, window) = (self.spec.seed as usize, self.spec.window as usize);
        let spec_script = self.spec.zh_script;
        let keys: Vec<Vec<u32>> = docs
            .par_iter()
            .map(|(_, text)| {
                if self.stopped() {
                    return None;
                }
                Some(SCRATCH.with_borrow_mut(|s| {
                    units(text, spec_script, &mut s.units);
                    kgram_hashes(&s.units, seed, &mut s.grams);
                    let mut out = Vec::new();
                    winnow(&s.grams, window, &mut out);
                    out
                }))
            })
            .collect::<Option<_>>()
            .ok_or(OverlapError::Stopped)?;
        let mut numbers = Vec::with_capacity(docs.len());
        for (i, (id, text)) in docs.into_iter().enumerate() {
            let n = (first + i) as u32;
            let id: Arc<str> = Arc::from(id);
            if let Some(old) = self.by_id.insert(id.clone(), n) {
                self.docs[old as usize].live = false;
                // The old text is not needed again: a replaced document is never a source.
                self.docs[old as usize].text = Text::Owned(Arc::from(""));
            }
            self.docs.push(Doc { id, text: Text::Owned(Arc::from(text)), live: true });
            numbers.push(n);
        }
        let added: usize = keys.iter().map(Vec::len).sum();
        if self.recent_len + added > (1 << 15).max(self.postings.len() / 8) {
            // A large batch (a collection read at once) goes straight into a rebuild; each
            // document's keys are freed as they are taken.
            let mut pairs = self.live_pairs(added);
            for (i, doc_keys) in keys.into_iter().enumerate() {
                let d = (first + i) as u64;
                pairs.extend(doc_keys.into_iter().map(|k| (u64::from(k) << 32) | d));
            }
            pairs.par_sort_unstable();
            self.set_postings(csr(&pairs, self.spec.max_postings as usize));
            self.recent.clear();
            self.recent_len = 0;
        } else {
            for (i, doc_keys) in keys.into_iter().enumerate() {
                let d = (first + i) as u32;
                self.recent_len += doc_keys.len();
                for k in doc_keys {
                    self.recent.entry(k).or_default().push(d);
                }
            }
        }
        Ok(numbers)
    }

    /// Every live posting (the rebuilt ones and the recent ones) as `(key << 32 | doc)` pairs,
    /// unsorted, with room for `room` more.
    pub(crate) fn live_pairs(&self, room: usize) -> Vec<u64> {
        let mut pairs: Vec<u64> = Vec::with_capacity(self.postings.len() + self.recent_len + room);
        for (i, &k) in self.keys.iter().enumerate() {
            let range = self.offsets[i] as usize..self.offsets[i + 1] as usize;
            pairs.extend(
                self.postings[range]
                    .iter()
                    .filter(|&&d| self.docs[d as usize].live)
                    .map(|&d| (u64::from(k) << 32) | u64::from(d)),
            );
        }
        for (&k, docs) in &self.recent {
            pairs.extend(
                docs.iter()
                    .filter(|&&d| self.docs[d as usize].live)
                    .map(|&d| (u64::from(k) << 32) | u64::from(d)),
            );
        }
        pairs
    }

    /// Takes built postings (from [`csr`]).
    fn set_postings(&mut self, (keys, offsets, postings): (Vec<u32>, Vec<u32>, Vec<u32>)) {
        (self.keys, self.offsets, self.postings) = (keys.into(), offsets.into(), postings.into());
    }

    /// Rebuilds the postings with the recent ones, dropping replaced and removed documents and
    /// keeping the first `max_postings` holders of each key.
    #[cfg(test)]
    pub(crate) fn merge_postings(&mut self) {
        let mut pairs = self.live_pairs(0);
        pairs.par_sort_unstable();
        self.set_postings(csr(&pairs, self.spec.max_postings as usize));
        self.recent.clear();
        self.recent_len = 0;
    }

    /// Every hit of the query's k-grams in the index, as `(doc << 32) | position`, sorted. A
    /// key's holders are the first `max_postings` live documents holding it, of those the
    /// `usable` ones; when the query's k-grams would make more than [`MAX_HITS`] hits, each
    /// keeps fewer holders (as many as the budget allows per position, at least
    /// [`MIN_HOLDERS`]), so a check's memory follows its query's length.
    fn hits(&self, qgrams: &[u64], usable: impl Fn(u32) -> bool) -> (Vec<u64>, Vec<u32>) {
        let cap = self.spec.max_postings as usize;
        let recent = |h: u64| self.recent.get(&key(h)).map_or(&[][..], Vec::as_slice);
        // The range of each k-gram's key in the built postings (8 bytes a position).
        let ranges: Vec<(u32, u32)> = qgrams
            .iter()
            .map(|&h| match self.keys.binary_search(&key(h)) {
                Ok(j) => (self.offsets[j], self.offsets[j + 1]),
                Err(_) => (0, 0),
            })
            .collect();
        let total: usize = ranges
            .iter()
            .zip(qgrams)
            .map(|(&(a, b), &h)| ((b - a) as usize + recent(h).len()).min(cap))
            .sum();
        let per_position = if total <= MAX_HITS {
            cap
        } else {
            (MAX_HITS / qgrams.len().max(1)).max(MIN_HOLDERS).min(cap)
        };
        let mut hits: Vec<u64> = Vec::with_capacity(total.min(MAX_HITS.max(per_position)));
        // How many usable documents hold each k-gram (up to `max_postings`): how common it is
        // in the collection, the weight of a match on it (see `align::evidence`).
        let mut df: Vec<u32> = Vec::with_capacity(qgrams.len());
        for (i, (&(a, b), &h)) in ranges.iter().zip(qgrams).enumerate() {
            let holders = || {
                self.postings[a as usize..b as usize]
                    .iter()
                    .chain(recent(h))
                    .filter(|&&d| self.docs[d as usize].live)
                    .take(cap)
                    .filter(|&&d| usable(d))
            };
            hits.extend(holders().take(per_position).map(|&d| (u64::from(d) << 32) | i as u64));
            df.push(holders().count() as u32);
        }
        hits.sort_unstable();
        (hits, df)
    }

    /// The next candidate sources to align, best first: for every stretch of the query (two
    /// blocks of [`BLOCK`] k-grams, sliding by one block), the [`PER_STRETCH`] documents with
    /// most hits there, at least two; at most `limit`, by their best stretch. Hits at positions
    /// a region already found explains (`explained(doc, position)`) do not count, and documents
    /// already aligned are skipped. Choosing per stretch, and among what is left unexplained,
    /// finds the source of each part of a text that copies from many, even where many
    /// documents share long common text (a license, boilerplate) with the query.
    fn next_candidates(
        &self,
        hits: &[u64],
        explained: impl Fn(u32, u32) -> bool,
        aligned: &rustc_hash::FxHashSet<u32>,
        limit: usize,
    ) -> Vec<u32> {
        let mut counts: Vec<(u32, u32, u32)> = Vec::new(); // (doc, block, hits)
        for &h in hits {
            let (d, pos) = ((h >> 32) as u32, h as u32);
            if aligned.contains(&d) || explained(d, pos) {
                continue;
            }
            let b = pos / BLOCK as u32;
            match counts.last_mut() {
                Some(last) if last.0 == d && last.1 == b => last.2 += 1,
                _ => counts.push((d, b, 1)),
            }
        }
        let mut stretches: Vec<(u32, std::cmp::Reverse<u32>, u32)> = Vec::new(); // (block, score, doc)
        for (i, &(d, b, n)) in counts.iter().enumerate() {
            let next = counts.get(i + 1).filter(|c| c.0 == d && c.1 == b + 1).map_or(0, |c| c.2);
            if n + next >= 2 {
                stretches.push((b, std::cmp::Reverse(n + next), d));
            }
            // The stretch that starts one block earlier, when that block has no hits.
            let prev_counted = i > 0 && counts[i - 1].0 == d && counts[i - 1].1 + 1 == b;
            if b > 0 && !prev_counted && n >= 2 {
                stretches.push((b - 1, std::cmp::Reverse(n), d));
            }
        }
        stretches.sort_unstable();
        let mut best: FxHashMap<u32, u32> = FxHashMap::default();
        let mut i = 0;
        while i < stretches.len() {
            let b = stretches[i].0;
            let mut taken = 0;
            while i < stretches.len() && stretches[i].0 == b {
                if taken < PER_STRETCH {
                    let (_, std::cmp::Reverse(score), d) = stretches[i];
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

    fn align_params(&self) -> AlignParams {
        AlignParams {
            seed: self.spec.seed,
            max_gap: self.spec.max_gap,
            min_units: self.spec.min_units,
            min_similarity: self.spec.min_similarity,
            min_evidence: self.spec.min_evidence as f32,
        }
    }

    /// Checks a batch of queries `(id, text)`, on every core; the answers are in query order.
    /// An id given twice in the batch is refused ([`OverlapError::DuplicateId`]), as is one
    /// the index holds in [`Batch::Within`]. The documents numbered in `exclude` are never
    /// sources.
    pub fn check_batch(
        &mut self,
        queries: Vec<(String, String)>,
        mode: Batch,
        exclude: &[u32],
    ) -> Result<Vec<Overlap>, OverlapError> {
        self.check_batch_counted(queries, mode, exclude, &AtomicU64::new(0))
    }

    /// [`PassageIndex::check_batch`], adding one to `checked` as each query's check ends, for a
    /// caller that shows progress from another thread.
    pub fn check_batch_counted(
        &mut self,
        queries: Vec<(String, String)>,
        mode: Batch,
        exclude: &[u32],
        checked: &AtomicU64,
    ) -> Result<Vec<Overlap>, OverlapError> {
        let counted = |o: Result<Overlap, OverlapError>| {
            checked.fetch_add(1, Ordering::Relaxed);
            o
        };
        let mut seen: FxHashMap<&str, ()> = FxHashMap::default();
        if let Some((id, _)) = queries.iter().find(|(id, _)| seen.insert(id, ()).is_some()) {
            return Err(OverlapError::DuplicateId { id: id.clone() });
        }
        match mode {
            Batch::Within => {
                let numbers = self.add_documents(queries, OnExistingId::Refuse)?;
                numbers
                    .par_iter()
                    .map(|&n| {
                        if self.stopped() {
                            return Err(OverlapError::Stopped);
                        }
                        counted(self.check_member(n, exclude))
                    })
                    .collect()
            }
            Batch::Against | Batch::AgainstThenAdd => {
                let found = queries
                    .par_iter()
                    .map(|(id, text)| {
                        if self.stopped() {
                            return Err(OverlapError::Stopped);
                        }
                        counted(self.check(Some(id), text, exclude))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if mode == Batch::AgainstThenAdd {
                    self.add_documents(queries, OnExistingId::Replace)?;
                }
                Ok(found)
            }
        }
    }

    /// Checks `text` against the collection. A document with the query's own id (`own_id`: an
    /// earlier version of the same text, or the query itself when it is in the collection) and
    /// the documents numbered in `exclude` are not sources. With a stop flag set
    /// ([`PassageIndex::set_stop`]) it returns [`OverlapError::Stopped`] between candidate
    /// sources.
    pub fn check(
        &self,
        own_id: Option<&str>,
        text: &str,
        exclude: &[u32],
    ) -> Result<Overlap, OverlapError> {
        self.check_until(own_id, text, exclude, None)
    }

    /// [`PassageIndex::check`] that also stops when `stop` is set: a check of a shared index
    /// (a service's collection, a Python `Index`) that one caller gives up.
    pub fn check_until(
        &self,
        own_id: Option<&str>,
        text: &str,
        exclude: &[u32],
        stop: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<Overlap, OverlapError> {
        if text.len() >= u32::MAX as usize {
            return Err(OverlapError::TooLong {
                id: own_id.unwrap_or("the query").to_string(),
                bytes: text.len(),
            });
        }
        let own = own_id.and_then(|id| self.find(id));
        let by = Attribution::BestMatch;
        SCRATCH.with_borrow_mut(|s| self.check_with(text, own, exclude, by, stop, s))
    }

    /// Checks document `n` of the index against the others (the within-corpus mode). A stretch
    /// several documents hold is given to the earliest of them (the first occurrence), the
    /// others named as holding it too. Stops with [`OverlapError::Stopped`] as
    /// [`PassageIndex::check`] does.
    pub fn check_member(&self, n: u32, exclude: &[u32]) -> Result<Overlap, OverlapError> {
        SCRATCH.with_borrow_mut(|s| {
            self.check_with(self.text(n), Some(n), exclude, Attribution::Earliest, None, s)
        })
    }

    fn check_with(
        &self,
        text: &str,
        own: Option<u32>,
        exclude: &[u32],
        by: Attribution,
        stop: Option<&std::sync::atomic::AtomicBool>,
        s: &mut Scratch,
    ) -> Result<Overlap, OverlapError> {
        let p = self.align_params();
        let seed = self.spec.seed as usize;
        let mut overlap = Overlap { chars: text.chars().count() as u64, ..Overlap::default() };
        let mut qunits = Vec::new();
        units(text, self.spec.zh_script, &mut qunits);
        let mut qgrams = Vec::new();
        kgram_hashes(&qunits, seed, &mut qgrams);
        if qgrams.is_empty() || (self.keys.is_empty() && self.recent.is_empty()) {
            return Ok(overlap);
        }

        let (hits, df) = self.hits(&qgrams, |d| Some(d) != own && !exclude.contains(&d));

        // Alignment in rounds: the best candidates for what is not yet explained, until
        // nothing is left with two hits or `max_sources` were aligned. A k-gram position is
        // explained by a region over it; within a corpus, only for later documents, so that
        // the earliest holder of a stretch is still aligned.
        let query = QueryGrams::new(&qgrams, |_| true);
        // The hits by query position: which documents hold each k-gram of a passage.
        let mut by_position: Vec<u64> = hits.iter().map(|&h| h.rotate_left(32)).collect();
        by_position.sort_unstable();
        let min_density = self.spec.min_density as f32;
        let qhashes: Vec<u64> = qunits.iter().map(|u| u.hash).collect();
        let mut regions: Vec<Region> = Vec::new();
        let mut covered = vec![u32::MAX; qgrams.len()]; // lowest source explaining each k-gram
        let mut aligned = rustc_hash::FxHashSet::default();
        let max_sources = self.spec.max_sources as usize;
        while aligned.len() < max_sources {
            let explained = |d: u32, pos: u32| {
                let c = covered[pos as usize];
                match by {
                    Attribution::BestMatch => c != u32::MAX,
                    Attribution::Earliest => c < d,
                }
            };
            let batch = self.next_candidates(
                &hits,
                explained,
                &aligned,
                ROUND.min(max_sources - aligned.len()),
            );
            if batch.is_empty() {
                break;
            }
            for d in batch {
                // A long check stops between sources when the caller asks (a Ctrl-C, a
                // request given up).
                if self.stopped()
                    || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
                {
                    return Err(OverlapError::Stopped);
                }
                aligned.insert(d);
                units(self.text(d), self.spec.zh_script, &mut s.units);
                kgram_hashes(&s.units, seed, &mut s.grams);
                s.hashes.clear();
                s.hashes.extend(s.units.iter().map(|u| u.hash));
                let mut found = align(&query, d, &s.grams, (&qhashes, &s.hashes), &p);
                // Significance: a passage needs evidence for its length. Its k-grams are
                // weighed by how many documents hold them besides those holding the passage
                // itself, so that a text standing in several documents is still a copy, and a
                // long loose match made of what the field's writing shares is not. A region
                // dropped here explains nothing: another source may still hold the stretch.
                for r in &mut found {
                    r.evidence = evidence(r, &df, p.seed, holders(r, &by_position, p.seed));
                }
                found.retain(|r| {
                    r.evidence >= p.min_evidence && r.evidence >= min_density * r.len() as f32
                });
                for r in &found {
                    let end = (r.q1 as usize).min(covered.len());
                    for c in &mut covered[r.q0 as usize..end] {
                        *c = (*c).min(d);
                    }
                }
                regions.extend(found);
            }
        }
        let settled = settle(regions, &p, by);

        // Quotations and references are set apart.
        let excluded = self.exclusions(text, &qunits);
        let mut passages = Vec::new();
        let mut set_apart = Vec::new();
        for st in settled {
            for (q0, q1, why) in split(st.region.q0, st.region.q1, &excluded) {
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
        overlap.passages = self.to_passages(text, &qunits, passages, s);
        overlap.excluded = self.to_passages(text, &qunits, set_apart, s);

        // The copied share, each character once.
        let counted: Vec<(u64, u64)> = overlap.passages.iter().map(|p| (p.start, p.end)).collect();
        overlap.copied_chars = union_len(counted.clone());
        let all: Vec<(u64, u64)> = counted
            .iter()
            .copied()
            .chain(overlap.excluded.iter().map(|p| (p.start, p.end)))
            .collect();
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
        overlap
            .sources
            .sort_unstable_by(|a, b| b.chars.cmp(&a.chars).then(a.source.cmp(&b.source)));
        Ok(overlap)
    }

    /// The query's quotations and reference list as unit ranges, sorted and disjoint; a
    /// quotation shorter than a passage is a term or a title, not a quotation that could hide a
    /// copy, and is ignored.
    fn exclusions(&self, text: &str, qunits: &[Unit]) -> Vec<(u32, u32, Exclusion)> {
        let mut found: Vec<Excluded> = Vec::new();
        if self.spec.exclude_quotes {
            found.extend(quotations(text, self.spec.max_quote_chars as usize));
        }
        if self.spec.exclude_references {
            found.extend(reference_lists(text));
        }
        let mut out: Vec<(u32, u32, Exclusion)> = found
            .into_iter()
            .map(|e| {
                let u0 = qunits.partition_point(|u| u.start < e.start) as u32;
                let u1 = qunits.partition_point(|u| u.end <= e.end) as u32;
                (u0, u1.max(u0), e.why)
            })
            .filter(|&(u0, u1, why)| why == Exclusion::References || u1 - u0 >= self.spec.min_units)
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
        &self,
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
                units(self.text(r.source), self.spec.zh_script, &mut s.units);
                loaded = r.source;
            }
            let (qa, qb) = (&qunits[r.q0 as usize], &qunits[r.q1 as usize - 1]);
            let (sa, sb) = (&s.units[r.s0 as usize], &s.units[r.s1 as usize - 1]);
            let source_text = self.text(r.source);
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
}

/// Keys, offsets and postings from sorted `(key << 32 | doc)` pairs, keeping the first `cap`
/// documents of each key.
pub(crate) fn csr(pairs: &[u64], cap: usize) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let (mut keys, mut offsets, mut postings) = (Vec::new(), vec![0u32], Vec::new());
    let mut i = 0;
    while i < pairs.len() {
        let k = (pairs[i] >> 32) as u32;
        let mut j = i;
        while j < pairs.len() && (pairs[j] >> 32) as u32 == k {
            j += 1;
        }
        keys.push(k);
        postings.extend(pairs[i..j].iter().take(cap).map(|&p| p as u32));
        offsets.push(postings.len() as u32);
        i = j;
    }
    keys.shrink_to_fit();
    offsets.shrink_to_fit();
    postings.shrink_to_fit();
    (keys, offsets, postings)
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

    #[test]
    fn winnowing_keeps_the_rightmost_minimum_of_each_window() {
        let grams: Vec<u64> =
            [77u64, 72, 42, 17, 98, 50, 17, 98, 8, 88, 67, 39, 77, 72, 42, 17, 98]
                .iter()
                .map(|&x| x << 32)
                .collect();
        // Schleimer et al.'s example, window 4: 17 17 8 39 17 (positions 3, 6, 8, 11, 15).
        let mut out = Vec::new();
        winnow(&grams, 4, &mut out);
        assert_eq!(out, [8, 17, 39]);
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
        units(&words(40_000, 7), neardup_text::ZhScript::Keep, &mut qunits);
        let mut qgrams = Vec::new();
        kgram_hashes(&qunits, 3, &mut qgrams);
        // The 27 k-grams are held by most documents, counted up to max_postings (256):
        // millions of hits in all, unbounded.
        let (hits, df) = index.hits(&qgrams, |_| true);
        let all: usize = df.iter().map(|&d| d as usize).sum();
        assert!(all > MAX_HITS, "the query is common enough to reach the bound: {all}");
        assert!(hits.len() <= MAX_HITS, "{} hits kept", hits.len());
        let per_position = MAX_HITS / qgrams.len();
        let kept: usize = df.iter().map(|&d| (d as usize).min(per_position)).sum();
        assert_eq!(hits.len(), kept);
    }

    #[test]
    fn union_counts_each_character_once() {
        assert_eq!(union_len(vec![(0, 10), (5, 15), (20, 25)]), 20);
        assert_eq!(split(0, 10, &[(3, 5, Exclusion::Quote)]).len(), 3);
    }

    mod brute_force {
        //! The index's choices against brute force: winnowing, its guarantee, the postings'
        //! cap, the sources' cap.
        use super::*;
        use proptest::prelude::*;

        /// Every window's rightmost minimum, by scanning every window: the fingerprints
        /// winnowing selects.
        fn all_window_minima(grams: &[u64], window: usize) -> Vec<u32> {
            if grams.is_empty() {
                return Vec::new();
            }
            let w = window.min(grams.len());
            let mut out: Vec<u32> =
                grams.windows(w).map(|g| key(*g.iter().min().expect("w >= 1"))).collect();
            out.sort_unstable();
            out.dedup();
            out
        }

        /// Hashes from a small range, so that windows tie; the key is the high half.
        fn grams(max_len: usize) -> impl Strategy<Value = Vec<u64>> {
            prop::collection::vec((0u64..12).prop_map(|x| x << 32), 0..max_len)
        }

        /// A text over a small vocabulary (words repeat, so documents share k-grams).
        fn text(words: usize) -> impl Strategy<Value = String> {
            prop::collection::vec(0usize..6, words..words + 30).prop_map(|w| {
                w.iter()
                    .map(|&i| ["alpha", "beta", "gamma", "delta", "eps", "zeta"][i])
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        }

        fn doc_keys(text: &str, spec: &OverlapSpec) -> Vec<u32> {
            let (mut u, mut g, mut out) = (Vec::new(), Vec::new(), Vec::new());
            units(text, spec.zh_script, &mut u);
            kgram_hashes(&u, spec.seed as usize, &mut g);
            winnow(&g, spec.window as usize, &mut out);
            out
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            /// Winnowing keeps exactly the keys of every window's minimum.
            #[test]
            fn winnowing_selects_every_window_minimum_and_nothing_else(
                g in grams(60),
                window in 1usize..9,
            ) {
                let mut out = Vec::new();
                winnow(&g, window, &mut out);
                prop_assert_eq!(out, all_window_minima(&g, window));
            }

            /// Schleimer et al.'s guarantee: two sequences that share a run of at least
            /// `window` k-grams share a fingerprint.
            #[test]
            fn a_shared_run_of_a_window_shares_a_fingerprint(
                a in grams(40),
                b in grams(40),
                run in prop::collection::vec((0u64..12).prop_map(|x| x << 32), 1..12),
                window in 1usize..9,
                at_a in 0usize..40,
                at_b in 0usize..40,
            ) {
                prop_assume!(run.len() >= window);
                let splice = |v: &[u64], at: usize| {
                    let at = at.min(v.len());
                    [&v[..at], &run[..], &v[at..]].concat()
                };
                let (x, y) = (splice(&a, at_a), splice(&b, at_b));
                let (mut kx, mut ky) = (Vec::new(), Vec::new());
                winnow(&x, window, &mut kx);
                winnow(&y, window, &mut ky);
                prop_assert!(kx.iter().any(|k| ky.binary_search(k).is_ok()), "{:?} {:?}", kx, ky);
            }

            /// Each key's postings are the first `max_postings` documents whose winnowed keys
            /// hold it, in document order, whether added at once, one by one, or merged.
            #[test]
            fn postings_keep_the_first_max_postings_holders_of_each_key(
                texts in prop::collection::vec(text(8), 1..14),
                max_postings in 1u32..5,
                one_by_one in any::<bool>(),
            ) {
                let spec = OverlapSpec { max_postings, seed: 3, ..OverlapSpec::default() };
                let mut index = PassageIndex::new(spec.clone()).expect("index");
                let docs: Vec<(String, String)> =
                    texts.iter().enumerate().map(|(i, t)| (format!("d{i}"), t.clone())).collect();
                if one_by_one {
                    for d in docs {
                        index.add_documents(vec![d], OnExistingId::Refuse).expect("add");
                    }
                } else {
                    index.add_documents(docs, OnExistingId::Refuse).expect("add");
                }
                index.merge_postings();
                let mut want: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
                for (d, t) in texts.iter().enumerate() {
                    for k in doc_keys(t, &spec) {
                        let holders = want.entry(k).or_default();
                        if holders.len() < max_postings as usize {
                            holders.push(d as u32);
                        }
                    }
                }
                let got: std::collections::BTreeMap<u32, Vec<u32>> = index
                    .keys
                    .iter()
                    .enumerate()
                    .map(|(i, &k)| (k, index.postings[index.offsets[i] as usize..index.offsets[i + 1] as usize].to_vec()))
                    .collect();
                prop_assert_eq!(got, want);
            }

            /// A check names at most `max_sources` sources, and, when the query copies from no
            /// more documents than that, each of them (long distinct passages), as with no cap.
            #[test]
            fn a_check_aligns_at_most_max_sources_and_finds_each_copied_one_under_it(
                n in 1usize..7,
                max_sources in 1u32..8,
            ) {
                let word = |d: usize, i: usize| format!("w{}x{}", d, i * 7 + d);
                let docs: Vec<(String, String)> = (0..n)
                    .map(|d| (format!("d{d}"), (0..60).map(|i| word(d, i)).collect::<Vec<_>>().join(" ")))
                    .collect();
                let query: String = docs.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(". ");
                let spec = OverlapSpec { max_sources, ..OverlapSpec::default() };
                let mut index = PassageIndex::new(spec).expect("index");
                index.add_documents(docs, OnExistingId::Refuse).expect("add");
                let found = index.check(None, &query, &[]).expect("check");
                prop_assert!(found.sources.len() <= max_sources as usize, "{:?}", found.sources);
                if n <= max_sources as usize {
                    prop_assert_eq!(found.sources.len(), n, "{:?}", found.sources);
                    prop_assert_eq!(found.copied_chars, found.chars - 2 * (n as u64 - 1));
                }
            }
        }
    }
}
