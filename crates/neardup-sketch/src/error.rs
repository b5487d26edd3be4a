use std::fmt;

/// An error from comparing or building sketches.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SketchError {
    /// Two fingerprints of different widths were compared.
    WidthMismatch {
        /// Bits of the left fingerprint.
        left: u32,
        /// Bits of the right fingerprint.
        right: u32,
    },
    /// Two MinHash signatures of different lengths were compared.
    LengthMismatch {
        /// Length of the left signature.
        left: usize,
        /// Length of the right signature.
        right: usize,
    },
    /// A MinHash configuration asked for zero hash values.
    ZeroPermutations,
    /// A MinHash configuration asked for more hash values than [`crate::MAX_NUM_PERM`].
    TooManyPermutations {
        /// The number asked for.
        num_perm: usize,
    },
    /// LSH parameters could not be chosen from these arguments.
    InvalidLsh {
        /// What is wrong.
        message: String,
    },
    /// A hexadecimal fingerprint could not be parsed.
    BadHex {
        /// The text that was given.
        text: String,
    },
}

impl fmt::Display for SketchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SketchError::WidthMismatch { left, right } => {
                write!(f, "cannot compare a {left}-bit fingerprint with a {right}-bit one")
            }
            SketchError::LengthMismatch { left, right } => {
                write!(f, "cannot compare a MinHash of {left} values with one of {right} values")
            }
            SketchError::ZeroPermutations => write!(f, "num_perm must be at least 1"),
            SketchError::TooManyPermutations { num_perm } => {
                write!(f, "num_perm {num_perm} is above the limit of {}", crate::MAX_NUM_PERM)
            }
            SketchError::InvalidLsh { message } => write!(f, "{message}"),
            SketchError::BadHex { text } => {
                write!(f, "{text:?} is not a hexadecimal fingerprint of 8, 16 or 32 digits")
            }
        }
    }
}

impl std::error::Error for SketchError {}
