//! `neardup.overlap` and `Index.overlap`: the passage check of `neardup overlap`, over batches
//! in memory. Glue: the settings become an [`OverlapSpec`] (its own checks and messages), the
//! work is [`PassageIndex::check_batch`], and each answer goes back as plain tuples that the
//! Python layer names (`neardup.overlap` in `__init__.py`).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use neardup::overlap::{
    Batch, JsonId, Overlap, OverlapOptions, OverlapSpec, PassageIndex, PassageRecord, SavedIndex,
    WrittenIds,
};
use serde_json::value::RawValue;

use rayon::prelude::*;

use crate::guard;
use crate::interrupt::{interruptible, Stop};
use crate::texts::Source;
use crate::values::to_json;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(overlap_texts, m)?)?;
    Ok(())
}

pub(crate) use crate::errors::overlap_error;

/// The settings of the passage check by their keyword names (those of `neardup overlap`'s
/// options, [`OverlapOptions::NAMES`]). Each value goes through the one conversion of options
/// ([`to_json`]: NaN, infinities and ints past 64 bits refused by name) and the library's
/// setter, which checks it against the option table: a value of the wrong kind is an
/// `InputTypeError`, one out of the option's range an `OptionError`, each naming the option and
/// the value.
pub(crate) fn spec_from_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<OverlapSpec> {
    overlap_options(options)?.to_spec().map_err(overlap_error)
}

/// The passage options given by keyword (see [`spec_from_options`]), before they are applied to
/// the defaults or to a saved index's settings.
pub(crate) fn overlap_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<OverlapOptions> {
    let mut o = OverlapOptions::default();
    for (key, value) in options.into_iter().flat_map(|d| d.iter()) {
        let Ok(key) = key.cast::<PyString>() else {
            return Err(crate::errors::input_type(format!(
                "passage options: keys must be str, found {}",
                key.get_type().name()?
            )));
        };
        let key = crate::values::utf8(key, || "a passage option's name".into())?;
        o.set(key, &to_json(&value, key)?).map_err(overlap_error)?;
    }
    // Checked now, so that a bad value is refused before any text is read.
    o.to_spec().map_err(overlap_error)?;
    Ok(o)
}

/// One query's answer as a dict: the library's summary record (`query`, `chars`,
/// `copied_chars`, `copied`, `copied_with_quotations`, `excluded_chars`, `sources`), with its
/// `passages` (counted) and `excluded` ones (quotations, references), each the library's
/// passage record: the keys of `neardup overlap --summary` and `--passages`, one for one.
pub(crate) fn overlap_dict<'py>(
    py: Python<'py>,
    o: &Overlap,
    query: Option<&RawValue>,
    name: &dyn Fn(u32) -> JsonId,
) -> PyResult<Bound<'py, PyDict>> {
    let json = |e: serde_json::Error| crate::errors::input(e.to_string());
    let mut answer = serde_json::to_value(o.summary_record(query, name)).map_err(json)?;
    for (key, list) in [("passages", &o.passages), ("excluded", &o.excluded)] {
        let records: Vec<PassageRecord> =
            list.iter().map(|p| PassageRecord::new(query, p, name)).collect();
        answer[key] = serde_json::to_value(records).map_err(json)?;
    }
    Ok(crate::pipeline::to_py(py, &answer)?.cast_into::<PyDict>()?)
}

/// A query checked on a snapshot of a live index's passages (`Index.overlap`): off the calling
/// thread, so that Ctrl-C stops it (a flag of this call's own), and on a snapshot, so that
/// writers on other threads do not wait. `id` (the query's own) and `exclude_source` are never
/// its sources.
pub(crate) fn check_snapshot<'py>(
    py: Python<'py>,
    snapshot: impl FnOnce() -> PyResult<Option<std::sync::Arc<PassageIndex>>> + Send,
    text: &str,
    id: Option<&str>,
    exclude_source: &[String],
) -> PyResult<Bound<'py, PyDict>> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let flag = Arc::new(AtomicBool::new(false));
    let stop = crate::interrupt::Stop::on(flag.clone());
    let answer = crate::interrupt::interruptible_with(py, None, stop, |_| -> PyResult<_> {
        let snapshot = snapshot()?;
        let Some(index) = snapshot.as_deref() else {
            return Err(crate::errors::input(
                "this index keeps no passages: make it with Index(..., passages=True)",
            ));
        };
        let exclude = excluded(index, exclude_source)?;
        let found = index.check_until(id, text, &exclude, Some(&flag)).map_err(overlap_error)?;
        // The ids of the sources, taken while the snapshot is held.
        let ids: std::collections::HashMap<u32, String> = found
            .passages
            .iter()
            .chain(&found.excluded)
            .flat_map(|p| std::iter::once(p.source).chain(p.also.iter().copied()))
            .map(|n| (n, index.id(n).to_string()))
            .collect();
        Ok((found, ids))
    });
    let (found, ids) = answer?;
    let name = |n: u32| json_string_id(&ids[&n]);
    let query = id.map(json_string_id);
    overlap_dict(py, &found, query.as_deref(), &name)
}

/// An id (as text) as a JSON string.
pub(crate) fn json_string_id(id: &str) -> JsonId {
    RawValue::from_string(neardup::id_to_json(id)).expect("a JSON string")
}

/// The numbers of the documents named in `exclude` (ids as text: the one id rule); an id the
/// index does not hold is an error.
pub(crate) fn excluded(index: &PassageIndex, exclude: &[String]) -> PyResult<Vec<u32>> {
    index.numbers_of(exclude).map_err(|e| crate::errors::input(format!("exclude_source: {e}")))
}

/// The passage check of a batch: `queries` against `against` (texts with their ids) and/or a
/// saved passage index, or, with neither, against each other. Ids are JSON text, as the
/// command line keeps them; `save_index` saves the index with the queries added. Without
/// `own_ids` the query ids are only positions, not documents' ids: a source with the same id is
/// still a source (a list checked against a list). With `remove` (within one input), each
/// answer gives its query's text without the passages it repeats from earlier ones.
#[pyfunction]
#[pyo3(signature = (query_ids, queries, against_ids, against, index_dir, options, exclude,
                    save_index, own_ids, add = false, remove = false))]
#[allow(clippy::too_many_arguments)]
fn overlap_texts<'py>(
    py: Python<'py>,
    query_ids: Vec<String>,
    queries: &Bound<'py, PyAny>,
    against_ids: Vec<String>,
    against: Option<&Bound<'py, PyAny>>,
    index_dir: Option<PathBuf>,
    options: Option<&Bound<'_, PyDict>>,
    exclude: Vec<String>,
    save_index: Option<PathBuf>,
    own_ids: bool,
    add: bool,
    remove: bool,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    guard(|| {
        let options = overlap_options(options)?;
        let spec = options.to_spec().map_err(overlap_error)?;
        let texts = |source: &Bound<'_, PyAny>, ids: Vec<String>, what: &str| {
            let source = Source::from_py(source)?;
            let texts = source.texts_named(|i| match ids.get(i) {
                Some(id) => format!("{what}: document {}", neardup::id_to_json(id)),
                None => format!("{what}: document {i}"),
            })?;
            if ids.len() != texts.len() {
                return Err(crate::errors::input(format!(
                    "{what}: {} ids for {} texts",
                    ids.len(),
                    texts.len()
                )));
            }
            Ok(ids.into_iter().zip(texts.iter().map(|t| t.to_string())).collect::<Vec<_>>())
        };
        // Every id is text (`7` and `"7"` are one document); answers give each as written.
        let mut written = WrittenIds::default();
        let mut plain = |ids: Vec<String>| -> PyResult<Vec<String>> {
            ids.iter()
                .map(|id| written.read(id).map_err(|e| crate::errors::input(format!("{id}: {e}"))))
                .collect()
        };
        let query_json: Vec<String> = query_ids.clone();
        let query_ids = plain(query_ids)?;
        let against_ids = plain(against_ids)?;
        let exclude = plain(exclude)?;
        let queries = texts(queries, query_ids, "queries")?;
        let collection = match against {
            Some(a) => texts(a, against_ids, "against")?,
            None => Vec::new(),
        };
        let within = against.is_none() && index_dir.is_none();
        // Against a saved index alone, adding nothing: read in place, as `neardup overlap`
        // reads it (its postings and each aligned source's text as the check needs them).
        if let (Some(dir), true, None, false) =
            (&index_dir, collection.is_empty(), &save_index, add)
        {
            let saved = SavedIndex::open(dir, &options).map_err(overlap_error)?;
            if let Some(saved) = saved {
                return check_in_place(py, &saved, &queries, &query_json, own_ids, &exclude);
            }
        }
        // The texts `remove` cuts (the check takes the queries).
        let texts: Vec<String> =
            if remove { queries.iter().map(|(_, t)| t.clone()).collect() } else { Vec::new() };
        // Ctrl-C stops the work between documents (the index's stop flag).
        let (index, found) = interruptible(py, None, |stop| -> PyResult<_> {
            // The whole read-modify-write of the saved index holds its lock, from before the
            // load (when `index_dir` is the same directory) to after the save, as `neardup
            // overlap --save-index` holds it: two writers that each loaded, added and saved
            // would lose the documents of the one that saved first.
            let lock = save_index.as_deref().map(|dir| lock_index(dir, stop)).transpose()?;
            let mut index = match &index_dir {
                // A saved index's own settings, with those given applied.
                Some(dir) => written.load(dir, &options).map_err(overlap_error)?,
                None => PassageIndex::new(spec).map_err(overlap_error)?,
            };
            index.set_stop(Some(stop.flag()));
            // As `neardup overlap`: a document of the collection given again with another text
            // replaces the saved one.
            index.join(collection).map_err(overlap_error)?;
            let exclude = excluded(&index, &exclude)?;
            // Checked queries join the saved index only when asked (`add`).
            let mode = Batch::of(within, add);
            let found = if own_ids || mode != Batch::Against {
                index.check_batch(queries, mode, &exclude).map_err(overlap_error)?
            } else {
                queries
                    .par_iter()
                    .map(|(_, text)| {
                        if stop.is_set() {
                            return Err(neardup::overlap::OverlapError::Stopped);
                        }
                        index.check(None, text, &exclude)
                    })
                    .collect::<Result<_, _>>()
                    .map_err(overlap_error)?
            };
            if let Some(lock) = &lock {
                written.save(&index, lock).map_err(overlap_error)?;
            }
            index.set_stop(None);
            Ok((index, found))
        })?;
        let dicts = answers(py, &query_json, &found, &|n| written.json(index.id(n)))?;
        if remove {
            // Within one input the queries are documents 0.. in order: each without the
            // passages it repeats from earlier ones, as `neardup overlap -o` writes it.
            for (n, ((dict, answer), text)) in dicts.iter().zip(&found).zip(&texts).enumerate() {
                let (kept, removed) = answer.without_repeats(text, n as u32);
                dict.set_item("without_repeats", kept)?;
                dict.set_item("removed_chars", removed)?;
            }
        }
        Ok(dicts)
    })
}

/// Each query's answer as a dict ([`overlap_dict`]), its id given as JSON text.
fn answers<'py>(
    py: Python<'py>,
    query_json: &[String],
    found: &[Overlap],
    name: &dyn Fn(u32) -> JsonId,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    query_json
        .iter()
        .zip(found)
        .map(|(id, o)| {
            let query = RawValue::from_string(id.clone())
                .map_err(|e| crate::errors::input(format!("{id}: {e}")))?;
            overlap_dict(py, o, Some(&query), name)
        })
        .collect()
}

/// The check of `queries` against a saved index read in place ([`SavedIndex`]), in parallel;
/// Ctrl-C stops it between candidate sources. Sources are named as the index saved their ids.
fn check_in_place<'py>(
    py: Python<'py>,
    saved: &SavedIndex,
    queries: &[(String, String)],
    query_json: &[String],
    own_ids: bool,
    exclude: &[String],
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let exclude = saved
        .numbers_of(exclude)
        .map_err(|e| crate::errors::input(format!("exclude_source: {e}")))?;
    // Ctrl-C stops the work between candidate sources of a query.
    let found = interruptible(py, None, |stop| -> PyResult<Vec<Overlap>> {
        let flag = stop.flag();
        queries
            .par_iter()
            .map(|(id, text)| {
                saved.check_until(own_ids.then_some(id.as_str()), text, &exclude, Some(&flag))
            })
            .collect::<Result<_, _>>()
            .map_err(overlap_error)
    })?;
    answers(py, query_json, &found, &|n| saved.id_raw(n))
}

/// The lock of the saved index in `dir` (made if need be), waiting while another writer holds
/// it (another process's `neardup overlap --save-index`, or another call); Ctrl-C stops the
/// wait.
fn lock_index(dir: &std::path::Path, stop: &Stop) -> PyResult<neardup::IndexLock> {
    loop {
        if let Some(lock) = neardup::IndexLock::try_acquire(dir).map_err(crate::dedup_error)? {
            return Ok(lock);
        }
        stop.check()?;
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
