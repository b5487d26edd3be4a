//! A saved passage index checked where it lies: the directory and the keys read at open, the
//! postings of a query's keys and the texts of the sources it aligns read by position when a
//! check needs them (plain positioned file reads). One thesis against a saved library costs its
//! own keys and sources, not a load of the library.

use std::fs;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::file::{directory_entry, read_at, trailer, Stream};
use super::parts::{self, Shipped, Step};
use super::{option_name, IoStep, Overlap, OverlapError, OverlapOptions, OverlapSpec};
use super::{PASSAGE_INDEX_FILE, PASSAGE_INDEX_FORMAT};

/// A saved passage index (format 2) opened for checks: the settings, the documents' ids and
/// where their texts are, the keys and where their postings are, in memory (about 30 bytes a
/// document and 8 a key); postings and texts stay in the file.
#[derive(Debug)]
pub struct SavedIndex {
    path: PathBuf,
    file: fs::File,
    spec: OverlapSpec,
    /// Each document's id as saved (JSON text), and where its text is: (start, length, xxh3).
    ids: Vec<Box<str>>,
    texts: Vec<(u64, u64, u64)>,
    by_id: FxHashMap<Box<str>, u32>,
    keys: Vec<u32>,
    offsets: Vec<u32>,
    /// Where the postings start in the file.
    postings_at: u64,
}

impl SavedIndex {
    /// Opens the index saved in `dir` for checks, with `options` applied over its settings as
    /// [`super::PassageIndex::load`] applies them. Every byte but the texts is read once and
    /// checked against the file's checksum; each text is checked when it is read. An index of
    /// format 1 is `Ok(None)`: it is read whole ([`super::PassageIndex::load`]).
    pub fn open(dir: &Path, options: &OverlapOptions) -> Result<Option<SavedIndex>, OverlapError> {
        let path = dir.join(PASSAGE_INDEX_FILE);
        let io = |step: IoStep| {
            let path = path.clone();
            move |source| OverlapError::Io { path, step, source }
        };
        let file = fs::File::open(&path).map_err(io(IoStep::Read))?;
        let len = file.metadata().map_err(io(IoStep::Read))?.len();
        let bad = |message: String| OverlapError::Format { path: path.clone(), message };
        let mut r = Stream {
            inner: std::io::BufReader::with_capacity(
                1 << 20,
                file.try_clone().map_err(io(IoStep::Read))?,
            ),
            hash: Default::default(),
            hashing: true,
            at: 0,
            body: len.saturating_sub(8),
            path: &path,
        };
        if len < 28 || r.take(16)? != b"neardup-passages" {
            return Err(bad("not a neardup passage index".into()));
        }
        match r.u32()? {
            PASSAGE_INDEX_FORMAT => {}
            1 => return Ok(None),
            other => {
                return Err(bad(format!(
                    "passage index format {other}; this neardup reads formats 1 and \
                     {PASSAGE_INDEX_FORMAT}: build the index again with this version"
                )))
            }
        }
        let spec_len = r.u32()? as usize;
        let saved: OverlapSpec = serde_json::from_slice(&r.take(spec_len)?).map_err(|e| {
            bad(format!("damaged: its settings block is unreadable ({e}); build the index again"))
        })?;
        let spec = options.apply(saved.clone())?;
        for ((field, have), (_, want)) in saved.index_fields().into_iter().zip(spec.index_fields())
        {
            if have != want {
                return Err(OverlapError::Mismatch {
                    path: path.clone(),
                    field: option_name(field),
                    index: have,
                    asked: want,
                });
            }
        }
        let texts_at = r.at;
        let (_, directory_at) = trailer(&path, &file, len)?;
        if directory_at < texts_at || directory_at > r.body {
            return Err(bad("damaged: its directory is out of place".into()));
        }
        std::io::Seek::seek(&mut r.inner, std::io::SeekFrom::Start(directory_at))
            .map_err(io(IoStep::Read))?;
        r.at = directory_at;
        let ndocs = r.u64()? as usize;
        let (mut ids, mut texts) = (Vec::with_capacity(ndocs.min(1 << 24)), Vec::new());
        let mut by_id = FxHashMap::default();
        let mut start = texts_at;
        for n in 0..ndocs {
            let (id, text_len, hash) = directory_entry(&mut r, n)?;
            if start.checked_add(text_len).is_none_or(|end| end > directory_at) {
                return Err(bad("damaged: its directory does not fit its texts".into()));
            }
            let plain = crate::id_from_json(&id).map_or_else(|_| id.clone(), |c| c.into_owned());
            if by_id.insert(plain.into_boxed_str(), n as u32).is_some() {
                return Err(bad(format!("id {id} is given to two documents")));
            }
            ids.push(id.into_boxed_str());
            texts.push((start, text_len, hash));
            start += text_len;
        }
        if start != directory_at {
            return Err(bad("damaged: its directory does not fit its texts".into()));
        }
        let nkeys = r.u64()? as usize;
        let keys = r.u32s(nkeys)?;
        let offsets = r.u32s(nkeys + 1)?;
        let npostings = r.u64()?;
        let postings_at = r.at;
        // The postings are read for the checksum only, a block at a time.
        let mut left = npostings.saturating_mul(4);
        let mut buf = Vec::with_capacity(1 << 20);
        while left > 0 {
            let n = left.min(1 << 20) as usize;
            buf.clear();
            r.take_into(&mut buf, n)?;
            left -= n as u64;
        }
        if (r.u64()?, r.u64()?) != (texts_at, directory_at) || r.at != r.body {
            return Err(bad("damaged: its records do not fill the file".into()));
        }
        let digest = r.hash.digest();
        let mut tail = [0u8; 8];
        read_at(&file, &mut tail, r.body).map_err(io(IoStep::Read))?;
        if digest != u64::from_le_bytes(tail) {
            return Err(bad(
                "damaged: its checksum does not match (truncated or overwritten)".into()
            ));
        }
        if offsets.first() != Some(&0)
            || offsets.last().map(|&o| u64::from(o)) != Some(npostings)
            || offsets.windows(2).any(|w| w[0] > w[1])
            || keys.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(bad("damaged: its postings are inconsistent".into()));
        }
        Ok(Some(SavedIndex { path, file, spec, ids, texts, by_id, keys, offsets, postings_at }))
    }

    /// The settings checks use.
    pub fn spec(&self) -> &OverlapSpec {
        &self.spec
    }

    /// Documents in the index.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The id of document `n` as it was saved (JSON text: a string's quotes, a number's digits).
    ///
    /// # Panics
    /// If `n` is not a document of the index.
    pub fn id_json(&self, n: u32) -> &str {
        &self.ids[n as usize]
    }

    /// The number of the document with this id (as text: `7` and `"7"` are one id).
    pub fn find(&self, id: &str) -> Option<u32> {
        self.by_id.get(id).copied()
    }

    /// The text of document `n`, read from the file and checked against its checksum.
    pub fn text(&self, n: u32) -> Result<String, OverlapError> {
        let bad = |message: String| OverlapError::Format { path: self.path.clone(), message };
        let &(start, len, hash) =
            self.texts.get(n as usize).ok_or_else(|| bad(format!("no document {n}")))?;
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

    /// The holders of each of the query's keys that the index holds, read from the file.
    fn held(&self, text: &str) -> Result<Vec<(u32, Vec<u32>)>, OverlapError> {
        let mut held = Vec::new();
        let mut buf = Vec::new();
        for k in parts::query_keys(&self.spec, text)? {
            let Ok(i) = self.keys.binary_search(&k) else { continue };
            let (a, b) = (self.offsets[i], self.offsets[i + 1]);
            buf.resize((b - a) as usize * 4, 0);
            read_at(&self.file, &mut buf, self.postings_at + u64::from(a) * 4).map_err(
                |source| OverlapError::Io { path: self.path.clone(), step: IoStep::Read, source },
            )?;
            let docs: Vec<u32> = buf
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect();
            if docs.iter().any(|&d| d as usize >= self.ids.len()) {
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
    /// in `exclude` are not sources. Reads the postings of its keys, then the texts of the
    /// sources it aligns, a round of candidates at a time.
    pub fn check(
        &self,
        own_id: Option<&str>,
        text: &str,
        exclude: &[u32],
    ) -> Result<Overlap, OverlapError> {
        let own = own_id.and_then(|id| self.find(id));
        let mut shipped = Shipped::new(&self.spec, self.held(text)?, Vec::new())?;
        loop {
            match parts::check(&self.spec, &shipped, text, own, exclude, false)? {
                Step::Done(found) => return Ok(found),
                Step::Needs(docs) => {
                    for d in docs {
                        shipped.add_text(d, self.text(d)?);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlap::{OnExistingId, PassageIndex};

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
}
