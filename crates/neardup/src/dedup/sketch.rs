//! `DocSketch`: what dedup and the live engine keep of one document, how it is made from a
//! document, its byte layout, and the exact check of a candidate pair.
//!
//! Byte layout (little-endian; the record of `docs.bin` and of the service's store, after the
//! id), version 2 of the index and store formats:
//!
//! ```text
//! len u64 | empty u8 | exact u128 | simhash u128
//! | n u32 | n x feature u32         sorted distinct 32-bit feature hashes (Jaccard)
//! | n u32 | n x (hash u64, w f64)   weighted vector (cosine)
//! | n u32 | n x value u32           MinHash signature (estimate verification)
//! | n u32 | n x key u64             LSH band keys (MinHash method)
//! ```
//!
//! Version 1 kept 64-bit feature hashes. 32 bits halve the memory and bytes of verification
//! data; a collision between two different features of two documents happens with probability
//! about `|A| |B| / 2^32` (1e-5 for two documents of 200 features), and moves their Jaccard
//! by at most one feature in `|A ∪ B|`. BENCHMARKS.md measures the difference on real text.

use std::io::{self, Write};

use neardup_sketch::{cosine, jaccard_sorted, SparseVector};

use super::{Method, Plan, Verification};
use crate::{Document, Pipeline, Scratch};

/// What dedup keeps of one document: only the parts its method and verification need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocSketch {
    /// Bytes of text (for `--keep longest|shortest`).
    pub len: u64,
    /// True when the document has no features: it is a near-duplicate of nothing.
    pub empty: bool,
    /// A 128-bit hash of the feature set (or weighted vector): equal means exact duplicates.
    pub(crate) exact: u128,
    /// Sorted distinct 32-bit feature hashes (Jaccard verification).
    pub(crate) features: Box<[u32]>,
    /// Weighted feature vector (cosine verification).
    pub(crate) vector: SparseVector,
    /// MinHash signature (estimate verification with MinHash).
    pub(crate) signature: Box<[u32]>,
    /// LSH band keys (MinHash method).
    pub(crate) keys: Box<[u64]>,
    /// SimHash (SimHash method or Hamming verification).
    pub(crate) simhash: u128,
}

/// The parts of a sketch that verification reads, borrowed (from a `DocSketch`, or from the
/// columns of a run).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DocRef<'a> {
    pub(crate) empty: bool,
    pub(crate) simhash: u128,
    pub(crate) features: &'a [u32],
    pub(crate) vector: &'a SparseVector,
    pub(crate) signature: &'a [u32],
}

impl DocSketch {
    /// The parts verification reads.
    pub(crate) fn view(&self) -> DocRef<'_> {
        DocRef {
            empty: self.empty,
            simhash: self.simhash,
            features: &self.features,
            vector: &self.vector,
            signature: &self.signature,
        }
    }

    /// The LSH band keys (MinHash method).
    pub fn band_keys(&self) -> &[u64] {
        &self.keys
    }

    /// The SimHash value (SimHash method or Hamming verification; 0 otherwise).
    pub fn simhash_value(&self) -> u128 {
        self.simhash
    }

    /// The sorted distinct 32-bit feature hashes kept for Jaccard verification (empty under
    /// other verifications).
    pub fn feature_hashes(&self) -> &[u32] {
        &self.features
    }

    /// The 128-bit key of the feature set: two documents with the same key are exact
    /// duplicates (the same features, or for weighted measures the same weighted vector).
    pub fn exact_key(&self) -> u128 {
        self.exact
    }

    /// The sketch as bytes (the record layout of `docs.bin`, without the id), for stores.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            64 + 4 * (self.features.len() + self.signature.len()) + 8 * self.keys.len(),
        );
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

    pub(crate) fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
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

    pub(crate) fn read_from<S: ByteSource>(r: &mut S) -> Result<DocSketch, String> {
        let len = r.u64()?;
        let empty = r.take(1)?[0] != 0;
        let exact = r.u128()?;
        let simhash = r.u128()?;
        let n = r.count(4)?;
        let features = (0..n).map(|_| r.u32()).collect::<Result<Box<[u32]>, _>>()?;
        if !features.windows(2).all(|w| w[0] < w[1]) {
            return Err(format!("feature hashes out of order before byte offset {}", r.pos()));
        }
        let n = r.count(16)?;
        let vector = SparseVector::from_entries(
            (0..n)
                .map(|_| Ok((r.u64()?, f64::from_bits(r.u64()?))))
                .collect::<Result<Vec<(u64, f64)>, String>>()?,
        );
        let n = r.count(4)?;
        let signature = (0..n).map(|_| r.u32()).collect::<Result<Box<[u32]>, _>>()?;
        let n = r.count(8)?;
        let keys = (0..n).map(|_| r.u64()).collect::<Result<Box<[u64]>, _>>()?;
        Ok(DocSketch { len, empty, exact, features, vector, signature, keys, simhash })
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
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    if weighted {
        for (h, w) in vector.entries() {
            hasher.update(&h.to_le_bytes());
            hasher.update(&w.to_bits().to_le_bytes());
        }
    } else {
        for h in &distinct {
            hasher.update(&h.to_le_bytes());
        }
    }
    let exact = hasher.digest128();
    let (signature, keys) = match plan.method {
        Method::MinHash | Method::Both if !empty => {
            let values = plan.minhash_values(pipeline.minhasher().num_perm());
            let sig = pipeline.minhasher().sketch_hashes_prefix(&distinct, values);
            let keys =
                plan.banding.map(|b| b.keys(sig.values())).unwrap_or_default().into_boxed_slice();
            let keep_sig = plan.verification == Verification::Estimate;
            (if keep_sig { sig.values().into() } else { Box::default() }, keys)
        }
        _ => (Box::default(), Box::default()),
    };
    let features = if plan.verification == Verification::Jaccard {
        // The high half of each 64-bit hash (xxh3's bits are uniform throughout).
        let mut short: Vec<u32> = distinct.iter().map(|&h| (h >> 32) as u32).collect();
        short.sort_unstable();
        short.dedup();
        short.into_boxed_slice()
    } else {
        Box::default()
    };
    let vector =
        if plan.verification == Verification::Cosine { vector } else { SparseVector::default() };
    DocSketch { len: len as u64, empty, exact, features, vector, signature, keys, simhash }
}

/// The similarity of two documents under `plan`'s verification measure, whatever the
/// threshold: Jaccard of the feature sets, cosine of the weighted vectors, `1 - d / bits` for
/// a SimHash Hamming distance `d`, or the MinHash estimate. Empty documents score 0.
pub(crate) fn measure(plan: &Plan, da: &DocRef<'_>, db: &DocRef<'_>) -> f64 {
    if da.empty || db.empty {
        return 0.0;
    }
    let hamming_similarity = || {
        let d = (da.simhash ^ db.simhash).count_ones();
        1.0 - f64::from(d) / f64::from(plan.bits)
    };
    match plan.verification {
        Verification::Jaccard => jaccard_sorted(da.features, db.features),
        Verification::Cosine => cosine(da.vector, db.vector),
        Verification::Hamming => hamming_similarity(),
        Verification::Estimate => match plan.method {
            Method::SimHash => hamming_similarity(),
            Method::MinHash | Method::Both => {
                let equal =
                    da.signature.iter().zip(db.signature.iter()).filter(|(x, y)| x == y).count();
                equal as f64 / da.signature.len().max(1) as f64
            }
        },
    }
}

/// The similarity of two documents if they pass `plan`'s verification at `threshold` (or
/// within `hamming` bits). Empty documents match nothing.
pub(crate) fn verify(
    plan: &Plan,
    threshold: f64,
    hamming: u32,
    da: &DocRef<'_>,
    db: &DocRef<'_>,
) -> Option<f64> {
    if da.empty || db.empty {
        return None;
    }
    let within_hamming = || (da.simhash ^ db.simhash).count_ones() <= hamming;
    // Guard against the rounding of a similarity that equals the threshold exactly
    // (4/5 computed as 0.7999999999999999).
    let passes = |s: f64| s >= threshold - 1e-12;
    let s = measure(plan, da, db);
    if plan.verifies_by_bits() {
        within_hamming().then_some(s)
    } else {
        passes(s).then_some(s)
    }
}

/// Little-endian bytes read in order, whose errors say at which byte offset they happened.
pub(crate) trait ByteSource {
    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Result<&[u8], String>;
    /// Bytes read so far.
    fn pos(&self) -> u64;
    /// Bytes left.
    fn remaining(&self) -> u64;

    /// A u32 count of items of `size` bytes each, refused when they cannot fit in what is
    /// left (so a damaged count never allocates more than the input holds).
    fn count(&mut self, size: usize) -> Result<usize, String> {
        let at = self.pos();
        let n = self.u32()? as usize;
        if (n as u64).saturating_mul(size as u64) > self.remaining() {
            return Err(format!("a count of {n} at byte offset {at} runs past the end"));
        }
        Ok(n)
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

/// A cursor over bytes in memory.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl ByteSource for Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte offset {}", self.pos))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn pos(&self) -> u64 {
        self.pos as u64
    }

    fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }
}

/// A cursor over a stream of `len` bytes (a file read without holding it), hashing what it
/// reads (xxh3-64) for a trailing checksum.
pub(crate) struct StreamReader<R> {
    inner: R,
    pos: u64,
    len: u64,
    buf: Vec<u8>,
    pub(crate) hasher: xxhash_rust::xxh3::Xxh3,
}

impl<R: io::Read> StreamReader<R> {
    pub(crate) fn new(inner: R, len: u64) -> StreamReader<R> {
        StreamReader { inner, pos: 0, len, buf: Vec::new(), hasher: xxhash_rust::xxh3::Xxh3::new() }
    }
}

impl<R> std::fmt::Debug for StreamReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamReader").field("pos", &self.pos).field("len", &self.len).finish()
    }
}

impl<R: io::Read> ByteSource for StreamReader<R> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if n as u64 > self.len - self.pos {
            return Err(format!("truncated at byte offset {}", self.pos));
        }
        self.buf.resize(n, 0);
        self.inner
            .read_exact(&mut self.buf)
            .map_err(|e| format!("read error at byte offset {}: {e}", self.pos))?;
        self.hasher.update(&self.buf);
        self.pos += n as u64;
        Ok(&self.buf)
    }

    fn pos(&self) -> u64 {
        self.pos
    }

    fn remaining(&self) -> u64 {
        self.len - self.pos
    }
}
