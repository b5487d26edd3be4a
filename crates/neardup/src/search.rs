//! The search settings of a job as the user gives them, and the one place their defaults,
//! inferences and contradictions are decided.
//!
//! Every surface (the CLI's flags, Python's keyword arguments, Spark's job arguments, the
//! service's collection settings) fills a [`SearchSpec`] with what the user gave, under the same
//! names, and calls [`SearchSpec::resolve`]: so `hamming` implies SimHash, `hamming` with
//! `method: minhash` is refused, and the threshold defaults to 0.8 in exactly one place.

use serde::{Deserialize, Serialize};

use crate::{Keep, Method, SearchConfig, Verification};

/// The threshold when none is given.
pub const DEFAULT_THRESHOLD: f64 = 0.8;
/// The largest Hamming distance when none is given (Manku et al.: 3 of 64 bits).
pub const DEFAULT_HAMMING: u32 = 3;

/// The search options as given (`None`: not given), named as on every surface (`--hamming`,
/// `hamming=`, `"hamming"`).
///
/// ```
/// use neardup::{Method, SearchSpec};
///
/// // A Hamming distance asks for SimHash candidates.
/// let config = SearchSpec { hamming: Some(4), ..SearchSpec::default() }.resolve()?;
/// assert_eq!((config.method, config.hamming), (Method::SimHash, 4));
/// // ...and contradicts MinHash ones.
/// let wrong = SearchSpec { method: Some(Method::MinHash), hamming: Some(4), ..SearchSpec::default() };
/// assert_eq!(wrong.resolve().unwrap_err().option, "hamming");
/// # Ok::<(), neardup::SearchSpecError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSpec {
    /// How candidates are found (inferred: SimHash when `hamming` is given, else MinHash).
    pub method: Option<Method>,
    /// The similarity threshold, in (0, 1] ([`DEFAULT_THRESHOLD`]).
    pub threshold: Option<f64>,
    /// The largest Hamming distance of SimHash candidates ([`DEFAULT_HAMMING`]).
    pub hamming: Option<u32>,
    /// How candidates are confirmed (the method's default).
    pub verify: Option<Verification>,
    /// LSH bands (with `rows`).
    pub bands: Option<usize>,
    /// LSH rows per band (with `bands`).
    pub rows: Option<usize>,
    /// The probability that a pair at the threshold becomes a candidate (the banding's target).
    pub recall: Option<f64>,
    /// `(false positive, false negative)` weights of datasketch's banding choice.
    pub lsh_weights: Option<(f64, f64)>,
    /// Which document of a cluster is kept.
    pub keep: Option<Keep>,
    /// The skew guard: the largest bucket paired in full ([`crate::DEFAULT_MAX_BUCKET`]).
    #[serde(default)]
    pub max_bucket: Option<usize>,
    /// The skew guard: first members of a larger bucket paired with the others
    /// ([`crate::DEFAULT_STAR_WIDTH`]).
    #[serde(default)]
    pub star_width: Option<usize>,
}

/// A contradiction among the search options: the option at fault and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchSpecError {
    /// The option at fault, by its name in [`SearchSpec`] (surfaces spell it their way).
    pub option: &'static str,
    /// Why, in words every surface can show.
    pub message: String,
}

impl std::fmt::Display for SearchSpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.option, self.message)
    }
}

impl std::error::Error for SearchSpecError {}

/// One search option: its name on every surface (the CLI spells it `--lsh-weights`, Python,
/// the service and Spark `lsh_weights`), what it takes, and where it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOption {
    /// The name.
    pub name: &'static str,
    /// The values it takes, in words.
    pub takes: &'static str,
    /// True when a collection (the service's, Python's `Index`) takes it; `keep` chooses among a
    /// batch run's clusters and applies only there.
    pub collections: bool,
}

/// Where a search option is given: a batch run, or a collection that answers searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchUse {
    /// `dedup`, `report`, Python's `dedup`, Spark.
    Batch,
    /// The service's collections, Python's `Index`.
    Collection,
}

impl SearchSpec {
    /// Every search option, in the order surfaces list them. The one table: a surface that
    /// lacks one, or spells it otherwise, fails its test against this list.
    pub const OPTIONS: &'static [SearchOption] = &[
        SearchOption { name: "method", takes: "minhash | simhash | both", collections: true },
        SearchOption { name: "threshold", takes: "a number in (0, 1]", collections: true },
        SearchOption { name: "hamming", takes: "bits, below the SimHash width", collections: true },
        SearchOption {
            name: "verify",
            takes: "jaccard | cosine | hamming | estimate",
            collections: true,
        },
        SearchOption { name: "bands", takes: "a count (with rows)", collections: true },
        SearchOption { name: "rows", takes: "a count (with bands)", collections: true },
        SearchOption { name: "recall", takes: "a probability in (0, 1)", collections: true },
        SearchOption {
            name: "lsh_weights",
            takes: "[false positive weight, false negative weight]",
            collections: true,
        },
        SearchOption {
            name: "keep",
            takes: "first | longest | shortest | max:FIELD | min:FIELD",
            collections: false,
        },
        SearchOption { name: "max_bucket", takes: "a count, at least 2", collections: false },
        SearchOption { name: "star_width", takes: "a count, at least 1", collections: false },
    ];

    /// The names of [`SearchSpec::OPTIONS`] that apply to `usage`.
    pub fn names(usage: SearchUse) -> impl Iterator<Item = &'static str> {
        Self::OPTIONS
            .iter()
            .filter(move |o| usage == SearchUse::Batch || o.collections)
            .map(|o| o.name)
    }

    /// Sets one option by name from a JSON value (`null`: not given), as Python's keyword
    /// arguments and the service's JSON give them. An unknown name, one that does not apply to
    /// `usage`, or a value of the wrong kind is an error naming the option.
    pub fn set(
        &mut self,
        name: &str,
        value: &serde_json::Value,
        usage: SearchUse,
    ) -> Result<(), SearchSpecError> {
        let Some(option) = Self::OPTIONS.iter().find(|o| o.name == name) else {
            let names: Vec<&str> = Self::names(usage).collect();
            return Err(SearchSpecError {
                option: "options",
                message: format!("unknown option {name:?}: expected one of {}", names.join(", ")),
            });
        };
        let refuse = |message: String| Err(SearchSpecError { option: option.name, message });
        if usage == SearchUse::Collection && !option.collections {
            return refuse(
                if option.name == "keep" {
                    "chooses which document of a cluster a dedup run keeps; a collection keeps \
                     every document"
                } else {
                    "bounds a dedup run's candidate buckets; a collection's searches look up one \
                     document's buckets"
                }
                .to_string(),
            );
        }
        if value.is_null() {
            return Ok(());
        }
        fn parse<T: serde::de::DeserializeOwned>(
            value: &serde_json::Value,
            takes: &str,
        ) -> Result<T, String> {
            T::deserialize(value).map_err(|_| format!("expected {takes}, found {value}"))
        }
        let takes = option.takes;
        let result = match option.name {
            "method" => parse(value, takes).map(|v| self.method = Some(v)),
            "threshold" => parse(value, takes).map(|v| self.threshold = Some(v)),
            "hamming" => parse(value, takes).map(|v| self.hamming = Some(v)),
            "verify" => parse(value, takes).map(|v| self.verify = Some(v)),
            "bands" => parse(value, takes).map(|v| self.bands = Some(v)),
            "rows" => parse(value, takes).map(|v| self.rows = Some(v)),
            "recall" => parse(value, takes).map(|v| self.recall = Some(v)),
            "lsh_weights" => parse(value, takes).map(|v| self.lsh_weights = Some(v)),
            "keep" => parse(value, takes).map(|v| self.keep = Some(v)),
            "max_bucket" => parse(value, takes).map(|v| self.max_bucket = Some(v)),
            "star_width" => parse(value, takes).map(|v| self.star_width = Some(v)),
            other => unreachable!("{other} is in OPTIONS and handled here"),
        };
        result.or_else(refuse)
    }

    /// True when no option is given.
    pub fn is_empty(&self) -> bool {
        *self == SearchSpec::default()
    }

    /// The method these options ask for.
    pub fn method(&self) -> Method {
        match (self.method, self.hamming) {
            (Some(m), _) => m,
            (None, Some(_)) => Method::SimHash,
            (None, None) => Method::MinHash,
        }
    }

    /// The options a resolved configuration stands for, each one given, so that resolving them
    /// gives `config` again (its spill directory aside) whatever later builds take as defaults:
    /// what a persisted job stores. A collection's drops the options of a batch run
    /// (`keep`, `max_bucket`, `star_width`).
    pub fn of(config: &SearchConfig, usage: SearchUse) -> SearchSpec {
        let batch = usage == SearchUse::Batch;
        SearchSpec {
            method: Some(config.method),
            threshold: Some(config.threshold),
            // A MinHash job has no Hamming distance (giving one contradicts the method).
            hamming: (config.method != Method::MinHash).then_some(config.hamming),
            verify: config.verification,
            bands: config.banding.map(|(b, _)| b),
            rows: config.banding.map(|(_, r)| r),
            recall: config.recall,
            lsh_weights: config.weights,
            keep: batch.then(|| config.keep.clone()),
            max_bucket: batch.then_some(config.max_bucket),
            star_width: batch.then_some(config.star_width),
        }
    }

    /// These options, each one not given taken from `saved` (a saved index's job, which
    /// [`SearchSpec::of`] gave in full): a run against an index searches it as it was made
    /// unless told otherwise. What depends on the method (the Hamming distance, the
    /// verification, the bands) is taken only when the method is the saved one; the saved
    /// bands only when these options do not choose the bands another way (bands, rows, recall,
    /// lsh_weights).
    pub fn or_saved(&self, saved: &SearchSpec) -> SearchSpec {
        let same_method = self.method.is_none() || self.method == saved.method;
        let choose_bands = self.bands.is_some()
            || self.rows.is_some()
            || self.recall.is_some()
            || self.lsh_weights.is_some();
        let take_bands = same_method && !choose_bands;
        fn from_saved<T>(mine: Option<T>, theirs: Option<T>, applies: bool) -> Option<T> {
            mine.or(if applies { theirs } else { None })
        }
        SearchSpec {
            method: self.method.or(saved.method),
            threshold: self.threshold.or(saved.threshold),
            hamming: from_saved(self.hamming, saved.hamming, same_method),
            verify: from_saved(self.verify, saved.verify, same_method),
            bands: from_saved(self.bands, saved.bands, take_bands),
            rows: from_saved(self.rows, saved.rows, take_bands),
            recall: from_saved(self.recall, saved.recall, take_bands),
            lsh_weights: from_saved(self.lsh_weights, saved.lsh_weights, take_bands),
            keep: self.keep.clone().or_else(|| saved.keep.clone()),
            max_bucket: self.max_bucket.or(saved.max_bucket),
            star_width: self.star_width.or(saved.star_width),
        }
    }

    /// Applies the defaults and inferences, refusing contradictions; ranges (threshold, recall,
    /// Hamming distance against the width) are checked when the configuration meets its
    /// pipeline (`Dedup::new`, `Engine::new`).
    pub fn resolve(&self) -> Result<SearchConfig, SearchSpecError> {
        let refuse = |option: &'static str, message: &str| {
            Err(SearchSpecError { option, message: message.to_string() })
        };
        let method = self.method();
        if method == Method::MinHash && self.hamming.is_some() {
            return refuse(
                "hamming",
                "applies to simhash candidates, not to method minhash (use method simhash, or \
                 both)",
            );
        }
        if method == Method::SimHash {
            for (given, option) in [
                (self.bands.is_some(), "bands"),
                (self.rows.is_some(), "rows"),
                (self.recall.is_some(), "recall"),
                (self.lsh_weights.is_some(), "lsh_weights"),
            ] {
                if given {
                    return refuse(
                        option,
                        "chooses MinHash LSH bands; simhash candidates come from permuted \
                         tables (use method minhash or both)",
                    );
                }
            }
        }
        if self.bands.is_some() != self.rows.is_some() {
            let option = if self.bands.is_some() { "bands" } else { "rows" };
            return refuse(option, "bands and rows are given together");
        }
        if self.bands.is_some() {
            for (given, option) in
                [(self.recall.is_some(), "recall"), (self.lsh_weights.is_some(), "lsh_weights")]
            {
                if given {
                    return refuse(option, "chooses the bands, which bands and rows already give");
                }
            }
        }
        if self.recall.is_some() && self.lsh_weights.is_some() {
            return refuse("lsh_weights", "and recall are two ways to choose the bands: give one");
        }
        if self.verify == Some(Verification::Hamming) && self.hamming.is_none() {
            return refuse("verify", "hamming verification needs a Hamming distance (hamming)");
        }
        if self.max_bucket.is_some_and(|m| m < 2) {
            return refuse("max_bucket", "is at least 2 (a bucket of two is one pair)");
        }
        if self.star_width.is_some_and(|w| w < 1) {
            return refuse("star_width", "is at least 1");
        }
        Ok(SearchConfig {
            method,
            threshold: self.threshold.unwrap_or(DEFAULT_THRESHOLD),
            hamming: self.hamming.unwrap_or(DEFAULT_HAMMING),
            verification: self.verify,
            banding: self.bands.zip(self.rows),
            weights: self.lsh_weights,
            recall: self.recall,
            keep: self.keep.clone().unwrap_or_default(),
            max_bucket: self.max_bucket.unwrap_or(crate::DEFAULT_MAX_BUCKET),
            star_width: self.star_width.unwrap_or(crate::DEFAULT_STAR_WIDTH),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn spec() -> SearchSpec {
        SearchSpec::default()
    }

    #[test]
    fn defaults_and_inferences() {
        let c = spec().resolve().expect("defaults");
        assert_eq!(
            (c.method, c.threshold, c.hamming, c.keep),
            (Method::MinHash, 0.8, 3, Keep::First)
        );
        let c = SearchSpec { hamming: Some(5), ..spec() }.resolve().expect("simhash");
        assert_eq!((c.method, c.hamming), (Method::SimHash, 5));
        let c = SearchSpec { method: Some(Method::Both), hamming: Some(5), ..spec() }
            .resolve()
            .expect("both");
        assert_eq!(c.method, Method::Both);
    }

    #[test]
    fn the_options_of_a_resolved_configuration_resolve_to_it() {
        let given = [
            spec(),
            SearchSpec { hamming: Some(5), ..spec() },
            SearchSpec { method: Some(Method::Both), hamming: Some(2), ..spec() },
            SearchSpec { bands: Some(16), rows: Some(8), threshold: Some(0.6), ..spec() },
            SearchSpec { recall: Some(0.9), verify: Some(Verification::Cosine), ..spec() },
            SearchSpec { lsh_weights: Some((0.3, 0.7)), ..spec() },
            SearchSpec {
                keep: Some(Keep::Longest),
                max_bucket: Some(10),
                star_width: Some(3),
                ..spec()
            },
        ];
        for s in given {
            let config = s.resolve().expect("valid");
            let again = SearchSpec::of(&config, SearchUse::Batch).resolve().expect("valid");
            assert_eq!(again, config, "{s:?}");
            // A collection's keeps its search and drops the batch run's options.
            let collection = SearchSpec::of(&config, SearchUse::Collection);
            assert_eq!((&collection.keep, collection.max_bucket), (&None, None));
            let again = collection.resolve().expect("valid");
            assert_eq!(
                (again.method, again.threshold, again.banding),
                (config.method, config.threshold, config.banding)
            );
        }
    }

    #[test]
    fn a_saved_search_fills_what_is_not_given() {
        let saved = SearchSpec::of(
            &SearchSpec { bands: Some(35), rows: Some(3), threshold: Some(0.5), ..spec() }
                .resolve()
                .expect("valid"),
            SearchUse::Collection,
        );
        // Nothing given: the saved search as it was.
        assert_eq!(spec().or_saved(&saved), saved);
        // A threshold given: the saved bands still search the index.
        let c = SearchSpec { threshold: Some(0.7), ..spec() }.or_saved(&saved).resolve();
        assert_eq!(c.map(|c| (c.threshold, c.banding)), Ok((0.7, Some((35, 3)))));
        // A recall given chooses the bands again, instead of contradicting the saved ones.
        let c = SearchSpec { recall: Some(0.9), ..spec() }.or_saved(&saved).resolve();
        assert_eq!(c.map(|c| (c.recall, c.banding)), Ok((Some(0.9), None)));
        // Another method takes nothing that depends on the saved one.
        let simhash = SearchSpec::of(
            &SearchSpec { hamming: Some(4), verify: Some(Verification::Hamming), ..spec() }
                .resolve()
                .expect("valid"),
            SearchUse::Collection,
        );
        let c = SearchSpec { method: Some(Method::MinHash), ..spec() }.or_saved(&simhash);
        assert_eq!((c.hamming, c.verify), (None, None));
        assert_eq!(c.resolve().map(|c| c.method), Ok(Method::MinHash));
        // A Hamming distance against a MinHash index is refused naming it.
        let e = SearchSpec { hamming: Some(3), ..spec() }.or_saved(&saved).resolve();
        assert_eq!(e.map_err(|e| e.option), Err("hamming"));
    }

    #[test]
    fn contradictions_name_the_option() {
        let cases = [
            (SearchSpec { method: Some(Method::MinHash), hamming: Some(3), ..spec() }, "hamming"),
            (
                SearchSpec {
                    method: Some(Method::SimHash),
                    bands: Some(4),
                    rows: Some(8),
                    ..spec()
                },
                "bands",
            ),
            (SearchSpec { hamming: Some(3), recall: Some(0.9), ..spec() }, "recall"),
            (
                SearchSpec { hamming: Some(3), lsh_weights: Some((0.5, 0.5)), ..spec() },
                "lsh_weights",
            ),
            (SearchSpec { bands: Some(4), ..spec() }, "bands"),
            (SearchSpec { rows: Some(4), ..spec() }, "rows"),
            (SearchSpec { bands: Some(4), rows: Some(8), recall: Some(0.9), ..spec() }, "recall"),
            (
                SearchSpec { recall: Some(0.9), lsh_weights: Some((0.5, 0.5)), ..spec() },
                "lsh_weights",
            ),
            (SearchSpec { verify: Some(Verification::Hamming), ..spec() }, "verify"),
        ];
        for (s, option) in cases {
            assert_eq!(s.resolve().expect_err("contradiction").option, option, "{s:?}");
        }
    }

    #[test]
    fn options_are_set_by_name_from_json() {
        use serde_json::json;
        let mut s = spec();
        for (name, value) in [
            ("method", json!("both")),
            ("threshold", json!(0.7)),
            ("hamming", json!(4)),
            ("verify", json!("cosine")),
            ("keep", json!("longest")),
            ("recall", Value::Null),
        ] {
            s.set(name, &value, SearchUse::Batch).expect(name);
        }
        let c = s.resolve().expect("valid");
        assert_eq!(
            (c.method, c.threshold, c.hamming, c.verification, c.keep),
            (Method::Both, 0.7, 4, Some(Verification::Cosine), Keep::Longest)
        );
        let mut s = spec();
        s.set("lsh_weights", &json!([0.3, 0.7]), SearchUse::Collection).expect("weights");
        s.set("bands", &json!(16), SearchUse::Collection).expect("bands");
        assert_eq!((s.lsh_weights, s.bands), (Some((0.3, 0.7)), Some(16)));
        let err = |name: &str, value: Value, usage| {
            spec().set(name, &value, usage).expect_err("refused").to_string()
        };
        assert_eq!(
            err("method", json!("lsh"), SearchUse::Batch),
            "method: expected minhash | simhash | both, found \"lsh\""
        );
        assert!(err("thresold", json!(0.5), SearchUse::Batch).starts_with(
            "options: unknown option \"thresold\": expected one of method, threshold"
        ));
        assert!(err("keep", json!("first"), SearchUse::Collection).starts_with("keep: chooses"));
        assert!(!err("keep", json!(1), SearchUse::Collection).contains("keep,"));
        assert!(err("hamming", json!(-1), SearchUse::Batch).starts_with("hamming: expected"));
        let names: Vec<&str> = SearchSpec::names(SearchUse::Collection).collect();
        assert!(!names.contains(&"keep") && names.len() == SearchSpec::OPTIONS.len() - 3);
        assert_eq!(
            SearchSpec { max_bucket: Some(1), ..spec() }.resolve().expect_err("small").option,
            "max_bucket"
        );
    }

    #[test]
    fn the_spec_is_data_with_its_names() {
        let s: SearchSpec =
            serde_json::from_str(r#"{"method": "simhash", "hamming": 4, "keep": "longest"}"#)
                .expect("parses");
        assert_eq!(s.resolve().expect("valid").keep, Keep::Longest);
        assert!(serde_json::from_str::<SearchSpec>(r#"{"hammming": 4}"#).is_err());
    }
}
