//! A saved passage index checked where it lies: the directory and the keys read at open, the
//! postings of a query's keys and the texts of the sources it aligns read by position when a
//! check needs them (plain positioned file reads). One thesis against a saved library costs its
//! own keys and sources, not a load of the library.

use std::fs;
use std::path::{Path, PathBuf};

use std::cell::RefCell;

use elsa::FrozenMap;

use super::align::Attribution;
use super::check::{check_in, new_scope, Halt, Holdings, Scope, SCRATCH};
use super::file::{hash_ranges, read_at, settings, trailer, Stream};
use super::index::KeyDirectory;
use super::parts::{self, Shipped};
use super::PASSAGE_INDEX_FORMAT;
use super::{IoStep, Overlap, OverlapError, OverlapOptions, OverlapSpec};

/// A saved passage index (format 2) opened for checks: the settings, the documents' ids and
/// where their texts are, the keys and where their postings are, in memory (about 30 bytes a
/// document and 8 a key); postings and texts stay in the file.
#[derive(Debug)]
pub struct SavedIndex {
    path: PathBuf,
    file: fs::File,
    spec: OverlapSpec,
    /// The directory and where the keys, offsets and postings are.
    at: Directory,
    /// Checks of this index share the hashes of the sources they align (it never changes).
    scope: Scope,
    /// The keys, offsets and postings, when held in memory ([`SavedIndex::open_resident`]).
    resident: Option<Resident>,
}

/// A saved index's postings held in memory: every key, and for each its one holder (most keys
/// of a corpus: 80% of the 1 GB benchmark's) or where its holders are among the others'
/// postings: 8 bytes a key, 4 a posting of a key of several holders.
#[derive(Debug, Default)]
struct Resident {
    /// Every key, sorted, each once.
    keys: Vec<u32>,
    /// For key `j`: its one holder when bit `j` of `single` is set, else `v`, its holders
    /// being `postings[offsets[v]..offsets[v + 1]]`.
    vals: Vec<u32>,
    single: Vec<u64>,
    offsets: Vec<u32>,
    postings: Vec<u32>,
    directory: KeyDirectory,
}

impl Resident {
    fn is_single(&self, j: usize) -> bool {
        (self.single[j >> 6] >> (j & 63)) & 1 == 1
    }

    fn built(&self, key: u32) -> &[u32] {
        self.list(self.directory.find(&self.keys, key))
    }

    /// The holders of key number `j` (none for a key not held).
    fn list(&self, j: Option<usize>) -> &[u32] {
        let Some(j) = j else { return &[] };
        let v = self.vals[j];
        match self.is_single(j) {
            true => std::slice::from_ref(&self.vals[j]),
            false => {
                &self.postings
                    [self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
            }
        }
    }

    /// [`Resident::built`] of every key of `keys`, the lookups done together
    /// ([`KeyDirectory::find_all`]).
    fn built_all<'a>(&'a self, keys: &[u32], out: &mut Vec<&'a [u32]>) {
        let mut found = Vec::with_capacity(keys.len());
        self.directory.find_all(&self.keys, keys, &mut found);
        out.clear();
        out.extend(found.into_iter().map(|j| self.list(j)));
        // The last holder of every list read now, all together, so that the check's reads of
        // the lists (their counts, then their first holders) find them in the cache: one by
        // one, each list of several holders was a cache miss the check waited for.
        let touched = out.iter().fold(0u32, |x, l| x ^ l.last().copied().unwrap_or(0));
        std::hint::black_box(touched);
    }

    fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// True when every holder it lists is below `ndocs`.
    fn holders_below(&self, ndocs: u32) -> bool {
        self.postings.iter().all(|&d| d < ndocs)
            && (0..self.keys.len()).all(|j| !self.is_single(j) || self.vals[j] < ndocs)
    }
}

/// Where id `n` starts in the ids' arena.
fn id_ends_start(ends: &[usize], n: usize) -> usize {
    if n == 0 {
        0
    } else {
        ends[n - 1]
    }
}

/// Keys per block read when a key is looked up (1 KiB).
const KEY_BLOCK: u64 = 256;

fn id_hash(id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id.as_bytes())
}

impl SavedIndex {
    /// Opens the index saved in `dir` for checks, with `options` applied over its settings as
    /// [`super::PassageIndex::load`] applies them. Every byte but the texts is read once and
    /// checked against the file's checksum; each text is checked when it is read. An index of
    /// format 1 is `Ok(None)`: it is read whole ([`super::PassageIndex::load`]).
    pub fn open(dir: &Path, options: &OverlapOptions) -> Result<Option<SavedIndex>, OverlapError> {
        SavedIndex::open_with(dir, options, false)
    }

    /// [`SavedIndex::open`], the postings read into memory (8 bytes a key, with its holder
    /// when it has one, and 4 a posting of a key of several holders), the texts left in the
    /// file: the check of every document of a corpus against the others (`neardup overlap
    /// CORPUS`) then reads only texts.
    pub fn open_resident(
        dir: &Path,
        options: &OverlapOptions,
    ) -> Result<Option<SavedIndex>, OverlapError> {
        SavedIndex::open_with(dir, options, true)
    }

    fn open_with(
        dir: &Path,
        options: &OverlapOptions,
        resident: bool,
    ) -> Result<Option<SavedIndex>, OverlapError> {
        let (file, path) = super::file::open_file(dir)?;
        let io = |step: IoStep| {
            let path = path.clone();
            move |source| OverlapError::Io { path, step, source }
        };
        let len = file.metadata().map_err(io(IoStep::Read))?.len();
        let bad = |message: String| OverlapError::Format { path: path.clone(), message };
        let mut r = Stream {
            inner: std::io::BufReader::with_capacity(
                1 << 20,
                file.try_clone().map_err(io(IoStep::Read))?,
            ),
            hash: Default::default(),
            // The checksum is computed apart, on a second thread (below).
            hashing: false,
            at: 0,
            body: len.saturating_sub(8),
            path: &path,
        };
        if len < 28 || r.take(16)? != b"neardup-passages" {
            return Err(bad("not a neardup passage index".into()));
        }
        let format = match r.u32()? {
            1 => return Ok(None),
            f @ 2..=PASSAGE_INDEX_FORMAT => f,
            other => {
                return Err(bad(format!(
                    "passage index format {other}; this neardup reads formats 1 to \
                     {PASSAGE_INDEX_FORMAT}: use the build that wrote it, or a newer one"
                )))
            }
        };
        let spec = settings(&mut r, options, format)?;
        let texts_at = r.at;
        let (_, directory_at) = trailer(&path, &file, len)?;
        if directory_at < texts_at || directory_at > r.body {
            return Err(bad("damaged: its directory is out of place".into()));
        }
        // The checksum covers everything but the texts. It is computed on a second thread from
        // the file's bytes while this one reads the directory and checks the keys and offsets
        // (an open took twice as long with both on one).
        let body = r.body;
        let (parsed, digest) = std::thread::scope(|scope| {
            let hasher = scope.spawn(|| hash_ranges(&file, &[(0, texts_at), (directory_at, body)]));
            let parsed = read_directory_and_keys(&mut r, texts_at, directory_at, len, resident);
            (parsed, hasher.join().expect("hashing does not panic"))
        });
        let (at, resident) = parsed?;
        let digest = digest.map_err(io(IoStep::Read))?;
        let mut tail = [0u8; 8];
        read_at(&file, &mut tail, r.body).map_err(io(IoStep::Read))?;
        if digest != u64::from_le_bytes(tail) {
            return Err(bad(
                "damaged: its checksum does not match (truncated or overwritten)".into()
            ));
        }
        if let Some(p) = &resident {
            if !p.holders_below(at.id_ends.len() as u32) {
                return Err(bad("damaged: its postings are inconsistent".into()));
            }
        }
        Ok(Some(SavedIndex { path, file, spec, at, scope: new_scope(), resident }))
    }

    /// The settings checks use.
    pub fn spec(&self) -> &OverlapSpec {
        &self.spec
    }

    /// Documents in the index.
    pub fn len(&self) -> usize {
        self.at.id_ends.len()
    }

    /// True when the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.at.id_ends.is_empty()
    }

    /// The id of document `n` as it was saved (JSON text: a string's quotes, a number's digits).
    ///
    /// # Panics
    /// If `n` is not a document of the index.
    pub fn id_json(&self, n: u32) -> &str {
        let n = n as usize;
        saved_id(&self.at.ids, &self.at.id_ends, n)
    }

    /// The id of document `n` as text, as the collection gave it (`7` for `7` and for `"7"`:
    /// the one id rule).
    ///
    /// # Panics
    /// If `n` is not a document of the index.
    pub fn id(&self, n: u32) -> std::borrow::Cow<'_, str> {
        plain_id(&self.at.ids, &self.at.id_ends, n as usize)
    }

    /// The id of document `n` as JSON, to write as it was saved (a string's quotes, a number's
    /// digits); an id saved plain (by an older writer) as a JSON string.
    ///
    /// # Panics
    /// If `n` is not a document of the index.
    pub fn id_raw(&self, n: u32) -> super::JsonId {
        let id = self.id_json(n);
        serde_json::value::RawValue::from_string(id.to_string())
            .unwrap_or_else(|_| serde_json::value::to_raw_value(id).expect("a string is JSON"))
    }

    /// The number of the document with this id (as text: `7` and `"7"` are one id).
    pub fn find(&self, id: &str) -> Option<u32> {
        let h = id_hash(id);
        let from = self.at.by_hash.partition_point(|&(x, _)| x < h);
        self.at.by_hash[from..]
            .iter()
            .take_while(|&&(x, _)| x == h)
            .map(|&(_, n)| n)
            .find(|&n| plain_id(&self.at.ids, &self.at.id_ends, n as usize) == id)
    }

    /// The numbers of the documents of `ids` (sources to leave out of a check), as
    /// [`super::PassageIndex::numbers_of`] gives them.
    pub fn numbers_of(&self, ids: &[String]) -> Result<Vec<u32>, OverlapError> {
        super::numbers_by(ids, |id| self.find(id))
    }

    /// The length in bytes of document `n`'s text.
    ///
    /// # Panics
    /// If `n` is not a document of the index.
    pub fn text_len(&self, n: u32) -> u64 {
        self.at.texts[n as usize].1
    }

    /// The text of document `n`, read from the file and checked against its checksum.
    pub fn text(&self, n: u32) -> Result<String, OverlapError> {
        let bad = |message: String| OverlapError::Format { path: self.path.clone(), message };
        let &(start, len, hash) =
            self.at.texts.get(n as usize).ok_or_else(|| bad(format!("no document {n}")))?;
        let mut buf = vec![0u8; len as usize];
        read_at(&self.file, &mut buf, start).map_err(|source| OverlapError::Io {
            path: self.path.clone(),
            step: IoStep::Read,
            source,
        })?;
        if xxhash_rust::xxh3::xxh3_64(&buf) != hash {
            return Err(bad(format!(
                "damaged: the text of document {n} does not match its checksum"
            )));
        }
        String::from_utf8(buf)
            .map_err(|_| bad(format!("damaged: the text of document {n} is not UTF-8")))
    }

    /// Reads `n` little-endian u32s at `offset`.
    fn u32s_at(&self, offset: u64, n: usize, buf: &mut Vec<u8>) -> Result<Vec<u32>, OverlapError> {
        buf.resize(n * 4, 0);
        read_at(&self.file, buf, offset).map_err(|source| OverlapError::Io {
            path: self.path.clone(),
            step: IoStep::Read,
            source,
        })?;
        Ok(buf
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }

    /// The holders of each of the query's keys that the index holds, read from the file: for
    /// each key its block of keys (found in the sample), then its two offsets and its postings.
    fn held(&self, text: &str) -> Result<Vec<(u32, Vec<u32>)>, OverlapError> {
        let mut held = Vec::new();
        let mut buf = Vec::new();
        let mut block: (u64, Vec<u32>) = (u64::MAX, Vec::new());
        for k in parts::query_keys(&self.spec, text)? {
            let b = match self.at.sample.partition_point(|&s| s <= k) {
                0 => continue,
                p => (p - 1) as u64,
            };
            if block.0 != b {
                let first = b * KEY_BLOCK;
                let n = KEY_BLOCK.min(self.at.nkeys - first) as usize;
                block = (b, self.u32s_at(self.at.keys_at + first * 4, n, &mut buf)?);
            }
            let Ok(j) = block.1.binary_search(&k) else { continue };
            let i = b * KEY_BLOCK + j as u64;
            let range = self.u32s_at(self.at.offsets_at + i * 4, 2, &mut buf)?;
            let (a, z) = (range[0], range[1]);
            if z < a {
                return Err(OverlapError::Format {
                    path: self.path.clone(),
                    message: "damaged: its postings are inconsistent".into(),
                });
            }
            let docs =
                self.u32s_at(self.at.postings_at + u64::from(a) * 4, (z - a) as usize, &mut buf)?;
            if docs.iter().any(|&d| d as usize >= self.len()) {
                return Err(OverlapError::Format {
                    path: self.path.clone(),
                    message: "damaged: its postings are inconsistent".into(),
                });
            }
            held.push((k, docs));
        }
        Ok(held)
    }

    /// Checks `text` against the index, as [`super::PassageIndex::check`] checks it against the
    /// same index loaded whole: the document of the query's own id (`own_id`) and those numbered
    /// in `exclude` are not sources. Reads the postings of its keys, then each source's text
    /// when the check first aligns it.
    pub fn check(
        &self,
        own_id: Option<&str>,
        text: &str,
        exclude: &[u32],
    ) -> Result<Overlap, OverlapError> {
        self.check_until(own_id, text, exclude, None)
    }

    /// [`SavedIndex::check`], stopped between candidate sources once `stop` is set (a Ctrl-C,
    /// a request given up): [`OverlapError::Stopped`].
    pub fn check_until(
        &self,
        own_id: Option<&str>,
        text: &str,
        exclude: &[u32],
        stop: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<Overlap, OverlapError> {
        let own = own_id.and_then(|id| self.find(id));
        self.checked(text, own, exclude, Attribution::BestMatch, stop)
    }

    /// Checks document `n` of the index against the others (the within-corpus mode), as
    /// [`super::PassageIndex::check_member`] checks it in an index loaded whole: a stretch
    /// several documents hold is given to the earliest of them.
    pub fn check_member(
        &self,
        n: u32,
        exclude: &[u32],
        stop: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<Overlap, OverlapError> {
        let text = self.text(n)?;
        self.checked(&text, Some(n), exclude, Attribution::Earliest, stop)
    }

    fn checked(
        &self,
        text: &str,
        own: Option<u32>,
        exclude: &[u32],
        by: Attribution,
        stop: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<Overlap, OverlapError> {
        let stopped = || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
        let lookup = match &self.resident {
            Some(p) => Lookup::Resident(p),
            None => Lookup::Shipped(Shipped::new(&self.spec, self.held(text)?, Vec::new())?),
        };
        let in_place =
            InPlace { saved: self, lookup, cells: FrozenMap::new(), failed: RefCell::new(None) };
        let found = SCRATCH.with_borrow_mut(|s| {
            check_in(&in_place, &self.spec, text, own, exclude, by, &stopped, s, self.scope)
        });
        if let Some(e) = in_place.failed.into_inner() {
            return Err(e);
        }
        found.map_err(|h| match h {
            Halt::Stopped => OverlapError::Stopped,
            Halt::Needs(docs) => OverlapError::Format {
                path: self.path.clone(),
                message: format!("damaged: its postings name documents it lacks ({docs:?})"),
            },
        })
    }
}

/// What an open reads of a saved index besides its settings: the directory and where the keys,
/// offsets and postings are.
#[derive(Debug)]
struct Directory {
    /// The documents' ids as saved (JSON text), one after another; document `n`'s ends at
    /// `id_ends[n]`.
    ids: String,
    id_ends: Vec<usize>,
    /// Each document's text: where it starts, its length and checksum.
    texts: Vec<(u64, u64, u64)>,
    /// Every document's id hash (of the id as text) and number, sorted ([`id_table`]).
    by_hash: Vec<(u64, u32)>,
    /// Every [`KEY_BLOCK`]-th key: the block of keys a key is in, read by position.
    sample: Vec<u32>,
    nkeys: u64,
    keys_at: u64,
    offsets_at: u64,
    postings_at: u64,
}

/// Reads the directory of a saved index (format 2) from `r` and checks its keys and offsets, up
/// to the checksum: the texts lie between `texts_at` and `directory_at`, the file is `len`
/// bytes. Nothing read here is hashed (the caller checks the checksum apart).
fn read_directory_and_keys(
    r: &mut Stream<'_>,
    texts_at: u64,
    directory_at: u64,
    len: u64,
    resident: bool,
) -> Result<(Directory, Option<Resident>), OverlapError> {
    let path = r.path;
    let bad = |message: String| OverlapError::Format { path: path.to_path_buf(), message };
    let io = |source| OverlapError::Io { path: path.to_path_buf(), step: IoStep::Read, source };
    std::io::Seek::seek(&mut r.inner, std::io::SeekFrom::Start(directory_at)).map_err(io)?;
    r.at = directory_at;
    let ndocs = r.u64()? as usize;
    let cap = ndocs.min((len / 24) as usize);
    let (mut ids, mut id_ends, mut texts) =
        (Vec::new(), Vec::with_capacity(cap), Vec::with_capacity(cap));
    let mut start = texts_at;
    for n in 0..ndocs {
        let id_len = r.u32()? as usize;
        let id_start = ids.len();
        r.take_into(&mut ids, id_len)?;
        if std::str::from_utf8(&ids[id_start..]).is_err() {
            return Err(bad(format!("damaged: the id of document {n} is not UTF-8")));
        }
        let (text_len, hash) = (r.u64()?, r.u64()?);
        if start.checked_add(text_len).is_none_or(|end| end > directory_at) {
            return Err(bad("damaged: its directory does not fit its texts".into()));
        }
        id_ends.push(ids.len());
        texts.push((start, text_len, hash));
        start += text_len;
    }
    if start != directory_at {
        return Err(bad("damaged: its directory does not fit its texts".into()));
    }
    let ids = String::from_utf8(ids).map_err(|_| bad("damaged: an id is not UTF-8".into()))?;
    // The id table is built on a thread of its own while this one checks the keys and offsets.
    let (table, keys) = std::thread::scope(|scope| {
        let table = scope.spawn(|| id_table(&ids, &id_ends));
        let keys = read_keys(r, len, (texts_at, directory_at), resident);
        (table.join().expect("building the id table does not panic"), keys)
    });
    let ((sample, nkeys, keys_at, offsets_at, postings_at), resident) = keys?;
    let by_hash = table.map_err(|id| bad(format!("id {id} is given to two documents")))?;
    let at =
        Directory { ids, id_ends, texts, by_hash, sample, nkeys, keys_at, offsets_at, postings_at };
    Ok((at, resident))
}

/// Every document's id hash (of the id as text) and number, sorted: an id is found by a binary
/// search and a comparison of the ids of its hash. (A hash map of a million ids took a third of
/// a second to fill, most of an open; this takes a tenth.) Or the id given to two documents.
fn id_table(ids: &str, id_ends: &[usize]) -> Result<Vec<(u64, u32)>, String> {
    let plain = |n: usize| plain_id(ids, id_ends, n);
    let mut table: Vec<(u64, u32)> =
        (0..id_ends.len()).map(|n| (id_hash(&plain(n)), n as u32)).collect();
    table.sort_unstable();
    for run in table.chunk_by(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
        for (i, &(_, a)) in run.iter().enumerate() {
            if run[i + 1..].iter().any(|&(_, b)| plain(a as usize) == plain(b as usize)) {
                return Err(saved_id(ids, id_ends, a as usize).into());
            }
        }
    }
    Ok(table)
}

/// Document `n`'s id as saved (JSON text) in the ids' arena.
fn saved_id<'a>(ids: &'a str, id_ends: &[usize], n: usize) -> &'a str {
    &ids[id_ends_start(id_ends, n)..id_ends[n]]
}

/// Document `n`'s id as text (the saved JSON's string or number).
fn plain_id<'a>(ids: &'a str, id_ends: &[usize], n: usize) -> std::borrow::Cow<'a, str> {
    crate::id_from_saved(saved_id(ids, id_ends, n))
}

/// Reads and checks the keys (sorted, each once) and the offsets (from 0, never falling, ending at
/// the postings' count) that follow the directory, keeping every [`KEY_BLOCK`]-th key, and skips
/// the postings, up to the two `positions` the file ends with (the texts' and the directory's):
/// the key sample, the key count, and where the keys, offsets and postings are; with
/// `resident`, the keys, offsets and postings themselves.
#[allow(clippy::type_complexity)]
fn read_keys(
    r: &mut Stream<'_>,
    len: u64,
    positions: (u64, u64),
    resident: bool,
) -> Result<((Vec<u32>, u64, u64, u64, u64), Option<Resident>), OverlapError> {
    let path = r.path;
    let bad = |message: String| OverlapError::Format { path: path.to_path_buf(), message };
    // Keys and offsets streamed and checked, every KEY_BLOCK-th key kept; a check reads each
    // block by position when it looks a key up.
    let inconsistent = || bad("damaged: its postings are inconsistent".into());
    let nkeys = r.u64()?;
    let keys_at = r.at;
    // Bounded by the file's length before anything is allocated for it: a damaged count asked
    // for hundreds of gigabytes, and the allocation's failure aborted the process.
    let mut sample = Vec::with_capacity((nkeys.min(len / 4) / KEY_BLOCK + 1) as usize);
    let (mut i, mut last) = (0u64, None);
    // Resident: every key until the offsets say which hold one document.
    let mut keys: Vec<u32> =
        Vec::with_capacity(if resident { nkeys.min(len / 4) as usize } else { 0 });
    let keys_ok = r.each_u32s(nkeys, &mut |block| {
        if resident {
            keys.extend_from_slice(block);
        }
        for &k in block {
            if last.is_some_and(|l| l >= k) {
                return false;
            }
            if i % KEY_BLOCK == 0 {
                sample.push(k);
            }
            (i, last) = (i + 1, Some(k));
        }
        true
    })?;
    if !keys_ok {
        return Err(inconsistent());
    }
    let offsets_at = r.at;
    let (mut seen, mut before) = (0u64, 0u32);
    // Resident: each key's count says whether it has one holder (its value filled from the
    // postings below) or several (its value the number of its list).
    let mut p = Resident::default();
    if resident {
        p.offsets.push(0);
        p.vals.reserve_exact(keys.len());
        p.single = vec![0u64; keys.len().div_ceil(64)];
    }
    let offsets_ok = r.each_u32s(nkeys + 1, &mut |block| {
        for &o in block {
            if (seen == 0 && o != 0) || o < before {
                return false;
            }
            if resident && seen > 0 {
                let (j, n) = (seen as usize - 1, o - before);
                if n == 1 {
                    p.single[j >> 6] |= 1 << (j & 63);
                    p.vals.push(u32::MAX);
                } else {
                    p.vals.push(p.offsets.len() as u32 - 1);
                    p.offsets.push(p.offsets[p.offsets.len() - 1] + n);
                }
            }
            (seen, before) = (seen + 1, o);
        }
        true
    })?;
    p.keys = keys;
    let npostings = r.u64()?;
    if !offsets_ok || u64::from(before) != npostings {
        return Err(inconsistent());
    }
    let postings_at = r.at;
    let resident = match resident {
        true => {
            // Each posting to its key, the keys taken in order (holders are checked against
            // the directory by the caller).
            p.postings.reserve_exact(p.offsets[p.offsets.len() - 1] as usize);
            let (mut j, mut left) = (0usize, 0u32);
            let postings_ok = r.each_u32s(npostings, &mut |block| {
                for &d in block {
                    while left == 0 {
                        if j >= p.keys.len() {
                            return false;
                        }
                        left = match p.is_single(j) {
                            true => 1,
                            false => {
                                let v = p.vals[j] as usize;
                                p.offsets[v + 1] - p.offsets[v]
                            }
                        };
                        j += 1;
                    }
                    match p.is_single(j - 1) {
                        true => p.vals[j - 1] = d,
                        false => p.postings.push(d),
                    }
                    left -= 1;
                }
                true
            })?;
            if !postings_ok || (j, left) != (p.keys.len(), 0) {
                return Err(inconsistent());
            }
            p.directory = KeyDirectory::new(&p.keys);
            Some(p)
        }
        // The postings only for the checksum (the other thread's): each is checked when a
        // check reads it.
        false => {
            r.skip(npostings.checked_mul(4).ok_or_else(inconsistent)?)?;
            None
        }
    };
    if (r.u64()?, r.u64()?) != positions || r.at != r.body {
        return Err(bad("damaged: its records do not fill the file".into()));
    }
    Ok(((sample, nkeys, keys_at, offsets_at, postings_at), resident))
}

/// A saved index as one check reads it: the postings of the query's keys (read for it, or held
/// in memory), and each source's text read from the file the first time the check asks for
/// it. A text that cannot be read is `None`, and the error kept for the caller.
struct InPlace<'a> {
    saved: &'a SavedIndex,
    lookup: Lookup<'a>,
    cells: FrozenMap<u32, String>,
    failed: RefCell<Option<OverlapError>>,
}

/// Where a check finds the holders of a key.
enum Lookup<'a> {
    /// The holders of the query's keys, read from the file for this check.
    Shipped(Shipped),
    /// Every key's, in memory.
    Resident(&'a Resident),
}

impl Holdings for InPlace<'_> {
    fn built(&self, key: u32) -> &[u32] {
        match &self.lookup {
            Lookup::Shipped(s) => s.built(key),
            Lookup::Resident(p) => p.built(key),
        }
    }

    fn built_all<'a>(&'a self, keys: &[u32], out: &mut Vec<&'a [u32]>) {
        match &self.lookup {
            Lookup::Shipped(s) => s.built_all(keys, out),
            Lookup::Resident(p) => p.built_all(keys, out),
        }
    }

    fn recent(&self, _key: u32) -> &[u32] {
        &[]
    }

    fn no_keys(&self) -> bool {
        match &self.lookup {
            Lookup::Shipped(s) => s.no_keys(),
            Lookup::Resident(p) => p.is_empty(),
        }
    }

    fn live(&self, _doc: u32) -> bool {
        true
    }

    fn lists_only_live(&self) -> bool {
        // Every document listed is live (see `live`): holders are counted from the lengths.
        true
    }

    fn has_text(&self, doc: u32) -> bool {
        // Every text is in the file (one that cannot be read fails the check when it is).
        (doc as usize) < self.saved.len()
    }

    fn text(&self, doc: u32) -> Option<&str> {
        if let Some(t) = self.cells.get(&doc) {
            return Some(t);
        }
        match self.saved.text(doc) {
            Ok(t) => Some(self.cells.insert(doc, t)),
            Err(e) => {
                self.failed.borrow_mut().get_or_insert(e);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlap::{IndexBuilder, OnExistingId, PassageIndex, PASSAGE_INDEX_FILE};

    fn saved(docs: &[(&str, String)]) -> (tempfile::TempDir, PassageIndex) {
        let dir = tempfile::tempdir().expect("test setup");
        let mut index = PassageIndex::new(OverlapSpec::default()).expect("test setup");
        index
            .add_documents(
                docs.iter().map(|(i, t)| (i.to_string(), t.clone())).collect(),
                OnExistingId::Refuse,
            )
            .expect("test setup");
        index.save(&crate::IndexLock::acquire(dir.path()).expect("lock")).expect("test setup");
        (dir, index)
    }

    fn words(tag: &str, n: usize) -> String {
        (0..n).map(|i| format!("{tag}{i}")).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn a_check_of_the_saved_file_gives_the_loaded_index_answer() {
        let docs: Vec<(&str, String)> = vec![
            ("a", words("alpha", 60)),
            ("b", format!("{} {}", words("alpha", 30), words("beta", 40))),
            ("c", "一二三四五六七八九十百千万亿兆京垓秭穰沟涧正载极".repeat(3)),
            ("q", words("gamma", 50)),
        ];
        let (dir, index) = saved(&docs);
        let lazy = SavedIndex::open(dir.path(), &OverlapOptions::default())
            .expect("open")
            .expect("format 2");
        assert_eq!(lazy.len(), 4);
        let query = format!(
            "{} and so {} then {}",
            words("alpha", 45),
            words("gamma", 20),
            "一二三四五六七八九十百千万亿兆京垓秭穰"
        );
        for (own, exclude) in [(None, vec![]), (Some("q"), vec![]), (None, vec![1u32])] {
            let want = index.check(own, &query, &exclude).expect("check");
            assert!(!want.passages.is_empty());
            assert_eq!(lazy.check(own, &query, &exclude).expect("check"), want);
        }
        assert_eq!(lazy.id_json(2), "c");
        assert_eq!(lazy.text(3).expect("text"), docs[3].1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Each document checked against the others in a built file, read resident or by
        /// position, gets the answer of the index loaded whole, whatever the runs the
        /// fingerprints were sorted in.
        #[test]
        fn a_member_check_of_a_built_file_gives_the_loaded_index_answer(
            picks in proptest::collection::vec(
                proptest::collection::vec((0usize..6, 0usize..40, 10usize..40), 1..4),
                2..7,
            ),
            block in 1usize..200,
        ) {
            // Documents made of stretches of a few shared texts: copies, partial copies, repeats.
            let pool: Vec<String> = (0..6).map(|i| words(&format!("w{i}x"), 80)).collect();
            let docs: Vec<(String, String)> = picks
                .iter()
                .enumerate()
                .map(|(n, parts)| {
                    let text = parts
                        .iter()
                        .map(|&(p, from, len)| {
                            let w: Vec<&str> = pool[p].split(' ').collect();
                            w[from..(from + len).min(w.len())].join(" ")
                        })
                        .collect::<Vec<_>>()
                        .join(" . ");
                    (format!("d{n}"), text)
                })
                .collect();
            let dir = tempfile::tempdir().expect("test setup");
            let lock = crate::IndexLock::acquire(dir.path()).expect("lock");
            let mut builder = IndexBuilder::with_block(OverlapSpec::default(), &lock, block)
                .expect("builder");
            builder
                .add(docs.iter().map(|(i, t)| (i.clone(), format!("{i:?}"), t.clone())).collect())
                .expect("added");
            builder.finish().expect("written");
            let mut index = PassageIndex::new(OverlapSpec::default()).expect("index");
            index.add_documents(docs.clone(), OnExistingId::Refuse).expect("added");
            let options = OverlapOptions::default();
            let resident = SavedIndex::open_resident(dir.path(), &options).expect("open").expect("v3");
            let lazy = SavedIndex::open(dir.path(), &options).expect("open").expect("v3");
            for n in 0..docs.len() as u32 {
                let want = index.check_member(n, &[]).expect("check");
                proptest::prop_assert_eq!(&resident.check_member(n, &[], None).expect("check"), &want);
                proptest::prop_assert_eq!(&lazy.check_member(n, &[], None).expect("check"), &want);
            }
        }
    }

    #[test]
    fn a_damaged_text_is_refused_when_it_is_read() {
        let docs = vec![("a", words("alpha", 60)), ("b", words("beta", 60))];
        let (dir, _) = saved(&docs);
        let path = dir.path().join(PASSAGE_INDEX_FILE);
        let mut bytes = fs::read(&path).expect("test setup");
        let at = bytes.windows(6).position(|w| w == b"alpha7").expect("the text is in the file");
        bytes[at] = b'A';
        fs::write(&path, &bytes).expect("test setup");
        // The directory and postings are intact: the index opens, and the text is refused.
        let lazy = SavedIndex::open(dir.path(), &OverlapOptions::default())
            .expect("open")
            .expect("format 2");
        let e = lazy.check(None, &words("alpha", 40), &[]).expect_err("damaged");
        assert!(e.to_string().contains("does not match its checksum"), "{e}");
        // A full load reads every text and refuses the file at once.
        let e = PassageIndex::load(dir.path(), &OverlapOptions::default()).expect_err("damaged");
        assert!(e.to_string().contains("document 0 does not match its checksum"), "{e}");
    }

    /// Every byte outside the texts is under the checksum, computed on another thread than the
    /// one reading the directory: a byte changed anywhere there (the header, the directory, the
    /// keys, the offsets, the postings, the positions) refuses the open by name, and the full
    /// load. Regression: a changed key count made the open allocate hundreds of gigabytes, and
    /// the failed allocation aborted the process.
    #[test]
    fn a_byte_changed_outside_the_texts_refuses_the_open() {
        let docs = vec![("a", words("alpha", 60)), ("b", words("beta", 60)), ("c", words("c", 9))];
        let (dir, _) = saved(&docs);
        let path = dir.path().join(PASSAGE_INDEX_FILE);
        let bytes = fs::read(&path).expect("test setup");
        let len = bytes.len() as u64;
        let file = fs::File::open(&path).expect("test setup");
        let (texts_at, directory_at) = trailer(&path, &file, len).expect("test setup");
        let tail = len - 24; // the two positions and the checksum
        let at_text = |at: u64| (texts_at..directory_at).contains(&at);
        let mut tried = 0;
        for at in (0..tail).filter(|&at| !at_text(at)) {
            let mut damaged = bytes.clone();
            damaged[at as usize] ^= 0x10;
            fs::write(&path, &damaged).expect("test setup");
            match SavedIndex::open(dir.path(), &OverlapOptions::default()) {
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        ["damaged", "format", "settings", "not a neardup passage index"]
                            .iter()
                            .any(|why| e.contains(why)),
                        "byte {at}: {e}"
                    );
                }
                Ok(_) => panic!("byte {at} changed, and the index opened"),
            }
            // The full load too.
            let e = PassageIndex::load(dir.path(), &OverlapOptions::default());
            assert!(e.is_err(), "byte {at} changed, and the index loaded");
            tried += 1;
        }
        assert!(tried > 100, "{tried}");
    }

    /// The id table finds each id as text (a number and the string of its digits are one id),
    /// and refuses an id given twice in either form.
    #[test]
    fn the_id_table_finds_ids_as_text_and_refuses_one_given_twice() {
        let arena = |ids: &[&str]| {
            let mut ends = Vec::new();
            let mut all = String::new();
            for id in ids {
                all.push_str(id);
                ends.push(all.len());
            }
            (all, ends)
        };
        let (ids, ends) = arena(&["7", "\"a\"", "\"x y\"", "12"]);
        let table = id_table(&ids, &ends).expect("distinct ids");
        let find = |id: &str| {
            let h = id_hash(id);
            table
                .iter()
                .filter(|&&(x, _)| x == h)
                .map(|&(_, n)| n)
                .find(|&n| plain_id(&ids, &ends, n as usize) == id)
        };
        assert_eq!(
            (find("7"), find("a"), find("x y"), find("12"), find("b")),
            (Some(0), Some(1), Some(2), Some(3), None)
        );
        let (ids, ends) = arena(&["7", "\"b\"", "\"7\""]);
        // Named as the first of the two holders saved it.
        assert_eq!(id_table(&ids, &ends), Err("7".to_string()));
    }
}
