//! The option table: every option a user gives neardup's jobs, once, with its group, what it
//! takes (bounds or choices), its default, a one-line doc, and its spelling on each surface
//! (ripgrep's `Flag` is the model). The surfaces take their help, defaults, bounds and schemas
//! from here (`neardup options --json` and Python's `neardup.options()` print it), and a test
//! over the table checks each surface against it: a surface that lacks an option, spells it
//! otherwise, or shows another default or bound fails there, not in a user's hands.
//!
//! ```
//! let table = neardup::option_table();
//! let threshold = table.iter().find(|r| r.name == "threshold" && r.group == neardup::OptionGroup::Search).unwrap();
//! assert_eq!(threshold.default, serde_json::json!(0.8));
//! assert_eq!(threshold.cli.as_deref(), Some("--threshold"));
//! ```

use serde::Serialize;
use serde_json::{json, Value};

use crate::options::{
    name_of, FEATURES, HASHES, KEEP_CHARS, MINHASH_SCHEMES, SEGMENTERS, STOP_LISTS, WEIGHTS,
    ZH_SCRIPTS,
};
use crate::overlap::{OverlapSpec, MAX_OVERLAP_FANOUT, MAX_OVERLAP_UNITS};
use crate::{
    FeatureChoice, Method, PipelineSpec, Verification, DEFAULT_HAMMING, DEFAULT_MAX_BUCKET,
    DEFAULT_STAR_WIDTH, DEFAULT_THRESHOLD, MAX_NGRAM, MAX_TOP_N,
};

/// Which part of a job an option belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionGroup {
    /// Text to features to sketches (`PipelineOptions`): every job's.
    Pipeline,
    /// Candidates and verification (`SearchSpec`): dedup runs and collections.
    Search,
    /// The passage check (`OverlapOptions`): `neardup overlap`, passage collections.
    Passages,
    /// One search or check of a collection (its request or call).
    Query,
}

/// What an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionKind {
    /// True or false.
    Flag,
    /// A whole number within `min..=max`.
    Integer,
    /// A number within `min..=max` (`min_exclusive`, `max_exclusive`: open ends).
    Number,
    /// One of `choices`.
    Choice,
    /// Some of `choices`.
    Choices,
    /// Text (its form is in the doc).
    Text,
    /// A file's path.
    Path,
    /// Two numbers.
    Pair,
}

/// One option: what it is and how each surface spells it (`None`: the surface lacks it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OptionRow {
    /// Its name: Python's keyword and the service's JSON key.
    pub name: &'static str,
    /// The part of the job it belongs to.
    pub group: OptionGroup,
    /// What it takes.
    pub kind: OptionKind,
    /// Its value when not given (`null`: inferred, as the doc says).
    pub default: Value,
    /// The least value (a number), if bounded.
    pub min: Option<Value>,
    /// The greatest value, if bounded.
    pub max: Option<Value>,
    /// True when `min` itself is not allowed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub min_exclusive: bool,
    /// True when `max` itself is not allowed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub max_exclusive: bool,
    /// The values it takes, for a choice.
    pub choices: Option<Vec<&'static str>>,
    /// What it takes, in words (`"a number in (0, 1]"`): for help texts and messages.
    pub takes: String,
    /// What it does, in one line.
    pub doc: &'static str,
    /// The command line's flag (`--min-units`).
    pub cli: Option<String>,
    /// Python's keyword argument.
    pub python: Option<&'static str>,
    /// The service's JSON key.
    pub http: Option<&'static str>,
    /// `python -m neardup.spark`'s flag.
    pub spark: Option<String>,
}

impl OptionRow {
    fn new(name: &'static str, group: OptionGroup, kind: OptionKind, doc: &'static str) -> Self {
        OptionRow {
            name,
            group,
            kind,
            default: Value::Null,
            min: None,
            max: None,
            min_exclusive: false,
            max_exclusive: false,
            choices: None,
            takes: String::new(),
            doc,
            cli: Some(format!("--{}", name.replace('_', "-"))),
            python: Some(name),
            http: None,
            spark: None,
        }
    }

    fn default(mut self, v: impl Into<Value>) -> Self {
        self.default = v.into();
        self
    }

    fn range(mut self, min: impl Into<Value>, max: impl Into<Value>) -> Self {
        self.min = Some(min.into());
        self.max = Some(max.into());
        self
    }

    fn open_min(mut self) -> Self {
        self.min_exclusive = true;
        self
    }

    fn open_max(mut self) -> Self {
        self.max_exclusive = true;
        self
    }

    fn choices<T>(mut self, table: &[(&'static str, T)]) -> Self {
        self.choices = Some(table.iter().map(|(n, _)| *n).collect());
        self
    }

    fn cli(mut self, flag: Option<&str>) -> Self {
        self.cli = flag.map(str::to_string);
        self
    }

    fn http(mut self) -> Self {
        self.http = Some(self.name);
        self
    }

    fn spark(mut self) -> Self {
        self.spark = Some(format!("--{}", self.name.replace('_', "-")));
        self
    }

    /// Whether `value` is within this option's bounds and choices (its type checked by the
    /// option's own setter).
    pub fn admits(&self, value: &Value) -> bool {
        if value.is_null() {
            return true;
        }
        if let Some(choices) = &self.choices {
            let one = |v: &Value| v.as_str().is_some_and(|s| choices.contains(&s));
            return match (self.kind, value) {
                (OptionKind::Choices, Value::Array(items)) => items.iter().all(one),
                _ => one(value),
            };
        }
        let Some(x) = value.as_f64() else { return true };
        let below = self.min.as_ref().and_then(Value::as_f64).is_some_and(|m| {
            if self.min_exclusive {
                x <= m
            } else {
                x < m
            }
        });
        let above = self.max.as_ref().and_then(Value::as_f64).is_some_and(|m| {
            if self.max_exclusive {
                x >= m
            } else {
                x > m
            }
        });
        !(below || above || x.is_nan())
    }

    /// The values it takes, in words: `"a number in (0, 1]"`, `"one of a, b"`.
    fn takes_text(&self) -> String {
        match self.kind {
            OptionKind::Flag => "true or false".into(),
            OptionKind::Choice => {
                format!("one of {}", self.choices.as_deref().unwrap_or(&[]).join(", "))
            }
            OptionKind::Choices => {
                format!("some of {}", self.choices.as_deref().unwrap_or(&[]).join(", "))
            }
            OptionKind::Text => "text".into(),
            OptionKind::Path => "a file's path".into(),
            OptionKind::Pair => "two numbers".into(),
            OptionKind::Integer | OptionKind::Number => {
                let what =
                    if self.kind == OptionKind::Integer { "a whole number" } else { "a number" };
                match (&self.min, &self.max) {
                    (Some(a), Some(b)) => format!(
                        "{what} in {}{a}, {b}{}",
                        if self.min_exclusive { "(" } else { "[" },
                        if self.max_exclusive { ")" } else { "]" }
                    ),
                    (Some(a), None) => format!("{what}, at least {a}"),
                    _ => what.to_string(),
                }
            }
        }
    }
}

/// The value option `name` has in `spec`, by the names every surface uses (the defaults of the
/// pipeline group are the `default` preset's values).
fn pipeline_value(spec: &PipelineSpec, name: &str) -> Value {
    use neardup_text::FeatureKind;
    let features = match spec.features {
        FeatureKind::Auto { .. } => Some(FeatureChoice::Auto),
        FeatureKind::Words => Some(FeatureChoice::Words),
        FeatureKind::WordShingles { .. } => Some(FeatureChoice::Shingles),
        FeatureKind::CharNgrams { .. } => Some(FeatureChoice::Ngrams),
        FeatureKind::Keywords { .. } => Some(FeatureChoice::Keywords),
        _ => None,
    };
    match name {
        "segmenter" => json!(name_of(SEGMENTERS, &spec.segmenter)),
        "features" => json!(features.and_then(|f| name_of(FEATURES, &f))),
        "ngram" => match spec.features {
            FeatureKind::Auto { n }
            | FeatureKind::WordShingles { n }
            | FeatureKind::CharNgrams { n } => json!(n),
            _ => Value::Null,
        },
        "top_n" => match spec.features {
            FeatureKind::Keywords { top_n } => json!(top_n),
            _ => json!(20),
        },
        "stop_words" => json!(spec
            .stop_words
            .builtin
            .iter()
            .filter_map(|l| name_of(STOP_LISTS, l))
            .collect::<Vec<_>>()),
        "weights" => json!(name_of(WEIGHTS, &spec.weighting)),
        "hash" => json!(name_of(HASHES, &spec.hash)),
        "bits" => json!(spec.simhash_bits.get()),
        "num_perm" => json!(spec.minhash.num_perm),
        "seed" => json!(spec.minhash.seed),
        "minhash_scheme" => json!(name_of(MINHASH_SCHEMES, &spec.minhash.scheme)),
        "keep_chars" => json!(name_of(KEEP_CHARS, &spec.normalize.keep)),
        "nfkc" => json!(spec.normalize.nfkc),
        "case_fold" => json!(spec.normalize.case_fold),
        "collapse_whitespace" => json!(spec.normalize.collapse_whitespace),
        "zh_script" => json!(name_of(ZH_SCRIPTS, &spec.normalize.zh_script)),
        "no_stop_words" | "keep_punct" => json!(false),
        _ => Value::Null,
    }
}

/// Every option, in the order surfaces list them: pipeline, search, passages, query.
pub fn option_table() -> Vec<OptionRow> {
    use OptionGroup::{Passages, Pipeline, Query, Search};
    use OptionKind::*;
    let base = PipelineSpec::preset("default").unwrap_or_default();
    let p = |name: &'static str, kind: OptionKind, doc: &'static str| {
        OptionRow::new(name, Pipeline, kind, doc).default(pipeline_value(&base, name))
    };
    let mut rows = vec![
        OptionRow::new(
            "preset",
            Pipeline,
            Text,
            "the named starting point the other pipeline options override (`neardup presets` lists them; `--profile datasketch` starts from datasketch)",
        )
        .default("default")
        .http()
        .spark(),
        p("segmenter", Choice, "how text is cut into words: Han runs with jieba, other scripts by Unicode word rules (auto)")
            .choices(SEGMENTERS),
        p("features", Choice, "what is compared: word shingles, or character n-grams for Chinese (auto), words, shingles, ngrams, keywords")
            .choices(FEATURES),
        p("ngram", Integer, "the size of word shingles and character n-grams").range(1, MAX_NGRAM),
        p("top_n", Integer, "keywords kept with features keywords").range(1, MAX_TOP_N),
        p("stop_words", Choices, "built-in stop word lists dropped, comma-separated on the command line (the preset's when not given)")
            .choices(STOP_LISTS),
        p("stop_words_file", Path, "a UTF-8 file of more stop words, one per line"),
        p("no_stop_words", Flag, "drop no stop words at all"),
        p("keep_punct", Flag, "keep tokens without letters or digits (dropped by default)"),
        p("weights", Choice, "feature weights: each occurrence, each distinct feature, tf, or tf x idf")
            .choices(WEIGHTS),
        p("idf", Path, "an IDF table in jieba's format (default: jieba's bundled one)"),
        p("hash", Choice, "the feature hash function").choices(HASHES),
        OptionRow::new("bits", Pipeline, Choice, "the SimHash width in bits")
            .default(pipeline_value(&base, "bits"))
            .choices(&[("32", ()), ("64", ()), ("128", ())]),
        p("num_perm", Integer, "MinHash values per signature").range(1, neardup_sketch::MAX_NUM_PERM),
        p("seed", Integer, "the MinHash seed").range(0, u64::MAX),
        p("minhash_scheme", Choice, "num_perm hash functions, or one-permutation hashing (oph: optimal densification)")
            .choices(MINHASH_SCHEMES),
        p("keep_chars", Choice, "characters kept before anything else: all, Han only, letters and digits")
            .choices(KEEP_CHARS),
        p("nfkc", Flag, "Unicode NFKC normalization (full-width to half-width)").cli(Some("--no-nfkc")),
        p("case_fold", Flag, "fold case").cli(Some("--no-case-fold")),
        p("collapse_whitespace", Flag, "collapse runs of whitespace (none next to Han characters)")
            .cli(Some("--no-collapse-whitespace")),
        p("zh_script", Choice, "the Chinese script text is compared in (OpenCC: simplified, traditional, Taiwan's to the mainland's)")
            .choices(ZH_SCRIPTS),
    ];
    let s = |name: &'static str, kind: OptionKind, doc: &'static str| {
        OptionRow::new(name, Search, kind, doc).spark()
    };
    rows.extend([
        s("method", Choice, "how candidates are found: minhash (LSH bands), simhash (permuted tables), both (inferred: simhash when hamming is given)")
            .http()
            .choices(&Method::ALL.map(|m| (m.name(), ()))),
        s("threshold", Number, "the similarity threshold: pairs at or above it are near-duplicates")
            .http()
            .default(DEFAULT_THRESHOLD)
            .range(0, 1)
            .open_min(),
        s("hamming", Integer, "the largest SimHash Hamming distance of a near-duplicate (below the width)")
            .http()
            .default(DEFAULT_HAMMING)
            .range(0, 127),
        s("verify", Choice, "how candidates are confirmed (jaccard for minhash, hamming for simhash)")
            .http()
            .choices(&Verification::ALL.map(|v| (v.name(), ()))),
        s("bands", Integer, "LSH bands, with rows (instead of the choice for recall)")
            .http()
            .range(1, neardup_sketch::MAX_NUM_PERM),
        s("rows", Integer, "LSH rows per band, with bands").http().range(1, neardup_sketch::MAX_NUM_PERM),
        s("recall", Number, "the probability that a pair at the threshold becomes a candidate: the cheapest bands and rows that reach it (0.99; datasketch's weights 0.5,0.5 with verify estimate)")
            .http()
            .range(0, 1)
            .open_min()
            .open_max(),
        s("lsh_weights", Pair, "choose the bands as datasketch does: false positive and false negative weights").http(),
        s("keep", Text, "which document of a cluster is kept: first (in input order), longest, shortest, max:FIELD or min:FIELD (the largest number or newest ISO 8601 date of a field; dotted names reach into objects; ties and records without it go to the first)")
            .default("first"),
        s("max_bucket", Integer, "the skew guard: a bucket of more documents pairs only its first star_width with the others")
            .default(DEFAULT_MAX_BUCKET)
            .range(2, usize::MAX),
        s("star_width", Integer, "the first members of a bucket over max_bucket paired with the others")
            .default(DEFAULT_STAR_WIDTH)
            .range(1, usize::MAX),
    ]);
    let d = OverlapSpec::default();
    let o = |name: &'static str, kind: OptionKind, doc: &'static str| {
        OptionRow::new(name, Passages, kind, doc).http().spark()
    };
    rows.extend([
        o("min_units", Integer, "the shortest passage reported, in units (a Chinese character, or a word)")
            .default(d.min_units)
            .range(1, MAX_OVERLAP_UNITS),
        o("max_gap", Integer, "the longest run of edited units bridged inside one passage")
            .default(d.max_gap)
            .range(0, MAX_OVERLAP_UNITS),
        o("min_similarity", Number, "the least similarity of a passage to its source: units aligned one to one over its length")
            .default(d.min_similarity)
            .range(0, 1)
            .open_min(),
        o("seed_units", Integer, "units per k-gram, the shortest exact match that counts (a saved index's own unless given)")
            .default(d.seed)
            .range(1, MAX_OVERLAP_UNITS),
        o("window", Integer, "the winnowing window in k-grams: a shared run of seed_units + window - 1 units is always found (a saved index's own unless given)")
            .default(d.window)
            .range(1, MAX_OVERLAP_UNITS),
        o("max_sources", Integer, "the most candidate sources aligned with one query")
            .default(d.max_sources)
            .range(1, MAX_OVERLAP_FANOUT),
        o("keep_quotes", Flag, "count quotations and reference lists as copied text").default(false),
        o("zh_script", Choice, "the Chinese script passages are compared in: a copy converted to traditional characters still matches its source (OpenCC; a saved index's own unless given)")
            .default(name_of(ZH_SCRIPTS, &d.zh_script).unwrap_or("keep"))
            .choices(ZH_SCRIPTS),
        o("min_density", Number, "the least evidence per unit of a passage: its k-grams weighed by how few other documents hold them")
            .default(d.min_density)
            .range(0, 1),
        o("max_quote_chars", Integer, "the longest quotation in characters: a longer one, or one past its paragraph, quotes nothing")
            .default(d.max_quote_chars)
            .range(1, 100_000),
        o("min_anchor_chars", Integer, "the verbatim anchor of a short passage: one of fewer than twice this many characters (punctuation and spaces not counted) is reported only if it holds this many in a row without an edit (the field's 13 identical characters); 0: off")
            .default(d.min_anchor_chars)
            .range(0, MAX_OVERLAP_UNITS),
    ]);
    rows.extend([
        OptionRow::new(
            "threshold",
            Query,
            Number,
            "this search's or check's threshold (below the collection's: a bounded scan)",
        )
        .range(0, 1)
        .open_min()
        .cli(None)
        .http(),
        OptionRow::new("top_k", Query, Integer, "the most matches answered")
            .default(10)
            .range(0, usize::MAX)
            .cli(None)
            .http(),
    ]);
    for r in &mut rows {
        r.takes = r.takes_text();
    }
    rows
}

/// The row of option `name` in `group`.
pub fn option_row(group: OptionGroup, name: &str) -> Option<OptionRow> {
    option_table().into_iter().find(|r| r.group == group && r.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_passage_options_are_checked_by_their_rows() {
        use crate::overlap::{OverlapError, OverlapOptions, OverlapSpec};
        let of_default =
            serde_json::to_value(OverlapOptions::of(&OverlapSpec::default())).expect("serializes");
        for row in option_table().into_iter().filter(|r| r.group == OptionGroup::Passages) {
            let mut o = OverlapOptions::default();
            o.set(row.name, &row.default).expect("the default is taken");
            assert_eq!(
                serde_json::to_value(&o).expect("serializes")[row.name],
                of_default[row.name],
                "{}",
                row.name
            );
            let wrong = if row.kind == OptionKind::Flag { json!(1) } else { json!([true]) };
            let e = o.set(row.name, &wrong).expect_err("a value of another kind");
            assert!(matches!(e, OverlapError::WrongType { .. }), "{}: {e}", row.name);
            assert_eq!(
                e.to_string(),
                format!("{}: expected {}, found {wrong}", row.name, row.takes)
            );
            let mut outside = vec![];
            if let Some(min) = row.min.as_ref().and_then(Value::as_f64) {
                outside.push(if row.min_exclusive { json!(min) } else { json!(min - 1.0) });
            }
            if let Some(max) = row.max.as_ref().and_then(Value::as_f64) {
                outside.push(json!(max + 1.0));
            }
            if row.kind == OptionKind::Integer {
                outside.extend([json!(-1), json!(2.5), json!(u64::MAX)]);
            }
            if row.kind == OptionKind::Choice {
                outside.push(json!("no such choice"));
            }
            for v in outside {
                let e = o.set(row.name, &v).expect_err("a value out of range");
                assert!(matches!(e, OverlapError::InvalidSpec { .. }), "{}={v}: {e}", row.name);
                assert!(e.to_string().starts_with(&format!("{}: expected", row.name)), "{e}");
            }
        }
        let e = OverlapOptions::default().set("min_unit", &json!(3)).expect_err("unknown");
        assert!(matches!(e, OverlapError::UnknownOption { .. }), "{e}");
        assert!(e.to_string().contains("expected one of min_units"), "{e}");
    }

    #[test]
    fn each_option_is_in_the_table_once_per_group() {
        let table = option_table();
        let mut seen = std::collections::HashSet::new();
        for r in &table {
            assert!(seen.insert((r.group, r.name)), "{} twice in {:?}", r.name, r.group);
        }
        let names = |g: OptionGroup| -> Vec<&str> {
            table.iter().filter(|r| r.group == g).map(|r| r.name).collect()
        };
        assert_eq!(names(OptionGroup::Pipeline), crate::PipelineOptions::NAMES);
        let search: Vec<&str> = crate::SearchSpec::OPTIONS.iter().map(|o| o.name).collect();
        assert_eq!(names(OptionGroup::Search), search);
        assert_eq!(names(OptionGroup::Passages), crate::overlap::OverlapOptions::NAMES);
    }

    #[test]
    fn defaults_are_the_librarys_own() {
        let table = option_table();
        let row = |g, n| table.iter().find(|r| r.group == g && r.name == n).expect("a row");
        // The passage defaults are OverlapSpec's, set through the options by their names.
        let mut given = serde_json::Map::new();
        for r in table.iter().filter(|r| r.group == OptionGroup::Passages) {
            given.insert(r.name.to_string(), r.default.clone());
        }
        let options: crate::overlap::OverlapOptions =
            serde_json::from_value(Value::Object(given)).expect("the defaults parse");
        assert_eq!(options.to_spec().expect("valid"), OverlapSpec::default());
        // The pipeline defaults, set by name, give the default preset back.
        let mut o = crate::PipelineOptions::default();
        for r in table.iter().filter(|r| r.group == OptionGroup::Pipeline) {
            if !r.default.is_null() && !matches!(r.kind, OptionKind::Path) {
                let v = if r.name == "bits" {
                    json!(r.default.as_u64().expect("bits"))
                } else {
                    r.default.clone()
                };
                o.set(r.name, &v).unwrap_or_else(|e| panic!("{}: {e}", r.name));
            }
        }
        assert_eq!(
            o.to_spec("default").expect("valid"),
            PipelineSpec::preset("default").expect("p")
        );
        let resolved = crate::SearchSpec::default().resolve().expect("valid");
        assert_eq!(row(OptionGroup::Search, "threshold").default, json!(resolved.threshold));
        assert_eq!(row(OptionGroup::Search, "hamming").default, json!(resolved.hamming));
        assert_eq!(row(OptionGroup::Search, "max_bucket").default, json!(resolved.max_bucket));
    }

    #[test]
    fn choices_are_the_serde_names_of_every_variant() {
        // A variant added to an enum without its place in ALL fails to compile here.
        for m in Method::ALL {
            match m {
                Method::MinHash | Method::SimHash | Method::Both => {}
            }
            assert_eq!(serde_json::to_value(m).expect("serializes"), json!(m.name()));
        }
        for v in Verification::ALL {
            match v {
                Verification::Jaccard
                | Verification::Cosine
                | Verification::Hamming
                | Verification::Estimate => {}
            }
            assert_eq!(serde_json::to_value(v).expect("serializes"), json!(v.name()));
        }
        for (name, script) in ZH_SCRIPTS {
            assert_eq!(serde_json::to_value(script).expect("serializes"), json!(name));
        }
    }

    #[test]
    fn bounds_are_said_and_checked() {
        let t = option_row(OptionGroup::Search, "threshold").expect("row");
        assert_eq!(t.takes, "a number in (0, 1]");
        assert!(t.admits(&json!(1.0)) && !t.admits(&json!(0.0)) && !t.admits(&json!(1.5)));
        let z = option_row(OptionGroup::Passages, "zh_script").expect("row");
        assert!(z.admits(&json!("mainland")) && !z.admits(&json!("cantonese")));
        let v = option_row(OptionGroup::Search, "verify").expect("row");
        assert_eq!(v.choices.as_deref(), Some(&["jaccard", "cosine", "hamming", "estimate"][..]));
    }
}
