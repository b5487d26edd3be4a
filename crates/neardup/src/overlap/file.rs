//! The saved passage index: one file, written beside its final name and renamed into place.
//!
//! Layout of format 2 (integers little-endian):
//!
//! ```text
//! magic "neardup-passages" (16 bytes)   format u32   spec length u32   spec JSON
//! the texts, back to back
//! directory: documents u64, then each document's id length u32, id, text length u64, xxh3-64
//!   of its text
//! keys u64, keys [u32], offsets [u32; keys + 1], postings u64, postings [u32]
//! texts_at u64 (where the texts start)   directory_at u64 (where the directory starts)
//! xxh3-64 of every byte before it but the texts (u64)
//! ```
//!
//! The texts are kept because alignment and the report need them; the postings because
//! fingerprinting the collection again costs as much as building it. They come first and each
//! has its own checksum in the directory, so that a check reads only the directory and the keys
//! and fetches postings and texts by position ([`super::SavedIndex`]), while a full load reads
//! the file front to back. Format 1 (each id and text one after another, the whole file under
//! one checksum) is still read. A file of another format, or damaged (a checksum), is refused by
//! name.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::index::{csr, Doc, PassageIndex, Text};
use super::runs::SortedRuns;
use super::{option_name, IoStep, OverlapError, OverlapOptions, OverlapSpec};
use crate::IndexLock;

/// The format of saved passage indexes this version writes (it reads formats 1 and 2 too).
/// Format 3: the settings block holds the job ([`crate::JobSpec::passages`]), as a saved
/// index's manifest and a collection's settings do; format 2 held the passage settings alone.
pub const PASSAGE_INDEX_FORMAT: u32 = 3;
/// The file a passage index is saved as, inside its directory.
pub const PASSAGE_INDEX_FILE: &str = "passages.ndpi";
const MAGIC: &[u8; 16] = b"neardup-passages";

/// The name prefix of the temporary file a save writes before renaming it into place.
pub const TEMPORARY_PREFIX: &str = ".passages-";

/// Removes the temporary files of saves that never finished (a writer killed mid-save). Only
/// the holder of the directory's lock writes one, so under the lock every such file is stale.
/// A file that cannot be removed is left: it holds no index, only space.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let stale = name.to_str().is_some_and(|n| n.starts_with(TEMPORARY_PREFIX));
        if stale && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn io_err(path: &Path, step: IoStep) -> impl Fn(std::io::Error) -> OverlapError + '_ {
    move |source| OverlapError::Io { path: path.to_path_buf(), step, source }
}

impl PassageIndex {
    /// Saves the index as `passages.ndpi` in the directory of `lock` (the writer's lock on it,
    /// which the caller holds from before it read the index it adds to, so that two writers
    /// never lose each other's documents), replacing any earlier one in one step: a reader sees
    /// the old index or the new one, never a mix. Replaced documents are left out and the
    /// others numbered again from 0. What an earlier writer killed mid-save left behind (its
    /// temporary file) is removed.
    pub fn save(&self, lock: &IndexLock) -> Result<(), OverlapError> {
        self.save_with_ids(lock, str::to_string)
    }

    /// [`PassageIndex::save`] with every id written as `id_as` gives it (a live collection's
    /// plain ids as the JSON strings the command line reads).
    pub(crate) fn save_with_ids(
        &self,
        lock: &IndexLock,
        id_as: impl Fn(&str) -> String,
    ) -> Result<(), OverlapError> {
        let dir = lock.dir();
        remove_stale_temporaries(dir);
        let path = dir.join(PASSAGE_INDEX_FILE);
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMPORARY_PREFIX)
            .tempfile_in(dir)
            .map_err(io_err(dir, IoStep::Save))?;
        {
            let mut w = Hashing {
                inner: BufWriter::new(tmp.as_file_mut()),
                hash: Default::default(),
                hashing: true,
                at: 0,
            };
            self.write_to(&mut w, &id_as).map_err(io_err(&path, IoStep::Save))?;
            let digest = w.hash.digest();
            w.inner.write_all(&digest.to_le_bytes()).map_err(io_err(&path, IoStep::Save))?;
            w.inner.flush().map_err(io_err(&path, IoStep::Save))?;
        }
        tmp.as_file().sync_all().map_err(io_err(&path, IoStep::Save))?;
        tmp.persist(&path).map_err(|e| OverlapError::Io {
            path: path.clone(),
            step: IoStep::Save,
            source: e.error,
        })?;
        if let Ok(d) = fs::File::open(dir) {
            d.sync_all().map_err(io_err(dir, IoStep::Save))?;
        }
        Ok(())
    }

    fn write_to<W: Write>(
        &self,
        w: &mut Hashing<W>,
        id_as: impl Fn(&str) -> String,
    ) -> std::io::Result<()> {
        let spec = serde_json::to_vec(&crate::JobSpec::passages(self.spec.clone()))
            .map_err(std::io::Error::other)?;
        w.write_all(MAGIC)?;
        w.write_all(&PASSAGE_INDEX_FORMAT.to_le_bytes())?;
        w.write_all(&(spec.len() as u32).to_le_bytes())?;
        w.write_all(&spec)?;
        // Live documents, numbered again.
        let mut renumber = vec![u32::MAX; self.docs.len()];
        let mut live = 0u32;
        for (n, d) in self.docs.iter().enumerate() {
            if d.live {
                renumber[n] = live;
                live += 1;
            }
        }
        // The texts, each under its own checksum (in the directory) instead of the file's.
        let texts_at = w.at;
        w.hashing = false;
        let mut directory: Vec<(String, u64, u64)> = Vec::with_capacity(live as usize);
        for (n, d) in self.docs.iter().enumerate().filter(|(_, d)| d.live) {
            let text = self.text(n as u32);
            w.write_all(text.as_bytes())?;
            let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
            directory.push((id_as(&d.id), text.len() as u64, hash));
        }
        w.hashing = true;
        let directory_at = w.at;
        w.write_all(&u64::from(live).to_le_bytes())?;
        for (id, len, hash) in &directory {
            w.write_all(&(id.len() as u32).to_le_bytes())?;
            w.write_all(id.as_bytes())?;
            w.write_all(&len.to_le_bytes())?;
            w.write_all(&hash.to_le_bytes())?;
        }
        // Postings of live documents (replaced ones were dropped when they were replaced, but
        // a key may have been capped while it still counted them: keep what is there).
        // Postings added since the last rebuild are merged in first.
        let rebuilt;
        let (have_keys, have_offsets, have_postings) = if self.recent.is_empty() {
            (&self.keys[..], &self.offsets[..], &self.postings[..])
        } else {
            let mut pairs = self.live_pairs(0);
            pairs.sort_unstable();
            rebuilt = csr(&pairs, self.spec.max_postings as usize);
            (&rebuilt.0[..], &rebuilt.1[..], &rebuilt.2[..])
        };
        let mut keys = Vec::with_capacity(have_keys.len());
        let mut offsets = vec![0u32];
        let mut postings = Vec::with_capacity(have_postings.len());
        for (i, &k) in have_keys.iter().enumerate() {
            let range = have_offsets[i] as usize..have_offsets[i + 1] as usize;
            let before = postings.len();
            postings.extend(
                have_postings[range]
                    .iter()
                    .filter_map(|&d| Some(renumber[d as usize]).filter(|&n| n != u32::MAX)),
            );
            if postings.len() > before {
                keys.push(k);
                offsets.push(postings.len() as u32);
            }
        }
        w.write_all(&(keys.len() as u64).to_le_bytes())?;
        write_u32s(w, &keys)?;
        write_u32s(w, &offsets)?;
        w.write_all(&(postings.len() as u64).to_le_bytes())?;
        write_u32s(w, &postings)?;
        w.write_all(&texts_at.to_le_bytes())?;
        w.write_all(&directory_at.to_le_bytes())?;
        Ok(())
    }

    /// Loads the index saved in `dir`, with its saved settings and the `options` given applied
    /// over them: a check setting given changes, a fingerprint setting given must be the
    /// index's ([`OverlapError::Mismatch`] otherwise, naming the option). A check against a
    /// saved index needs no setting repeated (an index built with `seed_units` 5 is checked with
    /// 5).
    ///
    /// The file is read once, front to back, and its checksum checked at the end: the texts go
    /// straight into one arena (no copy per document), the postings into their arrays.
    pub fn load(dir: &Path, options: &OverlapOptions) -> Result<PassageIndex, OverlapError> {
        let (file, path) = open_file(dir)?;
        let len = file.metadata().map_err(io_err(&path, IoStep::Read))?.len();
        let bad = |message: String| OverlapError::Format { path: path.clone(), message };
        if len < 28 {
            return Err(bad("not a neardup passage index (too short)".into()));
        }
        let mut r = Stream {
            inner: std::io::BufReader::with_capacity(1 << 20, file),
            hash: Default::default(),
            hashing: true,
            at: 0,
            body: len - 8,
            path: &path,
        };
        if r.take(MAGIC.len())? != MAGIC {
            return Err(bad("not a neardup passage index".into()));
        }
        let format = r.u32()?;
        if !(1..=PASSAGE_INDEX_FORMAT).contains(&format) {
            return Err(bad(format!(
                "passage index format {format}; this neardup reads formats 1 to \
                 {PASSAGE_INDEX_FORMAT}: use the build that wrote it, or a newer one"
            )));
        }
        let spec = settings(&mut r, options, format)?;
        let mut docs = Vec::new();
        let mut by_id = FxHashMap::default();
        // Reserved, not touched: only the pages written count.
        let mut arena: Vec<u8> = Vec::with_capacity(len as usize);
        let mut add = |n: usize, id: String, start: usize, end: usize| {
            let id: std::sync::Arc<str> = id.into();
            if by_id.insert(id.clone(), n as u32).is_some() {
                return Err(bad(format!("id {id} is given to two documents")));
            }
            docs.push(Doc { id, text: Text::Arena { start, end }, live: true });
            Ok(())
        };
        let mut places = None;
        if format == 1 {
            let ndocs = r.u64()? as usize;
            for n in 0..ndocs {
                let id_len = r.u32()? as usize;
                let id = String::from_utf8(r.take(id_len)?)
                    .map_err(|_| bad(format!("damaged: the id of document {n} is not UTF-8")))?;
                let text_len = r.u64()? as usize;
                let start = arena.len();
                r.take_into(&mut arena, text_len)?;
                add(n, id, start, start + text_len)?;
            }
        } else {
            // The texts (under their own checksums), then the directory.
            let texts_at = r.at;
            let (_, directory_at) = trailer(&path, r.inner.get_ref(), len)?;
            if directory_at < texts_at || directory_at > r.body {
                return Err(bad("damaged: its directory is out of place".into()));
            }
            r.hashing = false;
            r.take_into(&mut arena, (directory_at - texts_at) as usize)?;
            r.hashing = true;
            let ndocs = r.u64()? as usize;
            let mut start = 0usize;
            for n in 0..ndocs {
                let (id, text_len, hash) = directory_entry(&mut r, n)?;
                let end = start
                    .checked_add(text_len as usize)
                    .filter(|&e| e <= arena.len())
                    .ok_or_else(|| bad("damaged: its directory does not fit its texts".into()))?;
                if xxhash_rust::xxh3::xxh3_64(&arena[start..end]) != hash {
                    return Err(bad(format!(
                        "damaged: the text of document {n} does not match its checksum"
                    )));
                }
                add(n, id, start, end)?;
                start = end;
            }
            if start != arena.len() {
                return Err(bad("damaged: its directory does not fit its texts".into()));
            }
            places = Some((texts_at, directory_at));
        }
        let nkeys = r.u64()? as usize;
        let keys = r.u32s(nkeys)?;
        let offsets = r.u32s(nkeys + 1)?;
        let npostings = r.u64()? as usize;
        let postings = r.u32s(npostings)?;
        if let Some(places) = places {
            if (r.u64()?, r.u64()?) != places {
                return Err(bad("damaged: its directory is out of place".into()));
            }
        }
        if r.at != r.body {
            return Err(bad("damaged: its records do not fill the file".into()));
        }
        let digest = r.hash.digest();
        let mut tail = [0u8; 8];
        std::io::Read::read_exact(&mut r.inner, &mut tail).map_err(io_err(&path, IoStep::Read))?;
        if digest != u64::from_le_bytes(tail) {
            return Err(bad(
                "damaged: its checksum does not match (truncated or overwritten)".into()
            ));
        }
        if offsets.first() != Some(&0)
            || offsets.last().map(|&o| o as usize) != Some(npostings)
            || offsets.windows(2).any(|w| w[0] > w[1])
            || keys.windows(2).any(|w| w[0] >= w[1])
            || postings.iter().any(|&d| d as usize >= docs.len())
        {
            return Err(bad("damaged: its postings are inconsistent".into()));
        }
        // The texts, checked at once; each starts on a character boundary.
        let arena = String::from_utf8(arena).map_err(|e| {
            bad(format!(
                "damaged: invalid UTF-8 in the texts at byte {}",
                e.utf8_error().valid_up_to()
            ))
        })?;
        if let Some(n) = docs.iter().position(|d| match d.text {
            Text::Arena { start, end } => {
                !arena.is_char_boundary(start) || !arena.is_char_boundary(end)
            }
            Text::Owned(_) => false,
        }) {
            return Err(bad(format!("damaged: the text of document {n} is not UTF-8")));
        }
        Ok(PassageIndex {
            spec,
            docs,
            by_id,
            key_directory: super::index::KeyDirectory::new(&keys),
            keys: keys.into(),
            offsets: offsets.into(),
            postings: postings.into(),
            arena: std::sync::Arc::new(arena),
            recent: FxHashMap::default(),
            recent_len: 0,
            stop: None,
            listed_dead: 0,
        })
    }
}

/// The saved file read front to back, hashing what it reads; every length is checked against
/// what is left of the file before anything is allocated for it.
pub(super) struct Stream<'a> {
    pub inner: std::io::BufReader<fs::File>,
    pub hash: xxhash_rust::xxh3::Xxh3Default,
    /// False while reading what has a checksum of its own (format 2's texts).
    pub hashing: bool,
    pub at: u64,
    /// Bytes before the checksum.
    pub body: u64,
    pub path: &'a Path,
}

impl Stream<'_> {
    fn check(&self, n: usize) -> Result<(), OverlapError> {
        if (n as u64) > self.body - self.at {
            return Err(OverlapError::Format {
                path: self.path.to_path_buf(),
                message: format!("damaged: ends inside a record at byte offset {}", self.at),
            });
        }
        Ok(())
    }

    pub(super) fn take_into(&mut self, out: &mut Vec<u8>, n: usize) -> Result<(), OverlapError> {
        self.check(n)?;
        let start = out.len();
        out.resize(start + n, 0);
        std::io::Read::read_exact(&mut self.inner, &mut out[start..])
            .map_err(io_err(self.path, IoStep::Read))?;
        if self.hashing {
            self.hash.update(&out[start..]);
        }
        self.at += n as u64;
        Ok(())
    }

    pub(super) fn take(&mut self, n: usize) -> Result<Vec<u8>, OverlapError> {
        let mut out = Vec::new();
        self.take_into(&mut out, n)?;
        Ok(out)
    }

    /// `N` bytes into an array: the lengths and counts, read without allocating.
    fn array<const N: usize>(&mut self) -> Result<[u8; N], OverlapError> {
        self.check(N)?;
        let mut out = [0u8; N];
        std::io::Read::read_exact(&mut self.inner, &mut out)
            .map_err(io_err(self.path, IoStep::Read))?;
        if self.hashing {
            self.hash.update(&out);
        }
        self.at += N as u64;
        Ok(out)
    }

    pub(super) fn u32(&mut self) -> Result<u32, OverlapError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64, OverlapError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Reads `n` u32s a block at a time (4 MiB: read past the buffer, without a copy), giving
    /// each block to `f` (hashed when the stream hashes, not kept) until it says false; returns
    /// whether every block was accepted.
    pub(super) fn each_u32s(
        &mut self,
        n: u64,
        f: &mut dyn FnMut(&[u32]) -> bool,
    ) -> Result<bool, OverlapError> {
        self.check(usize::try_from(n.saturating_mul(4)).unwrap_or(usize::MAX))?;
        let mut buf = Vec::with_capacity(1 << 22);
        let mut values: Vec<u32> = Vec::with_capacity(1 << 20);
        let mut left = n;
        while left > 0 {
            let chunk = left.min(1 << 20) as usize;
            buf.clear();
            self.take_into(&mut buf, chunk * 4)?;
            values.clear();
            values.extend(
                buf.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))),
            );
            if !f(&values) {
                return Ok(false);
            }
            left -= chunk as u64;
        }
        Ok(true)
    }

    /// Skips `n` bytes (each checked against what is left of the file), not hashed: what a
    /// caller checks apart.
    pub(super) fn skip(&mut self, n: u64) -> Result<(), OverlapError> {
        self.check(usize::try_from(n).unwrap_or(usize::MAX))?;
        std::io::Seek::seek_relative(&mut self.inner, n as i64)
            .map_err(io_err(self.path, IoStep::Read))?;
        self.at += n;
        Ok(())
    }

    pub(super) fn u32s(&mut self, n: usize) -> Result<Vec<u32>, OverlapError> {
        self.check(n.saturating_mul(4))?;
        let mut out = Vec::with_capacity(n);
        let mut buf = Vec::with_capacity(1 << 16);
        let mut left = n;
        while left > 0 {
            let chunk = left.min(1 << 14);
            buf.clear();
            self.take_into(&mut buf, chunk * 4)?;
            out.extend(
                buf.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))),
            );
            left -= chunk;
        }
        Ok(out)
    }
}

impl PassageIndex {
    /// Gives every document the id `f` makes of its own (a saved index's JSON ids read back as
    /// a live collection's plain ones). Refused, changing nothing, when two would share one.
    pub fn rename_ids(&mut self, f: impl Fn(&str) -> String) -> Result<(), OverlapError> {
        let mut by_id = FxHashMap::default();
        let mut ids = Vec::with_capacity(self.docs.len());
        for (n, d) in self.docs.iter().enumerate() {
            let id: std::sync::Arc<str> = f(&d.id).into();
            if d.live && by_id.insert(id.clone(), n as u32).is_some() {
                return Err(OverlapError::DuplicateId { id: id.to_string() });
            }
            ids.push(id);
        }
        for (d, id) in self.docs.iter_mut().zip(ids) {
            d.id = id;
        }
        self.by_id = by_id;
        Ok(())
    }
}

/// Fingerprints per block of the builder's pairs (64 MiB).
const PAIR_BLOCK: usize = 1 << 23;

/// Builds a saved passage index from documents given in batches, as a collection is read: each
/// batch's texts go to the file as they come and only their fingerprints stay in memory (8 bytes
/// a kept k-gram), so that indexing a library needs memory for its postings, not for its texts.
/// The file is the one [`PassageIndex::save`] writes for the same documents, written beside its
/// name and renamed into place by [`IndexBuilder::finish`] (dropped unfinished, it is removed).
pub struct IndexBuilder<'a> {
    spec: OverlapSpec,
    lock: &'a IndexLock,
    tmp: tempfile::NamedTempFile,
    w: Hashing<BufWriter<fs::File>>,
    texts_at: u64,
    /// Each document's id as saved, text length and checksum.
    directory: Vec<(Box<str>, u64, u64)>,
    ids: rustc_hash::FxHashSet<Box<str>>,
    /// `key << 32 | document` of every document's fingerprints: a block in memory, the others
    /// sorted in temporary files beside the index.
    runs: SortedRuns,
}

impl std::fmt::Debug for IndexBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexBuilder")
            .field("dir", &self.lock.dir())
            .field("documents", &self.directory.len())
            .field("fingerprints", &self.runs.len())
            .finish()
    }
}

impl<'a> IndexBuilder<'a> {
    /// Starts an index with these settings in the directory of `lock` (the writer's lock on it).
    pub fn new(spec: OverlapSpec, lock: &'a IndexLock) -> Result<IndexBuilder<'a>, OverlapError> {
        IndexBuilder::with_block(spec, lock, PAIR_BLOCK)
    }

    /// [`IndexBuilder::new`], fingerprints sorted into runs of `block` (tests spill small ones).
    pub(crate) fn with_block(
        spec: OverlapSpec,
        lock: &'a IndexLock,
        block: usize,
    ) -> Result<IndexBuilder<'a>, OverlapError> {
        spec.validate()?;
        let dir = lock.dir();
        remove_stale_temporaries(dir);
        let tmp = tempfile::Builder::new()
            .prefix(TEMPORARY_PREFIX)
            .tempfile_in(dir)
            .map_err(io_err(dir, IoStep::Save))?;
        let path = dir.join(PASSAGE_INDEX_FILE);
        let file = tmp.as_file().try_clone().map_err(io_err(&path, IoStep::Save))?;
        let mut w = Hashing {
            inner: BufWriter::with_capacity(1 << 20, file),
            hash: Default::default(),
            hashing: true,
            at: 0,
        };
        let head = serde_json::to_vec(&crate::JobSpec::passages(spec.clone()))
            .map_err(|e| OverlapError::InvalidSpec { field: "passages", message: e.to_string() })?;
        (|| -> std::io::Result<()> {
            w.write_all(MAGIC)?;
            w.write_all(&PASSAGE_INDEX_FORMAT.to_le_bytes())?;
            w.write_all(&(head.len() as u32).to_le_bytes())?;
            w.write_all(&head)
        })()
        .map_err(io_err(&path, IoStep::Save))?;
        let texts_at = w.at;
        w.hashing = false;
        Ok(IndexBuilder {
            spec,
            lock,
            tmp,
            w,
            texts_at,
            directory: Vec::new(),
            ids: Default::default(),
            runs: SortedRuns::new(dir, block),
        })
    }

    /// Documents in the index so far.
    pub fn len(&self) -> usize {
        self.directory.len()
    }

    /// True before the first document.
    pub fn is_empty(&self) -> bool {
        self.directory.is_empty()
    }

    /// The number of the document added with this id (as text: `7` and `"7"` are one id), if
    /// any: a walk over every document added, for saying where a repeated id was first given.
    pub fn position(&self, id: &str) -> Option<usize> {
        if !self.ids.contains(id) {
            return None;
        }
        self.directory.iter().position(|(saved, _, _)| crate::id_from_saved(saved) == id)
    }

    /// Adds a batch of documents `(id, saved id, text)`, fingerprinted on every core: `id` is
    /// the id as text (the one id rule), `saved` how the file keeps it (a saved index's ids are
    /// JSON text: [`super::WrittenIds`]). An id given before is
    /// [`OverlapError::DuplicateId`], and nothing of the batch is added.
    pub fn add(&mut self, docs: Vec<(String, String, String)>) -> Result<(), OverlapError> {
        use rayon::prelude::*;
        let mut batch = rustc_hash::FxHashSet::default();
        for (id, _, text) in &docs {
            if text.len() >= u32::MAX as usize {
                return Err(OverlapError::TooLong { id: id.clone(), bytes: text.len() });
            }
            if self.ids.contains(id.as_str()) || !batch.insert(id.as_str()) {
                return Err(OverlapError::DuplicateId { id: id.clone() });
            }
        }
        if self.directory.len() + docs.len() >= u32::MAX as usize {
            return Err(OverlapError::InvalidSpec {
                field: "documents",
                message: "a passage index holds fewer than 4,294,967,295 documents".into(),
            });
        }
        let keys: Vec<Vec<u32>> = docs
            .par_iter()
            .map(|(_, _, text)| super::parts::fingerprints(&self.spec, text))
            .collect::<Result<_, _>>()?;
        let path = self.lock.dir().join(PASSAGE_INDEX_FILE);
        for ((id, saved, text), keys) in docs.into_iter().zip(keys) {
            let n = self.directory.len() as u64;
            self.w.write_all(text.as_bytes()).map_err(io_err(&path, IoStep::Save))?;
            let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
            self.directory.push((saved.into_boxed_str(), text.len() as u64, hash));
            self.ids.insert(id.into_boxed_str());
            self.runs
                .extend(keys.into_iter().map(|k| (u64::from(k) << 32) | n))
                .map_err(io_err(&path, IoStep::Save))?;
        }
        Ok(())
    }

    /// Writes the directory and the postings and renames the file into place: a reader sees the
    /// old index or the new one, never a mix.
    pub fn finish(mut self) -> Result<(), OverlapError> {
        let dir = self.lock.dir().to_path_buf();
        let path = dir.join(PASSAGE_INDEX_FILE);
        let save = io_err(&path, IoStep::Save);
        self.ids = Default::default();
        self.runs.finish();
        let runs = &self.runs;
        let w = &mut self.w;
        w.hashing = true;
        let directory_at = w.at;
        (|| -> std::io::Result<()> {
            w.write_all(&(self.directory.len() as u64).to_le_bytes())?;
            for (id, len, hash) in &self.directory {
                w.write_all(&(id.len() as u32).to_le_bytes())?;
                w.write_all(id.as_bytes())?;
                w.write_all(&len.to_le_bytes())?;
                w.write_all(&hash.to_le_bytes())?;
            }
            // The postings as `csr` makes them (each key keeping its first `max_postings`
            // documents), from one pass over the sorted pairs (merged from the runs, never held
            // whole): the keys, the offsets and the postings each go to a temporary file as they
            // come, then into the index after the count of keys, which precedes them.
            let cap = self.spec.max_postings as usize;
            let parts = [(); 3].map(|_| tempfile::tempfile_in(&dir));
            let [keys, offsets, postings] = parts;
            let (keys, offsets, postings) = (keys?, offsets?, postings?);
            let mut outs = [&keys, &offsets, &postings].map(U32Writer::new);
            let (mut nkeys, mut at) = (0u64, 0u32);
            outs[1].put(0)?;
            runs.for_each_key(&mut |k, docs| {
                let kept = &docs[..docs.len().min(cap)];
                nkeys += 1;
                at += kept.len() as u32;
                outs[0].put(k)?;
                outs[1].put(at)?;
                kept.iter().try_for_each(|&d| outs[2].put(d))
            })?;
            for out in &mut outs {
                out.flush()?;
            }
            w.write_all(&nkeys.to_le_bytes())?;
            copy_from_start(&keys, w)?;
            copy_from_start(&offsets, w)?;
            w.write_all(&u64::from(at).to_le_bytes())?;
            copy_from_start(&postings, w)?;
            w.write_all(&self.texts_at.to_le_bytes())?;
            w.write_all(&directory_at.to_le_bytes())?;
            let digest = w.hash.digest();
            w.inner.write_all(&digest.to_le_bytes())?;
            w.inner.flush()
        })()
        .map_err(&save)?;
        self.tmp.as_file().sync_all().map_err(&save)?;
        self.tmp.persist(&path).map_err(|e| OverlapError::Io {
            path: path.clone(),
            step: IoStep::Save,
            source: e.error,
        })?;
        if let Ok(d) = fs::File::open(&dir) {
            d.sync_all().map_err(io_err(&dir, IoStep::Save))?;
        }
        Ok(())
    }
}

/// A saved index's settings block, with the options given applied: the fingerprint settings
/// must be the index's own ([`OverlapError::Mismatch`] naming the option), the others may change
/// from one check to the next.
pub(super) fn settings(
    r: &mut Stream<'_>,
    options: &OverlapOptions,
    format: u32,
) -> Result<OverlapSpec, OverlapError> {
    let spec_len = r.u32()? as usize;
    // A format this version reads whose settings do not parse was changed after it was written
    // (the checksum at the end would say so too, but is read last).
    let damaged = |what: String| OverlapError::Format {
        path: r.path.to_path_buf(),
        message: format!(
            "damaged: its settings block is unreadable ({what}); build the index again"
        ),
    };
    let block = r.take(spec_len)?;
    // Format 3 holds the job; formats 1 and 2 the passage settings alone.
    let saved: OverlapSpec = if format >= 3 {
        let job: crate::JobSpec =
            serde_json::from_slice(&block).map_err(|e| damaged(e.to_string()))?;
        job.passages.ok_or_else(|| damaged("its job keeps no passages".into()))?
    } else {
        serde_json::from_slice(&block).map_err(|e| damaged(e.to_string()))?
    };
    let spec = options.apply(saved.clone())?;
    for ((field, have), (_, want)) in saved.index_fields().into_iter().zip(spec.index_fields()) {
        if have != want {
            return Err(OverlapError::Mismatch {
                path: r.path.to_path_buf(),
                field: option_name(field),
                index: have,
                asked: want,
            });
        }
    }
    Ok(spec)
}

/// Format 2's `(texts_at, directory_at)`, read from the end of the file (before its checksum).
pub(super) fn trailer(path: &Path, file: &fs::File, len: u64) -> Result<(u64, u64), OverlapError> {
    let mut buf = [0u8; 16];
    if len < 16 + 8 {
        return Err(OverlapError::Format {
            path: path.to_path_buf(),
            message: "damaged: too short".into(),
        });
    }
    read_at(file, &mut buf, len - 24).map_err(io_err(path, IoStep::Read))?;
    let word = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
    Ok((word(0), word(8)))
}

/// One entry of format 2's directory: the id, the text's length and checksum.
pub(super) fn directory_entry(
    r: &mut Stream<'_>,
    n: usize,
) -> Result<(String, u64, u64), OverlapError> {
    let id_len = r.u32()? as usize;
    let id = String::from_utf8(r.take(id_len)?).map_err(|_| OverlapError::Format {
        path: r.path.to_path_buf(),
        message: format!("damaged: the id of document {n} is not UTF-8"),
    })?;
    Ok((id, r.u64()?, r.u64()?))
}

/// Reads `buf.len()` bytes at `offset` without moving any cursor (a check's reads of postings
/// and texts, from many threads at once).
/// The xxh3 of the bytes of `ranges` of `file`, one after another, read by position in blocks of
/// 8 MiB: a saved index's checksum, computed beside the reading of what it covers.
pub(super) fn hash_ranges(file: &fs::File, ranges: &[(u64, u64)]) -> std::io::Result<u64> {
    let mut hash = xxhash_rust::xxh3::Xxh3Default::new();
    let mut buf = vec![0u8; 1 << 23];
    for &(start, end) in ranges {
        let mut at = start;
        while at < end {
            let n = ((end - at) as usize).min(buf.len());
            read_at(file, &mut buf[..n], at)?;
            hash.update(&buf[..n]);
            at += n as u64;
        }
    }
    Ok(hash.digest())
}

pub(super) fn read_at(file: &fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                file,
                &mut buf[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}

/// Little-endian u32s written through a buffer.
struct U32Writer<'f> {
    w: BufWriter<&'f fs::File>,
}

impl<'f> U32Writer<'f> {
    fn new(file: &'f fs::File) -> U32Writer<'f> {
        U32Writer { w: BufWriter::with_capacity(1 << 20, file) }
    }

    fn put(&mut self, v: u32) -> std::io::Result<()> {
        self.w.write_all(&v.to_le_bytes())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Copies all of `file` (written through a handle of its own) to `w`.
fn copy_from_start(file: &fs::File, w: &mut impl Write) -> std::io::Result<()> {
    use std::io::Seek;
    let mut r = std::io::BufReader::with_capacity(1 << 20, file);
    r.seek(std::io::SeekFrom::Start(0))?;
    std::io::copy(&mut r, w)?;
    Ok(())
}

fn write_u32s(w: &mut impl Write, values: &[u32]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(values.len().min(1 << 16) * 4);
    for chunk in values.chunks(1 << 16) {
        buf.clear();
        for v in chunk {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    Ok(())
}

/// A writer that hashes what passes through it (while `hashing`) and counts every byte.
struct Hashing<W: Write> {
    inner: W,
    hash: xxhash_rust::xxh3::Xxh3Default,
    hashing: bool,
    at: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        if self.hashing {
            self.hash.update(&buf[..n]);
        }
        self.at += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The index file of `dir`, opened for reading, and its path. A directory without one is refused
/// by what it is (an index of `neardup dedup`, a directory without an index, none at all).
pub(super) fn open_file(dir: &Path) -> Result<(fs::File, PathBuf), OverlapError> {
    let path = dir.join(PASSAGE_INDEX_FILE);
    match fs::File::open(&path) {
        Ok(f) => Ok((f, path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let what = if dir.join("manifest.json").exists() {
                "is an index of `neardup dedup`, not a passage index"
            } else if dir.is_dir() {
                "holds no passage index"
            } else {
                "does not exist"
            };
            Err(OverlapError::Format {
                path: dir.to_path_buf(),
                message: format!(
                    "{what} ({PASSAGE_INDEX_FILE}): make one with `neardup overlap ... \
                     --save-index {}`",
                    dir.display()
                ),
            })
        }
        Err(e) => Err(io_err(&path, IoStep::Read)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlap::index::OnExistingId;

    fn index() -> PassageIndex {
        let mut index = PassageIndex::new(OverlapSpec::default()).expect("test setup");
        index
            .add_documents(
                vec![
                    ("a".into(), "一二三四五六七八九十百千万亿兆京垓秭穰沟涧正载极".into()),
                    (
                        "b".into(),
                        "the quick brown fox jumps over the lazy dog again and again".into(),
                    ),
                ],
                OnExistingId::Refuse,
            )
            .expect("test setup");
        index
    }

    /// Built in batches as a collection is read, the file is the one the index saves, byte for
    /// byte; an id given twice is refused.
    #[test]
    fn a_built_index_is_the_saved_one() {
        let (a, b) = (tempfile::tempdir().expect("dir"), tempfile::tempdir().expect("dir"));
        let docs: Vec<(String, String)> = (0..40)
            .map(|i| {
                let text =
                    (0..30 + i).map(|w| format!("w{}", (w * 7 + i) % 50)).collect::<Vec<_>>();
                (format!("d{i}"), text.join(" "))
            })
            .collect();
        let spec = OverlapSpec { max_postings: 3, ..OverlapSpec::default() };
        let mut index = PassageIndex::new(spec.clone()).expect("index");
        index.add_documents(docs.clone(), OnExistingId::Refuse).expect("add");
        index.save(&crate::IndexLock::acquire(a.path()).expect("lock")).expect("save");
        let lock = crate::IndexLock::acquire(b.path()).expect("lock");
        let mut built = IndexBuilder::new(spec, &lock).expect("builder");
        for chunk in docs.chunks(7) {
            built
                .add(chunk.iter().map(|(i, t)| (i.clone(), i.clone(), t.clone())).collect())
                .expect("add");
        }
        let again = vec![("d3".to_string(), "d3".to_string(), "x y z".to_string())];
        assert!(matches!(built.add(again), Err(OverlapError::DuplicateId { .. })));
        built.finish().expect("finish");
        let read =
            |d: &tempfile::TempDir| fs::read(d.path().join(PASSAGE_INDEX_FILE)).expect("read");
        assert_eq!(read(&b), read(&a));
    }

    #[test]
    fn a_saved_index_loads_as_it_was_and_damage_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("test setup");
        let mut index = index();
        index.save(&crate::IndexLock::acquire(dir.path()).expect("lock")).expect("test setup");
        index.merge_postings();
        let back = PassageIndex::load(dir.path(), &OverlapOptions::default()).expect("test setup");
        assert_eq!(
            (back.keys.clone(), back.postings.clone()),
            (index.keys.clone(), index.postings.clone())
        );
        assert_eq!(back.id(1), "b");

        let path = dir.path().join(PASSAGE_INDEX_FILE);
        let mut bytes = fs::read(&path).expect("test setup");
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        fs::write(&path, &bytes).expect("test setup");
        let e = PassageIndex::load(dir.path(), &OverlapOptions::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("damaged"), "{e}");

        let cut = &bytes[..bytes.len() - 20];
        fs::write(&path, cut).expect("test setup");
        let e = PassageIndex::load(dir.path(), &OverlapOptions::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("damaged"), "{e}");

        // Regression (sweep 3): a changed byte in the settings was "unknown field `windo7`".
        let mut settings = fs::read(&path).expect("test setup");
        let at = settings.windows(6).position(|w| w == b"window").expect("settings");
        settings[at + 5] = b'7';
        fs::write(&path, &settings).expect("test setup");
        let e = PassageIndex::load(dir.path(), &OverlapOptions::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("damaged: its settings block is unreadable"), "{e}");

        bytes[16] = 9;
        fs::write(&path, &bytes).expect("test setup");
        let e = PassageIndex::load(dir.path(), &OverlapOptions::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("format 9"), "{e}");

        let e = PassageIndex::load(&dir.path().join("none"), &OverlapOptions::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn a_save_removes_what_a_killed_save_left_and_keeps_other_files() {
        let dir = tempfile::tempdir().expect("test setup");
        // A writer killed mid-save leaves its temporary file (SIGKILL runs no destructor).
        let stale = dir.path().join(".passages-Xk2f9a");
        fs::write(&stale, vec![0u8; 4096]).expect("test setup");
        fs::write(dir.path().join("notes.txt"), "mine").expect("test setup");
        index().save(&crate::IndexLock::acquire(dir.path()).expect("lock")).expect("save");
        assert!(!stale.exists(), "the stale temporary file is removed");
        assert!(dir.path().join("notes.txt").exists());
        assert_eq!(
            PassageIndex::load(dir.path(), &OverlapOptions::default()).expect("load").len(),
            2
        );
    }

    #[test]
    fn an_io_error_says_what_failed_not_only_the_path() {
        let e = OverlapError::Io {
            path: "/full/passages.ndpi".into(),
            step: IoStep::Save,
            source: std::io::Error::from_raw_os_error(28),
        };
        assert_eq!(
            e.to_string(),
            "saving the passage index to /full/passages.ndpi: No space left on device: free \
             some space there, or save the index in another directory"
        );
        let e = OverlapError::Io {
            path: "/ro".into(),
            step: IoStep::Save,
            source: std::io::Error::from_raw_os_error(30),
        };
        assert_eq!(
            e.to_string(),
            "saving the passage index to /ro: Read-only file system: save the index in a \
             directory you may write to"
        );
    }

    #[test]
    fn a_check_with_other_fingerprint_settings_is_refused() {
        let dir = tempfile::tempdir().expect("test setup");
        let built = OverlapSpec { seed: 5, min_units: 20, ..OverlapSpec::default() };
        let mut ix = PassageIndex::new(built).expect("test setup");
        ix.add_documents(vec![("a".into(), "x y z w v".into())], OnExistingId::Refuse)
            .expect("test setup");
        ix.save(&crate::IndexLock::acquire(dir.path()).expect("lock")).expect("test setup");
        let asked = OverlapOptions { seed_units: Some(3), ..OverlapOptions::default() };
        let e = PassageIndex::load(dir.path(), &asked).expect_err("refused");
        assert!(
            matches!(&e, OverlapError::Mismatch { field: "seed_units", index, asked, .. }
                if index == "5" && asked == "3"),
            "{e}"
        );
        assert!(e.to_string().contains("built with seed_units 5"), "{e}");
        // Regression: nothing given, the index's own settings (it was refused unless every
        // fingerprint setting was repeated); check settings may change.
        let loaded = PassageIndex::load(dir.path(), &OverlapOptions::default()).expect("loads");
        assert_eq!((loaded.spec().seed, loaded.spec().min_units), (5, 20));
        let asked = OverlapOptions { min_units: Some(30), ..OverlapOptions::default() };
        let loaded = PassageIndex::load(dir.path(), &asked).expect("loads");
        assert_eq!((loaded.spec().seed, loaded.spec().min_units), (5, 30));
    }
}
