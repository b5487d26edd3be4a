//! `dedup`: the corpus dedup of `neardup dedup`, over a batch in memory.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use rayon::prelude::*;

use neardup::{Dedup, DedupOutcome, Document, Scratch, SearchConfig, SearchSpec, SearchUse};
use pyo3::types::PyDict;

use crate::interrupt::{interruptible, wants_progress};
use crate::pipeline::PyPipeline;
use crate::texts::Source;
use crate::values::to_json;
use crate::{dedup_error, guard};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDedupResult>()?;
    m.add_function(wrap_pyfunction!(dedup_texts, m)?)?;
    m.add_function(wrap_pyfunction!(rank_values, m)?)?;
    m.add_function(wrap_pyfunction!(keep_order, m)?)?;
    m.add_function(wrap_pyfunction!(job_spec, m)?)?;
    m.add_function(wrap_pyfunction!(option_table_json, m)?)?;
    m.add_function(wrap_pyfunction!(format_summary, m)?)?;
    Ok(())
}

/// The search settings of a call from its keyword arguments (`None`: not given), each set by
/// its name through the library's one table ([`SearchSpec::set`]), then resolved by its rules:
/// the same defaults, inferences and messages as the CLI, the service and Spark.
pub(crate) fn search_config(
    options: &[(&str, Option<&Bound<'_, PyAny>>)],
    usage: SearchUse,
) -> PyResult<SearchConfig> {
    search_spec(options, usage)?.resolve().map_err(crate::errors::search_error)
}

/// The search options of a call as given (not yet resolved).
fn search_spec(
    options: &[(&str, Option<&Bound<'_, PyAny>>)],
    usage: SearchUse,
) -> PyResult<SearchSpec> {
    let mut spec = SearchSpec::default();
    for (name, value) in options {
        if let Some(value) = value {
            spec.set(name, &to_json(value, name)?, usage).map_err(crate::errors::search_error)?;
        }
    }
    Ok(spec)
}

/// The search options of a dict of keyword arguments, as given.
fn search_spec_from_dict(
    options: Option<&Bound<'_, PyDict>>,
    usage: SearchUse,
) -> PyResult<SearchSpec> {
    let Some(options) = options else { return Ok(SearchSpec::default()) };
    let mut pairs = Vec::with_capacity(options.len());
    for (k, v) in options.iter() {
        let name: String = k.extract()?;
        pairs.push((name, v));
    }
    let borrowed: Vec<(&str, Option<&Bound<'_, PyAny>>)> =
        pairs.iter().map(|(n, v)| (n.as_str(), Some(v))).collect();
    search_spec(&borrowed, usage)
}

/// The search settings of a call given as a dict of keyword arguments, resolved.
pub(crate) fn search_config_from_dict(
    options: Option<&Bound<'_, PyDict>>,
    usage: SearchUse,
) -> PyResult<SearchConfig> {
    search_spec_from_dict(options, usage)?.resolve().map_err(crate::errors::search_error)
}

/// The library's `JobSpec` of a batch run as JSON: the pipeline's spec and the search options
/// by name, checked (every default and rule applied by the library). Spark ships it to its
/// executors.
#[pyfunction]
#[pyo3(signature = (pipeline = None, options = None))]
fn job_spec(
    pipeline: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    guard(|| {
        let pipeline = PyPipeline::or_default(pipeline)?;
        let job = neardup::JobSpec {
            pipeline: pipeline.spec().clone(),
            search: search_spec_from_dict(options, SearchUse::Batch)?,
            passages: None,
        };
        neardup::CompiledJob::new(
            pipeline,
            job.search.resolve().map_err(crate::errors::search_error)?,
        )
        .map_err(crate::errors::job_error)?;
        Ok(job.to_json())
    })
}

/// A summary (the library's fields, as JSON) as `neardup dedup` prints it; an unknown field is
/// refused by name. `runner`: the summary is another runner's (Spark's), whose own fields are
/// left out ([`neardup::Summary::from_runner`]).
#[pyfunction]
#[pyo3(signature = (summary, runner = false))]
fn format_summary(summary: &str, runner: bool) -> PyResult<String> {
    let bad = |e: serde_json::Error| crate::errors::input(format!("summary: {e}"));
    let summary: neardup::Summary = if runner {
        let value: serde_json::Value = serde_json::from_str(summary).map_err(bad)?;
        neardup::Summary::from_runner(&value).map_err(bad)?
    } else {
        serde_json::from_str(summary).map_err(bad)?
    };
    Ok(summary.to_string())
}

/// The library's option table ([`neardup::option_table`]) as JSON text: a list of rows
/// `{"name", "group", "kind", "default", "min", "max", "choices", "takes", "doc", "cli",
/// "python", "http", "spark"}`, as `neardup options --json` prints it.
#[pyfunction]
fn option_table_json() -> PyResult<String> {
    serde_json::to_string(&neardup::option_table()).map_err(|e| crate::errors::input(e.to_string()))
}

/// Deduplicates a batch of texts: the same clusters as `neardup dedup` on the same documents.
/// `options`: the search options by name (`neardup.dedup`'s keywords).
/// `ranks`: under `keep="max:FIELD"` or `"min:FIELD"`, each document's value of the field as
/// JSON text (`null` for none), read by the library's rule ([`neardup::Rank::from_json`]).
/// `ids`: each document's id as the library's id text (`None`: no id), whose repeats the
/// summary counts as `neardup dedup`'s does ([`neardup::RepeatedIds`]); the records stay
/// separate documents.
#[pyfunction]
#[pyo3(signature = (texts, options = None, pipeline = None, progress = None, ranks = None,
                    ids = None))]
fn dedup_texts(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyDict>>,
    pipeline: Option<&Bound<'_, PyAny>>,
    progress: Option<bool>,
    ranks: Option<Vec<String>>,
    ids: Option<Vec<Option<String>>>,
) -> PyResult<PyDedupResult> {
    guard(|| {
        let config = search_config_from_dict(options, SearchUse::Batch)?;
        let pipeline = PyPipeline::or_default(pipeline)?;
        let source = Source::from_py(texts)?;
        let texts = source.texts()?;
        let ranks = parse_ranks(&config, ranks, texts.len())?;
        let progress = wants_progress(py, progress).then_some(("sketched", texts.len() as u64));
        interruptible(py, progress, |stop| -> PyResult<PyDedupResult> {
            let mut dedup = Dedup::new(&pipeline, config).map_err(dedup_error)?;
            let sketches: Vec<_> = texts
                .par_iter()
                .map_init(Scratch::default, |s, t| {
                    // Interrupted: the rest is not sketched (the call raises KeyboardInterrupt).
                    (!stop.is_set()).then(|| {
                        stop.advance(1);
                        dedup.sketch(Document::Text(t), t.len(), s)
                    })
                })
                .collect();
            stop.check()?;
            for (row, s) in sketches.into_iter().flatten().enumerate() {
                let rank = ranks.get(row).copied().flatten();
                dedup.push_ranked(s, rank).map_err(|e| match e {
                    e @ neardup::DedupError::MixedRanks { .. } => {
                        crate::errors::input(format!("row {row}: {e}"))
                    }
                    e => dedup_error(e),
                })?;
            }
            let outcome = dedup.run().map_err(dedup_error)?;
            let mut summary = neardup::Summary::of(&dedup, &outcome);
            summary.bytes = Some(texts.iter().map(|t| t.len() as u64).sum());
            let mut repeated = neardup::RepeatedIds::default();
            for id in ids.iter().flatten().flatten() {
                repeated.note(id);
            }
            summary.repeated_ids = repeated.records() as u64;
            summary.repeated_id_examples = repeated.examples().to_vec();
            Ok(PyDedupResult {
                summary,
                banding: dedup.banding(),
                candidate_probability: dedup.candidate_probability(),
                verification: dedup.verification().name(),
                outcome,
            })
        })
    })
}

/// The documents' values of the keep rule's field, from their JSON texts; an error names the
/// row. Without a field rule there are none.
fn parse_ranks(
    config: &SearchConfig,
    ranks: Option<Vec<String>>,
    n: usize,
) -> PyResult<Vec<Option<neardup::Rank>>> {
    let (Some(field), Some(ranks)) = (config.keep.field(), ranks) else {
        return Ok(Vec::new());
    };
    if ranks.len() != n {
        let message = format!("{} values of {field:?} for {n} documents", ranks.len());
        return Err(crate::errors::input(message));
    }
    ranks.iter().enumerate().map(|(row, json)| parse_rank(row, json, field)).collect()
}

/// One value of the keep rule's field, from its JSON text.
fn parse_rank(row: usize, json: &str, field: &str) -> PyResult<Option<neardup::Rank>> {
    let bad =
        |e: String| crate::errors::input(format!("row {row}: column {field:?} (of keep): {e}"));
    // From the text, as the CLI reads a record's field: an integer past 2^53 (Python's ints
    // have every digit) or a time to the nanosecond keeps its order. Python's json writes
    // non-finite floats bare: NaN is no value, the infinities are values at the ends, as in
    // the CLI.
    let rank = match json.trim() {
        t @ ("NaN" | "Infinity" | "-Infinity") => neardup::Rank::parse_value(t),
        t => neardup::Rank::from_json_text(t),
    };
    rank.map_err(bad)
}

/// Ranks as two numpy arrays: each value's sort key (n x 20 bytes, zeros for none) and kind.
type RankArrays<'py> = (Bound<'py, numpy::PyArray2<u8>>, Bound<'py, PyArray1<i8>>);

/// The keep rule's values of a batch of rows (Spark's sketch stage): each value's sort key
/// ([`neardup::Rank::sort_key`]: bytes in the exact order of the values, which a double would
/// round) and kind (0 none, 1 number, 2 date), as the library reads them from their JSON
/// texts; `first_row` numbers the rows in messages.
#[pyfunction]
fn rank_values<'py>(
    py: Python<'py>,
    values: Vec<String>,
    field: &str,
    first_row: usize,
) -> PyResult<RankArrays<'py>> {
    let mut keys = Vec::with_capacity(values.len() * 20);
    let mut kinds = Vec::with_capacity(values.len());
    for (i, json) in values.iter().enumerate() {
        let rank = parse_rank(first_row + i, json, field)?;
        keys.extend_from_slice(&rank.map_or([0; 20], |r| r.sort_key()));
        kinds.push(rank_kind(rank.as_ref()));
    }
    let keys = numpy::ndarray::Array2::from_shape_vec((values.len(), 20), keys)
        .map_err(|e| crate::errors::input(e.to_string()))?;
    Ok((keys.into_pyarray(py), kinds.into_pyarray(py)))
}

/// The keep rule as a sort of a cluster's members, best first ([`neardup::Keep::order`]):
/// `(column, descending)` pairs over `len`, `rank` (values missing last) and `pos`, for Spark's
/// window to keep the document the library keeps.
#[pyfunction]
fn keep_order(keep: &str) -> PyResult<Vec<(String, bool)>> {
    let keep: neardup::Keep = keep.parse().map_err(crate::errors::option)?;
    Ok(keep
        .order()
        .iter()
        .map(|(by, descending)| {
            let name = serde_json::to_value(by).expect("a plain name");
            (name.as_str().unwrap_or_default().to_string(), *descending)
        })
        .collect())
}

/// A rank's kind as Spark's column holds it: 0 none, 1 number, 2 date.
pub(crate) fn rank_kind(rank: Option<&neardup::Rank>) -> i8 {
    match rank.map(|r| r.kind) {
        None => 0,
        Some(neardup::RankKind::Number) => 1,
        Some(neardup::RankKind::Time) => 2,
    }
}

/// Pairs as three numpy arrays: first positions, second positions, similarities.
type PairArrays<'py> =
    (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f64>>);

/// The result of a dedup run, by document position (the `neardup` package maps positions to
/// ids).
#[pyclass(frozen, module = "neardup._neardup", name = "DedupResult")]
pub(crate) struct PyDedupResult {
    outcome: DedupOutcome,
    summary: neardup::Summary,
    banding: Option<(usize, usize)>,
    candidate_probability: Option<f64>,
    verification: &'static str,
}

#[pymethods]
impl PyDedupResult {
    /// The library's summary of the run as JSON (the fields `neardup dedup` prints).
    fn summary_json(&self) -> String {
        serde_json::to_string(&self.summary).expect("a summary is plain data")
    }

    /// The summary as `neardup dedup` prints it.
    fn summary_text(&self) -> String {
        self.summary.to_string()
    }

    /// Documents.
    #[getter]
    fn documents(&self) -> usize {
        self.outcome.kept.len()
    }

    /// Whether each document is kept, as a numpy bool array.
    #[getter]
    fn keep_mask<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        PyArray1::from_slice(py, &self.outcome.kept)
    }

    /// Each document's cluster index, or -1 when it is alone (numpy int64).
    #[getter]
    fn cluster_of<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self.outcome.cluster_of.iter().map(|c| c.map_or(-1, i64::from)).collect();
        v.into_pyarray(py)
    }

    /// The clusters of two or more documents, ordered by first member: `(members, keep,
    /// similarity)` with members ascending and similarity the weakest verified link.
    #[getter]
    fn clusters(&self) -> Vec<(Vec<u32>, u32, f64)> {
        self.outcome.clusters.iter().map(|c| (c.members.clone(), c.keep, c.similarity)).collect()
    }

    /// Every pair at or above the threshold, copies included, as three numpy arrays `(a, b,
    /// similarity)` with `a < b` (`compact=True`: the compact form instead).
    #[pyo3(signature = (compact = false))]
    fn pairs<'py>(&self, py: Python<'py>, compact: bool) -> PairArrays<'py> {
        let (mut a, mut b, mut s) = (Vec::new(), Vec::new(), Vec::new());
        let mut push = |p: neardup::Pair| {
            a.push(p.a);
            b.push(p.b);
            s.push(p.similarity);
        };
        if compact {
            self.outcome.compact_pairs().for_each(&mut push);
        } else {
            self.outcome.pairs().for_each(&mut push);
        }
        (a.into_pyarray(py), b.into_pyarray(py), s.into_pyarray(py))
    }

    /// How many pairs `pairs()` gives.
    #[getter]
    fn pair_count(&self) -> u64 {
        self.outcome.pair_count()
    }

    /// Candidate pairs checked.
    #[getter]
    fn candidates(&self) -> usize {
        self.outcome.candidates
    }

    /// Pairs verified between distinct texts.
    #[getter]
    fn verified(&self) -> usize {
        self.outcome.edges.len()
    }

    /// Documents merged into an earlier exact copy before the search.
    #[getter]
    fn exact_duplicates(&self) -> usize {
        self.outcome.exact_duplicates
    }

    /// Documents dropped.
    #[getter]
    fn dropped(&self) -> usize {
        self.outcome.kept.iter().filter(|k| !**k).count()
    }

    /// The LSH `(bands, rows)` (MinHash), or None.
    #[getter]
    fn banding(&self) -> Option<(usize, usize)> {
        self.banding
    }

    /// The probability that a pair exactly at the threshold becomes a candidate (MinHash).
    #[getter]
    fn candidate_probability(&self) -> Option<f64> {
        self.candidate_probability
    }

    /// The verification measure.
    #[getter]
    fn verification(&self) -> &'static str {
        self.verification
    }
}
