//! `Pipeline`, `Fingerprint`, `FingerprintBatch` and `compare`.

use std::sync::Arc;

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};
use rayon::prelude::*;

use neardup::{Document, Pipeline, PipelineOptions, PipelineSpec, Scratch, Sketches};

use crate::interrupt::{interruptible, wants_progress};
use crate::texts::Source;
use crate::values::{to_json, utf8};
use crate::{build_error, guard};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPipeline>()?;
    m.add_class::<PyFingerprint>()?;
    m.add_class::<PyFingerprintBatch>()?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(lsh_params, m)?)?;
    Ok(())
}

/// LSH `(bands, rows)` for a Jaccard threshold: datasketch MinHashLSH's weighted-error choice
/// (`recall=None`), or dedup's cheapest banding that reaches `recall` at the threshold.
#[pyfunction]
#[pyo3(signature = (threshold, num_perm, weights = (0.5, 0.5), recall = None))]
fn lsh_params(
    threshold: f64,
    num_perm: usize,
    weights: (f64, f64),
    recall: Option<f64>,
) -> PyResult<(usize, usize)> {
    guard(|| {
        let p = match recall {
            Some(r) => neardup::sketch::params_for_recall(threshold, num_perm, r),
            None => neardup::sketch::optimal_params(threshold, num_perm, weights),
        }
        .map_err(|e| crate::errors::option(e.to_string()))?;
        Ok((p.bands, p.rows))
    })
}

/// JSON as a Python value.
pub(crate) fn to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u.into_pyobject(py)?.into_any(),
            (None, Some(i), _) => i.into_pyobject(py)?.into_any(),
            (_, _, f) => f.unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for x in items {
                list.append(to_py(py, x)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let d = PyDict::new(py);
            for (k, x) in map {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// A compiled pipeline: the same `PipelineSpec`, presets and options as the command line.
///
/// `Pipeline(preset="default", **options)` takes the options of `neardup fingerprint` by name
/// (`segmenter="jieba"`, `features="ngrams"`, `ngram=3`, `stop_words=["zh"]`, `nfkc=False`, ...);
/// `Pipeline.from_spec(spec)` takes a spec as `neardup spec` prints it (a dict or JSON text).
#[pyclass(frozen, module = "neardup._neardup", name = "Pipeline")]
pub(crate) struct PyPipeline {
    pub(crate) inner: Arc<Pipeline>,
}

impl PyPipeline {
    pub(crate) fn from_options(
        preset: Option<&str>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyPipeline> {
        let mut o = PipelineOptions { preset: preset.map(String::from), ..Default::default() };
        if let Some(options) = options {
            for (k, v) in options.iter() {
                let name: String = k.extract()?;
                if v.is_none() {
                    continue;
                }
                o.set(&name, &to_json(&v, &name)?).map_err(build_error)?;
            }
        }
        let spec = o.to_spec("default").map_err(build_error)?;
        Self::from_spec_value(spec)
    }

    pub(crate) fn from_spec_value(spec: PipelineSpec) -> PyResult<PyPipeline> {
        let pipeline = Pipeline::new(spec).map_err(build_error)?;
        Ok(PyPipeline { inner: Arc::new(pipeline) })
    }

    /// A `pipeline=` argument: a `Pipeline`, or a preset's name (`"zh-news"`), else the default
    /// pipeline; anything else is `InputTypeError` saying what it takes.
    pub(crate) fn or_default(pipeline: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<Pipeline>> {
        let Some(p) = pipeline.filter(|p| !p.is_none()) else {
            return Ok(Arc::new(Pipeline::new(PipelineSpec::default()).map_err(build_error)?));
        };
        if let Ok(p) = p.cast::<PyPipeline>() {
            return Ok(p.get().inner.clone());
        }
        if let Ok(name) = p.extract::<String>() {
            return Ok(PyPipeline::from_options(Some(&name), None)?.inner);
        }
        Err(crate::errors::input_type(format!(
            "pipeline is {}: expected a neardup.Pipeline or a preset's name such as \"zh-news\" \
             (neardup.presets() lists them)",
            p.get_type().name()?
        )))
    }
}

/// A document argument: a `str`, or a list (or tuple) of `str` tokens.
pub(crate) type Doc = neardup::OwnedDocument;

/// The document a Python argument holds; `what` names the argument in errors.
pub(crate) fn doc_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Doc> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Doc::Text(utf8(s, || what.to_string())?.to_string()));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut tokens = Vec::new();
        for (i, token) in obj.try_iter()?.enumerate() {
            let token = token?;
            let Ok(token) = token.cast::<PyString>() else {
                return Err(crate::errors::input_type(format!(
                    "{what}: tokens must all be str, token {i} is {}",
                    token.get_type().name()?
                )));
            };
            tokens.push(utf8(token, || format!("{what}: token {i}"))?.to_string());
        }
        return Ok(Doc::Tokens(tokens));
    }
    let name = if obj.is_none() { "None".to_string() } else { obj.get_type().name()?.to_string() };
    Err(crate::errors::input_type(format!(
        "{what} is {name}: expected str (or a list of str tokens)"
    )))
}

#[pymethods]
impl PyPipeline {
    #[new]
    #[pyo3(signature = (preset = None, **options))]
    fn new(preset: Option<&str>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        guard(|| PyPipeline::from_options(preset, options))
    }

    /// A pipeline from a spec: a dict, or JSON text, as `neardup spec` prints it.
    #[staticmethod]
    fn from_spec(spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        guard(|| {
            let spec = if let Ok(text) = spec.cast::<PyString>() {
                PipelineSpec::from_json(utf8(text, || "spec".into())?).map_err(build_error)?
            } else {
                PipelineSpec::from_value(to_json(spec, "spec")?).map_err(build_error)?
            };
            PyPipeline::from_spec_value(spec)
        })
    }

    /// The resolved spec, as a dict (`Pipeline.from_spec` takes it back).
    #[getter]
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = serde_json::to_value(self.inner.spec())
            .map_err(|e| crate::errors::input(e.to_string()))?;
        to_py(py, &v)
    }

    /// The spec as canonical JSON text.
    fn spec_json(&self) -> String {
        self.inner.spec().to_canonical_json()
    }

    /// The pipeline id: a hash of the spec, the fingerprint format and the files the spec
    /// names. Two pipelines with the same id give the same fingerprints.
    #[getter]
    fn id(&self) -> &str {
        self.inner.id()
    }

    /// The SimHash width.
    #[getter]
    fn bits(&self) -> u32 {
        self.inner.simhash_bits().get()
    }

    /// MinHash values per signature.
    #[getter]
    fn num_perm(&self) -> usize {
        self.inner.spec().minhash.num_perm
    }

    /// SimHash, MinHash and feature count of one document (`str`, or a list of `str` tokens).
    #[pyo3(signature = (text, minhash = true))]
    fn fingerprint(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        minhash: bool,
    ) -> PyResult<PyFingerprint> {
        guard(|| {
            let doc = doc_from_py(text, "text")?;
            let sketches = if minhash { Sketches::MINHASH } else { Sketches::SIMHASH };
            let fp = py.detach(|| {
                self.inner.fingerprint(doc.as_document(), &mut Scratch::default(), sketches)
            });
            Ok(PyFingerprint {
                simhash: fp.simhash.value(),
                bits: fp.simhash.bits().get(),
                minhash: fp.minhash.map(|m| m.values().to_vec()),
                features: fp.features,
            })
        })
    }

    /// Fingerprints of many documents, on every core with the GIL released: a list or tuple of
    /// `str`, or the Arrow buffers the `neardup` package passes for pandas and pyarrow input.
    /// Ctrl-C interrupts it; `progress` draws a line on stderr (default: when it is a terminal).
    #[pyo3(signature = (texts, minhash = true, progress = None))]
    fn fingerprint_batch(
        &self,
        py: Python<'_>,
        texts: &Bound<'_, PyAny>,
        minhash: bool,
        progress: Option<bool>,
    ) -> PyResult<PyFingerprintBatch> {
        guard(|| {
            let source = Source::from_py(texts)?;
            let texts = source.texts()?;
            let sketches = if minhash { Sketches::MINHASH } else { Sketches::SIMHASH };
            let pipeline = &self.inner;
            let shown =
                wants_progress(py, progress).then_some(("fingerprinted", texts.len() as u64));
            let fps: Vec<neardup::Fingerprint> = interruptible(py, shown, |stop| {
                let fps: Vec<Option<neardup::Fingerprint>> = texts
                    .par_iter()
                    .map_init(Scratch::default, |s, t| {
                        (!stop.is_set()).then(|| {
                            stop.advance(1);
                            pipeline.fingerprint(Document::Text(t), s, sketches)
                        })
                    })
                    .collect();
                stop.check()?;
                Ok(fps.into_iter().flatten().collect())
            })?;
            let n = fps.len();
            let bits = pipeline.simhash_bits().get();
            let simhash = if bits == 128 {
                let mut v = Vec::with_capacity(2 * n);
                for fp in &fps {
                    let x = fp.simhash.value();
                    v.push((x >> 64) as u64);
                    v.push(x as u64);
                }
                let a = Array2::from_shape_vec((n, 2), v)
                    .map_err(|e| crate::errors::input(e.to_string()))?;
                a.into_pyarray(py).into_any().unbind()
            } else {
                let v: Vec<u64> = fps.iter().map(|fp| fp.simhash.value() as u64).collect();
                v.into_pyarray(py).into_any().unbind()
            };
            let minhash = if minhash {
                let k = pipeline.spec().minhash.num_perm;
                let mut v = Vec::with_capacity(n * k);
                for fp in &fps {
                    v.extend_from_slice(fp.minhash.as_ref().map(|m| m.values()).unwrap_or(&[]));
                }
                let a = Array2::from_shape_vec((n, k), v)
                    .map_err(|e| crate::errors::input(e.to_string()))?;
                Some(a.into_pyarray(py).unbind())
            } else {
                None
            };
            let features: Vec<u32> = fps.iter().map(|fp| fp.features as u32).collect();
            Ok(PyFingerprintBatch {
                simhash,
                minhash,
                features: features.into_pyarray(py).unbind(),
                bits,
            })
        })
    }

    /// The features of a document as text, in document order (before weighting).
    fn features(&self, text: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        guard(|| {
            let doc = doc_from_py(text, "text")?;
            let mut out = Vec::new();
            self.inner.for_each_feature(doc.as_document(), &mut Scratch::default(), |f| {
                out.push(f.to_string())
            });
            Ok(out)
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Pipeline(id={:?}, spec={})",
            self.inner.id(),
            self.inner.spec().to_canonical_json()
        )
    }

    /// Pickles as its spec (Spark sends pipelines to its executors this way).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let cls = py.get_type::<PyPipeline>().getattr("from_spec")?;
        Ok((cls, (self.inner.spec().to_canonical_json(),)))
    }
}

/// The fingerprints of one document.
#[pyclass(frozen, module = "neardup._neardup", name = "Fingerprint")]
pub(crate) struct PyFingerprint {
    simhash: u128,
    bits: u32,
    minhash: Option<Vec<u32>>,
    features: usize,
}

#[pymethods]
impl PyFingerprint {
    /// The SimHash as an int.
    #[getter]
    fn simhash(&self) -> u128 {
        self.simhash
    }

    /// The SimHash width in bits.
    #[getter]
    fn bits(&self) -> u32 {
        self.bits
    }

    /// The SimHash as lowercase hex (`bits / 4` digits), as `neardup fingerprint` prints it.
    #[getter]
    fn hex(&self) -> String {
        format!("{:0width$x}", self.simhash, width = (self.bits / 4) as usize)
    }

    /// The MinHash signature as a numpy `uint32` array (`None` if not asked for).
    #[getter]
    fn minhash<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<u32>>> {
        self.minhash.as_ref().map(|m| PyArray1::from_slice(py, m))
    }

    /// The number of distinct features.
    #[getter]
    fn features(&self) -> usize {
        self.features
    }

    /// The Hamming distance to another fingerprint of the same width.
    fn hamming(&self, other: &PyFingerprint) -> PyResult<u32> {
        if self.bits != other.bits {
            return Err(crate::errors::input(format!(
                "cannot compare a {}-bit fingerprint with a {}-bit one",
                self.bits, other.bits
            )));
        }
        Ok((self.simhash ^ other.simhash).count_ones())
    }

    fn __repr__(&self) -> String {
        format!("Fingerprint(simhash=0x{}, features={})", self.hex(), self.features)
    }
}

/// Fingerprints of a batch: `simhash` (uint64 array of n, or n x 2 [high, low] for 128 bits),
/// `minhash` (n x num_perm uint32, or None) and `features` (uint32 array of n).
#[pyclass(frozen, module = "neardup._neardup", name = "FingerprintBatch")]
pub(crate) struct PyFingerprintBatch {
    #[pyo3(get)]
    simhash: Py<PyAny>,
    #[pyo3(get)]
    minhash: Option<Py<PyArray2<u32>>>,
    #[pyo3(get)]
    features: Py<PyArray1<u32>>,
    #[pyo3(get)]
    bits: u32,
}

#[pymethods]
impl PyFingerprintBatch {
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.features.bind(py).len()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("FingerprintBatch(n={}, bits={})", self.__len__(py)?, self.bits))
    }
}

/// Every measure of two documents, as `neardup compare --json`: `simhash` (`hamming`,
/// `similarity`, `bits`), `jaccard_estimate`, `jaccard_exact`, `weighted_jaccard`, `cosine`,
/// `edit_similarity`, `features`.
#[pyfunction]
#[pyo3(signature = (a, b, pipeline = None))]
fn compare<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    pipeline: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let (da, db) = (doc_from_py(a, "a")?, doc_from_py(b, "b")?);
        let pipeline = PyPipeline::or_default(pipeline)?;
        let c = py
            .detach(|| neardup::compare(&pipeline, da.as_document(), db.as_document()))
            .map_err(|e| crate::errors::input(e.to_string()))?;
        let v = serde_json::to_value(c).map_err(|e| crate::errors::input(e.to_string()))?;
        to_py(py, &v)
    })
}

/// The presets: `{name: description}`.
#[pyfunction]
fn presets() -> Vec<(String, String)> {
    neardup::PRESETS.iter().map(|p| (p.name.to_string(), p.description.to_string())).collect()
}
