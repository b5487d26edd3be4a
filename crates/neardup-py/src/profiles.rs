//! The compatibility profiles: other systems' fingerprints, bit for bit (the library's
//! `neardup::compat`, as `neardup fingerprint --profile`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use neardup::compat::lucene::{self, MinHashParams};
use neardup::compat::{recipes, yanyiwu};

use crate::guard;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(yanyiwu_simhash, m)?)?;
    m.add_function(wrap_pyfunction!(lucene_min_hash, m)?)?;
    m.add_function(wrap_pyfunction!(gojieba_simhash, m)?)?;
    m.add_function(wrap_pyfunction!(jieba_md5_simhash, m)?)?;
    Ok(())
}

/// yanyiwu/simhash (`flavor="yanyiwu"`) or jiebaR 0.9's `worker("simhash")` (`"jiebar"`):
/// `{"simhash": int, "keywords": [(word, weight)]}`. `topn=None` is upstream's default.
#[pyfunction]
#[pyo3(signature = (text, topn = None, flavor = "yanyiwu", strip_symbols = false))]
fn yanyiwu_simhash<'py>(
    py: Python<'py>,
    text: &str,
    topn: Option<usize>,
    flavor: &str,
    strip_symbols: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let flavor = match flavor {
            "yanyiwu" => yanyiwu::Flavor::Yanyiwu,
            "jiebar" => yanyiwu::Flavor::JiebaR09,
            other => {
                return Err(PyValueError::new_err(format!(
                    "flavor {other:?}: expected \"yanyiwu\" or \"jiebar\""
                )))
            }
        };
        let text = if strip_symbols { yanyiwu::strip_symbols(text) } else { text.to_string() };
        let n = topn.unwrap_or_else(|| yanyiwu::default_topn(text.len()));
        let r = py.detach(|| yanyiwu::simhasher_for(flavor).simhash(text.as_bytes(), n));
        let out = PyDict::new(py);
        out.set_item("simhash", r.simhash)?;
        let keywords: Vec<(String, f64)> =
            r.keywords.iter().map(|k| (k.text(), k.weight)).collect();
        out.set_item("keywords", keywords)?;
        Ok(out)
    })
}

/// Lucene's `MinHashFilter` (Elasticsearch's `min_hash` token filter) behind the whitespace
/// tokenizer (`text` a str) or over given tokens (a list of str): the output tokens as the UTF-8
/// bytes Elasticsearch indexes.
#[pyfunction]
#[pyo3(signature = (text, hash_count = 1, bucket_count = 512, hash_set_size = 1,
                    with_rotation = true, shingle_size = 1))]
fn lucene_min_hash(
    text: &Bound<'_, PyAny>,
    hash_count: u32,
    bucket_count: u32,
    hash_set_size: u32,
    with_rotation: bool,
    shingle_size: usize,
) -> PyResult<Vec<Vec<u8>>> {
    guard(|| {
        let params = MinHashParams { hash_count, bucket_count, hash_set_size, with_rotation };
        params.validate().map_err(PyValueError::new_err)?;
        if !(1..=neardup::MAX_NGRAM).contains(&shingle_size) {
            return Err(PyValueError::new_err(format!(
                "shingle_size must be in 1..={}, not {shingle_size}",
                neardup::MAX_NGRAM
            )));
        }
        let tokens = if let Ok(s) = text.extract::<String>() {
            lucene::shingles(&lucene::whitespace_tokenize(&s), shingle_size)
        } else {
            let list: Vec<String> = text.extract()?;
            lucene::given_tokens(&list)
        };
        let out = lucene::min_hash(&tokens, &params).map_err(PyValueError::new_err)?;
        Ok(out.tokens.iter().map(|t| lucene::indexed_utf8(t)).collect())
    })
}

/// The gojieba + FNV recipe: `{"bits": str, "simhash": int, "keywords": [(word, weight)]}`.
#[pyfunction]
fn gojieba_simhash<'py>(py: Python<'py>, text: &str, topn: usize) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        if topn > neardup::MAX_TOP_N {
            return Err(PyValueError::new_err(format!(
                "topn must be at most {}",
                neardup::MAX_TOP_N
            )));
        }
        let f = py.detach(|| recipes::gojieba_simhash(text.as_bytes(), topn));
        let out = PyDict::new(py);
        out.set_item("bits", &f.bits)?;
        out.set_item("simhash", f.value)?;
        let keywords: Vec<(String, f64)> =
            f.keywords.iter().map(|k| (k.text(), k.weight)).collect();
        out.set_item("keywords", keywords)?;
        Ok(out)
    })
}

/// The Python jieba + MD5 recipe: `{"bits": str, "simhash": int, "words": [(word, weight)]}`;
/// `ValueError` for a text without a word of Han characters (the original raises).
#[pyfunction]
fn jieba_md5_simhash<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let f = py
            .detach(|| recipes::jieba_md5_simhash(text))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let out = PyDict::new(py);
        out.set_item("bits", &f.bits)?;
        out.set_item("simhash", f.value)?;
        out.set_item("words", f.words)?;
        Ok(out)
    })
}
