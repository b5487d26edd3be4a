//! The search settings of a job as the user gives them, and the one place their defaults,
//! inferences and contradictions are decided.
//!
//! Every surface (the CLI's flags, Python's keyword arguments, Spark's job arguments, the
//! service's collection settings) fills a [`SearchSpec`] with what the user gave, under the same
//! names, and calls [`SearchSpec::resolve`]: so `hamming` implies SimHash, `hamming` with
//! `method: minhash` is refused, and the threshold defaults to 0.8 in exactly one place.

use serde::{Deserialize, Serialize};

use crate::{DedupConfig, Keep, Method, Verification};

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

impl SearchSpec {
    /// The method these options ask for.
    pub fn method(&self) -> Method {
        match (self.method, self.hamming) {
            (Some(m), _) => m,
            (None, Some(_)) => Method::SimHash,
            (None, None) => Method::MinHash,
        }
    }

    /// Applies the defaults and inferences, refusing contradictions; ranges (threshold, recall,
    /// Hamming distance against the width) are checked when the configuration meets its
    /// pipeline (`Dedup::new`, `Engine::new`).
    pub fn resolve(&self) -> Result<DedupConfig, SearchSpecError> {
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
        Ok(DedupConfig {
            method,
            threshold: self.threshold.unwrap_or(DEFAULT_THRESHOLD),
            hamming: self.hamming.unwrap_or(DEFAULT_HAMMING),
            verification: self.verify,
            banding: self.bands.zip(self.rows),
            weights: self.lsh_weights,
            recall: self.recall,
            keep: self.keep.unwrap_or_default(),
            spill_dir: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_spec_is_data_with_its_names() {
        let s: SearchSpec =
            serde_json::from_str(r#"{"method": "simhash", "hamming": 4, "keep": "longest"}"#)
                .expect("parses");
        assert_eq!(s.resolve().expect("valid").keep, Keep::Longest);
        assert!(serde_json::from_str::<SearchSpec>(r#"{"hammming": 4}"#).is_err());
    }
}
