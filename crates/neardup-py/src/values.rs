//! Python values as the library takes them, one conversion for every entry point: options as
//! JSON (the names of the library's tables), texts and ids as UTF-8, counts as integers in
//! range. What has no such form is refused here, naming the argument, its place and the value,
//! as the `neardup.errors` class that fits; never Python's raw `UnicodeEncodeError` or
//! `OverflowError`, and never a value silently read as another (serde_json writes NaN as
//! `null`, which the option tables read as "not given": `threshold=nan` ran at the default).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PySlice, PyString, PyTuple};

/// An option's value (`str`, `int`, `float`, `bool`, `None`, list, tuple, dict) as JSON, for
/// the library's option tables (`SearchSpec::set`, `PipelineOptions::set`, a spec). `what`
/// names the option in errors (`lsh_weights[0]`, `spec.minhash.num_perm` inside). A float that
/// is NaN or infinite, or an int beyond 64 bits, is an `OptionError` naming the option and the
/// value: JSON has no form for either.
pub(crate) fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<serde_json::Value> {
    use serde_json::Value;
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(n) = obj.extract::<u64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = obj.extract::<i64>() {
            return Ok(Value::from(n));
        }
        return Err(crate::errors::option(format!(
            "{what}: expected a number from {} to {}, found {}",
            i64::MIN,
            u64::MAX,
            obj.str()?
        )));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let x = f.value();
        return match serde_json::Number::from_f64(x) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(crate::errors::option(format!(
                "{what}: expected a finite number, found {}",
                obj.repr()?
            ))),
        };
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let text = utf8(s, || format!("{what}: the value"))
            .map_err(|e| crate::errors::option(e.value(obj.py()).to_string()))?;
        return Ok(Value::String(text.to_string()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(crate::errors::input_type(format!(
                    "{what}: dict keys must be str, found {}",
                    k.get_type().name()?
                )));
            };
            let key = utf8(key, || format!("{what}: a key"))
                .map_err(|e| crate::errors::option(e.value(obj.py()).to_string()))?;
            map.insert(key.to_string(), to_json(&v, &format!("{what}.{key}"))?);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items: Vec<Value> = obj
            .try_iter()?
            .enumerate()
            .map(|(i, x)| to_json(&x?, &format!("{what}[{i}]")))
            .collect::<PyResult<_>>()?;
        return Ok(Value::Array(items));
    }
    Err(crate::errors::input_type(format!(
        "{what}: cannot use a {} here (expected str, int, float, bool, None, list or dict)",
        obj.get_type().name()?
    )))
}

/// A float argument that is no option of a table (`Index.search(threshold=...)`): NaN and the
/// infinities are refused as [`to_json`] refuses them, naming the argument.
pub(crate) fn finite(what: &str, x: Option<f64>) -> PyResult<Option<f64>> {
    match x {
        Some(x) if !x.is_finite() => Err(crate::errors::option(format!(
            "{what}: expected a finite number, found {}",
            python_float(x)
        ))),
        _ => Ok(x),
    }
}

/// A float as Python writes it (`nan`, `inf`, `-inf`, `0.5`).
fn python_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        x.to_string()
    }
}

/// A count argument (`top_k`): an int from 0 to `usize::MAX`. A negative or too large int is
/// an `OptionError` naming the argument and the value (not Python's `OverflowError`); another
/// type an `InputTypeError`.
pub(crate) fn count(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    if !obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyBool>() {
        return Err(crate::errors::input_type(format!(
            "{what}: expected an int, found {}",
            obj.get_type().name()?
        )));
    }
    obj.extract::<usize>().map_err(|_| {
        let shown = obj.str().map(|s| s.to_string()).unwrap_or_default();
        crate::errors::option(format!(
            "{what}: expected a whole number from 0 to {}, found {shown}",
            usize::MAX
        ))
    })
}

/// The UTF-8 of a Python string. A string holding a lone surrogate (text decoded with
/// `errors="surrogateescape"`, or a bad `"\ud800"` escape) has none: that is an `InputError`
/// saying where (`what()`: the argument and its position), which character, and a short
/// excerpt of the value around it, instead of Python's `UnicodeEncodeError`.
pub(crate) fn utf8<'a>(
    s: &'a Bound<'_, PyString>,
    what: impl FnOnce() -> String,
) -> PyResult<&'a str> {
    s.to_str().map_err(|e| {
        let py = s.py();
        let start = e.value(py).getattr("start").and_then(|v| v.extract::<usize>()).unwrap_or(0);
        let len = s.len().unwrap_or(0);
        let (from, to) = (start.saturating_sub(20), (start + 21).min(len));
        let excerpt = s
            .as_any()
            .get_item(PySlice::new(py, from as isize, to as isize, 1))
            .and_then(|x| x.repr())
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "?".into());
        let code: u32 = s
            .as_any()
            .get_item(start)
            .and_then(|c| py.import("builtins")?.getattr("ord")?.call1((c,))?.extract())
            .unwrap_or(0);
        crate::errors::input(format!(
            "{} is not valid Unicode: a lone surrogate U+{code:04X} at character {start} \
             ({}{excerpt}{}), which UTF-8 cannot encode (decode the bytes with \
             errors=\"replace\", or clean the text: text.encode(\"utf-8\", \"replace\").decode())",
            what(),
            if from > 0 { "..." } else { "" },
            if to < len { "..." } else { "" },
        ))
    })
}

/// A document id as Python gives it, by the library's rule: a str, or an int standing for its
/// decimal text (`7` and `"7"` are one id), within the length a collection stores.
pub(crate) fn doc_id(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let id = if let Ok(s) = obj.cast::<pyo3::types::PyString>() {
        crate::values::utf8(s, || what.to_string())?.to_string()
    } else if obj.is_instance_of::<pyo3::types::PyInt>()
        && !obj.is_instance_of::<pyo3::types::PyBool>()
    {
        obj.str()?.to_str()?.to_string()
    } else {
        return Err(crate::errors::input_type(format!(
            "{what}: an id must be a str or an int, found {}",
            obj.get_type().name()?
        )));
    };
    neardup::check_collection_id(&id).map_err(|e| crate::errors::input(format!("{what}: {e}")))?;
    Ok(id)
}
