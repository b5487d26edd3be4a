//! The kernels behind `neardup.datasketch`: datasketch's permutations drawn as numpy draws them,
//! SHA-1 token hashes, and the minimum updates of each scheme, on numpy arrays in place with the
//! GIL released (`neardup::compat::datasketch` does the arithmetic).

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use rayon::prelude::*;

use neardup::compat::datasketch::{
    self as ds, sha1_hash32, sha1_hash64, update_affine32, update_affine64, update_legacy,
    Permutations, Scheme,
};
use neardup::compat::sha1x::{sha1_hash32_many, sha1_hash64_many};

use crate::guard;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ds_permutations, m)?)?;
    m.add_function(wrap_pyfunction!(ds_update_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(ds_update_hashes, m)?)?;
    m.add_function(wrap_pyfunction!(ds_bulk, m)?)?;
    m.add_function(wrap_pyfunction!(ds_band_keys, m)?)?;
    m.add_function(wrap_pyfunction!(ds_sha1_hash32, m)?)?;
    m.add_function(wrap_pyfunction!(ds_sha1_hash64, m)?)?;
    Ok(())
}

fn scheme(name: &str) -> PyResult<Scheme> {
    name.parse().map_err(PyValueError::new_err)
}

/// datasketch's permutation parameters `(a, b)` for `(num_perm, seed, scheme)`: uint64 for
/// legacy and affine64, uint32 for affine32. Any `num_perm` datasketch takes (it allows up to
/// 2^32): the draws are numpy's, whatever their number, so nothing here bounds it. (neardup's
/// own MinHash stops at `MAX_NUM_PERM`; this is datasketch's.)
#[pyfunction]
fn ds_permutations<'py>(
    py: Python<'py>,
    num_perm: usize,
    seed: u64,
    scheme_name: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    guard(|| {
        let s = scheme(scheme_name)?;
        let seed = u32::try_from(seed)
            .map_err(|_| PyValueError::new_err("Seed must be between 0 and 2**32 - 1"))?;
        let p = py.detach(|| Permutations::new(num_perm, seed, s));
        Ok(match s {
            Scheme::Affine32 => {
                let a: Vec<u32> = p.a().iter().map(|&x| x as u32).collect();
                let b: Vec<u32> = p.b().iter().map(|&x| x as u32).collect();
                (a.into_pyarray(py).into_any(), b.into_pyarray(py).into_any())
            }
            _ => (
                p.a().to_vec().into_pyarray(py).into_any(),
                p.b().to_vec().into_pyarray(py).into_any(),
            ),
        })
    })
}

/// The tokens of a batch as byte slices, or `None` when some token is not `bytes` (the caller
/// then hashes in Python, as datasketch does for anything its hash function accepts).
fn byte_tokens<'a, 'py>(items: &'a [Bound<'py, PyAny>]) -> PyResult<Option<Vec<&'a [u8]>>> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        if let Ok(b) = item.cast::<PyBytes>() {
            out.push(b.as_bytes());
        } else if item.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err("Strings must be encoded before hashing"));
        } else {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// The SHA-1 hash of each token (several computed at once), 64-bit for affine64 and 32-bit
/// otherwise, widened.
fn hashes_of(s: Scheme, tokens: &[&[u8]]) -> Vec<u64> {
    let mut out = Vec::with_capacity(tokens.len());
    if s == Scheme::Affine64 {
        sha1_hash64_many(tokens, &mut out);
    } else {
        let mut h = Vec::with_capacity(tokens.len());
        sha1_hash32_many(tokens, &mut h);
        out.extend(h.into_iter().map(u64::from));
    }
    out
}

fn hashes32_of(tokens: &[&[u8]]) -> Vec<u32> {
    let mut out = Vec::with_capacity(tokens.len());
    sha1_hash32_many(tokens, &mut out);
    out
}

/// The hash values of a batch, in the width of the scheme's input: 32 bits for affine32, 64
/// for legacy and affine64 (datasketch converts them to the scheme's dtype before permuting).
enum Hashes<'a> {
    U32(&'a [u32]),
    U64(&'a [u64]),
}

/// Applies hash values to `values` in place, for the scheme's dtype.
fn apply(
    s: Scheme,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    hashes: Hashes<'_>,
    py: Python<'_>,
) -> PyResult<()> {
    match (s, hashes) {
        (Scheme::Affine32, Hashes::U32(h)) => {
            let (a, b): (PyReadonlyArray1<'_, u32>, PyReadonlyArray1<'_, u32>) =
                (a.extract()?, b.extract()?);
            let mut v: PyReadwriteArray1<'_, u32> = values.extract()?;
            let (a, b, v) = (a.as_slice()?, b.as_slice()?, v.as_slice_mut()?);
            check_lengths(a.len(), b.len(), v.len())?;
            py.detach(|| update_affine32(a, b, v, h));
        }
        (Scheme::Legacy | Scheme::Affine64, Hashes::U64(h)) => {
            let (a, b): (PyReadonlyArray1<'_, u64>, PyReadonlyArray1<'_, u64>) =
                (a.extract()?, b.extract()?);
            let mut v: PyReadwriteArray1<'_, u64> = values.extract()?;
            let (a, b, v) = (a.as_slice()?, b.as_slice()?, v.as_slice_mut()?);
            check_lengths(a.len(), b.len(), v.len())?;
            if s == Scheme::Legacy {
                py.detach(|| update_legacy(a, b, v, h));
            } else {
                py.detach(|| update_affine64(a, b, v, h));
            }
        }
        _ => {
            return Err(PyTypeError::new_err(format!(
                "hash values of the wrong width for scheme {:?}",
                s.name()
            )))
        }
    }
    Ok(())
}

fn check_lengths(a: usize, b: usize, v: usize) -> PyResult<()> {
    if a != v || b != v {
        return Err(PyValueError::new_err("Numbers of hash values and permutations mismatch"));
    }
    Ok(())
}

/// `MinHash.update_batch` with the default SHA-1 hash: updates `values` in place; returns False
/// (and does nothing) when a token is not `bytes`, so that the caller hashes in Python.
#[pyfunction]
fn ds_update_tokens(
    py: Python<'_>,
    scheme_name: &str,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    tokens: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    guard(|| {
        let s = scheme(scheme_name)?;
        let items: Vec<Bound<'_, PyAny>> = match tokens.cast::<PyList>() {
            Ok(list) => list.iter().collect(),
            Err(_) => tokens.try_iter()?.collect::<PyResult<_>>()?,
        };
        let Some(bytes) = byte_tokens(&items)? else { return Ok(false) };
        if s == Scheme::Affine32 {
            let hashes = py.detach(|| hashes32_of(&bytes));
            apply(s, a, b, values, Hashes::U32(&hashes), py)?;
        } else {
            let hashes = py.detach(|| hashes_of(s, &bytes));
            apply(s, a, b, values, Hashes::U64(&hashes), py)?;
        }
        Ok(true)
    })
}

/// `MinHash.update` and `update_batch` with hash values already computed (a custom
/// `hashfunc`) and converted as datasketch converts them: a 1-D array of uint32 (affine32) or
/// uint64 (legacy, affine64).
#[pyfunction]
fn ds_update_hashes(
    py: Python<'_>,
    scheme_name: &str,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    hashes: &Bound<'_, PyAny>,
) -> PyResult<()> {
    guard(|| {
        let s = scheme(scheme_name)?;
        if s == Scheme::Affine32 {
            let h: PyReadonlyArray1<'_, u32> = hashes.extract()?;
            apply(s, a, b, values, Hashes::U32(h.as_slice()?), py)
        } else {
            let h: PyReadonlyArray1<'_, u64> = hashes.extract()?;
            apply(s, a, b, values, Hashes::U64(h.as_slice()?), py)
        }
    })
}

/// `MinHash.bulk`: the hash values of many token lists at once, on every core (an n x num_perm
/// array of the scheme's dtype). `None` when a token is not `bytes`.
#[pyfunction]
fn ds_bulk<'py>(
    py: Python<'py>,
    scheme_name: &str,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    docs: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    guard(|| {
        let s = scheme(scheme_name)?;
        let lists: Vec<Vec<Bound<'py, PyAny>>> = docs
            .try_iter()?
            .map(|d| d?.try_iter()?.collect::<PyResult<Vec<_>>>())
            .collect::<PyResult<_>>()?;
        let mut tokens: Vec<Vec<&[u8]>> = Vec::with_capacity(lists.len());
        for list in &lists {
            match byte_tokens(list)? {
                Some(t) => tokens.push(t),
                None => return Ok(None),
            }
        }
        let n = tokens.len();
        Ok(Some(match s {
            Scheme::Affine32 => {
                let (a, b): (PyReadonlyArray1<'_, u32>, PyReadonlyArray1<'_, u32>) =
                    (a.extract()?, b.extract()?);
                let (a, b) = (a.as_slice()?, b.as_slice()?);
                let k = a.len();
                let values: Vec<u32> = py.detach(|| {
                    tokens
                        .par_iter()
                        .flat_map_iter(|t| {
                            let h = hashes32_of(t);
                            let mut v = vec![u32::MAX; k];
                            update_affine32(a, b, &mut v, &h);
                            v
                        })
                        .collect()
                });
                let arr = Array2::from_shape_vec((n, k), values)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                arr.into_pyarray(py).into_any()
            }
            _ => {
                let (a, b): (PyReadonlyArray1<'_, u64>, PyReadonlyArray1<'_, u64>) =
                    (a.extract()?, b.extract()?);
                let (a, b) = (a.as_slice()?, b.as_slice()?);
                let k = a.len();
                let init = if s == Scheme::Legacy { u64::from(u32::MAX) } else { u64::MAX };
                let values: Vec<u64> = py.detach(|| {
                    tokens
                        .par_iter()
                        .flat_map_iter(|t| {
                            let h = hashes_of(s, t);
                            let mut v = vec![init; k];
                            if s == Scheme::Legacy {
                                update_legacy(a, b, &mut v, &h);
                            } else {
                                update_affine64(a, b, &mut v, &h);
                            }
                            v
                        })
                        .collect()
                });
                let arr = Array2::from_shape_vec((n, k), values)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                arr.into_pyarray(py).into_any()
            }
        }))
    })
}

/// datasketch MinHashLSH's band keys of many signatures (an n x num_perm array): for each
/// signature, `b` keys of `r` values each, byte-swapped to big-endian as datasketch's `_H` does.
#[pyfunction]
fn ds_band_keys<'py>(
    py: Python<'py>,
    scheme_name: &str,
    values: &Bound<'py, PyAny>,
    bands: usize,
    rows: usize,
) -> PyResult<Vec<Vec<Bound<'py, PyBytes>>>> {
    guard(|| {
        let s = scheme(scheme_name)?;
        let rows_of: Vec<Vec<u64>> = match s {
            Scheme::Affine32 => {
                let arr: numpy::PyReadonlyArray2<'_, u32> = values.extract()?;
                arr.as_array()
                    .outer_iter()
                    .map(|r| r.iter().map(|&x| u64::from(x)).collect())
                    .collect()
            }
            _ => {
                let arr: numpy::PyReadonlyArray2<'_, u64> = values.extract()?;
                arr.as_array().outer_iter().map(|r| r.to_vec()).collect()
            }
        };
        if rows_of.first().is_some_and(|r| r.len() < bands * rows) {
            return Err(PyValueError::new_err("signatures are shorter than bands x rows"));
        }
        let keys: Vec<Vec<Vec<u8>>> = py.detach(|| {
            rows_of
                .par_iter()
                .map(|v| (0..bands).map(|i| ds::band_key(v, i, rows, s)).collect())
                .collect()
        });
        Ok(keys
            .into_iter()
            .map(|ks| ks.into_iter().map(|k| PyBytes::new(py, &k)).collect())
            .collect())
    })
}

/// datasketch's `sha1_hash32`.
#[pyfunction]
fn ds_sha1_hash32(data: &[u8]) -> u32 {
    sha1_hash32(data)
}

/// datasketch's `sha1_hash64`.
#[pyfunction]
fn ds_sha1_hash64(data: &[u8]) -> u64 {
    sha1_hash64(data)
}
