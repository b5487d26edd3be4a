//! The saved index: `manifest.json` (readable, checked on load) and `docs.bin` (the sketches).
//!
//! `docs.bin`: magic `NDUPDOCS`, format version u32, count u64, then per document its id (u32
//! length, UTF-8) and its [`DocSketch`] record, little-endian; an xxh3-64 of everything before
//! it closes the file. Each file is written to a temporary file beside it, synced and renamed,
//! so a crash or a failure leaves the previous index as it was and no temporary file behind.

use std::borrow::Borrow;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::sketch::Reader;
use super::sketch::{ByteSource, StreamReader};
use super::store::ReadScratch;
use super::{Dedup, DedupConfig, DedupError, DocSketch, Method, Plan, Verification};
use crate::{Pipeline, FORMAT_VERSION};

/// Version of the on-disk index layout. Version 2: 32-bit feature hashes, and the pipeline
/// format of neardup 0.2 (whitespace next to Han characters is ignored).
pub const INDEX_FORMAT_VERSION: u32 = 2;
const DOCS_MAGIC: &[u8; 8] = b"NDUPDOCS";

/// The readable part of a saved index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexManifest {
    /// Always `"neardup-index"`.
    pub format: String,
    /// [`INDEX_FORMAT_VERSION`].
    pub version: u32,
    /// The fingerprint format ([`FORMAT_VERSION`]) of the pipeline that built it.
    pub pipeline_format: u32,
    /// The pipeline id ([`crate::Pipeline::id`]).
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
    /// The similarity threshold of the run that wrote it (for reopening it as a live index).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// The Hamming distance of the run that wrote it.
    #[serde(default)]
    pub hamming: Option<u32>,
    /// Documents stored.
    pub documents: u64,
}

/// The manifest of an index of `documents` documents made by `pipeline` under `plan` and
/// `config`.
pub(crate) fn manifest_for(
    pipeline: &Pipeline,
    plan: &Plan,
    config: &DedupConfig,
    documents: u64,
) -> IndexManifest {
    IndexManifest {
        format: "neardup-index".into(),
        version: INDEX_FORMAT_VERSION,
        pipeline_format: FORMAT_VERSION,
        pipeline_id: pipeline.id().to_string(),
        spec: serde_json::to_value(pipeline.spec()).unwrap_or(serde_json::Value::Null),
        method: plan.method,
        verification: plan.verification,
        banding: plan.banding.map(|b| (b.bands(), b.rows())),
        bits: plan.bits,
        threshold: Some(config.threshold),
        hamming: Some(config.hamming),
        documents,
    }
}

/// Reads the manifest of the index in `dir` (its settings, to reopen it), refusing an older
/// format with "rebuild it".
pub fn read_manifest(dir: &Path) -> Result<IndexManifest, DedupError> {
    let manifest_path = dir.join("manifest.json");
    let text = fs::read_to_string(&manifest_path).map_err(io_err(&manifest_path))?;
    parse_manifest(dir, &manifest_path, &text)
}

fn parse_manifest(
    dir: &Path,
    manifest_path: &Path,
    text: &str,
) -> Result<IndexManifest, DedupError> {
    let corrupt =
        |message: String| DedupError::Corrupt { path: manifest_path.to_path_buf(), message };
    // The format and version first, so that an older layout gets "rebuild", not a parse
    // error about a field it did not have.
    let raw: serde_json::Value = serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
    if raw.get("format").and_then(|f| f.as_str()) != Some("neardup-index") {
        return Err(corrupt("no \"format\": \"neardup-index\"".into()));
    }
    let version = raw.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version != u64::from(INDEX_FORMAT_VERSION) {
        return Err(DedupError::OldFormat {
            path: dir.to_path_buf(),
            found: version,
            current: INDEX_FORMAT_VERSION,
        });
    }
    serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))
}

/// Writes `docs` (id and sketch, `manifest.documents` of them) and the manifest to `dir`
/// (created if needed), each file atomically.
pub(crate) fn write_index<'a, D: Borrow<DocSketch>>(
    dir: &Path,
    manifest: &IndexManifest,
    docs: impl Iterator<Item = Result<(&'a str, D), DedupError>>,
) -> Result<(), DedupError> {
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let docs_path = dir.join("docs.bin");
    write_atomically(&docs_path, |out| {
        let mut out = HashingWriter::new(out);
        write_docs(&mut out, manifest.documents, docs, &docs_path)?;
        let sum = out.hasher.digest();
        out.inner.write_all(&sum.to_le_bytes()).map_err(io_err(&docs_path))
    })?;
    let text = serde_json::to_string_pretty(manifest).expect("manifest serializes");
    let manifest_path = dir.join("manifest.json");
    write_atomically(&manifest_path, |out| {
        out.write_all(text.as_bytes()).map_err(io_err(&manifest_path))
    })
}

/// Reads the index in `dir` record by record (never the whole file at once), calling `each`
/// with each id and sketch, and refusing an index whose format or settings differ from
/// `expected`'s. Returns the number of documents.
pub(crate) fn read_index_with(
    dir: &Path,
    expected: &IndexManifest,
    each: impl FnMut(String, DocSketch) -> Result<(), DedupError>,
) -> Result<u64, DedupError> {
    let manifest = read_manifest(dir)?;
    let corrupt =
        |path: &Path, message: String| DedupError::Corrupt { path: path.to_path_buf(), message };
    let check = |field: &'static str, index: String, current: String| {
        if index == current {
            Ok(())
        } else {
            Err(DedupError::Mismatch { field, index, current })
        }
    };
    check("pipeline", manifest.pipeline_id.clone(), expected.pipeline_id.clone())?;
    check("method", manifest.method.name().into(), expected.method.name().into())?;
    check(
        "verification",
        manifest.verification.name().into(),
        expected.verification.name().into(),
    )?;
    let banding = |b: Option<(usize, usize)>| match b {
        Some((b, r)) => format!("{b} bands x {r} rows"),
        None => "no bands".into(),
    };
    check("banding", banding(manifest.banding), banding(expected.banding))?;
    check("SimHash width", format!("{} bits", manifest.bits), format!("{} bits", expected.bits))?;

    let docs_path = dir.join("docs.bin");
    let file = File::open(&docs_path).map_err(io_err(&docs_path))?;
    let len = file.metadata().map_err(io_err(&docs_path))?.len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let count = read_docs_stream(&mut reader, len, each).map_err(|e| e.into_dedup(&docs_path))?;
    if count != manifest.documents {
        return Err(corrupt(
            &docs_path,
            format!("{count} documents, the manifest says {}", manifest.documents),
        ));
    }
    Ok(count)
}

/// [`read_index_with`], collected.
pub(crate) fn read_index(
    dir: &Path,
    expected: &IndexManifest,
) -> Result<(Vec<DocSketch>, Vec<String>), DedupError> {
    let (mut docs, mut ids) = (Vec::new(), Vec::new());
    read_index_with(dir, expected, |id, doc| {
        ids.push(id);
        docs.push(doc);
        Ok(())
    })?;
    Ok((docs, ids))
}

impl<'p> Dedup<'p> {
    /// Writes every document with its id to `dir` (created if needed). Each file is written to a
    /// temporary file beside it, synced and renamed, so a crash or an error leaves the previous
    /// index intact and no temporary file behind.
    pub fn save(&mut self, dir: &Path, ids: &[String]) -> Result<(), DedupError> {
        assert_eq!(ids.len(), self.docs.len(), "one id per document");
        self.docs.finish_writing()?;
        let manifest =
            manifest_for(self.pipeline, &self.plan, &self.config, self.docs.len() as u64);
        let docs = &self.docs;
        let mut scratch = ReadScratch::default();
        let sketches = ids
            .iter()
            .enumerate()
            .map(move |(i, id)| docs.sketch(i, &mut scratch).map(|d| (id.as_str(), d)));
        write_index(dir, &manifest, sketches)
    }

    /// Loads a saved index as the documents already seen; returns their ids. Refuses an index
    /// made with another pipeline, method, verification, banding or width, or by a build with
    /// another index format (saying to rebuild it).
    pub fn load(&mut self, dir: &Path) -> Result<Vec<String>, DedupError> {
        assert!(self.docs.len() == 0, "load an index before adding documents");
        let expected = manifest_for(self.pipeline, &self.plan, &self.config, 0);
        let mut ids = Vec::new();
        let docs = &mut self.docs;
        let docs_path = dir.join("docs.bin");
        read_index_with(dir, &expected, |id, doc| {
            ids.push(id);
            docs.push(doc).map_err(|e| match e {
                // A record whose widths differ from the manifest's banding is damage.
                DedupError::InvalidConfig { message } => {
                    DedupError::Corrupt { path: docs_path.clone(), message }
                }
                other => other,
            })
        })?;
        self.seen = self.docs.len();
        Ok(ids)
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> DedupError {
    let path = path.to_path_buf();
    move |source| DedupError::Io { path, source }
}

/// Writes `path` through `write` into a temporary file in the same directory, syncs it and
/// renames it over `path`. On any error the temporary file is removed and `path` is untouched.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&File>) -> Result<(), DedupError>,
) -> Result<(), DedupError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io_err(path))?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, tmp.as_file());
        write(&mut out)?;
        out.flush().map_err(io_err(path))?;
    }
    tmp.as_file().sync_all().map_err(io_err(path))?;
    tmp.persist(path).map_err(|e| io_err(path)(e.error))?;
    Ok(())
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

/// `docs.bin` without its checksum: `count` documents.
fn write_docs<'a, W: Write, D: Borrow<DocSketch>>(
    out: &mut W,
    count: u64,
    docs: impl Iterator<Item = Result<(&'a str, D), DedupError>>,
    path: &Path,
) -> Result<(), DedupError> {
    let io = |e: io::Error| DedupError::Io { path: path.to_path_buf(), source: e };
    out.write_all(DOCS_MAGIC).map_err(io)?;
    out.write_all(&INDEX_FORMAT_VERSION.to_le_bytes()).map_err(io)?;
    out.write_all(&count.to_le_bytes()).map_err(io)?;
    let mut written = 0u64;
    for doc in docs {
        let (id, d) = doc?;
        out.write_all(&(id.len() as u32).to_le_bytes()).map_err(io)?;
        out.write_all(id.as_bytes()).map_err(io)?;
        d.borrow().write_to(out).map_err(io)?;
        written += 1;
    }
    if written != count {
        return Err(io(io::Error::other(format!(
            "{written} documents written, {count} announced"
        ))));
    }
    Ok(())
}

/// Why `docs.bin` could not be read: damage (with its byte offset), or the caller's error.
#[derive(Debug)]
pub(crate) enum DocsError {
    Corrupt(String),
    Caller(DedupError),
}

impl DocsError {
    fn into_dedup(self, path: &Path) -> DedupError {
        match self {
            DocsError::Corrupt(message) => {
                DedupError::Corrupt { path: path.to_path_buf(), message }
            }
            DocsError::Caller(e) => e,
        }
    }
}

impl From<String> for DocsError {
    fn from(message: String) -> DocsError {
        DocsError::Corrupt(message)
    }
}

/// The records of `docs.bin` after its magic, from any byte source: `each(id, sketch)`;
/// returns how many.
fn read_records<S: ByteSource>(
    r: &mut S,
    mut each: impl FnMut(String, DocSketch) -> Result<(), DedupError>,
) -> Result<u64, DocsError> {
    let version = r.u32()?;
    if version != INDEX_FORMAT_VERSION {
        return Err(
            format!("format version {version}, this build reads {INDEX_FORMAT_VERSION}").into()
        );
    }
    let count = r.u64()?;
    for _ in 0..count {
        let id_len = r.count(1)?;
        let at = r.pos();
        let id = String::from_utf8(r.take(id_len)?.to_vec())
            .map_err(|_| format!("invalid UTF-8 in an id at byte offset {at}"))?;
        let doc = DocSketch::read_from(r)?;
        each(id, doc).map_err(DocsError::Caller)?;
    }
    if r.remaining() != 0 {
        return Err(format!("{} unexpected bytes at offset {}", r.remaining(), r.pos()).into());
    }
    Ok(count)
}

/// Reads `docs.bin` (`len` bytes) from `input` as it streams, then checks its checksum.
fn read_docs_stream<R: Read>(
    input: &mut R,
    len: u64,
    each: impl FnMut(String, DocSketch) -> Result<(), DedupError>,
) -> Result<u64, DocsError> {
    if len < 28 {
        return Err("missing the docs.bin header".to_string().into());
    }
    let mut r = StreamReader::new(&mut *input, len - 8);
    if r.take(8)? != DOCS_MAGIC {
        return Err("missing the docs.bin header".to_string().into());
    }
    let count = read_records(&mut r, each)?;
    let digest = r.hasher.digest();
    let mut sum = [0u8; 8];
    input.read_exact(&mut sum).map_err(|e| format!("read error at the checksum: {e}"))?;
    if u64::from_le_bytes(sum) != digest {
        return Err("checksum mismatch (the file is truncated or damaged)".to_string().into());
    }
    Ok(count)
}

/// Reads what [`write_docs`] wrote, from memory; the error says what is wrong and at which byte
/// offset.
#[cfg(test)]
pub(crate) fn read_docs(bytes: &[u8]) -> Result<(Vec<DocSketch>, Vec<String>), String> {
    if bytes.len() < 28 || &bytes[..8] != DOCS_MAGIC {
        return Err("missing the docs.bin header".into());
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    let expected = u64::from_le_bytes(sum.try_into().expect("8 bytes"));
    if xxhash_rust::xxh3::xxh3_64(body) != expected {
        return Err("checksum mismatch (the file is truncated or damaged)".into());
    }
    let mut r = Reader { bytes: body, pos: 8 };
    let (mut docs, mut ids) = (Vec::new(), Vec::new());
    read_records(&mut r, |id, doc| {
        ids.push(id);
        docs.push(doc);
        Ok(())
    })
    .map_err(|e| match e {
        DocsError::Corrupt(m) => m,
        DocsError::Caller(e) => e.to_string(),
    })?;
    Ok((docs, ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{Dedup, DedupConfig, Document, Pipeline, PipelineSpec, Scratch};
    use proptest::prelude::*;

    /// A valid `docs.bin` of a few documents.
    fn valid_docs() -> Vec<u8> {
        let p = Pipeline::new(PipelineSpec::default()).expect("valid");
        let d = Dedup::new(&p, DedupConfig::default()).expect("valid");
        let mut scratch = Scratch::default();
        let texts = ["one two three four five six", "seven eight nine ten", ""];
        let mut sketches = Vec::new();
        for t in texts {
            let s = d.sketch(Document::Text(t), t.len(), &mut scratch);
            sketches.push(s);
        }
        let ids: Vec<String> = (0..texts.len()).map(|i| format!("\"d{i}\"")).collect();
        let mut out = Vec::new();
        let mut w = HashingWriter::new(&mut out);
        let docs = ids.iter().map(String::as_str).zip(&sketches).map(Ok);
        write_docs(&mut w, ids.len() as u64, docs, Path::new("docs.bin")).expect("write");
        let sum = w.hasher.digest();
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// The checksum recomputed, so that damage reaches the record parser.
    fn reseal(bytes: &mut [u8]) {
        if bytes.len() < 8 {
            return;
        }
        let n = bytes.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
        bytes[n..].copy_from_slice(&sum.to_le_bytes());
    }

    proptest! {
        // Fuzz target (PROPTEST_CASES sets the count; `bench/fuzz.sh` runs it long): damaged
        // index files are refused with a reason, never a panic or a huge allocation.
        #[test]
        fn index_reader_refuses_damage(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
            seal in any::<bool>(),
        ) {
            let mut bytes = valid_docs();
            for (at, b) in &edits {
                let i = at.index(bytes.len());
                bytes[i] = *b;
            }
            if truncate {
                bytes.truncate(cut.index(bytes.len()));
            }
            if seal {
                reseal(&mut bytes);
            }
            if let Err(message) = read_docs(&bytes) {
                prop_assert!(!message.is_empty());
            }
        }

        #[test]
        fn index_reader_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut bytes = bytes;
            if bytes.len() >= 12 {
                bytes[..8].copy_from_slice(DOCS_MAGIC);
                bytes[8..12].copy_from_slice(&INDEX_FORMAT_VERSION.to_le_bytes());
            }
            reseal(&mut bytes);
            let _ = read_docs(&bytes);
        }
    }

    #[test]
    fn a_valid_file_reads_back() {
        let (docs, ids) = read_docs(&valid_docs()).expect("valid");
        assert_eq!(ids, ["\"d0\"", "\"d1\"", "\"d2\""]);
        assert!(docs[2].empty && !docs[0].empty);
    }

    /// Regression: a failed `--save-index` left `docs.bin.tmp` behind.
    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("docs.bin");
        fs::write(&path, b"old").expect("write");
        let e = write_atomically(&path, |out| {
            out.write_all(b"partial").map_err(io_err(&path))?;
            Err(io_err(&path)(io::Error::other("disk full")))
        })
        .expect_err("fails");
        assert!(e.to_string().contains("docs.bin"), "{e}");
        assert_eq!(fs::read(&path).expect("read"), b"old");
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 1);
        write_atomically(&path, |out| out.write_all(b"new").map_err(io_err(&path)))
            .expect("writes");
        assert_eq!(fs::read(&path).expect("read"), b"new");
    }
}
