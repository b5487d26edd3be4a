//! Batches of texts read in place: a list or tuple of `str` (each read through the string's own
//! UTF-8 buffer), or the buffers of an Arrow string array (offsets and data, as numpy arrays the
//! Python layer takes from pyarrow without copying, in a `neardup._input.ArrowTexts`: a type of
//! its own, so that a dict a user passes is never read as buffers). `None`, `bytes` or any other
//! object in a batch is a `TypeError` that names its position.

use numpy::{PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

/// Where the texts of a batch live, kept alive while their `&str` are in use.
pub(crate) enum Source<'py> {
    /// Python strings.
    Strings(Vec<Bound<'py, PyString>>),
    /// An Arrow string array's buffers: data, offsets (i32 or i64) and validity.
    Arrow {
        data: PyReadonlyArray1<'py, u8>,
        offsets: Offsets<'py>,
        valid: Option<PyReadonlyArray1<'py, bool>>,
    },
}

pub(crate) enum Offsets<'py> {
    Small(PyReadonlyArray1<'py, i32>),
    Large(PyReadonlyArray1<'py, i64>),
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into())
}

impl<'py> Source<'py> {
    /// Reads `docs`: a list or tuple of `str`, or the package's `neardup._input.ArrowTexts`
    /// (an Arrow string array's buffers); anything else goes through the package's `as_texts`,
    /// which turns it into one of those or raises a `TypeError` naming what it was given.
    pub(crate) fn from_py(docs: &Bound<'py, PyAny>) -> PyResult<Source<'py>> {
        let items: Vec<Bound<'py, PyAny>> = if let Ok(list) = docs.cast::<PyList>() {
            list.iter().collect()
        } else if let Ok(tuple) = docs.cast::<PyTuple>() {
            tuple.iter().collect()
        } else {
            let input = docs.py().import("neardup._input")?;
            if docs.is_instance(&input.getattr("ArrowTexts")?)? {
                return Source::from_arrow(docs);
            }
            // pandas, pyarrow, numpy or any iterable: `as_texts` turns it into a list of str or
            // ArrowTexts (never called again on its own result), or raises.
            let converted = input.getattr("as_texts")?.call1((docs,))?;
            if converted.is_instance_of::<PyList>()
                || converted.is_instance_of::<PyTuple>()
                || converted.is_instance(&input.getattr("ArrowTexts")?)?
            {
                return Source::from_py(&converted);
            }
            return Err(crate::errors::input_type(format!(
                "expected a list of str, got {}",
                type_name(docs)
            )));
        };
        let mut strings = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            match item.cast_into::<PyString>() {
                Ok(s) => strings.push(s),
                Err(e) => {
                    let obj = e.into_inner();
                    let what = if obj.is_none() {
                        "None".to_string()
                    } else if obj.is_instance_of::<pyo3::types::PyBytes>() {
                        "bytes (decode it first)".to_string()
                    } else {
                        type_name(&obj)
                    };
                    return Err(crate::errors::input_type(format!(
                        "document {i} is {what}, not str"
                    )));
                }
            }
        }
        Ok(Source::Strings(strings))
    }

    /// Reads an `ArrowTexts`: its `data`, `offsets` (int32 or int64) and `valid` arrays.
    fn from_arrow(docs: &Bound<'py, PyAny>) -> PyResult<Source<'py>> {
        let data: PyReadonlyArray1<'py, u8> = docs.getattr("data")?.extract()?;
        let offsets = docs.getattr("offsets")?;
        let offsets = match offsets.extract::<PyReadonlyArray1<'py, i32>>() {
            Ok(o) => Offsets::Small(o),
            Err(_) => Offsets::Large(offsets.extract::<PyReadonlyArray1<'py, i64>>()?),
        };
        let valid = docs.getattr("valid")?;
        let valid = if valid.is_none() { None } else { Some(valid.extract()?) };
        Ok(Source::Arrow { data, offsets, valid })
    }

    /// The texts, in order.
    pub(crate) fn texts(&self) -> PyResult<Vec<&str>> {
        self.texts_named(|i| format!("document {i}"))
    }

    /// The texts, in order; `name` names a document in errors by its position (`document 3`,
    /// or its argument and id).
    pub(crate) fn texts_named(&self, name: impl Fn(usize) -> String) -> PyResult<Vec<&str>> {
        match self {
            Source::Strings(items) => {
                items.iter().enumerate().map(|(i, s)| crate::values::utf8(s, || name(i))).collect()
            }
            Source::Arrow { data, offsets, valid } => {
                let data = data.as_slice()?;
                let bounds: Vec<(i64, i64)> = match offsets {
                    Offsets::Small(o) => {
                        let o = o.as_slice()?;
                        o.windows(2).map(|w| (i64::from(w[0]), i64::from(w[1]))).collect()
                    }
                    Offsets::Large(o) => {
                        let o = o.as_slice()?;
                        o.windows(2).map(|w| (w[0], w[1])).collect()
                    }
                };
                if let Some(v) = valid {
                    if v.len() != bounds.len() {
                        return Err(crate::errors::input(
                            "arrow batch: validity and offsets differ in length",
                        ));
                    }
                }
                let valid = valid.as_ref().map(|v| v.as_slice()).transpose()?;
                let mut out = Vec::with_capacity(bounds.len());
                for (i, &(start, end)) in bounds.iter().enumerate() {
                    if valid.is_some_and(|v| !v[i]) {
                        return Err(crate::errors::input_type(format!(
                            "document {i} is null, not str"
                        )));
                    }
                    let (start, end) = (start as usize, end as usize);
                    if start > end || end > data.len() {
                        return Err(crate::errors::input(format!(
                            "arrow batch: offsets of document {i} ({start}..{end}) are outside its \
                             {} data bytes",
                            data.len()
                        )));
                    }
                    let text = std::str::from_utf8(&data[start..end]).map_err(|e| {
                        crate::errors::input(format!(
                            "document {i} is not UTF-8: invalid byte at offset {}",
                            e.valid_up_to()
                        ))
                    })?;
                    out.push(text);
                }
                Ok(out)
            }
        }
    }
}
