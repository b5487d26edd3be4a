//! `dedup`: the corpus dedup of `neardup dedup`, over a batch in memory.

use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;

use neardup::{
    Dedup, DedupConfig, DedupOutcome, Document, Keep, Method, Scratch, SearchSpec, Verification,
};

use crate::pipeline::PyPipeline;
use crate::texts::Source;
use crate::{dedup_error, guard};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDedupResult>()?;
    m.add_function(wrap_pyfunction!(dedup_texts, m)?)?;
    Ok(())
}

fn pick<T: Copy>(what: &str, value: &str, table: &[(&str, T)]) -> PyResult<T> {
    table.iter().find(|(n, _)| *n == value).map(|(_, v)| *v).ok_or_else(|| {
        let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        PyValueError::new_err(format!("{what} {value:?}: expected one of {}", names.join(", ")))
    })
}

/// The configuration of a run from the arguments of `neardup.dedup` (the options of
/// `neardup dedup`, with the same checks for contradictions).
#[allow(clippy::too_many_arguments)]
pub(crate) fn config(
    threshold: f64,
    method: Option<&str>,
    hamming: Option<u32>,
    verify: Option<&str>,
    keep: &str,
    recall: Option<f64>,
    bands: Option<usize>,
    rows: Option<usize>,
) -> PyResult<DedupConfig> {
    let method = method
        .map(|m| {
            pick(
                "method",
                m,
                &[
                    ("minhash", Method::MinHash),
                    ("simhash", Method::SimHash),
                    ("both", Method::Both),
                ],
            )
        })
        .transpose()?;
    let verify = verify
        .map(|v| {
            pick(
                "verify",
                v,
                &[
                    ("jaccard", Verification::Jaccard),
                    ("cosine", Verification::Cosine),
                    ("hamming", Verification::Hamming),
                    ("estimate", Verification::Estimate),
                ],
            )
        })
        .transpose()?;
    let keep = pick(
        "keep",
        keep,
        &[("first", Keep::First), ("longest", Keep::Longest), ("shortest", Keep::Shortest)],
    )?;
    let spec = SearchSpec {
        method,
        threshold: Some(threshold),
        hamming,
        verify,
        bands,
        rows,
        recall,
        lsh_weights: None,
        keep: Some(keep),
    };
    // The library's rules, with the option named as the keyword it is here.
    let config = spec.resolve().map_err(|e| PyValueError::new_err(e.to_string()))?;
    // A Python list is in memory already; its sketches stay there too (no spill directory).
    Ok(config)
}

/// Deduplicates a batch of texts: the same clusters as `neardup dedup` on the same documents.
#[pyfunction]
#[pyo3(signature = (texts, threshold = 0.8, method = None, hamming = None, verify = None,
                    keep = "first", recall = None, bands = None, rows = None, pipeline = None))]
#[allow(clippy::too_many_arguments)]
fn dedup_texts(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    threshold: f64,
    method: Option<&str>,
    hamming: Option<u32>,
    verify: Option<&str>,
    keep: &str,
    recall: Option<f64>,
    bands: Option<usize>,
    rows: Option<usize>,
    pipeline: Option<&Bound<'_, PyPipeline>>,
) -> PyResult<PyDedupResult> {
    guard(|| {
        let config = config(threshold, method, hamming, verify, keep, recall, bands, rows)?;
        let pipeline = PyPipeline::or_default(pipeline)?;
        let source = Source::from_py(texts)?;
        let texts = source.texts()?;
        py.detach(|| -> PyResult<PyDedupResult> {
            let mut dedup = Dedup::new(&pipeline, config).map_err(dedup_error)?;
            let sketches: Vec<_> = texts
                .par_iter()
                .map_init(Scratch::default, |s, t| dedup.sketch(Document::Text(t), t.len(), s))
                .collect();
            for s in sketches {
                dedup.push(s).map_err(dedup_error)?;
            }
            let outcome = dedup.run().map_err(dedup_error)?;
            Ok(PyDedupResult {
                banding: dedup.banding(),
                candidate_probability: dedup.candidate_probability(),
                verification: dedup.verification().name(),
                outcome,
            })
        })
    })
}

/// Pairs as three numpy arrays: first positions, second positions, similarities.
type PairArrays<'py> =
    (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f64>>);

/// The result of a dedup run, by document position (the `neardup` package maps positions to
/// ids).
#[pyclass(frozen, module = "neardup._neardup", name = "DedupResult")]
pub(crate) struct PyDedupResult {
    outcome: DedupOutcome,
    banding: Option<(usize, usize)>,
    candidate_probability: Option<f64>,
    verification: &'static str,
}

#[pymethods]
impl PyDedupResult {
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
