//! `PipelineSpec`: the whole pipeline as data.

use std::path::PathBuf;

use neardup_sketch::{FeatureHasher, MinHashScheme, SimHashBits, MAX_NUM_PERM};
use neardup_text::{
    BuiltinStopWords, FeatureKind, KeepFilter, NormalizeConfig, PunctuationPolicy, SegmenterKind,
    ZhScript,
};
use serde::{Deserialize, Serialize};

use crate::BuildError;

/// Version of the fingerprint format: hash seeds, algorithms and spec semantics. It is part of
/// every spec id, so fingerprints made by an incompatible build are never mixed silently.
///
/// Version 2: whitespace next to Han characters, kana and CJK punctuation is removed by
/// `collapse_whitespace` (and before segmentation), so Chinese text that differs only in line
/// breaks has the same features.
pub const FORMAT_VERSION: u32 = 2;

/// The largest shingle or character n-gram size.
pub const MAX_NGRAM: usize = 64;

/// The largest keyword count (`top_n`).
pub const MAX_TOP_N: usize = 10_000;

/// How feature occurrences are weighted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Weighting {
    /// Each occurrence counts 1, so repeated features weigh more.
    #[default]
    Uniform,
    /// Each distinct feature counts 1: the document is a set.
    Binary,
    /// Term frequency: count / total occurrences.
    Tf,
    /// Term frequency times inverse document frequency (see [`IdfSource`]).
    Tfidf,
}

/// Where IDF values come from, for `tfidf` weighting, keywords and the cosine of `compare`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum IdfSource {
    /// jieba's bundled table of Chinese words (270,132 entries).
    #[default]
    Bundled,
    /// A file in jieba's `feature idf` format, such as one made by `neardup idf build`.
    File {
        /// The file.
        path: PathBuf,
    },
}

/// Stop words: any built-in lists plus an optional file (one word per line).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct StopWordsSpec {
    /// Built-in lists.
    pub builtin: Vec<BuiltinStopWords>,
    /// A UTF-8 file with one stop word per line.
    pub file: Option<PathBuf>,
}

/// MinHash parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct MinHashSpec {
    /// The number of values (`num_perm`), 128 by default.
    pub num_perm: usize,
    /// Seed of the hash functions.
    pub seed: u64,
    /// `num_perm` hash functions, or one-permutation hashing.
    pub scheme: MinHashScheme,
}

impl Default for MinHashSpec {
    fn default() -> Self {
        MinHashSpec { num_perm: 128, seed: 1, scheme: MinHashScheme::Permutations }
    }
}

/// Every stage of a pipeline, as data. `Default` is the `default` preset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PipelineSpec {
    /// Normalization.
    pub normalize: NormalizeConfig,
    /// Segmentation.
    pub segmenter: SegmenterKind,
    /// Stop words.
    pub stop_words: StopWordsSpec,
    /// Punctuation-only tokens.
    pub punctuation: PunctuationPolicy,
    /// Features.
    pub features: FeatureKind,
    /// Weights.
    pub weighting: Weighting,
    /// IDF source for `tfidf`.
    pub idf: IdfSource,
    /// Feature hash function.
    pub hash: FeatureHasher,
    /// SimHash width.
    pub simhash_bits: SimHashBits,
    /// MinHash parameters.
    pub minhash: MinHashSpec,
}

impl Default for PipelineSpec {
    fn default() -> Self {
        PipelineSpec {
            normalize: NormalizeConfig::default(),
            segmenter: SegmenterKind::Auto,
            stop_words: StopWordsSpec::default(),
            punctuation: PunctuationPolicy::Drop,
            features: FeatureKind::Auto { n: 5 },
            weighting: Weighting::Uniform,
            idf: IdfSource::Bundled,
            hash: FeatureHasher::Xxh3,
            simhash_bits: SimHashBits::B64,
            minhash: MinHashSpec::default(),
        }
    }
}

/// A named starting point for a spec.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// The name (`--preset NAME`).
    pub name: &'static str,
    /// What it is for.
    pub description: &'static str,
    build: fn() -> PipelineSpec,
}

impl Preset {
    /// The spec this preset stands for.
    pub fn spec(&self) -> PipelineSpec {
        (self.build)()
    }
}

/// The Chinese presets' normalization: the default, with traditional characters written as
/// simplified (so a Hong Kong and a mainland copy of one text share their features, and jieba,
/// whose dictionary is simplified, segments both alike).
fn zh_normalize() -> NormalizeConfig {
    NormalizeConfig { zh_script: ZhScript::Simplified, ..NormalizeConfig::default() }
}

/// The presets.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "default",
        description: "word 5-shingles for space-separated text, character 5-grams for Chinese; \
                      each occurrence weighs 1 (dedup of web text and LLM corpora)",
        build: PipelineSpec::default,
    },
    Preset {
        name: "zh-news",
        description: "Chinese news: traditional characters read as simplified, jieba words \
                      without Chinese and English stop words, TF-IDF weights from jieba's table \
                      (the classic Chinese SimHash set-up)",
        build: || PipelineSpec {
            normalize: zh_normalize(),
            segmenter: SegmenterKind::Jieba,
            stop_words: StopWordsSpec {
                builtin: vec![BuiltinStopWords::Zh, BuiltinStopWords::En],
                file: None,
            },
            features: FeatureKind::Words,
            weighting: Weighting::Tfidf,
            ..PipelineSpec::default()
        },
    },
    Preset {
        name: "zh-keywords",
        description: "Chinese: traditional characters read as simplified, the top 20 jieba \
                      TF-IDF keywords, weighted by TF-IDF (as jiebaR's simhash worker, on \
                      jieba-rs data)",
        build: || PipelineSpec {
            normalize: zh_normalize(),
            segmenter: SegmenterKind::Jieba,
            stop_words: StopWordsSpec {
                builtin: vec![BuiltinStopWords::Zh, BuiltinStopWords::En],
                file: None,
            },
            features: FeatureKind::Keywords { top_n: 20 },
            weighting: Weighting::Tfidf,
            ..PipelineSpec::default()
        },
    },
    Preset {
        name: "zh-han",
        description: "Chinese, Han characters only (everything else removed), traditional read \
                      as simplified, character 3-grams",
        build: || PipelineSpec {
            normalize: NormalizeConfig { keep: KeepFilter::Han, ..zh_normalize() },
            features: FeatureKind::CharNgrams { n: 3 },
            ..PipelineSpec::default()
        },
    },
    Preset {
        name: "en-web",
        description: "English web pages: words without English stop words, TF weights",
        build: || PipelineSpec {
            stop_words: StopWordsSpec { builtin: vec![BuiltinStopWords::En], file: None },
            features: FeatureKind::Words,
            weighting: Weighting::Tf,
            ..PipelineSpec::default()
        },
    },
    Preset {
        name: "datasketch",
        description: "the words of Python's text.split(), unnormalized, punctuation kept: what \
                      datasketch users feed MinHash.update (the datasketch profile's default)",
        build: || PipelineSpec {
            normalize: NormalizeConfig {
                nfkc: false,
                case_fold: false,
                collapse_whitespace: false,
                keep: KeepFilter::All,
                zh_script: ZhScript::Keep,
            },
            segmenter: SegmenterKind::Whitespace,
            punctuation: PunctuationPolicy::Keep,
            features: FeatureKind::Words,
            ..PipelineSpec::default()
        },
    },
    Preset {
        name: "shingles",
        description: "word 5-shingles in every script (jieba words for Chinese), as a set",
        build: || PipelineSpec {
            features: FeatureKind::WordShingles { n: 5 },
            weighting: Weighting::Binary,
            ..PipelineSpec::default()
        },
    },
];

impl PipelineSpec {
    /// The spec of a named preset.
    pub fn preset(name: &str) -> Result<PipelineSpec, BuildError> {
        PRESETS
            .iter()
            .find(|p| p.name == name)
            .map(Preset::spec)
            .ok_or_else(|| BuildError::UnknownPreset { name: name.to_string() })
    }

    /// Checks values that the types alone do not rule out, and the upper bounds of every size
    /// ([`MAX_NGRAM`], [`MAX_TOP_N`], [`MAX_NUM_PERM`]).
    pub fn validate(&self) -> Result<(), BuildError> {
        let invalid =
            |field: &'static str, message: String| Err(BuildError::InvalidSpec { field, message });
        match self.features {
            FeatureKind::Auto { n }
            | FeatureKind::WordShingles { n }
            | FeatureKind::CharNgrams { n }
                if !(1..=MAX_NGRAM).contains(&n) =>
            {
                return invalid(
                    "features.n",
                    format!("shingle and n-gram sizes must be in 1..={MAX_NGRAM}, not {n}"),
                );
            }
            FeatureKind::Keywords { top_n } if !(1..=MAX_TOP_N).contains(&top_n) => {
                return invalid(
                    "features.top_n",
                    format!("keyword counts must be in 1..={MAX_TOP_N}, not {top_n}"),
                );
            }
            _ => {}
        }
        let num_perm = self.minhash.num_perm;
        if !(1..=MAX_NUM_PERM).contains(&num_perm) {
            return invalid(
                "minhash.num_perm",
                format!("must be in 1..={MAX_NUM_PERM}, not {num_perm}"),
            );
        }
        Ok(())
    }

    /// Parses a spec from JSON text (as `neardup spec` prints it; missing fields take their
    /// defaults, unknown fields are refused), then validates it. Messages name JSON types, never
    /// the Rust types behind them.
    pub fn from_json(text: &str) -> Result<PipelineSpec, BuildError> {
        // Parsed as the type first, for messages with a line and column.
        let spec: PipelineSpec = serde_json::from_str(text).map_err(invalid_json)?;
        let value: serde_json::Value = serde_json::from_str(text).map_err(invalid_json)?;
        spec.check_named(&value)?;
        spec.validate()?;
        Ok(spec)
    }

    /// Parses a spec from a JSON value, as [`PipelineSpec::from_json`].
    pub fn from_value(value: serde_json::Value) -> Result<PipelineSpec, BuildError> {
        let spec: PipelineSpec = serde_json::from_value(value.clone()).map_err(invalid_json)?;
        spec.check_named(&value)?;
        spec.validate()?;
        Ok(spec)
    }

    /// serde reads a struct from an array too, field by field in declaration order: a spec
    /// written as `[...]` (or with `"normalize": [...]`) would silently mean whatever the field
    /// order makes of it. Refused wherever the spec has an object.
    fn check_named(&self, given: &serde_json::Value) -> Result<(), BuildError> {
        let canonical = serde_json::to_value(self).expect("a spec always serializes");
        objects_where_objects(given, &canonical, "spec")
    }

    /// True when this spec's output depends on the Chinese data of the `zh` feature (jieba's
    /// segmenters, the bundled idf table), which a build without it replaces.
    pub fn needs_chinese_data(&self) -> bool {
        use neardup_text::SegmenterKind;
        let weighs_by_idf = self.weighting == Weighting::Tfidf
            || matches!(self.features, neardup_text::FeatureKind::Keywords { .. });
        matches!(self.segmenter, SegmenterKind::Auto | SegmenterKind::Jieba)
            || (weighs_by_idf && matches!(self.idf, IdfSource::Bundled))
            || !self.normalize.zh_script.is_keep()
    }

    /// The canonical JSON form (field order fixed by the type, no whitespace).
    pub fn to_canonical_json(&self) -> String {
        serde_json::to_string(self).expect("a spec always serializes")
    }
}

/// Refuses `input` where the parsed spec's canonical form has an object and `input` has an array
/// (serde's positional reading of structs), at any depth; `path` names the place.
fn objects_where_objects(
    input: &serde_json::Value,
    canonical: &serde_json::Value,
    path: &str,
) -> Result<(), BuildError> {
    use serde_json::Value;
    match (input, canonical) {
        (Value::Array(_), Value::Object(_)) => Err(BuildError::InvalidSpec {
            field: "spec",
            message: format!(
                "{path} is an array where an object is expected (fields are named, not \
                 positional)"
            ),
        }),
        (Value::Object(given), Value::Object(canon)) => {
            for (key, value) in given {
                if let Some(c) = canon.get(key) {
                    objects_where_objects(value, c, &format!("{path}.{key}"))?;
                }
            }
            Ok(())
        }
        (Value::Array(given), Value::Array(canon)) => {
            for (i, (value, c)) in given.iter().zip(canon).enumerate() {
                objects_where_objects(value, c, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A serde error as a spec error, with `struct PipelineSpec` and the like said in JSON terms.
fn invalid_json(e: serde_json::Error) -> BuildError {
    let mut message = e.to_string();
    if let Some(at) = message.find("expected struct ") {
        let rest = &message[at + "expected struct ".len()..];
        let end = rest.find(|c: char| !c.is_alphanumeric()).unwrap_or(rest.len());
        message.replace_range(at..at + "expected struct ".len() + end, "expected an object");
    }
    BuildError::InvalidSpec { field: "spec", message }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a spec given as a JSON array was read positionally.
    #[test]
    fn arrays_where_objects_belong_are_refused_at_any_depth() {
        for text in [
            r#"[{"nfkc": false}]"#,
            r#"{"normalize": [false, true, true, "all"]}"#,
            r#"{"minhash": [64, 1]}"#,
        ] {
            let e = PipelineSpec::from_json(text).expect_err(text).to_string();
            assert!(e.contains("array where an object is expected"), "{text}: {e}");
            let value = serde_json::from_str(text).expect("json");
            let e = PipelineSpec::from_value(value).expect_err(text).to_string();
            assert!(e.contains("array where an object is expected"), "{text}: {e}");
        }
        let ok = r#"{"stop_words": {"builtin": ["en"]}, "normalize": {"nfkc": false}}"#;
        PipelineSpec::from_json(ok).expect("lists stay lists");
    }

    #[test]
    fn presets_round_trip_through_json() {
        for p in PRESETS {
            let spec = p.spec();
            spec.validate().expect("presets are valid");
            let back: PipelineSpec =
                serde_json::from_str(&spec.to_canonical_json()).expect("round trip");
            assert_eq!(back, spec, "{}", p.name);
        }
    }

    #[test]
    fn partial_json_fills_defaults_and_unknown_fields_fail() {
        let spec: PipelineSpec =
            serde_json::from_str(r#"{"features": {"kind": "words"}, "hash": "murmur3"}"#)
                .expect("partial spec");
        assert_eq!(spec.features, FeatureKind::Words);
        assert_eq!(spec.hash, FeatureHasher::Murmur3);
        assert_eq!(spec.minhash.num_perm, 128);
        assert!(serde_json::from_str::<PipelineSpec>(r#"{"featurs": {}}"#).is_err());
    }

    /// Arbitrary JSON, biased towards the spec's own field names and values.
    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("normalize"),
            Just("segmenter"),
            Just("features"),
            Just("kind"),
            Just("n"),
            Just("top_n"),
            Just("minhash"),
            Just("num_perm"),
            Just("seed"),
            Just("scheme"),
            Just("hash"),
            Just("simhash_bits"),
            Just("weighting"),
            Just("stop_words"),
            Just("builtin"),
            Just("idf"),
            Just("keep"),
            Just("nfkc"),
            Just("punctuation"),
            Just("densification"),
            Just("x"),
        ]
        .prop_map(String::from);
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            (0u64..3000).prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            prop_oneof![
                Just("auto"),
                Just("jieba"),
                Just("words"),
                Just("char_ngrams"),
                Just("keywords"),
                Just("word_shingles"),
                Just("tfidf"),
                Just("xxh3"),
                Just("md5"),
                Just("zh"),
                Just("one_permutation"),
                Just("optimal"),
                Just("han"),
                Just("bundled"),
                Just("")
            ]
            .prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        // Fuzz target (PROPTEST_CASES sets the count; `bench/fuzz.sh` runs it long): any JSON
        // either is refused with a message or compiles into a pipeline that fingerprints, never
        // a panic, and nothing it allows takes unbounded time.
        #[test]
        fn spec_parser_never_panics(value in json_value()) {
            match PipelineSpec::from_value(value) {
                Err(e) => proptest::prop_assert!(!e.to_string().is_empty()),
                Ok(spec) => {
                    if let Ok(p) = crate::Pipeline::new(spec) {
                        let mut scratch = crate::Scratch::default();
                        let _ = p.fingerprint(
                            crate::Document::Text("近似重复 near duplicate text"),
                            &mut scratch,
                            crate::Sketches::MINHASH,
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn json_errors_name_json_types() {
        let e = PipelineSpec::from_json("[1, 2]").expect_err("not an object").to_string();
        assert!(e.contains("expected an object") && !e.contains("struct"), "{e}");
        let e = PipelineSpec::from_json(r#"{"minhash": {"num_perm": 100000}}"#)
            .expect_err("too many")
            .to_string();
        assert!(e.contains("num_perm") && e.contains("1024"), "{e}");
    }

    #[test]
    fn unknown_preset_names_the_choices() {
        let e = PipelineSpec::preset("fr-news").expect_err("must fail").to_string();
        assert!(e.contains("fr-news") && e.contains("zh-news"), "{e}");
    }
}
