//! What the service stores, and the store behind it.
//!
//! The layout is the same in every store: collection settings (name -> settings as JSON) and,
//! per collection, one table of documents named `docs/NAME/INCARNATION` (id -> record). The
//! incarnation is a random id given at creation: a collection deleted and created again under
//! the same name gets a new table, and every write transaction first checks that its
//! collection's incarnation is still the stored one, so a write that raced a delete can never
//! land in the table of the next collection of that name (nor resurrect the deleted one after a
//! restart).
//!
//! A record is the document's sketch (what the index is rebuilt from at start), its metadata
//! (JSON) and, if the collection keeps them, its text, closed by an xxh3-64 checksum of the id
//! and all of that (format 3): a store checks its own structure, not the values in it, so a
//! flipped bit in a record would otherwise be served as the document.
//!
//! The routes reach a store through [`Store`]: a read transaction (a snapshot) or a write
//! transaction (all or nothing, durable once committed). [`embedded`] is redb in one file.

pub mod embedded;
pub mod postgres;

use neardup::overlap::OverlapSpec;
use neardup::{DocSketch, JobSpec, Method, PipelineSpec, SearchUse, Verification};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Version of the store layout. Version 2: 32-bit feature hashes in sketches, per-incarnation
/// document tables, and the pipelines of fingerprint format 2. Version 3: a checksum closes
/// every record. Version 4: a collection's settings are its job ([`JobSpec`]). A version 2 or
/// 3 store is upgraded when it is opened (one transaction); any other version is refused at
/// start.
pub const STORE_FORMAT: u32 = 4;
/// The oldest layout this build opens (and upgrades).
pub const OLDEST_STORE_FORMAT: u32 = 2;

/// The table of one incarnation of a collection's documents.
pub fn docs_table(name: &str, incarnation: &str) -> String {
    format!("docs/{name}/{incarnation}")
}

/// Why a store could not do what it was asked.
#[derive(Debug, Clone)]
pub enum StoreError {
    /// The store cannot be read or written now (an I/O error, a full disk): the service
    /// answers 503 until the store is reopened.
    Unavailable(String),
    /// The collection's documents are gone: it was deleted meanwhile.
    Gone,
    /// What was asked conflicts with what another writer committed meanwhile (a collection of
    /// the same name created through another server).
    Conflict(String),
    /// The store is there but could not take this request now (no connection free in time, a
    /// transaction the database chose to abort): 503 with `Retry-After` for this request
    /// alone, the store kept open.
    Busy(String),
    /// Anything else, named.
    Other(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(m)
            | StoreError::Other(m)
            | StoreError::Conflict(m)
            | StoreError::Busy(m) => write!(f, "{m}"),
            StoreError::Gone => write!(f, "the collection's documents are gone"),
        }
    }
}

/// A stored value, borrowed from the transaction that read it where the store can.
pub type Value<'a> = Box<dyn std::ops::Deref<Target = [u8]> + 'a>;

/// What [`Docs::for_each`] calls with each document's id and record.
pub type Visit<'a> = dyn FnMut(&str, &[u8]) -> Result<(), String> + 'a;

/// A store of collections and their documents.
///
/// A store that several servers share ([`Store::shared`]) keeps the candidate index itself
/// ([`Store::indexes`]): a server then holds nothing of the documents that another could make
/// stale, and its writers lock what they touch ([`WriteTxn::lock`]).
pub trait Store: Send + Sync + std::fmt::Debug {
    /// True when other servers may write to this store at the same time: a check is then
    /// decided inside its write transaction, after [`WriteTxn::lock`]. Such a store
    /// [`Store::indexes`].
    fn shared(&self) -> bool {
        false
    }
    /// True when the store keeps each collection's candidate index itself (the keys given to
    /// [`DocsMut::put`], looked up by [`Docs::candidates`]): a server then holds no document of
    /// it in memory, and its memory does not grow with the collections.
    fn indexes(&self) -> bool {
        false
    }
    /// A snapshot: what it reads does not change while it is held.
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError>;
    /// A write transaction: nothing of it is seen until [`WriteTxn::commit`], which is
    /// durable when it returns; dropped uncommitted, it leaves nothing.
    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError>;
}

/// A read transaction.
pub trait ReadTxn {
    /// Every collection's name and settings (JSON), by name.
    fn collections(&self) -> Result<Vec<(String, String)>, StoreError>;
    /// The documents of `table` ([`StoreError::Gone`] if it does not exist).
    fn docs(&self, table: &str) -> Result<Box<dyn Docs + '_>, StoreError>;
    /// The settings (JSON) stored for collection `name`.
    fn collection(&self, name: &str) -> Result<Option<String>, StoreError> {
        Ok(self.collections()?.into_iter().find(|(n, _)| n == name).map(|(_, s)| s))
    }
}

/// A table of documents: id -> record.
pub trait Docs {
    /// The record of `id`, if stored.
    fn get(&self, id: &str) -> Result<Option<Value<'_>>, StoreError>;
    /// The records of `ids`, in their order, in one go where the store can.
    fn get_many(&self, ids: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        ids.iter().map(|id| Ok(self.get(id)?.map(|v| v.to_vec()))).collect()
    }
    /// Calls `visit(id, record)` for every document, in id order; stops at `visit`'s first
    /// error, which is returned as [`StoreError::Other`].
    fn for_each(&self, visit: &mut Visit<'_>) -> Result<(), StoreError>;
    /// How many documents the table holds, where the store counts them ([`Store::indexes`]).
    fn count(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }
    /// The documents stored with at least one of `keys` ([`Store::indexes`]), or all of them
    /// when `keys` is `None`: each with its id, its place in the order documents were first
    /// stored, and its record.
    fn candidates(&self, keys: Option<&[u64]>) -> Result<Vec<Candidate>, StoreError> {
        let _ = keys;
        Err(StoreError::Other("this store keeps no candidate index".into()))
    }
    /// The first `cap` holders of each of `keys` in the candidate index, by their place in
    /// the order documents were first stored ([`Candidate::order`]), ascending: `(key, order)`
    /// pairs ([`Store::indexes`]). A passage collection's postings ([`passage_keys`]).
    fn holders(&self, keys: &[u64], cap: usize) -> Result<Vec<(u64, u64)>, StoreError> {
        let _ = (keys, cap);
        Err(StoreError::Other("this store keeps no candidate index".into()))
    }
    /// The documents at the places `orders` ([`Candidate::order`]), with their ids and records,
    /// in any order; those removed meanwhile are left out ([`Store::indexes`]).
    fn by_order(&self, orders: &[u64]) -> Result<Vec<Candidate>, StoreError> {
        let _ = orders;
        Err(StoreError::Other("this store keeps no candidate index".into()))
    }
    /// The place of each of `ids` in the order documents were first stored, `None` for one not
    /// stored ([`Store::indexes`]).
    fn orders(&self, ids: &[&str]) -> Result<Vec<Option<u64>>, StoreError> {
        let _ = ids;
        Err(StoreError::Other("this store keeps no candidate index".into()))
    }
    /// At most `limit` documents stored without their candidate keys (a store that
    /// [`Store::indexes`], migrated from a layout that kept none), with their records: the
    /// server puts them again with their keys.
    fn unindexed(&self, limit: usize) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let _ = limit;
        Ok(Vec::new())
    }
}

/// The high half of a passage key in the candidate index. A passage collection's documents are
/// also found by their passage fingerprints ([`neardup::overlap::parts::fingerprints`], 32 bits
/// each), kept among their candidate keys with this tag above them, so that the index's rows,
/// their removal with the document and the indexing of documents stored without keys serve
/// the passage check too. A candidate key (a 64-bit hash) equal to a tagged one (about one in
/// 2^32 per pair) makes an extra candidate, which verification or alignment then drops.
pub const PASSAGE_KEY_TAG: u64 = 0x7061_7373 << 32; // "pass"

/// The keys a passage collection's document adds to its candidate keys (none for a document
/// without text): its passage fingerprints, tagged ([`PASSAGE_KEY_TAG`]).
pub fn passage_keys(spec: &OverlapSpec, text: Option<&str>) -> Vec<u64> {
    let Some(text) = text else { return Vec::new() };
    neardup::overlap::parts::fingerprints(spec, text)
        .map(|keys| keys.into_iter().map(|k| PASSAGE_KEY_TAG | u64::from(k)).collect())
        .unwrap_or_default()
}

/// A document [`Docs::candidates`] finds.
#[derive(Debug)]
pub struct Candidate {
    pub id: String,
    /// Its place in the order documents were first stored.
    pub order: u64,
    pub record: Vec<u8>,
}

/// A document to store: its id, its record, and the keys its collection's candidate search
/// finds it by ([`neardup::Engine::candidate_keys`]; kept by a store that [`Store::indexes`],
/// ignored by one that does not). `None` when they cannot be computed here (a copy of a
/// collection whose pipeline this build does not run): a server that runs it computes them
/// when it loads the collection ([`Docs::unindexed`]).
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub id: &'a str,
    pub record: &'a [u8],
    pub keys: Option<&'a [u64]>,
}

/// A table of documents in a write transaction.
pub trait DocsMut: Docs {
    /// Stores `row`; true if it replaced a stored document of its id.
    fn put(&mut self, row: Row<'_>) -> Result<bool, StoreError>;
    /// [`DocsMut::put`] of each of `rows` (ids all different), in one go where the store can;
    /// for each, whether it replaced a stored one.
    fn put_many(&mut self, rows: &[Row<'_>]) -> Result<Vec<bool>, StoreError> {
        rows.iter().map(|row| self.put(*row)).collect()
    }
    /// Removes `id`; true if it was stored.
    fn remove(&mut self, id: &str) -> Result<bool, StoreError>;
}

/// A write transaction.
pub trait WriteTxn {
    /// The settings (JSON) stored for collection `name`, read so that a concurrent delete of
    /// the collection cannot commit before this transaction does.
    fn settings(&self, name: &str) -> Result<Option<String>, StoreError>;
    /// [`WriteTxn::settings`] for a delete of the collection: in a shared store, every other
    /// writer of it has committed when this returns, and none starts until this transaction
    /// ends.
    fn settings_alone(&self, name: &str) -> Result<Option<String>, StoreError> {
        self.settings(name)
    }
    /// In a store several servers write to ([`Store::shared`]): makes this transaction, to its
    /// commit, the only one among the transactions that lock through this method that touches
    /// one of `keys` (candidate keys, as [`DocsMut::put`] takes them: a check locks those it
    /// looks up; a plain write of documents locks its ids only) or `ids`, and with `keys`
    /// `None` the only writer of collection `table`. A transaction locks all it reads and
    /// writes in one call (the store orders the locks so that two writers never wait for each
    /// other in a cycle); [`DocsMut::put_many`] and [`DocsMut::remove`] lock their ids
    /// themselves. Nothing in a store whose writers of a collection are one at a time already.
    fn lock(&self, table: &str, keys: Option<&[u64]>, ids: &[&str]) -> Result<(), StoreError> {
        let _ = (table, keys, ids);
        Ok(())
    }
    /// Stores a new collection: its settings and its empty table of documents.
    fn create_collection(&self, name: &str, settings: &str, table: &str) -> Result<(), StoreError>;
    /// Removes a collection: its settings and its table of documents.
    fn delete_collection(&self, name: &str, table: &str) -> Result<(), StoreError>;
    /// The documents of `table`, to read and write ([`StoreError::Gone`] if it does not exist).
    fn docs(&self, table: &str) -> Result<Box<dyn DocsMut + '_>, StoreError>;
    /// Commits, durably.
    fn commit(self: Box<Self>) -> Result<(), StoreError>;
}

/// A collection's settings, as stored (format 4: its job; formats 2 and 3 are read through
/// [`StoredInfo`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "StoredInfo")]
pub struct CollectionInfo {
    pub name: String,
    /// A random id given at creation (hex).
    pub incarnation: String,
    /// The collection's job, resolved ([`JobSpec::resolved`]): its pipeline, its search with
    /// every option given, and the passage check's settings when it keeps a passage index of
    /// its texts (created with `"passages"`; its texts are then stored, and the index is built
    /// from them at start).
    pub job: JobSpec,
    pub store_text: bool,
    /// `Pipeline::id()` when the collection was created: a build whose pipeline gives another id
    /// (another fingerprint format) must not serve it.
    pub pipeline_id: String,
}

/// Stored settings of any format: the job (format 4), or its settings one by one (formats 2
/// and 3), which are read into the job they ran.
#[derive(Deserialize)]
struct StoredInfo {
    name: String,
    incarnation: String,
    #[serde(default)]
    job: Option<JobSpec>,
    #[serde(default)]
    spec: Option<PipelineSpec>,
    #[serde(default)]
    method: Option<Method>,
    #[serde(default)]
    threshold: Option<f64>,
    #[serde(default)]
    hamming: Option<u32>,
    #[serde(default)]
    recall: Option<f64>,
    #[serde(default)]
    verify: Option<Verification>,
    #[serde(default)]
    banding: Option<(usize, usize)>,
    #[serde(default)]
    lsh_weights: Option<(f64, f64)>,
    store_text: bool,
    #[serde(default)]
    passages: Option<OverlapSpec>,
    pipeline_id: String,
}

impl TryFrom<StoredInfo> for CollectionInfo {
    type Error = String;

    fn try_from(s: StoredInfo) -> Result<CollectionInfo, String> {
        let job = match s.job {
            Some(job) => job,
            None => {
                let (Some(spec), Some(method), Some(threshold), Some(hamming)) =
                    (s.spec, s.method, s.threshold, s.hamming)
                else {
                    return Err("neither a job nor the settings of format 3".into());
                };
                let config = neardup::SearchConfig {
                    method,
                    threshold,
                    hamming,
                    recall: s.recall,
                    verification: s.verify,
                    banding: s.banding,
                    weights: s.lsh_weights,
                    ..neardup::SearchConfig::default()
                };
                JobSpec::resolved(spec, &config, SearchUse::Collection, s.passages)
            }
        };
        Ok(CollectionInfo {
            name: s.name,
            incarnation: s.incarnation,
            job,
            store_text: s.store_text,
            pipeline_id: s.pipeline_id,
        })
    }
}

impl CollectionInfo {
    /// The search settings, resolved (they were when the collection was made).
    pub fn config(&self) -> Result<neardup::SearchConfig, String> {
        self.job.search.resolve().map_err(|e| e.to_string())
    }

    /// The creation settings in the words of `PUT` (the option table's names): sent back, they
    /// create the collection again, or find it created with these settings.
    pub fn settings(&self) -> serde_json::Value {
        let s = &self.job.search;
        serde_json::json!({
            "spec": self.job.pipeline,
            "method": s.method,
            "threshold": s.threshold,
            "hamming": s.hamming,
            "verify": s.verify,
            "bands": s.bands,
            "rows": s.rows,
            "recall": s.recall,
            "lsh_weights": s.lsh_weights,
            "store_text": self.store_text,
            "passages": self.job.passages.as_ref().map_or(
                serde_json::json!(false),
                |p| serde_json::json!(neardup::overlap::OverlapOptions::of(p))
            ),
        })
    }

    /// The settings in which `requested` differs from `self`, each as `path: stored X,
    /// requested Y` in the words of `PUT` (`spec.minhash.num_perm: stored 128, requested 64`),
    /// in a stable order. The pipeline id, which follows from the spec, is named only when
    /// nothing else differs.
    pub fn differences(&self, requested: &CollectionInfo) -> Vec<String> {
        let settings = |i: &CollectionInfo| {
            let mut v = i.settings();
            v["pipeline_id"] = serde_json::json!(i.pipeline_id);
            v
        };
        let (stored, requested) = (settings(self), settings(requested));
        let mut out = Vec::new();
        diff("", &stored, &requested, &mut out);
        if out.len() > 1 {
            out.retain(|d| !d.starts_with("pipeline_id:"));
        }
        out
    }

    /// True when `other` asks for the same collection (everything but the incarnation).
    pub fn same_settings(&self, other: &CollectionInfo) -> bool {
        self.name == other.name && self.differences(other).is_empty()
    }
}

/// Appends to `out` every leaf where `a` and `b` differ, by its dotted path under `at`.
fn diff(at: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let path = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                let null = Value::Null;
                diff(&path, x.get(key).unwrap_or(&null), y.get(key).unwrap_or(&null), out);
            }
        }
        (a, b) if a != b => out.push(format!("{at}: stored {}, requested {}", short(a), short(b))),
        _ => {}
    }
}

/// A setting's value for a message: its JSON, cut at 80 characters (a spec may hold lists).
fn short(v: &serde_json::Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

/// A stored document. Its metadata is the JSON text the client sent, byte for byte (`1.10`
/// stays `1.10`, a 30-digit integer keeps its digits, keys keep their order); `null` when none.
#[derive(Debug, Clone)]
pub struct Record {
    pub sketch: DocSketch,
    pub metadata: Box<RawValue>,
    pub text: Option<String>,
}

/// The metadata of a document stored without any.
pub fn no_metadata() -> Box<RawValue> {
    RawValue::from_string("null".into()).expect("null is JSON")
}

/// The stored bytes of document `id`: its sketch, metadata and text, then the checksum (see
/// [`Record::decode`]).
pub fn encode_record(
    id: &str,
    sketch: &DocSketch,
    metadata: &RawValue,
    text: Option<&str>,
) -> Vec<u8> {
    let sketch = sketch.to_bytes();
    let meta = metadata.get().as_bytes();
    let mut out = Vec::with_capacity(24 + sketch.len() + meta.len() + text.map_or(0, str::len));
    out.extend_from_slice(&(sketch.len() as u32).to_le_bytes());
    out.extend_from_slice(&sketch);
    out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    out.extend_from_slice(meta);
    match text {
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&(t.len() as u32).to_le_bytes());
            out.extend_from_slice(t.as_bytes());
        }
        None => out.push(0),
    }
    seal(id, out)
}

/// Appends the checksum of `id` and `body` to `body`.
pub(crate) fn seal(id: &str, mut body: Vec<u8>) -> Vec<u8> {
    let sum = checksum(id, &body);
    body.extend_from_slice(&sum.to_le_bytes());
    body
}

/// The id is part of what is checked: a record moved under another key is damage too.
fn checksum(id: &str, body: &[u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(id.len() as u64).to_le_bytes());
    h.update(id.as_bytes());
    h.update(body);
    h.digest()
}

/// The body of the stored bytes of document `id`, once its checksum is found right.
fn checked_body<'a>(id: &str, bytes: &'a [u8]) -> Result<&'a [u8], String> {
    let Some(split) = bytes.len().checked_sub(8) else {
        return Err(format!("{} bytes, shorter than a checksum", bytes.len()));
    };
    let (body, sum) = bytes.split_at(split);
    let sum = u64::from_le_bytes(sum.try_into().expect("8 bytes"));
    if checksum(id, body) != sum {
        return Err("the record fails its checksum (the store is damaged)".into());
    }
    Ok(body)
}

impl Record {
    /// The stored bytes of this record as document `id`.
    pub fn encode(&self, id: &str) -> Vec<u8> {
        encode_record(id, &self.sketch, &self.metadata, self.text.as_deref())
    }

    /// Reads the stored bytes of document `id`, checking the checksum first. The error says
    /// what is damaged.
    pub fn decode(id: &str, bytes: &[u8]) -> Result<Record, String> {
        Record::decode_body(checked_body(id, bytes)?)
    }

    /// Reads only the sketch of the stored bytes of document `id` (what verification needs),
    /// checking the checksum first, as [`Record::decode`] does.
    pub fn decode_sketch(id: &str, bytes: &[u8]) -> Result<DocSketch, String> {
        let body = checked_body(id, bytes)?;
        let n = body.get(..4).ok_or("record truncated at byte 0")?;
        let n = u32::from_le_bytes(n.try_into().expect("4 bytes")) as usize;
        let sketch = body.get(4..).and_then(|b| b.get(..n)).ok_or("record truncated at byte 4")?;
        DocSketch::from_bytes(sketch)
    }

    /// Reads a record without a checksum (store format 2, and the body of format 3).
    pub(crate) fn decode_body(bytes: &[u8]) -> Result<Record, String> {
        let mut pos = 0usize;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let end = pos.checked_add(n).filter(|&e| e <= bytes.len());
            let end = end.ok_or_else(|| format!("record truncated at byte {pos}"))?;
            let out = &bytes[pos..end];
            pos = end;
            Ok(out)
        };
        let len = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize;
        let n = len(take(4)?);
        let sketch = DocSketch::from_bytes(take(n)?)?;
        let n = len(take(4)?);
        // Checked as JSON and kept as written (records of older builds hold re-serialized
        // values, JSON too).
        let metadata: Box<RawValue> =
            serde_json::from_slice(take(n)?).map_err(|e| e.to_string())?;
        let text = match take(1)?[0] {
            0 => None,
            _ => {
                let n = len(take(4)?);
                Some(String::from_utf8(take(n)?.to_vec()).map_err(|e| e.to_string())?)
            }
        };
        if pos != bytes.len() {
            return Err(format!("{} unexpected bytes at byte {pos}", bytes.len() - pos));
        }
        Ok(Record { sketch, metadata, text })
    }
}

/// A new incarnation id, never given before.
pub fn new_incarnation() -> String {
    neardup::unique_name()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> (DocSketch, Box<RawValue>) {
        let sketch = DocSketch::from_bytes(&DocSketch::default().to_bytes()).expect("sketch");
        let meta = r#"{"url": "https://example.com/a", "score": 1.10, "n": 123456789012345678901234567890}"#;
        (sketch, RawValue::from_string(meta.into()).expect("JSON"))
    }

    #[test]
    fn any_flipped_bit_or_other_id_fails_the_checksum() {
        let (sketch, meta) = record();
        let bytes = encode_record("doc-1", &sketch, &meta, Some("the stored text"));
        let back = Record::decode("doc-1", &bytes).expect("intact");
        assert_eq!(back.text.as_deref(), Some("the stored text"));
        // Byte for byte: spacing, `1.10` and every digit kept.
        assert_eq!(back.metadata.get(), meta.get());
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(Record::decode("doc-1", &damaged).is_err(), "bit {bit} flipped");
        }
        assert!(Record::decode("doc-2", &bytes).is_err(), "a record moved to another id");
        assert!(Record::decode("doc-1", &bytes[..5]).is_err());
    }

    /// Verification reads only the sketch, with the same checksum as a whole record.
    #[test]
    fn the_sketch_alone_is_the_records_and_checked_as_it() {
        use neardup::{Document, Engine, Pipeline, PipelineSpec, Scratch, SearchConfig};
        let pipeline = Pipeline::new(PipelineSpec::default()).expect("valid");
        let engine =
            Engine::new(std::sync::Arc::new(pipeline), SearchConfig::default()).expect("valid");
        let text = "the quick brown fox jumps over the lazy dog near the river bank today";
        let sketch = engine.sketch(Document::Text(text), text.len(), &mut Scratch::default());
        let meta = no_metadata();
        let bytes = encode_record("doc-1", &sketch, &meta, Some(text));
        let alone = Record::decode_sketch("doc-1", &bytes).expect("intact");
        let whole = Record::decode("doc-1", &bytes).expect("intact").sketch;
        assert_eq!(alone.to_bytes(), whole.to_bytes());
        assert_eq!(alone.to_bytes(), sketch.to_bytes());
        for bit in (0..bytes.len() * 8).step_by(7) {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(Record::decode_sketch("doc-1", &damaged).is_err(), "bit {bit} flipped");
        }
        assert!(Record::decode_sketch("doc-2", &bytes).is_err(), "a record moved to another id");
        assert!(Record::decode_sketch("doc-1", &bytes[..5]).is_err());
    }
}
