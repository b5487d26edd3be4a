//! neardup: near-duplicate text detection and similar-text search.
//!
//! A [`PipelineSpec`] (plain, serializable data, with named presets) is compiled once into a
//! [`Pipeline`], which turns documents into weighted features and fingerprints: SimHash for
//! Hamming-distance search, MinHash for Jaccard estimates. [`compare`] measures two documents every
//! way at once. Chinese is first-class: Han text is segmented with jieba by default.
//!
//! ```
//! use neardup::{Document, Pipeline, PipelineSpec, Scratch, Sketches};
//!
//! let pipeline = Pipeline::new(PipelineSpec::preset("en-web")?)?;
//! let mut scratch = Scratch::default();
//! let a = pipeline.fingerprint(
//!     Document::Text("The quick brown fox jumps over the lazy dog"), &mut scratch, Sketches::SIMHASH);
//! let b = pipeline.fingerprint(
//!     Document::Text("The quick brown fox jumped over the lazy dog!"), &mut scratch, Sketches::SIMHASH);
//! assert!(a.simhash.hamming(&b.simhash)? < 32);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod compare;
mod dedup;
mod engine;
mod error;
mod id;
mod idf;
mod job;
mod named;
mod options;
pub mod overlap;
mod pipeline;
mod record;
mod search;
mod spec;
mod summary;
mod table;

pub use compare::{compare, Comparison, EDIT_SIMILARITY_MAX_CHARS};
pub use dedup::{
    bucket_candidates, components, read_manifest, saved_index_files, AtThreshold, Cluster, Copies,
    Dedup, DedupError, DedupOutcome, DocSketch, IndexLock, IndexManifest, Keep, Method, Pair,
    Pairs, PreparedIndex, Rank, RankKind, SearchConfig, SortBy, Verification, DEFAULT_MAX_BUCKET,
    DEFAULT_RECALL, DEFAULT_STAR_WIDTH, INDEX_FORMAT_VERSION, OLDEST_INDEX_FORMAT,
};
pub use engine::{
    BelowThreshold, Engine, Hit, KeySource, QueryError, SearchPlan, SourceError, DEFAULT_SCAN_LIMIT,
};
pub use error::{io_message, BuildError};
pub use id::{
    check_collection_id, id_from_json, id_from_saved, id_to_json, IdError, RepeatedIds,
    MAX_ID_BYTES,
};
pub use idf::IdfBuilder;
pub use job::{CompiledJob, JobError, JobSpec};
pub use named::{
    Check, CheckAnswer, IdSource, NamedEngine, OpenIndexError, Stored, StoredDoc, StoredIndex,
};
pub use options::{FeatureChoice, PipelineOptions};
pub use pipeline::{
    Document, Fingerprint, OwnedDocument, Pipeline, Scratch, Sketches, WeightedFeature,
};
pub use record::{
    parse_json_record, record_line, text_span, JsonRecord, RecordError, RecordFields,
    DEFAULT_MAX_DOC_BYTES, MAX_DOC_BYTES,
};
pub use search::{
    SearchOption, SearchSpec, SearchSpecError, SearchUse, DEFAULT_HAMMING, DEFAULT_THRESHOLD,
};
pub use spec::{
    IdfSource, MinHashSpec, PipelineSpec, Preset, StopWordsSpec, Weighting, FORMAT_VERSION,
    MAX_NGRAM, MAX_TOP_N, PRESETS,
};
pub use summary::{bytes_text, count_of, Summary};
pub use table::{option_row, option_table, OptionGroup, OptionKind, OptionRow};

/// A name that no other call gives, in this process or another: the clock, the process id and a
/// counter, hashed to 16 hex digits. Saved indexes name their docs files with it, and the
/// service its collections' incarnations.
pub fn unique_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed =
        format!("{nanos}/{}/{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(seed.as_bytes()))
}

// The README's Rust example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "compat")]
pub mod profile;

/// The crates neardup is built from, re-exported for their types.
#[cfg(feature = "compat")]
pub use neardup_compat as compat;
pub use neardup_sketch as sketch;
pub use neardup_text as text;
