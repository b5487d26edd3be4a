//! The HTTP service behind `neardup serve`: collections of documents on an embedded store
//! (redb), searched with the same sketches and exact verification as `neardup dedup`.
//!
//! Glue only: routes translate JSON to [`neardup::Engine`] calls and errors to
//! `{"error": {"code", "message"}}` with the right status. Each collection keeps its index in
//! memory behind a read-write lock (many readers at once); writers are serialized per collection
//! by an async mutex, commit to redb first (durable before the reply) and then update the index
//! under a short write lock. At start the index is rebuilt from the stored sketches.
//!
//! Deletes are linearizable with inserts and searches: every write transaction checks that its
//! collection's incarnation is still the stored one, and a collection object that was deleted
//! (or replaced by a reload) is marked retired under its writer lock, so no write lands after
//! a delete. After a storage I/O error (a full disk) the store is closed, the service answers
//! 503 and `/v1/health` says why, and a background task reopens the store and reloads every
//! collection until it succeeds.

#![deny(missing_docs)]

mod api;
mod conn;
pub mod copy;
mod limits;
mod openapi;
mod store;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

use neardup::{DocSketch, Engine, NamedEngine, Pipeline};

pub use api::router;
pub use limits::{bounds, Limits, HEAVY_WAIT};
pub use store::{OLDEST_STORE_FORMAT, STORE_FORMAT};

use store::embedded::Embedded;
use store::{CollectionInfo, Record, Store, StoreError};

/// How to run the service.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the embedded store lives (created if missing), unless `store` names another.
    pub data_dir: PathBuf,
    /// The store, when not the embedded one in `data_dir`: a PostgreSQL URL
    /// (`postgres://USER@HOST/DB`; the password from the URL, `PGPASSWORD` or `.pgpass`).
    pub store: Option<String>,
    /// A bearer token every request except `/v1/health` must carry.
    pub token: Option<String>,
    /// Request limits.
    pub limits: Limits,
}

/// An error opening the service.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The data directory or the store could not be opened.
    Store(String),
    /// The store file is damaged (truncated, overwritten, appended to) or is not a store.
    Damaged {
        /// The store file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The store was written by a build with another layout.
    Format {
        /// The store's version.
        found: u32,
    },
    /// A limit is over its bound (see [`Limits::validate`]).
    Limits(String),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Store(m) | OpenError::Limits(m) => write!(f, "{m}"),
            OpenError::Damaged { path, message } => write!(
                f,
                "{}: the store is damaged: {message}; restore it from a backup, or move it away \
                 to start an empty store and insert the documents again",
                path.display()
            ),
            OpenError::Format { found } if *found > STORE_FORMAT => write!(
                f,
                "the store has format version {found}, made by a newer neardup; this build \
                 reads versions {OLDEST_STORE_FORMAT} to {STORE_FORMAT}: serve it with that \
                 build or a newer one"
            ),
            OpenError::Format { found } => write!(
                f,
                "the store has format version {found}, this build reads {OLDEST_STORE_FORMAT} \
                 to {STORE_FORMAT} (32-bit feature hashes; whitespace next to Han characters \
                 ignored): serve it with the build that wrote it, or start a new --data-dir and \
                 insert the documents again"
            ),
        }
    }
}

impl std::error::Error for OpenError {}

/// The in-memory side of a collection: the index with its ids (the library's, shared with the
/// Python `Index`).
type Live = NamedEngine;

/// Why a collection object no longer takes writes.
const LIVE: u8 = 0;
const DELETED: u8 = 1;
const RELOADED: u8 = 2;

/// A collection: its settings, its index, and the lock that serializes its writers.
#[derive(Debug)]
struct Collection {
    info: CollectionInfo,
    table: String,
    /// `Err` when the stored spec does not match this build: the collection is listed but
    /// refuses requests.
    live: Result<RwLock<Live>, String>,
    writer: tokio::sync::Mutex<()>,
    /// `check` requests waiting for their group commit (taken under the writer lock).
    checks: Mutex<Vec<api::PendingCheck>>,
    /// `LIVE`, `DELETED` or `RELOADED`; set under the writer lock.
    retired: AtomicU8,
    /// The largest metadata stored or brought by a request admitted to store it, in bytes
    /// (never lowered): what one match of a search or a check may carry, for the admission of
    /// requests by the memory their answers may take.
    largest_metadata: std::sync::atomic::AtomicUsize,
    /// True when the store keeps the candidate index ([`Store::indexes`]): `live` then holds
    /// no document (searches read their candidates from the store, passage checks their
    /// postings and sources' texts, [`store::passage_keys`]), only the settings it runs.
    indexed: bool,
    /// The documents the store counted when last asked (a store that indexes: what the
    /// collection's description and the metrics show).
    counted: std::sync::atomic::AtomicU64,
}

impl Collection {
    fn new(info: CollectionInfo, live: Result<RwLock<Live>, String>, indexed: bool) -> Collection {
        Collection {
            indexed,
            counted: std::sync::atomic::AtomicU64::new(0),
            table: store::docs_table(&info.name, &info.incarnation),
            info,
            live,
            writer: tokio::sync::Mutex::new(()),
            checks: Mutex::new(Vec::new()),
            retired: AtomicU8::new(LIVE),
            largest_metadata: std::sync::atomic::AtomicUsize::new(4),
        }
    }

    /// The documents stored: the index's count, or the store's when it keeps the index.
    fn documents(&self) -> Option<usize> {
        let live = self.live.as_ref().ok()?;
        if self.indexed {
            return Some(self.counted.load(Ordering::Relaxed) as usize);
        }
        Some(live.read().unwrap_or_else(|p| p.into_inner()).len())
    }

    /// Makes a stored document what memory holds of it: its sketch in the index, its text in
    /// the passage index (nothing when the store keeps the index).
    fn hold(&self, live: &mut Live, id: &str, sketch: DocSketch, text: Option<String>) {
        if !self.indexed {
            live.insert_with_text(id, sketch, text);
        }
    }

    /// Drops what memory holds of a removed document.
    fn drop_held(&self, live: &mut Live, id: &str) {
        if !self.indexed {
            live.remove(id);
        }
    }

    /// Counts metadata a request brings before it is admitted: from then on an answer of
    /// this collection (the request's own included) may carry it. Counting it only once
    /// stored let one batch that stores large metadata and matches it many times be admitted
    /// for a fraction of its answer.
    fn may_store_metadata<'a>(
        &self,
        metadata: impl IntoIterator<Item = Option<&'a serde_json::value::RawValue>>,
    ) {
        let largest = metadata.into_iter().flatten().map(|m| m.get().len()).max().unwrap_or(0);
        self.largest_metadata.fetch_max(largest, Ordering::Relaxed);
    }
}

/// The shared state of the service.
#[derive(Debug)]
pub struct State {
    /// The store; `None` while it is being reopened after an I/O error.
    db: RwLock<Option<Box<dyn Store>>>,
    /// Where the store is, to reopen it.
    location: Location,
    collections: RwLock<BTreeMap<String, Arc<Collection>>>,
    token: Option<Vec<u8>>,
    limits: Limits,
    metrics: api::Metrics,
    /// Serializes creating and deleting collections.
    admin: tokio::sync::Mutex<()>,
    /// Why the service is unhealthy (a storage I/O error), until the store is reopened.
    unhealthy: Mutex<Option<String>>,
    /// Stored records found damaged (failing their checksum), at start or when read.
    damage: Mutex<Damage>,
    /// The address [`serve`] listens on: on loopback, requests must name it in `Host`.
    listening: OnceLock<std::net::SocketAddr>,
    /// Turns for heavy requests (`limits.max_concurrent`), and how many wait for one.
    turns: Arc<tokio::sync::Semaphore>,
    waiting: std::sync::atomic::AtomicUsize,
    /// `limits.max_memory_bytes` in KiB permits, taken by heavy requests for what they may need.
    memory: Arc<tokio::sync::Semaphore>,
}

/// Damaged records seen: how many, and the first few, for `/v1/health`.
#[derive(Debug, Default, Clone)]
pub struct Damage {
    /// Damaged records seen (each counted once).
    pub records: u64,
    /// The first of them, as `collection/id: what`.
    pub examples: Vec<String>,
    seen: std::collections::HashSet<String>,
}

/// How many damaged records `/v1/health` names.
const DAMAGE_EXAMPLES: usize = 10;

impl Damage {
    fn add(&mut self, collection: &str, id: &str, what: &str) {
        let key = format!("{collection}/{id}");
        // Bounded: past the examples, a record is only counted.
        if self.seen.len() < 100_000 && !self.seen.insert(key.clone()) {
            return;
        }
        self.records += 1;
        if self.examples.len() < DAMAGE_EXAMPLES {
            self.examples.push(format!("{key}: {what}"));
        }
    }
}

/// Opens (or creates) the store in `config.data_dir` and rebuilds every collection's index,
/// logging progress on stderr.
pub fn open(config: Config) -> Result<Arc<State>, OpenError> {
    config.limits.validate().map_err(OpenError::Limits)?;
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| OpenError::Store(format!("{}: {e}", config.data_dir.display())))?;
    let location = match config.store {
        Some(url) if store::postgres::is_postgres_url(&url) => Location::Postgres(url),
        Some(other) => {
            return Err(OpenError::Store(format!(
                "--store {}: not a store this build knows; give a PostgreSQL URL \
                 (postgres://USER@HOST/DB), or leave it out for the embedded store in --data-dir",
                store::postgres::redact(&other)
            )))
        }
        None => Location::Embedded(config.data_dir.join("neardup.redb")),
    };
    let db = location.open(&config.limits)?;
    let mut damage = Damage::default();
    let collections = load_collections(&*db, &location, &mut damage, &config.limits)?;
    Ok(Arc::new(State {
        db: RwLock::new(Some(db)),
        location,
        collections: RwLock::new(collections),
        token: config.token.map(String::into_bytes),
        limits: config.limits,
        metrics: api::Metrics::default(),
        admin: tokio::sync::Mutex::new(()),
        unhealthy: Mutex::new(None),
        damage: Mutex::new(damage),
        listening: OnceLock::new(),
        turns: Arc::new(tokio::sync::Semaphore::new(config.limits.max_concurrent)),
        waiting: std::sync::atomic::AtomicUsize::new(0),
        memory: Arc::new(tokio::sync::Semaphore::new(config.limits.max_memory_bytes >> 10)),
    }))
}

/// Where the store is.
#[derive(Debug, Clone)]
pub enum Location {
    /// The embedded store's file.
    Embedded(PathBuf),
    /// A PostgreSQL URL (never shown as given: its password is left out).
    Postgres(String),
}

impl Location {
    /// Opens the store (see [`open`]).
    pub fn open(&self, limits: &Limits) -> Result<Box<dyn Store>, OpenError> {
        Ok(match self {
            Location::Embedded(path) => Box::new(Embedded::open(path, limits.store_cache_bytes)?),
            Location::Postgres(url) => {
                Box::new(store::postgres::Postgres::open(url, limits.store_connections)?)
            }
        })
    }

    /// The store as messages name it (a file, or the URL without its password).
    pub fn shown(&self) -> PathBuf {
        match self {
            Location::Embedded(path) => {
                // A connection string given where a directory goes is shown without its password.
                PathBuf::from(store::postgres::redact(&path.display().to_string()))
            }
            Location::Postgres(url) => PathBuf::from(store::postgres::redact(url)),
        }
    }
}

/// Serves the API on `listener` until `shutdown` resolves, then lets in-flight requests finish.
///
/// While it serves, a task reopens the store after a storage I/O error (redb then refuses
/// everything until reopened; the service answers 503 meanwhile) and reloads every collection,
/// once a second until it works: whoever embeds the service gets the recovery `neardup serve`
/// has. It stops with the server.
///
/// On a loopback address, a request must name the server in its `Host` header (`localhost`,
/// `127.0.0.1`, `[::1]` or the address itself, with its port): a page of another site whose
/// name an attacker rebinds to 127.0.0.1 (DNS rebinding) sends its own name and is refused.
pub async fn serve(
    state: Arc<State>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    // Set once: a second `serve` of the same state keeps the first address.
    let _ = state.listening.set(addr);
    // Its connections answer hyper's own refusals (malformed heads) in JSON too.
    let listener = conn::Listener::new(listener, state.limits.max_uri_bytes);
    let recovering = state.clone();
    let recovery = tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            if recovering.unhealthy().is_some() {
                recovering.recover().await;
            }
        }
    });
    let served = axum::serve(listener, router(state)).with_graceful_shutdown(shutdown).await;
    recovery.abort();
    served
}

/// Runs `f`, turning a panic inside it (redb asserts on some damage instead of answering an
/// error) into `OpenError::Damaged`, without printing the panic: the store's open and the
/// collections' load run in it.
pub(crate) fn damage_as_error<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, OpenError>,
) -> Result<T, OpenError> {
    quiet_panics::install();
    let result = quiet_panics::QUIET.with(|q| {
        q.set(true);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        q.set(false);
        r
    });
    result.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("an internal check failed");
        Err(OpenError::Damaged {
            path: path.to_path_buf(),
            message: format!("the store's own consistency check failed ({message})"),
        })
    })
}

/// A panic hook that stays silent on the thread that asked for it (while opening the store),
/// and is the default hook everywhere else.
mod quiet_panics {
    use std::cell::Cell;
    use std::sync::Once;

    thread_local! {
        pub static QUIET: Cell<bool> = const { Cell::new(false) };
    }

    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !QUIET.with(Cell::get) {
                    default(info);
                }
            }));
        });
    }
}

/// Reads every collection's settings and rebuilds its index from the stored sketches. A record
/// that fails its checksum is left out of the index and counted in `damage`.
fn load_collections(
    db: &dyn Store,
    location: &Location,
    damage: &mut Damage,
    limits: &Limits,
) -> Result<BTreeMap<String, Arc<Collection>>, OpenError> {
    let path = location.shown();
    damage_as_error(&path, || load_collections_inner(db, &path, damage, limits))
}

fn load_collections_inner(
    db: &dyn Store,
    path: &Path,
    damage: &mut Damage,
    limits: &Limits,
) -> Result<BTreeMap<String, Arc<Collection>>, OpenError> {
    let store_err = |e: &dyn fmt::Display| OpenError::Store(format!("{}: {e}", path.display()));
    let mut collections = BTreeMap::new();
    if db.indexes() {
        let read = db.read().map_err(|e| store_err(&e))?;
        let listed = read.collections().map_err(|e| store_err(&e))?;
        drop(read);
        for (name, settings) in listed {
            let Ok(info) = serde_json::from_str::<CollectionInfo>(&settings) else { continue };
            let n = index_unindexed(db, &info).map_err(|e| store_err(&e))?;
            if n > 0 {
                eprintln!("neardup serve: indexed {n} documents of {name:?} in the store");
            }
        }
    }
    let read = db.read().map_err(|e| store_err(&e))?;
    let infos: Vec<CollectionInfo> = read
        .collections()
        .map_err(|e| store_err(&e))?
        .into_iter()
        .map(|(_, settings)| {
            serde_json::from_str(&settings).map_err(|e| OpenError::Damaged {
                path: path.to_path_buf(),
                message: format!("collection settings: {e}"),
            })
        })
        .collect::<Result<_, _>>()?;
    for info in infos {
        let c = load_collection(&*read, info, damage, limits, db.indexes())
            .map_err(|e| store_err(&e))?;
        collections.insert(c.info.name.clone(), Arc::new(c));
    }
    Ok(collections)
}

/// A collection and its index, rebuilt from the documents `read` holds of it. A record that
/// fails its checksum is left out of the index and counted in `damage`. The collection's
/// version (a shared store's) is the one of the same snapshot.
///
/// In a store that keeps the candidate index ([`Store::indexes`]) memory holds no document:
/// only the texts of a collection that keeps passages are read (into its passage index).
fn load_collection(
    read: &dyn store::ReadTxn,
    info: CollectionInfo,
    damage: &mut Damage,
    limits: &Limits,
    indexed: bool,
) -> Result<Collection, String> {
    let started = Instant::now();
    let table = store::docs_table(&info.name, &info.incarnation);
    let mut largest = 4usize; // `null`
    let mut counted = 0;
    let live = match build_engine(&info) {
        Ok(engine) => {
            let mut live = new_live(&info, engine, limits, indexed)
                .map_err(|e| format!("collection {:?}: {e}", info.name))?;
            let (mut n, mut bad) = (0u64, 0u64);
            let docs = match read.docs(&table) {
                Ok(docs) => Some(docs),
                Err(StoreError::Gone) => None,
                Err(e) => return Err(format!("collection {:?}: {e}", info.name)),
            };
            let mut visit = |id: &str, bytes: &[u8]| {
                match Record::decode(id, bytes) {
                    Ok(record) => {
                        largest = largest.max(record.metadata.get().len());
                        live.insert_with_text(id, record.sketch, record.text);
                        n += 1;
                    }
                    Err(what) => {
                        damage.add(&info.name, id, &what);
                        bad += 1;
                    }
                }
                if (n + bad).is_multiple_of(100_000) {
                    eprintln!("neardup serve: loading {:?}: {n} documents", info.name);
                }
                Ok(())
            };
            if let Some(docs) = docs {
                if indexed {
                    let count =
                        docs.count().map_err(|e| format!("collection {:?}: {e}", info.name))?;
                    counted = count.unwrap_or(0);
                }
                if !indexed {
                    docs.for_each(&mut visit)
                        .map_err(|e| format!("collection {:?}: {e}", info.name))?;
                }
            }
            if indexed {
                n = counted;
            }
            eprintln!(
                "neardup serve: loaded collection {:?}: {n} documents in {:.2} s",
                info.name,
                started.elapsed().as_secs_f64()
            );
            if bad > 0 {
                eprintln!(
                    "neardup serve: collection {:?}: {bad} damaged records left out (they fail \
                     their checksum); /v1/health lists them",
                    info.name
                );
            }
            Ok(RwLock::new(live))
        }
        Err(message) => {
            eprintln!("neardup serve: collection {:?} is unavailable: {message}", info.name);
            Err(message)
        }
    };
    let c = Collection::new(info, live, indexed);
    c.largest_metadata.store(largest, Ordering::Relaxed);
    c.counted.store(counted, Ordering::Relaxed);
    Ok(c)
}

/// The keys a store that keeps the index finds a document by: its candidate keys, and a
/// passage collection's document its passage keys too ([`store::passage_keys`]).
fn stored_keys(
    engine: &Engine,
    passages: Option<&neardup::overlap::OverlapSpec>,
    sketch: &DocSketch,
    text: Option<&str>,
) -> Vec<u64> {
    let mut keys = engine.candidate_keys(sketch);
    if let Some(spec) = passages {
        keys.extend(store::passage_keys(spec, text));
    }
    keys
}

/// [`stored_keys`] of a stored record: a damaged record gets none (it matches nothing, and is
/// reported when read).
fn record_keys(info: &CollectionInfo, engine: &Engine, id: &str, record: &[u8]) -> Vec<u64> {
    match &info.job.passages {
        None => {
            Record::decode_sketch(id, record).map(|s| engine.candidate_keys(&s)).unwrap_or_default()
        }
        Some(spec) => Record::decode(id, record)
            .map(|r| stored_keys(engine, Some(spec), &r.sketch, r.text.as_deref()))
            .unwrap_or_default(),
    }
}

/// In a store that keeps the candidate index: computes and stores the candidate keys of the
/// documents of `info` stored without them (a database migrated from schema 1, a copy made by
/// a build that could not run the collection's pipeline), a batch per transaction. Returns
/// how many documents it indexed. A collection this build cannot run is left as it is.
fn index_unindexed(db: &dyn Store, info: &CollectionInfo) -> Result<u64, StoreError> {
    const BATCH: usize = 2_000;
    let Ok(engine) = build_engine(info) else { return Ok(0) };
    let table = store::docs_table(&info.name, &info.incarnation);
    let mut done = 0u64;
    loop {
        // Looked for first in a snapshot: a collection with nothing to index is not locked.
        let read = db.read()?;
        match read.docs(&table) {
            Ok(docs) if !docs.unindexed(1)?.is_empty() => {}
            Ok(_) | Err(StoreError::Gone) => return Ok(done),
            Err(e) => return Err(e),
        }
        drop(read);
        let txn = db.write()?;
        // Held against a delete of the collection, and the collection locked alone before
        // its unindexed documents are read: a write through another server of one of them
        // must not be undone by writing back what was read before it.
        if txn.settings(&info.name)?.is_none() {
            return Ok(done);
        }
        txn.lock(&table, None, &[])?;
        let mut docs = txn.docs(&table)?;
        let batch = docs.unindexed(BATCH)?;
        if batch.is_empty() {
            return Ok(done);
        }
        let keys: Vec<Vec<u64>> =
            batch.iter().map(|(id, record)| record_keys(info, &engine, id, record)).collect();
        let rows: Vec<store::Row<'_>> = batch
            .iter()
            .zip(&keys)
            .map(|((id, record), keys)| store::Row { id, record, keys: Some(keys) })
            .collect();
        docs.put_many(&rows)?;
        drop(docs);
        txn.commit()?;
        done += batch.len() as u64;
        if done.is_multiple_of(100_000) {
            eprintln!("neardup serve: indexing {:?} in the store: {done} documents", info.name);
        }
    }
}

impl State {
    /// Why the service is unhealthy, if it is.
    pub fn unhealthy(&self) -> Option<String> {
        self.unhealthy.lock().map(|u| u.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The damaged records seen so far.
    pub fn damage(&self) -> Damage {
        self.damage.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Counts a record of `collection` that failed its checksum when read.
    fn record_damage(&self, collection: &str, id: &str, what: &str) {
        let mut d = self.damage.lock().unwrap_or_else(|p| p.into_inner());
        if d.records == 0 {
            eprintln!("neardup serve: damaged record {collection}/{id}: {what}");
        }
        d.add(collection, id, what);
    }

    fn set_unhealthy(&self, reason: String) {
        let mut u = self.unhealthy.lock().unwrap_or_else(|p| p.into_inner());
        if u.is_none() {
            eprintln!("neardup serve: unhealthy: {reason}; reopening the store");
        }
        *u = Some(reason);
    }

    /// Reopens the store after an I/O error and reloads every collection from it (memory may
    /// lack a commit whose acknowledgement failed). Waits for every writer; returns whether the
    /// service is healthy again.
    pub async fn recover(self: &Arc<State>) -> bool {
        if self.unhealthy().is_none() {
            return true;
        }
        let _admin = self.admin.lock().await;
        let old: Vec<Arc<Collection>> =
            self.collections.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
        let mut writers = Vec::with_capacity(old.len());
        for c in &old {
            writers.push(c.writer.lock().await);
        }
        let (st, retire) = (self.clone(), old.clone());
        let result = tokio::task::spawn_blocking(move || -> Result<(), String> {
            let mut db = st.db.write().unwrap_or_else(|p| p.into_inner());
            // Closed first: redb must be reopened after an I/O error (a PostgreSQL store's
            // connections are made anew).
            *db = None;
            let fresh = st.location.open(&st.limits).map_err(|e| e.to_string())?;
            let mut damage = Damage::default();
            let collections = load_collections(&*fresh, &st.location, &mut damage, &st.limits)
                .map_err(|e| e.to_string())?;
            *st.damage.lock().unwrap_or_else(|p| p.into_inner()) = damage;
            for c in &retire {
                c.retired.store(RELOADED, Ordering::SeqCst);
            }
            *st.collections.write().unwrap_or_else(|p| p.into_inner()) = collections;
            *db = Some(fresh);
            Ok(())
        })
        .await;
        drop(writers);
        match result {
            Ok(Ok(())) => {
                *self.unhealthy.lock().unwrap_or_else(|p| p.into_inner()) = None;
                eprintln!("neardup serve: the store was reopened; healthy again");
                true
            }
            Ok(Err(e)) => {
                self.set_unhealthy(format!("reopening the store failed: {e}"));
                false
            }
            Err(e) => {
                self.set_unhealthy(format!("reopening the store failed: {e}"));
                false
            }
        }
    }
}

/// The engine for stored settings; an error when this build's pipeline differs from the one
/// the collection was made with.
fn build_engine(info: &CollectionInfo) -> Result<Engine, String> {
    let pipeline = Pipeline::new(info.job.pipeline.clone()).map_err(|e| e.to_string())?;
    if pipeline.id() != info.pipeline_id {
        return Err(format!(
            "its pipeline id is {}, this build computes {} for the same spec (another fingerprint \
             format): rebuild the collection with this build or serve it with a matching one",
            info.pipeline_id,
            pipeline.id()
        ));
    }
    // The sketches stay in the store: verification reads each candidate's from it, and the
    // memory a document takes is its index entries and id (BENCHMARKS.md, "neardup serve").
    Engine::new(Arc::new(pipeline), info.config()?)
        .map(Engine::with_external_sketches)
        .map_err(|e| e.to_string())
}

/// The in-memory side of a collection: its engine (scanning at most `--max-scan-docs` below
/// its threshold), with a passage index when it keeps one and the store does not keep the
/// index (`indexed`: its passage checks read the store; the settings are checked all the same).
fn new_live(
    info: &CollectionInfo,
    mut engine: Engine,
    limits: &Limits,
    indexed: bool,
) -> Result<Live, String> {
    engine.set_scan_limit(limits.max_scan_docs);
    let live = Live::new(engine);
    match &info.job.passages {
        Some(spec) if indexed => spec.validate().map(|()| live).map_err(|e| e.to_string()),
        Some(spec) => live.with_passages(spec.clone()).map_err(|e| e.to_string()),
        None => Ok(live),
    }
}

/// True for an address that only this machine can reach.
pub fn is_loopback(addr: &std::net::SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// A store URL as it may be shown (its password left out).
pub fn shown_store(url: &str) -> String {
    store::postgres::redact(url)
}

/// The data directory's store file, for messages.
pub fn store_path(data_dir: &Path) -> PathBuf {
    data_dir.join("neardup.redb")
}
