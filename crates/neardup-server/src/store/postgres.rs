//! The store on PostgreSQL: the same layout as the embedded store, in tables of a database the
//! operator already runs (and backs up, and replicates), shared by any number of servers.
//!
//! - `neardup_meta` (key -> value): `store_format` (the records' layout, as the embedded
//!   store's) and `schema` (these tables' version, [`SCHEMA`]); a database of a newer schema
//!   is refused by name.
//! - `neardup_collections` (name -> its table of documents, its settings as JSON, its version).
//! - `neardup_docs` ((table, id) -> record, and the version that wrote it): the records byte
//!   for byte as the embedded store keeps them, checksum included, so damage is found the same
//!   way; `neardup_removed` ((table, id) -> the version that removed it).
//!
//! Many servers, one answer: every write transaction starts by taking its collection's row
//! (`UPDATE ... SET version = version + 1`: a row lock held to the commit, so the writers of a
//! collection are serialized across servers, and the collection's versions are committed in
//! order) and stamps what it writes and removes with that version. A server holds each
//! collection's index in memory; before an answer relies on it, the server reads what was
//! written and removed after the version its memory holds ([`ReadTxn::changes`]) and applies
//! it, and a writer does so under the collection's lock, so that a `check` decided through
//! one server sees every document committed through any other.
//!
//! A read transaction is `REPEATABLE READ, READ ONLY` (one snapshot for all it reads); a write
//! transaction commits with PostgreSQL's durability (`synchronous_commit`). The client is
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
    Changes, Docs, DocsMut, ReadTxn, Store, StoreError, Value, Visit, WriteTxn, STORE_FORMAT,
};
use crate::OpenError;

/// Version of the tables. Version 1: `neardup_meta`, `neardup_collections` (with versions),
/// `neardup_docs` (stamped with versions), `neardup_removed`.
pub const SCHEMA: i64 = 1;

/// The advisory lock taken, per transaction, while the tables are created or migrated.
const SCHEMA_LOCK: i64 = 0x6e65_6172_6475_7002; // "neardup" 2

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

    /// Creates the tables, or checks their version, in one transaction under a lock (servers
    /// starting together migrate once).
    fn migrate(&self) -> Result<(), Migrate> {
        let mut client = self.connection().map_err(|e| Migrate::Failed(e.to_string()))?;
        let failed = |e: tokio_postgres::Error| Migrate::Failed(e.to_string());
        self.block_on(async {
            let txn = client.transaction().await.map_err(failed)?;
            txn.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .await
                .map_err(failed)?;
            txn.batch_execute(
                "CREATE TABLE IF NOT EXISTS neardup_meta (
                     key text PRIMARY KEY,
                     value bigint NOT NULL);
                 CREATE TABLE IF NOT EXISTS neardup_collections (
                     name text PRIMARY KEY,
                     docs text NOT NULL UNIQUE,
                     settings text NOT NULL,
                     version bigint NOT NULL DEFAULT 0);
                 CREATE TABLE IF NOT EXISTS neardup_docs (
                     docs text NOT NULL,
                     id bytea NOT NULL,
                     record bytea NOT NULL,
                     version bigint NOT NULL,
                     PRIMARY KEY (docs, id));
                 CREATE INDEX IF NOT EXISTS neardup_docs_version ON neardup_docs (docs, version);
                 CREATE TABLE IF NOT EXISTS neardup_removed (
                     docs text NOT NULL,
                     id bytea NOT NULL,
                     version bigint NOT NULL,
                     PRIMARY KEY (docs, id));
                 CREATE INDEX IF NOT EXISTS neardup_removed_version
                     ON neardup_removed (docs, version);",
            )
            .await
            .map_err(failed)?;
            for (key, ours, what) in [
                ("schema", SCHEMA, "schema"),
                ("store_format", i64::from(STORE_FORMAT), "store format"),
            ] {
                let found = txn
                    .query_opt("SELECT value FROM neardup_meta WHERE key = $1", &[&key])
                    .await
                    .map_err(failed)?
                    .map(|r| r.get::<_, i64>(0));
                match found {
                    Some(v) if v > ours => return Err(Migrate::Newer(what, v, ours)),
                    Some(v) if v == ours => {}
                    // No older version of these tables exists yet: an older one would be
                    // migrated here, in this transaction.
                    _ => {
                        txn.execute(
                            "INSERT INTO neardup_meta (key, value) VALUES ($1, $2)
                             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                            &[&key, &ours],
                        )
                        .await
                        .map_err(failed)?;
                    }
                }
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

    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        let client = self.connection()?;
        let txn =
            Txn { store: self, client: Some(client), open: true, version: Default::default() };
        txn.run("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
        Ok(Box::new(txn))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        let client = self.connection()?;
        let txn =
            Txn { store: self, client: Some(client), open: true, version: Default::default() };
        txn.run("BEGIN")?;
        Ok(Box::new(txn))
    }
}

/// A transaction on one connection of the pool: rolled back if dropped uncommitted.
struct Txn<'a> {
    store: &'a Postgres,
    /// `None` only while dropped.
    client: Option<Object>,
    open: bool,
    /// The collection this write transaction locked, and the version it writes.
    version: std::cell::RefCell<Option<(String, i64)>>,
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

impl Txn<'_> {
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

    /// The version this transaction writes `table`'s documents with: the one its settings'
    /// lock took, else a new one taken now (the same lock).
    fn write_version(&self, table: &str) -> Result<i64, StoreError> {
        if let Some(v) = WriteTxn::version(self, table) {
            return Ok(v);
        }
        let row = self.query_opt(
            "UPDATE neardup_collections SET version = version + 1 WHERE docs = $1
             RETURNING version",
            &[&table],
        )?;
        let v: i64 = row.ok_or(StoreError::Gone)?.get(0);
        *self.version.borrow_mut() = Some((table.to_string(), v));
        Ok(v)
    }

    fn changes_since(&self, table: &str, since: i64) -> Result<Changes, StoreError> {
        let row =
            self.query_opt("SELECT version FROM neardup_collections WHERE docs = $1", &[&table])?;
        let mut version: i64 = row.ok_or(StoreError::Gone)?.get(0);
        if let Some(own) = WriteTxn::version(self, table) {
            // This transaction took the next version (and holds the collection's lock): what
            // others committed ends just before it. Its own may yet be rolled back.
            version = own - 1;
        }
        let mut changes = Changes { version, ..Changes::default() };
        if version <= since {
            return Ok(changes);
        }
        let id = |r: &tokio_postgres::Row| -> Result<String, StoreError> {
            String::from_utf8(r.get::<_, Vec<u8>>(0))
                .map_err(|e| StoreError::Other(format!("a stored id is not UTF-8: {e}")))
        };
        let rows = self.query(
            "SELECT id, record FROM neardup_docs WHERE docs = $1 AND version > $2",
            &[&table, &since],
        )?;
        for r in &rows {
            changes.written.push((id(r)?, r.get(1)));
        }
        let rows = self.query(
            "SELECT id FROM neardup_removed WHERE docs = $1 AND version > $2",
            &[&table, &since],
        )?;
        for r in &rows {
            changes.removed.push(id(r)?);
        }
        Ok(changes)
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

    fn changes(&self, table: &str, since: i64) -> Result<Option<Changes>, StoreError> {
        self.changes_since(table, since).map(Some)
    }
}

impl WriteTxn for Txn<'_> {
    fn settings(&self, name: &str) -> Result<Option<String>, StoreError> {
        // The collection's row, locked to the commit: its writers on every server wait here.
        let row = self.query_opt(
            "UPDATE neardup_collections SET version = version + 1 WHERE name = $1
             RETURNING settings, docs, version",
            &[&name],
        )?;
        Ok(row.map(|r| {
            *self.version.borrow_mut() = Some((r.get(1), r.get(2)));
            r.get(0)
        }))
    }

    fn changes(&self, table: &str, since: i64) -> Result<Option<Changes>, StoreError> {
        self.changes_since(table, since).map(Some)
    }

    fn version(&self, table: &str) -> Option<i64> {
        self.version.borrow().as_ref().filter(|(t, _)| t == table).map(|(_, v)| *v)
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
        self.execute("DELETE FROM neardup_docs WHERE docs = $1", &[&table])?;
        self.execute("DELETE FROM neardup_removed WHERE docs = $1", &[&table])?;
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
}

impl DocsMut for Table<'_, '_> {
    fn put(&mut self, id: &str, record: &[u8]) -> Result<bool, StoreError> {
        let version = self.txn.write_version(&self.table)?;
        // `xmax` is set on the row an upsert updated, zero on one it inserted. A removal of the
        // same id before is forgotten: the document is back.
        let row = self.txn.query_opt(
            "WITH back AS (DELETE FROM neardup_removed WHERE docs = $1 AND id = $2)
             INSERT INTO neardup_docs (docs, id, record, version) VALUES ($1, $2, $3, $4)
             ON CONFLICT (docs, id) DO UPDATE
                 SET record = EXCLUDED.record, version = EXCLUDED.version
             RETURNING NOT (xmax = 0)",
            &[&self.table, &id.as_bytes(), &record, &version],
        )?;
        Ok(row.is_some_and(|r| r.get::<_, bool>(0)))
    }

    fn put_many(&mut self, rows: &[(&str, &[u8])]) -> Result<Vec<bool>, StoreError> {
        let version = self.txn.write_version(&self.table)?;
        let ids: Vec<&[u8]> = rows.iter().map(|(id, _)| id.as_bytes()).collect();
        let records: Vec<&[u8]> = rows.iter().map(|(_, record)| *record).collect();
        // One statement for the batch (the ids are all different, as an upsert of many rows
        // needs). `xmax` is set on the rows it updated.
        let written = self.txn.query(
            "WITH rows AS (SELECT * FROM unnest($2::bytea[], $3::bytea[]) AS r (id, record)),
                  back AS (DELETE FROM neardup_removed
                           WHERE docs = $1 AND id IN (SELECT id FROM rows))
             INSERT INTO neardup_docs (docs, id, record, version)
             SELECT $1, id, record, $4 FROM rows
             ON CONFLICT (docs, id) DO UPDATE
                 SET record = EXCLUDED.record, version = EXCLUDED.version
             RETURNING id, NOT (xmax = 0)",
            &[&self.table, &ids, &records, &version],
        )?;
        let replaced: std::collections::HashMap<Vec<u8>, bool> =
            written.into_iter().map(|r| (r.get(0), r.get(1))).collect();
        Ok(ids.iter().map(|id| replaced.get(*id).copied().unwrap_or(false)).collect())
    }

    fn remove(&mut self, id: &str) -> Result<bool, StoreError> {
        let version = self.txn.write_version(&self.table)?;
        let row = self.txn.query_opt(
            "WITH gone AS (DELETE FROM neardup_docs WHERE docs = $1 AND id = $2 RETURNING 1)
             INSERT INTO neardup_removed (docs, id, version) SELECT $1, $2, $3 FROM gone
             ON CONFLICT (docs, id) DO UPDATE SET version = EXCLUDED.version
             RETURNING 1",
            &[&self.table, &id.as_bytes(), &version],
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
