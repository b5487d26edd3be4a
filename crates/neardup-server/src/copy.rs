//! `neardup store copy`: every collection of one store written into another (the embedded
//! store into PostgreSQL, and back), then both read again and compared.

use std::fmt;

use crate::store::{Store, StoreError};
use crate::{Limits, Location, OpenError};

/// Documents written per transaction of the target.
const BATCH: usize = 10_000;

/// One collection copied: its name, documents, and the checksum of its records (xxh3-64 over
/// every id and record in id order), the same read back from both stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The collection.
    pub name: String,
    /// Its documents, as read back from the target.
    pub documents: u64,
    /// The checksum of its records, as read back from the target (and the source).
    pub checksum: u64,
}

/// Why a copy failed.
#[derive(Debug)]
pub enum CopyError {
    /// A store could not be opened.
    Open(OpenError),
    /// Something else, said whole.
    Failed(String),
}

impl fmt::Display for CopyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CopyError::Open(e) => write!(f, "{e}"),
            CopyError::Failed(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for CopyError {}

/// A store named as `--from` and `--to` take it: a PostgreSQL URL, or a data directory of the
/// embedded store.
pub fn location(given: &str) -> Location {
    if crate::store::postgres::is_postgres_url(given) {
        Location::Postgres(given.to_string())
    } else {
        Location::Embedded(std::path::Path::new(given).join("neardup.redb"))
    }
}

/// Copies the collections `only` names (every one if empty) from `from` to `to`, calling
/// `progress` with a line now and then. A collection the target already has is refused by name
/// (never written over). Each collection's documents go in transactions of [`BATCH`]; one that
/// fails part way is deleted from the target again. Afterwards both stores are read again and
/// each collection's count and checksum compared: a copy that differs is an error.
pub fn copy(
    from: &str,
    to: &str,
    only: &[String],
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Copied>, CopyError> {
    let (from_at, to_at) = (location(from), location(to));
    if let Location::Embedded(path) = &from_at {
        if !path.exists() {
            return Err(CopyError::Failed(format!(
                "{}: no store there",
                from_at.shown().display()
            )));
        }
    }
    if let Location::Embedded(path) = &to_at {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| CopyError::Failed(format!("{}: {e}", dir.display())))?;
        }
    }
    let limits = Limits::default();
    let source = from_at.open(&limits).map_err(CopyError::Open)?;
    let target = to_at.open(&limits).map_err(CopyError::Open)?;
    let (from_shown, to_shown) = (from_at.shown(), to_at.shown());
    let failed =
        |at: &std::path::Path, e: StoreError| CopyError::Failed(format!("{}: {e}", at.display()));
    let read = source.read().map_err(|e| failed(&from_shown, e))?;
    let mut collections = read.collections().map_err(|e| failed(&from_shown, e))?;
    for name in only {
        if !collections.iter().any(|(n, _)| n == name) {
            return Err(CopyError::Failed(format!(
                "{}: no collection {name:?}",
                from_shown.display()
            )));
        }
    }
    if !only.is_empty() {
        collections.retain(|(n, _)| only.contains(n));
    }
    let existing = target.read().map_err(|e| failed(&to_shown, e))?.collections();
    let existing = existing.map_err(|e| failed(&to_shown, e))?;
    if let Some((name, _)) = collections.iter().find(|(n, _)| existing.iter().any(|(e, _)| e == n))
    {
        return Err(CopyError::Failed(format!(
            "{}: it already has a collection {name:?}; delete it there first (a copy never \
             writes over a collection)",
            to_shown.display()
        )));
    }
    let mut out = Vec::with_capacity(collections.len());
    for (name, settings) in collections {
        let info: crate::store::CollectionInfo = serde_json::from_str(&settings).map_err(|e| {
            CopyError::Failed(format!(
                "{}: collection {name:?}: its settings do not parse: {e}",
                from_shown.display()
            ))
        })?;
        let table = crate::store::docs_table(&info.name, &info.incarnation);
        // The candidate keys, for a target that keeps the index (computed by a server that
        // runs the pipeline when this build does not).
        let engine = target.indexes().then(|| crate::build_engine(&info).ok()).flatten();
        let copied = copy_one(
            &*read,
            &*target,
            &name,
            &settings,
            &table,
            engine.as_ref().map(|e| (&info, e)),
            progress,
        );
        if let Err(e) = copied {
            // Nothing half copied stays behind.
            if let Ok(txn) = target.write() {
                if txn.delete_collection(&name, &table).is_ok() {
                    let _ = txn.commit();
                }
            }
            return Err(CopyError::Failed(format!("collection {name:?}: {e}")));
        }
        let (n, sum) = summary(&*read, &table).map_err(|e| failed(&from_shown, e))?;
        let back = target.read().map_err(|e| failed(&to_shown, e))?;
        let (m, back_sum) = summary(&*back, &table).map_err(|e| failed(&to_shown, e))?;
        if (n, sum) != (m, back_sum) {
            return Err(CopyError::Failed(format!(
                "collection {name:?}: the copy differs: {n} documents (checksum {sum:016x}) in \
                 {}, {m} (checksum {back_sum:016x}) read back from {}",
                from_shown.display(),
                to_shown.display()
            )));
        }
        progress(&format!("copied {name:?}: {n} documents, checksum {sum:016x}"));
        out.push(Copied { name, documents: n, checksum: sum });
    }
    Ok(out)
}

/// Writes one collection's settings and documents into `target`.
fn copy_one(
    read: &dyn crate::store::ReadTxn,
    target: &dyn Store,
    name: &str,
    settings: &str,
    table: &str,
    engine: Option<(&crate::store::CollectionInfo, &neardup::Engine)>,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let docs = read.docs(table).map_err(|e| e.to_string())?;
    let mut batch: Vec<(String, Vec<u8>)> = Vec::with_capacity(BATCH);
    let mut first = true;
    let mut written = 0u64;
    let flush = |batch: &mut Vec<(String, Vec<u8>)>, first: &mut bool| -> Result<(), String> {
        let txn = target.write().map_err(|e| e.to_string())?;
        if std::mem::take(first) {
            txn.create_collection(name, settings, table).map_err(|e| e.to_string())?;
        } else if txn.settings(name).map_err(|e| e.to_string())?.is_none() {
            return Err(format!(
                "collection {name:?} was deleted from the target while it was copied"
            ));
        }
        {
            let mut t = txn.docs(table).map_err(|e| e.to_string())?;
            // A damaged record is copied as it is, found by no key.
            let keys: Vec<Option<Vec<u64>>> = batch
                .iter()
                .map(|(id, record)| engine.map(|(info, e)| crate::record_keys(info, e, id, record)))
                .collect();
            let rows: Vec<crate::store::Row<'_>> = batch
                .iter()
                .zip(&keys)
                .map(|((id, record), keys)| crate::store::Row { id, record, keys: keys.as_deref() })
                .collect();
            t.put_many(&rows).map_err(|e| e.to_string())?;
            drop(t);
            batch.clear();
        }
        txn.commit().map_err(|e| e.to_string())
    };
    let mut error = None;
    let visited = docs.for_each(&mut |id, record| {
        batch.push((id.to_string(), record.to_vec()));
        if batch.len() == BATCH {
            written += BATCH as u64;
            if let Err(e) = flush(&mut batch, &mut first) {
                error = Some(e.clone());
                return Err(e);
            }
            if written.is_multiple_of(100_000) {
                progress(&format!("copying {name:?}: {written} documents"));
            }
        }
        Ok(())
    });
    if let Some(e) = error {
        return Err(e);
    }
    visited.map_err(|e| e.to_string())?;
    if first || !batch.is_empty() {
        flush(&mut batch, &mut first)?;
    }
    Ok(())
}

/// The documents of `table` and the checksum of their ids and records, in id order.
fn summary(read: &dyn crate::store::ReadTxn, table: &str) -> Result<(u64, u64), StoreError> {
    let docs = read.docs(table)?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut n = 0u64;
    docs.for_each(&mut |id, record| {
        h.update(&(id.len() as u64).to_le_bytes());
        h.update(id.as_bytes());
        h.update(&(record.len() as u64).to_le_bytes());
        h.update(record);
        n += 1;
        Ok(())
    })?;
    Ok((n, h.digest()))
}
