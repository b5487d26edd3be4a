//! The saved index: `manifest.json` (readable, checked on load) and the sketches in a docs file.
//!
//! Docs file: magic `NDUPDOCS`, format version u32, count u64, then per document its id (u32
//! length, UTF-8) and its [`DocSketch`] record, little-endian; an xxh3-64 of everything before
//! it closes the file.
//!
//! **One commit point.** Since format 3 the manifest names its docs file (`docs-<generation>.bin`,
//! a new name at every save), so a save is: write the new docs file beside the old one (to a
//! temporary name, synced, renamed), then rename a new `manifest.json` over the old one (synced,
//! and the directory synced). Until that rename the old manifest names the old docs file, which
//! is still there: a crash or an I/O error at any step leaves the previous index whole, and after
//! it the new one is whole. Docs files no manifest names are removed after the commit (and by the
//! next save, if a crash came first). Format 2 indexes (`docs.bin`, named by no manifest) are
//! still read, and replaced by format 3 at their next save.
//!
//! **One writer.** A save takes an exclusive lock on the file `lock` in the directory
//! ([`IndexLock`]); a run that loads, adds and saves holds it throughout, so concurrent runs on
//! one directory take turns instead of losing each other's documents. Readers take no lock: they
//! read the manifest, open the docs file it names, and read the manifest again if a writer
//! removed that file in between.

use std::borrow::Borrow;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::sketch::Reader;
use super::sketch::{ByteSource, StreamReader};
use super::store::ReadScratch;
use super::{Dedup, DedupError, DocSketch, Method, Plan, SearchConfig, Verification};
use crate::{JobSpec, Pipeline, FORMAT_VERSION};

/// Version of the on-disk index layout. Version 2: 32-bit feature hashes, and the pipeline
/// format of neardup 0.2 (whitespace next to Han characters is ignored). Version 3: the manifest
/// names its docs file (one atomic commit per save); the docs file's layout is version 2's.
/// Version 4: the manifest holds the job ([`JobSpec`], resolved) instead of its settings one by
/// one; versions 2 and 3 are read into it ([`ManifestV3`]).
pub const INDEX_FORMAT_VERSION: u32 = 4;
/// The oldest index format this build reads.
pub const OLDEST_INDEX_FORMAT: u32 = 2;
/// The docs file of a format 2 index.
const V2_DOCS: &str = "docs.bin";
const MANIFEST: &str = "manifest.json";
const LOCK: &str = "lock";
const DOCS_MAGIC: &[u8; 8] = b"NDUPDOCS";

/// The readable part of a saved index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexManifest {
    /// Always `"neardup-index"`.
    pub format: String,
    /// [`INDEX_FORMAT_VERSION`].
    pub version: u32,
    /// The fingerprint format ([`FORMAT_VERSION`]) of the pipeline that built it.
    pub pipeline_format: u32,
    /// The pipeline id ([`crate::Pipeline::id`]).
    pub pipeline_id: String,
    /// The job that wrote it, resolved: its pipeline spec, and its search as its plan ran it
    /// (the method, the verification and the bands given), which reopens it as it was.
    pub job: JobSpec,
    /// Documents stored.
    pub documents: u64,
    /// The docs file (format 3; format 2 indexes have `docs.bin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
}

/// The manifest of formats 2 and 3: the job's settings one by one.
#[derive(Debug, Clone, Deserialize)]
struct ManifestV3 {
    format: String,
    version: u32,
    pipeline_format: u32,
    pipeline_id: String,
    spec: crate::PipelineSpec,
    method: Method,
    verification: Verification,
    banding: Option<(usize, usize)>,
    #[serde(default)]
    threshold: Option<f64>,
    #[serde(default)]
    hamming: Option<u32>,
    documents: u64,
    #[serde(default)]
    docs: Option<String>,
}

impl From<ManifestV3> for IndexManifest {
    fn from(old: ManifestV3) -> IndexManifest {
        let search = crate::SearchSpec {
            method: Some(old.method),
            threshold: old.threshold,
            hamming: old.method.uses_simhash().then_some(old.hamming).flatten(),
            verify: Some(old.verification),
            bands: old.banding.map(|(b, _)| b),
            rows: old.banding.map(|(_, r)| r),
            ..crate::SearchSpec::default()
        };
        IndexManifest {
            format: old.format,
            version: old.version,
            pipeline_format: old.pipeline_format,
            pipeline_id: old.pipeline_id,
            job: JobSpec { pipeline: old.spec, search, passages: None },
            documents: old.documents,
            docs: old.docs,
        }
    }
}

impl IndexManifest {
    /// The search settings the index was made with, to reopen it with (a live index, or a run
    /// against it).
    pub fn search_spec(&self) -> crate::SearchSpec {
        self.job.search.clone()
    }

    /// The candidate method.
    pub fn method(&self) -> Method {
        self.job.search.method()
    }

    /// The verification (the method's default when a manifest gives none).
    pub fn verification(&self) -> Verification {
        self.job.search.verify.unwrap_or_else(|| Verification::default_for(self.method()))
    }

    /// LSH bands and rows (MinHash).
    pub fn banding(&self) -> Option<(usize, usize)> {
        self.job.search.bands.zip(self.job.search.rows)
    }

    /// The SimHash width.
    pub fn bits(&self) -> u32 {
        self.job.pipeline.simhash_bits.get()
    }

    /// The docs file this manifest names.
    fn docs_file(&self) -> &str {
        self.docs.as_deref().unwrap_or(V2_DOCS)
    }
}

/// The manifest of an index of `documents` documents made by `pipeline` under `plan` and
/// `config`.
pub(crate) fn manifest_for(
    pipeline: &Pipeline,
    plan: &Plan,
    config: &SearchConfig,
    documents: u64,
) -> IndexManifest {
    // The search as the plan runs it: its bands given (not a recall or weights to choose them
    // again), its verification given.
    let ran = SearchConfig {
        method: plan.method,
        verification: Some(plan.verification),
        banding: plan.banding.map(|b| (b.bands(), b.rows())),
        recall: None,
        weights: None,
        ..config.clone()
    };
    IndexManifest {
        format: "neardup-index".into(),
        version: INDEX_FORMAT_VERSION,
        pipeline_format: FORMAT_VERSION,
        pipeline_id: pipeline.id().to_string(),
        job: JobSpec::resolved(pipeline.spec().clone(), &ran, crate::SearchUse::Collection, None),
        documents,
        docs: None,
    }
}

/// Reads the manifest of the index in `dir` (its settings, to reopen it), refusing an older
/// format with "rebuild it" and a newer one with "use a newer build".
pub fn read_manifest(dir: &Path) -> Result<IndexManifest, DedupError> {
    let manifest_path = dir.join(MANIFEST);
    let text = match fs::read_to_string(&manifest_path) {
        Ok(text) => text,
        // Say what the directory is, rather than that a file is missing.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let what = if dir.join(crate::overlap::PASSAGE_INDEX_FILE).is_file() {
                "is a passage index (of `neardup overlap --save-index`), not an index of \
                 `neardup dedup`"
            } else if dir.is_dir() {
                "holds no saved index (no manifest.json)"
            } else {
                "does not exist"
            };
            return Err(DedupError::NoIndex {
                path: dir.to_path_buf(),
                message: format!(
                    "{what}: make one with `neardup dedup ... --save-index {}`",
                    dir.display()
                ),
            });
        }
        Err(e) => return Err(io_err(&manifest_path)(e)),
    };
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
    if !(u64::from(OLDEST_INDEX_FORMAT)..=u64::from(INDEX_FORMAT_VERSION)).contains(&version) {
        return Err(DedupError::OldFormat {
            path: dir.to_path_buf(),
            found: version,
            current: INDEX_FORMAT_VERSION,
        });
    }
    let manifest: IndexManifest = if version < 4 {
        serde_json::from_str::<ManifestV3>(text).map(IndexManifest::from)
    } else {
        serde_json::from_str(text)
    }
    .map_err(|e| corrupt(e.to_string()))?;
    match &manifest.docs {
        // A name, never a path: a manifest must not send a reader (or a save's clean-up) out of
        // its directory.
        Some(name) if !is_docs_name(name) => {
            Err(corrupt(format!("\"docs\": {name:?} is not a docs file name")))
        }
        None if version > 2 => Err(corrupt("no \"docs\" file named".into())),
        _ => Ok(manifest),
    }
}

/// True for the names saves give docs files: `docs-<hex>.bin`.
fn is_docs_name(name: &str) -> bool {
    name.strip_prefix("docs-")
        .and_then(|n| n.strip_suffix(".bin"))
        .is_some_and(|g| !g.is_empty() && g.len() <= 32 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The names of the files of a saved neardup index in `dir`, sorted: a dedup index's manifest
/// and docs files (when `manifest.json` is there with a docs file), a passage index's file,
/// and the lock either takes. Empty when `dir` holds none. A directory walk that meets them must not read them as
/// documents (an index saved into a corpus folder was read as documents by the next run).
pub fn saved_index_files(dir: &Path) -> Vec<std::ffi::OsString> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
    let is_docs = |n: &str| n == V2_DOCS || is_docs_name(n);
    let passages = crate::overlap::PASSAGE_INDEX_FILE;
    let dedup_index = names.iter().any(|n| n == MANIFEST)
        && names.iter().any(|n| n.to_str().is_some_and(is_docs));
    let passage_index = names.iter().any(|n| n == passages);
    let mut out: Vec<std::ffi::OsString> = names
        .into_iter()
        .filter(|n| {
            let n = n.to_str().unwrap_or("");
            (dedup_index && (n == MANIFEST || is_docs(n)))
                || (passage_index && n == passages)
                || ((dedup_index || passage_index) && n == LOCK)
        })
        .collect();
    out.sort();
    out
}

/// The exclusive right to write the saved index in one directory: a lock on its file `lock`
/// (created with the directory if needed), released when dropped or when the process ends,
/// however it ends.
#[derive(Debug)]
pub struct IndexLock {
    dir: PathBuf,
    _file: File,
}

impl IndexLock {
    /// Takes the lock on `dir`'s index, waiting while another writer (any process) holds it.
    pub fn acquire(dir: &Path) -> Result<IndexLock, DedupError> {
        let (file, path) = IndexLock::open(dir)?;
        file.lock().map_err(io_err(&path))?;
        Ok(IndexLock { dir: dir.to_path_buf(), _file: file })
    }

    /// Takes the lock on `dir`'s index if no other writer holds it (`None` if one does).
    pub fn try_acquire(dir: &Path) -> Result<Option<IndexLock>, DedupError> {
        let (file, path) = IndexLock::open(dir)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(IndexLock { dir: dir.to_path_buf(), _file: file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(io_err(&path)(e)),
        }
    }

    fn open(dir: &Path) -> Result<(File, PathBuf), DedupError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let path = dir.join(LOCK);
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        Ok((file, path))
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// A saved index written but not yet committed: its docs file is complete and synced under a
/// temporary name, and so is its manifest. [`PreparedIndex::commit`] makes it the index;
/// dropping it instead removes both and leaves the previous index as it was.
#[derive(Debug)]
pub struct PreparedIndex<'l> {
    lock: &'l IndexLock,
    docs: Option<tempfile::TempPath>,
    docs_name: String,
    manifest: Option<tempfile::TempPath>,
}

impl PreparedIndex<'_> {
    /// Makes the prepared index the directory's index: the docs file is renamed to its name,
    /// then the manifest over the old one (the commit point), each rename synced; then the docs
    /// files that the manifest does not name are removed. An error before the manifest's rename
    /// leaves the previous index whole.
    pub fn commit(mut self) -> Result<(), DedupError> {
        let dir = self.lock.dir.clone();
        let docs_path = dir.join(&self.docs_name);
        if let Some(docs) = self.docs.take() {
            fault::point("rename the docs file").map_err(io_err(&docs_path))?;
            docs.persist(&docs_path).map_err(|e| io_err(&docs_path)(e.error))?;
        }
        sync_dir(&dir)?;
        let manifest_path = dir.join(MANIFEST);
        // The previous manifest stays reachable (a second name for it) until the directory is
        // synced: if that sync fails, it is put back, so that an error always means the previous
        // index.
        let first = !manifest_path.exists();
        let previous = tempfile::Builder::new()
            .prefix(".manifest.json.")
            .suffix(".previous.tmp")
            .make_in(&dir, |p| fs::hard_link(&manifest_path, p))
            .ok();
        if let Some(manifest) = self.manifest.take() {
            fault::point("rename the manifest").map_err(io_err(&manifest_path))?;
            manifest.persist(&manifest_path).map_err(|e| io_err(&manifest_path)(e.error))?;
        }
        if let Err(e) = sync_dir(&dir) {
            // Best effort: if this fails too, the new manifest stays, and the error says the
            // directory could not be synced.
            match previous {
                Some(previous) => drop(previous.persist(&manifest_path)),
                // The first save: no index before it.
                None if first => drop(fs::remove_file(&manifest_path)),
                None => {}
            }
            return Err(e);
        }
        // Committed. What follows is tidying: an error here loses nothing, and the next save
        // tidies again.
        remove_unnamed_docs(&dir, &self.docs_name);
        Ok(())
    }
}

/// Removes the docs files of earlier generations (and format 2's `docs.bin`) from `dir`.
fn remove_unnamed_docs(dir: &Path, keep: &str) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name != keep && (is_docs_name(name) || name == V2_DOCS) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Removes the temporary files of earlier saves from `dir` (call holding its lock).
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(".tmp")
            && (name.starts_with(".docs") || name.starts_with(".manifest.json."))
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Syncs a directory, so that the renames in it survive a crash.
fn sync_dir(dir: &Path) -> Result<(), DedupError> {
    fault::point("sync the directory").map_err(io_err(dir))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_err(dir))
}

/// Writes `docs` (id and sketch, `manifest.documents` of them) and the manifest to the locked
/// directory, to be committed by the caller.
pub(crate) fn prepare_index<'a, 'l, D: Borrow<DocSketch>>(
    lock: &'l IndexLock,
    manifest: &IndexManifest,
    docs: impl Iterator<Item = Result<(&'a str, D), DedupError>>,
) -> Result<PreparedIndex<'l>, DedupError> {
    let dir = &lock.dir;
    // Under the lock no other save is writing here: temporary files are those of a save that
    // was killed (a signal cannot remove a file its process is still creating).
    remove_stale_temporaries(dir);
    let docs_name = format!("docs-{}.bin", crate::unique_name());
    let docs_path = dir.join(&docs_name);
    let docs_tmp = write_temporary(&docs_path, |out| {
        let mut out = HashingWriter::new(out);
        write_docs(&mut out, manifest.documents, docs, &docs_path)?;
        let sum = out.hasher.digest();
        out.inner.write_all(&sum.to_le_bytes()).map_err(io_err(&docs_path))
    })?;
    let manifest = IndexManifest { docs: Some(docs_name.clone()), ..manifest.clone() };
    let text = serde_json::to_string_pretty(&manifest).expect("manifest serializes");
    let manifest_path = dir.join(MANIFEST);
    let manifest_tmp = write_temporary(&manifest_path, |out| {
        out.write_all(text.as_bytes()).map_err(io_err(&manifest_path))
    })?;
    Ok(PreparedIndex { lock, docs: Some(docs_tmp), docs_name, manifest: Some(manifest_tmp) })
}

/// Writes and commits a saved index in the locked directory.
pub(crate) fn write_index<'a, D: Borrow<DocSketch>>(
    lock: &IndexLock,
    manifest: &IndexManifest,
    docs: impl Iterator<Item = Result<(&'a str, D), DedupError>>,
) -> Result<(), DedupError> {
    prepare_index(lock, manifest, docs)?.commit()
}

/// Reads the index in `dir` record by record (never the whole file at once), calling `each`
/// with each id and sketch, and refusing an index whose format or settings differ from
/// `expected`'s. Returns the number of documents.
pub(crate) fn read_index_with(
    dir: &Path,
    expected: &IndexManifest,
    each: impl FnMut(String, DocSketch) -> Result<(), DedupError>,
) -> Result<u64, DedupError> {
    let (manifest, file, docs_path) = open_current(dir)?;
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
    check("method", manifest.method().name().into(), expected.method().name().into())?;
    check(
        "verification",
        manifest.verification().name().into(),
        expected.verification().name().into(),
    )?;
    let banding = |b: Option<(usize, usize)>| match b {
        Some((b, r)) => format!("{b} bands x {r} rows"),
        None => "no bands".into(),
    };
    check("banding", banding(manifest.banding()), banding(expected.banding()))?;
    check(
        "SimHash width",
        format!("{} bits", manifest.bits()),
        format!("{} bits", expected.bits()),
    )?;

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

/// The manifest of `dir` and the docs file it names, opened. A save that commits between the
/// two reads removes the file the first manifest named: then the new manifest is read.
fn open_current(dir: &Path) -> Result<(IndexManifest, File, PathBuf), DedupError> {
    let mut tries = 0;
    loop {
        let manifest = read_manifest(dir)?;
        let docs_path = dir.join(manifest.docs_file());
        match File::open(&docs_path) {
            Ok(file) => return Ok((manifest, file, docs_path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound && tries < 8 => tries += 1,
            Err(e) => return Err(io_err(&docs_path)(e)),
        }
    }
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
    /// Writes every document with its id to the locked directory and commits it as one step
    /// (see [`PreparedIndex::commit`]): a crash or an error leaves the previous index whole and
    /// no temporary file behind.
    pub fn save(&mut self, lock: &IndexLock, ids: &[String]) -> Result<(), DedupError> {
        self.prepare_save(lock, ids)?.commit()
    }

    /// Writes every document with its id to the locked directory, to be committed later (a
    /// caller with other outputs commits them first, and the index last).
    pub fn prepare_save<'l>(
        &mut self,
        lock: &'l IndexLock,
        ids: &[String],
    ) -> Result<PreparedIndex<'l>, DedupError> {
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
        prepare_index(lock, &manifest, sketches)
    }

    /// Loads a saved index as the documents already seen; returns their ids. Refuses an index
    /// made with another pipeline, method, verification, banding or width, or by a build with
    /// another index format (saying to rebuild it).
    pub fn load(&mut self, dir: &Path) -> Result<Vec<String>, DedupError> {
        assert!(self.docs.len() == 0, "load an index before adding documents");
        let expected = manifest_for(self.pipeline, &self.plan, &self.config, 0);
        let mut ids = Vec::new();
        let docs = &mut self.docs;
        let docs_path = dir.join(V2_DOCS);
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

/// Writes through `write` into a temporary file beside `path`, and syncs it. On any error the
/// temporary file is removed; on success the caller renames it (`TempPath::persist`) or drops it
/// (which removes it).
fn write_temporary(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<FaultyFile<'_>>) -> Result<(), DedupError>,
) -> Result<tempfile::TempPath, DedupError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    fault::point("create a temporary file").map_err(io_err(path))?;
    // Created with the mode a plain create gives (0666 less the umask), not tempfile's 0600:
    // an index is shared like any output.
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(io_err(path))?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, FaultyFile(tmp.as_file()));
        write(&mut out)?;
        out.flush().map_err(io_err(path))?;
    }
    fault::point("sync a file").map_err(io_err(path))?;
    tmp.as_file().sync_all().map_err(io_err(path))?;
    Ok(tmp.into_temp_path())
}

/// A file whose writes pass a fault point each (in tests; a plain file otherwise).
struct FaultyFile<'f>(&'f File);

impl Write for FaultyFile<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        fault::point("write")?;
        (&mut &*self.0).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&mut &*self.0).flush()
    }
}

/// Fault injection for the crash tests: every write step of a save calls [`fault::point`], which
/// in tests fails the chosen step (counted per thread) and is nothing in other builds.
pub(crate) mod fault {
    use std::io;

    #[cfg(test)]
    thread_local! {
        /// Steps left before the one that fails (`None`: none fails), and steps passed.
        pub(crate) static PLAN: std::cell::Cell<(Option<usize>, usize)> =
            const { std::cell::Cell::new((None, 0)) };
    }

    #[cfg(test)]
    #[inline]
    pub(crate) fn point(step: &str) -> io::Result<()> {
        PLAN.with(|p| {
            let (left, passed) = p.get();
            match left {
                Some(0) => {
                    p.set((None, passed + 1));
                    Err(io::Error::other(format!("injected fault at step {passed}: {step}")))
                }
                Some(n) => {
                    p.set((Some(n - 1), passed + 1));
                    Ok(())
                }
                None => {
                    p.set((None, passed + 1));
                    Ok(())
                }
            }
        })
    }

    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) fn point(_step: &str) -> io::Result<()> {
        Ok(())
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
    // The records' layout is the same in formats 2 and 3.
    let version = r.u32()?;
    if !(OLDEST_INDEX_FORMAT..=INDEX_FORMAT_VERSION).contains(&version) {
        return Err(format!(
            "format version {version}, this build reads {OLDEST_INDEX_FORMAT} to \
             {INDEX_FORMAT_VERSION}"
        )
        .into());
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

    use crate::{Dedup, Document, Pipeline, PipelineSpec, Scratch, SearchConfig};
    use proptest::prelude::*;

    /// A valid `docs.bin` of a few documents.
    fn valid_docs() -> Vec<u8> {
        let p = Pipeline::new(PipelineSpec::default()).expect("valid");
        let d = Dedup::new(&p, SearchConfig::default()).expect("valid");
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
    fn a_failed_write_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("docs.bin");
        let e = write_temporary(&path, |out| {
            out.write_all(b"partial").map_err(io_err(&path))?;
            Err(io_err(&path)(io::Error::other("disk full")))
        })
        .expect_err("fails");
        assert!(e.to_string().contains("docs.bin"), "{e}");
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    fn read_json(path: &Path) -> serde_json::Value {
        serde_json::from_str(&fs::read_to_string(path).expect("read")).expect("json")
    }

    fn saved(dir: &Path, texts: &[&str]) -> Result<(), DedupError> {
        let p = Pipeline::new(PipelineSpec::default()).expect("valid");
        let mut d = Dedup::new(&p, SearchConfig::default()).expect("valid");
        let mut scratch = Scratch::default();
        for t in texts {
            let s = d.sketch(Document::Text(t), t.len(), &mut scratch);
            d.push(s)?;
        }
        let ids: Vec<String> = (0..texts.len()).map(|i| format!("\"d{i}\"")).collect();
        let lock = IndexLock::acquire(dir)?;
        d.save(&lock, &ids)
    }

    fn loaded(dir: &Path) -> Result<Vec<String>, DedupError> {
        let p = Pipeline::new(PipelineSpec::default()).expect("valid");
        let mut d = Dedup::new(&p, SearchConfig::default()).expect("valid");
        d.load(dir)
    }

    /// Every write step of a save fails in turn: the index read afterwards is the old one
    /// (the save answered an error) or the new one (it answered success), whole, and no
    /// temporary file is left.
    #[test]
    fn a_fault_at_any_step_of_a_save_leaves_the_old_index_or_the_new_one() {
        let old = ["one two three four five six", "seven eight nine ten"];
        let new = ["one two three four five six", "seven eight nine ten", "eleven twelve"];
        let mut step = 0;
        loop {
            let dir = tempfile::tempdir().expect("tempdir");
            saved(dir.path(), &old).expect("the old index");
            fault::PLAN.with(|p| p.set((Some(step), 0)));
            let result = saved(dir.path(), &new);
            let (left, _) = fault::PLAN.with(|p| p.replace((None, 0)));
            let ids = loaded(dir.path()).expect("an index is there, whole");
            match &result {
                Ok(()) => assert_eq!(ids.len(), 3, "success at step {step} means the new one"),
                Err(e) => assert_eq!(ids.len(), 2, "{e} (step {step}) means the old one"),
            }
            let names: Vec<String> = fs::read_dir(dir.path())
                .expect("dir")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect();
            assert!(names.iter().all(|n| !n.ends_with(".tmp")), "step {step}: {names:?}");
            if left.is_some() {
                // The fault was never reached: every step has been failed once.
                assert!(result.is_ok());
                assert!(step > 8, "only {step} steps");
                break;
            }
            step += 1;
        }
    }

    #[test]
    fn a_format_2_index_is_read_and_replaced_by_the_current_format_at_its_next_save() {
        let dir = tempfile::tempdir().expect("tempdir");
        saved(dir.path(), &["alpha beta gamma delta", "epsilon zeta eta theta"]).expect("saved");
        // Make it what a format 2 build wrote: docs.bin, and a manifest naming no file.
        let manifest = read_manifest(dir.path()).expect("manifest");
        let docs = manifest.docs.clone().expect("format 3 names its docs");
        fs::rename(dir.path().join(&docs), dir.path().join("docs.bin")).expect("rename");
        // Its settings one by one, as formats 2 and 3 wrote them (tests/fixtures/index_v3).
        let v2 = serde_json::json!({
            "format": "neardup-index",
            "version": 2,
            "pipeline_format": manifest.pipeline_format,
            "pipeline_id": manifest.pipeline_id,
            "spec": manifest.job.pipeline,
            "method": manifest.method(),
            "verification": manifest.verification(),
            "banding": manifest.banding(),
            "bits": manifest.bits(),
            "threshold": manifest.job.search.threshold,
            "hamming": 3,
            "documents": manifest.documents,
        });
        fs::write(dir.path().join("manifest.json"), v2.to_string()).expect("write");
        assert_eq!(read_manifest(dir.path()).expect("format 2").job, manifest.job);
        assert_eq!(loaded(dir.path()).expect("format 2 reads").len(), 2);
        saved(dir.path(), &["alpha beta gamma delta"]).expect("saved again");
        assert_eq!(read_manifest(dir.path()).expect("manifest").version, INDEX_FORMAT_VERSION);
        assert!(!dir.path().join("docs.bin").exists(), "the format 2 file is removed");
        assert_eq!(loaded(dir.path()).expect("reads").len(), 1);
    }

    #[test]
    fn a_save_removes_the_temporary_files_of_a_killed_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        saved(dir.path(), &["alpha beta gamma delta"]).expect("saved");
        for name in [".docs-00ff.bin.a1b2.tmp", ".manifest.json.c3d4.tmp", ".other.tmp"] {
            fs::write(dir.path().join(name), b"left by a kill").expect("write");
        }
        saved(dir.path(), &["alpha beta gamma delta"]).expect("saved");
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        names.sort();
        assert_eq!(names, [".other.tmp"], "only the index's own temporaries are removed");
    }

    #[test]
    fn a_newer_format_is_refused_with_use_a_newer_build() {
        let dir = tempfile::tempdir().expect("tempdir");
        saved(dir.path(), &["alpha beta gamma delta"]).expect("saved");
        let path = dir.path().join("manifest.json");
        let text = fs::read_to_string(&path).expect("read");
        let newer = text.replace(
            &format!("\"version\": {INDEX_FORMAT_VERSION}"),
            &format!("\"version\": {}", INDEX_FORMAT_VERSION + 1),
        );
        fs::write(&path, newer).expect("write");
        let e = loaded(dir.path()).expect_err("refused").to_string();
        assert!(e.contains("newer") && !e.contains("rebuild"), "{e}");
    }

    #[test]
    fn a_manifest_cannot_name_a_file_outside_its_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        saved(dir.path(), &["alpha beta gamma delta"]).expect("saved");
        let path = dir.path().join("manifest.json");
        let mut m = read_json(&path);
        m["docs"] = "../../etc/passwd".into();
        fs::write(&path, m.to_string()).expect("write");
        let e = loaded(dir.path()).expect_err("refused").to_string();
        assert!(e.contains("not a docs file name"), "{e}");
    }

    /// Writers on one directory take turns: four threads each add their documents to what the
    /// others saved, and none is lost.
    #[test]
    fn concurrent_writers_take_turns_and_lose_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = Pipeline::new(PipelineSpec::default()).expect("valid");
        std::thread::scope(|scope| {
            for w in 0..4 {
                let (dir, p) = (dir.path(), &p);
                scope.spawn(move || {
                    for round in 0..3 {
                        let lock = IndexLock::acquire(dir).expect("lock");
                        let mut d = Dedup::new(p, SearchConfig::default()).expect("valid");
                        let mut ids = if dir.join("manifest.json").exists() {
                            d.load(dir).expect("load")
                        } else {
                            Vec::new()
                        };
                        let text =
                            format!("writer {w} round {round} distinct words here {w}{round}");
                        let mut scratch = Scratch::default();
                        let s = d.sketch(Document::Text(&text), text.len(), &mut scratch);
                        d.push(s).expect("push");
                        ids.push(format!("\"{w}-{round}\""));
                        d.save(&lock, &ids).expect("save");
                    }
                });
            }
        });
        assert_eq!(loaded(dir.path()).expect("reads").len(), 12);
    }
}
