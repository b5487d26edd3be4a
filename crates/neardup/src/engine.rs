//! A live collection: documents inserted, removed and searched one at a time (the service's
//! core), with the same sketches and exact verification as [`crate::Dedup`].

use std::borrow::Cow;
use std::sync::Arc;

use neardup_index::{HammingIndex, MinHashLsh};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::dedup::{manifest_for, read_index, sketch_with, verify, write_index, Plan};
use crate::{DedupError, DocSketch, Document, Method, Pipeline, Scratch, SearchConfig};

/// A search result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The document's key.
    pub key: u64,
    /// Its similarity under the engine's verification.
    pub similarity: f64,
}

/// Why a stored sketch could not be read from where an engine with external sketches keeps
/// them (a store's error).
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// Reads the stored sketch of a key for an engine whose sketches are external
/// ([`Engine::with_external_sketches`]): `None` when the key is no longer stored.
pub type KeySource<'a> = &'a dyn Fn(u64) -> Result<Option<DocSketch>, SourceError>;

/// Where an engine's stored sketches are.
#[derive(Debug)]
enum Docs {
    /// In memory, by key.
    Resident(FxHashMap<u64, DocSketch>),
    /// Elsewhere (the service's store): only the stored keys are kept; verification reads a
    /// candidate's sketch through a [`KeySource`].
    External(FxHashSet<u64>),
}

impl Docs {
    fn len(&self) -> usize {
        match self {
            Docs::Resident(m) => m.len(),
            Docs::External(s) => s.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn keys(&self) -> Vec<u64> {
        match self {
            Docs::Resident(m) => m.keys().copied().collect(),
            Docs::External(s) => s.iter().copied().collect(),
        }
    }
}

/// How many documents a search below an index's threshold may scan by default (about 0.1 s at
/// a microsecond a verification).
pub const DEFAULT_SCAN_LIMIT: usize = 100_000;

/// How a search finds its candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchPlan {
    /// From the index: complete at or above the threshold it was built for (and for Hamming
    /// verification, which does not depend on the threshold).
    Index,
    /// Every stored document verified: a search below the index's threshold, which its bands
    /// or tables would answer only in part.
    Scan,
}

/// A search below an index's threshold on more documents than a scan may read: refused rather
/// than answered in part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BelowThreshold {
    /// The threshold asked for.
    pub threshold: f64,
    /// The threshold the index finds its candidates for.
    pub index_threshold: f64,
    /// The documents stored.
    pub documents: usize,
    /// The most a scan reads.
    pub scan_limit: usize,
}

impl std::fmt::Display for BelowThreshold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "threshold {} is below this index's threshold {}: its candidates would miss pairs \
             between the two, and the exact answer, a scan of every document, is bounded to {} \
             documents (this index holds {}); search at {} or above, or index the documents \
             with the lower threshold",
            self.threshold,
            self.index_threshold,
            self.scan_limit,
            self.documents,
            self.index_threshold
        )
    }
}

impl std::error::Error for BelowThreshold {}

/// Why a search or a check is refused before any work is done.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum QueryError {
    /// The threshold asked for is not a number in (0, 1].
    Threshold {
        /// The threshold asked for.
        threshold: f64,
    },
    /// Below the index's threshold, with more documents than a scan may read.
    BelowThreshold(BelowThreshold),
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Threshold { threshold } => {
                write!(f, "threshold: expected a number in (0, 1], found {threshold}")
            }
            QueryError::BelowThreshold(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for QueryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            QueryError::BelowThreshold(e) => Some(e),
            QueryError::Threshold { .. } => None,
        }
    }
}

impl From<BelowThreshold> for QueryError {
    fn from(e: BelowThreshold) -> Self {
        QueryError::BelowThreshold(e)
    }
}

/// An in-memory index of documents keyed by `u64`, searched with exact verification.
///
/// ```
/// use std::sync::Arc;
/// use neardup::{SearchConfig, Document, Engine, Pipeline, PipelineSpec, Scratch};
///
/// let pipeline = Arc::new(Pipeline::new(PipelineSpec::default())?);
/// let mut engine = Engine::new(pipeline, SearchConfig { threshold: 0.5, ..SearchConfig::default() })?;
/// let mut scratch = Scratch::default();
/// let text = "the quick brown fox jumps over the lazy dog near the river bank";
/// let sketch = engine.sketch(Document::Text(text), text.len(), &mut scratch);
/// engine.insert(7, sketch);
/// let query = engine.sketch(Document::Text(&format!("{text}!")), text.len() + 1, &mut scratch);
/// let hits = engine.search(&query, None, 10)?;
/// assert_eq!(hits[0].key, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Engine {
    pipeline: Arc<Pipeline>,
    config: SearchConfig,
    plan: Plan,
    lsh: Option<MinHashLsh>,
    hamming: Option<HammingIndex>,
    docs: Docs,
    scan_limit: usize,
}

impl Engine {
    /// An empty engine.
    pub fn new(pipeline: Arc<Pipeline>, config: SearchConfig) -> Result<Engine, DedupError> {
        let plan = Plan::resolve(&pipeline, &config)?;
        let lsh = plan.banding.map(MinHashLsh::new);
        let hamming = match plan.method {
            Method::SimHash | Method::Both => Some(
                HammingIndex::new(plan.bits, config.hamming)
                    .map_err(|e| DedupError::InvalidConfig { message: e.to_string() })?,
            ),
            Method::MinHash => None,
        };
        Ok(Engine {
            pipeline,
            config,
            plan,
            lsh,
            hamming,
            docs: Docs::Resident(FxHashMap::default()),
            scan_limit: DEFAULT_SCAN_LIMIT,
        })
    }

    /// This engine, empty, keeping only the index and the keys of what it stores: each sketch's
    /// features are dropped once indexed, and verification reads a candidate's sketch from
    /// where the caller keeps them (the service's store), through the [`KeySource`] given to
    /// [`Engine::search_in`]. The memory a document takes is then its index entries alone
    /// (about a fifth).
    ///
    /// # Panics
    /// If the engine already stores documents.
    pub fn with_external_sketches(mut self) -> Engine {
        assert!(self.docs.is_empty(), "sketches are made external before any is stored");
        self.docs = Docs::External(FxHashSet::default());
        self
    }

    /// True when the sketches are kept outside the engine ([`Engine::with_external_sketches`]).
    pub fn external_sketches(&self) -> bool {
        matches!(self.docs, Docs::External(_))
    }

    /// An empty engine with this one's pipeline and resolved settings (its plan reused, not
    /// resolved again: under `estimate` verification that is datasketch's band search), holding
    /// its sketches in memory.
    pub fn empty_like(&self) -> Engine {
        Engine {
            pipeline: self.pipeline.clone(),
            config: self.config.clone(),
            plan: self.plan,
            lsh: self.plan.banding.map(MinHashLsh::new),
            hamming: self.hamming.as_ref().map(|h| {
                HammingIndex::new(self.plan.bits, h.k())
                    .expect("the settings of a built index are valid")
            }),
            docs: Docs::Resident(FxHashMap::default()),
            scan_limit: self.scan_limit,
        }
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// The configuration.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// The LSH `(bands, rows)` (MinHash only).
    pub fn banding(&self) -> Option<(usize, usize)> {
        self.plan.banding.map(|b| (b.bands(), b.rows()))
    }

    /// The keys under which a distributed job groups this document to find its candidates:
    /// the LSH band keys (MinHash) and the permuted tables' keys (SimHash; Manku et al.'s
    /// MapReduce plan), both for `both`. Two documents are candidates of this engine's search
    /// exactly when they share a key (up to 64-bit hash collisions, which only add candidates).
    /// An empty document has none: it is a near-duplicate of nothing.
    pub fn candidate_keys(&self, sketch: &DocSketch) -> Vec<u64> {
        if sketch.empty {
            return Vec::new();
        }
        let mut keys = Vec::with_capacity(self.candidate_key_count());
        if self.lsh.is_some() {
            keys.extend_from_slice(sketch.band_keys());
        }
        if let Some(h) = &self.hamming {
            keys.extend(h.table_keys(sketch.simhash_value()));
        }
        keys
    }

    /// How many keys [`Engine::candidate_keys`] gives a document that is not empty.
    pub fn candidate_key_count(&self) -> usize {
        self.banding().map_or(0, |(b, _)| b) + self.hamming.as_ref().map_or(0, |h| h.tables())
    }

    /// The probability that a pair exactly at the threshold becomes a candidate (MinHash).
    pub fn candidate_probability(&self) -> Option<f64> {
        self.plan.candidate_probability
    }

    /// The verification in use.
    pub fn verification(&self) -> crate::Verification {
        self.plan.verification
    }

    /// Documents stored.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Sketches a document (thread-safe).
    pub fn sketch(&self, doc: Document<'_>, len: usize, scratch: &mut Scratch) -> DocSketch {
        sketch_with(&self.pipeline, &self.plan, doc, len, scratch)
    }

    /// The stored sketch of `key` (`None` too when the sketches are external).
    pub fn get(&self, key: u64) -> Option<&DocSketch> {
        match &self.docs {
            Docs::Resident(m) => m.get(&key),
            Docs::External(_) => None,
        }
    }

    /// Stores `sketch` under `key`, replacing what `key` held. Empty documents are stored but
    /// never indexed: they match nothing. With external sketches only the index keeps it.
    pub fn insert(&mut self, key: u64, sketch: DocSketch) {
        self.remove(key);
        if !sketch.empty {
            if let Some(lsh) = &mut self.lsh {
                lsh.insert_keys(key, sketch.band_keys());
            }
            if let Some(h) = &mut self.hamming {
                h.insert(key, sketch.simhash_value());
            }
        }
        match &mut self.docs {
            Docs::Resident(m) => {
                m.insert(key, sketch);
            }
            Docs::External(s) => {
                s.insert(key);
            }
        }
    }

    /// Removes `key`; returns whether it was stored.
    pub fn remove(&mut self, key: u64) -> bool {
        let stored = match &mut self.docs {
            Docs::Resident(m) => m.remove(&key).is_some(),
            Docs::External(s) => s.remove(&key),
        };
        if !stored {
            return false;
        }
        if let Some(lsh) = &mut self.lsh {
            lsh.remove(key);
        }
        if let Some(h) = &mut self.hamming {
            h.remove(key);
        }
        true
    }

    /// The similarity of two sketches if they pass this engine's verification at `threshold`
    /// (or the configured one): what dedup checks for each candidate pair.
    pub fn similarity(&self, a: &DocSketch, b: &DocSketch, threshold: Option<f64>) -> Option<f64> {
        verify(
            &self.plan,
            threshold.unwrap_or(self.config.threshold),
            self.config.hamming,
            &a.view(),
            &b.view(),
        )
    }

    /// True when the batch search would take `a` and `b` as a candidate pair (before the skew
    /// guard): they share an LSH band key (MinHash), or their SimHashes lie within the Hamming
    /// distance (SimHash). A distributed job that groups by [`Engine::candidate_keys`] checks
    /// this before verifying, since two documents may share a permuted table's key and still
    /// lie farther apart (which only `both` under another verification would otherwise admit).
    pub fn is_candidate(&self, a: &DocSketch, b: &DocSketch) -> bool {
        if a.empty || b.empty {
            return false;
        }
        let by_bands =
            self.lsh.is_some() && a.band_keys().iter().zip(b.band_keys()).any(|(x, y)| x == y);
        let by_bits = self.hamming.is_some()
            && (a.simhash_value() ^ b.simhash_value()).count_ones() <= self.config.hamming;
        by_bands || by_bits
    }

    /// Writes the stored documents to `dir` as a saved index (the format of `neardup dedup
    /// --save-index`, readable by `--against`), each with the id `id_of` gives its key. The
    /// save holds the directory's [`crate::IndexLock`] (waiting for another writer) and commits
    /// in one step: an error leaves the previous index whole.
    pub fn save<'a>(
        &'a self,
        dir: &std::path::Path,
        id_of: impl Fn(u64) -> &'a str,
    ) -> Result<(), DedupError> {
        let lock = crate::IndexLock::acquire(dir)?;
        self.save_locked(&lock, id_of)
    }

    /// [`Engine::save`] into the directory of a lock the caller holds (to write other files
    /// of the index, or read the old one, under the same lock).
    pub fn save_locked<'a>(
        &'a self,
        lock: &crate::IndexLock,
        id_of: impl Fn(u64) -> &'a str,
    ) -> Result<(), DedupError> {
        let Docs::Resident(docs) = &self.docs else {
            return Err(DedupError::InvalidConfig {
                message: "an engine with external sketches cannot be saved as an index".into(),
            });
        };
        let manifest = manifest_for(&self.pipeline, &self.plan, &self.config, docs.len() as u64);
        let mut keys: Vec<u64> = docs.keys().copied().collect();
        keys.sort_unstable();
        write_index(lock, &manifest, keys.into_iter().map(|k| Ok((id_of(k), &docs[&k]))))
    }

    /// Reads a saved index made with this engine's pipeline and settings (refusing any other):
    /// its ids and sketches, in file order, for the caller to insert under keys of its choice.
    pub fn read_saved(
        &self,
        dir: &std::path::Path,
    ) -> Result<Vec<(String, DocSketch)>, DedupError> {
        let (docs, ids) =
            read_index(dir, &manifest_for(&self.pipeline, &self.plan, &self.config, 0))?;
        Ok(ids.into_iter().zip(docs).collect())
    }

    /// Sets how many documents a search below the index's threshold may scan.
    pub fn set_scan_limit(&mut self, documents: usize) {
        self.scan_limit = documents;
    }

    /// How a search at `threshold` (or the configured one) finds its candidates: from the index
    /// at or above its threshold, by a scan below it while the documents are at most the scan
    /// limit, else refused ([`QueryError::BelowThreshold`]): never answered in part. A threshold
    /// outside (0, 1] is refused ([`QueryError::Threshold`]).
    pub fn plan_search(&self, threshold: Option<f64>) -> Result<SearchPlan, QueryError> {
        self.plan_search_over(threshold, self.docs.len())
    }

    /// [`Engine::plan_search`] over `documents` stored documents (where the caller keeps them:
    /// an engine that holds none, searched through a store's own index).
    pub fn plan_search_over(
        &self,
        threshold: Option<f64>,
        documents: usize,
    ) -> Result<SearchPlan, QueryError> {
        let index_threshold = self.config.threshold;
        if let Some(t) = threshold {
            if !(t > 0.0 && t <= 1.0) {
                return Err(QueryError::Threshold { threshold: t });
            }
        }
        match threshold {
            // Within floating-point noise of the index's threshold is the index's threshold;
            // a pair verified by its bits passes whatever the threshold.
            Some(t) if !self.plan.verifies_by_bits() && t < index_threshold - 1e-12 => {
                if documents <= self.scan_limit {
                    Ok(SearchPlan::Scan)
                } else {
                    Err(QueryError::BelowThreshold(BelowThreshold {
                        threshold: t,
                        index_threshold,
                        documents,
                        scan_limit: self.scan_limit,
                    }))
                }
            }
            _ => Ok(SearchPlan::Index),
        }
    }

    /// The stored documents similar to `query` (verified at `threshold`, or the configured
    /// one), most similar first (ties by key), at most `top_k`; below the index's threshold,
    /// by a bounded scan ([`Engine::plan_search`]).
    pub fn search(
        &self,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
    ) -> Result<Vec<Hit>, QueryError> {
        let plan = self.plan_search(threshold)?;
        Ok(self.search_with(plan, query, threshold, top_k))
    }

    /// [`Engine::search`] by the given plan (a scan reads every document, whatever the limit).
    ///
    /// # Panics
    /// If the sketches are external: search those with [`Engine::search_in`].
    pub fn search_with(
        &self,
        plan: SearchPlan,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
    ) -> Vec<Hit> {
        let none = |_: u64| -> Result<Option<DocSketch>, SourceError> {
            panic!("an engine with external sketches is searched with Engine::search_in")
        };
        self.search_in(plan, query, threshold, top_k, &none)
            .expect("a resident engine reads no source")
    }

    /// [`Engine::search_with`] for an engine of either kind: with external sketches, each
    /// candidate's is read through `source` (a key it no longer has is no longer stored: left
    /// out); an engine holding its sketches never calls it. Its first error is returned.
    pub fn search_in(
        &self,
        plan: SearchPlan,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
        source: KeySource<'_>,
    ) -> Result<Vec<Hit>, SourceError> {
        if query.empty {
            return Ok(Vec::new());
        }
        let mut candidates: Vec<u64> = Vec::new();
        match plan {
            SearchPlan::Scan => candidates.extend(self.docs.keys()),
            SearchPlan::Index => {
                if let Some(lsh) = &self.lsh {
                    candidates.extend(lsh.query_keys(query.band_keys()));
                }
                if let Some(h) = &self.hamming {
                    candidates.extend(h.query(query.simhash_value()).into_iter().map(|(k, _)| k));
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut docs = Vec::with_capacity(candidates.len());
        for key in candidates {
            let doc = match &self.docs {
                Docs::Resident(m) => m.get(&key).map(Cow::Borrowed),
                Docs::External(s) if s.contains(&key) => source(key)?.map(Cow::Owned),
                Docs::External(_) => None,
            };
            docs.extend(doc.map(|d| (key, d)));
        }
        Ok(self.rank(plan, query, threshold, top_k, docs))
    }

    /// The hits among `candidates` (each a key and its sketch, found by `plan`): each verified
    /// at `threshold` (or the configured one), most similar first (ties by key), at most
    /// `top_k`. By [`SearchPlan::Index`], a candidate that shares no key with `query` in full
    /// ([`Engine::is_candidate`]) is left out, as the batch search would leave it: an index
    /// that keeps part of each key (the in-memory tables keep 32 bits) or one that a store
    /// keeps finds it and this search does not.
    pub fn rank<'s>(
        &self,
        plan: SearchPlan,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
        candidates: impl IntoIterator<Item = (u64, Cow<'s, DocSketch>)>,
    ) -> Vec<Hit> {
        if query.empty {
            return Vec::new();
        }
        let threshold = threshold.unwrap_or(self.config.threshold);
        let q = query.view();
        let mut hits: Vec<Hit> = candidates
            .into_iter()
            .filter(|(_, doc)| plan == SearchPlan::Scan || self.is_candidate(query, doc))
            .filter_map(|(key, doc)| {
                verify(&self.plan, threshold, self.config.hamming, &q, &doc.view())
                    .map(|similarity| Hit { key, similarity })
            })
            .collect();
        hits.sort_by(|a, b| b.similarity.total_cmp(&a.similarity).then(a.key.cmp(&b.key)));
        hits.truncate(top_k);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PipelineSpec;
    use proptest::prelude::*;

    fn words() -> impl Strategy<Value = Vec<String>> {
        let word = prop::sample::select(vec!["a", "b", "c", "d", "e", "f", "g", "h"]);
        prop::collection::vec(prop::collection::vec(word, 0..12).prop_map(|w| w.join(" ")), 1..30)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// With SimHash candidates (exact) and Hamming verification, search returns exactly the
        /// stored documents within k bits, after inserts, replacements and removals.
        #[test]
        fn simhash_search_equals_brute_force(texts in words(), k in 0u32..8) {
            let p = Arc::new(Pipeline::new(PipelineSpec::preset("shingles").expect("preset"))
                .expect("valid"));
            let config = SearchConfig { method: Method::SimHash, hamming: k, ..SearchConfig::default() };
            let mut e = Engine::new(p, config).expect("valid");
            let mut s = Scratch::default();
            let sketches: Vec<DocSketch> =
                texts.iter().map(|t| e.sketch(Document::Text(t), t.len(), &mut s)).collect();
            for (i, sk) in sketches.iter().enumerate() {
                e.insert(i as u64 % 20, sk.clone());
            }
            e.remove(3);
            for q in &sketches {
                let mut want: Vec<u64> = (0..20u64)
                    .filter(|key| {
                        e.get(*key).is_some_and(|d| {
                            !d.empty && !q.empty
                                && (d.simhash_value() ^ q.simhash_value()).count_ones() <= k
                        })
                    })
                    .collect();
                want.sort_unstable();
                let mut got: Vec<u64> = e.search(q, None, usize::MAX).expect("at the threshold").iter().map(|h| h.key).collect();
                got.sort_unstable();
                prop_assert_eq!(got, want);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// An engine whose sketches are read from a source (the service's store) answers every
        /// search as one holding them, by the index and by a scan, for each method, after
        /// inserts, replacements and removals; a key its source no longer has is left out.
        #[test]
        fn external_sketches_answer_as_resident_ones(
            texts in words(),
            method in prop::sample::select(vec![Method::MinHash, Method::SimHash, Method::Both]),
            removed in 0u64..20,
            threshold in prop::sample::select(vec![None, Some(0.3), Some(0.95)]),
        ) {
            let p = Arc::new(Pipeline::new(PipelineSpec::preset("shingles").expect("preset"))
                .expect("valid"));
            let config = SearchConfig { method, threshold: 0.5, ..SearchConfig::default() };
            let mut resident = Engine::new(p.clone(), config.clone()).expect("valid");
            let mut external =
                Engine::new(p, config).expect("valid").with_external_sketches();
            prop_assert!(external.external_sketches() && !resident.external_sketches());
            let mut s = Scratch::default();
            let sketches: Vec<DocSketch> =
                texts.iter().map(|t| resident.sketch(Document::Text(t), t.len(), &mut s)).collect();
            let mut store: FxHashMap<u64, DocSketch> = FxHashMap::default();
            for (i, sk) in sketches.iter().enumerate() {
                let key = i as u64 % 20;
                resident.insert(key, sk.clone());
                external.insert(key, sk.clone());
                store.insert(key, sk.clone());
            }
            prop_assert_eq!(resident.remove(removed), external.remove(removed));
            store.remove(&removed);
            prop_assert_eq!(resident.len(), external.len());
            prop_assert!(external.get(0).is_none());
            let source = |key: u64| -> Result<Option<DocSketch>, SourceError> {
                Ok(store.get(&key).cloned())
            };
            for q in &sketches {
                for plan in [SearchPlan::Index, SearchPlan::Scan] {
                    let want = resident.search_with(plan, q, threshold, usize::MAX);
                    let got = external.search_in(plan, q, threshold, usize::MAX, &source)
                        .expect("the source answers");
                    prop_assert_eq!(got, want);
                }
            }
            // A source that fails fails the search; one that lost a key leaves it out.
            let failing = |_: u64| -> Result<Option<DocSketch>, SourceError> { Err("gone".into()) };
            let lost = |_: u64| -> Result<Option<DocSketch>, SourceError> { Ok(None) };
            for q in sketches.iter().filter(|q| !q.empty).take(1) {
                let failed = external.search_in(SearchPlan::Scan, q, None, usize::MAX, &failing);
                prop_assert_eq!(failed.is_err(), !external.is_empty());
                let none = external.search_in(SearchPlan::Scan, q, None, usize::MAX, &lost);
                prop_assert!(none.expect("no error").is_empty());
            }
        }
    }

    #[test]
    fn below_the_threshold_a_search_scans_or_is_refused_never_answers_in_part() {
        let p = Arc::new(
            Pipeline::new(PipelineSpec::preset("shingles").expect("preset")).expect("valid"),
        );
        let mut e = Engine::new(p, SearchConfig::default()).expect("valid"); // threshold 0.8
        let mut s = Scratch::default();
        let base: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        // Copies of the base with more and more words replaced: Jaccard from 1 down to ~0.2.
        let texts: Vec<String> = (0..30)
            .map(|k| {
                let mut w = base.clone();
                for (j, word) in w.iter_mut().enumerate().take(k) {
                    *word = format!("x{k}y{j}");
                }
                w.join(" ")
            })
            .collect();
        for (i, t) in texts.iter().enumerate() {
            let sk = e.sketch(Document::Text(t), t.len(), &mut s);
            e.insert(i as u64, sk);
        }
        let q = e.sketch(Document::Text(&texts[0]), texts[0].len(), &mut s);
        for t in [0.3, 0.5, 0.7] {
            let mut want: Vec<u64> = (0..texts.len() as u64)
                .filter(|&k| e.similarity(&q, e.get(k).expect("stored"), Some(t)).is_some())
                .collect();
            want.sort_unstable();
            assert_eq!(e.plan_search(Some(t)), Ok(SearchPlan::Scan));
            let mut got: Vec<u64> =
                e.search(&q, Some(t), usize::MAX).expect("scanned").iter().map(|h| h.key).collect();
            got.sort_unstable();
            assert_eq!(got, want, "threshold {t}");
            assert!(
                want.len() > e.search_with(SearchPlan::Index, &q, Some(t), usize::MAX).len()
                    || t >= 0.7,
                "the bands alone would have missed some at {t}"
            );
        }
        assert_eq!(e.plan_search(Some(0.9)), Ok(SearchPlan::Index));
        e.set_scan_limit(texts.len() - 1);
        let refused = e.search(&q, Some(0.5), 10).expect_err("too many to scan");
        let QueryError::BelowThreshold(below) = refused else { panic!("{refused}") };
        assert_eq!((below.threshold, below.index_threshold, below.documents), (0.5, 0.8, 30));
        assert!(refused
            .to_string()
            .starts_with("threshold 0.5 is below this index's threshold 0.8"));
        assert!(e.search(&q, None, 10).is_ok() && e.search(&q, Some(0.8), 10).is_ok());
        // A threshold outside (0, 1] is refused by the library, whatever the surface.
        for t in [1.5, 0.0, -0.1, f64::NAN, f64::INFINITY] {
            let e = e.search(&q, Some(t), 10).expect_err("out of range");
            assert!(matches!(e, QueryError::Threshold { .. }), "{t}: {e}");
            assert!(e.to_string().starts_with("threshold: expected a number in (0, 1]"), "{e}");
        }
    }

    #[test]
    fn minhash_search_verifies_and_orders() {
        let p = Arc::new(Pipeline::new(PipelineSpec::default()).expect("valid"));
        let mut e = Engine::new(p, SearchConfig { threshold: 0.5, ..SearchConfig::default() })
            .expect("valid");
        let mut s = Scratch::default();
        let base = "one two three four five six seven eight nine ten eleven twelve thirteen";
        let texts = [base.to_string(), format!("{base} fourteen"), "x y z w v u t".to_string()];
        for (i, t) in texts.iter().enumerate() {
            let sk = e.sketch(Document::Text(t), t.len(), &mut s);
            e.insert(i as u64, sk);
        }
        let q = e.sketch(Document::Text(base), base.len(), &mut s);
        let hits = e.search(&q, None, 10).expect("at the threshold");
        assert_eq!(hits.iter().map(|h| h.key).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(hits[0].similarity, 1.0);
        assert!(e.search(&q, Some(0.95), 10).expect("above").len() == 1);
        assert!(e.remove(0));
        assert_eq!(e.search(&q, None, 10).expect("at")[0].key, 1);
        let empty = e.sketch(Document::Text(""), 0, &mut s);
        assert!(e.search(&empty, None, 10).expect("at").is_empty());
    }
}
