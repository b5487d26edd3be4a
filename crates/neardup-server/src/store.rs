//! The embedded store (redb): collection settings and documents, and their byte layouts.
//!
//! Tables: `meta` (`store_format` -> version), `collections` (name -> settings as JSON) and one
//! `docs/NAME/INCARNATION` table per collection (id -> record). The incarnation is a random id
//! given at creation: a collection deleted and created again under the same name gets a new
//! table, and every write transaction first checks that its collection's incarnation is still
//! the one in `collections`, so a write that raced a delete can never land in the table of the
//! next collection of that name (nor resurrect the deleted one after a restart).
//!
//! A record is the document's sketch (what the index is rebuilt from at start), its metadata
//! (JSON) and, if the collection keeps them, its text. Every write is one redb transaction
//! committed with immediate durability (fsync), so an acknowledged write survives a crash and a
//! batch is all or nothing.

use neardup::{DocSketch, Method, PipelineSpec};
use redb::{ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

/// Version of the store layout; a store of another version is refused at start. Version 2:
/// 32-bit feature hashes in sketches, per-incarnation document tables, and the pipelines of
/// fingerprint format 2.
pub const STORE_FORMAT: u32 = 2;

pub const META: TableDefinition<'static, &str, u32> = TableDefinition::new("meta");
pub const COLLECTIONS: TableDefinition<'static, &str, &str> = TableDefinition::new("collections");

/// The table of one incarnation of a collection's documents.
pub fn docs_table(name: &str, incarnation: &str) -> String {
    format!("docs/{name}/{incarnation}")
}

pub fn docs_def(table: &str) -> TableDefinition<'_, &'static str, &'static [u8]> {
    TableDefinition::new(table)
}

/// A collection's settings, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CollectionInfo {
    pub name: String,
    /// A random id given at creation (hex).
    pub incarnation: String,
    pub spec: PipelineSpec,
    pub method: Method,
    pub threshold: f64,
    pub hamming: u32,
    /// The recall target of the LSH banding (MinHash).
    pub recall: Option<f64>,
    pub store_text: bool,
    /// `Pipeline::id()` when the collection was created: a build whose pipeline gives another id
    /// (another fingerprint format) must not serve it.
    pub pipeline_id: String,
}

impl CollectionInfo {
    /// True when `other` asks for the same collection (everything but the incarnation).
    pub fn same_settings(&self, other: &CollectionInfo) -> bool {
        let strip = |i: &CollectionInfo| {
            let mut v = serde_json::to_value(i).ok();
            if let Some(o) = v.as_mut().and_then(|v| v.as_object_mut()) {
                o.remove("incarnation");
            }
            v
        };
        strip(self) == strip(other)
    }
}

/// A stored document.
#[derive(Debug, Clone)]
pub struct Record {
    pub sketch: DocSketch,
    pub metadata: serde_json::Value,
    pub text: Option<String>,
}

/// The stored bytes of a document: its sketch, metadata and text (see [`Record::decode`]).
pub fn encode_record(
    sketch: &DocSketch,
    metadata: &serde_json::Value,
    text: Option<&str>,
) -> Vec<u8> {
    let sketch = sketch.to_bytes();
    let meta = serde_json::to_vec(metadata).expect("JSON values serialize");
    let mut out = Vec::with_capacity(16 + sketch.len() + meta.len() + text.map_or(0, str::len));
    out.extend_from_slice(&(sketch.len() as u32).to_le_bytes());
    out.extend_from_slice(&sketch);
    out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    out.extend_from_slice(&meta);
    match text {
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&(t.len() as u32).to_le_bytes());
            out.extend_from_slice(t.as_bytes());
        }
        None => out.push(0),
    }
    out
}

impl Record {
    pub fn encode(&self) -> Vec<u8> {
        encode_record(&self.sketch, &self.metadata, self.text.as_deref())
    }

    pub fn decode(bytes: &[u8]) -> Result<Record, String> {
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
        let metadata = serde_json::from_slice(take(n)?).map_err(|e| e.to_string())?;
        let text = match take(1)?[0] {
            0 => None,
            _ => {
                let n = len(take(4)?);
                Some(String::from_utf8(take(n)?.to_vec()).map_err(|e| e.to_string())?)
            }
        };
        Ok(Record { sketch, metadata, text })
    }
}

/// Reads every document of a table, calling `visit(id, record)`.
pub fn for_each_doc(
    txn: &redb::ReadTransaction,
    table: &str,
    mut visit: impl FnMut(&str, Record) -> Result<(), String>,
) -> Result<(), String> {
    let t = match txn.open_table(docs_def(table)) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    for item in t.iter().map_err(|e| e.to_string())? {
        let (k, v) = item.map_err(|e| e.to_string())?;
        let record =
            Record::decode(v.value()).map_err(|e| format!("document {:?}: {e}", k.value()))?;
        visit(k.value(), record)?;
    }
    Ok(())
}

/// A new random incarnation id: the clock, the process and a counter, hashed.
pub fn new_incarnation() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed =
        format!("{nanos}/{}/{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(seed.as_bytes()))
}
