//! The compatibility profiles: other systems' fingerprints, bit for bit (the library's
//! `neardup::compat`, as `neardup fingerprint --profile`).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use neardup::compat::lucene::{
    self, MinHashParams, MAX_BUCKET_COUNT, MAX_HASH_COUNT, MAX_HASH_SET_SIZE,
};
use neardup::compat::yanyiwu;
use neardup::profile::{Profile, ProfileError, ProfileFingerprint};
use neardup::Document;

use crate::guard;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(yanyiwu_simhash, m)?)?;
    m.add_function(wrap_pyfunction!(lucene_min_hash, m)?)?;
    m.add_function(wrap_pyfunction!(gojieba_simhash, m)?)?;
    m.add_function(wrap_pyfunction!(jieba_md5_simhash, m)?)?;
    Ok(())
}

/// A size option as an integer in `low..=high`, the bounds the CLI applies to its flag: any
/// int outside them (negative, or beyond 64 bits) is a `ValueError` that names the option, the
/// value and the bound, not an `OverflowError` from the conversion; a value that is not an
/// integer is `operator.index`'s `TypeError`.
fn size_option(value: &Bound<'_, PyAny>, name: &str, low: u64, high: u64) -> PyResult<u64> {
    let int = value.py().import("operator")?.call_method1("index", (value,))?;
    match int.extract::<u64>() {
        Ok(v) if (low..=high).contains(&v) => Ok(v),
        _ if int.lt(low)? => {
            Err(crate::errors::input(format!("{name} must be at least {low}, not {}", int.str()?)))
        }
        _ => {
            Err(crate::errors::input(format!("{name} must be at most {high}, not {}", int.str()?)))
        }
    }
}

/// A profile's fingerprint of a text, with the GIL released.
fn fingerprint(py: Python<'_>, profile: &Profile, text: &str) -> PyResult<ProfileFingerprint> {
    py.detach(|| profile.fingerprint(Document::Text(text), None)).map_err(profile_error)
}

/// A bad parameter is an `OptionError`; a text the profile cannot fingerprint an `InputError`.
fn profile_error(e: ProfileError) -> PyErr {
    match e {
        ProfileError::Parameter { .. } => crate::errors::option(e.to_string()),
        other => crate::errors::input(other.to_string()),
    }
}

/// `topn` of the keyword profiles: at most `neardup::MAX_TOP_N`, as `--topn`.
fn topn_option(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    let max = u64::try_from(neardup::MAX_TOP_N).unwrap_or(u64::MAX);
    // The bound fits in usize, so the conversion back cannot fail.
    Ok(size_option(value, "topn", 0, max)? as usize)
}

/// yanyiwu/simhash (`flavor="yanyiwu"`) or jiebaR 0.9's `worker("simhash")` (`"jiebar"`):
/// `{"simhash": int, "keywords": [(word, weight)]}`. `topn=None` is upstream's default.
#[pyfunction]
#[pyo3(signature = (text, topn = None, flavor = "yanyiwu", strip_symbols = false))]
fn yanyiwu_simhash<'py>(
    py: Python<'py>,
    text: &str,
    topn: Option<&Bound<'py, PyAny>>,
    flavor: &str,
    strip_symbols: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let topn = topn.map(topn_option).transpose()?;
        let flavor = match flavor {
            "yanyiwu" => yanyiwu::Flavor::Yanyiwu,
            "jiebar" => yanyiwu::Flavor::JiebaR09,
            other => {
                return Err(crate::errors::input(format!(
                    "flavor {other:?}: expected \"yanyiwu\" or \"jiebar\""
                )))
            }
        };
        let profile = Profile::yanyiwu(flavor, topn, strip_symbols).map_err(profile_error)?;
        let ProfileFingerprint::Yanyiwu(r) = fingerprint(py, &profile, text)? else {
            unreachable!("the yanyiwu profile gives its fingerprint")
        };
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
/// bytes Elasticsearch indexes. The counts default to Elasticsearch's (1, 512, 1).
#[pyfunction]
#[pyo3(signature = (text, hash_count = None, bucket_count = None, hash_set_size = None,
                    with_rotation = true, shingle_size = None))]
fn lucene_min_hash(
    text: &Bound<'_, PyAny>,
    hash_count: Option<&Bound<'_, PyAny>>,
    bucket_count: Option<&Bound<'_, PyAny>>,
    hash_set_size: Option<&Bound<'_, PyAny>>,
    with_rotation: bool,
    shingle_size: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Vec<u8>>> {
    guard(|| {
        // Each bound is at most a u32 (Lucene's) or MAX_NGRAM, so the conversions are exact.
        let count = |v: Option<&Bound<'_, PyAny>>, name: &str, max: u32, default: u32| match v {
            Some(v) => Ok(size_option(v, name, 1, u64::from(max))? as u32),
            None => Ok::<u32, PyErr>(default),
        };
        let d = MinHashParams::default();
        let params = MinHashParams {
            hash_count: count(hash_count, "hash_count", MAX_HASH_COUNT, d.hash_count)?,
            bucket_count: count(bucket_count, "bucket_count", MAX_BUCKET_COUNT, d.bucket_count)?,
            hash_set_size: count(
                hash_set_size,
                "hash_set_size",
                MAX_HASH_SET_SIZE,
                d.hash_set_size,
            )?,
            with_rotation,
        };
        let max_ngram = u64::try_from(neardup::MAX_NGRAM).unwrap_or(u64::MAX);
        let shingle_size = match shingle_size {
            Some(v) => size_option(v, "shingle_size", 1, max_ngram)? as usize,
            None => 1,
        };
        let profile = Profile::lucene(params, shingle_size).map_err(profile_error)?;
        let fp = if let Ok(s) = text.extract::<String>() {
            profile.fingerprint(Document::Text(&s), None)
        } else {
            let list: Vec<String> = text.extract()?;
            profile.fingerprint(Document::Tokens(&list), None)
        };
        let ProfileFingerprint::Lucene(tokens) = fp.map_err(profile_error)? else {
            unreachable!("the lucene profile gives its tokens")
        };
        Ok(tokens.iter().map(|t| lucene::indexed_utf8(t)).collect())
    })
}

/// The gojieba + FNV recipe: `{"bits": str, "simhash": int, "keywords": [(word, weight)]}`.
#[pyfunction]
fn gojieba_simhash<'py>(
    py: Python<'py>,
    text: &str,
    topn: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let profile = Profile::gojieba(topn_option(topn)?).map_err(profile_error)?;
        let ProfileFingerprint::Gojieba(f) = fingerprint(py, &profile, text)? else {
            unreachable!("the gojieba profile gives its fingerprint")
        };
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
        let ProfileFingerprint::JiebaMd5(f) = fingerprint(py, &Profile::jieba_md5(), text)? else {
            unreachable!("the jieba-md5 profile gives its fingerprint")
        };
        let out = PyDict::new(py);
        out.set_item("bits", &f.bits)?;
        out.set_item("simhash", f.value)?;
        out.set_item("words", f.words)?;
        Ok(out)
    })
}
