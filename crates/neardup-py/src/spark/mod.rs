//! The two stages Spark runs in its executors (`neardup.spark`): sketching an Arrow batch of
//! texts into the columns the job shuffles, and verifying candidate pairs from their sketches.
//! Both use a `neardup::Engine`, so the sketches, the banding and the check are those of
//! `neardup dedup` for the same pipeline and settings.

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use neardup::{DocSketch, Document, Engine, Scratch, DEFAULT_MAX_DOC_BYTES};

use crate::guard;
use crate::texts::Source;

mod columns;
mod passages;

use columns::{
    binary_column, components, pair_columns, read_line, sketch_columns, to_position, Line,
    PositionPairs,
};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    passages::register(m)?;
    m.add_class::<PySketcher>()?;
    m.add_function(wrap_pyfunction!(components, m)?)?;
    Ok(())
}

/// Sketches and verifies for a distributed run (one per executor process; cheap to build).
#[pyclass(frozen, module = "neardup._neardup", name = "Sketcher")]
pub(crate) struct PySketcher {
    engine: Arc<Engine>,
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
    /// `buckets` (n x keys int64: each candidate key named with its band or table, so that
    /// documents share a bucket exactly when they share a key in one band; zeros for empty
    /// documents) and `sketch` (`sketch_offsets` int64 n+1, `sketch_data` uint8: each
    /// document's sketch bytes, for verification).
    fn sketch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let source = Source::from_py(texts)?;
            let texts = source.texts()?;
            let engine = &self.engine;
            let sketches: Vec<DocSketch> = py.detach(|| {
                texts
                    .par_iter()
                    .map_init(Scratch::default, |s, t| engine.sketch(Document::Text(t), t.len(), s))
                    .collect()
            });
            sketch_columns(py, engine, &sketches)
        })
    }

    /// Reads a batch of JSON Lines records as `neardup dedup` reads each line of a file (the
    /// library's rule: `fields` names the text, id, tokens and keep fields, dotted into
    /// objects), and sketches them, on every core with the GIL released. `offsets` (int64 n+1)
    /// and `data` are the lines' bytes as Spark's text reader gives them (not yet checked as
    /// UTF-8). Returns the columns of [`sketch`](Self::sketch) and: `status` (uint8: 0 a record,
    /// 1 a blank line, 2 a bad record), `errors` (a list of `(row, message)` for bad records),
    /// the ids as an Arrow string column's buffers (`id_offsets` int64 n+1, `id_data`, `id_valid`:
    /// false where the record has no id field; an id is its JSON string's value or its number's
    /// text as written) and, with a keep field, `rank` (n x 20 bytes: each value's sort key, zeros
    /// for none) and `rank_kind` (0 none, 1 number, 2 date).
    #[pyo3(signature = (offsets, data, text_field, id_field, tokens_field, keep_field=None, lossy=false, max_doc_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn sketch_records<'py>(
        &self,
        py: Python<'py>,
        offsets: PyReadonlyArray1<'py, i64>,
        data: PyReadonlyArray1<'py, u8>,
        text_field: &str,
        id_field: &str,
        tokens_field: &str,
        keep_field: Option<&str>,
        lossy: bool,
        max_doc_bytes: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let lines = columns::batch_lines(offsets.as_slice()?, data.as_slice()?)?;
            let fields = neardup::RecordFields {
                text: text_field,
                id: id_field,
                tokens: tokens_field,
                rank: keep_field,
            };
            let max_doc_bytes = max_doc_bytes.unwrap_or(DEFAULT_MAX_DOC_BYTES);
            let engine = &self.engine;
            let read: Vec<Line> = py.detach(|| {
                lines
                    .par_iter()
                    .map_init(Scratch::default, |s, line| {
                        read_line(line, &fields, lossy, max_doc_bytes, engine, s)
                    })
                    .collect()
            });
            let n = read.len();
            let mut status = Vec::with_capacity(n);
            let mut errors = Vec::new();
            let mut ids = Vec::with_capacity(n);
            let mut ranks = Vec::with_capacity(n);
            let mut sketches = Vec::with_capacity(n);
            // A line that is no record has the sketch of an empty text (it enters no bucket).
            let none = engine.sketch(Document::Text(""), 0, &mut Scratch::default());
            for (row, line) in read.into_iter().enumerate() {
                match line {
                    Line::Record { sketch, id, rank } => {
                        status.push(0u8);
                        sketches.push(sketch);
                        ids.push(id);
                        ranks.push(rank);
                    }
                    other => {
                        status.push(if matches!(other, Line::Blank) { 1 } else { 2 });
                        if let Line::Bad(message) = other {
                            errors.push((row, message));
                        }
                        sketches.push(none.clone());
                        ids.push(None);
                        ranks.push(None);
                    }
                }
            }
            let out = sketch_columns(py, engine, &sketches)?;
            out.set_item("status", status.into_pyarray(py))?;
            out.set_item("errors", errors)?;
            let id_valid: Vec<bool> = ids.iter().map(Option::is_some).collect();
            let (id_offsets, id_data) =
                binary_column(ids.iter().map(|id| id.as_deref().unwrap_or("").as_bytes()));
            out.set_item("id_offsets", id_offsets.into_pyarray(py))?;
            out.set_item("id_data", id_data.into_pyarray(py))?;
            out.set_item("id_valid", PyArray1::from_slice(py, &id_valid))?;
            if keep_field.is_some() {
                // Each value's sort key (the exact order, which a double would round).
                let keys: Vec<u8> =
                    ranks.iter().flat_map(|r| r.map_or([0; 20], |r| r.sort_key())).collect();
                let keys = numpy::ndarray::Array2::from_shape_vec((ranks.len(), 20), keys)
                    .map_err(|e| crate::errors::input(e.to_string()))?;
                let kind: Vec<i8> =
                    ranks.iter().map(|r| crate::dedup::rank_kind(r.as_ref())).collect();
                out.set_item("rank", keys.into_pyarray(py))?;
                out.set_item("rank_kind", kind.into_pyarray(py))?;
            }
            Ok(out)
        })
    }

    /// The candidate pairs of a partition of `(bucket, position)` rows that holds every member
    /// of each bucket it names, under the job's skew guard (the library's rule): two int64
    /// arrays (smaller position first) and the number of buckets the guard limited.
    fn bucket_candidates<'py>(
        &self,
        py: Python<'py>,
        buckets: PyReadonlyArray1<'py, i64>,
        positions: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<(PositionPairs<'py>, usize)> {
        guard(|| {
            let (buckets, positions) = (buckets.as_slice()?, positions.as_slice()?);
            if buckets.len() != positions.len() {
                return Err(crate::errors::input(
                    "the bucket and position columns differ in length",
                ));
            }
            let mut rows: Vec<(i64, u64)> =
                buckets.iter().zip(positions).map(|(&k, &p)| (k, to_position(p))).collect();
            let cap = self.engine.config().bucket_cap();
            let (pairs, capped) = py.detach(|| neardup::bucket_candidates(&mut rows, cap));
            let (a, b) = pair_columns(pairs);
            Ok(((a.into_pyarray(py), b.into_pyarray(py)), capped))
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
