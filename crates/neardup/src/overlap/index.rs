//! The passage index: the collection's texts and their winnowed k-gram hashes, and the check of
//! a query against them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::align::Attribution;
use super::check::{check_in, key, new_scope, Halt, Holdings, Scope, NO_SCOPE, SCRATCH};
use super::units::{kgram_hashes, units};
use super::{Overlap, OverlapError, OverlapSpec};

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
    /// Where the keys of each leading-bits bucket start in `keys`.
    pub(crate) key_directory: KeyDirectory,
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
    /// Documents replaced or removed (not live) that the postings may still list (a rebuild
    /// drops them): while none is, a k-gram's holders are counted from the postings' lengths
    /// instead of one by one.
    pub(crate) listed_dead: usize,
}

/// Where the keys of each bucket of leading bits start in the sorted keys: finding a key reads
/// its bucket, a few keys on one or two cache lines, where a binary search over all the keys
/// missed the cache at most of its steps (a tenth of a within-corpus check's time on 16 MB, and
/// more as the index grows). Keys are hashes, so the buckets fill evenly.
#[derive(Debug, Clone)]
pub(crate) struct KeyDirectory {
    /// `starts[b]..starts[b + 1]`: the keys whose leading bits are `b`.
    starts: Arc<[u32]>,
    /// 32 less the number of leading bits.
    shift: u32,
}

impl Default for KeyDirectory {
    fn default() -> Self {
        KeyDirectory { starts: Arc::from([0u32, 0]), shift: 32 }
    }
}

impl KeyDirectory {
    /// Most leading bits used (16 MiB of starts).
    const MAX_BITS: u32 = 22;

    /// The directory of `keys` (sorted, each once): a bucket for about every eight keys.
    pub(crate) fn new(keys: &[u32]) -> KeyDirectory {
        let bits = (usize::BITS - (keys.len() / 8).leading_zeros()).min(Self::MAX_BITS);
        let shift = 32 - bits;
        let mut starts = Vec::with_capacity((1 << bits) + 1);
        let mut at = 0usize;
        for b in 0..(1u64 << bits) {
            while at < keys.len() && (u64::from(keys[at]) >> shift) < b {
                at += 1;
            }
            starts.push(at as u32);
        }
        starts.push(keys.len() as u32);
        KeyDirectory { starts: starts.into(), shift }
    }

    /// Where `key` is in `keys` (those the directory was built from), if there.
    pub(crate) fn find(&self, keys: &[u32], key: u32) -> Option<usize> {
        let b = (u64::from(key) >> self.shift) as usize;
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        keys[lo..hi].binary_search(&key).ok().map(|i| lo + i)
    }

    /// Where each of `wanted` is in `keys`, as [`KeyDirectory::find`] says, into `out` (cleared
    /// first). The lookups go step by step over all the keys (every bucket, then every search
    /// in its bucket), not one key after another: a step's reads of different keys do not
    /// wait for each other, so the processor has many cache misses in flight at once where one
    /// lookup's chain of reads had one (in an index larger than the caches, each lookup misses
    /// at every step).
    pub(crate) fn find_all(&self, keys: &[u32], wanted: &[u32], out: &mut Vec<Option<usize>>) {
        out.clear();
        let buckets: Vec<(u32, u32)> = wanted
            .iter()
            .map(|&key| {
                let b = (u64::from(key) >> self.shift) as usize;
                (self.starts[b], self.starts[b + 1])
            })
            .collect();
        out.extend(wanted.iter().zip(&buckets).map(|(&key, &(lo, hi))| {
            let (lo, hi) = (lo as usize, hi as usize);
            keys[lo..hi].binary_search(&key).ok().map(|i| lo + i)
        }));
    }
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

/// The winnowed keys of a text's k-gram hashes (Schleimer et al. 2003, robust winnowing: the
/// rightmost minimum of each window, recorded when it changes), sorted and each once.
pub(crate) fn winnow(grams: &[u64], window: usize, out: &mut Vec<u32>) {
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
            key_directory: KeyDirectory::default(),
            offsets: Arc::from([0]),
            postings: Arc::from([]),
            arena: Default::default(),
            recent: FxHashMap::default(),
            recent_len: 0,
            listed_dead: 0,
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
        self.listed_dead += 1;
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
        super::numbers_by(ids, |id| self.find(id))
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
                self.listed_dead += 1;
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

    /// Takes built postings (from [`csr`] over [`PassageIndex::live_pairs`]: no document that
    /// is not live is listed any more).
    fn set_postings(&mut self, (keys, offsets, postings): (Vec<u32>, Vec<u32>, Vec<u32>)) {
        self.listed_dead = 0;
        self.key_directory = KeyDirectory::new(&keys);
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
        // Within a corpus its documents are added first, and each checked against the others.
        let (members, queries) = match mode {
            Batch::Within => (self.add_documents(queries, OnExistingId::Refuse)?, Vec::new()),
            Batch::Against | Batch::AgainstThenAdd => (Vec::new(), queries),
        };
        // The batch's checks see the index unchanged: they share the hashes of the sources they
        // align (each thread's cache, dropped after the batch, without waiting for threads busy
        // elsewhere).
        let scope = new_scope();
        let stopped = || self.stopped();
        let found = if mode == Batch::Within {
            members
                .par_iter()
                .map(|&n| {
                    if self.stopped() {
                        return Err(OverlapError::Stopped);
                    }
                    let by = Attribution::Earliest;
                    counted(self.checked(self.text(n), Some(n), exclude, by, &stopped, scope))
                })
                .collect::<Result<Vec<_>, _>>()
        } else {
            queries
                .par_iter()
                .map(|(id, text)| {
                    if self.stopped() {
                        return Err(OverlapError::Stopped);
                    }
                    counted(self.check_scoped(Some(id), text, exclude, &stopped, scope))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        rayon::spawn_broadcast(|_| SCRATCH.with_borrow_mut(|s| s.sources.enter(NO_SCOPE)));
        let found = found?;
        if mode == Batch::AgainstThenAdd {
            self.add_documents(queries, OnExistingId::Replace)?;
        }
        Ok(found)
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
        let stopped =
            || self.stopped() || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
        self.check_scoped(own_id, text, exclude, &stopped, NO_SCOPE)
    }

    /// [`PassageIndex::check_until`] within `scope` (the checks of one batch share it).
    fn check_scoped(
        &self,
        own_id: Option<&str>,
        text: &str,
        exclude: &[u32],
        stopped: &dyn Fn() -> bool,
        scope: Scope,
    ) -> Result<Overlap, OverlapError> {
        if text.len() >= u32::MAX as usize {
            return Err(OverlapError::TooLong {
                id: own_id.unwrap_or("the query").to_string(),
                bytes: text.len(),
            });
        }
        let own = own_id.and_then(|id| self.find(id));
        self.checked(text, own, exclude, Attribution::BestMatch, stopped, scope)
    }

    /// Checks document `n` of the index against the others (the within-corpus mode). A stretch
    /// several documents hold is given to the earliest of them (the first occurrence), the
    /// others named as holding it too. Stops with [`OverlapError::Stopped`] as
    /// [`PassageIndex::check`] does.
    pub fn check_member(&self, n: u32, exclude: &[u32]) -> Result<Overlap, OverlapError> {
        let stopped = || self.stopped();
        self.checked(self.text(n), Some(n), exclude, Attribution::Earliest, &stopped, NO_SCOPE)
    }

    fn checked(
        &self,
        text: &str,
        own: Option<u32>,
        exclude: &[u32],
        by: Attribution,
        stopped: &dyn Fn() -> bool,
        scope: Scope,
    ) -> Result<Overlap, OverlapError> {
        SCRATCH.with_borrow_mut(|s| {
            let found = check_in(self, &self.spec, text, own, exclude, by, stopped, s, scope);
            found.map_err(|h| match h {
                Halt::Stopped => OverlapError::Stopped,
                // Every text of an index is at hand.
                Halt::Needs(_) => unreachable!("an index holds every text it posts"),
            })
        })
    }
}

impl Holdings for PassageIndex {
    fn built(&self, key: u32) -> &[u32] {
        list_of(&self.keys, &self.offsets, &self.postings, self.key_directory.find(&self.keys, key))
    }

    fn built_all<'a>(&'a self, keys: &[u32], out: &mut Vec<&'a [u32]>) {
        let mut found = Vec::with_capacity(keys.len());
        self.key_directory.find_all(&self.keys, keys, &mut found);
        out.clear();
        out.extend(
            found.into_iter().map(|j| list_of(&self.keys, &self.offsets, &self.postings, j)),
        );
    }

    fn recent(&self, key: u32) -> &[u32] {
        self.recent.get(&key).map_or(&[][..], Vec::as_slice)
    }

    fn no_keys(&self) -> bool {
        self.keys.is_empty() && self.recent.is_empty()
    }

    fn live(&self, doc: u32) -> bool {
        self.docs[doc as usize].live
    }

    fn lists_only_live(&self) -> bool {
        self.listed_dead == 0
    }

    fn text(&self, doc: u32) -> Option<&str> {
        Some(PassageIndex::text(self, doc))
    }
}

/// The documents of key number `j` (None: an absent key) in sorted postings.
pub(crate) fn list_of<'a>(
    keys: &[u32],
    offsets: &[u32],
    postings: &'a [u32],
    j: Option<usize>,
) -> &'a [u32] {
    debug_assert_eq!(keys.len() + 1, offsets.len().max(1));
    match j {
        Some(j) => &postings[offsets[j] as usize..offsets[j + 1] as usize],
        None => &[],
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

            /// The key directory finds exactly the keys a binary search finds, present or not,
            /// at the ends of the range and in buckets of every size.
            #[test]
            fn the_key_directory_finds_what_a_binary_search_finds(
                mut keys in prop::collection::vec(any::<u32>(), 0..300),
                probes in prop::collection::vec(any::<u32>(), 0..50),
                skewed in any::<bool>(),
            ) {
                if skewed {
                    // Keys crowded into one bucket, and the extremes.
                    keys.iter_mut().for_each(|k| *k |= 0xFFFF_0000);
                    keys.extend([0, u32::MAX]);
                }
                keys.sort_unstable();
                keys.dedup();
                let dir = KeyDirectory::new(&keys);
                let all: Vec<u32> = probes.iter().chain(&keys).copied().chain([0, u32::MAX]).collect();
                for &k in &all {
                    prop_assert_eq!(dir.find(&keys, k), keys.binary_search(&k).ok(), "key {}", k);
                }
                // All at once, in the order asked.
                let mut found = vec![Some(7)];
                dir.find_all(&keys, &all, &mut found);
                let one_by_one: Vec<Option<usize>> = all.iter().map(|k| dir.find(&keys, *k)).collect();
                prop_assert_eq!(found, one_by_one);
            }

            /// A batch, whose checks share the hashes of the sources they align, answers as each
            /// check alone does (both modes; sources recur across queries).
            #[test]
            fn a_batch_answers_as_its_checks_alone(
                docs in prop::collection::vec(text(20), 2..12),
                queries in prop::collection::vec(text(20), 1..6),
            ) {
                let spec = OverlapSpec { min_units: 4, max_sources: 6, ..OverlapSpec::default() };
                let named = |v: &[String], p: &str| -> Vec<(String, String)> {
                    v.iter().enumerate().map(|(i, t)| (format!("{p}{i}"), t.clone())).collect()
                };
                let mut index = PassageIndex::new(spec.clone()).expect("index");
                index.add_documents(named(&docs, "d"), OnExistingId::Refuse).expect("add");
                let alone: Vec<Overlap> =
                    queries.iter().map(|q| index.check(None, q, &[]).expect("check")).collect();
                let batch = index.check_batch(named(&queries, "q"), Batch::Against, &[]).expect("batch");
                prop_assert_eq!(batch, alone);

                let mut within = PassageIndex::new(spec).expect("index");
                let found = within.check_batch(named(&docs, "d"), Batch::Within, &[]).expect("batch");
                let alone: Vec<Overlap> =
                    (0..docs.len() as u32).map(|n| within.check_member(n, &[]).expect("check")).collect();
                prop_assert_eq!(found, alone);
            }

            /// A check names at most `max_sources` sources: when the query copies from no more
            /// documents than that, each of them (long distinct passages), as with no cap; when
            /// from more, exactly `max_sources` of them (the cap is spent on sources, never left
            /// unused while a copied one waits), whatever the order of the copies in the query.
            #[test]
            fn a_check_aligns_at_most_max_sources_and_spends_them_on_sources(
                lengths in prop::collection::btree_set(20usize..90, 1..7),
                max_sources in 1u32..8,
                order in prop::collection::vec(any::<u16>(), 7),
            ) {
                let lengths: Vec<usize> = lengths.into_iter().collect();
                let n = lengths.len();
                let word = |d: usize, i: usize| format!("w{}x{}", d, i * 7 + d);
                let docs: Vec<(String, String)> = lengths
                    .iter()
                    .enumerate()
                    .map(|(d, &len)| {
                        (format!("d{d}"), (0..len).map(|i| word(d, i)).collect::<Vec<_>>().join(" "))
                    })
                    .collect();
                let mut placed: Vec<usize> = (0..n).collect();
                placed.sort_by_key(|&d| order[d]);
                let query: String =
                    placed.iter().map(|&d| docs[d].1.as_str()).collect::<Vec<_>>().join(". ");
                let spec = OverlapSpec { max_sources, ..OverlapSpec::default() };
                let mut index = PassageIndex::new(spec).expect("index");
                index.add_documents(docs.clone(), OnExistingId::Refuse).expect("add");
                let found = index.check(None, &query, &[]).expect("check");
                let named: std::collections::BTreeSet<u32> =
                    found.sources.iter().map(|s| s.source).collect();
                prop_assert_eq!(named.len(), n.min(max_sources as usize), "{:?}", found.sources);
                // Each named one is a copied document, credited with its whole copy.
                for s in &found.sources {
                    let copy = &docs[s.source as usize].1;
                    prop_assert_eq!(s.chars, copy.chars().count() as u64, "{:?}", s);
                }
                if n <= max_sources as usize {
                    prop_assert_eq!(found.copied_chars, found.chars - 2 * (n as u64 - 1));
                }
            }
        }
    }
}
