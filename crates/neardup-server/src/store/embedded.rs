//! The embedded store: redb, in one file of the data directory.
//!
//! Tables: `meta` (`store_format` -> version), `collections` (name -> settings as JSON) and one
//! `docs/NAME/INCARNATION` table per collection (id -> record). Every write is one redb
//! transaction committed with immediate durability (fsync), so an acknowledged write survives a
//! crash and a batch is all or nothing. After an I/O error redb refuses everything until it is
//! opened again: the service then reopens it ([`crate::State::recover`]).

use std::fmt;
use std::path::Path;

use redb::{Database, ReadableTable, TableDefinition};

use super::{
    docs_table, CollectionInfo, Docs, DocsMut, ReadTxn, Record, Row, Store, StoreError, Value,
    Visit, WriteTxn, STORE_FORMAT,
};
use crate::OpenError;

const META: TableDefinition<'static, &str, u32> = TableDefinition::new("meta");
const COLLECTIONS: TableDefinition<'static, &str, &str> = TableDefinition::new("collections");

fn docs_def(table: &str) -> TableDefinition<'_, &'static str, &'static [u8]> {
    TableDefinition::new(table)
}

/// The embedded store.
#[derive(Debug)]
pub struct Embedded {
    db: Database,
}

/// An I/O error makes the store unavailable until it is reopened; a table that does not exist
/// is a collection deleted meanwhile.
fn fail(e: impl Into<redb::Error>) -> StoreError {
    match e.into() {
        e @ (redb::Error::Io(_) | redb::Error::PreviousIo) => {
            StoreError::Unavailable(format!("storage I/O error: {e}"))
        }
        redb::Error::TableDoesNotExist(_) => StoreError::Gone,
        e => StoreError::Other(format!("store: {e}")),
    }
}

impl Embedded {
    /// Opens the store file (created if missing) and checks (or writes) its format version,
    /// upgrading formats 2 and 3. A file that exists but is empty, or that redb finds damaged,
    /// is refused by name: it is never made into a new store.
    pub fn open(path: &Path, cache_bytes: usize) -> Result<Embedded, OpenError> {
        let store_err = |e: &dyn fmt::Display| OpenError::Store(format!("{}: {e}", path.display()));
        let damaged = |e: &dyn fmt::Display| OpenError::Damaged {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        match std::fs::metadata(path) {
            Ok(m) if m.len() == 0 => {
                return Err(damaged(&"the file is empty (0 bytes), so it holds no store"));
            }
            Ok(m) if !m.is_file() => return Err(store_err(&"not a regular file")),
            _ => {}
        }
        crate::damage_as_error(path, || {
            let db =
                Database::builder().set_cache_size(cache_bytes).create(path).map_err(
                    |e| match e {
                        redb::DatabaseError::Storage(redb::StorageError::Corrupted(m)) => {
                            damaged(&m)
                        }
                        e => store_err(&e),
                    },
                )?;
            // The layout version: written once, checked on every start.
            let txn = db.begin_write().map_err(|e| store_err(&e))?;
            {
                let mut meta = txn.open_table(META).map_err(|e| store_err(&e))?;
                let found = meta.get("store_format").map_err(|e| store_err(&e))?.map(|v| v.value());
                match found {
                    Some(STORE_FORMAT) => {}
                    Some(old @ (2 | 3)) => {
                        let records = if old == 2 {
                            let n = upgrade_v2_records(&txn).map_err(|e| store_err(&e))?;
                            format!(", {n} records checksummed")
                        } else {
                            String::new()
                        };
                        let n = upgrade_settings(&txn).map_err(|e| store_err(&e))?;
                        meta.insert("store_format", STORE_FORMAT).map_err(|e| store_err(&e))?;
                        eprintln!(
                            "neardup serve: upgraded the store from format {old} to \
                             {STORE_FORMAT} ({n} collections' settings written as jobs{records})"
                        );
                    }
                    Some(v) => return Err(OpenError::Format { found: v }),
                    None => {
                        meta.insert("store_format", STORE_FORMAT).map_err(|e| store_err(&e))?;
                    }
                }
                txn.open_table(COLLECTIONS).map_err(|e| store_err(&e))?;
            }
            txn.commit().map_err(|e| store_err(&e))?;
            Ok(Embedded { db })
        })
    }
}

impl Store for Embedded {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StoreError> {
        Ok(Box::new(self.db.begin_read().map_err(fail)?))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StoreError> {
        Ok(Box::new(self.db.begin_write().map_err(fail)?))
    }
}

/// A stored value, as redb hands it out.
struct Guard<'a>(redb::AccessGuard<'a, &'static [u8]>);

impl std::ops::Deref for Guard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.value()
    }
}

fn get<'a>(
    t: &'a impl ReadableTable<&'static str, &'static [u8]>,
    id: &str,
) -> Result<Option<Value<'a>>, StoreError> {
    Ok(t.get(id).map_err(fail)?.map(|v| Box::new(Guard(v)) as Value<'a>))
}

fn for_each(
    t: &impl ReadableTable<&'static str, &'static [u8]>,
    visit: &mut Visit<'_>,
) -> Result<(), StoreError> {
    for item in t.iter().map_err(fail)? {
        let (k, v) = item.map_err(fail)?;
        visit(k.value(), v.value()).map_err(StoreError::Other)?;
    }
    Ok(())
}

impl ReadTxn for redb::ReadTransaction {
    fn collections(&self) -> Result<Vec<(String, String)>, StoreError> {
        let table = self.open_table(COLLECTIONS).map_err(fail)?;
        let mut out = Vec::new();
        for item in table.iter().map_err(fail)? {
            let (k, v) = item.map_err(fail)?;
            out.push((k.value().to_string(), v.value().to_string()));
        }
        Ok(out)
    }

    fn docs(&self, table: &str) -> Result<Box<dyn Docs + '_>, StoreError> {
        Ok(Box::new(self.open_table(docs_def(table)).map_err(fail)?))
    }
}

impl Docs for redb::ReadOnlyTable<&'static str, &'static [u8]> {
    fn get(&self, id: &str) -> Result<Option<Value<'_>>, StoreError> {
        get(self, id)
    }

    fn for_each(&self, visit: &mut Visit<'_>) -> Result<(), StoreError> {
        for_each(self, visit)
    }
}

impl Docs for redb::Table<'_, &'static str, &'static [u8]> {
    fn get(&self, id: &str) -> Result<Option<Value<'_>>, StoreError> {
        get(self, id)
    }

    fn for_each(&self, visit: &mut Visit<'_>) -> Result<(), StoreError> {
        for_each(self, visit)
    }
}

impl DocsMut for redb::Table<'_, &'static str, &'static [u8]> {
    fn put(&mut self, row: Row<'_>) -> Result<bool, StoreError> {
        // The candidate index is the server's, in memory: the keys are not kept here.
        Ok(self.insert(row.id, row.record).map_err(fail)?.is_some())
    }

    fn remove(&mut self, id: &str) -> Result<bool, StoreError> {
        Ok(redb::Table::remove(self, id).map_err(fail)?.is_some())
    }
}

impl WriteTxn for redb::WriteTransaction {
    fn settings(&self, name: &str) -> Result<Option<String>, StoreError> {
        // redb has one writer at a time: nothing else commits while this transaction is open.
        let t = self.open_table(COLLECTIONS).map_err(fail)?;
        let stored = t.get(name).map_err(fail)?;
        Ok(stored.map(|v| v.value().to_string()))
    }

    fn create_collection(&self, name: &str, settings: &str, table: &str) -> Result<(), StoreError> {
        self.open_table(COLLECTIONS).map_err(fail)?.insert(name, settings).map_err(fail)?;
        self.open_table(docs_def(table)).map_err(fail)?;
        Ok(())
    }

    fn delete_collection(&self, name: &str, table: &str) -> Result<(), StoreError> {
        // This incarnation only (a collection of the name made since is another).
        let mut collections = self.open_table(COLLECTIONS).map_err(fail)?;
        let ours = collections.get(name).map_err(fail)?.is_some_and(|v| {
            serde_json::from_str::<CollectionInfo>(v.value())
                .is_ok_and(|i| docs_table(&i.name, &i.incarnation) == table)
        });
        if ours {
            collections.remove(name).map_err(fail)?;
        }
        drop(collections);
        self.delete_table(docs_def(table)).map_err(fail)?;
        Ok(())
    }

    fn docs(&self, table: &str) -> Result<Box<dyn DocsMut + '_>, StoreError> {
        Ok(Box::new(self.open_table(docs_def(table)).map_err(fail)?))
    }

    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        redb::WriteTransaction::commit(*self).map_err(fail)
    }
}

/// Writes every collection's settings of a format 2 or 3 store as its job (format 4), inside
/// `txn`. Returns how many were rewritten; settings that do not parse are left as they are,
/// and reported when the collections load.
fn upgrade_settings(txn: &redb::WriteTransaction) -> Result<u64, String> {
    let e = |e: redb::Error| e.to_string();
    let mut t = txn.open_table(COLLECTIONS).map_err(|x| e(x.into()))?;
    let mut rows = Vec::new();
    for item in t.iter().map_err(|x| e(x.into()))? {
        let (k, v) = item.map_err(|x| e(x.into()))?;
        if let Ok(info) = serde_json::from_str::<CollectionInfo>(v.value()) {
            rows.push((k.value().to_string(), info));
        }
    }
    for (name, info) in &rows {
        let text = serde_json::to_string(info).expect("settings are plain data");
        t.insert(name.as_str(), text.as_str()).map_err(|x| e(x.into()))?;
    }
    Ok(rows.len() as u64)
}

/// Upgrades every document table of a format 2 store to format 3 (a checksum on each record)
/// inside `txn`, a batch of keys at a time so that memory stays bounded. Returns how many
/// records were rewritten.
fn upgrade_v2_records(txn: &redb::WriteTransaction) -> Result<u64, String> {
    upgrade(txn).map_err(|e| e.to_string())
}

// redb's error is large, but this runs once per store, at start: its size costs nothing.
#[allow(clippy::result_large_err)]
fn upgrade(txn: &redb::WriteTransaction) -> Result<u64, redb::Error> {
    let tables: Vec<String> = {
        let collections = txn.open_table(COLLECTIONS)?;
        let mut out = Vec::new();
        for item in collections.iter()? {
            let (_, v) = item?;
            // Settings that do not parse are reported when the collections load.
            if let Ok(info) = serde_json::from_str::<CollectionInfo>(v.value()) {
                out.push(docs_table(&info.name, &info.incarnation));
            }
        }
        out
    };
    let mut rewritten = 0u64;
    for table in tables {
        let mut t = txn.open_table(docs_def(&table))?;
        let mut after: Option<String> = None;
        loop {
            let batch: Vec<(String, Vec<u8>)> = {
                let range = match &after {
                    Some(k) => t.range::<&str>((
                        std::ops::Bound::Excluded(k.as_str()),
                        std::ops::Bound::Unbounded,
                    ))?,
                    None => t.range::<&str>(..)?,
                };
                let mut batch = Vec::new();
                for item in range.take(4096) {
                    let (k, v) = item?;
                    batch.push((k.value().to_string(), v.value().to_vec()));
                }
                batch
            };
            let Some((last, _)) = batch.last() else { break };
            after = Some(last.clone());
            for (id, body) in batch {
                // A format 2 record that does not parse stays as it is: its checksum will then
                // fail, and it is reported as damaged like any other.
                if Record::decode_body(&body).is_ok() {
                    t.insert(id.as_str(), super::seal(&id, body).as_slice())?;
                    rewritten += 1;
                }
            }
        }
    }
    Ok(rewritten)
}
