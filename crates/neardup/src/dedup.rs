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
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use neardup_index::{candidate_pairs, hamming_pairs, Banding};
use neardup_sketch::{cosine, jaccard_sorted, optimal_params, SparseVector};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{Document, Pipeline, Scratch};

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
    fn uses_minhash(self) -> bool {
        self != Method::SimHash
    }

    fn uses_simhash(self) -> bool {
        self != Method::MinHash
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

    /// True when identical feature *sets* are interchangeable (weights do not matter).
    fn is_set_based(self, method: Method) -> bool {
        match self {
            Verification::Jaccard => true,
            Verification::Estimate => method.uses_minhash(),
            Verification::Cosine | Verification::Hamming => false,
        }
    }
}

/// The default LSH weights `(false positive, false negative)` under exact verification. With
/// 128 values they give a candidate probability of 0.90-0.97 for a pair exactly at the threshold
/// (0.95 at 0.8: 16 bands of 8 rows), against 0.31-0.55 for `(0.5, 0.5)`.
pub const RECALL_WEIGHTS: (f64, f64) = (0.05, 0.95);

/// Which document of a cluster is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Keep {
    /// The first in input order.
    #[default]
    First,
    /// The longest (bytes of text); ties go to the first.
    Longest,
    /// The shortest; ties go to the first.
    Shortest,
}

/// What to deduplicate by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DedupConfig {
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
    /// `(false positive, false negative)` weights for choosing the banding; `None` picks
    /// [`RECALL_WEIGHTS`] when candidates are verified exactly (a false positive then costs one
    /// cheap check, a false negative a missed duplicate) and datasketch's `(0.5, 0.5)` for
    /// [`Verification::Estimate`].
    pub weights: Option<(f64, f64)>,
    /// Which document of a cluster is kept.
    pub keep: Keep,
}

impl Default for DedupConfig {
    fn default() -> Self {
        DedupConfig {
            method: Method::MinHash,
            threshold: 0.8,
            hamming: 3,
            verification: None,
            banding: None,
            weights: None,
            keep: Keep::First,
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
    /// A saved index is damaged or not an index.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
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
            DedupError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            DedupError::Corrupt { path, message } => {
                write!(f, "{}: not a valid neardup index: {message}", path.display())
            }
            DedupError::Mismatch { field, index, current } => write!(
                f,
                "the index was built with {field} {index}, this run uses {current}; \
                 use the same settings or build a new index"
            ),
        }
    }
}

impl std::error::Error for DedupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DedupError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What dedup keeps of one document: only the parts its method and verification need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocSketch {
    /// Bytes of text (for `--keep longest|shortest`).
    pub len: u64,
    /// True when the document has no features: it is a near-duplicate of nothing.
    pub empty: bool,
    /// A 128-bit hash of the feature set (or weighted vector): equal means exact duplicates.
    exact: u128,
    /// Sorted distinct feature hashes (Jaccard verification).
    features: Box<[u64]>,
    /// Weighted feature vector (cosine verification).
    vector: SparseVector,
    /// MinHash signature (estimate verification with MinHash).
    signature: Box<[u32]>,
    /// LSH band keys (MinHash method).
    keys: Box<[u64]>,
    /// SimHash (SimHash method or Hamming verification).
    simhash: u128,
}

impl DocSketch {
    /// The LSH band keys (MinHash method).
    pub fn band_keys(&self) -> &[u64] {
        &self.keys
    }

    /// The SimHash value (SimHash method or Hamming verification; 0 otherwise).
    pub fn simhash_value(&self) -> u128 {
        self.simhash
    }

    /// The sketch as bytes (the record layout of `docs.bin`, without the id), for stores.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + 8 * (self.features.len() + self.keys.len()));
        self.write_to(&mut out).expect("writing to a Vec cannot fail");
        out
    }

    /// Reads what [`DocSketch::to_bytes`] wrote.
    pub fn from_bytes(bytes: &[u8]) -> Result<DocSketch, String> {
        let mut r = Reader { bytes, pos: 0 };
        let doc = DocSketch::read_from(&mut r)?;
        if r.pos != bytes.len() {
            return Err(format!("{} unexpected bytes at offset {}", bytes.len() - r.pos, r.pos));
        }
        Ok(doc)
    }

    fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
        out.write_all(&self.len.to_le_bytes())?;
        out.write_all(&[u8::from(self.empty)])?;
        out.write_all(&self.exact.to_le_bytes())?;
        out.write_all(&self.simhash.to_le_bytes())?;
        out.write_all(&(self.features.len() as u32).to_le_bytes())?;
        for h in self.features.iter() {
            out.write_all(&h.to_le_bytes())?;
        }
        out.write_all(&(self.vector.len() as u32).to_le_bytes())?;
        for (h, w) in self.vector.entries() {
            out.write_all(&h.to_le_bytes())?;
            out.write_all(&w.to_le_bytes())?;
        }
        out.write_all(&(self.signature.len() as u32).to_le_bytes())?;
        for v in self.signature.iter() {
            out.write_all(&v.to_le_bytes())?;
        }
        out.write_all(&(self.keys.len() as u32).to_le_bytes())?;
        for k in self.keys.iter() {
            out.write_all(&k.to_le_bytes())?;
        }
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<DocSketch, String> {
        let len = r.u64()?;
        let empty = r.take(1)?[0] != 0;
        let exact = r.u128()?;
        let simhash = r.u128()?;
        let n = r.u32()? as usize;
        let features = (0..n).map(|_| r.u64()).collect::<Result<Box<[u64]>, _>>()?;
        let n = r.u32()? as usize;
        let vector = SparseVector::from_entries(
            (0..n)
                .map(|_| Ok((r.u64()?, f64::from_bits(r.u64()?))))
                .collect::<Result<Vec<(u64, f64)>, String>>()?,
        );
        let n = r.u32()? as usize;
        let signature = (0..n).map(|_| r.u32()).collect::<Result<Box<[u32]>, _>>()?;
        let n = r.u32()? as usize;
        let keys = (0..n).map(|_| r.u64()).collect::<Result<Box<[u64]>, _>>()?;
        Ok(DocSketch { len, empty, exact, features, vector, signature, keys, simhash })
    }
}

/// A verified pair, by document position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// The earlier document.
    pub a: u32,
    /// The later document.
    pub b: u32,
    /// Its similarity under the verification measure.
    pub similarity: f64,
}

/// A cluster of two or more documents.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Document positions, ascending.
    pub members: Vec<u32>,
    /// The kept document.
    pub keep: u32,
    /// The smallest similarity among the verified pairs that joined it (its weakest link).
    pub similarity: f64,
}

/// The result of [`Dedup::run`].
#[derive(Debug, Clone, Default)]
pub struct DedupOutcome {
    /// Verified pairs, sorted by `(a, b)`. Exact duplicates are paired with the first copy only.
    pub pairs: Vec<Pair>,
    /// Clusters of two or more documents, ordered by their first member.
    pub clusters: Vec<Cluster>,
    /// For each document, the index of its cluster in `clusters`, or `None` if it is alone.
    pub cluster_of: Vec<Option<u32>>,
    /// For each document, whether it is kept.
    pub kept: Vec<bool>,
    /// Candidate pairs checked.
    pub candidates: usize,
    /// Documents merged into an earlier exact duplicate before candidate search.
    pub exact_duplicates: usize,
}

/// The banding, verification and widths a run uses, resolved from a config and a pipeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Plan {
    pub(crate) method: Method,
    pub(crate) verification: Verification,
    pub(crate) banding: Option<Banding>,
    pub(crate) bits: u32,
}

impl Plan {
    /// Validates `config` against `pipeline` and resolves its defaults.
    pub(crate) fn resolve(pipeline: &Pipeline, config: &DedupConfig) -> Result<Plan, DedupError> {
        let invalid = |message: String| Err(DedupError::InvalidConfig { message });
        if !(config.threshold > 0.0 && config.threshold <= 1.0) {
            return invalid(format!("threshold {} is not in (0, 1]", config.threshold));
        }
        let bits = pipeline.simhash_bits().get();
        if config.hamming >= bits {
            return invalid(format!(
                "Hamming distance {} must be below the SimHash width {bits}",
                config.hamming
            ));
        }
        if config.method.uses_simhash() {
            // The permuted tables need k + 1 blocks, at most 16 (C(16, k) tables at most).
            neardup_index::HammingIndex::new(bits, config.hamming).map_err(|e| {
                DedupError::InvalidConfig { message: format!("--hamming {}: {e}", config.hamming) }
            })?;
        }
        let verification = config.verification.unwrap_or(Verification::default_for(config.method));
        let num_perm = pipeline.spec().minhash.num_perm;
        let banding = match config.method {
            Method::SimHash => None,
            Method::MinHash | Method::Both => {
                let (bands, rows) = match config.banding {
                    Some(br) => br,
                    None => {
                        let weights = config.weights.unwrap_or(match verification {
                            Verification::Estimate => (0.5, 0.5),
                            _ => RECALL_WEIGHTS,
                        });
                        let p = optimal_params(config.threshold, num_perm, weights)
                            .map_err(|e| DedupError::InvalidConfig { message: e.to_string() })?;
                        (p.bands, p.rows)
                    }
                };
                let banding = Banding::new(bands, rows)
                    .map_err(|e| DedupError::InvalidConfig { message: e.to_string() })?;
                banding.check(num_perm).map_err(|e| DedupError::InvalidConfig {
                    message: format!("{e} (num_perm {num_perm})"),
                })?;
                Some(banding)
            }
        };
        Ok(Plan { method: config.method, verification, banding, bits })
    }
}

/// A deduplication run: documents are added (sketched in parallel by the caller), then
/// [`Dedup::run`] finds the clusters.
///
/// ```
/// use neardup::{Dedup, DedupConfig, Document, Pipeline, PipelineSpec, Scratch};
///
/// let pipeline = Pipeline::new(PipelineSpec::default())?;
/// let mut dedup = Dedup::new(&pipeline, DedupConfig { threshold: 0.5, ..DedupConfig::default() })?;
/// let mut scratch = Scratch::default();
/// for text in [
///     "the quick brown fox jumps over the lazy dog near the river bank",
///     "something else entirely, about neither foxes nor dogs nor rivers",
///     "the quick brown fox jumps over the lazy dog near the river bank!",
/// ] {
///     let sketch = dedup.sketch(Document::Text(text), text.len(), &mut scratch);
///     dedup.push(sketch);
/// }
/// let outcome = dedup.run();
/// assert_eq!(outcome.kept, vec![true, true, false]);
/// assert_eq!(outcome.clusters[0].members, vec![0, 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Dedup<'p> {
    pipeline: &'p Pipeline,
    config: DedupConfig,
    plan: Plan,
    docs: Vec<DocSketch>,
    /// Documents `0..seen` came from a saved index and are never dropped.
    seen: usize,
}

impl<'p> Dedup<'p> {
    /// A run over documents fingerprinted by `pipeline`.
    pub fn new(pipeline: &'p Pipeline, config: DedupConfig) -> Result<Dedup<'p>, DedupError> {
        let plan = Plan::resolve(pipeline, &config)?;
        Ok(Dedup { pipeline, config, plan, docs: Vec::new(), seen: 0 })
    }

    /// The verification in use.
    pub fn verification(&self) -> Verification {
        self.plan.verification
    }

    /// The LSH `(bands, rows)` in use (MinHash only).
    pub fn banding(&self) -> Option<(usize, usize)> {
        self.plan.banding.map(|b| (b.bands(), b.rows()))
    }

    /// The number of documents added (including those of a loaded index).
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// True when no document was added.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The sketch of the document at `position`.
    pub fn document(&self, position: usize) -> &DocSketch {
        &self.docs[position]
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

    /// Adds a document; returns its position.
    pub fn push(&mut self, sketch: DocSketch) -> u32 {
        self.docs.push(sketch);
        (self.docs.len() - 1) as u32
    }

    /// Finds the clusters among everything added.
    pub fn run(&self) -> DedupOutcome {
        let n = self.docs.len();
        // Exact duplicates: group non-empty documents by their exact key; the first of each group
        // represents it.
        let mut by_key: Vec<u32> =
            (0..n as u32).filter(|&i| !self.docs[i as usize].empty).collect();
        by_key.sort_unstable_by_key(|&i| (self.docs[i as usize].exact, i));
        let mut reps: Vec<u32> = Vec::new();
        let mut edges: Vec<Pair> = Vec::new();
        let mut exact_duplicates = 0;
        let mut start = 0;
        while start < by_key.len() {
            let key = self.docs[by_key[start] as usize].exact;
            let mut end = start + 1;
            while end < by_key.len() && self.docs[by_key[end] as usize].exact == key {
                end += 1;
            }
            let first = by_key[start];
            reps.push(first);
            for &other in &by_key[start + 1..end] {
                // Two old documents were already deduplicated against each other.
                if (first as usize) < self.seen && (other as usize) < self.seen {
                    continue;
                }
                exact_duplicates += 1;
                edges.push(Pair { a: first, b: other, similarity: 1.0 });
            }
            start = end;
        }
        reps.sort_unstable();

        // Candidates among representatives, as positions into `reps`.
        let mut candidates: Vec<(u32, u32)> = Vec::new();
        if self.plan.method.uses_minhash() {
            let bands = self.plan.banding.map_or(1, |b| b.bands());
            let mut keys = Vec::with_capacity(reps.len() * bands);
            for &r in &reps {
                keys.extend_from_slice(&self.docs[r as usize].keys);
            }
            candidates = candidate_pairs(&keys, bands);
        }
        if self.plan.method.uses_simhash() {
            let fps: Vec<u128> = reps.iter().map(|&r| self.docs[r as usize].simhash).collect();
            candidates.extend(
                hamming_pairs(self.plan.bits, self.config.hamming, &fps)
                    .expect("widths and distances are validated in Dedup::new")
                    .into_iter()
                    .map(|(x, y, _)| (x, y)),
            );
            if self.plan.method == Method::Both {
                candidates.sort_unstable();
                candidates.dedup();
            }
        }
        let seen = self.seen as u32;
        let to_check: Vec<(u32, u32)> = candidates
            .into_iter()
            .map(|(x, y)| (reps[x as usize], reps[y as usize]))
            .filter(|&(a, b)| a >= seen || b >= seen)
            .collect();
        let checked = to_check.len();
        let verified: Vec<Pair> = to_check
            .par_iter()
            .with_min_len(1024)
            .filter_map(|&(a, b)| {
                let similarity = self.similarity(a, b)?;
                Some(Pair { a, b, similarity })
            })
            .collect();
        edges.extend(verified);
        edges.sort_unstable_by_key(|p| (p.a, p.b));
        self.cluster(edges, checked, exact_duplicates)
    }

    /// The similarity of a candidate pair if it passes verification.
    fn similarity(&self, a: u32, b: u32) -> Option<f64> {
        let (da, db) = (&self.docs[a as usize], &self.docs[b as usize]);
        verify(&self.plan, self.config.threshold, self.config.hamming, da, db)
    }

    fn cluster(
        &self,
        pairs: Vec<Pair>,
        candidates: usize,
        exact_duplicates: usize,
    ) -> DedupOutcome {
        let n = self.docs.len();
        let mut sets = UnionFind::new(n);
        for p in &pairs {
            sets.union(p.a, p.b);
        }
        // Group members by root, in order of first member.
        let mut cluster_of_root: Vec<u32> = vec![u32::MAX; n];
        let mut clusters: Vec<Cluster> = Vec::new();
        let mut cluster_of = vec![None; n];
        for i in 0..n as u32 {
            if sets.size(i) < 2 {
                continue;
            }
            let root = sets.find(i) as usize;
            if cluster_of_root[root] == u32::MAX {
                cluster_of_root[root] = clusters.len() as u32;
                clusters.push(Cluster { members: Vec::new(), keep: i, similarity: 1.0 });
            }
            let c = cluster_of_root[root];
            clusters[c as usize].members.push(i);
            cluster_of[i as usize] = Some(c);
        }
        for p in &pairs {
            if let Some(c) = cluster_of[p.a as usize] {
                let cluster = &mut clusters[c as usize];
                cluster.similarity = cluster.similarity.min(p.similarity);
            }
        }
        let mut kept = vec![true; n];
        for cluster in &mut clusters {
            cluster.keep = self.keeper(&cluster.members);
            for &m in &cluster.members {
                kept[m as usize] = m == cluster.keep;
            }
        }
        DedupOutcome { pairs, clusters, cluster_of, kept, candidates, exact_duplicates }
    }

    /// The keeper of a cluster: an old document if there is one (it was kept before), else the
    /// keep rule with ties to the first.
    fn keeper(&self, members: &[u32]) -> u32 {
        if let Some(&old) = members.iter().find(|&&m| (m as usize) < self.seen) {
            return old;
        }
        let len = |m: &u32| self.docs[*m as usize].len;
        let first = members[0];
        match self.config.keep {
            Keep::First => first,
            // `max_by_key` returns the last maximum; iterate in reverse so ties go to the first.
            Keep::Longest => *members.iter().rev().max_by_key(|m| len(m)).unwrap_or(&first),
            Keep::Shortest => *members.iter().min_by_key(|m| len(m)).unwrap_or(&first),
        }
    }
}

/// Sketches one document for `plan`: only what its method and verification need.
pub(crate) fn sketch_with(
    pipeline: &Pipeline,
    plan: &Plan,
    doc: Document<'_>,
    len: usize,
    scratch: &mut Scratch,
) -> DocSketch {
    let features = pipeline.features(doc, scratch);
    let needs_simhash = plan.method.uses_simhash() || plan.verification == Verification::Hamming;
    let simhash =
        if needs_simhash { pipeline.simhasher().fingerprint(features).value() } else { 0 };
    let weighted = !plan.verification.is_set_based(plan.method);
    let vector = if weighted || plan.verification == Verification::Cosine {
        SparseVector::from_features(features)
    } else {
        SparseVector::default()
    };
    let mut distinct: Vec<u64> = features.iter().map(|f| f.hash).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let empty = distinct.is_empty();
    let exact = if weighted {
        let mut bytes = Vec::with_capacity(vector.len() * 16);
        for (h, w) in vector.entries() {
            bytes.extend_from_slice(&h.to_le_bytes());
            bytes.extend_from_slice(&w.to_bits().to_le_bytes());
        }
        xxhash_rust::xxh3::xxh3_128(&bytes)
    } else {
        let bytes: Vec<u8> = distinct.iter().flat_map(|h| h.to_le_bytes()).collect();
        xxhash_rust::xxh3::xxh3_128(&bytes)
    };
    let (signature, keys) = match plan.method {
        Method::MinHash | Method::Both if !empty => {
            let sig = pipeline.minhasher().sketch_hashes(&distinct);
            let keys =
                plan.banding.map(|b| b.keys(sig.values())).unwrap_or_default().into_boxed_slice();
            let keep_sig = plan.verification == Verification::Estimate;
            (if keep_sig { sig.values().into() } else { Box::default() }, keys)
        }
        _ => (Box::default(), Box::default()),
    };
    let features = if plan.verification == Verification::Jaccard {
        distinct.into_boxed_slice()
    } else {
        Box::default()
    };
    let vector =
        if plan.verification == Verification::Cosine { vector } else { SparseVector::default() };
    DocSketch { len: len as u64, empty, exact, features, vector, signature, keys, simhash }
}

/// The similarity of two documents if they pass `plan`'s verification at `threshold` (or
/// within `hamming` bits). Empty documents match nothing.
pub(crate) fn verify(
    plan: &Plan,
    threshold: f64,
    hamming: u32,
    da: &DocSketch,
    db: &DocSketch,
) -> Option<f64> {
    if da.empty || db.empty {
        return None;
    }
    let hamming_similarity = || {
        let d = (da.simhash ^ db.simhash).count_ones();
        (d <= hamming).then(|| 1.0 - f64::from(d) / f64::from(plan.bits))
    };
    // Guard against the rounding of a similarity that equals the threshold exactly
    // (4/5 computed as 0.7999999999999999).
    let passes = |s: f64| s >= threshold - 1e-12;
    match plan.verification {
        Verification::Jaccard => {
            let s = jaccard_sorted(&da.features, &db.features);
            passes(s).then_some(s)
        }
        Verification::Cosine => {
            let s = cosine(&da.vector, &db.vector);
            passes(s).then_some(s)
        }
        Verification::Hamming => hamming_similarity(),
        Verification::Estimate => match plan.method {
            Method::SimHash => hamming_similarity(),
            Method::MinHash | Method::Both => {
                let equal =
                    da.signature.iter().zip(db.signature.iter()).filter(|(x, y)| x == y).count();
                let s = equal as f64 / da.signature.len().max(1) as f64;
                passes(s).then_some(s)
            }
        },
    }
}

/// Disjoint sets with path halving and union by size.
#[derive(Debug)]
struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    fn new(n: usize) -> UnionFind {
        UnionFind { parent: (0..n as u32).collect(), size: vec![1; n] }
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand;
            x = grand;
        }
        x
    }

    fn union(&mut self, a: u32, b: u32) {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra == rb {
            return;
        }
        if self.size[ra as usize] < self.size[rb as usize] {
            std::mem::swap(&mut ra, &mut rb);
        }
        self.parent[rb as usize] = ra;
        self.size[ra as usize] += self.size[rb as usize];
    }

    fn size(&mut self, x: u32) -> u32 {
        let r = self.find(x);
        self.size[r as usize]
    }
}

// ---------------------------------------------------------------------------------------------
// The on-disk index: `manifest.json` (readable, checked on load) and `docs.bin` (the sketches).

/// Version of the on-disk index layout.
pub const INDEX_FORMAT_VERSION: u32 = 1;
const DOCS_MAGIC: &[u8; 8] = b"NDUPDOCS";

/// The readable part of a saved index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexManifest {
    /// Always `"neardup-index"`.
    pub format: String,
    /// [`INDEX_FORMAT_VERSION`].
    pub version: u32,
    /// The pipeline id ([`Pipeline::id`]).
    pub pipeline_id: String,
    /// The pipeline spec, for people reading the manifest.
    pub spec: serde_json::Value,
    /// The candidate method.
    pub method: Method,
    /// The verification.
    pub verification: Verification,
    /// LSH bands and rows (MinHash).
    pub banding: Option<(usize, usize)>,
    /// SimHash width.
    pub bits: u32,
    /// Documents stored.
    pub documents: u64,
}

impl<'p> Dedup<'p> {
    fn manifest(&self) -> IndexManifest {
        IndexManifest {
            format: "neardup-index".into(),
            version: INDEX_FORMAT_VERSION,
            pipeline_id: self.pipeline.id().to_string(),
            spec: serde_json::to_value(self.pipeline.spec()).unwrap_or(serde_json::Value::Null),
            method: self.plan.method,
            verification: self.plan.verification,
            banding: self.banding(),
            bits: self.plan.bits,
            documents: self.docs.len() as u64,
        }
    }

    /// Writes every document with its id to `dir` (created if needed). Each file is written to a
    /// temporary name, synced and renamed, so a crash leaves the previous index intact.
    pub fn save(&self, dir: &Path, ids: &[String]) -> Result<(), DedupError> {
        assert_eq!(ids.len(), self.docs.len(), "one id per document");
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| DedupError::Io { path, source }
        };
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let docs_path = dir.join("docs.bin");
        let tmp = dir.join("docs.bin.tmp");
        {
            let file = File::create(&tmp).map_err(io_err(&tmp))?;
            let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
            write_docs(&mut out, &self.docs, ids).map_err(io_err(&tmp))?;
            let sum = out.hasher.digest();
            let mut inner = out.inner;
            inner.write_all(&sum.to_le_bytes()).map_err(io_err(&tmp))?;
            let file = inner.into_inner().map_err(|e| io_err(&tmp)(e.into_error()))?;
            file.sync_all().map_err(io_err(&tmp))?;
        }
        fs::rename(&tmp, &docs_path).map_err(io_err(&docs_path))?;
        let manifest_path = dir.join("manifest.json");
        let tmp = dir.join("manifest.json.tmp");
        let text = serde_json::to_string_pretty(&self.manifest()).expect("manifest serializes");
        {
            let mut file = File::create(&tmp).map_err(io_err(&tmp))?;
            file.write_all(text.as_bytes()).map_err(io_err(&tmp))?;
            file.sync_all().map_err(io_err(&tmp))?;
        }
        fs::rename(&tmp, &manifest_path).map_err(io_err(&manifest_path))?;
        Ok(())
    }

    /// Loads a saved index as the documents already seen; returns their ids. Refuses an index
    /// made with another pipeline, method, verification, banding or width.
    pub fn load(&mut self, dir: &Path) -> Result<Vec<String>, DedupError> {
        assert!(self.docs.is_empty(), "load an index before adding documents");
        let manifest_path = dir.join("manifest.json");
        let text = fs::read_to_string(&manifest_path)
            .map_err(|source| DedupError::Io { path: manifest_path.clone(), source })?;
        let corrupt = |path: &Path, message: String| DedupError::Corrupt {
            path: path.to_path_buf(),
            message,
        };
        let manifest: IndexManifest =
            serde_json::from_str(&text).map_err(|e| corrupt(&manifest_path, e.to_string()))?;
        if manifest.format != "neardup-index" {
            return Err(corrupt(&manifest_path, format!("format {:?}", manifest.format)));
        }
        let now = self.manifest();
        let check = |field: &'static str, index: String, current: String| {
            if index == current {
                Ok(())
            } else {
                Err(DedupError::Mismatch { field, index, current })
            }
        };
        check("format version", manifest.version.to_string(), now.version.to_string())?;
        check("pipeline", manifest.pipeline_id.clone(), now.pipeline_id.clone())?;
        check("method", format!("{:?}", manifest.method), format!("{:?}", now.method))?;
        check(
            "verification",
            format!("{:?}", manifest.verification),
            format!("{:?}", now.verification),
        )?;
        check(
            "banding (bands, rows)",
            format!("{:?}", manifest.banding),
            format!("{:?}", now.banding),
        )?;
        check("SimHash bits", manifest.bits.to_string(), now.bits.to_string())?;

        let docs_path = dir.join("docs.bin");
        let mut bytes = Vec::new();
        File::open(&docs_path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|source| DedupError::Io { path: docs_path.clone(), source })?;
        let (docs, ids) = read_docs(&bytes).map_err(|message| corrupt(&docs_path, message))?;
        if docs.len() as u64 != manifest.documents {
            return Err(corrupt(
                &docs_path,
                format!("{} documents, the manifest says {}", docs.len(), manifest.documents),
            ));
        }
        self.docs = docs;
        self.seen = self.docs.len();
        Ok(ids)
    }
}

/// A writer that hashes what passes through it (xxh3-64), for the trailing checksum.
struct HashingWriter<W: Write> {
    inner: W,
    hasher: xxhash_rust::xxh3::Xxh3,
}

impl<W: Write> HashingWriter<W> {
    fn new(inner: W) -> Self {
        HashingWriter { inner, hasher: xxhash_rust::xxh3::Xxh3::new() }
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `docs.bin`: magic, version, count, then per document its id and sketch, little-endian, each
/// list prefixed with its u32 length; an xxh3-64 of everything before it closes the file.
fn write_docs<W: Write>(out: &mut W, docs: &[DocSketch], ids: &[String]) -> io::Result<()> {
    out.write_all(DOCS_MAGIC)?;
    out.write_all(&INDEX_FORMAT_VERSION.to_le_bytes())?;
    out.write_all(&(docs.len() as u64).to_le_bytes())?;
    for (d, id) in docs.iter().zip(ids) {
        out.write_all(&(id.len() as u32).to_le_bytes())?;
        out.write_all(id.as_bytes())?;
        d.write_to(out)?;
    }
    Ok(())
}

/// Reads what [`write_docs`] wrote; the error says what is wrong and at which byte offset.
fn read_docs(bytes: &[u8]) -> Result<(Vec<DocSketch>, Vec<String>), String> {
    if bytes.len() < 28 || &bytes[..8] != DOCS_MAGIC {
        return Err("missing the docs.bin header".into());
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    let expected = u64::from_le_bytes(sum.try_into().expect("8 bytes"));
    if xxhash_rust::xxh3::xxh3_64(body) != expected {
        return Err("checksum mismatch (the file is truncated or damaged)".into());
    }
    let mut r = Reader { bytes: body, pos: 8 };
    let version = r.u32()?;
    if version != INDEX_FORMAT_VERSION {
        return Err(format!("format version {version}, this build reads {INDEX_FORMAT_VERSION}"));
    }
    let count = r.u64()?;
    let mut docs = Vec::with_capacity(count.min(1 << 24) as usize);
    let mut ids = Vec::with_capacity(count.min(1 << 24) as usize);
    for _ in 0..count {
        let id_len = r.u32()? as usize;
        let at = r.pos;
        let id = String::from_utf8(r.take(id_len)?.to_vec())
            .map_err(|_| format!("invalid UTF-8 in an id at byte offset {at}"))?;
        let doc = DocSketch::read_from(&mut r)?;
        ids.push(id);
        docs.push(doc);
    }
    if r.pos != body.len() {
        return Err(format!("{} unexpected bytes at offset {}", body.len() - r.pos, r.pos));
    }
    Ok((docs, ids))
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte offset {}", self.pos))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn u128(&mut self) -> Result<u128, String> {
        Ok(u128::from_le_bytes(self.take(16)?.try_into().expect("16 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PipelineSpec;
    use proptest::prelude::*;

    fn pipeline() -> Pipeline {
        Pipeline::new(PipelineSpec::preset("shingles").expect("preset")).expect("valid")
    }

    fn run(p: &Pipeline, config: DedupConfig, texts: &[String]) -> (DedupOutcome, Vec<DocSketch>) {
        let mut d = Dedup::new(p, config).expect("valid config");
        let mut scratch = Scratch::default();
        for t in texts {
            let s = d.sketch(Document::Text(t), t.len(), &mut scratch);
            d.push(s);
        }
        (d.run(), d.docs.clone())
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
            let config = DedupConfig { method: Method::SimHash, hamming: k, ..DedupConfig::default() };
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
        /// threshold, and with one row per band (every shared value is a candidate) nothing
        /// true is missed.
        #[test]
        fn minhash_jaccard_pairs_are_exact(texts in corpus(), t in 1u32..10) {
            let threshold = f64::from(t) / 10.0;
            let p = pipeline();
            let config = DedupConfig { threshold, banding: Some((128, 1)), ..DedupConfig::default() };
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
            for pair in &out.pairs {
                prop_assert!(truth.contains(&(pair.a, pair.b)), "false pair {:?}", pair);
            }
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
                assert_eq!(out.kept[m as usize], m == c.keep);
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
            let config = DedupConfig { threshold: 0.7, keep, ..DedupConfig::default() };
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
    fn empty_documents_match_nothing() {
        let p = pipeline();
        let (out, _) = run(&p, DedupConfig::default(), &texts(&["", "  ", "...", ""]));
        assert!(out.clusters.is_empty());
        assert_eq!(out.kept, vec![true; 4]);
    }

    #[test]
    fn exact_duplicates_are_merged_before_search() {
        let p = pipeline();
        let t = "a b c d e f g h i j k l m n o p";
        let (out, _) = run(&p, DedupConfig::default(), &texts(&[t, t, t, "x y z w v u t s r q"]));
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
        let mut d = Dedup::new(&p, DedupConfig { threshold: 0.5, ..DedupConfig::default() })
            .expect("valid");
        let mut scratch = Scratch::default();
        for t in &old {
            let s = d.sketch(Document::Text(t), t.len(), &mut scratch);
            d.push(s);
        }
        d.save(&dir, &["a".into(), "b".into()]).expect("saved");

        let mut again = Dedup::new(&p, DedupConfig { threshold: 0.5, ..DedupConfig::default() })
            .expect("valid");
        let ids = again.load(&dir).expect("loaded");
        assert_eq!(ids, vec!["a", "b"]);
        assert_eq!(again.docs, d.docs);
        let new = texts(&[
            "the first stored page talks about rivers and mountains in the north!",
            "something never seen before about trains and stations and tickets",
        ]);
        for t in &new {
            let s = again.sketch(Document::Text(t), t.len(), &mut scratch);
            again.push(s);
        }
        let out = again.run();
        assert_eq!(out.kept, vec![true, true, false, true]);
        assert_eq!(out.clusters[0].keep, 0);

        // Another threshold chooses another banding: refused, naming the setting.
        let mut other = Dedup::new(&p, DedupConfig { threshold: 0.9, ..DedupConfig::default() })
            .expect("valid");
        let e = other.load(&dir).expect_err("mismatch").to_string();
        assert!(e.contains("banding"), "{e}");
        let q = Pipeline::new(PipelineSpec::default()).expect("valid");
        let mut other = Dedup::new(&q, DedupConfig { threshold: 0.5, ..DedupConfig::default() })
            .expect("valid");
        let e = other.load(&dir).expect_err("mismatch").to_string();
        assert!(e.contains("pipeline"), "{e}");

        // A damaged file is refused with a reason.
        let docs = dir.join("docs.bin");
        let mut bytes = fs::read(&docs).expect("read");
        let last = bytes.len() - 20;
        bytes[last] ^= 1;
        fs::write(&docs, &bytes).expect("write");
        let mut broken = Dedup::new(&p, DedupConfig { threshold: 0.5, ..DedupConfig::default() })
            .expect("valid");
        let e = broken.load(&dir).expect_err("corrupt").to_string();
        assert!(e.contains("checksum"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_configs_are_refused() {
        let p = pipeline();
        for config in [
            DedupConfig { threshold: 0.0, ..DedupConfig::default() },
            DedupConfig { threshold: 1.5, ..DedupConfig::default() },
            DedupConfig { method: Method::SimHash, hamming: 64, ..DedupConfig::default() },
            DedupConfig { method: Method::SimHash, hamming: 20, ..DedupConfig::default() },
            DedupConfig { method: Method::Both, hamming: 16, ..DedupConfig::default() },
            DedupConfig { banding: Some((20, 20)), ..DedupConfig::default() },
        ] {
            assert!(Dedup::new(&p, config).is_err());
        }
    }
}
