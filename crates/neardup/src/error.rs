use std::fmt;
use std::path::PathBuf;

use neardup_sketch::{IdfError, SketchError};

/// An error compiling a [`crate::PipelineSpec`] into a [`crate::Pipeline`].
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// No preset has this name.
    UnknownPreset {
        /// The name asked for.
        name: String,
    },
    /// A file named by the spec could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A file named by the spec is not valid UTF-8.
    InvalidUtf8 {
        /// The file.
        path: PathBuf,
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// An idf file is malformed.
    Idf {
        /// The file, or `None` for bundled data.
        path: Option<PathBuf>,
        /// What is wrong with it.
        source: IdfError,
    },
    /// A field of the spec has an invalid value.
    InvalidSpec {
        /// The field, as a dotted path (`minhash.num_perm`).
        field: &'static str,
        /// Why it is invalid.
        message: String,
    },
    /// The sketch parameters are invalid.
    Sketch(SketchError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::UnknownPreset { name } => {
                let names: Vec<&str> = crate::PRESETS.iter().map(|p| p.name).collect();
                write!(f, "unknown preset {name:?}: expected one of {}", names.join(", "))
            }
            // The source is returned by `source()`, not repeated here (anyhow's `{:#}` and
            // other chain printers would print it twice).
            BuildError::Io { path, .. } => write!(f, "cannot read {}", path.display()),
            BuildError::InvalidUtf8 { path, offset } => {
                write!(f, "{}: invalid UTF-8 at byte offset {offset}", path.display())
            }
            BuildError::Idf { path: Some(path), .. } => {
                write!(f, "{}: not a valid idf file", path.display())
            }
            BuildError::Idf { path: None, .. } => write!(f, "the bundled idf table is not valid"),
            BuildError::InvalidSpec { field, message } => write!(f, "{field}: {message}"),
            BuildError::Sketch(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Io { source, .. } => Some(source),
            BuildError::Idf { source, .. } => Some(source),
            // Transparent: its message is this error's message.
            BuildError::Sketch(e) => e.source(),
            _ => None,
        }
    }
}

impl From<SketchError> for BuildError {
    fn from(e: SketchError) -> Self {
        BuildError::Sketch(e)
    }
}

/// Reads a UTF-8 text file for the spec, with errors that name the file.
pub(crate) fn read_text_file(path: &std::path::Path) -> Result<String, BuildError> {
    let bytes = std::fs::read(path)
        .map_err(|source| BuildError::Io { path: path.to_path_buf(), source })?;
    String::from_utf8(bytes).map_err(|e| BuildError::InvalidUtf8 {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// An I/O error's message without the `(os error N)` suffix that the standard library adds:
/// "No space left on device", said once, for messages that name the file themselves.
pub fn io_message(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}
