//! `Index`: a live collection (`neardup::NamedEngine`: an engine with string ids), safe to share between
//! threads (one lock; searches share it, writes take it alone, sketching runs outside it with the
//! GIL released).

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList};
use rayon::prelude::*;

use neardup::overlap::{OverlapSpec, PassageIndex};
use neardup::{DocSketch, Engine, NamedEngine, Pipeline, Scratch, SearchConfig};

use crate::dedup::search_config;
use crate::interrupt::{interruptible, wants_progress};
use crate::overlap::{check_snapshot, overlap_error, spec_from_options};
use crate::pipeline::{doc_from_py, Doc, PyPipeline};
use crate::texts::Source;
use crate::values::doc_id;
use crate::{build_error, dedup_error, guard};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyIndex>()?;
    Ok(())
}

/// The index with its ids: the library's, as the service's collections hold it.
type State = NamedEngine;

/// A live index of documents by id: insert, remove, search and check (near-duplicate of
/// anything stored? if not, insert it), with the same sketches and exact verification as
/// `neardup dedup` and `neardup serve`. Thread-safe: share one index between threads.
#[pyclass(frozen, module = "neardup._neardup", name = "Index")]
pub(crate) struct PyIndex {
    pipeline: Arc<Pipeline>,
    state: RwLock<State>,
}

fn poisoned<T>(_: T) -> PyErr {
    crate::errors::input("the index lock is poisoned by an earlier panic")
}

impl PyIndex {
    fn with_config(
        pipeline: Arc<Pipeline>,
        config: SearchConfig,
        passages: Option<OverlapSpec>,
    ) -> PyResult<PyIndex> {
        let engine = Engine::new(pipeline.clone(), config).map_err(dedup_error)?;
        let mut named = NamedEngine::new(engine);
        if let Some(spec) = passages {
            named.set_passages(PassageIndex::new(spec).map_err(overlap_error)?);
        }
        Ok(PyIndex { pipeline, state: RwLock::new(named) })
    }

    /// Sketches one document. Like every use of the lock, with the GIL released: a thread that
    /// held the GIL while waiting for the lock would deadlock with one that holds the lock and
    /// waits for the GIL.
    fn sketch(&self, py: Python<'_>, doc: &Doc) -> PyResult<DocSketch> {
        py.detach(|| {
            let state = self.state.read().map_err(poisoned)?;
            Ok(state.engine().sketch(doc.as_document(), doc.len(), &mut Scratch::default()))
        })
    }

    /// Runs `f` under the write lock, with the GIL released.
    fn write<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut State) -> T + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut state = self.state.write().map_err(poisoned)?;
            Ok(f(&mut state))
        })
    }

    /// Runs `f` under the read lock, with the GIL released.
    fn read<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&State) -> T + Send) -> PyResult<T> {
        py.detach(|| Ok(f(&*self.state.read().map_err(poisoned)?)))
    }
}

#[pymethods]
impl PyIndex {
    #[new]
    #[pyo3(signature = (pipeline = None, threshold = None, method = None, hamming = None,
                        verify = None, recall = None, bands = None, rows = None,
                        lsh_weights = None, passages = None, **unknown))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        pipeline: Option<&Bound<'_, PyAny>>,
        threshold: Option<&Bound<'_, PyAny>>,
        method: Option<&Bound<'_, PyAny>>,
        hamming: Option<&Bound<'_, PyAny>>,
        verify: Option<&Bound<'_, PyAny>>,
        recall: Option<&Bound<'_, PyAny>>,
        bands: Option<&Bound<'_, PyAny>>,
        rows: Option<&Bound<'_, PyAny>>,
        lsh_weights: Option<&Bound<'_, PyAny>>,
        passages: Option<&Bound<'_, PyAny>>,
        unknown: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        guard(|| {
            if let Some(unknown) = unknown.filter(|u| !u.is_empty()) {
                // Python's own message names only the keyword; say what Index takes instead.
                let takes = [
                    "pipeline",
                    "threshold",
                    "method",
                    "hamming",
                    "verify",
                    "recall",
                    "bands",
                    "rows",
                    "lsh_weights",
                    "passages",
                ];
                let py = unknown.py();
                py.import("neardup.errors")?
                    .call_method1("check_keywords", ("Index", unknown.keys(), takes.to_vec()))?;
            }
            let config = search_config(
                &[
                    ("threshold", threshold),
                    ("method", method),
                    ("hamming", hamming),
                    ("verify", verify),
                    ("recall", recall),
                    ("bands", bands),
                    ("rows", rows),
                    ("lsh_weights", lsh_weights),
                ],
                neardup::SearchUse::Collection,
            )?;
            let passages = match passages {
                None => None,
                Some(p) if p.is_instance_of::<PyBool>() => {
                    p.extract::<bool>()?.then(OverlapSpec::default)
                }
                Some(p) => match p.cast::<PyDict>() {
                    Ok(options) => Some(spec_from_options(Some(options))?),
                    Err(_) => {
                        return Err(crate::errors::input_type(format!(
                            "passages: expected True, False or a dict of passage options ({})",
                            neardup::overlap::OverlapOptions::NAMES.join(", ")
                        )))
                    }
                },
            };
            PyIndex::with_config(PyPipeline::or_default(pipeline)?, config, passages)
        })
    }

    /// Stores (or replaces) one document.
    fn insert(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        text: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        guard(|| {
            let id = &doc_id(id, "id")?;
            let doc = doc_from_py(text, "text")?;
            let sketch = self.sketch(py, &doc)?;
            self.write(py, |state| {
                // The text is kept only by an index that keeps passages.
                let text = state.passages().is_some().then(|| doc.into_display_text());
                state.insert_with_text(id, sketch, text)
            })
        })
    }

    /// Stores (or replaces) many documents, sketched on every core with the GIL released.
    /// Ctrl-C interrupts it (nothing is stored); `progress` draws a line on stderr (default:
    /// when it is a terminal).
    #[pyo3(signature = (ids, texts, progress = None))]
    fn insert_many(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        texts: &Bound<'_, PyAny>,
        progress: Option<bool>,
    ) -> PyResult<()> {
        guard(|| {
            let ids = ids
                .try_iter()?
                .enumerate()
                .map(|(i, id)| doc_id(&id?, &format!("ids[{i}]")))
                .collect::<PyResult<Vec<String>>>()?;
            let source = Source::from_py(texts)?;
            let texts = source.texts()?;
            if ids.len() != texts.len() {
                return Err(crate::errors::input(format!(
                    "{} ids for {} texts",
                    ids.len(),
                    texts.len()
                )));
            }
            let shown = wants_progress(py, progress).then_some(("sketched", texts.len() as u64));
            let sketches: Vec<DocSketch> = interruptible(py, shown, |stop| {
                let state = self.state.read().map_err(poisoned)?;
                let sketches: Vec<Option<DocSketch>> = texts
                    .par_iter()
                    .map_init(Scratch::default, |s, t| {
                        (!stop.is_set()).then(|| {
                            stop.advance(1);
                            state.engine().sketch(neardup::Document::Text(t), t.len(), s)
                        })
                    })
                    .collect();
                stop.check()?;
                Ok(sketches.into_iter().flatten().collect())
            })?;
            self.write(py, |state| {
                let keep = state.passages().is_some();
                for ((id, sketch), text) in ids.iter().zip(sketches).zip(&texts) {
                    state.insert_with_text(id, sketch, keep.then(|| text.to_string()));
                }
            })
        })
    }

    /// Removes a document; returns whether it was stored.
    fn remove(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<bool> {
        guard(|| {
            let id = doc_id(id, "id")?;
            self.write(py, |state| state.remove(&id))
        })
    }

    /// The stored documents similar to `text`, most similar first: `[(id, similarity)]`, at
    /// most `top_k` (10 by default).
    #[pyo3(signature = (text, top_k = None, threshold = None))]
    fn search(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        top_k: Option<&Bound<'_, PyAny>>,
        threshold: Option<f64>,
    ) -> PyResult<Vec<(String, f64)>> {
        guard(|| {
            let top_k = top_k.map_or(Ok(10), |k| crate::values::count("top_k", k))?;
            // NaN and the infinities have no JSON form (refused as every float option is); the
            // range, (0, 1], is the library's check.
            let threshold = crate::values::finite("threshold", threshold)?;
            let doc = doc_from_py(text, "text")?;
            let q = self.sketch(py, &doc)?;
            self.read(py, |state| state.search(&q, threshold, top_k, None))?
                .map_err(|e| crate::errors::option(e.to_string()))
        })
    }

    /// Is `text` a near-duplicate of anything stored? If not (and `insert`), store it under
    /// `id`, atomically. Returns `{"duplicate", "matches": [(id, similarity)], "inserted"}`.
    #[pyo3(signature = (id, text, insert = true, threshold = None, top_k = None))]
    fn check<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
        text: &Bound<'py, PyAny>,
        insert: bool,
        threshold: Option<f64>,
        top_k: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let id = &doc_id(id, "id")?;
            let top_k = top_k.map_or(Ok(10), |k| crate::values::count("top_k", k))?;
            let threshold = crate::values::finite("threshold", threshold)?;
            let doc = doc_from_py(text, "text")?;
            let q = self.sketch(py, &doc)?;
            let (matches, duplicate, inserted) = self.write(py, |state| {
                // Below the index's threshold: answered by a scan, or refused, never in part.
                state.plan_search(threshold).map_err(|e| crate::errors::option(e.to_string()))?;
                // The library's check, as the service's group commit decides it.
                let check = neardup::Check { id, sketch: &q, insert, threshold, top_k };
                let answer = state.decide_checks(&[check]).remove(0);
                if answer.inserted {
                    let text = state.passages().is_some().then(|| doc.into_display_text());
                    state.insert_with_text(id, q, text);
                }
                Ok::<_, PyErr>((answer.matches, answer.duplicate, answer.inserted))
            })??;
            let out = PyDict::new(py);
            out.set_item("duplicate", duplicate)?;
            out.set_item("matches", PyList::new(py, matches)?)?;
            out.set_item("inserted", inserted)?;
            Ok(out)
        })
    }

    /// The passage check of `text` against the stored documents (an index made with
    /// `passages=True`): which passages are copied from which stored documents, and how much.
    /// Returns the dict of `neardup.overlap` for one query: `chars`, `copied_chars`, `copied`,
    /// `excluded_chars`, `sources` (`[{"id", "chars", "copied"}]`), `passages` and `excluded`
    /// (quotations and references, left out of `copied`). `id` (the query's own id: a stored
    /// earlier version) and the ids in `exclude_source` are never its sources.
    #[pyo3(signature = (text, id = None, exclude_source = Vec::new()))]
    fn overlap<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
        id: Option<&Bound<'py, PyAny>>,
        exclude_source: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let id = id.map(|id| doc_id(id, "id")).transpose()?;
            let exclude_source = exclude_source
                .iter()
                .enumerate()
                .map(|(i, id)| doc_id(id, &format!("exclude_source[{i}]")))
                .collect::<PyResult<Vec<String>>>()?;
            let text = doc_from_py(text, "text")?.into_display_text();
            let snapshot = || Ok(self.state.read().map_err(poisoned)?.passages_snapshot());
            check_snapshot(py, snapshot, &text, id.as_deref(), &exclude_source)
        })
    }

    /// True when the index keeps the passages of its texts (`passages=True`).
    #[getter]
    fn passages(&self, py: Python<'_>) -> PyResult<bool> {
        self.read(py, |state| state.passages().is_some())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.read(py, |state| state.len())
    }

    fn __contains__(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(id) = doc_id(id, "id") else { return Ok(false) };
        self.read(py, |state| state.contains(&id))
    }

    /// The ids stored, in insertion order.
    fn ids(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.read(py, |state| state.ids().into_iter().map(str::to_string).collect())
    }

    /// The pipeline.
    #[getter]
    fn pipeline(&self) -> PyPipeline {
        PyPipeline { inner: self.pipeline.clone() }
    }

    /// The LSH `(bands, rows)` (MinHash), or None.
    #[getter]
    fn banding(&self, py: Python<'_>) -> PyResult<Option<(usize, usize)>> {
        self.read(py, |state| state.engine().banding())
    }

    /// Writes the index to a directory, in the format of `neardup dedup --save-index` (so
    /// `neardup dedup --against DIR` reads it), each file atomically.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        guard(|| self.read(py, |state| state.save(&path))?.map_err(dedup_error))
    }

    /// Opens an index written by `Index.save` or `neardup dedup --save-index`, with the
    /// pipeline and settings it was made with.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyIndex> {
        guard(|| {
            // Read with the GIL released: other threads run while a large index loads.
            let named = py.detach(|| NamedEngine::open(&path)).map_err(|e| match e {
                neardup::OpenIndexError::Index(e) => dedup_error(e),
                neardup::OpenIndexError::Job(neardup::JobError::Pipeline(e)) => build_error(e),
                neardup::OpenIndexError::Passages(e) => overlap_error(e),
                e @ neardup::OpenIndexError::RepeatedId { .. } => {
                    crate::errors::index_file(e.to_string())
                }
                e => crate::errors::input(format!("{}: {e}", path.display())),
            })?;
            let pipeline = named.engine().pipeline().clone();
            Ok(PyIndex { pipeline, state: RwLock::new(named) })
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("Index(documents={}, pipeline={:?})", self.__len__(py)?, self.pipeline.id()))
    }
}
