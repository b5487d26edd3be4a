//! The columns Spark's stages exchange with the extension: positions as Spark longs, pairs,
//! the connected components of a run's edges, a batch's sketch columns, and a line of JSON
//! Lines read and sketched.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use neardup::{DocSketch, Engine, Scratch};

use crate::guard;

/// Pairs of positions as two int64 arrays.
pub(super) type PositionPairs<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>);

/// A position (a Spark long: `monotonically_increasing_id`, or any `order_col`, negative ones
/// too) as the library's unsigned position, in the same order: the sign bit flipped.
pub(super) fn to_position(x: i64) -> u64 {
    (x as u64) ^ (1 << 63)
}

/// The inverse of [`to_position`].
fn from_position(x: u64) -> i64 {
    (x ^ (1 << 63)) as i64
}

/// Pairs of library positions as two int64 columns of Spark's.
pub(super) fn pair_columns(pairs: Vec<(u64, u64)>) -> (Vec<i64>, Vec<i64>) {
    pairs.into_iter().map(|(x, y)| (from_position(x), from_position(y))).unzip()
}

/// The connected components of the graph whose edges are `(a[i], b[i])` (positions): each node
/// with its component's smallest node, as two int64 arrays in node order (the library's
/// union-find, for a run's edges when they are few enough for the driver).
#[pyfunction]
pub(super) fn components<'py>(
    py: Python<'py>,
    a: PyReadonlyArray1<'py, i64>,
    b: PyReadonlyArray1<'py, i64>,
) -> PyResult<PositionPairs<'py>> {
    guard(|| {
        let (a, b) = (a.as_slice()?, b.as_slice()?);
        if a.len() != b.len() {
            return Err(crate::errors::input("the two position columns differ in length"));
        }
        let edges: Vec<(u64, u64)> =
            a.iter().zip(b).map(|(&x, &y)| (to_position(x), to_position(y))).collect();
        let (nodes, comps) = pair_columns(py.detach(|| neardup::components(&edges)));
        Ok((nodes.into_pyarray(py), comps.into_pyarray(py)))
    })
}

/// The lines of a batch given as an Arrow binary column's buffers (`offsets` int64 n+1, `data`).
pub(super) fn batch_lines<'a>(offsets: &[i64], data: &'a [u8]) -> PyResult<Vec<&'a [u8]>> {
    if offsets.is_empty() {
        return Err(crate::errors::input("the offsets of a batch of lines are empty"));
    }
    let mut lines = Vec::with_capacity(offsets.len() - 1);
    for (i, w) in offsets.windows(2).enumerate() {
        let (s, e) = (w[0] as usize, w[1] as usize);
        lines.push(data.get(s..e).ok_or_else(|| {
            crate::errors::input(format!("line {i}: offsets outside the batch's data"))
        })?);
    }
    Ok(lines)
}

/// A binary (or string) column as `(offsets int64 n+1, data uint8)`.
pub(super) fn binary_column<'a>(
    parts: impl ExactSizeIterator<Item = &'a [u8]>,
) -> (Vec<i64>, Vec<u8>) {
    let mut offsets = Vec::with_capacity(parts.len() + 1);
    let mut data = Vec::new();
    offsets.push(0i64);
    for p in parts {
        data.extend_from_slice(p);
        offsets.push(data.len() as i64);
    }
    (offsets, data)
}

/// One line of a batch of JSON Lines, read and sketched.
pub(super) enum Line {
    Record {
        sketch: DocSketch,
        id: Option<String>,
        rank: Option<neardup::Rank>,
    },
    /// Nothing but whitespace: not a record.
    Blank,
    /// Not a record: why.
    Bad(String),
}

/// Reads and sketches one line, by the library's rule ([`neardup::record_line`]).
pub(super) fn read_line(
    line: &[u8],
    fields: &neardup::RecordFields<'_>,
    lossy: bool,
    max_doc_bytes: usize,
    engine: &Engine,
    scratch: &mut Scratch,
) -> Line {
    let Some(body) = neardup::record_line(line) else {
        return Line::Blank;
    };
    let text = match std::str::from_utf8(body) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) if lossy => String::from_utf8_lossy(body),
        Err(e) => {
            return Line::Bad(format!(
                "invalid UTF-8 at byte offset {} of the line (use lossy=True, --lossy, to \
                 replace bad bytes)",
                e.valid_up_to() + (body.as_ptr() as usize - line.as_ptr() as usize)
            ))
        }
    };
    let record = match neardup::parse_json_record(&text, fields) {
        Ok(r) => r,
        Err(e) => return Line::Bad(e.0),
    };
    let doc = record.body.as_document();
    if doc.len() > max_doc_bytes {
        return Line::Bad(format!("document is larger than --max-doc-bytes {max_doc_bytes}"));
    }
    let id = match record.id.as_deref().map(|raw| neardup::id_from_json(raw.get())) {
        Some(Ok(id)) => Some(id.into_owned()),
        Some(Err(e)) => return Line::Bad(format!("field {:?}: {e}", fields.id)),
        None => None,
    };
    Line::Record { sketch: engine.sketch(doc, doc.len(), scratch), id, rank: record.rank }
}

/// A bucket: a candidate key named with its slot (band or table), one long for Spark to group
/// by. Two buckets sharing a name (about 2^-64 a pair) only add a candidate, which the
/// verification stage's `is_candidate` check removes.
fn bucket(slot: usize, key: u64) -> i64 {
    let mut seed = [0u8; 16];
    seed[..8].copy_from_slice(&(slot as u64).to_le_bytes());
    seed[8..].copy_from_slice(&key.to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&seed) as i64
}

/// The columns of a batch of sketches (see `Sketcher.sketch`).
pub(super) fn sketch_columns<'py>(
    py: Python<'py>,
    engine: &Engine,
    sketches: &[DocSketch],
) -> PyResult<Bound<'py, PyDict>> {
    let keys_per_doc = engine.candidate_key_count();
    let n = sketches.len();
    let lens: Vec<i64> = sketches.iter().map(|s| s.len as i64).collect();
    let empty: Vec<bool> = sketches.iter().map(|s| s.empty).collect();
    let mut exact = Vec::with_capacity(n * 16);
    let mut buckets = Vec::with_capacity(n * keys_per_doc);
    for s in sketches {
        exact.extend_from_slice(&s.exact_key().to_le_bytes());
        let k = engine.candidate_keys(s);
        if k.len() == keys_per_doc {
            buckets.extend(k.iter().enumerate().map(|(slot, &key)| bucket(slot, key)));
        } else {
            buckets.extend(std::iter::repeat_n(0i64, keys_per_doc));
        }
    }
    let bytes: Vec<Vec<u8>> = py.detach(|| sketches.par_iter().map(DocSketch::to_bytes).collect());
    let (offsets, data) = binary_column(bytes.iter().map(Vec::as_slice));
    let out = PyDict::new(py);
    out.set_item("len", lens.into_pyarray(py))?;
    out.set_item("empty", PyArray1::from_slice(py, &empty))?;
    let exact =
        Array2::from_shape_vec((n, 16), exact).map_err(|e| crate::errors::input(e.to_string()))?;
    out.set_item("exact", exact.into_pyarray(py))?;
    let buckets = Array2::from_shape_vec((n, keys_per_doc), buckets)
        .map_err(|e| crate::errors::input(e.to_string()))?;
    out.set_item("buckets", buckets.into_pyarray(py))?;
    out.set_item("sketch_offsets", offsets.into_pyarray(py))?;
    out.set_item("sketch_data", data.into_pyarray(py))?;
    Ok(out)
}
