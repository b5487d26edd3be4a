//! [`NamedEngine`]: an [`Engine`] whose documents are named by strings. What the service's
//! collections and the Python `Index` hold, so that both name, replace, search and check
//! documents the same way.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::engine::SourceError;
use crate::overlap::{OnExistingId, OverlapError, OverlapSpec, PassageIndex};
use crate::{DedupError, DocSketch, Engine, JobError, QueryError, SearchPlan};

/// Why a saved index cannot be opened as a [`NamedEngine`].
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenIndexError {
    /// The index itself: no manifest, a damaged docs file, a format of another build.
    Index(DedupError),
    /// Its job does not compile with this build (a pipeline spec it cannot build).
    Job(JobError),
    /// Two documents of it share an id (an index of a batch run whose records repeated one): an
    /// index named by ids holds one document per id, and loading would silently replace the
    /// first.
    RepeatedId {
        /// The index's directory.
        path: std::path::PathBuf,
        /// The later document's position in the index.
        position: usize,
        /// The id.
        id: String,
    },
    /// Its passage index.
    Passages(OverlapError),
}

impl std::fmt::Display for OpenIndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenIndexError::Index(e) => write!(f, "{e}"),
            OpenIndexError::Job(e) => write!(f, "{e}"),
            OpenIndexError::RepeatedId { path, position, id } => write!(
                f,
                "{}: document {position} repeats the id {id:?} of an earlier document; an index \
                 by ids holds one document per id (use neardup dedup --against {} to search it \
                 with its repeats kept apart, or give the records unique ids before saving)",
                path.display(),
                path.display()
            ),
            OpenIndexError::Passages(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for OpenIndexError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenIndexError::Index(e) => Some(e),
            OpenIndexError::Job(e) => Some(e),
            OpenIndexError::Passages(e) => Some(e),
            OpenIndexError::RepeatedId { .. } => None,
        }
    }
}

/// Reads the stored sketch of an id for an index whose engine keeps its sketches elsewhere
/// ([`Engine::with_external_sketches`]): `None` when the id is no longer stored.
pub type IdSource<'a> = &'a dyn Fn(&str) -> Result<Option<DocSketch>, SourceError>;

/// A store that keeps a collection's documents and their candidate index itself (the
/// service's database): the engine searching it holds no document, and each search reads its
/// candidates from the store in one go.
pub trait StoredIndex {
    /// How many documents the store holds (what decides whether a search below the
    /// threshold may scan them: [`Engine::plan_search_over`]).
    fn documents(&self) -> Result<usize, SourceError>;
    /// The stored documents that share at least one of `keys` ([`Engine::candidate_keys`]), or
    /// every stored document when `keys` is `None` (a scan).
    fn candidates(&self, keys: Option<&[u64]>) -> Result<Vec<StoredDoc>, SourceError>;
}

/// A document a [`StoredIndex`] gives as a candidate.
#[derive(Debug, Clone)]
pub struct StoredDoc {
    /// Its id.
    pub id: String,
    /// Its place in the order documents were first stored (ties between equally similar
    /// documents go to the earlier, as in a [`NamedEngine`] that holds them).
    pub order: u64,
    /// Its sketch.
    pub sketch: DocSketch,
}

/// Where a [`NamedEngine`]'s stored documents are searched.
#[derive(Clone, Copy)]
pub enum Stored<'a> {
    /// In the engine, sketches and all.
    Here,
    /// The candidate index in the engine, the sketches read through the source
    /// ([`Engine::with_external_sketches`]).
    Sketches(IdSource<'a>),
    /// Index and sketches in a store ([`StoredIndex`]): the engine holds no document.
    Index(&'a dyn StoredIndex),
}

impl std::fmt::Debug for Stored<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stored::Here => "Here",
            Stored::Sketches(_) => "Sketches",
            Stored::Index(_) => "Index",
        })
    }
}

/// An [`Engine`] with string ids. Each id gets a `u64` key when first stored (keys count up, so
/// key order is first-insertion order); the id text is held once, shared by both directions.
///
/// With [`NamedEngine::with_passages`] it also keeps the texts in a [`PassageIndex`] (under the
/// same ids), so that the passage check runs against what is stored.
#[derive(Debug)]
pub struct NamedEngine {
    engine: Engine,
    key_of: FxHashMap<Arc<str>, u64>,
    id_of: FxHashMap<u64, Arc<str>>,
    next_key: u64,
    /// Shared with the checks that run on a snapshot of it ([`NamedEngine::passages_snapshot`]);
    /// a write while one runs changes a copy (cheap: see [`PassageIndex`]).
    passages: Option<Arc<PassageIndex>>,
}

impl NamedEngine {
    /// An index over `engine`, which must be empty (its documents would have no names).
    pub fn new(engine: Engine) -> NamedEngine {
        debug_assert_eq!(engine.len(), 0, "a NamedEngine starts empty");
        NamedEngine {
            engine,
            key_of: FxHashMap::default(),
            id_of: FxHashMap::default(),
            next_key: 0,
            passages: None,
        }
    }

    /// Keeps a passage index of the stored texts too (the index must still be empty): the
    /// documents stored with [`NamedEngine::insert_with_text`] are the sources of the passage
    /// check ([`NamedEngine::passages`]).
    pub fn with_passages(mut self, spec: OverlapSpec) -> Result<NamedEngine, OverlapError> {
        debug_assert!(self.is_empty(), "passages are kept from the start");
        self.passages = Some(Arc::new(PassageIndex::new(spec)?));
        Ok(self)
    }

    /// Keeps `passages` as the passage index (a saved one, loaded); its ids must be this
    /// index's.
    pub fn set_passages(&mut self, passages: PassageIndex) {
        self.passages = Some(Arc::new(passages));
    }

    /// The passage index of the stored texts, when it keeps one: its ids are the stored ids.
    pub fn passages(&self) -> Option<&PassageIndex> {
        self.passages.as_deref()
    }

    /// The passage index as it is now, to check against without holding this engine: a long
    /// check on a snapshot never makes a writer wait (the writer changes a copy meanwhile).
    pub fn passages_snapshot(&self) -> Option<Arc<PassageIndex>> {
        self.passages.clone()
    }

    /// The engine: sketching, similarity, settings.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The number of documents stored.
    pub fn len(&self) -> usize {
        self.key_of.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.key_of.is_empty()
    }

    /// True when `id` is stored.
    pub fn contains(&self, id: &str) -> bool {
        self.key_of.contains_key(id)
    }

    /// Stores `sketch` under `id`, replacing what `id` held. When the index keeps passages, use
    /// [`NamedEngine::insert_with_text`]: a document stored without its text has no passages.
    pub fn insert(&mut self, id: &str, sketch: DocSketch) {
        self.insert_with_text(id, sketch, None);
    }

    /// Stores `sketch` under `id`, replacing what `id` held, and, when the index keeps
    /// passages, `text` as a source of the passage check (a document without text has none).
    pub fn insert_with_text(&mut self, id: &str, sketch: DocSketch, text: Option<String>) {
        self.set_text(id, text);
        let key = match self.key_of.get(id) {
            Some(&k) => k,
            None => {
                let k = self.next_key;
                self.next_key += 1;
                let name: Arc<str> = Arc::from(id);
                self.key_of.insert(name.clone(), k);
                self.id_of.insert(k, name);
                k
            }
        };
        self.engine.insert(key, sketch);
    }

    /// Makes `text` the passage source of `id` (none: `None`) when the index keeps passages,
    /// leaving the search index as it is: for an engine whose documents a store indexes
    /// ([`Stored::Index`]), this is all it holds of them.
    pub fn set_text(&mut self, id: &str, text: Option<String>) {
        let Some(p) = &mut self.passages else { return };
        let p = Arc::make_mut(p);
        match text {
            // A text under 4 GiB (the stores' document limits are far below) and an id
            // given once: adding cannot fail.
            Some(t) => {
                let added = p.add_documents(vec![(id.to_string(), t)], OnExistingId::Replace);
                debug_assert!(added.is_ok(), "{added:?}");
            }
            None => {
                p.remove(id);
            }
        }
    }

    /// Removes `id`; returns whether it was stored.
    pub fn remove(&mut self, id: &str) -> bool {
        self.set_text(id, None);
        let Some(key) = self.key_of.remove(id) else { return false };
        self.id_of.remove(&key);
        self.engine.remove(key)
    }

    /// The stored documents similar to `query` (verified at `threshold`, or the configured
    /// one), most similar first, at most `top_k`; `except` (the query's own id, when a stored
    /// document is checked against the others) is never among them.
    ///
    /// # Panics
    /// If the engine's sketches are external: search those with [`NamedEngine::search_in`].
    pub fn search(
        &self,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
        except: Option<&str>,
    ) -> Result<Vec<(String, f64)>, QueryError> {
        let plan = self.engine.plan_search(threshold)?;
        Ok(self
            .search_planned(plan, query, threshold, top_k, except, Stored::Here)
            .expect("a resident engine reads no source"))
    }

    /// [`NamedEngine::search`] of the documents where `stored` says they are: with external
    /// sketches, each candidate's is read through the source ([`Engine::search_in`]); from a
    /// store's index, the candidates are read from it. Refused below the threshold as
    /// [`NamedEngine::plan_search_in`] says; a source's error is the outer one.
    pub fn search_in(
        &self,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
        except: Option<&str>,
        stored: Stored<'_>,
    ) -> Result<Result<Vec<(String, f64)>, QueryError>, SourceError> {
        let plan = match self.plan_search_in(threshold, stored)? {
            Ok(plan) => plan,
            Err(e) => return Ok(Err(e)),
        };
        self.search_planned(plan, query, threshold, top_k, except, stored).map(Ok)
    }

    /// [`NamedEngine::plan_search`] over the documents where `stored` says they are (a store's
    /// index counts its own).
    pub fn plan_search_in(
        &self,
        threshold: Option<f64>,
        stored: Stored<'_>,
    ) -> Result<Result<SearchPlan, QueryError>, SourceError> {
        self.plan_counted(threshold, stored, &mut None)
    }

    /// [`NamedEngine::plan_search_in`], with the count a store's index gave, kept in `counted`
    /// for the next plan of the same snapshot: the store counts its documents only when a scan
    /// is in question.
    fn plan_counted(
        &self,
        threshold: Option<f64>,
        stored: Stored<'_>,
        counted: &mut Option<usize>,
    ) -> Result<Result<SearchPlan, QueryError>, SourceError> {
        Ok(match stored {
            Stored::Index(index) => match self.engine.plan_search_over(threshold, 0) {
                Ok(SearchPlan::Scan) => {
                    let n = match *counted {
                        Some(n) => n,
                        None => *counted.insert(index.documents()?),
                    };
                    self.engine.plan_search_over(threshold, n)
                }
                planned => planned,
            },
            Stored::Here | Stored::Sketches(_) => self.engine.plan_search(threshold),
        })
    }

    /// [`NamedEngine::search_in`] by a plan the caller made with
    /// [`NamedEngine::plan_search_in`] (and may report: a scan or the index), without planning
    /// again.
    pub fn search_planned(
        &self,
        plan: SearchPlan,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
        except: Option<&str>,
        stored: Stored<'_>,
    ) -> Result<Vec<(String, f64)>, SourceError> {
        let source = match stored {
            Stored::Index(index) => {
                return self.search_index(index, plan, query, threshold, top_k, except)
            }
            Stored::Sketches(source) => Some(source),
            Stored::Here => None,
        };
        let own = except.and_then(|id| self.key_of.get(id).copied());
        let by_key = |key: u64| -> Result<Option<DocSketch>, SourceError> {
            match (source, self.id_of.get(&key)) {
                (Some(source), Some(id)) => source(id),
                (None, Some(_)) => Err("an index with external sketches needs a source".into()),
                (_, None) => Ok(None),
            }
        };
        let deeper = top_k.saturating_add(usize::from(own.is_some()));
        Ok(self
            .engine
            .search_in(plan, query, threshold, deeper, &by_key)?
            .into_iter()
            .filter(|h| Some(h.key) != own)
            .take(top_k)
            .map(|h| (self.id_of[&h.key].to_string(), h.similarity))
            .collect())
    }

    /// [`NamedEngine::search_planned`] of a store's index: its candidates (by the query's keys, or
    /// all of them for a scan) ranked as the engine ranks its own, ties by first storing.
    fn search_index(
        &self,
        index: &dyn StoredIndex,
        plan: SearchPlan,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
        except: Option<&str>,
    ) -> Result<Vec<(String, f64)>, SourceError> {
        if query.empty {
            return Ok(Vec::new());
        }
        let keys = match plan {
            SearchPlan::Index => Some(self.engine.candidate_keys(query)),
            SearchPlan::Scan => None,
        };
        let mut docs = index.candidates(keys.as_deref())?;
        docs.retain(|d| Some(d.id.as_str()) != except);
        let mut ids: FxHashMap<u64, String> = FxHashMap::default();
        let mut sketches = Vec::with_capacity(docs.len());
        for d in docs {
            ids.insert(d.order, d.id);
            sketches.push((d.order, std::borrow::Cow::Owned(d.sketch)));
        }
        Ok(self
            .engine
            .rank(plan, query, threshold, top_k, sketches)
            .into_iter()
            .map(|h| (ids.remove(&h.key).unwrap_or_default(), h.similarity))
            .collect())
    }

    /// Decides `checks` in order as if each ran alone and, when accepted, were stored before the
    /// next: each is searched against the stored documents and against the documents accepted
    /// before it, through the same candidate search and verification (so a check answers the
    /// same whether it is decided alone or in a group). Nothing is stored: the caller makes the
    /// accepted ones durable, then [`NamedEngine::insert`]s them (the service's group commit),
    /// or inserts them at once (the Python `Index`).
    ///
    /// A check never matches its own id (an upsert of a stored document is not its own
    /// duplicate), and a document accepted earlier in the group replaces a stored one of the
    /// same id.
    ///
    /// A check below the index's threshold is answered by a scan (the caller refused it at
    /// admission if the index was then too large to scan: [`NamedEngine::plan_search`]), so
    /// that documents stored since cannot fail the group.
    ///
    /// # Panics
    /// If the engine's sketches are external: decide with [`NamedEngine::decide_checks_in`].
    pub fn decide_checks(&self, checks: &[Check<'_>]) -> Vec<CheckAnswer> {
        self.decide_checks_in(checks, Stored::Here).expect("a resident engine reads no source")
    }

    /// [`NamedEngine::decide_checks`] of the documents where `stored` says they are: with
    /// external sketches, the stored candidates' are read through the source; from a store's
    /// index, the candidates are read from it (the accepted documents of the group are held in
    /// memory until the caller stores them). A source's error ends the decision.
    pub fn decide_checks_in(
        &self,
        checks: &[Check<'_>],
        stored: Stored<'_>,
    ) -> Result<Vec<CheckAnswer>, SourceError> {
        // The group's accepted documents, in an engine of the same settings: searching it is
        // searching them as if they were stored.
        let mut group: Option<NamedEngine> = None;
        let mut answers = Vec::with_capacity(checks.len());
        // How many documents a store's index holds, read once for the group.
        let mut counted: Option<usize> = None;
        for c in checks {
            // The accepted ids replace stored ones: search deeper, so that dropping them still
            // leaves top_k.
            let shadowed = group.as_ref().map_or(0, NamedEngine::len);
            let plan =
                self.plan_counted(c.threshold, stored, &mut counted)?.unwrap_or(SearchPlan::Scan);
            let mut matches: Vec<(String, f64)> = self
                .search_planned(
                    plan,
                    c.sketch,
                    c.threshold,
                    c.top_k.saturating_add(shadowed),
                    Some(c.id),
                    stored,
                )?
                .into_iter()
                .filter(|(id, _)| !group.as_ref().is_some_and(|g| g.contains(id)))
                .collect();
            if let Some(g) = &group {
                // The group is searched as the stored documents are (a scan below the threshold).
                matches.extend(g.search_planned(
                    plan,
                    c.sketch,
                    c.threshold,
                    c.top_k,
                    Some(c.id),
                    Stored::Here,
                )?);
            }
            matches.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            matches.truncate(c.top_k);
            let duplicate = !matches.is_empty();
            let inserted = !duplicate && c.insert;
            if inserted {
                let g = group.get_or_insert_with(|| self.empty_like());
                g.insert(c.id, c.sketch.clone());
            }
            answers.push(CheckAnswer { matches, duplicate, inserted });
        }
        Ok(answers)
    }

    /// How a search at `threshold` would find its candidates, or why it is refused
    /// ([`Engine::plan_search`]).
    pub fn plan_search(&self, threshold: Option<f64>) -> Result<SearchPlan, QueryError> {
        self.engine.plan_search(threshold)
    }

    /// An empty index with this one's pipeline and settings.
    fn empty_like(&self) -> NamedEngine {
        NamedEngine::new(self.engine.empty_like())
    }

    /// The ids stored, in the order they were first stored.
    pub fn ids(&self) -> Vec<&str> {
        let mut keys: Vec<(&u64, &Arc<str>)> = self.id_of.iter().collect();
        keys.sort_unstable_by_key(|(k, _)| **k);
        keys.into_iter().map(|(_, id)| &**id).collect()
    }

    /// Opens an index written by [`NamedEngine::save`] or `neardup dedup --save-index`: with the
    /// job its manifest holds (its pipeline and search), its documents under their ids (the
    /// JSON texts `save` writes read back: `7` and `"7"` are one id), and its passage index
    /// when it has one.
    pub fn open(dir: &std::path::Path) -> Result<NamedEngine, OpenIndexError> {
        let manifest = crate::read_manifest(dir).map_err(OpenIndexError::Index)?;
        let job = manifest.job.compile().map_err(OpenIndexError::Job)?;
        let mut named = NamedEngine::new(job.engine());
        let docs = named.engine.read_saved(dir).map_err(OpenIndexError::Index)?;
        for (position, (id, sketch)) in docs.into_iter().enumerate() {
            let id = crate::id_from_saved(&id).into_owned();
            if named.contains(&id) {
                return Err(OpenIndexError::RepeatedId { path: dir.to_path_buf(), position, id });
            }
            named.insert(&id, sketch);
        }
        if dir.join(crate::overlap::PASSAGE_INDEX_FILE).is_file() {
            let mut passages = PassageIndex::load(dir, &crate::overlap::OverlapOptions::default())
                .map_err(OpenIndexError::Passages)?;
            passages
                .rename_ids(|id| crate::id_from_saved(id).into_owned())
                .map_err(OpenIndexError::Passages)?;
            named.set_passages(passages);
        }
        Ok(named)
    }

    /// Writes the stored documents to `dir` as a saved index (the format of `neardup dedup
    /// --save-index`, ids as JSON strings as `dedup` writes them), each file atomically.
    pub fn save(&self, dir: &std::path::Path) -> Result<(), DedupError> {
        let json: FxHashMap<u64, String> =
            self.id_of.iter().map(|(&k, id)| (k, crate::id_to_json(id))).collect();
        let lock = crate::IndexLock::acquire(dir)?;
        self.engine.save_locked(&lock, |k| json[&k].as_str())?;
        if let Some(p) = &self.passages {
            p.save_with_ids(&lock, crate::id_to_json).map_err(|e| match e {
                OverlapError::Io { path, source, .. } => DedupError::Io { path, source },
                other => DedupError::Corrupt {
                    path: dir.join(crate::overlap::PASSAGE_INDEX_FILE),
                    message: other.to_string(),
                },
            })?;
        }
        Ok(())
    }
}

/// One check: "is this a near-duplicate of a stored document? If not (and `insert`), store it".
#[derive(Debug, Clone, Copy)]
pub struct Check<'a> {
    /// The document's id.
    pub id: &'a str,
    /// Its sketch.
    pub sketch: &'a DocSketch,
    /// Store it when it is not a duplicate.
    pub insert: bool,
    /// The threshold of this check (the configured one when `None`).
    pub threshold: Option<f64>,
    /// The most matches to return.
    pub top_k: usize,
}

/// The answer to a [`Check`].
#[derive(Debug, Clone, PartialEq)]
pub struct CheckAnswer {
    /// The similar documents, most similar first (ties by id).
    pub matches: Vec<(String, f64)>,
    /// True when some stored (or earlier accepted) document is similar.
    pub duplicate: bool,
    /// True when the document is to be stored.
    pub inserted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Document, Pipeline, PipelineSpec, Scratch, SearchConfig};

    #[test]
    fn ids_name_documents_through_replace_remove_and_search() {
        let pipeline = Arc::new(Pipeline::new(PipelineSpec::default()).expect("valid"));
        let index =
            NamedEngine::new(Engine::new(pipeline, SearchConfig::default()).expect("valid"));
        let text = "the quick brown fox jumps over the lazy dog near the river bank today";
        let sketch =
            |t: &str| index.engine().sketch(Document::Text(t), t.len(), &mut Scratch::default());
        let (a, other) = (sketch(text), sketch("an entirely different sentence about trains"));
        let mut index = index;
        index.insert("b", other.clone());
        index.insert("a", a.clone());
        index.insert("b", other); // a replacement keeps its first place
        assert_eq!(index.ids(), ["b", "a"]);
        assert_eq!(index.len(), 2);
        assert_eq!(index.search(&a, None, 10, None).expect("at"), [("a".to_string(), 1.0)]);
        assert!(index.search(&a, None, 10, Some("a")).expect("at").is_empty());
        assert!(index.remove("a") && !index.remove("a") && !index.contains("a"));
        assert!(index.search(&a, None, 10, None).expect("at").is_empty());
        assert_eq!(index.ids(), ["b"]);
    }

    #[test]
    fn an_index_saved_opens_with_its_job_ids_and_passages() {
        let spec = PipelineSpec::preset("shingles").expect("preset");
        let pipeline = Arc::new(Pipeline::new(spec).expect("valid"));
        let config = SearchConfig { threshold: 0.6, ..SearchConfig::default() };
        let engine = Engine::new(pipeline, config).expect("valid");
        let mut index =
            NamedEngine::new(engine).with_passages(OverlapSpec::default()).expect("passages");
        let texts = [
            ("7", "the quick brown fox jumps over the lazy dog near the river bank today"),
            ("x", "an entirely different sentence about trains and stations and timetables"),
        ];
        for (id, text) in texts {
            let sketch =
                index.engine().sketch(Document::Text(text), text.len(), &mut Scratch::default());
            index.insert_with_text(id, sketch, Some(text.to_string()));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        index.save(dir.path()).expect("saved");
        let opened = NamedEngine::open(dir.path()).expect("opens");
        assert_eq!(opened.ids(), index.ids());
        assert_eq!(opened.engine().config().threshold, 0.6);
        assert_eq!(opened.engine().pipeline().id(), index.engine().pipeline().id());
        let q = texts[0].1;
        let sketch = opened.engine().sketch(Document::Text(q), q.len(), &mut Scratch::default());
        assert_eq!(opened.search(&sketch, None, 10, None).expect("at"), [("7".to_string(), 1.0)]);
        let passages = opened.passages().expect("kept");
        let found = passages.check(None, q, &[]).expect("check");
        assert_eq!(found.copied_chars, q.chars().count() as u64);
        assert_eq!(passages.id(found.sources[0].source), "7", "the id as it was stored");
    }

    /// A store's index for the tests: documents by id with their first-storing order and
    /// candidate keys, the candidates found by a scan of the keys (brute force).
    struct KeyedStore {
        docs: Vec<(String, u64, DocSketch, Vec<u64>)>,
        next: u64,
    }

    impl KeyedStore {
        fn put(&mut self, engine: &Engine, id: &str, sketch: DocSketch) {
            let keys = engine.candidate_keys(&sketch);
            match self.docs.iter_mut().find(|d| d.0 == id) {
                Some(d) => (d.2, d.3) = (sketch, keys),
                None => {
                    self.docs.push((id.to_string(), self.next, sketch, keys));
                    self.next += 1;
                }
            }
        }
    }

    impl StoredIndex for KeyedStore {
        fn documents(&self) -> Result<usize, SourceError> {
            Ok(self.docs.len())
        }
        fn candidates(&self, keys: Option<&[u64]>) -> Result<Vec<StoredDoc>, SourceError> {
            Ok(self
                .docs
                .iter()
                .filter(|d| keys.is_none_or(|k| d.3.iter().any(|x| k.contains(x))))
                .map(|d| StoredDoc { id: d.0.clone(), order: d.1, sketch: d.2.clone() })
                .collect())
        }
    }

    fn texts() -> impl proptest::strategy::Strategy<Value = Vec<String>> {
        use proptest::prelude::*;
        let word = prop::sample::select(vec!["a", "b", "c", "d", "e", "f", "g", "h"]);
        prop::collection::vec(prop::collection::vec(word, 0..12).prop_map(|w| w.join(" ")), 1..30)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// An engine that holds no document, searching a store's index, answers every search
        /// and every group of checks as one holding the documents: by the index and by a scan,
        /// for each method, after replacements, ties to the earlier stored.
        #[test]
        fn a_stores_index_answers_as_the_engines_own(
            texts in texts(),
            method in proptest::sample::select(vec![
                crate::Method::MinHash, crate::Method::SimHash, crate::Method::Both,
            ]),
            threshold in proptest::sample::select(vec![None, Some(0.3), Some(0.95)]),
        ) {
            let p = Arc::new(Pipeline::new(PipelineSpec::preset("shingles").expect("preset"))
                .expect("valid"));
            let config = SearchConfig { method, threshold: 0.5, ..SearchConfig::default() };
            let mut resident = NamedEngine::new(Engine::new(p.clone(), config.clone()).expect("valid"));
            let bare = NamedEngine::new(Engine::new(p, config).expect("valid"));
            let mut store = KeyedStore { docs: Vec::new(), next: 0 };
            let mut scratch = Scratch::default();
            let sketches: Vec<DocSketch> = texts
                .iter()
                .map(|t| resident.engine().sketch(Document::Text(t), t.len(), &mut scratch))
                .collect();
            for (i, sk) in sketches.iter().enumerate() {
                let id = format!("d{}", i % 17);
                resident.insert(&id, sk.clone());
                store.put(bare.engine(), &id, sk.clone());
            }
            for (i, q) in sketches.iter().enumerate() {
                let except = format!("d{}", i % 5);
                let want = resident.search(q, threshold, 7, Some(&except)).expect("planned");
                let got = bare
                    .search_in(q, threshold, 7, Some(&except), Stored::Index(&store))
                    .expect("read")
                    .expect("planned");
                proptest::prop_assert_eq!(got, want);
            }
            let ids: Vec<String> = (0..sketches.len()).map(|i| format!("n{}", i % 9)).collect();
            let checks: Vec<Check<'_>> = sketches
                .iter()
                .zip(&ids)
                .map(|(sketch, id)| Check { id, sketch, insert: true, threshold, top_k: 3 })
                .collect();
            let want = resident.decide_checks(&checks);
            let got = bare.decide_checks_in(&checks, Stored::Index(&store)).expect("read");
            proptest::prop_assert_eq!(got, want);
        }
    }

    /// Regression: the service's group commit compared a check with the documents accepted
    /// earlier in its group without the candidate search, so with a banding that misses some
    /// pairs a grouped check could find a duplicate that one-at-a-time checks do not.
    #[test]
    fn grouped_checks_answer_as_one_at_a_time_checks() {
        // Four bands of 8 rows: a pair at Jaccard 0.8 collides about half the time, so the
        // candidate search decides many answers, and a shortcut around it would show.
        let config =
            SearchConfig { threshold: 0.5, banding: Some((4, 8)), ..SearchConfig::default() };
        // Words: two edits of forty words leave two variants at Jaccard about 0.8.
        let spec =
            PipelineSpec { features: neardup_text::FeatureKind::Words, ..PipelineSpec::default() };
        let pipeline = Arc::new(Pipeline::new(spec).expect("valid"));
        let fresh =
            || NamedEngine::new(Engine::new(pipeline.clone(), config.clone()).expect("valid"));
        // Letters only, so that each is one word to every segmenter.
        let name = |n: usize| -> String {
            let (a, b) = (n / 26, n % 26);
            format!("w{}{}", char::from(b'a' + a as u8), char::from(b'a' + b as u8))
        };
        let base: Vec<String> = (0..40).map(name).collect();
        let texts: Vec<String> = (0..30)
            .map(|v| {
                let mut w = base.clone();
                for k in 0..2 {
                    w[(v * 7 + k * 5) % 40] = format!("edit{}", name(v * 2 + k));
                }
                w.join(" ")
            })
            .collect();
        let mut stored = fresh();
        let mut scratch = Scratch::default();
        let sketches: Vec<DocSketch> = texts
            .iter()
            .map(|t| stored.engine().sketch(Document::Text(t), t.len(), &mut scratch))
            .collect();
        // Some documents stored first, one with an id the group upserts.
        for (i, s) in sketches.iter().enumerate().take(5) {
            stored.insert(&format!("d{i}"), s.clone());
        }
        let ids: Vec<String> = (3..30).map(|i| format!("d{i}")).collect();
        let checks: Vec<Check<'_>> = (3..30)
            .map(|i| Check {
                id: &ids[i - 3],
                sketch: &sketches[i],
                insert: true,
                threshold: None,
                top_k: 5,
            })
            .collect();
        let grouped = stored.decide_checks(&checks);

        let mut one_by_one = Vec::new();
        for c in &checks {
            let answer = stored.decide_checks(std::slice::from_ref(c)).remove(0);
            if answer.inserted {
                stored.insert(c.id, c.sketch.clone());
            }
            one_by_one.push(answer);
        }
        assert_eq!(grouped, one_by_one);
        let accepted = grouped.iter().filter(|a| a.inserted).count();
        assert!(accepted > 0 && accepted < checks.len(), "{accepted} accepted: a mixed group");
        // And the candidate search mattered: some accepted document is similar enough to an
        // earlier one, but was not its candidate.
        let engine = stored.engine();
        let missed = (0..checks.len()).any(|i| {
            grouped[i].inserted
                && (0..i).any(|j| {
                    grouped[j].inserted
                        && engine.similarity(checks[i].sketch, checks[j].sketch, None).is_some()
                })
        });
        assert!(missed, "no pair left to the candidate search: the test would not see a shortcut");
    }
}
