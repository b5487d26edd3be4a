//! The compiled pipeline: documents -> weighted features -> fingerprints.

use std::collections::HashMap;
use std::sync::OnceLock;

use neardup_sketch::{
    unit_simhash64, Feature, FeatureHasher, IdfTable, MinHash, MinHasher, SimHash, SimHashBits,
    SimHasher, SparseVector,
};
use neardup_text::{FeatureKind, StopWords, TextConfig, TextPipeline, TextScratch};
use serde::Serialize;

use crate::error::read_text_file;
use crate::{BuildError, IdfSource, PipelineSpec, Weighting, FORMAT_VERSION};

/// A document: text, or tokens from the user's own tokenizer (which skip segmentation).
#[derive(Debug, Clone, Copy)]
pub enum Document<'a> {
    /// Raw text.
    Text(&'a str),
    /// Pre-tokenized text.
    Tokens(&'a [String]),
}

impl Document<'_> {
    /// Its length in bytes (of every token, for tokens): what size limits count.
    pub fn len(&self) -> usize {
        match self {
            Document::Text(t) => t.len(),
            Document::Tokens(t) => t.iter().map(String::len).sum(),
        }
    }

    /// True when it holds no text.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text a reader sees: the text, or the tokens joined by single spaces (what the
    /// passage check aligns and the pages show).
    pub fn display_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Document::Text(t) => std::borrow::Cow::Borrowed(t),
            Document::Tokens(t) => std::borrow::Cow::Owned(t.join(" ")),
        }
    }
}

/// An owned [`Document`]: what a reader, a request body or a Python argument holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedDocument {
    /// Raw text.
    Text(String),
    /// Pre-tokenized text.
    Tokens(Vec<String>),
}

impl OwnedDocument {
    /// The borrowed view the pipeline takes.
    pub fn as_document(&self) -> Document<'_> {
        match self {
            OwnedDocument::Text(t) => Document::Text(t),
            OwnedDocument::Tokens(t) => Document::Tokens(t),
        }
    }

    /// Its length in bytes (of every token, for tokens).
    pub fn len(&self) -> usize {
        self.as_document().len()
    }

    /// True when it holds no text.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text a reader sees (tokens joined by single spaces), owned.
    pub fn into_display_text(self) -> String {
        match self {
            OwnedDocument::Text(t) => t,
            OwnedDocument::Tokens(t) => t.join(" "),
        }
    }
}

/// Which sketches [`Pipeline::fingerprint`] computes, beyond SimHash (always computed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sketches(u8);

impl Sketches {
    /// SimHash only.
    pub const SIMHASH: Sketches = Sketches(0);
    /// Also a MinHash signature.
    pub const MINHASH: Sketches = Sketches(1);
    /// Also the weighted features, readable (`--explain`).
    pub const EXPLAIN: Sketches = Sketches(2);

    /// True if every sketch of `other` is asked for.
    pub fn contains(self, other: Sketches) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Sketches {
    type Output = Sketches;
    fn bitor(self, rhs: Sketches) -> Sketches {
        Sketches(self.0 | rhs.0)
    }
}

/// A feature as text with its weight, for `--explain`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WeightedFeature {
    /// The feature (word, shingle, n-gram or keyword).
    pub feature: String,
    /// Its total weight in the document.
    pub weight: f64,
}

/// The fingerprints of one document.
#[derive(Debug, Clone, PartialEq)]
pub struct Fingerprint {
    /// The SimHash.
    pub simhash: SimHash,
    /// The MinHash signature, if asked for.
    pub minhash: Option<MinHash>,
    /// The number of distinct features.
    pub features: usize,
    /// The weighted features, heaviest first, if asked for.
    pub explain: Option<Vec<WeightedFeature>>,
}

/// Per-thread buffers for a [`Pipeline`]. Reuse one per thread (rayon's `map_init`).
#[derive(Debug, Default)]
pub struct Scratch {
    text: TextScratch,
    features: Vec<Feature>,
    hashes: Vec<u64>,
    names: HashMap<u64, String>,
}

/// A compiled pipeline: immutable, `Send + Sync`, cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Pipeline {
    spec: PipelineSpec,
    text: TextPipeline,
    hasher: FeatureHasher,
    simhasher: SimHasher,
    minhasher: MinHasher,
    idf: OnceLock<IdfTable>,
    id: String,
}

impl Pipeline {
    /// Compiles `spec`: validates it, loads stop words and idf files, builds every stage.
    pub fn new(spec: PipelineSpec) -> Result<Pipeline, BuildError> {
        spec.validate()?;
        let mut stop_words = StopWords::none();
        for &list in &spec.stop_words.builtin {
            stop_words.extend_builtin(list);
        }
        // The id covers the content of files, not just their names.
        let mut id_input = format!("neardup/{FORMAT_VERSION}/{}", spec.to_canonical_json());
        // A build without Chinese data runs jieba's segmenters as Unicode words and the bundled
        // idf as uniform weights: other fingerprints for the same spec, so another id (an index
        // or store made by one build is refused by the other, never misread). Builds with the
        // data keep the ids they always had.
        if !cfg!(feature = "zh") && spec.needs_chinese_data() {
            id_input.push_str("/without-zh");
        }
        if let Some(path) = &spec.stop_words.file {
            let text = read_text_file(path)?;
            id_input
                .push_str(&format!("/stop:{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes())));
            stop_words.extend_lines(&text);
        }
        let idf = OnceLock::new();
        if let IdfSource::File { path } = &spec.idf {
            let text = read_text_file(path)?;
            id_input
                .push_str(&format!("/idf:{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes())));
            let table = IdfTable::parse(&text, spec.hash)
                .map_err(|source| BuildError::Idf { path: Some(path.clone()), source })?;
            let _ = idf.set(table);
        } else if spec.weighting == Weighting::Tfidf {
            let _ = idf.set(bundled_idf(spec.hash)?);
        }
        let text_config = TextConfig {
            normalize: spec.normalize,
            segmenter: spec.segmenter,
            punctuation: spec.punctuation,
            features: spec.features,
        };
        let minhasher =
            MinHasher::new(spec.minhash.num_perm, spec.minhash.seed, spec.minhash.scheme)?;
        Ok(Pipeline {
            text: TextPipeline::new(&text_config, stop_words),
            hasher: spec.hash,
            simhasher: SimHasher::new(spec.simhash_bits),
            minhasher,
            idf,
            id: format!("{:016x}", xxhash_rust::xxh3::xxh3_64(id_input.as_bytes())),
            spec,
        })
    }

    /// The spec this pipeline was compiled from.
    pub fn spec(&self) -> &PipelineSpec {
        &self.spec
    }

    /// A stable id of the spec, the format version and the content of the files it names. Two
    /// pipelines with the same id produce the same fingerprints.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The MinHasher.
    pub fn minhasher(&self) -> &MinHasher {
        &self.minhasher
    }

    /// The SimHasher.
    pub fn simhasher(&self) -> &SimHasher {
        &self.simhasher
    }

    fn idf_table(&self) -> &IdfTable {
        self.idf.get_or_init(|| {
            bundled_idf(self.spec.hash).expect("the bundled idf table is valid (tested)")
        })
    }

    /// Calls `sink` with each feature of `doc` as text, in document order.
    pub fn for_each_feature<F: FnMut(&str)>(
        &self,
        doc: Document<'_>,
        scratch: &mut Scratch,
        sink: F,
    ) {
        match doc {
            Document::Text(text) => self.text.features(text, &mut scratch.text, sink),
            Document::Tokens(tokens) => {
                self.text.features_pretokenized(tokens, &mut scratch.text, sink)
            }
        }
    }

    /// Hashes every feature occurrence into `scratch.features` (weight 1 each); records names if
    /// `names` is set.
    fn collect(&self, doc: Document<'_>, scratch: &mut Scratch, names: bool) {
        let Scratch { text, features, names: table, .. } = scratch;
        features.clear();
        table.clear();
        let hasher = self.hasher;
        let bits = self.spec.simhash_bits;
        let sink = |f: &str| {
            let feature = hasher.feature(f.as_bytes(), 1.0, bits);
            if names {
                table.entry(feature.hash).or_insert_with(|| f.to_string());
            }
            features.push(feature);
        };
        match doc {
            Document::Text(t) => self.text.features(t, text, sink),
            Document::Tokens(t) => self.text.features_pretokenized(t, text, sink),
        }
    }

    /// Applies the weighting to the collected occurrences. Returns true if the features are now
    /// merged (one per distinct hash).
    fn weigh(&self, features: &mut Vec<Feature>) -> bool {
        let total = features.len() as f64;
        let keywords = match self.spec.features {
            FeatureKind::Keywords { top_n } => Some(top_n),
            _ => None,
        };
        let mut merged = false;
        match self.spec.weighting {
            Weighting::Uniform => {}
            Weighting::Binary => {
                merge(features);
                features.iter_mut().for_each(|f| f.weight = 1.0);
                merged = true;
            }
            Weighting::Tf => features.iter_mut().for_each(|f| f.weight = 1.0 / total),
            Weighting::Tfidf => {
                let idf = self.idf_table();
                features.iter_mut().for_each(|f| f.weight = idf.idf(f.hash) / total);
            }
        }
        if let Some(top_n) = keywords {
            if !merged {
                merge(features);
                merged = true;
            }
            // Heaviest first; ties by hash so that the choice is deterministic.
            features
                .sort_unstable_by(|a, b| b.weight.total_cmp(&a.weight).then(a.hash.cmp(&b.hash)));
            features.truncate(top_n);
        }
        merged
    }

    /// The weighted features of `doc`: one per occurrence, or one per distinct feature for
    /// `binary` weighting and keywords. Order is unspecified.
    pub fn features<'s>(&self, doc: Document<'_>, scratch: &'s mut Scratch) -> &'s [Feature] {
        self.collect(doc, scratch, false);
        self.weigh(&mut scratch.features);
        &scratch.features
    }

    /// The weighted features of `doc`, merged into a sparse vector.
    pub fn feature_vector(&self, doc: Document<'_>, scratch: &mut Scratch) -> SparseVector {
        SparseVector::from_features(self.features(doc, scratch))
    }

    /// The TF-IDF vector of `doc` (whatever the pipeline's weighting), for cosine similarity.
    pub fn tfidf_vector(&self, doc: Document<'_>, scratch: &mut Scratch) -> SparseVector {
        self.collect(doc, scratch, false);
        let total = scratch.features.len() as f64;
        let idf = self.idf_table();
        scratch.features.iter_mut().for_each(|f| f.weight = idf.idf(f.hash) / total);
        SparseVector::from_features(&scratch.features)
    }

    /// True when every feature occurrence weighs 1 and the fingerprint is 64 bits wide: the
    /// SimHash can then be counted while the features are hashed, with no list between.
    fn streams_simhash(&self) -> bool {
        self.spec.weighting == Weighting::Uniform
            && !matches!(self.spec.features, FeatureKind::Keywords { .. })
            && self.spec.simhash_bits == SimHashBits::B64
    }

    /// Hashes every feature occurrence of `doc` into `scratch.hashes` (for the streamed case
    /// of [`Pipeline::streams_simhash`]) and returns their SimHash.
    fn stream_simhash(&self, doc: Document<'_>, scratch: &mut Scratch) -> SimHash {
        let hasher = self.hasher;
        let Scratch { text, hashes, .. } = scratch;
        hashes.clear();
        let sink = |f: &str| hashes.push(hasher.hash64(f.as_bytes()));
        match doc {
            Document::Text(t) => self.text.features(t, text, sink),
            Document::Tokens(t) => self.text.features_pretokenized(t, text, sink),
        }
        SimHash::new(u128::from(unit_simhash64(hashes.iter().copied())), SimHashBits::B64)
    }

    /// The SimHash of `doc`.
    pub fn simhash(&self, doc: Document<'_>, scratch: &mut Scratch) -> SimHash {
        if self.streams_simhash() {
            return self.stream_simhash(doc, scratch);
        }
        self.collect(doc, scratch, false);
        self.weigh(&mut scratch.features);
        self.simhasher.fingerprint(&scratch.features)
    }

    /// The MinHash signature of `doc` (of its set of features).
    pub fn minhash(&self, doc: Document<'_>, scratch: &mut Scratch) -> MinHash {
        self.collect(doc, scratch, false);
        self.weigh(&mut scratch.features);
        scratch.hashes.clear();
        scratch.hashes.extend(scratch.features.iter().map(|f| f.hash));
        self.minhasher.sketch_hashes(&scratch.hashes)
    }

    /// SimHash, and the other sketches asked for, in one pass over the text.
    pub fn fingerprint(
        &self,
        doc: Document<'_>,
        scratch: &mut Scratch,
        sketches: Sketches,
    ) -> Fingerprint {
        let explain = sketches.contains(Sketches::EXPLAIN);
        if !explain && self.streams_simhash() {
            let simhash = self.stream_simhash(doc, scratch);
            let minhash = sketches
                .contains(Sketches::MINHASH)
                .then(|| self.minhasher.sketch_hashes(&scratch.hashes));
            scratch.hashes.sort_unstable();
            scratch.hashes.dedup();
            return Fingerprint { simhash, minhash, features: scratch.hashes.len(), explain: None };
        }
        self.collect(doc, scratch, explain);
        let merged = self.weigh(&mut scratch.features);
        let features = &scratch.features;
        let simhash = self.simhasher.fingerprint(features);
        scratch.hashes.clear();
        scratch.hashes.extend(features.iter().map(|f| f.hash));
        let minhash = sketches
            .contains(Sketches::MINHASH)
            .then(|| self.minhasher.sketch_hashes(&scratch.hashes));
        let distinct = if merged {
            features.len()
        } else {
            scratch.hashes.sort_unstable();
            scratch.hashes.dedup();
            scratch.hashes.len()
        };
        let explain = explain.then(|| {
            let vector = SparseVector::from_features(features);
            let mut list: Vec<WeightedFeature> = vector
                .entries()
                .iter()
                .map(|&(hash, weight)| WeightedFeature {
                    feature: scratch.names.get(&hash).cloned().unwrap_or_default(),
                    weight,
                })
                .collect();
            list.sort_by(|a, b| {
                b.weight.total_cmp(&a.weight).then_with(|| a.feature.cmp(&b.feature))
            });
            list
        });
        Fingerprint { simhash, minhash, features: distinct, explain }
    }

    /// The SimHash width.
    pub fn simhash_bits(&self) -> SimHashBits {
        self.spec.simhash_bits
    }
}

fn bundled_idf(hasher: FeatureHasher) -> Result<IdfTable, BuildError> {
    #[cfg(feature = "zh")]
    let text = neardup_text::zh::DEFAULT_IDF;
    // Without Chinese data every feature gets the same idf, so tfidf reduces to tf.
    #[cfg(not(feature = "zh"))]
    let text = "__neardup_no_idf__ 1.0";
    IdfTable::parse(text, hasher).map_err(|source| BuildError::Idf { path: None, source })
}

/// Sorts by hash and sums the weights of equal hashes.
fn merge(features: &mut Vec<Feature>) {
    features.sort_unstable_by_key(|f| f.hash);
    features.dedup_by(|later, first| {
        if later.hash == first.hash {
            first.weight += later.weight;
            true
        } else {
            false
        }
    });
}

#[cfg(test)]
mod tests {
    /// Without Chinese data, a spec that uses it gets another id than with it; one that does
    /// not keeps its id.
    #[test]
    fn the_id_says_whether_chinese_data_was_used() {
        let auto = PipelineSpec::default();
        let unicode =
            PipelineSpec { segmenter: neardup_text::SegmenterKind::Unicode, ..auto.clone() };
        let id = |s: &PipelineSpec| Pipeline::new(s.clone()).expect("valid").id().to_string();
        assert!(auto.needs_chinese_data() && !unicode.needs_chinese_data());
        // The ids pinned in tests/fixtures/fingerprints (default preset) are a build with zh.
        let pinned = "54767adeaef7ad77";
        if cfg!(feature = "zh") {
            assert_eq!(id(&auto), pinned);
        } else {
            assert_ne!(id(&auto), pinned);
        }
        assert_ne!(id(&unicode), id(&auto));
    }

    use super::*;
    use neardup_sketch::MinHashScheme;

    fn pipeline(spec: PipelineSpec) -> Pipeline {
        Pipeline::new(spec).expect("valid spec")
    }

    proptest::proptest! {
        /// The SimHash counted while hashing equals the one of the collected features, for
        /// the streamed case (uniform weights, 64 bits) and the others.
        #[test]
        fn streamed_simhash_equals_collected(
            text in "[a-e \u{4e00}-\u{4e08}，。\n]{0,300}",
            preset in proptest::sample::select(crate::PRESETS.iter().map(|p| p.name).collect::<Vec<_>>()),
        ) {
            let p = pipeline(PipelineSpec::preset(preset).expect("a preset"));
            let mut scratch = Scratch::default();
            let streamed = p.simhash(Document::Text(&text), &mut scratch);
            let fingerprint = p.fingerprint(Document::Text(&text), &mut scratch, Sketches::MINHASH);
            let explained = p.fingerprint(
                Document::Text(&text),
                &mut scratch,
                Sketches::MINHASH | Sketches::EXPLAIN,
            );
            let features = p.features(Document::Text(&text), &mut scratch).to_vec();
            proptest::prop_assert_eq!(streamed, p.simhasher().fingerprint(&features));
            // The streamed fingerprint equals the collected one (EXPLAIN always collects).
            proptest::prop_assert_eq!(fingerprint.simhash, explained.simhash);
            proptest::prop_assert_eq!(&fingerprint.minhash, &explained.minhash);
            proptest::prop_assert_eq!(fingerprint.features, explained.features);
        }
    }

    #[test]
    fn pipeline_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Pipeline>();
    }

    #[test]
    fn empty_and_stop_word_only_documents() {
        let p = pipeline(PipelineSpec::preset("en-web").expect("preset"));
        let mut s = Scratch::default();
        for text in ["", "   ", "the and of", "!!! ..."] {
            let fp = p.fingerprint(Document::Text(text), &mut s, Sketches::MINHASH);
            assert_eq!(fp.simhash.value(), 0, "{text:?}");
            assert_eq!(fp.features, 0);
            assert!(fp.minhash.expect("asked").is_empty());
        }
    }

    #[test]
    fn same_text_same_fingerprint_across_scratch_reuse() {
        let p = pipeline(PipelineSpec::default());
        let mut s = Scratch::default();
        let a = p.fingerprint(
            Document::Text("今天天气很好，我们去公园散步吧。"),
            &mut s,
            Sketches::MINHASH,
        );
        let _ = p.fingerprint(Document::Text("something else entirely"), &mut s, Sketches::MINHASH);
        let b = p.fingerprint(
            Document::Text("今天天气很好，我们去公园散步吧。"),
            &mut s,
            Sketches::MINHASH,
        );
        assert_eq!(a, b);
    }

    // The bundled idf is Chinese data; without it every keyword weighs the same.
    #[cfg(feature = "zh")]
    #[test]
    fn keywords_keep_top_n_by_tfidf() {
        let p = pipeline(PipelineSpec::preset("zh-keywords").expect("preset"));
        let mut s = Scratch::default();
        let fp = p.fingerprint(
            Document::Text("我爱北京天安门，天安门上太阳升。北京是中国的首都。"),
            &mut s,
            Sketches::EXPLAIN,
        );
        let explain = fp.explain.expect("asked");
        assert!(explain.len() <= 20 && !explain.is_empty());
        assert!(explain.windows(2).all(|w| w[0].weight >= w[1].weight));
        let words: Vec<&str> = explain.iter().map(|w| w.feature.as_str()).collect();
        assert!(words.contains(&"天安门") && words.contains(&"北京"), "{words:?}");
        assert!(!words.contains(&"的"), "stop word kept: {words:?}");
    }

    #[test]
    fn tf_simhash_equals_uniform_simhash() {
        // Scaling every weight by 1/total does not change the sign of any bit sum.
        let text = "a b c a b a d e f g a b c";
        let uniform =
            pipeline(PipelineSpec { features: FeatureKind::Words, ..PipelineSpec::default() });
        let tf = pipeline(PipelineSpec {
            features: FeatureKind::Words,
            weighting: Weighting::Tf,
            ..PipelineSpec::default()
        });
        let mut s = Scratch::default();
        assert_eq!(
            uniform.simhash(Document::Text(text), &mut s),
            tf.simhash(Document::Text(text), &mut s)
        );
    }

    #[test]
    fn pretokenized_equals_text_when_tokens_match() {
        let p = pipeline(PipelineSpec {
            features: FeatureKind::WordShingles { n: 2 },
            ..PipelineSpec::default()
        });
        let mut s = Scratch::default();
        let tokens: Vec<String> = ["The", "quick", "brown", "fox"].map(String::from).to_vec();
        assert_eq!(
            p.simhash(Document::Tokens(&tokens), &mut s),
            p.simhash(Document::Text("the quick  brown fox"), &mut s)
        );
    }

    #[test]
    fn one_permutation_scheme_works_end_to_end() {
        let spec = PipelineSpec {
            minhash: crate::MinHashSpec {
                scheme: MinHashScheme::OnePermutation { densification: Default::default() },
                ..Default::default()
            },
            ..PipelineSpec::default()
        };
        let p = pipeline(spec);
        let mut s = Scratch::default();
        let text = "one two three four five six seven eight nine ten eleven twelve";
        let a = p.minhash(Document::Text(text), &mut s);
        assert_eq!(a.jaccard(&a), Ok(1.0));
        assert_eq!(a.len(), 128);
    }

    #[test]
    fn ids_differ_by_spec_and_are_stable() {
        let a = pipeline(PipelineSpec::default());
        let b = pipeline(PipelineSpec::default());
        let c = pipeline(PipelineSpec::preset("en-web").expect("preset"));
        assert_eq!(a.id(), b.id());
        assert_ne!(a.id(), c.id());
    }

    mod no_panic {
        use super::*;
        use neardup_sketch::Densification;
        use neardup_text::{KeepFilter, SegmenterKind};
        use proptest::prelude::*;

        /// Every preset plus variations of each stage that the presets do not cover, built once.
        fn pipelines() -> &'static [Pipeline] {
            static PIPELINES: std::sync::OnceLock<Vec<Pipeline>> = std::sync::OnceLock::new();
            PIPELINES.get_or_init(build_all)
        }

        fn build_all() -> Vec<Pipeline> {
            let mut specs: Vec<PipelineSpec> = crate::PRESETS.iter().map(|p| p.spec()).collect();
            for segmenter in
                [SegmenterKind::Unicode, SegmenterKind::Whitespace, SegmenterKind::Chars]
            {
                specs.push(PipelineSpec {
                    segmenter,
                    features: FeatureKind::Words,
                    ..Default::default()
                });
            }
            specs.push(PipelineSpec {
                normalize: neardup_text::NormalizeConfig {
                    keep: KeepFilter::Alphanumeric,
                    ..Default::default()
                },
                features: FeatureKind::CharNgrams { n: 1 },
                simhash_bits: SimHashBits::B128,
                minhash: crate::MinHashSpec {
                    num_perm: 7,
                    scheme: MinHashScheme::OnePermutation {
                        densification: Densification::Rotation,
                    },
                    ..Default::default()
                },
                ..Default::default()
            });
            specs.push(PipelineSpec {
                punctuation: neardup_text::PunctuationPolicy::Keep,
                features: FeatureKind::Keywords { top_n: 1 },
                weighting: Weighting::Binary,
                simhash_bits: SimHashBits::B32,
                hash: FeatureHasher::Jenkins,
                ..Default::default()
            });
            specs.into_iter().map(pipeline).collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            #[test]
            fn nothing_panics_on_any_text(
                text in "\\PC{0,120}|[\u{4e00}-\u{4fff}a-zA-Z0-9 ，。,.!？\u{3000}\u{ff01}-\u{ff5e}]{0,80}",
                tokens in prop::collection::vec("\\PC{0,8}", 0..8),
            ) {
                let mut scratch = Scratch::default();
                let all = Sketches::MINHASH | Sketches::EXPLAIN;
                for p in pipelines() {
                    let fp = p.fingerprint(Document::Text(&text), &mut scratch, all);
                    prop_assert_eq!(fp.features == 0, fp.minhash.as_ref().map(MinHash::is_empty) == Some(true));
                    p.fingerprint(Document::Tokens(&tokens), &mut scratch, all);
                    crate::compare(p, Document::Text(&text), Document::Tokens(&tokens)).expect("same pipeline");
                }
            }
        }
    }
}
