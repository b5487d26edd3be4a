//! The HTTP service behind `neardup serve`: collections of documents on an embedded store
//! (redb), searched with the same sketches and exact verification as `neardup dedup`.
//!
//! Glue only: routes translate JSON to [`neardup::Engine`] calls and errors to
//! `{"error": {"code", "message"}}` with the right status. Each collection keeps its index in
//! memory behind a read-write lock (many readers at once); writers are serialized per collection
//! by an async mutex, commit to redb first (durable before the reply) and then update the index
//! under a short write lock. At start the index is rebuilt from the stored sketches.

mod api;
mod store;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use neardup::{DedupConfig, Engine, Pipeline};
use redb::{Database, ReadableTable};
use rustc_hash::FxHashMap;

pub use api::router;
pub use store::STORE_FORMAT;

use store::{for_each_doc, CollectionInfo, COLLECTIONS, META};

/// Request limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
    /// Largest document (text or tokens) in bytes.
    pub max_doc_bytes: usize,
    /// Most documents in one batch.
    pub max_batch_docs: usize,
    /// Largest `top_k`.
    pub max_top_k: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 20,
            max_doc_bytes: 8 << 20,
            max_batch_docs: 10_000,
            max_top_k: 1_000,
        }
    }
}

/// How to run the service.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the store lives (created if missing).
    pub data_dir: PathBuf,
    /// A bearer token every request except `/v1/health` must carry.
    pub token: Option<String>,
    /// Request limits.
    pub limits: Limits,
}

/// An error opening the service.
#[derive(Debug)]
pub enum OpenError {
    /// The data directory or the store could not be opened.
    Store(String),
    /// The store was written by a build with another layout.
    Format {
        /// The store's version.
        found: u32,
    },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Store(m) => write!(f, "{m}"),
            OpenError::Format { found } => write!(
                f,
                "the store has format version {found}, this build reads {STORE_FORMAT}; \
                 use a matching build"
            ),
        }
    }
}

impl std::error::Error for OpenError {}

/// The in-memory side of a collection: the index and the id <-> key maps.
#[derive(Debug)]
struct Live {
    engine: Engine,
    key_of: FxHashMap<String, u64>,
    id_of: FxHashMap<u64, String>,
    next_key: u64,
}

impl Live {
    fn key_for(&mut self, id: &str) -> u64 {
        if let Some(&k) = self.key_of.get(id) {
            return k;
        }
        let k = self.next_key;
        self.next_key += 1;
        self.key_of.insert(id.to_string(), k);
        self.id_of.insert(k, id.to_string());
        k
    }

    fn forget(&mut self, id: &str) {
        if let Some(k) = self.key_of.remove(id) {
            self.id_of.remove(&k);
            self.engine.remove(k);
        }
    }
}

/// A collection: its settings, its index, and the lock that serializes its writers.
#[derive(Debug)]
struct Collection {
    info: CollectionInfo,
    table: String,
    /// `Err` when the stored spec does not match this build: the collection is listed but
    /// refuses requests.
    live: Result<RwLock<Live>, String>,
    writer: tokio::sync::Mutex<()>,
}

/// The shared state of the service.
#[derive(Debug)]
pub struct State {
    db: Database,
    collections: RwLock<BTreeMap<String, Arc<Collection>>>,
    token: Option<Vec<u8>>,
    limits: Limits,
    metrics: api::Metrics,
    /// Serializes creating and deleting collections.
    admin: tokio::sync::Mutex<()>,
}

/// Opens (or creates) the store in `config.data_dir` and rebuilds every collection's index,
/// logging progress on stderr.
pub fn open(config: Config) -> Result<Arc<State>, OpenError> {
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| OpenError::Store(format!("{}: {e}", config.data_dir.display())))?;
    let path = config.data_dir.join("neardup.redb");
    let db = Database::create(&path)
        .map_err(|e| OpenError::Store(format!("{}: {e}", path.display())))?;
    let store_err = |e: &dyn fmt::Display| OpenError::Store(format!("{}: {e}", path.display()));
    // The layout version: written once, checked on every start.
    let txn = db.begin_write().map_err(|e| store_err(&e))?;
    {
        let mut meta = txn.open_table(META).map_err(|e| store_err(&e))?;
        let found = meta.get("store_format").map_err(|e| store_err(&e))?.map(|v| v.value());
        match found {
            Some(v) if v != STORE_FORMAT => return Err(OpenError::Format { found: v }),
            Some(_) => {}
            None => {
                meta.insert("store_format", STORE_FORMAT).map_err(|e| store_err(&e))?;
            }
        }
        txn.open_table(COLLECTIONS).map_err(|e| store_err(&e))?;
    }
    txn.commit().map_err(|e| store_err(&e))?;

    let mut collections = BTreeMap::new();
    let read = db.begin_read().map_err(|e| store_err(&e))?;
    let infos: Vec<CollectionInfo> = {
        let table = read.open_table(COLLECTIONS).map_err(|e| store_err(&e))?;
        let mut out = Vec::new();
        for item in table.iter().map_err(|e| store_err(&e))? {
            let (_, v) = item.map_err(|e| store_err(&e))?;
            let info: CollectionInfo = serde_json::from_str(v.value())
                .map_err(|e| store_err(&format!("collection settings: {e}")))?;
            out.push(info);
        }
        out
    };
    for info in infos {
        let started = Instant::now();
        let table = store::docs_table(&info.name);
        let live = match build_engine(&info) {
            Ok(engine) => {
                let mut live = Live {
                    engine,
                    key_of: FxHashMap::default(),
                    id_of: FxHashMap::default(),
                    next_key: 0,
                };
                let mut n = 0u64;
                for_each_doc(&read, &table, |id, record| {
                    let key = live.key_for(id);
                    live.engine.insert(key, record.sketch);
                    n += 1;
                    if n.is_multiple_of(100_000) {
                        eprintln!("neardup serve: loading {:?}: {n} documents", info.name);
                    }
                    Ok(())
                })
                .map_err(|e| store_err(&format!("collection {:?}: {e}", info.name)))?;
                eprintln!(
                    "neardup serve: loaded collection {:?}: {n} documents in {:.2} s",
                    info.name,
                    started.elapsed().as_secs_f64()
                );
                Ok(RwLock::new(live))
            }
            Err(message) => {
                eprintln!("neardup serve: collection {:?} is unavailable: {message}", info.name);
                Err(message)
            }
        };
        collections.insert(
            info.name.clone(),
            Arc::new(Collection { info, table, live, writer: tokio::sync::Mutex::new(()) }),
        );
    }
    drop(read);
    Ok(Arc::new(State {
        db,
        collections: RwLock::new(collections),
        token: config.token.map(String::into_bytes),
        limits: config.limits,
        metrics: api::Metrics::default(),
        admin: tokio::sync::Mutex::new(()),
    }))
}

/// The engine for stored settings; an error when this build's pipeline differs from the one
/// the collection was made with.
fn build_engine(info: &CollectionInfo) -> Result<Engine, String> {
    let pipeline = Pipeline::new(info.spec.clone()).map_err(|e| e.to_string())?;
    if pipeline.id() != info.pipeline_id {
        return Err(format!(
            "its pipeline id is {}, this build computes {} for the same spec (another fingerprint \
             format): rebuild the collection with this build or serve it with a matching one",
            info.pipeline_id,
            pipeline.id()
        ));
    }
    Engine::new(Arc::new(pipeline), dedup_config(info)).map_err(|e| e.to_string())
}

fn dedup_config(info: &CollectionInfo) -> DedupConfig {
    DedupConfig {
        method: info.method,
        threshold: info.threshold,
        hamming: info.hamming,
        ..DedupConfig::default()
    }
}

/// True for an address that only this machine can reach.
pub fn is_loopback(addr: &std::net::SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// The data directory's store file, for messages.
pub fn store_path(data_dir: &Path) -> PathBuf {
    data_dir.join("neardup.redb")
}
