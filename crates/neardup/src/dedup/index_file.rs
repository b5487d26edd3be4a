//! The saved index: `manifest.json` (readable, checked on load) and `docs.bin` (the sketches).
//!
//! `docs.bin`: magic `NDUPDOCS`, format version u32, count u64, then per document its id (u32
//! length, UTF-8) and its [`DocSketch`] record, little-endian; an xxh3-64 of everything before
//! it closes the file. Each file is written to a temporary file beside it, synced and renamed,
//! so a crash or a failure leaves the previous index as it was and no temporary file behind.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sketch::Reader;
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

/// Writes `docs` (id and sketch, `count` of them) and the manifest to `dir` (created if needed),
/// each file atomically.
pub(crate) fn write_index<'a>(
    dir: &Path,
    manifest: &IndexManifest,
    docs: impl Iterator<Item = (&'a str, &'a DocSketch)>,
) -> Result<(), DedupError> {
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    write_atomically(&dir.join("docs.bin"), |out| {
        let mut out = HashingWriter::new(out);
        write_docs(&mut out, manifest.documents, docs)?;
        let sum = out.hasher.digest();
        out.inner.write_all(&sum.to_le_bytes())
    })?;
    let text = serde_json::to_string_pretty(manifest).expect("manifest serializes");
    write_atomically(&dir.join("manifest.json"), |out| out.write_all(text.as_bytes()))
}

/// Reads the index in `dir`, refusing one whose format or settings differ from `expected`'s.
pub(crate) fn read_index(
    dir: &Path,
    expected: &IndexManifest,
) -> Result<(Vec<DocSketch>, Vec<String>), DedupError> {
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
    let mut bytes = Vec::new();
    File::open(&docs_path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(io_err(&docs_path))?;
    let (docs, ids) = read_docs(&bytes).map_err(|message| corrupt(&docs_path, message))?;
    if docs.len() as u64 != manifest.documents {
        return Err(corrupt(
            &docs_path,
            format!("{} documents, the manifest says {}", docs.len(), manifest.documents),
        ));
    }
    Ok((docs, ids))
}

impl<'p> Dedup<'p> {
    /// Writes every document with its id to `dir` (created if needed). Each file is written to a
    /// temporary file beside it, synced and renamed, so a crash or an error leaves the previous
    /// index intact and no temporary file behind.
    pub fn save(&self, dir: &Path, ids: &[String]) -> Result<(), DedupError> {
        assert_eq!(ids.len(), self.docs.len(), "one id per document");
        let manifest =
            manifest_for(self.pipeline, &self.plan, &self.config, self.docs.len() as u64);
        write_index(dir, &manifest, ids.iter().map(String::as_str).zip(&self.docs))
    }

    /// Loads a saved index as the documents already seen; returns their ids. Refuses an index
    /// made with another pipeline, method, verification, banding or width, or by a build with
    /// another index format (saying to rebuild it).
    pub fn load(&mut self, dir: &Path) -> Result<Vec<String>, DedupError> {
        assert!(self.docs.is_empty(), "load an index before adding documents");
        let (docs, ids) =
            read_index(dir, &manifest_for(self.pipeline, &self.plan, &self.config, 0))?;
        self.docs = docs;
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
    write: impl FnOnce(&mut BufWriter<&File>) -> io::Result<()>,
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
        write(&mut out).map_err(io_err(path))?;
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
fn write_docs<'a, W: Write>(
    out: &mut W,
    count: u64,
    docs: impl Iterator<Item = (&'a str, &'a DocSketch)>,
) -> io::Result<()> {
    out.write_all(DOCS_MAGIC)?;
    out.write_all(&INDEX_FORMAT_VERSION.to_le_bytes())?;
    out.write_all(&count.to_le_bytes())?;
    let mut written = 0u64;
    for (id, d) in docs {
        out.write_all(&(id.len() as u32).to_le_bytes())?;
        out.write_all(id.as_bytes())?;
        d.write_to(out)?;
        written += 1;
    }
    if written != count {
        return Err(io::Error::other(format!("{written} documents written, {count} announced")));
    }
    Ok(())
}

/// Reads what [`write_docs`] wrote; the error says what is wrong and at which byte offset.
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
    let version = r.u32()?;
    if version != INDEX_FORMAT_VERSION {
        return Err(format!("format version {version}, this build reads {INDEX_FORMAT_VERSION}"));
    }
    let count = r.u64()?;
    // Every record takes at least 57 bytes: a damaged count cannot reserve more than that.
    let cap = count.min((body.len() / 57) as u64) as usize;
    let mut docs = Vec::with_capacity(cap);
    let mut ids = Vec::with_capacity(cap);
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{Dedup, DedupConfig, Document, Pipeline, PipelineSpec, Scratch};
    use proptest::prelude::*;

    /// A valid `docs.bin` of a few documents.
    fn valid_docs() -> Vec<u8> {
        let p = Pipeline::new(PipelineSpec::default()).expect("valid");
        let mut d = Dedup::new(&p, DedupConfig::default()).expect("valid");
        let mut scratch = Scratch::default();
        let texts = ["one two three four five six", "seven eight nine ten", ""];
        for t in texts {
            let s = d.sketch(Document::Text(t), t.len(), &mut scratch);
            d.push(s);
        }
        let ids: Vec<String> = (0..texts.len()).map(|i| format!("\"d{i}\"")).collect();
        let mut out = Vec::new();
        let mut w = HashingWriter::new(&mut out);
        write_docs(&mut w, ids.len() as u64, ids.iter().map(String::as_str).zip(&d.docs))
            .expect("write");
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
            out.write_all(b"partial")?;
            Err(io::Error::other("disk full"))
        })
        .expect_err("fails");
        assert!(e.to_string().contains("docs.bin"), "{e}");
        assert_eq!(fs::read(&path).expect("read"), b"old");
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 1);
        write_atomically(&path, |out| out.write_all(b"new")).expect("writes");
        assert_eq!(fs::read(&path).expect("read"), b"new");
    }
}
