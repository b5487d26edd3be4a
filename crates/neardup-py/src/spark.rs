//! The two stages Spark runs in its executors (`neardup.spark`): sketching an Arrow batch of
//! texts into the columns the job shuffles, and verifying candidate pairs from their sketches.
//! Both use a `neardup::Engine`, so the sketches, the banding and the check are those of
//! `neardup dedup` for the same pipeline and settings.

use std::sync::Arc;

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use neardup::{DocSketch, Document, Engine, Scratch};

use crate::guard;
use crate::texts::Source;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySketcher>()?;
    Ok(())
}

/// Sketches and verifies for a distributed run (one per executor process; cheap to build).
#[pyclass(frozen, module = "neardup._neardup", name = "Sketcher")]
pub(crate) struct PySketcher {
    engine: Arc<Engine>,
}

/// A binary column as `(offsets int64 n+1, data uint8)`.
fn binary_column(parts: &[Vec<u8>]) -> (Vec<i64>, Vec<u8>) {
    let mut offsets = Vec::with_capacity(parts.len() + 1);
    let mut data = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    offsets.push(0i64);
    for p in parts {
        data.extend_from_slice(p);
        offsets.push(data.len() as i64);
    }
    (offsets, data)
}

#[pymethods]
impl PySketcher {
    /// A sketcher for a job given as the library's `JobSpec` JSON (`job_spec()` makes it on the
    /// driver; executors receive it as it is).
    #[new]
    fn new(job: &str) -> PyResult<Self> {
        guard(|| {
            let job = neardup::JobSpec::from_json(job)
                .and_then(|j| j.compile())
                .map_err(crate::errors::job_error)?;
            Ok(PySketcher { engine: Arc::new(job.engine()) })
        })
    }

    /// The job's id (the pipeline's and the resolved search settings').
    #[staticmethod]
    fn job_id(job: &str) -> PyResult<String> {
        let job = neardup::JobSpec::from_json(job)
            .and_then(|j| j.compile())
            .map_err(crate::errors::job_error)?;
        Ok(job.id().to_string())
    }

    /// The method (`minhash`, `simhash` or `both`).
    #[getter]
    fn method(&self) -> &'static str {
        self.engine.config().method.name()
    }

    /// The resolved threshold.
    #[getter]
    fn threshold(&self) -> f64 {
        self.engine.config().threshold
    }

    /// The resolved Hamming distance (SimHash candidates).
    #[getter]
    fn hamming(&self) -> u32 {
        self.engine.config().hamming
    }

    /// The skew guard: the largest bucket paired in full.
    #[getter]
    fn max_bucket(&self) -> usize {
        self.engine.config().max_bucket
    }

    /// The skew guard: first members of a larger bucket paired with the others.
    #[getter]
    fn star_width(&self) -> usize {
        self.engine.config().star_width
    }

    /// The resolved keeper rule (`first`, `longest`, `shortest`, `max:FIELD`, `min:FIELD`).
    #[getter]
    fn keep(&self) -> String {
        self.engine.config().keep.to_string()
    }

    /// The field the keeper rule reads (`max:FIELD`, `min:FIELD`), if any.
    #[getter]
    fn keep_field(&self) -> Option<String> {
        self.engine.config().keep.field().map(str::to_string)
    }

    /// How many candidate keys each document has (LSH bands, permuted tables, or both).
    #[getter]
    fn key_count(&self) -> usize {
        self.engine.candidate_key_count()
    }

    /// The LSH `(bands, rows)`.
    #[getter]
    fn banding(&self) -> Option<(usize, usize)> {
        self.engine.banding()
    }

    /// The verification measure.
    #[getter]
    fn verification(&self) -> &'static str {
        self.engine.verification().name()
    }

    /// The probability that a pair exactly at the threshold becomes a candidate.
    #[getter]
    fn candidate_probability(&self) -> Option<f64> {
        self.engine.candidate_probability()
    }

    /// Sketches a batch of texts on every core, with the GIL released. Returns numpy arrays:
    /// `len` (bytes, int64), `empty` (bool), `exact` (n x 16 uint8: the feature-set key),
    /// `keys` (n x bands int64: the LSH band keys; zeros for empty documents) and `sketch`
    /// (`sketch_offsets` int64 n+1, `sketch_data` uint8: each document's sketch bytes, for
    /// verification).
    fn sketch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let source = Source::from_py(texts)?;
            let texts = source.texts()?;
            let engine = &self.engine;
            let bands = engine.candidate_key_count();
            let sketches: Vec<DocSketch> = py.detach(|| {
                texts
                    .par_iter()
                    .map_init(Scratch::default, |s, t| engine.sketch(Document::Text(t), t.len(), s))
                    .collect()
            });
            let n = sketches.len();
            let lens: Vec<i64> = sketches.iter().map(|s| s.len as i64).collect();
            let empty: Vec<bool> = sketches.iter().map(|s| s.empty).collect();
            let mut exact = Vec::with_capacity(n * 16);
            let mut keys = Vec::with_capacity(n * bands);
            for s in &sketches {
                exact.extend_from_slice(&s.exact_key().to_le_bytes());
                let k = engine.candidate_keys(s);
                if k.len() == bands {
                    keys.extend(k.iter().map(|&x| x as i64));
                } else {
                    keys.extend(std::iter::repeat_n(0i64, bands));
                }
            }
            let bytes: Vec<Vec<u8>> =
                py.detach(|| sketches.par_iter().map(DocSketch::to_bytes).collect());
            let (offsets, data) = binary_column(&bytes);
            let out = PyDict::new(py);
            out.set_item("len", lens.into_pyarray(py))?;
            out.set_item("empty", PyArray1::from_slice(py, &empty))?;
            let exact = Array2::from_shape_vec((n, 16), exact)
                .map_err(|e| crate::errors::input(e.to_string()))?;
            out.set_item("exact", exact.into_pyarray(py))?;
            let keys = Array2::from_shape_vec((n, bands), keys)
                .map_err(|e| crate::errors::input(e.to_string()))?;
            out.set_item("keys", keys.into_pyarray(py))?;
            out.set_item("sketch_offsets", offsets.into_pyarray(py))?;
            out.set_item("sketch_data", data.into_pyarray(py))?;
            Ok(out)
        })
    }

    /// Verifies candidate pairs from two binary columns of sketch bytes (`(offsets, data)`
    /// each, row i of one against row i of the other): the similarity where the pair passes,
    /// NaN where it does not (float64, on every core, GIL released).
    fn verify<'py>(
        &self,
        py: Python<'py>,
        a_offsets: PyReadonlyArray1<'py, i64>,
        a_data: PyReadonlyArray1<'py, u8>,
        b_offsets: PyReadonlyArray1<'py, i64>,
        b_data: PyReadonlyArray1<'py, u8>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        guard(|| {
            let (ao, ad, bo, bd) = (
                a_offsets.as_slice()?,
                a_data.as_slice()?,
                b_offsets.as_slice()?,
                b_data.as_slice()?,
            );
            if ao.len() != bo.len() || ao.is_empty() {
                return Err(crate::errors::input("the two sketch columns differ in length"));
            }
            fn slice<'d>(o: &[i64], d: &'d [u8], i: usize) -> PyResult<&'d [u8]> {
                let (s, e) = (o[i] as usize, o[i + 1] as usize);
                d.get(s..e).ok_or_else(|| {
                    crate::errors::input(format!("sketch {i}: offsets outside its data"))
                })
            }
            let n = ao.len() - 1;
            let mut pairs = Vec::with_capacity(n);
            for i in 0..n {
                pairs.push((slice(ao, ad, i)?, slice(bo, bd, i)?));
            }
            let engine = &self.engine;
            let sims: Vec<f64> = py.detach(|| {
                pairs
                    .par_iter()
                    .map(|(a, b)| match (DocSketch::from_bytes(a), DocSketch::from_bytes(b)) {
                        // Only pairs the CLI's search would take (a shared table key is not
                        // yet a SimHash candidate), then its verification.
                        (Ok(a), Ok(b)) if engine.is_candidate(&a, &b) => {
                            engine.similarity(&a, &b, None).unwrap_or(f64::NAN)
                        }
                        (Ok(_), Ok(_)) => f64::NAN,
                        _ => f64::NAN,
                    })
                    .collect()
            });
            Ok(sims.into_pyarray(py))
        })
    }
}
