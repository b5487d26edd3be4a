//! The Python exceptions of neardup: the tree of `neardup.errors` (`neardup.Error` and its
//! subclasses, each also the built-in it was before: `ValueError`, `TypeError`, `OSError`),
//! raised from Rust by name. Library errors map to it by their kind, here and nowhere else.

use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;

/// A class of `neardup.errors`, or the built-in it extends when that module cannot be imported
/// (an extension loaded without its package): the error is then still raised, untyped.
fn raise(class: &'static str, message: String) -> PyErr {
    Python::attach(|py| {
        let typed = py
            .import("neardup.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
        match typed {
            Ok(cls) => PyErr::from_type(cls, message),
            Err(_) => match class {
                "InputTypeError" => PyTypeError::new_err(message),
                "FileError" => PyOSError::new_err(message),
                _ => PyValueError::new_err(message),
            },
        }
    })
}

/// A value neardup cannot take (`neardup.InputError`, a `ValueError`).
pub(crate) fn input(message: impl Into<String>) -> PyErr {
    raise("InputError", message.into())
}

/// An option, a spec or contradicting settings (`neardup.OptionError`, a `ValueError`).
pub(crate) fn option(message: impl Into<String>) -> PyErr {
    raise("OptionError", message.into())
}

/// A value of the wrong type (`neardup.InputTypeError`, a `TypeError`).
pub(crate) fn input_type(message: impl Into<String>) -> PyErr {
    raise("InputTypeError", message.into())
}

/// A file that cannot be read or written (`neardup.FileError`, an `OSError`).
pub(crate) fn file(message: impl Into<String>) -> PyErr {
    raise("FileError", message.into())
}

/// A saved index that cannot be used (`neardup.IndexFileError`, a `ValueError`).
pub(crate) fn index_file(message: impl Into<String>) -> PyErr {
    raise("IndexFileError", message.into())
}

/// A saved index of another pipeline or settings (`neardup.PipelineMismatchError`).
pub(crate) fn pipeline_mismatch(message: impl Into<String>) -> PyErr {
    raise("PipelineMismatchError", message.into())
}

/// A library error's message with its cause.
fn with_source(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    if let Some(source) = e.source() {
        message.push_str(": ");
        message.push_str(&source.to_string());
    }
    message
}

/// A pipeline spec error.
pub(crate) fn build_error(e: neardup::BuildError) -> PyErr {
    let message = with_source(&e);
    match e {
        neardup::BuildError::Io { .. } => file(message),
        _ => option(message),
    }
}

/// A dedup or saved-index error.
pub(crate) fn dedup_error(e: neardup::DedupError) -> PyErr {
    use neardup::DedupError as E;
    let message = with_source(&e);
    match e {
        E::Io { .. } | E::Spill { .. } => file(message),
        E::Mismatch { .. } => pipeline_mismatch(message),
        // A directory that does not exist is a file error (OSError), as it was; one that holds
        // another kind of index, or none, is an index-file error.
        E::NoIndex { ref path, .. } if !path.exists() => file(message),
        E::Corrupt { .. } | E::OldFormat { .. } | E::NoIndex { .. } => index_file(message),
        E::InvalidConfig { .. } => option(message),
        _ => input(message),
    }
}

/// A passage-check error.
pub(crate) fn overlap_error(e: neardup::overlap::OverlapError) -> PyErr {
    use neardup::overlap::OverlapError as E;
    match e {
        E::Io { .. } => file(e.to_string()),
        E::InvalidSpec { .. } => option(e.to_string()),
        E::WrongType { .. } | E::UnknownOption { .. } => input_type(e.to_string()),
        E::Format { .. } => index_file(e.to_string()),
        _ => input(e.to_string()),
    }
}

/// Contradicting or malformed search settings.
pub(crate) fn search_error(e: neardup::SearchSpecError) -> PyErr {
    option(e.to_string())
}

/// A job spec's error, by the part at fault.
pub(crate) fn job_error(e: neardup::JobError) -> PyErr {
    match e {
        neardup::JobError::Pipeline(e) => build_error(e),
        neardup::JobError::Config(e) => dedup_error(e),
        other => option(other.to_string()),
    }
}
