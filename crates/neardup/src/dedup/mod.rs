//! Corpus deduplication: sketch every document, find candidate pairs, verify them exactly, and
//! cluster the verified pairs.
//!
//! ```text
//! documents -sketch (parallel)-> DocSketch -exact-duplicate groups-> representatives
//!   -candidates: LSH bands (minhash) | permuted tables (simhash)-> pairs
//!   -verify (parallel): Jaccard | cosine | Hamming | MinHash estimate-> edges
//!   -union-find-> clusters -keeper rule-> kept / dropped
//! ```
//!
//! Documents with the same feature set (or, for weighted measures, the same weighted vector) are
//! merged before candidate search: they are similar to each other with similarity 1 and to
//! anything else alike, so only one of them needs to be indexed. This keeps the quadratic cost of
//! a band shared by thousands of copies (boilerplate pages, repeated posts) out of the search.
//!
//! Documents loaded from a saved index ([`Dedup::load`]) take part in candidate search but are
//! never dropped: a new document in a cluster with an old one is a duplicate of something
//! already seen.

use std::fmt;
use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{Document, Pipeline, Scratch};

mod distributed;
mod index_file;
mod keep;
mod plan;
mod rank;
mod run;
mod sketch;
mod store;
mod union_find;

pub use distributed::{bucket_candidates, components};
pub(crate) use index_file::{manifest_for, read_index, write_index};
pub use index_file::{
    read_manifest, saved_index_files, IndexLock, IndexManifest, PreparedIndex,
    INDEX_FORMAT_VERSION, OLDEST_INDEX_FORMAT,
};
pub use keep::{Keep, SortBy};
pub(crate) use plan::Plan;
pub use rank::{Rank, RankKind};
pub use run::{AtThreshold, Cluster, Copies, DedupOutcome, Pair, Pairs};
pub use sketch::DocSketch;
pub(crate) use sketch::{sketch_with, verify};

/// How candidates are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// MinHash signatures in LSH bands, for a Jaccard threshold.
    MinHash,
    /// SimHash fingerprints in permuted tables, for a Hamming distance.
    SimHash,
    /// Both: a candidate from either index (verified by Jaccard by default).
    Both,
}

impl Method {
    /// Every method, in the order options list them.
    pub const ALL: [Method; 3] = [Method::MinHash, Method::SimHash, Method::Both];

    fn uses_minhash(self) -> bool {
        self != Method::SimHash
    }

    fn uses_simhash(self) -> bool {
        self != Method::MinHash
    }

    /// The name used in options, specs and messages.
    pub fn name(self) -> &'static str {
        match self {
            Method::MinHash => "minhash",
            Method::SimHash => "simhash",
            Method::Both => "both",
        }
    }
}

/// How a candidate pair is confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verification {
    /// Exact Jaccard similarity of the feature sets `>= threshold` (the default for MinHash).
    Jaccard,
    /// Cosine similarity of the weighted feature vectors `>= threshold`.
    Cosine,
    /// SimHash Hamming distance `<= hamming` (the default for SimHash); similarity is
    /// `1 - distance / bits`.
    Hamming,
    /// No exact check: the MinHash estimate `>= threshold` (MinHash), or the SimHash distance
    /// (SimHash). Faster, and approximate.
    Estimate,
}

impl Verification {
    /// The default for a method.
    pub fn default_for(method: Method) -> Verification {
        match method {
            Method::MinHash | Method::Both => Verification::Jaccard,
            Method::SimHash => Verification::Hamming,
        }
    }

    /// Every verification, in the order options list them.
    pub const ALL: [Verification; 4] = [
        Verification::Jaccard,
        Verification::Cosine,
        Verification::Hamming,
        Verification::Estimate,
    ];

    /// The name used in options, specs and messages.
    pub fn name(self) -> &'static str {
        match self {
            Verification::Jaccard => "jaccard",
            Verification::Cosine => "cosine",
            Verification::Hamming => "hamming",
            Verification::Estimate => "estimate",
        }
    }

    /// True when identical feature *sets* are interchangeable (weights do not matter).
    fn is_set_based(self, method: Method) -> bool {
        match self {
            Verification::Jaccard => true,
            Verification::Estimate => method.uses_minhash(),
            Verification::Cosine | Verification::Hamming => false,
        }
    }
}

/// The default recall target under exact verification: the banding is the cheapest under which
/// a pair exactly at the threshold becomes a candidate with at least this probability (16
/// bands of 6 rows at 0.8 with 128 values, 0.992). Exact verification makes a false candidate
/// cost one check, so recall is bought with candidates.
pub const DEFAULT_RECALL: f64 = 0.99;

/// The search settings, resolved ([`crate::SearchSpec::resolve`]): how candidates are found
/// and confirmed, for a batch run ([`Dedup`]) and a live index ([`crate::Engine`]) alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchConfig {
    /// How candidates are found.
    pub method: Method,
    /// Similarity threshold for Jaccard, cosine and MinHash estimates, in (0, 1].
    pub threshold: f64,
    /// Largest Hamming distance for SimHash.
    pub hamming: u32,
    /// How pairs are confirmed; `None` picks [`Verification::default_for`] the method.
    pub verification: Option<Verification>,
    /// LSH `(bands, rows)`; `None` chooses them from the threshold as `neardup params` does.
    pub banding: Option<(usize, usize)>,
    /// `(false positive, false negative)` weights for choosing the banding as datasketch's
    /// MinHashLSH does (used when `banding` is `None`).
    pub weights: Option<(f64, f64)>,
    /// The probability, in (0, 1), that a pair exactly at the threshold becomes a candidate:
    /// the banding is the cheapest that reaches it (used when `banding` and `weights` are
    /// `None`). `None` means [`DEFAULT_RECALL`] under exact verification and datasketch's
    /// `(0.5, 0.5)` weights under [`Verification::Estimate`].
    pub recall: Option<f64>,
    /// Which document of a cluster is kept.
    pub keep: Keep,
    /// The skew guard of the batch candidate search: a bucket (documents sharing one band key or
    /// permuted-table key) of more than this many representatives pairs only its first
    /// `star_width` members with the others ([`neardup_index::BucketCap`]); the same rule as
    /// Spark's, so both find the same candidates.
    #[serde(default = "default_max_bucket")]
    pub max_bucket: usize,
    /// How many first members of a bucket over `max_bucket` are paired with the others.
    #[serde(default = "default_star_width")]
    pub star_width: usize,
}

/// The largest bucket of a batch candidate search paired in full, by default.
pub const DEFAULT_MAX_BUCKET: usize = 2000;
/// How many first members of a larger bucket are paired with the others, by default.
pub const DEFAULT_STAR_WIDTH: usize = 2;

fn default_max_bucket() -> usize {
    DEFAULT_MAX_BUCKET
}

fn default_star_width() -> usize {
    DEFAULT_STAR_WIDTH
}

impl SearchConfig {
    /// The skew guard as the candidate search takes it.
    pub fn bucket_cap(&self) -> neardup_index::BucketCap {
        neardup_index::BucketCap { max_bucket: self.max_bucket, star_width: self.star_width }
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            method: Method::MinHash,
            threshold: crate::DEFAULT_THRESHOLD,
            hamming: crate::DEFAULT_HAMMING,
            verification: None,
            banding: None,
            weights: None,
            recall: None,
            keep: Keep::First,
            max_bucket: DEFAULT_MAX_BUCKET,
            star_width: DEFAULT_STAR_WIDTH,
        }
    }
}

/// An error deduplicating.
#[derive(Debug)]
#[non_exhaustive]
pub enum DedupError {
    /// The configuration cannot work.
    InvalidConfig {
        /// Why.
        message: String,
    },
    /// Reading or writing an index failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// The directory given as a saved index holds none: another kind of index (a passage
    /// index), nothing, or it does not exist.
    NoIndex {
        /// The directory.
        path: PathBuf,
        /// What it is instead, and how to make an index there.
        message: String,
    },
    /// A saved index is damaged or not an index.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A saved index was written by a build with another index format: rebuild it.
    OldFormat {
        /// The index directory.
        path: PathBuf,
        /// Its format version.
        found: u64,
        /// The version this build reads.
        current: u32,
    },
    /// Writing or reading the spill file failed.
    Spill {
        /// The directory of the spill file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// The keep rule's field holds a number in one record and a date in another.
    MixedRanks {
        /// The field.
        field: String,
        /// What this record holds.
        found: RankKind,
        /// What earlier records held.
        earlier: RankKind,
    },
    /// A saved index was built with other settings than the ones asked for.
    Mismatch {
        /// The setting.
        field: &'static str,
        /// Its value in the index.
        index: String,
        /// Its value now.
        current: String,
    },
}

impl fmt::Display for DedupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DedupError::InvalidConfig { message } => write!(f, "{message}"),
            // The I/O error itself is `source()`.
            DedupError::Io { path, .. } => write!(f, "index file {}", path.display()),
            DedupError::Spill { path, source } => write!(
                f,
                "the spill file of the feature hashes in {}: {source} (give a directory with \
                 room, or keep them in memory)",
                path.display()
            ),
            DedupError::Corrupt { path, message } => {
                write!(f, "{}: not a valid neardup index: {message}", path.display())
            }
            DedupError::NoIndex { path, message } => write!(f, "{} {message}", path.display()),
            DedupError::OldFormat { path, found, current } if *found > u64::from(*current) => {
                write!(
                    f,
                    "{}: the index has format version {found}, made by a newer neardup; this \
                     build reads versions {OLDEST_INDEX_FORMAT} to {current}: use that build or \
                     a newer one",
                    path.display()
                )
            }
            DedupError::OldFormat { path, found, current } => write!(
                f,
                "{}: the index has format version {found}, this build reads version {current} \
                 (32-bit feature hashes, and whitespace next to Han characters ignored); \
                 rebuild it by running dedup over its documents again with --save-index",
                path.display()
            ),
            DedupError::MixedRanks { field, found, earlier } => write!(
                f,
                "the keep field {field:?} holds {} here and {} in earlier records: one field \
                 is compared as numbers or as dates, not both",
                found.name(),
                earlier.name()
            ),
            DedupError::Mismatch { field, index, current } => write!(
                f,
                "the index was built with {field} {index}, this run uses {current}; \
                 leave out the options that differ or build a new index (a run against an \
                 index takes its settings for each option not given)"
            ),
        }
    }
}

impl std::error::Error for DedupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DedupError::Io { source, .. } => Some(source),
            // Spill errors say their cause in the message (it decides what the user does).
            _ => None,
        }
    }
}

/// A deduplication run: documents are added (sketched in parallel by the caller), then
/// [`Dedup::run`] finds the clusters.
///
/// ```
/// use neardup::{Dedup, SearchConfig, Document, Pipeline, PipelineSpec, Scratch};
///
/// let pipeline = Pipeline::new(PipelineSpec::default())?;
/// let mut dedup = Dedup::new(&pipeline, SearchConfig { threshold: 0.5, ..SearchConfig::default() })?;
/// let mut scratch = Scratch::default();
/// for text in [
///     "the quick brown fox jumps over the lazy dog near the river bank",
///     "something else entirely, about neither foxes nor dogs nor rivers",
///     "the quick brown fox jumps over the lazy dog near the river bank!",
/// ] {
///     let sketch = dedup.sketch(Document::Text(text), text.len(), &mut scratch);
///     dedup.push(sketch)?;
/// }
/// let outcome = dedup.run()?;
/// assert_eq!(outcome.kept, vec![true, true, false]);
/// assert_eq!(outcome.clusters[0].members, vec![0, 2]);
/// assert_eq!(outcome.pairs().map(|p| (p.a, p.b)).collect::<Vec<_>>(), vec![(0, 2)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Dedup<'p> {
    pipeline: &'p Pipeline,
    config: SearchConfig,
    plan: Plan,
    docs: store::Columns,
    /// Documents `0..seen` came from a saved index and are never dropped.
    seen: usize,
    /// The documents' values of the keep rule's field (`max:FIELD`, `min:FIELD`).
    ranks: keep::Ranks,
}

impl<'p> Dedup<'p> {
    /// A run over documents fingerprinted by `pipeline`, its verification data in memory.
    pub fn new(pipeline: &'p Pipeline, config: SearchConfig) -> Result<Dedup<'p>, DedupError> {
        Dedup::spilled(pipeline, config, None)
    }

    /// A run whose verification data (the feature hashes of Jaccard) goes to an unnamed
    /// temporary file in `spill_dir`, read back for candidate pairs only, so that memory per
    /// document stays about 160 bytes (about 800 bytes more per 1 KB English document in
    /// memory). Where it spills is a resource of the run, not part of its job: the answer is
    /// the same either way.
    pub fn spilled(
        pipeline: &'p Pipeline,
        config: SearchConfig,
        spill_dir: Option<&std::path::Path>,
    ) -> Result<Dedup<'p>, DedupError> {
        let plan = Plan::resolve(pipeline, &config)?;
        let docs = store::Columns::new(&plan, spill_dir)?;
        Ok(Dedup { pipeline, config, plan, docs, seen: 0, ranks: keep::Ranks::default() })
    }

    /// The configuration of the run.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// The pipeline the documents are sketched with.
    pub fn pipeline(&self) -> &'p Pipeline {
        self.pipeline
    }

    /// The verification in use.
    pub fn verification(&self) -> Verification {
        self.plan.verification
    }

    /// The LSH `(bands, rows)` in use (MinHash only).
    pub fn banding(&self) -> Option<(usize, usize)> {
        self.plan.banding.map(|b| (b.bands(), b.rows()))
    }

    /// The probability that a pair exactly at the threshold becomes a candidate under the
    /// banding (MinHash only): `1 - (1 - t^r)^b`.
    pub fn candidate_probability(&self) -> Option<f64> {
        self.plan.candidate_probability
    }

    /// The number of documents added (including those of a loaded index).
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// True when no document was added.
    pub fn is_empty(&self) -> bool {
        self.docs.len() == 0
    }

    /// True when the document at `position` has no features (a near-duplicate of nothing).
    pub fn is_empty_at(&self, position: usize) -> bool {
        self.docs.is_empty_at(position)
    }

    /// The length in bytes of the document at `position`.
    pub fn len_at(&self, position: usize) -> u64 {
        self.docs.doc_len(position)
    }

    /// The number of documents that came from a loaded index (positions `0..seen`).
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// Sketches one document of `len` bytes. Thread-safe: call it from many threads, each with
    /// its own scratch, then [`Dedup::push`] the results in input order.
    pub fn sketch(&self, doc: Document<'_>, len: usize, scratch: &mut Scratch) -> DocSketch {
        sketch_with(self.pipeline, &self.plan, doc, len, scratch)
    }

    /// The similarity of two sketches under the run's verification measure (the measure of
    /// its pairs: Jaccard, cosine, `1 - d / bits` for SimHash, or the MinHash estimate),
    /// whatever the threshold; 0 when either document is empty.
    pub fn similarity(&self, a: &DocSketch, b: &DocSketch) -> f64 {
        sketch::measure(&self.plan, &a.view(), &b.view())
    }

    /// [`Dedup::similarity`] of the documents at two positions (after [`Dedup::run`], or
    /// whenever nothing is being added). Fails only when a spilled document cannot be read.
    pub fn similarity_at(&self, a: u32, b: u32) -> Result<f64, DedupError> {
        let mut scratch = store::ReadScratch::default();
        self.docs.with_pair(a as usize, b as usize, &mut scratch, |x, y| {
            sketch::measure(&self.plan, x, y)
        })
    }

    /// Adds a document; returns its position. Fails only when the spill file cannot be
    /// written, or the sketch was made under another plan.
    pub fn push(&mut self, sketch: DocSketch) -> Result<u32, DedupError> {
        self.docs.push(sketch)?;
        Ok((self.docs.len() - 1) as u32)
    }

    /// How many of this run's documents (not those of a loaded index) have no value of the
    /// keep rule's field (missing, `null` or NaN); 0 when the rule reads no field.
    pub fn unranked(&self) -> u64 {
        if self.config.keep.field().is_none() {
            return 0;
        }
        self.ranks.missing(self.seen..self.docs.len())
    }

    /// Adds a document with its value of the keep rule's field (`max:FIELD`, `min:FIELD`;
    /// `None` when the record has none). A field holds numbers or dates, not both: a rank of
    /// the other kind is [`DedupError::MixedRanks`], and the document is not added.
    pub fn push_ranked(
        &mut self,
        sketch: DocSketch,
        rank: Option<Rank>,
    ) -> Result<u32, DedupError> {
        let position = self.docs.len();
        if let Some(field) = self.config.keep.field() {
            if let Some(r) = rank {
                if let Some(earlier) = self.ranks.kind().filter(|k| *k != r.kind) {
                    return Err(DedupError::MixedRanks {
                        field: field.to_string(),
                        found: r.kind,
                        earlier,
                    });
                }
            }
            self.ranks.push(position, rank).expect("the kind was checked");
        }
        self.push(sketch)
    }
}

#[cfg(test)]
mod tests {
    use super::union_find::UnionFind;
    use super::*;
    use crate::PipelineSpec;
    use neardup_sketch::jaccard_sorted;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::fs;

    fn pipeline() -> Pipeline {
        Pipeline::new(PipelineSpec::preset("shingles").expect("preset")).expect("valid")
    }

    fn run(p: &Pipeline, config: SearchConfig, texts: &[String]) -> (DedupOutcome, Vec<DocSketch>) {
        let mut d = Dedup::new(p, config).expect("valid config");
        let mut scratch = Scratch::default();
        let mut docs = Vec::new();
        for t in texts {
            let s = d.sketch(Document::Text(t), t.len(), &mut scratch);
            docs.push(s.clone());
            d.push(s).expect("push");
        }
        (d.run().expect("run"), docs)
    }

    /// Every document of a run, as sketches.
    fn sketches(d: &Dedup<'_>) -> Vec<DocSketch> {
        let mut scratch = store::ReadScratch::default();
        (0..d.len()).map(|i| d.docs.sketch(i, &mut scratch).expect("readable")).collect()
    }

    /// Connected components of a graph given as edges, as sorted member lists of size >= 2.
    fn components(n: usize, edges: &[(u32, u32)]) -> Vec<Vec<u32>> {
        let mut uf = UnionFind::new(n);
        for &(a, b) in edges {
            uf.union(a, b);
        }
        let mut groups: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for i in 0..n as u32 {
            let r = uf.find(i);
            groups.entry(r).or_default().push(i);
        }
        let mut out: Vec<Vec<u32>> = groups.into_values().filter(|g| g.len() >= 2).collect();
        out.sort();
        out
    }

    /// Texts from a small vocabulary, plus edited copies, so that every similarity occurs.
    fn corpus() -> impl Strategy<Value = Vec<String>> {
        let word = prop::sample::select(vec![
            "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa",
        ]);
        let doc = prop::collection::vec(word, 0..14);
        (
            prop::collection::vec(doc, 1..12),
            prop::collection::vec((any::<prop::sample::Index>(), 0usize..4, any::<u8>()), 0..16),
        )
            .prop_map(|(docs, edits)| {
                let mut texts: Vec<Vec<&str>> = docs;
                for (pick, n, seed) in edits {
                    let mut t = texts[pick.index(texts.len())].clone();
                    for e in 0..n {
                        if !t.is_empty() {
                            let at = (seed as usize + e * 7) % t.len();
                            t[at] = "omega";
                        }
                    }
                    texts.push(t);
                }
                texts.into_iter().map(|t| t.join(" ")).collect()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// SimHash candidates are exact, so clusters equal the components of the brute-force
        /// graph of pairs within distance k (empty documents match nothing).
        #[test]
        fn simhash_clusters_equal_brute_force(texts in corpus(), k in 0u32..6) {
            let p = pipeline();
            let config = SearchConfig { method: Method::SimHash, hamming: k, ..SearchConfig::default() };
            let (out, docs) = run(&p, config, &texts);
            let mut edges = Vec::new();
            for a in 0..docs.len() {
                for b in a + 1..docs.len() {
                    let d = (docs[a].simhash ^ docs[b].simhash).count_ones();
                    if !docs[a].empty && !docs[b].empty && d <= k {
                        edges.push((a as u32, b as u32));
                    }
                }
            }
            let got: Vec<Vec<u32>> = out.clusters.iter().map(|c| c.members.clone()).collect();
            let mut got_sorted = got.clone();
            got_sorted.sort();
            prop_assert_eq!(got_sorted, components(docs.len(), &edges));
            check_keepers(&out);
        }

        /// MinHash with Jaccard verification: every reported pair is a true pair at the
        /// Spilling the feature hashes to a file changes nothing: the same outcome, and the
        /// same sketches read back (as a saved index writes them).
        #[test]
        fn a_spilled_run_equals_one_in_memory(texts in corpus(), t in 1u32..10) {
            let threshold = f64::from(t) / 10.0;
            let p = pipeline();
            let dir = tempfile::tempdir().expect("tempdir");
            let memory = SearchConfig { threshold, ..SearchConfig::default() };
            let mut a = Dedup::new(&p, memory.clone()).expect("valid");
            let mut b = Dedup::spilled(&p, memory, Some(dir.path())).expect("valid");
            let mut scratch = Scratch::default();
            for t in &texts {
                let s = a.sketch(Document::Text(t), t.len(), &mut scratch);
                a.push(s.clone()).expect("push");
                b.push(s).expect("push");
            }
            let (x, y) = (a.run().expect("run"), b.run().expect("run"));
            prop_assert_eq!(&x.edges, &y.edges);
            prop_assert_eq!(&x.clusters, &y.clusters);
            prop_assert_eq!(&x.kept, &y.kept);
            prop_assert_eq!(sketches(&a), sketches(&b));
            for i in 0..texts.len() as u32 {
                prop_assert_eq!(a.similarity_at(0, i).expect("a"), b.similarity_at(0, i).expect("b"));
            }
            // Nothing is left in the directory: the spill file has no name.
            prop_assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
        }

        /// MinHash with Jaccard verification: every reported pair is a true pair at the
        /// threshold, and with one row per band (every shared value is a candidate) nothing
        /// true is missed.
        #[test]
        fn minhash_jaccard_pairs_are_exact(texts in corpus(), t in 1u32..10) {
            let threshold = f64::from(t) / 10.0;
            let p = pipeline();
            let config = SearchConfig { threshold, banding: Some((128, 1)), ..SearchConfig::default() };
            let (out, docs) = run(&p, config, &texts);
            let mut truth = Vec::new();
            for a in 0..docs.len() {
                for b in a + 1..docs.len() {
                    let s = jaccard_sorted(&docs[a].features, &docs[b].features);
                    if s >= threshold - 1e-12 && s > 0.0 {
                        truth.push((a as u32, b as u32));
                    }
                }
            }
            // The complete pairs are exactly the true pairs: with one row per band every pair
            // that shares a value is a candidate, and copies are expanded.
            let mut got: Vec<(u32, u32)> = out.pairs().map(|p| (p.a, p.b)).collect();
            got.sort_unstable();
            prop_assert_eq!(&got, &truth);
            prop_assert_eq!(out.pair_count(), truth.len() as u64);
            // The weights are the similarities of the complete pairs, counted; and each pair's
            // similarity is the measure `similarity` gives the two documents.
            let mut listed: BTreeMap<u64, u64> = BTreeMap::new();
            let dedup_for_measure = Dedup::new(&p, SearchConfig { threshold, ..SearchConfig::default() })
                .expect("valid config");
            for pair in out.pairs() {
                *listed.entry(pair.similarity.to_bits()).or_default() += 1;
                let s = dedup_for_measure.similarity(&docs[pair.a as usize], &docs[pair.b as usize]);
                prop_assert_eq!(s, pair.similarity);
            }
            let mut weighed: BTreeMap<u64, u64> = BTreeMap::new();
            for (s, n) in out.pair_weights() {
                *weighed.entry(s.to_bits()).or_default() += n;
            }
            prop_assert_eq!(listed, weighed);
            let mut got: Vec<Vec<u32>> = out.clusters.iter().map(|c| c.members.clone()).collect();
            got.sort();
            prop_assert_eq!(got, components(docs.len(), &truth));
            check_keepers(&out);
        }
    }

    fn check_keepers(out: &DedupOutcome) {
        for (i, c) in out.clusters.iter().enumerate() {
            assert!(c.members.contains(&c.keep));
            for &m in &c.members {
                assert_eq!(out.cluster_of[m as usize], Some(i as u32));
                assert_eq!(out.kept[m as usize], m == c.keep || m < out.seen());
            }
        }
        for (i, cluster) in out.cluster_of.iter().enumerate() {
            if cluster.is_none() {
                assert!(out.kept[i]);
            }
        }
    }

    fn texts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn keep_rules_break_ties_by_input_order() {
        let base = "one two three four five six seven eight nine ten eleven twelve";
        let docs = texts(&[
            "unrelated words that share nothing with the others at all here",
            base,
            &format!("{base} thirteen"),
            base,
        ]);
        let p = pipeline();
        let keep = |keep: Keep| {
            let config = SearchConfig { threshold: 0.7, keep, ..SearchConfig::default() };
            let (out, _) = run(&p, config, &docs);
            assert_eq!(out.clusters.len(), 1);
            assert_eq!(out.clusters[0].members, vec![1, 2, 3]);
            out.clusters[0].keep
        };
        assert_eq!(keep(Keep::First), 1);
        assert_eq!(keep(Keep::Longest), 2);
        assert_eq!(keep(Keep::Shortest), 1);
    }

    #[test]
    fn a_run_says_what_higher_thresholds_would_give() {
        // Near-copies at several distances, exact copies, and unrelated texts; every pair that
        // shares one MinHash value is a candidate (128 bands of 1 row), so runs at different
        // thresholds verify the same pairs.
        let base: Vec<String> = (0..60).map(|i| format!("w{}", (i * 7919) % 97)).collect();
        let mut docs = Vec::new();
        for changed in [0, 0, 2, 5, 9, 14, 20] {
            let mut w = base.clone();
            for k in 0..changed {
                w[k * 3 % 60] = format!("x{k}");
            }
            docs.push(w.join(" "));
        }
        docs.extend(
            (0..5).map(|i| format!("unrelated text number {i} with words of its own {}", i * 13)),
        );
        let p = pipeline();
        let config = |threshold: f64| SearchConfig {
            threshold,
            banding: Some((128, 1)),
            ..SearchConfig::default()
        };
        let (low, _) = run(&p, config(0.3), &docs);
        let ts = [0.3, 0.9, 0.5, 0.7, 1.0];
        let table = low.at_thresholds(&ts);
        for (t, row) in ts.iter().zip(&table) {
            let (out, _) = run(&p, config(*t), &docs);
            let dropped = out.kept.iter().filter(|k| !**k).count() as u64;
            assert_eq!(row.threshold, *t);
            assert_eq!(
                (row.pairs, row.clusters, row.dropped),
                (out.pair_count(), out.clusters.len() as u64, dropped),
                "at {t}"
            );
        }
        assert!(table[0].dropped > table[1].dropped, "{table:?}");
    }

    #[test]
    fn field_rules_keep_by_rank_and_refuse_mixed_kinds() {
        let base = "one two three four five six seven eight nine ten eleven twelve";
        let docs = [base; 4];
        let p = pipeline();
        let date = |s: &str| Rank::parse(s).expect("a date");
        let ranks =
            [Some(date("2024-01-02")), None, Some(date("2024-03-01")), Some(date("2023-12-31"))];
        let keep = |keep: Keep| {
            let config = SearchConfig { threshold: 0.7, keep, ..SearchConfig::default() };
            let mut d = Dedup::new(&p, config).expect("config");
            let mut scratch = Scratch::default();
            for (t, r) in docs.iter().zip(ranks) {
                let s = d.sketch(Document::Text(t), t.len(), &mut scratch);
                d.push_ranked(s, r).expect("one kind");
            }
            let out = d.run().expect("run");
            assert_eq!(out.clusters[0].members, vec![0, 1, 2, 3]);
            out.clusters[0].keep
        };
        assert_eq!(keep(Keep::Max("at".into())), 2);
        assert_eq!(keep(Keep::Min("at".into())), 3);
        let config = SearchConfig { keep: Keep::Max("at".into()), ..SearchConfig::default() };
        let mut d = Dedup::new(&p, config).expect("config");
        let mut scratch = Scratch::default();
        let s = d.sketch(Document::Text(base), base.len(), &mut scratch);
        d.push_ranked(s.clone(), Some(date("2024-01-01"))).expect("first");
        let e = d.push_ranked(s, Rank::parse("17").ok()).expect_err("mixed");
        assert!(e.to_string().contains("holds a number here and a date"), "{e}");
        assert_eq!(d.len(), 1, "the refused document is not added");
    }

    #[test]
    fn empty_documents_match_nothing() {
        let p = pipeline();
        let (out, _) = run(&p, SearchConfig::default(), &texts(&["", "  ", "...", ""]));
        assert!(out.clusters.is_empty());
        assert_eq!(out.kept, vec![true; 4]);
    }

    #[test]
    fn pairs_include_every_copy_of_both_groups() {
        let p = pipeline();
        let a = "one two three four five six seven eight nine ten eleven twelve";
        let b = "one two three four five six seven eight nine ten eleven twelve thirteen";
        let docs = texts(&[a, b, a, "unrelated words here and there", b, a]);
        let config = SearchConfig { threshold: 0.8, ..SearchConfig::default() };
        let (out, _) = run(&p, config, &docs);
        let mut got: Vec<(u32, u32, f64)> =
            out.pairs().map(|p| (p.a, p.b, (p.similarity * 1e6).round() / 1e6)).collect();
        got.sort_by_key(|x| (x.0, x.1));
        // a = {0, 2, 5}, b = {1, 4}: 3 + 1 pairs inside the groups, 3 x 2 between them, at
        // the Jaccard of 8 and 9 word 5-shingles.
        let s = (8.0f64 / 9.0 * 1e6).round() / 1e6;
        let want = vec![
            (0, 1, s),
            (0, 2, 1.0),
            (0, 4, s),
            (0, 5, 1.0),
            (1, 2, s),
            (1, 4, 1.0),
            (1, 5, s),
            (2, 4, s),
            (2, 5, 1.0),
            (4, 5, s),
        ];
        assert_eq!(got, want);
        assert_eq!(out.pair_count(), 10);
        // The compact form: one edge, and each copy with its first copy.
        let mut compact: Vec<(u32, u32)> = out.compact_pairs().map(|p| (p.a, p.b)).collect();
        compact.sort_unstable();
        assert_eq!(compact, vec![(0, 1), (0, 2), (0, 5), (1, 4)]);
        assert_eq!(out.groups().collect::<Vec<_>>(), vec![&[0, 2, 5][..], &[1, 4][..]]);
        assert_eq!(out.copies_of(3).collect::<Vec<_>>(), vec![3]);
    }

    /// A group of thousands of copies is stored in linear memory; its pairs are streamed.
    #[test]
    fn a_large_group_streams_its_pairs() {
        let p = pipeline();
        let t = "the same page copied again and again by every mirror of the site";
        let mut d = Dedup::new(&p, SearchConfig::default()).expect("valid");
        let mut scratch = Scratch::default();
        let sketch = d.sketch(Document::Text(t), t.len(), &mut scratch);
        for _ in 0..3000 {
            d.push(sketch.clone()).expect("push");
        }
        let out = d.run().expect("run");
        assert_eq!(out.edges.len(), 0);
        assert_eq!(out.pair_count(), 3000 * 2999 / 2);
        assert_eq!(out.pairs().count() as u64, out.pair_count());
        assert_eq!(out.clusters.len(), 1);
    }

    #[test]
    fn exact_duplicates_are_merged_before_search() {
        let p = pipeline();
        let t = "a b c d e f g h i j k l m n o p";
        let (out, _) = run(&p, SearchConfig::default(), &texts(&[t, t, t, "x y z w v u t s r q"]));
        assert_eq!(out.exact_duplicates, 2);
        assert_eq!(out.clusters.len(), 1);
        assert_eq!(out.clusters[0].members, vec![0, 1, 2]);
        assert_eq!(out.kept, vec![true, false, false, true]);
    }

    #[test]
    fn index_round_trip_and_incremental_run() {
        let p = pipeline();
        let dir = std::env::temp_dir().join(format!("neardup-index-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let old = texts(&[
            "the first stored page talks about rivers and mountains in the north",
            "a second stored page about cooking rice and noodles at home tonight",
        ]);
        let mut d = Dedup::new(&p, SearchConfig { threshold: 0.5, ..SearchConfig::default() })
            .expect("valid");
        let mut scratch = Scratch::default();
        for t in &old {
            let s = d.sketch(Document::Text(t), t.len(), &mut scratch);
            d.push(s).expect("push");
        }
        d.save(&IndexLock::acquire(&dir).expect("lock"), &["a".into(), "b".into()]).expect("saved");

        let mut again = Dedup::new(&p, SearchConfig { threshold: 0.5, ..SearchConfig::default() })
            .expect("valid");
        let ids = again.load(&dir).expect("loaded");
        assert_eq!(ids, vec!["a", "b"]);
        assert_eq!(sketches(&again), sketches(&d));
        let new = texts(&[
            "the first stored page talks about rivers and mountains in the north!",
            "something never seen before about trains and stations and tickets",
        ]);
        for t in &new {
            let s = again.sketch(Document::Text(t), t.len(), &mut scratch);
            again.push(s).expect("push");
        }
        let out = again.run().expect("run");
        assert_eq!(out.kept, vec![true, true, false, true]);
        assert_eq!(out.clusters[0].keep, 0);

        // Another threshold chooses another banding: refused, naming the setting.
        let mut other = Dedup::new(&p, SearchConfig { threshold: 0.9, ..SearchConfig::default() })
            .expect("valid");
        let e = other.load(&dir).expect_err("mismatch").to_string();
        assert!(e.contains("banding"), "{e}");
        let q = Pipeline::new(PipelineSpec::default()).expect("valid");
        let mut other = Dedup::new(&q, SearchConfig { threshold: 0.5, ..SearchConfig::default() })
            .expect("valid");
        let e = other.load(&dir).expect_err("mismatch").to_string();
        assert!(e.contains("pipeline"), "{e}");

        // A damaged file is refused with a reason.
        let docs = dir.join(read_manifest(&dir).expect("manifest").docs.expect("named"));
        let mut bytes = fs::read(&docs).expect("read");
        let last = bytes.len() - 20;
        bytes[last] ^= 1;
        fs::write(&docs, &bytes).expect("write");
        let mut broken = Dedup::new(&p, SearchConfig { threshold: 0.5, ..SearchConfig::default() })
            .expect("valid");
        let e = broken.load(&dir).expect_err("corrupt").to_string();
        assert!(e.contains("checksum"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }

    /// A new copy of an old document matches everything the old one matches, even when both
    /// ends of that match are old (regression: such candidates were skipped as old-old).
    #[test]
    fn a_new_copy_of_an_old_document_gets_its_pairs() {
        let p = pipeline();
        let dir = std::env::temp_dir().join(format!("neardup-index-copy-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let a = "one two three four five six seven eight nine ten eleven twelve";
        let b = "one two three four five six seven eight nine ten eleven twelve thirteen";
        let config = SearchConfig { threshold: 0.8, ..SearchConfig::default() };
        let mut old = Dedup::new(&p, config.clone()).expect("valid");
        let mut scratch = Scratch::default();
        for t in [a, b] {
            let s = old.sketch(Document::Text(t), t.len(), &mut scratch);
            old.push(s).expect("push");
        }
        old.save(&IndexLock::acquire(&dir).expect("lock"), &["a".into(), "b".into()])
            .expect("saved");
        let mut d = Dedup::new(&p, config).expect("valid");
        d.load(&dir).expect("loaded");
        let s = d.sketch(Document::Text(a), a.len(), &mut scratch);
        d.push(s).expect("push");
        let out = d.run().expect("run");
        let mut got: Vec<(u32, u32)> = out.pairs().map(|p| (p.a, p.b)).collect();
        got.sort_unstable();
        assert_eq!(got, vec![(0, 2), (1, 2)]);
        assert_eq!(out.pair_count(), 2);
        assert_eq!(out.kept, vec![true, true, false]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_configs_are_refused() {
        let p = pipeline();
        for config in [
            SearchConfig { threshold: 0.0, ..SearchConfig::default() },
            SearchConfig { threshold: 1.5, ..SearchConfig::default() },
            SearchConfig { method: Method::SimHash, hamming: 64, ..SearchConfig::default() },
            SearchConfig { method: Method::SimHash, hamming: 20, ..SearchConfig::default() },
            SearchConfig { method: Method::Both, hamming: 16, ..SearchConfig::default() },
            SearchConfig { banding: Some((20, 20)), ..SearchConfig::default() },
        ] {
            assert!(Dedup::new(&p, config).is_err());
        }
    }
}
