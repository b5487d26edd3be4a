//! `PipelineOptions`: the overrides a user gives on top of a preset, by the names every surface
//! uses (`--segmenter jieba` on the command line, `segmenter="jieba"` in Python), turned into a
//! [`PipelineSpec`] in one place, so that the CLI, Python and Spark build the same pipeline from
//! the same words (the service takes a preset or a whole spec).

use std::path::PathBuf;

use neardup_sketch::{Densification, FeatureHasher, MinHashScheme, SimHashBits};
use neardup_text::{
    BuiltinStopWords, FeatureKind, KeepFilter, PunctuationPolicy, SegmenterKind, ZhScript,
};

use crate::{BuildError, IdfSource, PipelineSpec, Weighting};

/// Which features, without their size (the size is [`PipelineOptions::ngram`] or
/// [`PipelineOptions::top_n`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureChoice {
    /// Word shingles for space-separated text, character n-grams for Chinese.
    Auto,
    /// Each word.
    Words,
    /// Word n-shingles.
    Shingles,
    /// Character n-grams.
    Ngrams,
    /// The top-N keywords.
    Keywords,
}

/// Overrides of a preset. Every field left `None` (or `false`) keeps the preset's value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PipelineOptions {
    /// The preset to start from (`None`: the caller's default).
    pub preset: Option<String>,
    /// Segmentation.
    pub segmenter: Option<SegmenterKind>,
    /// Features.
    pub features: Option<FeatureChoice>,
    /// Shingle and n-gram size.
    pub ngram: Option<usize>,
    /// Keywords kept.
    pub top_n: Option<usize>,
    /// Built-in stop word lists (replacing the preset's).
    pub stop_words: Option<Vec<BuiltinStopWords>>,
    /// A file of extra stop words.
    pub stop_words_file: Option<PathBuf>,
    /// No stop words at all.
    pub no_stop_words: bool,
    /// Keep punctuation-only tokens.
    pub keep_punct: bool,
    /// Weights.
    pub weights: Option<Weighting>,
    /// An IDF file.
    pub idf: Option<PathBuf>,
    /// Feature hash.
    pub hash: Option<FeatureHasher>,
    /// SimHash width.
    pub bits: Option<SimHashBits>,
    /// MinHash values.
    pub num_perm: Option<usize>,
    /// MinHash seed.
    pub seed: Option<u64>,
    /// MinHash scheme.
    pub minhash_scheme: Option<MinHashScheme>,
    /// Characters kept before anything else.
    pub keep_chars: Option<KeepFilter>,
    /// NFKC on or off.
    pub nfkc: Option<bool>,
    /// Case folding on or off.
    pub case_fold: Option<bool>,
    /// Whitespace collapsing on or off.
    pub collapse_whitespace: Option<bool>,
    /// The Chinese script text is written in before its features are taken.
    pub zh_script: Option<ZhScript>,
}

/// The values of `segmenter`, by the names every surface uses.
pub(crate) const SEGMENTERS: &[(&str, SegmenterKind)] = &[
    ("auto", SegmenterKind::Auto),
    ("jieba", SegmenterKind::Jieba),
    ("unicode", SegmenterKind::Unicode),
    ("whitespace", SegmenterKind::Whitespace),
    ("chars", SegmenterKind::Chars),
];
/// The values of `features`.
pub(crate) const FEATURES: &[(&str, FeatureChoice)] = &[
    ("auto", FeatureChoice::Auto),
    ("words", FeatureChoice::Words),
    ("shingles", FeatureChoice::Shingles),
    ("ngrams", FeatureChoice::Ngrams),
    ("keywords", FeatureChoice::Keywords),
];
/// The values of `stop_words` (a list of them).
pub(crate) const STOP_LISTS: &[(&str, BuiltinStopWords)] =
    &[("zh", BuiltinStopWords::Zh), ("en", BuiltinStopWords::En)];
/// The values of `weights`.
pub(crate) const WEIGHTS: &[(&str, Weighting)] = &[
    ("uniform", Weighting::Uniform),
    ("binary", Weighting::Binary),
    ("tf", Weighting::Tf),
    ("tfidf", Weighting::Tfidf),
];
/// The values of `hash`.
pub(crate) const HASHES: &[(&str, FeatureHasher)] = &[
    ("xxh3", FeatureHasher::Xxh3),
    ("murmur3", FeatureHasher::Murmur3),
    ("fnv1a", FeatureHasher::Fnv1a),
    ("md5", FeatureHasher::Md5),
    ("jenkins", FeatureHasher::Jenkins),
];
/// The values of `minhash_scheme`.
pub(crate) const MINHASH_SCHEMES: &[(&str, MinHashScheme)] = &[
    ("permutations", MinHashScheme::Permutations),
    ("oph", MinHashScheme::OnePermutation { densification: Densification::Optimal }),
    ("oph-rotation", MinHashScheme::OnePermutation { densification: Densification::Rotation }),
];
/// The values of `keep_chars`.
pub(crate) const KEEP_CHARS: &[(&str, KeepFilter)] =
    &[("all", KeepFilter::All), ("han", KeepFilter::Han), ("alnum", KeepFilter::Alphanumeric)];
/// The values of `zh_script` (the pipeline's and the passage check's).
pub(crate) const ZH_SCRIPTS: &[(&str, ZhScript)] = &[
    ("keep", ZhScript::Keep),
    ("simplified", ZhScript::Simplified),
    ("traditional", ZhScript::Traditional),
    ("mainland", ZhScript::Mainland),
];

/// The name of `value` in `table`.
pub(crate) fn name_of<T: PartialEq>(
    table: &[(&'static str, T)],
    value: &T,
) -> Option<&'static str> {
    table.iter().find(|(_, v)| v == value).map(|(n, _)| *n)
}

fn invalid(field: &'static str, message: String) -> BuildError {
    BuildError::InvalidSpec { field, message }
}

fn choose<T: Copy>(field: &'static str, name: &str, table: &[(&str, T)]) -> Result<T, BuildError> {
    table.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).ok_or_else(|| {
        let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        invalid(field, format!("unknown value {name:?}: expected one of {}", names.join(", ")))
    })
}

impl PipelineOptions {
    /// The names of every option, as keyword arguments and JSON keys.
    pub const NAMES: &'static [&'static str] = &[
        "preset",
        "segmenter",
        "features",
        "ngram",
        "top_n",
        "stop_words",
        "stop_words_file",
        "no_stop_words",
        "keep_punct",
        "weights",
        "idf",
        "hash",
        "bits",
        "num_perm",
        "seed",
        "minhash_scheme",
        "keep_chars",
        "nfkc",
        "case_fold",
        "collapse_whitespace",
        "zh_script",
    ];

    /// Sets one option from a JSON value, by the names of the command line (`segmenter:
    /// "jieba"`, `features: "ngrams"`, `minhash_scheme: "oph-rotation"`, `stop_words: ["zh"]`,
    /// `nfkc: false`). An unknown name or value is an error that names it.
    pub fn set(&mut self, name: &str, value: &serde_json::Value) -> Result<(), BuildError> {
        use serde_json::Value;
        let field: &'static str =
            Self::NAMES.iter().find(|n| **n == name).copied().ok_or_else(|| {
                invalid(
                    "options",
                    format!("unknown option {name:?}: expected one of {}", Self::NAMES.join(", ")),
                )
            })?;
        let text = || -> Result<&str, BuildError> {
            value.as_str().ok_or_else(|| invalid(field, format!("expected a string, got {value}")))
        };
        let count = || -> Result<usize, BuildError> {
            value
                .as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| invalid(field, format!("expected a whole number, got {value}")))
        };
        let flag = || -> Result<bool, BuildError> {
            value
                .as_bool()
                .ok_or_else(|| invalid(field, format!("expected true or false, got {value}")))
        };
        match field {
            "preset" => self.preset = Some(text()?.to_string()),
            "segmenter" => self.segmenter = Some(choose(field, text()?, SEGMENTERS)?),
            "features" => self.features = Some(choose(field, text()?, FEATURES)?),
            "ngram" => self.ngram = Some(count()?),
            "top_n" => self.top_n = Some(count()?),
            "stop_words" => {
                let names: Vec<&str> = match value {
                    Value::String(s) => s.split(',').filter(|s| !s.is_empty()).collect(),
                    Value::Array(items) => items
                        .iter()
                        .map(|v| {
                            v.as_str().ok_or_else(|| invalid(field, format!("{v} is not a name")))
                        })
                        .collect::<Result<_, _>>()?,
                    other => return Err(invalid(field, format!("expected names, got {other}"))),
                };
                let lists = names
                    .into_iter()
                    .map(|n| choose(field, n, STOP_LISTS))
                    .collect::<Result<_, _>>()?;
                self.stop_words = Some(lists);
            }
            "stop_words_file" => self.stop_words_file = Some(PathBuf::from(text()?)),
            "no_stop_words" => self.no_stop_words = flag()?,
            "keep_punct" => self.keep_punct = flag()?,
            "weights" => self.weights = Some(choose(field, text()?, WEIGHTS)?),
            "idf" => self.idf = Some(PathBuf::from(text()?)),
            "hash" => self.hash = Some(choose(field, text()?, HASHES)?),
            "bits" => {
                let n = count()?;
                self.bits = Some(SimHashBits::try_from(n as u32).map_err(|m| invalid(field, m))?);
            }
            "num_perm" => self.num_perm = Some(count()?),
            "seed" => {
                self.seed = Some(value.as_u64().ok_or_else(|| {
                    invalid(field, format!("expected a whole number, got {value}"))
                })?)
            }
            "minhash_scheme" => {
                self.minhash_scheme = Some(choose(field, text()?, MINHASH_SCHEMES)?)
            }
            "keep_chars" => self.keep_chars = Some(choose(field, text()?, KEEP_CHARS)?),
            "nfkc" => self.nfkc = Some(flag()?),
            "case_fold" => self.case_fold = Some(flag()?),
            "collapse_whitespace" => self.collapse_whitespace = Some(flag()?),
            "zh_script" => self.zh_script = Some(choose(field, text()?, ZH_SCRIPTS)?),
            _ => unreachable!("every name in NAMES is handled"),
        }
        Ok(())
    }

    /// The spec: the preset (or `default_preset`), then each option given; validated.
    pub fn to_spec(&self, default_preset: &str) -> Result<PipelineSpec, BuildError> {
        let spec = PipelineSpec::preset(self.preset.as_deref().unwrap_or(default_preset))?;
        self.apply(spec)
    }

    /// `spec` with each option given applied; validated. A count out of the option table's
    /// bounds is refused by the option's name (the spec's own check would name its field:
    /// `features.n` for `ngram`), whichever surface set it.
    pub fn apply(&self, mut spec: PipelineSpec) -> Result<PipelineSpec, BuildError> {
        for (name, value, hi) in [
            ("ngram", self.ngram, crate::spec::MAX_NGRAM),
            ("top_n", self.top_n, crate::spec::MAX_TOP_N),
            ("num_perm", self.num_perm, neardup_sketch::MAX_NUM_PERM),
        ] {
            if let Some(n) = value.filter(|n| !(1..=hi).contains(n)) {
                return Err(invalid(name, format!("must be in 1..={hi}, not {n}")));
            }
        }
        if let Some(s) = self.segmenter {
            spec.segmenter = s;
        }
        let current_n = match spec.features {
            FeatureKind::Auto { n }
            | FeatureKind::WordShingles { n }
            | FeatureKind::CharNgrams { n } => n,
            _ => 5,
        };
        let current_top = match spec.features {
            FeatureKind::Keywords { top_n } => top_n,
            _ => 20,
        };
        let n = self.ngram.unwrap_or(current_n);
        let top_n = self.top_n.unwrap_or(current_top);
        spec.features = match self.features {
            Some(FeatureChoice::Auto) => FeatureKind::Auto { n },
            Some(FeatureChoice::Words) => FeatureKind::Words,
            Some(FeatureChoice::Shingles) => FeatureKind::WordShingles { n },
            Some(FeatureChoice::Ngrams) => FeatureKind::CharNgrams { n },
            Some(FeatureChoice::Keywords) => FeatureKind::Keywords { top_n },
            // The size options resize the preset's features.
            None => match spec.features {
                FeatureKind::Auto { .. } => FeatureKind::Auto { n },
                FeatureKind::WordShingles { .. } => FeatureKind::WordShingles { n },
                FeatureKind::CharNgrams { .. } => FeatureKind::CharNgrams { n },
                FeatureKind::Keywords { .. } => FeatureKind::Keywords { top_n },
                other => other,
            },
        };
        if self.features == Some(FeatureChoice::Keywords) && self.weights.is_none() {
            spec.weighting = Weighting::Tfidf;
        }
        if self.no_stop_words {
            spec.stop_words = Default::default();
        }
        if let Some(lists) = &self.stop_words {
            spec.stop_words.builtin.clone_from(lists);
        }
        if let Some(path) = &self.stop_words_file {
            spec.stop_words.file = Some(path.clone());
        }
        if self.keep_punct {
            spec.punctuation = PunctuationPolicy::Keep;
        }
        if let Some(w) = self.weights {
            spec.weighting = w;
        }
        if let Some(path) = &self.idf {
            spec.idf = IdfSource::File { path: path.clone() };
        }
        if let Some(h) = self.hash {
            spec.hash = h;
        }
        if let Some(b) = self.bits {
            spec.simhash_bits = b;
        }
        if let Some(k) = self.num_perm {
            spec.minhash.num_perm = k;
        }
        if let Some(seed) = self.seed {
            spec.minhash.seed = seed;
        }
        if let Some(s) = self.minhash_scheme {
            spec.minhash.scheme = s;
        }
        if let Some(k) = self.keep_chars {
            spec.normalize.keep = k;
        }
        if let Some(v) = self.nfkc {
            spec.normalize.nfkc = v;
        }
        if let Some(v) = self.case_fold {
            spec.normalize.case_fold = v;
        }
        if let Some(v) = self.collapse_whitespace {
            spec.normalize.collapse_whitespace = v;
        }
        if let Some(v) = self.zh_script {
            spec.normalize.zh_script = v;
        }
        spec.validate()?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_by_name_build_the_same_spec_as_fields() {
        let mut o = PipelineOptions::default();
        o.set("segmenter", &json!("jieba")).expect("valid");
        o.set("features", &json!("keywords")).expect("valid");
        o.set("top_n", &json!(7)).expect("valid");
        o.set("stop_words", &json!(["zh", "en"])).expect("valid");
        o.set("nfkc", &json!(false)).expect("valid");
        let spec = o.to_spec("default").expect("valid");
        assert_eq!(spec.segmenter, SegmenterKind::Jieba);
        assert_eq!(spec.features, FeatureKind::Keywords { top_n: 7 });
        assert_eq!(spec.weighting, Weighting::Tfidf, "keywords default to TF-IDF weights");
        assert_eq!(spec.stop_words.builtin, vec![BuiltinStopWords::Zh, BuiltinStopWords::En]);
        assert!(!spec.normalize.nfkc);
    }

    #[test]
    fn unknown_names_and_values_are_named() {
        let mut o = PipelineOptions::default();
        let e = o.set("segmentr", &json!("jieba")).expect_err("unknown").to_string();
        assert!(e.contains("segmentr") && e.contains("segmenter"), "{e}");
        let e = o.set("features", &json!("trigrams")).expect_err("unknown").to_string();
        assert!(e.contains("trigrams") && e.contains("ngrams"), "{e}");
        let e = o.set("num_perm", &json!("many")).expect_err("type").to_string();
        assert!(e.contains("num_perm"), "{e}");
        o.set("num_perm", &json!(5000)).expect("set");
        let e = o.to_spec("default").expect_err("bound").to_string();
        assert!(e.contains("1024"), "{e}");
    }

    #[test]
    fn sizes_resize_the_preset_features() {
        let mut o = PipelineOptions::default();
        o.set("ngram", &json!(3)).expect("valid");
        let spec = o.to_spec("zh-han").expect("valid");
        assert_eq!(spec.features, FeatureKind::CharNgrams { n: 3 });
        let spec = o.to_spec("default").expect("valid");
        assert_eq!(spec.features, FeatureKind::Auto { n: 3 });
    }
}
