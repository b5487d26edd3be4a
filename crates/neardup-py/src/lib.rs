//! `neardup._neardup`: the Python extension behind the `neardup` package.
//!
//! Glue only, like the CLI and the server: arguments become a [`neardup::PipelineSpec`] through
//! [`neardup::PipelineOptions`] (the names of the command line), work goes to the `neardup`
//! library, and errors become the exceptions of `neardup.errors` with the library's messages
//! (`errors.rs`: `neardup.Error` and its subclasses, still `ValueError` for invalid options and
//! data, `TypeError` for wrong types, `OSError` for files). Batch calls read
//! texts in place (Python `str` objects, or the buffers of an Arrow string array), release the
//! GIL, and run on every core with rayon. No Rust panic reaches Python: every entry point runs
//! under [`guard`], which turns one into a `RuntimeError`.

mod datasketch;
mod dedup;
mod errors;
mod index;
mod interrupt;
mod overlap;
mod pipeline;
mod profiles;
mod spark;
mod texts;
mod values;

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Runs `f`, turning a panic into `RuntimeError` (a bug in neardup, reported as such).
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in neardup (please report it): {message}"
            )))
        }
    }
}

pub(crate) use errors::{build_error, dedup_error};

#[pymodule]
fn _neardup(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("FORMAT_VERSION", neardup::FORMAT_VERSION)?;
    m.add("MAX_NUM_PERM", neardup::sketch::MAX_NUM_PERM)?;
    m.add("DEFAULT_RECALL", neardup::DEFAULT_RECALL)?;
    m.add("DEFAULT_MAX_DOC_BYTES", neardup::DEFAULT_MAX_DOC_BYTES)?;
    m.add("MAX_DOC_BYTES", neardup::MAX_DOC_BYTES)?;
    pipeline::register(m)?;
    dedup::register(m)?;
    index::register(m)?;
    overlap::register(m)?;
    profiles::register(m)?;
    datasketch::register(m)?;
    spark::register(m)?;
    Ok(())
}
