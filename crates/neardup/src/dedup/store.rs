//! The sketches of a run, column by column: a few fixed-width values per document in flat
//! vectors (length, emptiness, exact key, SimHash, band keys), and the variable-length
//! verification data (the sorted 32-bit feature hashes of Jaccard) either in one flat buffer
//! or spilled to an unnamed temporary file and read back, pair by pair, when candidates are
//! verified.
//!
//! Why columns: a `DocSketch` per document costs its struct (about 140 bytes) and two heap
//! allocations besides its data; flat columns cost the data and one offset. Why the spill:
//! the feature hashes are most of a sketch (about 660 bytes of a 1 KB English document, against
//! 128 bytes of band keys), yet only candidates' ends are ever read again, a few percent of the
//! documents. Spilled, memory per document is about 160 bytes (16 bands), so ten million
//! documents fit in 2 GB; the file is written sequentially (page cache) and read with
//! positioned reads (`pread`), which do not count towards the process's resident memory.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use neardup_sketch::SparseVector;

use super::sketch::DocRef;
use super::{DedupError, DocSketch, Method, Plan, Verification};

/// Bytes gathered before one write to the spill file.
const SPILL_BUFFER: usize = 4 << 20;

/// Where the feature hashes of a run live.
#[derive(Debug)]
enum Features {
    /// In memory: document `i` has `data[ends[i - 1]..ends[i]]`.
    Memory { data: Vec<u32> },
    /// In an unnamed temporary file: document `i` has the little-endian u32s at
    /// `4 * ends[i - 1]..4 * ends[i]`; `pending` holds what is not written yet.
    Spill { file: File, pending: Vec<u8>, written: u64, dir: PathBuf },
}

/// The columns of a run's sketches (see the module documentation).
#[derive(Debug)]
pub(crate) struct Columns {
    len: Vec<u64>,
    empty: Vec<bool>,
    exact: Vec<u128>,
    /// Kept when the method or the verification uses SimHash.
    simhash: Option<Vec<u128>>,
    /// `bands` keys per document (zeros for an empty document).
    keys: Vec<u64>,
    bands: usize,
    /// `signature_width` MinHash values per document (estimate verification).
    signatures: Vec<u32>,
    signature_width: usize,
    /// Weighted vectors (cosine verification).
    vectors: Option<Vec<SparseVector>>,
    /// Feature hashes (Jaccard verification); `ends` as in [`Features`].
    features: Option<Features>,
    ends: Vec<u64>,
}

/// Per-thread buffers for reading spilled documents.
#[derive(Debug, Default)]
pub(crate) struct ReadScratch {
    bytes: Vec<u8>,
    a: Vec<u32>,
    b: Vec<u32>,
}

impl Columns {
    /// Empty columns for what `plan` needs; feature hashes spill to `spill` when given.
    pub(crate) fn new(plan: &Plan, spill: Option<&Path>) -> Result<Columns, DedupError> {
        let needs_simhash =
            plan.method.uses_simhash() || plan.verification == Verification::Hamming;
        let needs_signature =
            plan.verification == Verification::Estimate && plan.method != Method::SimHash;
        let features = match (plan.verification, spill) {
            (Verification::Jaccard, None) => Some(Features::Memory { data: Vec::new() }),
            (Verification::Jaccard, Some(dir)) => {
                let file = tempfile::tempfile_in(dir)
                    .map_err(|source| DedupError::Spill { path: dir.to_path_buf(), source })?;
                Some(Features::Spill {
                    file,
                    pending: Vec::with_capacity(SPILL_BUFFER),
                    written: 0,
                    dir: dir.to_path_buf(),
                })
            }
            _ => None,
        };
        Ok(Columns {
            len: Vec::new(),
            empty: Vec::new(),
            exact: Vec::new(),
            simhash: needs_simhash.then(Vec::new),
            keys: Vec::new(),
            bands: plan.banding.map_or(0, |b| b.bands()),
            signatures: Vec::new(),
            signature_width: if needs_signature { plan.signature_width() } else { 0 },
            vectors: (plan.verification == Verification::Cosine).then(Vec::new),
            features,
            ends: Vec::new(),
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len.len()
    }

    /// Appends a document's sketch.
    pub(crate) fn push(&mut self, d: DocSketch) -> Result<(), DedupError> {
        let width = |what: &str, got: usize, want: usize| {
            if got == want || got == 0 {
                Ok(())
            } else {
                Err(DedupError::InvalidConfig {
                    message: format!("a sketch with {got} {what}, this run uses {want}"),
                })
            }
        };
        width("band keys", d.keys.len(), self.bands)?;
        width("signature values", d.signature.len(), self.signature_width)?;
        if let Some(features) = &mut self.features {
            let end = self.ends.last().copied().unwrap_or(0) + d.features.len() as u64;
            match features {
                Features::Memory { data } => data.extend_from_slice(&d.features),
                Features::Spill { file, pending, written, dir } => {
                    for h in d.features.iter() {
                        pending.extend_from_slice(&h.to_le_bytes());
                    }
                    if pending.len() >= SPILL_BUFFER {
                        flush(file, pending, written, dir)?;
                    }
                }
            }
            self.ends.push(end);
        }
        self.len.push(d.len);
        self.empty.push(d.empty);
        self.exact.push(d.exact);
        if let Some(s) = &mut self.simhash {
            s.push(d.simhash);
        }
        if d.keys.len() == self.bands {
            self.keys.extend_from_slice(&d.keys);
        } else {
            self.keys.extend(std::iter::repeat_n(0, self.bands));
        }
        if d.signature.len() == self.signature_width {
            self.signatures.extend_from_slice(&d.signature);
        } else {
            self.signatures.extend(std::iter::repeat_n(0, self.signature_width));
        }
        if let Some(v) = &mut self.vectors {
            v.push(d.vector);
        }
        Ok(())
    }

    /// Writes what is pending to the spill file, so that it can be read back.
    pub(crate) fn finish_writing(&mut self) -> Result<(), DedupError> {
        if let Some(Features::Spill { file, pending, written, dir }) = &mut self.features {
            flush(file, pending, written, dir)?;
        }
        Ok(())
    }

    pub(crate) fn doc_len(&self, i: usize) -> u64 {
        self.len[i]
    }

    pub(crate) fn is_empty_at(&self, i: usize) -> bool {
        self.empty[i]
    }

    pub(crate) fn exact(&self, i: usize) -> u128 {
        self.exact[i]
    }

    pub(crate) fn simhash(&self, i: usize) -> u128 {
        self.simhash.as_ref().map_or(0, |s| s[i])
    }

    pub(crate) fn bands(&self) -> usize {
        self.bands
    }

    /// The band keys of document `i`.
    pub(crate) fn keys(&self, i: usize) -> &[u64] {
        &self.keys[i * self.bands..(i + 1) * self.bands]
    }

    fn range(&self, i: usize) -> (u64, u64) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        (start, self.ends[i])
    }

    /// Reads document `i`'s feature hashes into `out` (spilled) or returns them in place.
    fn features<'s>(
        &'s self,
        i: usize,
        bytes: &mut Vec<u8>,
        out: &'s mut Vec<u32>,
    ) -> Result<&'s [u32], DedupError> {
        match &self.features {
            None => Ok(&[]),
            Some(Features::Memory { data }) => {
                let (s, e) = self.range(i);
                Ok(&data[s as usize..e as usize])
            }
            Some(Features::Spill { file, dir, .. }) => {
                let (s, e) = self.range(i);
                bytes.resize(4 * (e - s) as usize, 0);
                read_at(file, bytes, 4 * s)
                    .map_err(|source| DedupError::Spill { path: dir.clone(), source })?;
                out.clear();
                out.extend(
                    bytes
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes(c.try_into().expect("chunks of 4 bytes"))),
                );
                Ok(out)
            }
        }
    }

    fn doc_ref<'s>(&'s self, i: usize, features: &'s [u32]) -> DocRef<'s> {
        static NO_VECTOR: std::sync::OnceLock<SparseVector> = std::sync::OnceLock::new();
        let w = self.signature_width;
        DocRef {
            empty: self.empty[i],
            simhash: self.simhash(i),
            features,
            vector: match &self.vectors {
                Some(v) => &v[i],
                None => NO_VECTOR.get_or_init(SparseVector::default),
            },
            signature: &self.signatures[i * w..(i + 1) * w],
        }
    }

    /// Calls `f` with documents `a` and `b` (reading spilled features into `scratch`).
    pub(crate) fn with_pair<R>(
        &self,
        a: usize,
        b: usize,
        scratch: &mut ReadScratch,
        f: impl FnOnce(&DocRef<'_>, &DocRef<'_>) -> R,
    ) -> Result<R, DedupError> {
        let ReadScratch { bytes, a: fa, b: fb } = scratch;
        let fa = self.features(a, bytes, fa)?;
        let fb = self.features(b, bytes, fb)?;
        Ok(f(&self.doc_ref(a, fa), &self.doc_ref(b, fb)))
    }

    /// Document `i` as a `DocSketch` (for saving an index).
    pub(crate) fn sketch(
        &self,
        i: usize,
        scratch: &mut ReadScratch,
    ) -> Result<DocSketch, DedupError> {
        let ReadScratch { bytes, a, .. } = scratch;
        let features: Box<[u32]> = self.features(i, bytes, a)?.into();
        let w = self.signature_width;
        let empty = self.empty[i];
        Ok(DocSketch {
            len: self.len[i],
            empty,
            exact: self.exact[i],
            features,
            vector: self.vectors.as_ref().map(|v| v[i].clone()).unwrap_or_default(),
            // An empty document has no band keys or signature (zeros in the columns).
            signature: if empty {
                Box::default()
            } else {
                self.signatures[i * w..(i + 1) * w].into()
            },
            keys: if empty { Box::default() } else { self.keys(i).into() },
            simhash: self.simhash(i),
        })
    }
}

fn flush(
    file: &mut File,
    pending: &mut Vec<u8>,
    written: &mut u64,
    dir: &Path,
) -> Result<(), DedupError> {
    file.write_all(pending)
        .map_err(|source| DedupError::Spill { path: dir.to_path_buf(), source })?;
    *written += pending.len() as u64;
    pending.clear();
    Ok(())
}

/// Reads exactly `buf.len()` bytes at `offset`, without moving the file's position.
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
