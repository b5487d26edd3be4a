//! The store on PostgreSQL: the same layout as the embedded store, in tables of a database the
//! operator already runs (and backs up, and replicates), shared by any number of servers.
//!
//! - `neardup_meta` (key -> value): `store_format` (the records' layout, as the embedded
//!   store's) and `schema` (these tables' version, [`SCHEMA`]); a database of a newer schema
//!   is refused by name.
//! - `neardup_collections` (name -> its table of documents, its settings as JSON).
//! - `neardup_docs` ((table, id) -> record): the records byte for byte as the embedded store
//!   keeps them, checksum included, so damage is found the same way.
//! - `neardup_counts` ((table, shard) -> a part of the collection's count).
//!
//! Many servers, one answer, and no writer waiting for another it cannot collide with. Every
//! write transaction reads its collection's row `FOR SHARE` (a delete of the collection takes
//! it `FOR UPDATE`, so it waits for them, and a write that comes after it finds the collection
//! gone) and then locks, to its
//! commit, what it reads and writes by PostgreSQL's advisory locks ([`WriteTxn::lock`]): the
//! ids it writes, and a `check` the candidate keys it looks its near-copies up by, in sorted
//! order, all at once. Two near-copies share a candidate key, so of two checked at once
//! through two servers the second decided waits for the first and sees it; checks and writes
//! of documents that share no key and no id run side by side. A transaction that would take
//! more than [`MAX_FINE_LOCKS`] of them, or that reads the whole collection (a check below the
//! index's threshold scans), takes its collection's lock alone instead (every other writer
//! holds it shared). Each collection counts its documents in [`COUNT_SHARDS`] rows, a
//! transaction adding to one of them, so that counting serializes no writers either.
//!
//! The candidate index is the database's too (schema 2): `neardup_bands` (key -> the
//! document's `seq`, a b-tree) holds each document's candidate keys
//! ([`neardup::Engine::candidate_keys`]: its LSH band keys, its SimHash tables' keys), salted
//! by its collection's table so that collections never share a key, and `neardup_docs` keeps
//! them too (to remove them with the document) with the document's `seq` (first stored, kept
//! by an upsert: the order ties are broken in). A search reads its candidates, records and
//! all, in one query through the band index; a server holds no document in memory, so its
//! memory does not grow with the collections. A passage collection's documents are found by
//! their passage fingerprints too (schema 3: tagged keys among their keys,
//! [`super::PASSAGE_KEY_TAG`]): a passage check reads each query key's first holders
//! ([`Docs::holders`]) and the texts of the sources it aligns ([`Docs::by_order`]) from one
//! snapshot.
//!
//! A read transaction is `REPEATABLE READ, READ ONLY` (one snapshot for all it reads); a write
//! transaction is `READ COMMITTED` (each statement reads what was committed before it: a check
//! that waited for a lock sees what the transaction it waited for wrote) and commits with PostgreSQL's durability (`synchronous_commit`). The client is
//! tokio-postgres on a runtime of the store's own (one thread), behind a bounded pool
//! (deadpool), so the store is called from any blocking thread. Errors of the connection (the
//! database away or restarting) make the store unavailable: the service answers 503 with
//! `Retry-After` and reopens the store until the database is back.

use std::fmt;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

use super::{
    Candidate, Docs, DocsMut, ReadTxn, Row, Store, StoreError, Value, Visit, WriteTxn, STORE_FORMAT,
};
use crate::OpenError;

/// Version of the tables. Version 1: `neardup_meta`, `neardup_collections` (with versions),
/// `neardup_docs` (stamped with versions), `neardup_removed`. Version 2: the candidate index
/// (`neardup_bands`; each document's `seq` and candidate keys; each collection's count). A
/// version 1 database is migrated when opened; its documents' keys are computed by the server
/// that loads their collection ([`Docs::unindexed`]).
/// Version 3: a passage collection's documents are found by their passage fingerprints too
/// (tagged keys among their candidate keys, [`super::PASSAGE_KEY_TAG`]); a version 2
/// database's passage collections are indexed again when a server loads them.
/// Version 4: no collection-wide write lock. The collections' versions, the documents' version
/// stamps and `neardup_removed` are gone (no server reads them: the database holds the index),
/// each collection's count is kept in `neardup_counts`, and writers lock what they touch
/// ([`WriteTxn::lock`]).
pub const SCHEMA: i64 = 4;

/// The advisory lock taken, per transaction, while the tables are created or migrated.
const SCHEMA_LOCK: i64 = 0x6e65_6172_6475_7002; // "neardup" 2

/// The most ids and keys a write transaction locks one by one; one that would lock more takes
/// its collection's lock alone. PostgreSQL keeps every transaction's locks in one table of
/// `max_locks_per_transaction` x `max_connections` entries (64 x 100 by default).
pub const MAX_FINE_LOCKS: usize = 1024;

/// The rows each collection's count is kept in: two writers add to the same one (and the
/// second waits for the first's commit) once in this many.
pub const COUNT_SHARDS: u64 = 64;

/// What a collection's own lock is salted with, beside its keys and ids.
const COLLECTION_LOCK: u64 = 0x6e65_6172_6475_7063; // "neardupc"

/// Said at the start of every transaction, in the same trip: the store's statements are
/// lookups through its indexes (a whole collection, when one is read, through the index of
/// its documents' ids), never scans or hash joins of whole tables.
/// PostgreSQL's planner costs them by the tables' statistics, and a collection loaded faster
/// than autovacuum analyzes it (a million documents in two minutes, two servers) had none for
/// the band index: each search was then estimated at a million rows, compiled by the JIT
/// (about 100 ms a statement: 270 searches/s instead of 3,000) and in one run given parallel
/// workers that scanned for seconds, until the next `ANALYZE`. (Per transaction, not per
/// connection: a pooler such as pgbouncer refuses the startup options.)
const LOOKUPS: &str = "SET LOCAL jit = off; SET LOCAL max_parallel_workers_per_gather = 0; \
                       SET LOCAL enable_seqscan = off; SET LOCAL enable_hashjoin = off; \
                       SET LOCAL enable_mergejoin = off";

/// How long a request waits for a connection of the pool, or for a new connection, before the
/// store is reported unavailable.
const WAIT: Duration = Duration::from_secs(10);

/// The store on PostgreSQL.
pub struct Postgres {
    /// `None` only while dropped: the runtime is shut down in the background, as a store may
    /// be dropped on an async worker (where blocking on it would panic).
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool,
    /// The URL without its password, for messages.
    shown: String,
}

impl fmt::Debug for Postgres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Postgres").field("url", &self.shown).finish()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// `url` as it may be shown: its password, if any, replaced by `***`, wherever it is: in the
/// user part (up to the first `@`, as tokio-postgres reads it) or as a `password` parameter of
/// the query or of a key-value string (`host=h password=p`; a key written with percent escapes
/// too).
pub fn redact(url: &str) -> String {
    let out = match url.find("://") {
        Some(i) => {
            let (head, rest) = url.split_at(i + 3);
            match rest.find('@').and_then(|at| rest[..at].find(':').map(|colon| (colon, at))) {
                Some((colon, at)) => format!("{head}{}:***{}", &rest[..colon], &rest[at..]),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    };
    redact_params(&out)
}

/// Replaces the value of every `password=` parameter (separated by `?`, `&` or whitespace).
fn redact_params(text: &str) -> String {
    let separator = |c: char| c == '?' || c == '&' || c.is_whitespace();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(separator).unwrap_or(rest.len());
        let (token, after) = rest.split_at(end);
        match token.split_once('=') {
            Some((key, _)) if percent_decoded(key).eq_ignore_ascii_case("password") => {
                out.push_str(key);
                out.push_str("=***");
            }
            _ => out.push_str(token),
        }
        let mut chars = after.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True for a store location that names PostgreSQL.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// Whether an error means the database cannot be reached now (the connection is gone, the
/// server shuts down or starts, is out of disk or broken): the store is reopened.
fn unavailable(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        None => true, // I/O, a broken connection: no answer from the server at all
        Some(code) => {
            matches!(&code.code()[..2], "08" | "57" | "58" | "XX") || *code == SqlState::DISK_FULL
        }
    }
}

/// Whether an error concerns this transaction alone and asking again may succeed: the
/// database aborted it (a serialization failure, a deadlock) or has no room for it now (too
/// many connections, out of memory).
fn busy(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::LOCK_NOT_AVAILABLE
            || (&code.code()[..2] == "53" && *code != SqlState::DISK_FULL)
    })
}

/// An error with its causes (`error connecting to server: Connection refused (os error 111)`):
/// tokio-postgres keeps the cause apart from the message.
fn said(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out = format!("{out}: {text}");
        }
        cause = c.source();
    }
    out
}

fn fail(e: tokio_postgres::Error) -> StoreError {
    let message = format!("PostgreSQL: {}", said(&e));
    if busy(&e) {
        StoreError::Busy(message)
    } else if unavailable(&e) {
        StoreError::Unavailable(message)
    } else {
        StoreError::Other(message)
    }
}

fn pool_fail(e: deadpool_postgres::PoolError) -> StoreError {
    match e {
        deadpool_postgres::PoolError::Backend(e) => fail(e),
        // Every connection of the pool in use past the wait: this request alone.
        e @ deadpool_postgres::PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
            StoreError::Busy(format!(
                "PostgreSQL: no connection of the pool (--store-connections) came free in time: {e}"
            ))
        }
        e => StoreError::Unavailable(format!("PostgreSQL: {e}")),
    }
}

/// The connection settings of `url`, with the password from `PGPASSWORD` or the `.pgpass` file
/// (`PGPASSFILE`, else `~/.pgpass`) when the URL has none, as libpq takes them.
fn connect_config(url: &str) -> Result<tokio_postgres::Config, String> {
    let mut config: tokio_postgres::Config =
        url.parse().map_err(|e| format!("{}: not a PostgreSQL URL: {e}", redact(url)))?;
    if config.get_password().is_none() {
        if let Some(password) = std::env::var_os("PGPASSWORD") {
            config.password(password.as_encoded_bytes());
        } else if let Some(password) = pgpass(&config) {
            config.password(password);
        }
    }
    if config.get_user().is_none() {
        if let Ok(user) = std::env::var("PGUSER").or_else(|_| std::env::var("USER")) {
            config.user(user);
        }
    }
    config.connect_timeout(WAIT);
    Ok(config)
}

/// The password `.pgpass` gives for `config`'s first host, port, database and user
/// (`hostname:port:database:username:password`, `*` matching anything, `\` escaping `:`).
fn pgpass(config: &tokio_postgres::Config) -> Option<String> {
    let path = match std::env::var_os("PGPASSFILE") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".pgpass"),
    };
    let text = std::fs::read_to_string(path).ok()?;
    let host = match config.get_hosts().first()? {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[cfg(unix)]
        tokio_postgres::config::Host::Unix(_) => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user()?.to_string();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    let wanted = [host.as_str(), port.as_str(), db.as_str(), user.as_str()];
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let fields = split_pgpass(line);
        if fields.len() != 5 {
            return None;
        }
        let matches = fields[..4].iter().zip(wanted).all(|(f, w)| f == "*" || f == w);
        matches.then(|| fields[4].clone())
    })
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("one").extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().expect("one").push(c),
        }
    }
    fields
}

impl Postgres {
    /// Connects to the database `url` names with at most `connections` connections and creates
    /// (or migrates) the tables; refuses a schema or store format newer than this build's by
    /// name.
    pub fn open(url: &str, connections: usize) -> Result<Postgres, OpenError> {
        let shown = redact(url);
        let store_err = |e: &dyn fmt::Display| OpenError::Store(format!("{shown}: {e}"));
        let config = connect_config(url).map_err(OpenError::Store)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("neardup-postgres")
            .enable_all()
            .build()
            .map_err(|e| store_err(&e))?;
        // Connect once now, so that a wrong URL or a database that is away fails the start
        // (the pool connects lazily).
        runtime
            .block_on(async {
                let (client, connection) = config.connect(NoTls).await?;
                tokio::spawn(connection);
                client.simple_query("SELECT 1").await.map(drop)
            })
            .map_err(|e| store_err(&said(&e)))?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(connections.max(1))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(WAIT))
            .create_timeout(Some(WAIT))
            .build()
            .map_err(|e| store_err(&e))?;
        let store = Postgres { runtime: Some(runtime), pool, shown: shown.clone() };
        store.migrate().map_err(|e| match e {
            Migrate::Newer(what, found, ours) => OpenError::Store(format!(
                "{shown}: the database's neardup {what} is version {found}, made by a newer \
                 neardup; this build uses version {ours}: serve it with that build or a newer one"
            )),
            Migrate::Failed(e) => store_err(&e),
        })?;
        Ok(store)
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.as_ref().expect("open until dropped").block_on(f)
    }

    fn connection(&self) -> Result<Object, StoreError> {
        self.block_on(self.pool.get()).map_err(pool_fail)
    }

    /// Creates the tables, or checks their version and migrates an older one, in one
    /// transaction under a lock (servers starting together migrate once).
    fn migrate(&self) -> Result<(), Migrate> {
        let mut client = self.connection().map_err(|e| Migrate::Failed(e.to_string()))?;
        let failed = |e: tokio_postgres::Error| Migrate::Failed(said(&e));
        self.block_on(async {
            let txn = client.transaction().await.map_err(failed)?;
            txn.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .await
                .map_err(failed)?;
            txn.batch_execute(
                "CREATE TABLE IF NOT EXISTS neardup_meta (
                     key text PRIMARY KEY,
                     value bigint NOT NULL);",
            )
            .await
            .map_err(failed)?;
            let mut found = Vec::new();
            for (key, ours, what) in [
                ("schema", SCHEMA, "schema"),
                ("store_format", i64::from(STORE_FORMAT), "store format"),
            ] {
                let v = txn
                    .query_opt("SELECT value FROM neardup_meta WHERE key = $1", &[&key])
                    .await
                    .map_err(failed)?
                    .map(|r| r.get::<_, i64>(0));
                if let Some(v) = v.filter(|v| *v > ours) {
                    return Err(Migrate::Newer(what, v, ours));
                }
                found.push(v);
            }
            if found[0] == Some(1) {
                // Schema 1 to 2: each document gets its place in first-storing order (by the
                // version that wrote it) and no keys yet; each collection its count.
                txn.batch_execute(
                    "CREATE SEQUENCE IF NOT EXISTS neardup_seq;
                     ALTER TABLE neardup_docs ADD COLUMN seq bigint, ADD COLUMN keys bigint[];
                     UPDATE neardup_docs d SET seq = o.seq
                         FROM (SELECT docs, id, nextval('neardup_seq') AS seq
                               FROM (SELECT docs, id FROM neardup_docs
                                     ORDER BY version, id) AS ordered) AS o
                         WHERE d.docs = o.docs AND d.id = o.id;
                     ALTER TABLE neardup_docs
                         ALTER COLUMN seq SET DEFAULT nextval('neardup_seq'),
                         ALTER COLUMN seq SET NOT NULL;
                     ALTER TABLE neardup_collections ADD COLUMN count bigint NOT NULL DEFAULT 0;
                     UPDATE neardup_collections c
                         SET count = (SELECT count(*) FROM neardup_docs d WHERE d.docs = c.docs);",
                )
                .await
                .map_err(failed)?;
            }
            if found[0] == Some(2) {
                // Schema 2 to 3: the documents of passage collections lose their keys, to be
                // indexed again with their passage keys ([`Docs::unindexed`]).
                txn.batch_execute(
                    "UPDATE neardup_docs SET keys = NULL
                     WHERE docs IN (
                         SELECT docs FROM neardup_collections
                         WHERE jsonb_typeof(settings::jsonb -> 'job' -> 'passages') = 'object'
                            OR jsonb_typeof(settings::jsonb -> 'passages') = 'object');",
                )
                .await
                .map_err(failed)?;
            }
            if matches!(found[0], Some(1..=3)) {
                // Schema 3 to 4: the counts move to their own rows; the versions go.
                txn.batch_execute(
                    "CREATE TABLE neardup_counts (
                         docs text NOT NULL,
                         shard smallint NOT NULL,
                         n bigint NOT NULL,
                         PRIMARY KEY (docs, shard));
                     INSERT INTO neardup_counts (docs, shard, n)
                         SELECT docs, 0, count FROM neardup_collections;
                     ALTER TABLE neardup_collections DROP COLUMN version, DROP COLUMN count;
                     ALTER TABLE neardup_docs DROP COLUMN version;
                     DROP TABLE IF EXISTS neardup_removed;",
                )
                .await
                .map_err(failed)?;
            }
            txn.batch_execute(
                "CREATE SEQUENCE IF NOT EXISTS neardup_seq;
                 CREATE TABLE IF NOT EXISTS neardup_collections (
                     name text PRIMARY KEY,
                     docs text NOT NULL UNIQUE,
                     settings text NOT NULL);
                 CREATE TABLE IF NOT EXISTS neardup_docs (
                     docs text NOT NULL,
                     id bytea NOT NULL,
                     record bytea NOT NULL,
                     seq bigint NOT NULL DEFAULT nextval('neardup_seq'),
                     keys bigint[],
                     PRIMARY KEY (docs, id));
                 CREATE UNIQUE INDEX IF NOT EXISTS neardup_docs_seq ON neardup_docs (seq);
                 CREATE INDEX IF NOT EXISTS neardup_docs_unindexed ON neardup_docs (docs)
                     WHERE keys IS NULL;
                 CREATE TABLE IF NOT EXISTS neardup_bands (
                     key bigint NOT NULL,
                     seq bigint NOT NULL,
                     PRIMARY KEY (key, seq));
                 CREATE TABLE IF NOT EXISTS neardup_counts (
                     docs text NOT NULL,
                     shard smallint NOT NULL,
                     n bigint NOT NULL,
                     PRIMARY KEY (docs, shard));",
            )
            .await
            .map_err(failed)?;
            for (key, ours) in [("schema", SCHEMA), ("store_format", i64::from(STORE_FORMAT))] {
                txn.execute(
                    "INSERT INTO neardup_meta (key, value) VALUES ($1, $2)
                     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    &[&key, &ours],
                )
                .await
                .map_err(failed)?;
            }
            txn.commit().await.map_err(failed)
        })
    }
}

enum Migrate {
    Newer(&'static str, i64, i64),
    Failed(String),
}

impl Store for Postgres {
    fn shared(&self) -> bool {
        true
    }

    fn indexes(&self) -> bool {
        true
    }

    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        let client = self.connection()?;
        let txn = Txn::new(self, client);
        txn.run(&format!("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; {LOOKUPS}"))?;
        Ok(Box::new(txn))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        let client = self.connection()?;
        let txn = Txn::new(self, client);
        txn.run(&format!("BEGIN; {LOOKUPS}"))?;
        Ok(Box::new(txn))
    }
}

/// A transaction on one connection of the pool: rolled back if dropped uncommitted.
struct Txn<'a> {
    store: &'a Postgres,
    /// `None` only while dropped.
    client: Option<Object>,
    open: bool,
    /// What this write transaction has locked ([`WriteTxn::lock`]).
    locks: std::cell::RefCell<Locks>,
    /// The row of `neardup_counts` this transaction adds its documents to (one row: two
    /// transactions never wait for each other's count rows in opposite orders).
    shard: i16,
}

/// The advisory locks a write transaction holds, to its commit.
#[derive(Default)]
struct Locks {
    /// The collections' tables whose lock it holds, each with whether alone.
    collections: std::collections::HashMap<String, bool>,
    /// The ids' and keys' locks it holds.
    held: std::collections::HashSet<i64>,
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if self.open && self.run("ROLLBACK").is_err() {
            // The connection's state is unknown: it does not go back to the pool.
            if let Some(client) = self.client.take() {
                drop(Object::take(client));
            }
        }
    }
}

impl<'a> Txn<'a> {
    fn new(store: &'a Postgres, client: Object) -> Txn<'a> {
        use std::hash::BuildHasher;
        // Any row of the collection's count will do, as long as concurrent writers (of this
        // server and of others) seldom take the same one: a random one.
        let random = std::collections::hash_map::RandomState::new().hash_one(0u8);
        let shard = (random % COUNT_SHARDS) as i16;
        Txn { store, client: Some(client), open: true, locks: Default::default(), shard }
    }

    /// The settings of collection `name`, read by `sql` (which says how its row is locked).
    fn settings_by(&self, sql: &str, name: &str) -> Result<Option<String>, StoreError> {
        Ok(self.query_opt(sql, &[&name])?.map(|r| r.get(0)))
    }

    fn client(&self) -> &Object {
        self.client.as_ref().expect("held until dropped")
    }

    fn run(&self, sql: &str) -> Result<(), StoreError> {
        self.store.block_on(self.client().batch_execute(sql)).map_err(fail)
    }

    /// `sql` prepared on this connection (once per connection: deadpool caches it).
    fn statement(&self, sql: &str) -> Result<tokio_postgres::Statement, tokio_postgres::Error> {
        self.store.block_on(self.client().prepare_cached(sql))
    }

    // Each statement is prepared and run in one trip to the store's runtime: a trip costs a
    // hand-over between threads, and a search makes several statements (two trips each cost a
    // quarter of the search rate).
    fn query_opt(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<tokio_postgres::Row>, StoreError> {
        let client = self.client();
        let run = async { client.query_opt(&client.prepare_cached(sql).await?, params).await };
        self.store.block_on(run).map_err(fail)
    }

    fn execute(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        self.execute_raw(sql, params).map_err(fail)
    }

    fn execute_raw(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        let client = self.client();
        self.store
            .block_on(async { client.execute(&client.prepare_cached(sql).await?, params).await })
    }

    fn query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let client = self.client();
        let run = async { client.query(&client.prepare_cached(sql).await?, params).await };
        self.store.block_on(run).map_err(fail)
    }

    /// The documents of `table`, if its collection is stored.
    fn table(&self, table: &str) -> Result<Table<'_, '_>, StoreError> {
        match self.query_opt("SELECT 1 FROM neardup_collections WHERE docs = $1", &[&table])? {
            Some(_) => Ok(Table { txn: self, table: table.to_string() }),
            None => Err(StoreError::Gone),
        }
    }
}

impl ReadTxn for Txn<'_> {
    fn collections(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = self
            .store
            .block_on(
                self.client()
                    .query("SELECT name, settings FROM neardup_collections ORDER BY name", &[]),
            )
            .map_err(fail)?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn docs(&self, table: &str) -> Result<Box<dyn Docs + '_>, StoreError> {
        Ok(Box::new(self.table(table)?))
    }

    fn collection(&self, name: &str) -> Result<Option<String>, StoreError> {
        let row =
            self.query_opt("SELECT settings FROM neardup_collections WHERE name = $1", &[&name])?;
        Ok(row.map(|r| r.get(0)))
    }
}

impl WriteTxn for Txn<'_> {
    fn settings(&self, name: &str) -> Result<Option<String>, StoreError> {
        // The collection's row, shared with its other writers to the commit: a delete of the
        // collection waits for them.
        self.settings_by("SELECT settings FROM neardup_collections WHERE name = $1 FOR SHARE", name)
    }

    fn settings_alone(&self, name: &str) -> Result<Option<String>, StoreError> {
        // Waits for the writers holding the row shared; those that come later wait for this
        // transaction, then find the collection gone.
        self.settings_by(
            "SELECT settings FROM neardup_collections WHERE name = $1 FOR UPDATE",
            name,
        )
    }

    fn lock(&self, table: &str, keys: Option<&[u64]>, ids: &[&str]) -> Result<(), StoreError> {
        let mut locks = self.locks.borrow_mut();
        let holding = locks.collections.get(table).copied();
        if holding == Some(true) {
            return Ok(()); // everything of it is this transaction's already
        }
        let mut wanted: Vec<i64> = match keys {
            Some(keys) => salted(table, keys),
            None => Vec::new(),
        };
        wanted.extend(ids.iter().map(|id| id_lock(table, id)));
        wanted.retain(|k| !locks.held.contains(k));
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() && keys.is_some() {
            return Ok(());
        }
        let alone = keys.is_none() || locks.held.len() + wanted.len() > MAX_FINE_LOCKS;
        let collection = (salt(table) ^ COLLECTION_LOCK) as i64;
        if alone {
            // Taken after a shared one (never in the routes: a transaction locks all it
            // needs at once), two such transactions could wait for each other: PostgreSQL then
            // aborts one, answered 503 (`busy`, for the client to retry).
            self.execute("SELECT pg_advisory_xact_lock($1)", &[&collection])?;
            locks.collections.insert(table.to_string(), true);
            return Ok(());
        }
        // In ascending order, in one statement: two transactions wanting some of the same
        // locks take them in the same order, so neither holds one the other waits for while
        // it waits itself. The collection's lock (shared) first, in the same trip, unless
        // this transaction holds it already.
        let shared = holding.is_none().then_some(collection);
        self.execute(
            "WITH c AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(s)
                                     FROM (SELECT $1::bigint AS s) AS s WHERE s IS NOT NULL)
             SELECT pg_advisory_xact_lock(k) FROM unnest($2::bigint[]) AS k
             LEFT JOIN c ON true",
            &[&shared, &wanted],
        )?;
        locks.collections.entry(table.to_string()).or_insert(false);
        locks.held.extend(wanted);
        Ok(())
    }

    fn create_collection(&self, name: &str, settings: &str, table: &str) -> Result<(), StoreError> {
        let inserted = self.execute_raw(
            "INSERT INTO neardup_collections (name, docs, settings) VALUES ($1, $2, $3)",
            &[&name, &table, &settings],
        );
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                Err(StoreError::Conflict(format!(
                    "collection {name:?} was created through another server meanwhile; ask \
                     again to see its settings"
                )))
            }
            Err(e) => Err(fail(e)),
        }
    }

    fn delete_collection(&self, name: &str, table: &str) -> Result<(), StoreError> {
        // This incarnation only (a collection of the name made since is another).
        self.execute(
            "DELETE FROM neardup_bands b USING neardup_docs d
             WHERE d.docs = $1 AND b.key = ANY(d.keys) AND b.seq = d.seq",
            &[&table],
        )?;
        self.execute("DELETE FROM neardup_docs WHERE docs = $1", &[&table])?;
        self.execute("DELETE FROM neardup_counts WHERE docs = $1", &[&table])?;
        let sql = "DELETE FROM neardup_collections WHERE name = $1 AND docs = $2";
        self.execute(sql, &[&name, &table])?;
        Ok(())
    }

    fn docs(&self, table: &str) -> Result<Box<dyn DocsMut + '_>, StoreError> {
        Ok(Box::new(self.table(table)?))
    }

    fn commit(mut self: Box<Self>) -> Result<(), StoreError> {
        // Whatever COMMIT answers, the transaction is over: never rolled back after it.
        self.open = false;
        self.run("COMMIT")
    }
}

/// A table of documents in a transaction.
struct Table<'t, 'a> {
    txn: &'t Txn<'a>,
    table: String,
}

impl Docs for Table<'_, '_> {
    fn get(&self, id: &str) -> Result<Option<Value<'_>>, StoreError> {
        let row = self.txn.query_opt(
            "SELECT record FROM neardup_docs WHERE docs = $1 AND id = $2",
            &[&self.table, &id.as_bytes()],
        )?;
        Ok(row.map(|r| Box::new(r.get::<_, Vec<u8>>(0)) as Value<'_>))
    }

    fn get_many(&self, ids: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        if let [id] = ids {
            // One record (a search's usual single hit): the plain key look-up.
            return Ok(vec![self.get(id)?.map(|v| v.to_vec())]);
        }
        let keys: Vec<&[u8]> = ids.iter().map(|id| id.as_bytes()).collect();
        let rows = self.txn.query(
            "SELECT id, record FROM neardup_docs WHERE docs = $1 AND id = ANY($2)",
            &[&self.table, &keys],
        )?;
        let mut found: std::collections::HashMap<Vec<u8>, Vec<u8>> =
            rows.into_iter().map(|r| (r.get(0), r.get(1))).collect();
        Ok(ids.iter().map(|id| found.remove(id.as_bytes())).collect())
    }

    fn for_each(&self, visit: &mut Visit<'_>) -> Result<(), StoreError> {
        use futures_util::StreamExt;
        let (store, client) = (self.txn.store, self.txn.client());
        let sql = "SELECT id, record FROM neardup_docs WHERE docs = $1 ORDER BY id";
        let statement = self.txn.statement(sql).map_err(fail)?;
        let rows = store.block_on(client.query_raw(&statement, [&self.table])).map_err(fail)?;
        let mut rows = Box::pin(rows);
        // Each row is taken on the store's runtime and visited outside it: `visit` may use
        // another store (a copy from one database to another).
        while let Some(row) = store.block_on(rows.next()) {
            let row = row.map_err(fail)?;
            let id: &[u8] = row.get(0);
            let id = std::str::from_utf8(id)
                .map_err(|e| StoreError::Other(format!("a stored id is not UTF-8: {e}")))?;
            visit(id, row.get(1)).map_err(StoreError::Other)?;
        }
        Ok(())
    }

    fn count(&self) -> Result<Option<u64>, StoreError> {
        let row = self.txn.query_opt(
            "SELECT (SELECT coalesce(sum(n), 0)::bigint FROM neardup_counts WHERE docs = $1)
             FROM neardup_collections WHERE docs = $1",
            &[&self.table],
        )?;
        Ok(Some(row.ok_or(StoreError::Gone)?.get::<_, i64>(0).max(0) as u64))
    }

    fn candidates(&self, keys: Option<&[u64]>) -> Result<Vec<Candidate>, StoreError> {
        let rows = match keys {
            Some([]) => return Ok(Vec::new()),
            Some(keys) => {
                let keys = salted(&self.table, keys);
                self.txn.query(
                    "SELECT id, seq, record FROM neardup_docs
                     WHERE seq IN (SELECT seq FROM neardup_bands WHERE key = ANY($2))
                       AND docs = $1",
                    &[&self.table, &keys],
                )?
            }
            None => self.txn.query(
                "SELECT id, seq, record FROM neardup_docs WHERE docs = $1",
                &[&self.table],
            )?,
        };
        candidate_rows(rows)
    }

    fn holders(&self, keys: &[u64], cap: usize) -> Result<Vec<(u64, u64)>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let salt = salt(&self.table);
        let salted = salted(&self.table, keys);
        let cap = cap as i64;
        // Each key's first holders through the index's b-tree ((key, seq)): a key a million
        // documents hold reads `cap` rows, not a million.
        let rows = self.txn.query(
            "SELECT k.key, b.seq FROM unnest($1::bigint[]) AS k (key),
                 LATERAL (SELECT seq FROM neardup_bands WHERE key = k.key
                          ORDER BY seq LIMIT $2) AS b",
            &[&salted, &cap],
        )?;
        Ok(rows
            .into_iter()
            .map(|r| ((r.get::<_, i64>(0) as u64) ^ salt, r.get::<_, i64>(1) as u64))
            .collect())
    }

    fn by_order(&self, orders: &[u64]) -> Result<Vec<Candidate>, StoreError> {
        let seqs: Vec<i64> = orders.iter().map(|&o| o as i64).collect();
        let rows = self.txn.query(
            "SELECT id, seq, record FROM neardup_docs WHERE seq = ANY($2) AND docs = $1",
            &[&self.table, &seqs],
        )?;
        candidate_rows(rows)
    }

    fn orders(&self, ids: &[&str]) -> Result<Vec<Option<u64>>, StoreError> {
        let keys: Vec<&[u8]> = ids.iter().map(|id| id.as_bytes()).collect();
        let rows = self.txn.query(
            "SELECT id, seq FROM neardup_docs WHERE docs = $1 AND id = ANY($2)",
            &[&self.table, &keys],
        )?;
        let found: std::collections::HashMap<Vec<u8>, i64> =
            rows.into_iter().map(|r| (r.get(0), r.get(1))).collect();
        Ok(ids.iter().map(|id| found.get(id.as_bytes()).map(|&s| s as u64)).collect())
    }

    fn unindexed(&self, limit: usize) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let limit = limit as i64;
        let rows = self.txn.query(
            "SELECT id, record FROM neardup_docs WHERE docs = $1 AND keys IS NULL LIMIT $2",
            &[&self.table, &limit],
        )?;
        rows.into_iter().map(|r| Ok((stored_id(&r)?, r.get(1)))).collect()
    }
}

/// The id in the first column of a row of `neardup_docs`.
fn stored_id(row: &tokio_postgres::Row) -> Result<String, StoreError> {
    String::from_utf8(row.get::<_, Vec<u8>>(0))
        .map_err(|e| StoreError::Other(format!("a stored id is not UTF-8: {e}")))
}

/// Rows `(id, seq, record)` of `neardup_docs` as candidates.
fn candidate_rows(rows: Vec<tokio_postgres::Row>) -> Result<Vec<Candidate>, StoreError> {
    rows.into_iter()
        .map(|r| {
            Ok(Candidate { id: stored_id(&r)?, order: r.get::<_, i64>(1) as u64, record: r.get(2) })
        })
        .collect()
}

/// What a collection's keys are salted with ([`salted`]; salting again unsalts them).
fn salt(table: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(table.as_bytes())
}

/// The advisory lock of document `id` of `table`'s collection ([`WriteTxn::lock`]).
fn id_lock(table: &str, id: &str) -> i64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(id.as_bytes(), salt(table)) as i64
}

/// A collection's candidate keys as its table keeps them: salted by the table, so that two
/// collections (of the same settings, holding the same texts) never share a band row.
fn salted(table: &str, keys: &[u64]) -> Vec<i64> {
    let salt = salt(table);
    keys.iter().map(|k| (k ^ salt) as i64).collect()
}

impl DocsMut for Table<'_, '_> {
    fn put(&mut self, row: Row<'_>) -> Result<bool, StoreError> {
        Ok(self.put_many(&[row])?[0])
    }

    fn put_many(&mut self, rows: &[Row<'_>]) -> Result<Vec<bool>, StoreError> {
        // Writers of the same ids one after the other: the band rows of what one replaced are
        // those the other's statement reads.
        let names: Vec<&str> = rows.iter().map(|r| r.id).collect();
        self.txn.lock(&self.table, Some(&[]), &names)?;
        let ids: Vec<&[u8]> = rows.iter().map(|r| r.id.as_bytes()).collect();
        let records: Vec<&[u8]> = rows.iter().map(|r| r.record).collect();
        // Each row's keys as a slice [lo, hi] (1-based) of one flat array; none (NULL) for a
        // row whose keys are not known here (indexed when a server loads the collection).
        let (mut flat, mut lo, mut hi) = (Vec::new(), Vec::<Option<i32>>::new(), Vec::new());
        for r in rows {
            match r.keys {
                Some(keys) => {
                    lo.push(Some(flat.len() as i32 + 1));
                    flat.extend(salted(&self.table, keys));
                    hi.push(Some(flat.len() as i32));
                }
                None => {
                    lo.push(None);
                    hi.push(None);
                }
            }
        }
        // One statement (the ids are all different, as an upsert of many rows needs): a new
        // document takes the next `seq`, a stored one keeps its own; the band rows of the keys
        // it gained are added (`old` reads the statement's snapshot) and the collection's
        // count (this transaction's row of it) grows by the new ones. `xmax` is set on the rows the upsert updated. Those of
        // the keys a replaced document lost are removed after it, by key (none for new ones:
        // a pure insert is one trip).
        let upsert = "WITH rows AS (SELECT * FROM unnest($2::bytea[], $3::bytea[], $4::int[],
                                                     $5::int[])
                                    WITH ORDINALITY AS r (id, record, lo, hi, ord)),
                           old AS (SELECT id, keys FROM neardup_docs
                                   WHERE docs = $1 AND id IN (SELECT id FROM rows)),
                           up AS (INSERT INTO neardup_docs AS d (docs, id, record, keys)
                                  SELECT $1, id, record,
                                         CASE WHEN lo IS NULL THEN NULL
                                              ELSE ($7::bigint[])[lo:hi] END
                                  FROM rows ORDER BY ord
                                  ON CONFLICT (docs, id) DO UPDATE
                                      SET record = EXCLUDED.record, keys = EXCLUDED.keys
                                  RETURNING d.id, d.seq, d.keys, NOT (d.xmax = 0) AS was),
                           changed AS (SELECT up.id, up.seq, up.keys AS new, o.keys AS old,
                                              up.was
                                       FROM up LEFT JOIN old o ON o.id = up.id),
                           added AS (INSERT INTO neardup_bands (key, seq)
                                     SELECT k.key, c.seq FROM changed c, unnest(c.new) AS k (key)
                                     WHERE NOT (k.key = ANY(coalesce(c.old, '{}')))
                                     ORDER BY 1
                                     ON CONFLICT DO NOTHING),
                           counted AS (INSERT INTO neardup_counts AS c (docs, shard, n)
                                       SELECT $1, $6::smallint, n
                                       FROM (SELECT count(*) AS n FROM up WHERE NOT was) AS new
                                       WHERE n > 0
                                       ON CONFLICT (docs, shard) DO UPDATE SET n = c.n + EXCLUDED.n)
                      SELECT id, was, seq, old, new FROM changed";
        let table = &self.table;
        let client = self.txn.client();
        let run = async {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
                [table, &ids, &records, &lo, &hi, &self.txn.shard, &flat];
            let written = client.query(&client.prepare_cached(upsert).await?, &params).await?;
            let (mut keys, mut seqs) = (Vec::new(), Vec::new());
            for w in &written {
                let (seq, old, new): (i64, Option<Vec<i64>>, Option<Vec<i64>>) =
                    (w.get(2), w.get(3), w.get(4));
                let new = new.unwrap_or_default();
                for k in old.unwrap_or_default().into_iter().filter(|k| !new.contains(k)) {
                    keys.push(k);
                    seqs.push(seq);
                }
            }
            if !keys.is_empty() {
                let sql = "DELETE FROM neardup_bands b
                           USING unnest($1::bigint[], $2::bigint[]) AS o (key, seq)
                           WHERE b.key = o.key AND b.seq = o.seq";
                client.execute(&client.prepare_cached(sql).await?, &[&keys, &seqs]).await?;
            }
            Ok::<_, tokio_postgres::Error>(written)
        };
        let written = self.txn.store.block_on(run).map_err(fail)?;
        let replaced: std::collections::HashMap<Vec<u8>, bool> =
            written.into_iter().map(|r| (r.get(0), r.get(1))).collect();
        Ok(ids.iter().map(|id| replaced.get(*id).copied().unwrap_or(false)).collect())
    }

    fn remove(&mut self, id: &str) -> Result<bool, StoreError> {
        self.txn.lock(&self.table, Some(&[]), &[id])?;
        let row = self.txn.query_opt(
            "WITH gone AS (DELETE FROM neardup_docs WHERE docs = $1 AND id = $2
                           RETURNING seq, keys),
                  bands AS (DELETE FROM neardup_bands b USING gone
                            WHERE b.key = ANY(gone.keys) AND b.seq = gone.seq)
             INSERT INTO neardup_counts AS c (docs, shard, n) SELECT $1, $3::smallint, -1 FROM gone
             ON CONFLICT (docs, shard) DO UPDATE SET n = c.n + EXCLUDED.n
             RETURNING 1",
            &[&self.table, &id.as_bytes(), &self.txn.shard],
        )?;
        Ok(row.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            redact("postgres://app:s3cret@db.example:5432/n"),
            "postgres://app:***@db.example:5432/n"
        );
        assert_eq!(redact("postgres://app@db/n"), "postgres://app@db/n");
        assert_eq!(
            redact("postgresql://a:b:c@h/d?sslmode=disable"),
            "postgresql://a:***@h/d?sslmode=disable"
        );
        assert_eq!(
            redact("postgres://h/d?user=u&password=x&sslmode=disable"),
            "postgres://h/d?user=u&password=***&sslmode=disable"
        );
        assert_eq!(redact("host=/tmp dbname=n"), "host=/tmp dbname=n");
        // The user part ends at the first `@`, whatever comes before it.
        assert_eq!(redact("postgres://u:p/ss@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u:p?x@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://h/db?pass%77ord=x"), "postgres://h/db?pass%77ord=***");
        assert_eq!(redact("host=h password=s3cret user=u"), "host=h password=*** user=u");
        for url in [
            "postgres://u:s3cret@h/d",
            "postgres://u:s3/cret@h/d?password=s3cret",
            "host=h PASSWORD=s3cret",
            "postgresql://h/d?sslmode=disable&password=s3cret&user=u",
        ] {
            assert!(!redact(url).contains("s3"), "{url}: {}", redact(url));
        }
    }

    #[test]
    fn pgpass_lines_are_split_as_libpq_does() {
        assert_eq!(split_pgpass(r"h:5432:db:u:pa\:ss"), ["h", "5432", "db", "u", "pa:ss"]);
        assert_eq!(split_pgpass(r"*:*:*:u:a\\b"), ["*", "*", "*", "u", r"a\b"]);
    }
}
