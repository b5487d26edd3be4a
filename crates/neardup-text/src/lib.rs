//! Text to features: the linguistic front half of neardup.
//!
//! ```text
//! &str -Normalizer-> Cow<str> -Segmenter-> [Token] -TokenFilter-> -Featurizer-> feature bytes
//! ```
//!
//! Every stage is chosen at run time from serializable configuration, compiled once into an
//! immutable [`TextPipeline`] (`Send + Sync`), and run with a per-thread [`TextScratch`] so that a
//! document costs no allocation beyond what its text changes require. Tokens are byte spans into
//! the normalized text, never owned strings. This crate does no hashing and no I/O.
//!
//! ```
//! use neardup_text::{FeatureKind, SegmenterKind, StopWords, TextConfig, TextPipeline, TextScratch};
//!
//! let config = TextConfig {
//!     segmenter: SegmenterKind::Auto,
//!     features: FeatureKind::Words,
//!     ..TextConfig::default()
//! };
//! let pipeline = TextPipeline::new(&config, StopWords::none());
//! let mut scratch = TextScratch::default();
//! let mut words = Vec::new();
//! pipeline.features("Hello, 世界！Near-duplicate", &mut scratch, |f| words.push(f.to_string()));
//! assert_eq!(words, ["hello", "世界", "near", "duplicate"]);
//! ```
#![deny(missing_docs)]

mod featurize;
mod normalize;
mod pipeline;
mod script;
mod segment;
mod stopwords;
#[cfg(feature = "zh")]
pub mod zh;
mod zh_script;

pub use featurize::{FeatureKind, Featurizer};
pub use normalize::{KeepFilter, NormalizeConfig, Normalizer, ZhScript};
pub use pipeline::{PunctuationPolicy, TextConfig, TextPipeline, TextScratch};
pub use script::{is_han, is_unspaced, is_unspaced_alphabetic, Script};
pub use segment::{
    segment_text, CharSegmenter, Segmenter, SegmenterKind, Token, TokenKind, UnicodeWordSegmenter,
    WhitespaceSegmenter,
};
#[cfg(feature = "zh")]
pub use segment::{AutoSegmenter, ChineseSegmenter};
pub use stopwords::{BuiltinStopWords, StopWords};
pub use zh_script::zh_script_chars;
