//! Corpora as users hold them, for the jobs of [`neardup`].
//!
//! - [`read`]: JSON Lines, Parquet and Arrow files, plain-text files, `.gz` and `.zst`, directories and standard input,
//!   record by record, each bad record an [`InputError`] that says where (file, line, byte
//!   offset) and whether it may be skipped;
//! - [`dedup`]: the two-pass dedup of such a corpus (sketch every record, let the library find the
//!   clusters, read the input again to copy the kept records byte for byte, after checking it is
//!   the same input), and the JSON Lines it writes;
//! - [`columnar`]: Parquet and Arrow IPC files, read as one record per row (columns named as
//!   fields, dotted into structs) and written as outputs ([`columnar::TableWriter`]);
//! - [`report`]: the HTML report of a dedup run, while it runs or from its outputs;
//! - [`decisions`]: a reviewer's "not a duplicate" marks exported from the report;
//! - [`write`]: outputs that never harm inputs or each other (checked before anything is opened,
//!   written to a temporary file, renamed into place when the run succeeded, removed on a
//!   signal).
//!
//! The `neardup` CLI is these parts behind its flags; a Rust program that wants "dedup this JSONL"
//! calls them the same way:
//!
//! ```no_run
//! use neardup::{Dedup, SearchConfig, Pipeline, PipelineSpec};
//! use neardup_corpus::dedup::{copy_records, sketch_sources, Ids, Silent};
//! use neardup_corpus::read::{Format, ReadOptions, Source};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pipeline = Pipeline::new(PipelineSpec::preset("default")?)?;
//! let mut dedup = Dedup::new(&pipeline, SearchConfig::default())?;
//! let sources = vec![Source::File("corpus.jsonl".into())];
//! let opts = ReadOptions { format: Some(Format::Jsonl), ..ReadOptions::default() };
//! let mut ids = Ids::default();
//! let read = sketch_sources(&mut dedup, &sources, &opts, &mut ids, &mut Silent)?;
//! let outcome = dedup.run()?;
//! let mut kept = Vec::new();
//! let mut keep_kept = |keep: bool, record: &[u8]| {
//!     if keep {
//!         kept.extend_from_slice(record);
//!     }
//!     Ok::<(), neardup_corpus::CorpusError>(())
//! };
//! copy_records(&sources, &opts, &read.digests, &read.places, &outcome.kept, &mut keep_kept)?;
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

use std::fmt;

pub mod columnar;
pub mod decisions;
pub mod dedup;
pub mod overlap;
pub mod read;
pub mod report;
pub mod write;

pub use read::{InputError, InputErrorKind, ReadOptions};

/// A corpus job that could not be carried out.
#[derive(Debug)]
#[non_exhaustive]
pub enum CorpusError {
    /// The request cannot be carried out as given (an output that is an input, standard input
    /// named twice): the caller's to change.
    Usage(String),
    /// A record or source of the input that could not be read, and where.
    Input(InputError),
    /// The library refused (an index of another pipeline, a spill file that failed).
    Dedup(neardup::DedupError),
    /// An output could not be written, or the input changed between two reads.
    Runtime(String),
    /// The passage check refused (a setting, a saved index) or failed.
    Overlap(neardup::overlap::OverlapError),
    /// Standard output's reader went away and nothing else is being written: the run ends
    /// quietly.
    StdoutClosed,
}

impl fmt::Display for CorpusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorpusError::Usage(m) | CorpusError::Runtime(m) => f.write_str(m),
            CorpusError::Input(e) => e.fmt(f),
            CorpusError::Dedup(e) => e.fmt(f),
            CorpusError::Overlap(e) => e.fmt(f),
            CorpusError::StdoutClosed => f.write_str("standard output was closed"),
        }
    }
}

impl CorpusError {
    /// True when the failure is the caller's to change (the request, a setting, a directory
    /// named as an index that holds none), not the run's.
    pub fn is_usage(&self) -> bool {
        match self {
            CorpusError::Usage(_) => true,
            CorpusError::Dedup(neardup::DedupError::NoIndex { .. }) => true,
            CorpusError::Overlap(e) => overlap::is_usage(e),
            _ => false,
        }
    }
}

impl std::error::Error for CorpusError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CorpusError::Dedup(e) => e.source(),
            _ => None,
        }
    }
}

impl From<InputError> for CorpusError {
    fn from(e: InputError) -> Self {
        CorpusError::Input(e)
    }
}

/// This process's peak resident memory (`VmHWM` in `/proc/self/status`), as `"N MB"`; `None`
/// where it cannot be read.
pub fn peak_memory() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(format!("{:.0} MB", kb / 1024.0))
}
