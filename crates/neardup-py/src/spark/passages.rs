//! The passage job's stages in Spark's executors (`python -m neardup.spark overlap`): reading
//! JSON Lines records as `neardup overlap` reads them, the fingerprints of the collection, the
//! keys of the queries, and the check of each query from the parts shipped to it
//! ([`neardup::overlap::parts`]), with the records the CLI writes. Glue: every rule is the
//! library's.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use serde_json::value::RawValue;

use neardup::overlap::parts::{self, Shipped, Step};
use neardup::overlap::{JsonId, OverlapSpec, PassageRecord};

use crate::errors::overlap_error;
use crate::guard;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(passage_spec, m)?)?;
    m.add_function(wrap_pyfunction!(passage_records, m)?)?;
    m.add_function(wrap_pyfunction!(passage_keys, m)?)?;
    m.add_function(wrap_pyfunction!(passage_check, m)?)?;
    m.add_function(wrap_pyfunction!(passage_splice, m)?)?;
    Ok(())
}

fn spec_of(spec: &str) -> PyResult<OverlapSpec> {
    let spec: OverlapSpec = serde_json::from_str(spec)
        .map_err(|e| crate::errors::option(format!("passage settings: {e}")))?;
    spec.validate().map_err(overlap_error)?;
    Ok(spec)
}

/// The passage settings of the options given by keyword (`neardup.overlap`'s names), checked,
/// as the JSON the executors receive.
#[pyfunction]
#[pyo3(signature = (options=None))]
fn passage_spec(options: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
    let spec = crate::overlap::spec_from_options(options)?;
    serde_json::to_string(&spec).map_err(|e| crate::errors::input(e.to_string()))
}

/// JSON Lines records read by the library's rule for a record (as `neardup overlap` reads a
/// file's lines): for each line `(status, error, id, id_json, text)`, status 0 a document, 1 a
/// blank line, 2 a bad line (`error` says why), 3 a document given as tokens; `id` the id as text (the one id rule) and
/// `id_json` as written, None for a record without one.
#[pyfunction]
#[pyo3(signature = (lines, text_field, id_field, tokens_field, lossy, max_doc_bytes))]
#[allow(clippy::type_complexity)]
fn passage_records(
    py: Python<'_>,
    lines: Vec<Vec<u8>>,
    text_field: &str,
    id_field: &str,
    tokens_field: &str,
    lossy: bool,
    max_doc_bytes: usize,
) -> PyResult<Vec<(u8, Option<String>, Option<String>, Option<String>, Option<String>)>> {
    let fields =
        neardup::RecordFields { text: text_field, id: id_field, tokens: tokens_field, rank: None };
    Ok(py.detach(|| {
        lines
            .par_iter()
            .map(|line| {
                let bad = |m: String| (2u8, Some(m), None, None, None);
                let Some(body) = neardup::record_line(line) else {
                    return (1, None, None, None, None);
                };
                let text = match std::str::from_utf8(body) {
                    Ok(t) => std::borrow::Cow::Borrowed(t),
                    Err(_) if lossy => String::from_utf8_lossy(body),
                    Err(e) => {
                        return bad(format!(
                            "invalid UTF-8 at byte offset {} of the line (use --lossy to \
                             replace bad bytes)",
                            e.valid_up_to() + (body.as_ptr() as usize - line.as_ptr() as usize)
                        ))
                    }
                };
                let record = match neardup::parse_json_record(&text, &fields) {
                    Ok(r) => r,
                    Err(e) => return bad(e.0),
                };
                if record.body.len() > max_doc_bytes {
                    return bad(format!("document is larger than --max-doc-bytes {max_doc_bytes}"));
                }
                let (id, written) = match record.id.as_deref() {
                    Some(raw) => match neardup::id_from_json(raw.get()) {
                        Ok(id) => (Some(id.into_owned()), Some(raw.get().to_string())),
                        Err(e) => return bad(format!("field {id_field:?}: {e}")),
                    },
                    None => (None, None),
                };
                // A token list (no text field) is a document too, its text the tokens joined:
                // status 3, which a rewrite of the text field refuses.
                let status = match record.body {
                    neardup::OwnedDocument::Tokens(_) => 3,
                    _ => 0,
                };
                (status, None, id, written, Some(record.body.into_display_text()))
            })
            .collect()
    }))
}

/// The keys of each text, flattened: `(rows, keys)`, row `i`'s keys where `rows` is `i`. A
/// collection's documents (`query` false) give their winnowed keys, what an index posts; queries
/// give the key of every k-gram, the postings a check reads.
#[pyfunction]
fn passage_keys(
    py: Python<'_>,
    spec: &str,
    texts: Vec<String>,
    query: bool,
) -> PyResult<(Vec<i64>, Vec<i64>)> {
    guard(|| {
        let spec = spec_of(spec)?;
        let keys: Vec<Vec<u32>> = py
            .detach(|| {
                texts
                    .par_iter()
                    .map(|t| match query {
                        true => parts::query_keys(&spec, t),
                        false => parts::fingerprints(&spec, t),
                    })
                    .collect::<Result<_, _>>()
            })
            .map_err(overlap_error)?;
        let (mut rows, mut flat) = (Vec::new(), Vec::new());
        for (i, k) in keys.into_iter().enumerate() {
            rows.extend(std::iter::repeat_n(i as i64, k.len()));
            flat.extend(k.into_iter().map(i64::from));
        }
        Ok((rows, flat))
    })
}

/// One query as a check of parts reads it: its id as written, text, own number, the holders
/// of its keys, and the texts shipped `(doc, id as written, text)`.
type QueryParts =
    (Option<String>, String, Option<i64>, Vec<(i64, Vec<i64>)>, Vec<(i64, String, String)>);

/// What [`passage_check`] gives per query: the documents whose texts it needs (None when done),
/// the passage records (JSON, one per passage), the summary record (JSON), and within a corpus
/// the text without its repeats and the code points removed.
type Checked = (Option<Vec<i64>>, Vec<String>, Option<String>, Option<(String, u64)>);

fn number(n: i64) -> PyResult<u32> {
    u32::try_from(n).map_err(|_| crate::errors::input(format!("document number {n} out of range")))
}

/// Checks each query from its parts ([`neardup::overlap::parts::check`]), on every core.
#[pyfunction]
fn passage_check(
    py: Python<'_>,
    spec: &str,
    within: bool,
    exclude: Vec<i64>,
    queries: Vec<QueryParts>,
) -> PyResult<Vec<Checked>> {
    guard(|| {
        let spec = spec_of(spec)?;
        let exclude: Vec<u32> = exclude.into_iter().map(number).collect::<PyResult<_>>()?;
        let run = |(qid, text, own, held, texts): QueryParts| -> PyResult<Checked> {
            let own = own.map(number).transpose()?;
            let held = held
                .into_iter()
                .map(|(k, docs)| {
                    let docs = docs.into_iter().map(number).collect::<PyResult<Vec<u32>>>()?;
                    Ok((
                        u32::try_from(k).map_err(|_| crate::errors::input("key out of range"))?,
                        docs,
                    ))
                })
                .collect::<PyResult<Vec<_>>>()?;
            let mut names: std::collections::HashMap<u32, JsonId> = Default::default();
            let mut shipped_texts = Vec::with_capacity(texts.len());
            for (d, id, t) in texts {
                let d = number(d)?;
                let id = RawValue::from_string(id)
                    .map_err(|e| crate::errors::input(format!("a source's id: {e}")))?;
                names.insert(d, id);
                shipped_texts.push((d, t));
            }
            let shipped = Shipped::new(&spec, held, shipped_texts).map_err(overlap_error)?;
            let found = match parts::check(&spec, &shipped, &text, own, &exclude, within)
                .map_err(overlap_error)?
            {
                Step::Needs(docs) => {
                    return Ok((
                        Some(docs.into_iter().map(i64::from).collect()),
                        vec![],
                        None,
                        None,
                    ))
                }
                Step::Done(found) => found,
            };
            let query = qid
                .map(RawValue::from_string)
                .transpose()
                .map_err(|e| crate::errors::input(format!("a query's id: {e}")))?;
            // Every source a passage names was aligned, so its text (and id) was shipped.
            if let Some(d) = found
                .all_passages()
                .iter()
                .flat_map(|p| std::iter::once(p.source).chain(p.also.iter().copied()))
                .find(|d| !names.contains_key(d))
            {
                return Err(crate::errors::input(format!(
                    "source {d} was not shipped with its id"
                )));
            }
            let name = |n: u32| names[&n].clone();
            let json = |e: serde_json::Error| crate::errors::input(e.to_string());
            let lines = found
                .all_passages()
                .into_iter()
                .map(|p| serde_json::to_string(&PassageRecord::new(query.as_deref(), p, &name)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(json)?;
            let summary = serde_json::to_string(&found.summary_record(query.as_deref(), &name))
                .map_err(json)?;
            let rewritten = match (within, own) {
                (true, Some(n)) => Some(found.without_repeats(&text, n)),
                _ => None,
            };
            Ok((None, lines, Some(summary), rewritten))
        };
        py.detach(|| queries.into_par_iter().map(run).collect())
    })
}

/// JSON Lines records with their text field's value replaced (`-o`'s rewrite, as
/// `neardup overlap -o` writes it): every other byte of each line kept (`1.10` stays `1.10`).
#[pyfunction]
fn passage_splice(
    py: Python<'_>,
    lines: Vec<Vec<u8>>,
    texts: Vec<String>,
    text_field: &str,
    id_field: &str,
    tokens_field: &str,
    lossy: bool,
) -> PyResult<Vec<String>> {
    if lines.len() != texts.len() {
        return Err(crate::errors::input("one text per line is needed"));
    }
    let fields =
        neardup::RecordFields { text: text_field, id: id_field, tokens: tokens_field, rank: None };
    py.detach(|| {
        lines
            .par_iter()
            .zip(texts.par_iter())
            .map(|(line, text)| {
                let body = neardup::record_line(line).unwrap_or_default();
                let line = match lossy {
                    true => String::from_utf8_lossy(body),
                    false => {
                        std::borrow::Cow::Borrowed(std::str::from_utf8(body).map_err(|e| {
                            crate::errors::input(format!(
                                "a record changed while it was checked: {e}"
                            ))
                        })?)
                    }
                };
                let span = neardup::text_span(&line, &fields)
                    .ok()
                    .flatten()
                    .ok_or_else(|| crate::errors::input("a record changed while it was checked"))?;
                let mut out = String::with_capacity(line.len());
                out.push_str(&line[..span.start]);
                out.push_str(&serde_json::Value::String(text.clone()).to_string());
                out.push_str(&line[span.end..]);
                Ok(out)
            })
            .collect()
    })
}
