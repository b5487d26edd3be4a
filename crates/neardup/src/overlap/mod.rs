//! The passage check: which passages of a text are copied from which documents of a collection,
//! and how much of the text that is (the thesis check, 论文查重), or which passages the documents
//! of one corpus share.
//!
//! Whole-document similarity cannot answer this: a thesis that takes a fifth of its text from
//! ten sources has a Jaccard similarity near 0 with each of them. The check works on passages:
//!
//! 1. Every document is cut into units (Han characters one by one, words of other scripts; see
//!    `units.rs`) over folded text, so full-width forms, case, punctuation and line breaks do not
//!    matter.
//! 2. The collection's k-grams of units are **winnowed** (Schleimer, Wilkerson and Aiken,
//!    SIGMOD 2003): in every window of `window` consecutive k-gram hashes the smallest is kept,
//!    and the index maps each kept hash to the documents holding it. A query looks up *every*
//!    one of its k-grams, so any match of at least `window + seed - 1` units is certain to hit a
//!    kept hash of its source: the index holds about `2 / (window + 1)` of the k-grams and loses
//!    no copy that long.
//! 3. The documents with most hits are **aligned** with the query (`align.rs`): shared k-grams
//!    are joined into maximal passages across substituted, inserted and deleted units and across
//!    swapped or dropped sentences, and each passage is mapped back to code point and byte
//!    offsets in both texts as given.
//! 4. Passages of several sources over the same text are settled (one source per stretch, the
//!    others named as holding it too), quotations and reference lists are set apart, and the
//!    copied share is counted once per character however many sources hold it.
//!
//! ```
//! use neardup::overlap::{OnExistingId, OverlapSpec, PassageIndex};
//!
//! let mut index = PassageIndex::new(OverlapSpec::default())?;
//! index.add_documents(vec![(
//!     "src".to_string(),
//!     "Winnowing selects the minimum hash in every window of consecutive k-gram hashes, \
//!      so that any match long enough is certain to share a fingerprint.".to_string(),
//! )], OnExistingId::Refuse)?;
//! let found = index.check(
//!     Some("thesis"),
//!     "As is known, winnowing selects the minimum hash in every window of consecutive \
//!      k-gram hashes, so any match long enough is certain to share a fingerprint. The end.",
//!     &[],
//! )?;
//! assert_eq!(found.passages.len(), 1);
//! assert_eq!(index.id(found.passages[0].source), "src");
//! assert!(found.copied() > 0.7);
//! # Ok::<(), neardup::overlap::OverlapError>(())
//! ```

mod align;
mod check;
mod exclude;
mod file;
mod index;
pub mod parts;
mod record;
mod runs;
mod saved;
pub mod stored;
mod units;

use std::fmt;
use std::path::PathBuf;

use neardup_text::ZhScript;
use serde::{Deserialize, Serialize};

pub use exclude::Exclusion;
pub use file::{IndexBuilder, PASSAGE_INDEX_FILE, PASSAGE_INDEX_FORMAT, TEMPORARY_PREFIX};
pub use index::{Batch, Joined, OnExistingId, PassageIndex};
pub use record::{JsonId, PassageRecord, SourceRecord, SummaryRecord, WrittenIds};
pub use saved::SavedIndex;

/// The settings of the passage check, as data. The first three define the index's fingerprints
/// and are stored with it; the others may change from one check to the next.
///
/// The defaults suit Chinese (a unit is a character) and English (a unit is a word) alike: a
/// Chinese character and an English word carry about the same information (some 10 bits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OverlapSpec {
    /// Units per k-gram, the shortest exact match that counts as shared (3).
    pub seed: u32,
    /// The winnowing window, in k-grams (4): every shared run of at least `seed + window - 1`
    /// units (6) is found.
    pub window: u32,
    /// A k-gram held by more documents than this is indexed for the first this many only (256):
    /// boilerplate still finds its first holders, and one common phrase cannot make every
    /// document a candidate.
    pub max_postings: u32,
    /// The shortest passage reported, in units (12).
    pub min_units: u32,
    /// The longest run of edited units bridged inside a passage (8).
    pub max_gap: u32,
    /// The least similarity of a passage to its source (0.75): the units aligned one to one
    /// over the longer of the passage and the stretches of the source it copies. A copy with
    /// one word in ten replaced has about 0.9; a sentence frame two texts of a field share
    /// with other names and terms in it, 0.5 to 0.8.
    pub min_similarity: f64,
    /// Leave quotations out of the copied share (true).
    pub exclude_quotes: bool,
    /// Leave the reference list out of the copied share (true).
    pub exclude_references: bool,
    /// The most candidate sources aligned with one query, best first (400).
    pub max_sources: u32,
    /// The longest quotation, in characters (300): an opening mark whose closing mark is
    /// farther, or past the end of its paragraph, quotes nothing, so a quotation cannot hide a
    /// long copy.
    pub max_quote_chars: u32,
    /// The least evidence of a reported passage: the k-grams it matches exactly, each counted
    /// `1 / df` (how many documents of the collection hold it), so that what a field's writing
    /// shares (datelines, stock phrases, templates) does not count as copied.
    pub min_evidence: f64,
    /// The least evidence per unit of a reported passage (0.06). The evidence counts the
    /// passage's k-grams that the index keeps (about `2 / (window + 1)` of them), each `1 / df`,
    /// `df` counting the documents that hold it besides those holding the passage itself (at
    /// least half of its k-grams: a text standing in several documents is still a copy): a
    /// verbatim copy has about 0.3 per unit, a heavily reworded one 0.1 to 0.2, and a long
    /// loose match of a field's stock phrases and sentence frames, each held by other
    /// documents, under 0.05. Higher: fewer false passages, fewer reworded copies found.
    pub min_density: f64,
    /// The verbatim anchor a short passage needs, in characters (13, the field's "13
    /// identical characters in a row"): a passage of fewer than twice this many characters
    /// (of its units: punctuation and spaces not counted) is reported only when it holds a
    /// run of at least this many aligned without an edit. A short loose match (a dateline
    /// with other names and dates in it, a stock phrase with a word changed) is what a
    /// field's writing shares by chance; a copy that short is a verbatim one. Longer passages
    /// are judged by their similarity and evidence alone. An English word is some five
    /// characters, so English passages of `min_units` words are past it; 0 turns it off.
    pub min_anchor_chars: u32,
    /// The Chinese script units are compared in (simplified): a passage copied and converted
    /// to traditional characters matches its source. The pipeline's `zh_script` (OpenCC), read
    /// in place; it defines the index's fingerprints. Settings saved before it existed were
    /// compared as written (`keep`).
    #[serde(default = "zh_script_before_folding")]
    pub zh_script: ZhScript,
}

/// How settings saved before units were written in one script compared them: as written.
fn zh_script_before_folding() -> ZhScript {
    ZhScript::Keep
}

impl Default for OverlapSpec {
    fn default() -> Self {
        OverlapSpec {
            seed: 3,
            window: 4,
            max_postings: 256,
            min_units: 12,
            max_gap: 8,
            min_similarity: 0.75,
            exclude_quotes: true,
            exclude_references: true,
            max_sources: 400,
            max_quote_chars: 300,
            min_evidence: 0.0,
            min_density: 0.06,
            min_anchor_chars: 13,
            // Without the Chinese data there is no conversion: the units are as written.
            zh_script: if cfg!(feature = "zh") { ZhScript::Simplified } else { ZhScript::Keep },
        }
    }
}

/// The name a `zh_script` value has in settings (its serde name).
pub(crate) fn zh_script_name(script: ZhScript) -> String {
    serde_json::to_value(script)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{script:?}"))
}

/// The largest `seed`, `window`, `max_gap` and `min_units`: beyond these nothing is a copy
/// anyone checks for.
pub const MAX_OVERLAP_UNITS: u32 = 1000;
/// The largest `max_postings` and `max_sources`.
pub const MAX_OVERLAP_FANOUT: u32 = 1_000_000;

impl OverlapSpec {
    /// Checks every value; the error names the field.
    pub fn validate(&self) -> Result<(), OverlapError> {
        let bad = |field: &'static str, message: String| {
            Err(OverlapError::InvalidSpec { field, message })
        };
        for (field, v) in
            [("seed", self.seed), ("window", self.window), ("min_units", self.min_units)]
        {
            if v == 0 || v > MAX_OVERLAP_UNITS {
                return bad(field, format!("must be in 1..={MAX_OVERLAP_UNITS}, got {v}"));
            }
        }
        if self.max_gap > MAX_OVERLAP_UNITS {
            return bad(
                "max_gap",
                format!("must be at most {MAX_OVERLAP_UNITS}, got {}", self.max_gap),
            );
        }
        for (field, v) in [("max_postings", self.max_postings), ("max_sources", self.max_sources)] {
            if v == 0 || v > MAX_OVERLAP_FANOUT {
                return bad(field, format!("must be in 1..={MAX_OVERLAP_FANOUT}, got {v}"));
            }
        }
        if !(self.min_similarity > 0.0 && self.min_similarity <= 1.0) {
            return bad(
                "min_similarity",
                format!("must be in (0, 1], got {}", self.min_similarity),
            );
        }
        if self.max_quote_chars == 0 || self.max_quote_chars > 100_000 {
            return bad(
                "max_quote_chars",
                format!("must be in 1..=100000, got {}", self.max_quote_chars),
            );
        }
        if self.min_anchor_chars > MAX_OVERLAP_UNITS {
            return bad(
                "min_anchor_chars",
                format!("must be at most {MAX_OVERLAP_UNITS}, got {}", self.min_anchor_chars),
            );
        }
        if !(self.min_density >= 0.0 && self.min_density <= 1.0) {
            return bad("min_density", format!("must be in [0, 1], got {}", self.min_density));
        }
        if !(self.min_evidence >= 0.0 && self.min_evidence <= 1e6) {
            return bad(
                "min_evidence",
                format!("must be in [0, 1000000], got {}", self.min_evidence),
            );
        }
        if self.min_units < self.seed {
            return bad(
                "min_units",
                format!(
                    "must be at least seed ({}): a passage holds at least one k-gram, got {}",
                    self.seed, self.min_units
                ),
            );
        }
        Ok(())
    }

    /// The settings that define an index's fingerprints, which a saved index keeps and a check
    /// against it must share.
    pub(crate) fn index_fields(&self) -> [(&'static str, String); 4] {
        [
            ("seed", self.seed.to_string()),
            ("window", self.window.to_string()),
            ("max_postings", self.max_postings.to_string()),
            ("zh_script", zh_script_name(self.zh_script).to_string()),
        ]
    }

    /// An id of the fingerprint settings: 16 hex digits of a hash of their canonical form (with
    /// the version of the fingerprints, 1, not the file format: format 2 files hold the same
    /// fingerprints). Two indexes with one id were fingerprinted alike. (`zh_script` joins
    /// the canonical form when it is not `keep`, so the ids of indexes made before it stay.)
    pub fn index_id(&self) -> String {
        let canonical = format!(
            "passages/v1/{}",
            self.index_fields()
                .into_iter()
                .filter(|(k, v)| !(*k == "zh_script" && v == "keep"))
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(canonical.as_bytes()))
    }
}

/// The passage check's settings by the names every surface gives them: the options of
/// `neardup overlap` (`--min-units`), Python's keywords and the service's `passages` object
/// (`min_units`). A field left out keeps its default; [`OverlapOptions::to_spec`] checks the
/// values and names a bad one by these names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlapOptions {
    /// [`OverlapSpec::min_units`].
    pub min_units: Option<u32>,
    /// [`OverlapSpec::max_gap`].
    pub max_gap: Option<u32>,
    /// [`OverlapSpec::min_similarity`].
    pub min_similarity: Option<f64>,
    /// [`OverlapSpec::seed`].
    pub seed_units: Option<u32>,
    /// [`OverlapSpec::window`].
    pub window: Option<u32>,
    /// [`OverlapSpec::max_sources`].
    pub max_sources: Option<u32>,
    /// Count quotations and reference lists as copied text (false: [`OverlapSpec::exclude_quotes`]
    /// and [`OverlapSpec::exclude_references`]).
    pub keep_quotes: Option<bool>,
    /// [`OverlapSpec::zh_script`].
    pub zh_script: Option<ZhScript>,
    /// [`OverlapSpec::min_density`].
    pub min_density: Option<f64>,
    /// [`OverlapSpec::max_quote_chars`].
    pub max_quote_chars: Option<u32>,
    /// [`OverlapSpec::min_anchor_chars`].
    pub min_anchor_chars: Option<u32>,
}

impl OverlapOptions {
    /// The option names, in the order surfaces list them.
    pub const NAMES: [&'static str; 11] = [
        "min_units",
        "max_gap",
        "min_similarity",
        "seed_units",
        "window",
        "max_sources",
        "keep_quotes",
        "zh_script",
        "min_density",
        "max_quote_chars",
        "min_anchor_chars",
    ];

    /// Sets one option from a JSON value by its name (`null`: not given), checked against its
    /// row of the option table ([`crate::option_table`]): an unknown name is an
    /// [`OverlapError::UnknownOption`], a value of the wrong kind (text for a number) an
    /// [`OverlapError::WrongType`], a value out of the option's range or choices an
    /// [`OverlapError::InvalidSpec`]; each names the option and says what it takes, in the
    /// table's words, on every surface.
    pub fn set(&mut self, name: &str, value: &serde_json::Value) -> Result<(), OverlapError> {
        use crate::table::{option_row, OptionGroup, OptionKind};
        let row = option_row(OptionGroup::Passages, name)
            .ok_or_else(|| OverlapError::UnknownOption { name: name.to_string() })?;
        let field = row.name;
        let message = format!("expected {}, found {value}", row.takes);
        if !value.is_null() {
            let right_kind = match row.kind {
                OptionKind::Flag => value.is_boolean(),
                OptionKind::Integer | OptionKind::Number => value.is_number(),
                OptionKind::Choice | OptionKind::Text | OptionKind::Path => value.is_string(),
                OptionKind::Choices | OptionKind::Pair => value.is_array(),
            };
            if !right_kind {
                return Err(OverlapError::WrongType { field, message });
            }
            // A negative or fractional count is a number out of the option's range.
            let whole = row.kind != OptionKind::Integer || value.as_u64().is_some();
            if !whole || !row.admits(value) {
                return Err(OverlapError::InvalidSpec { field, message });
            }
        }
        let mut all = serde_json::to_value(&*self).expect("options are plain data");
        all[field] = value.clone();
        *self = serde_json::from_value(all)
            .map_err(|_| OverlapError::InvalidSpec { field, message })?;
        Ok(())
    }

    /// The options of a JSON object (the service's `"passages"`, a table's row), each set by
    /// name ([`OverlapOptions::set`]).
    pub fn from_json(value: &serde_json::Value) -> Result<OverlapOptions, OverlapError> {
        let object = value.as_object().ok_or_else(|| OverlapError::WrongType {
            field: "passages",
            message: format!("expected an object of options, found {value}"),
        })?;
        let mut options = OverlapOptions::default();
        for (name, v) in object {
            options.set(name, v)?;
        }
        Ok(options)
    }

    /// The spec these options give, checked; an [`OverlapError::InvalidSpec`] names the option.
    pub fn to_spec(&self) -> Result<OverlapSpec, OverlapError> {
        self.apply(OverlapSpec::default())
    }

    /// `base` with each option given applied, checked (a saved index's settings, changed where
    /// the caller asks).
    pub fn apply(&self, base: OverlapSpec) -> Result<OverlapSpec, OverlapError> {
        let spec = OverlapSpec {
            seed: self.seed_units.unwrap_or(base.seed),
            window: self.window.unwrap_or(base.window),
            min_units: self.min_units.unwrap_or(base.min_units),
            max_gap: self.max_gap.unwrap_or(base.max_gap),
            min_similarity: self.min_similarity.unwrap_or(base.min_similarity),
            exclude_quotes: self.keep_quotes.map_or(base.exclude_quotes, |k| !k),
            exclude_references: self.keep_quotes.map_or(base.exclude_references, |k| !k),
            max_sources: self.max_sources.unwrap_or(base.max_sources),
            zh_script: self.zh_script.unwrap_or(base.zh_script),
            min_density: self.min_density.unwrap_or(base.min_density),
            max_quote_chars: self.max_quote_chars.unwrap_or(base.max_quote_chars),
            min_anchor_chars: self.min_anchor_chars.unwrap_or(base.min_anchor_chars),
            ..base
        };
        spec.validate().map_err(|e| match e {
            OverlapError::InvalidSpec { field, message } => {
                OverlapError::InvalidSpec { field: option_name(field), message }
            }
            e => e,
        })?;
        Ok(spec)
    }

    /// Every option of `spec`, given: what a passage collection is described as, in the words
    /// it is created with (`GET` answers what `PUT` takes).
    pub fn of(spec: &OverlapSpec) -> OverlapOptions {
        OverlapOptions {
            min_units: Some(spec.min_units),
            max_gap: Some(spec.max_gap),
            min_similarity: Some(spec.min_similarity),
            seed_units: Some(spec.seed),
            window: Some(spec.window),
            max_sources: Some(spec.max_sources),
            keep_quotes: Some(!spec.exclude_quotes),
            zh_script: Some(spec.zh_script),
            min_density: Some(spec.min_density),
            max_quote_chars: Some(spec.max_quote_chars),
            min_anchor_chars: Some(spec.min_anchor_chars),
        }
    }
}

/// The numbers of the documents of `ids`, each found by `find`; an id not found is
/// [`OverlapError::UnknownSource`].
pub(crate) fn numbers_by(
    ids: &[String],
    find: impl Fn(&str) -> Option<u32>,
) -> Result<Vec<u32>, OverlapError> {
    ids.iter()
        .map(|id| find(id).ok_or_else(|| OverlapError::UnknownSource { id: id.clone() }))
        .collect()
}

/// The option a field of [`OverlapSpec`] is given by (`seed` is `seed_units`), for messages.
pub(crate) fn option_name(field: &'static str) -> &'static str {
    match field {
        "seed" => "seed_units",
        "exclude_quotes" | "exclude_references" => "keep_quotes",
        other => other,
    }
}

/// One copied passage of a query: its range in the query, its source's range, both as code
/// points (Python string indices) and UTF-8 bytes, end exclusive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Passage {
    /// The source's number in the index ([`PassageIndex::id`] names it).
    pub source: u32,
    /// Other documents that hold the same text, by number.
    pub also: Vec<u32>,
    /// First code point in the query.
    pub start: u64,
    /// End (exclusive) in the query.
    pub end: u64,
    /// First byte in the query.
    pub start_byte: u64,
    /// End byte (exclusive) in the query.
    pub end_byte: u64,
    /// First code point in the source.
    pub source_start: u64,
    /// End (exclusive) in the source.
    pub source_end: u64,
    /// First byte in the source.
    pub source_start_byte: u64,
    /// End byte (exclusive) in the source.
    pub source_end_byte: u64,
    /// The units aligned one to one with its source over the longer of the passage and the
    /// source's stretches (1 for a verbatim copy; see [`OverlapSpec::min_similarity`]).
    pub similarity: f64,
    /// How strongly the passage says "copied" rather than "shared by chance": the k-grams it
    /// matches exactly, each counted `1 / df` (`df`: documents of the collection holding it).
    pub evidence: f64,
    /// Set when the passage is left out of the copied share (a quotation, the references).
    pub exclusion: Option<Exclusion>,
}

impl Passage {
    /// Code points of the query inside the passage.
    pub fn chars(&self) -> u64 {
        self.end - self.start
    }
}

/// How much of a query one source holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceShare {
    /// The source's number in the index.
    pub source: u32,
    /// Code points of the query inside counted passages of this source (each counted once).
    pub chars: u64,
    /// Code points of the query inside quotations (and reference lists) that this source holds
    /// and no counted passage covers: cited, reported apart (a CNKI report's 引用).
    pub quoted_chars: u64,
}

/// The passage check of one query.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Overlap {
    /// Code points of the query.
    pub chars: u64,
    /// The copied passages counted in the copied share, in query order.
    pub passages: Vec<Passage>,
    /// Copied passages left out of it (quotations, references), in query order.
    pub excluded: Vec<Passage>,
    /// Code points inside some counted passage, each counted once.
    pub copied_chars: u64,
    /// Code points inside some excluded passage and no counted one.
    pub excluded_chars: u64,
    /// The sources of counted passages, most copied first (ties: lower number).
    pub sources: Vec<SourceShare>,
}

impl Overlap {
    /// `text` (the query's own text, document `own` of a corpus checked within itself) without
    /// the byte ranges of its passages whose source is an earlier document (a passage given to a
    /// later one is this text's first occurrence, kept), and the code points removed: substring
    /// dedup, the first holder of each passage keeping it.
    pub fn without_repeats(&self, text: &str, own: u32) -> (String, u64) {
        let mut cut: Vec<(usize, usize)> = self
            .passages
            .iter()
            .chain(&self.excluded)
            .filter(|p| p.source < own)
            .map(|p| (p.start_byte as usize, p.end_byte as usize))
            .collect();
        cut.sort_unstable();
        let (mut out, mut at, mut removed) = (String::with_capacity(text.len()), 0usize, 0u64);
        for (a, b) in cut {
            if b <= at {
                continue;
            }
            let a = a.max(at);
            out.push_str(&text[at..a]);
            removed += text[a..b].chars().count() as u64;
            at = b;
        }
        out.push_str(&text[at..]);
        (out, removed)
    }

    /// The copied share of the query, in [0, 1] (0 for an empty query).
    pub fn copied(&self) -> f64 {
        if self.chars == 0 {
            0.0
        } else {
            self.copied_chars as f64 / self.chars as f64
        }
    }

    /// `part` code points as a share of the query, rounded to four decimals: how every output
    /// (the summary lines, Python, the service) gives the copied shares.
    pub fn share(&self, part: u64) -> f64 {
        if self.chars == 0 {
            0.0
        } else {
            (part as f64 / self.chars as f64 * 1e4).round() / 1e4
        }
    }

    /// The share copied counting quotations and references too.
    pub fn copied_with_excluded(&self) -> f64 {
        if self.chars == 0 {
            0.0
        } else {
            (self.copied_chars + self.excluded_chars) as f64 / self.chars as f64
        }
    }
}

/// An error of the passage check.
#[derive(Debug)]
#[non_exhaustive]
pub enum OverlapError {
    /// A setting is out of range.
    InvalidSpec {
        /// The field of [`OverlapSpec`].
        field: &'static str,
        /// Why.
        message: String,
    },
    /// An option given a value of the wrong kind (text for a number, a number for a flag).
    WrongType {
        /// The option's name.
        field: &'static str,
        /// What it takes and what it was given.
        message: String,
    },
    /// An option the passage check does not have.
    UnknownOption {
        /// The name given.
        name: String,
    },
    /// A source named to be left out (`exclude_source`) that the collection does not hold.
    UnknownSource {
        /// The id, as text.
        id: String,
    },
    /// Two documents of a collection have one id.
    DuplicateId {
        /// The id.
        id: String,
    },
    /// A document is longer than the index can hold (4 GiB).
    TooLong {
        /// The document's id.
        id: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// A saved index could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        step: IoStep,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A saved index is not one this version reads, or is damaged.
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The caller's stop flag was set ([`PassageIndex::set_stop`]).
    Stopped,
    /// A saved index was fingerprinted with other settings than the check asks for.
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The setting.
        field: &'static str,
        /// The index's value.
        index: String,
        /// The value asked for.
        asked: String,
    },
}

/// What a saved passage index was being used for when an I/O error came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoStep {
    /// Loading it.
    Read,
    /// Saving it (the temporary file, the rename, the directory's sync).
    Save,
}

impl fmt::Display for OverlapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverlapError::InvalidSpec { field, message }
            | OverlapError::WrongType { field, message } => write!(f, "{field}: {message}"),
            OverlapError::UnknownOption { name } => write!(
                f,
                "unknown passage option {name:?}: expected one of {}",
                OverlapOptions::NAMES.join(", ")
            ),
            OverlapError::UnknownSource { id } => {
                write!(f, "no document of the collection has the id {}", crate::id_to_json(id))
            }
            OverlapError::DuplicateId { id } => {
                write!(f, "id {id} is given to two documents of the collection")
            }
            OverlapError::TooLong { id, bytes } => write!(
                f,
                "document {id} has {bytes} bytes: the passage index holds documents under 4 GiB"
            ),
            OverlapError::Stopped => write!(f, "stopped by the caller"),
            OverlapError::Io { path, step, source } => {
                let what = match step {
                    IoStep::Read => "reading the passage index",
                    IoStep::Save => "saving the passage index to",
                };
                write!(f, "{what} {}: {}", path.display(), crate::io_message(source))?;
                // The way out, where there is one.
                use std::io::ErrorKind;
                match (step, source.kind()) {
                    (IoStep::Save, ErrorKind::StorageFull | ErrorKind::QuotaExceeded) => f
                        .write_str(
                            ": free some space there, or save the index in another directory",
                        ),
                    (IoStep::Save, ErrorKind::FileTooLarge) => f.write_str(
                        ": a file may not grow this large here (a file size limit): raise it, or \
                         save the index in another file system",
                    ),
                    (IoStep::Save, ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem) => {
                        f.write_str(": save the index in a directory you may write to")
                    }
                    (IoStep::Read, ErrorKind::PermissionDenied) => {
                        f.write_str(": the file is not readable by this user")
                    }
                    _ => Ok(()),
                }
            }
            OverlapError::Format { path, message } => write!(f, "{}: {message}", path.display()),
            OverlapError::Mismatch { path, field, index, asked } => write!(
                f,
                "{}: the passage index was built with {field} {index}, and this check asks for \
                 {asked}: give the index's value, or build a new index",
                path.display()
            ),
        }
    }
}

/// No `source()`: an I/O error's message is part of this one's (every surface prints one line,
/// and a chain printer would say it twice).
impl std::error::Error for OverlapError {}
