//! The passage job's stages in Spark's executors (`python -m neardup.spark overlap`): reading
//! JSON Lines records as `neardup overlap` reads them, the keys of the collection and the
//! queries packed by bucket, the postings of each bucket joined with the keys asked for and
//! packed by group of queries, and the check of each group from the parts shipped to it
//! ([`neardup::overlap::parts`]), with the records the CLI writes. Glue: every rule is the
//! library's; what crosses Spark is packed in large rows (a row per key or per query cost more
//! in Spark than the check itself).

use std::collections::HashMap;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rayon::prelude::*;
use serde_json::value::RawValue;

use neardup::overlap::parts::{self, Shipped, ShippedPostings, ShippedTexts, Step};
use neardup::overlap::{JsonId, OverlapSpec, PassageRecord};

use super::columns::{batch_lines, binary_column};
use crate::errors::overlap_error;
use crate::guard;
use crate::texts::Source;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(passage_spec, m)?)?;
    m.add_function(wrap_pyfunction!(passage_records, m)?)?;
    m.add_function(wrap_pyfunction!(passage_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(passage_join, m)?)?;
    m.add_function(wrap_pyfunction!(passage_check_group, m)?)?;
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

/// One line of JSON Lines as the passage job reads it: status 0 a document, 1 a blank line,
/// 2 a bad line (the message says why), 3 a document given as tokens; the id as text (the one
/// id rule) and as written, None for a record without one; the text.
type ReadLine = (u8, Option<String>, Option<String>, Option<String>, Option<String>);

fn read_record(
    line: &[u8],
    fields: &neardup::RecordFields<'_>,
    lossy: bool,
    max_doc_bytes: usize,
) -> ReadLine {
    let bad = |m: String| (2u8, Some(m), None, None, None);
    let Some(body) = neardup::record_line(line) else {
        return (1, None, None, None, None);
    };
    let text = match std::str::from_utf8(body) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) if lossy => String::from_utf8_lossy(body),
        Err(e) => {
            return bad(format!(
                "invalid UTF-8 at byte offset {} of the line (use --lossy to replace bad bytes)",
                e.valid_up_to() + (body.as_ptr() as usize - line.as_ptr() as usize)
            ))
        }
    };
    let record = match neardup::parse_json_record(&text, fields) {
        Ok(r) => r,
        Err(e) => return bad(e.0),
    };
    if record.body.len() > max_doc_bytes {
        return bad(format!("document is larger than --max-doc-bytes {max_doc_bytes}"));
    }
    let (id, written) = match record.id.as_deref() {
        Some(raw) => match neardup::id_from_json(raw.get()) {
            Ok(id) => (Some(id.into_owned()), Some(raw.get().to_string())),
            Err(e) => return bad(format!("field {:?}: {e}", fields.id)),
        },
        None => (None, None),
    };
    // A token list (no text field) is a document too, its text the tokens joined: status 3,
    // which a rewrite of the text field refuses.
    let status = match record.body {
        neardup::OwnedDocument::Tokens(_) => 3,
        _ => 0,
    };
    (status, None, id, written, Some(record.body.into_display_text()))
}

/// JSON Lines records read by the library's rule for a record (as `neardup overlap` reads a
/// file's lines), on every core: `offsets` (int64 n+1) and `data` are the lines' bytes as
/// Spark's text reader gives them. Returns `status` (uint8: 0 a document, 1 a blank line, 2 a
/// bad line, 3 a document given as tokens), `errors` (`(row, message)` of each bad line), and
/// as Arrow string buffers (`*_offsets`, `*_data`) each line's `id` (the one id rule),
/// `id_json` (as written) and `text`, with `id_valid` false for a record without an id (both
/// ids then empty, as are all three of a line that is not a document).
#[pyfunction]
#[pyo3(signature = (offsets, data, text_field, id_field, tokens_field, lossy, max_doc_bytes))]
#[allow(clippy::too_many_arguments)]
fn passage_records<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, u8>,
    text_field: &str,
    id_field: &str,
    tokens_field: &str,
    lossy: bool,
    max_doc_bytes: usize,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let lines = batch_lines(offsets.as_slice()?, data.as_slice()?)?;
        let fields = neardup::RecordFields {
            text: text_field,
            id: id_field,
            tokens: tokens_field,
            rank: None,
        };
        let read: Vec<ReadLine> = py.detach(|| {
            lines.par_iter().map(|l| read_record(l, &fields, lossy, max_doc_bytes)).collect()
        });
        let out = PyDict::new(py);
        let status: Vec<u8> = read.iter().map(|r| r.0).collect();
        let errors: Vec<(usize, &str)> =
            read.iter().enumerate().filter_map(|(i, r)| r.1.as_deref().map(|m| (i, m))).collect();
        let ids: Vec<&str> = read.iter().map(|r| r.2.as_deref().unwrap_or("")).collect();
        let written: Vec<&str> = read.iter().map(|r| r.3.as_deref().unwrap_or("")).collect();
        let valid: Vec<bool> = read.iter().map(|r| r.2.is_some()).collect();
        out.set_item("id_valid", PyArray1::from_slice(py, &valid))?;
        out.set_item("status", PyArray1::from_slice(py, &status))?;
        out.set_item("errors", errors)?;
        let texts: Vec<&str> = read.iter().map(|r| r.4.as_deref().unwrap_or("")).collect();
        for (name, values) in [("id", ids), ("id_json", written), ("text", texts)] {
            let (offsets, data) = binary_column(values.iter().map(|v| v.as_bytes()));
            out.set_item(format!("{name}_offsets"), offsets.into_pyarray(py))?;
            out.set_item(format!("{name}_data"), PyBytes::new(py, &data))?;
        }
        Ok(out)
    })
}

/// Little-endian `u32`s appended to `out`.
fn put(out: &mut Vec<u8>, xs: &[u32]) {
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// The `u32`s of a packed part (see [`put`]).
fn words(part: &[u8]) -> PyResult<impl Iterator<Item = u32> + '_> {
    if !part.len().is_multiple_of(4) {
        return Err(crate::errors::input(format!(
            "a packed part of {} bytes is not whole 32-bit numbers",
            part.len()
        )));
    }
    Ok(part.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
}

/// A part's kind: the winnowed keys a document posts as a holder, `(doc, key)` pairs.
const HOLDER: u8 = 0;
/// A part's kind: every key of a query, `(query, key)` pairs.
const QUERY: u8 = 1;

/// The keys of a batch of texts as packed pairs, by bucket (`key % buckets`), so that a
/// shuffle by bucket brings each key's holders and askers together in a few large rows instead
/// of a row per key: `(bucket, kind, pairs)`, kind 0 the `(doc, key)` pairs of `holders` (each
/// text's winnowed keys, what an index posts), kind 1 the `(query, key)` pairs of `queries`
/// (every k-gram's key, the postings a check reads). `pos` numbers the texts.
#[pyfunction]
#[pyo3(signature = (spec, pos, texts, holders, queries, buckets))]
fn passage_pairs<'py>(
    py: Python<'py>,
    spec: &str,
    pos: PyReadonlyArray1<'py, i64>,
    texts: &Bound<'py, PyAny>,
    holders: bool,
    queries: bool,
    buckets: u32,
) -> PyResult<Vec<(u32, u8, Bound<'py, PyBytes>)>> {
    guard(|| {
        let spec = spec_of(spec)?;
        let source = Source::from_py(texts)?;
        let texts = source.texts()?;
        let pos: Vec<u32> = pos.as_slice()?.iter().map(|&p| number(p)).collect::<PyResult<_>>()?;
        if pos.len() != texts.len() || buckets == 0 {
            return Err(crate::errors::input("one number per text, and at least one bucket"));
        }
        let parts: Vec<Vec<Vec<u8>>> = py
            .detach(|| -> Result<_, neardup::overlap::OverlapError> {
                let keys = texts
                    .par_iter()
                    .map(|t| match queries {
                        true => parts::keys(&spec, t, holders),
                        false => Ok((parts::fingerprints(&spec, t)?, Vec::new())),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let mut out = vec![vec![Vec::new(); buckets as usize]; 2];
                for (&p, (winnowed, every)) in pos.iter().zip(&keys) {
                    for (kind, ks) in [(HOLDER, winnowed), (QUERY, every)] {
                        for &k in ks {
                            put(&mut out[kind as usize][(k % buckets) as usize], &[p, k]);
                        }
                    }
                }
                Ok(out)
            })
            .map_err(overlap_error)?;
        let mut rows = Vec::new();
        for (kind, by_bucket) in parts.into_iter().enumerate() {
            for (b, part) in by_bucket.into_iter().enumerate() {
                if !part.is_empty() {
                    rows.push((b as u32, kind as u8, PyBytes::new(py, &part)));
                }
            }
        }
        Ok(rows)
    })
}

/// The postings of the queries' keys, from the packed pairs of a shuffle by bucket
/// ([`passage_pairs`]'s rows: every holder of the partition's keys, and the queries asking for
/// them): each key keeps its first `max_postings` holders, ascending, as an index posts it.
/// Returns `(group, first, part)` by group of queries (`query / group`): `part` holds the
/// records of the keys that some document holds and some query of the group reads, each key
/// once to a group (a list that many of its queries read, boilerplate or a cluster's text, was
/// shipped once per query: 107.7 million holders for the 62,500 documents, 18.1 million once per
/// group, BENCHMARKS.md), about a megabyte a row; each key twice: its whole list
/// ([`held_record`], `first` false) and, for the first pass, its first holders and length
/// ([`first_record`], `first` true). `within`: the queries are the collection's documents (a
/// group's own documents are among the first holders given); `exclude`: never sources.
#[pyfunction]
#[pyo3(signature = (spec, kinds, parts, group, within, exclude))]
fn passage_join<'py>(
    py: Python<'py>,
    spec: &str,
    kinds: Vec<u8>,
    parts: Vec<Bound<'py, PyBytes>>,
    group: u32,
    within: bool,
    exclude: Vec<i64>,
) -> PyResult<Vec<(u32, bool, Bound<'py, PyBytes>)>> {
    guard(|| {
        let spec = spec_of(spec)?;
        if kinds.len() != parts.len() || group == 0 {
            return Err(crate::errors::input("one kind per part, and groups of one query or more"));
        }
        let mut exclude: Vec<u32> = exclude.into_iter().map(number).collect::<PyResult<_>>()?;
        exclude.sort_unstable();
        exclude.dedup();
        let first_n = parts::first_holders_needed(&spec, exclude.len());
        // (key, doc) and (key, query), sorted: a merge join.
        let (mut held, mut asked) = (Vec::new(), Vec::new());
        for (kind, part) in kinds.iter().zip(&parts) {
            let mut w = words(part.as_bytes())?;
            let to = match *kind {
                HOLDER => &mut held,
                QUERY => &mut asked,
                k => return Err(crate::errors::input(format!("a part of kind {k}"))),
            };
            while let (Some(who), Some(key)) = (w.next(), w.next()) {
                to.push((key, who));
            }
        }
        let by_group = py.detach(|| {
            // Each group's open parts (whole lists, first holders), and the key their last
            // records named.
            let mut open: std::collections::BTreeMap<(u32, bool), (Vec<u8>, u32)> =
                Default::default();
            let mut first = Vec::new();
            held.par_sort_unstable();
            held.dedup();
            asked.par_sort_unstable();
            asked.dedup();
            // A group's parts in rows of about PART_BYTES (a row's records whole): an Arrow
            // batch of the check holds many rows.
            let mut out: Vec<(u32, bool, Vec<u8>)> = Vec::new();
            let mut h = 0;
            let mut a = 0;
            while a < asked.len() {
                let key = asked[a].0;
                while h < held.len() && held[h].0 < key {
                    h += 1;
                }
                let end = held[h..].partition_point(|&(k, _)| k == key) + h;
                let a_end = asked[a..].partition_point(|&(k, _)| k == key) + a;
                if end > h {
                    let docs: Vec<u32> = held[h..end]
                        .iter()
                        .take(spec.max_postings as usize)
                        .map(|&(_, d)| d)
                        .collect();
                    // Once to each group of the queries asking: they come ascending, so a
                    // group's queries come together.
                    let mut sent = None;
                    for &(_, q) in &asked[a..a_end] {
                        let g = q / group;
                        if sent.replace(g) == Some(g) {
                            continue;
                        }
                        // The first holders, and those the group's checks must know are
                        // listed to count the rest exactly: the excluded documents and,
                        // within a corpus, the group's own.
                        first.clear();
                        first.extend(docs.iter().take(first_n));
                        if docs.len() > first_n {
                            let rest = &docs[first_n..];
                            if within {
                                let (lo, hi) =
                                    (g * group, g.saturating_mul(group).saturating_add(group));
                                let at = rest.partition_point(|&d| d < lo);
                                first.extend(rest[at..].iter().take_while(|&&d| d < hi));
                            }
                            first.extend(exclude.iter().filter(|d| rest.binary_search(d).is_ok()));
                            first.sort_unstable();
                            first.dedup();
                        }
                        for (shortened, list) in [(false, &docs[..]), (true, &first[..])] {
                            let (blob, last) = open.entry((g, shortened)).or_default();
                            match shortened {
                                false => held_record(blob, *last, key, list),
                                true => first_record(blob, *last, key, docs.len() as u32, list),
                            }
                            *last = key;
                            if blob.len() >= PART_BYTES {
                                out.push((g, shortened, std::mem::take(blob)));
                                *last = 0;
                            }
                        }
                    }
                }
                h = end;
                a = a_end;
            }
            out.extend(
                open.into_iter()
                    .filter(|(_, (blob, _))| !blob.is_empty())
                    .map(|((g, shortened), (b, _))| (g, shortened, b)),
            );
            out
        });
        Ok(by_group.into_iter().map(|(g, f, blob)| (g, f, PyBytes::new(py, &blob))).collect())
    })
}

/// Appends `x` as a LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut x: u32) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Reads a LEB128 varint at `*at`, moving past it.
fn varint(part: &[u8], at: &mut usize) -> PyResult<u32> {
    let mut x: u64 = 0;
    for shift in (0..35).step_by(7) {
        let b =
            *part.get(*at).ok_or_else(|| crate::errors::input("a packed posting ends early"))?;
        *at += 1;
        x |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return u32::try_from(x)
                .map_err(|_| crate::errors::input("a packed number is too large"));
        }
    }
    Err(crate::errors::input("a packed number is too long"))
}

/// One record of a part of held postings: the key as its distance from the part's last key
/// (`last`; keys come ascending), the holders' count and the holders, each as its distance
/// from the one before (they are ascending), all varints: a third of the bytes of whole
/// numbers, which every pass of the check moves through the JVM.
fn held_record(out: &mut Vec<u8>, last: u32, key: u32, docs: &[u32]) {
    put_varint(out, key - last);
    put_holders(out, docs);
}

/// The holders' count and the holders, each as its distance from the one before.
fn put_holders(out: &mut Vec<u8>, docs: &[u32]) {
    put_varint(out, docs.len() as u32);
    let mut prev = 0;
    for &d in docs {
        put_varint(out, d - prev);
        prev = d;
    }
}

/// One record of a part of first holders, for the first pass: as [`held_record`], with the
/// length of the key's whole list before the holders given (`n`, at least theirs).
fn first_record(out: &mut Vec<u8>, last: u32, key: u32, n: u32, docs: &[u32]) {
    put_varint(out, key - last);
    put_varint(out, n);
    put_holders(out, docs);
}

/// The records of a part of held postings: `(key, n, holders)`, `n` the whole list's length
/// (read from a [`first_record`] when `first`; else the holders', of a [`held_record`]).
fn held_records(
    part: &[u8],
    first: bool,
    mut each: impl FnMut(u32, u32, Vec<u32>),
) -> PyResult<()> {
    let bad = || crate::errors::input("a packed posting is out of order");
    let (mut at, mut key) = (0, 0u32);
    while at < part.len() {
        key = key.checked_add(varint(part, &mut at)?).ok_or_else(bad)?;
        let whole = if first { Some(varint(part, &mut at)?) } else { None };
        let n = varint(part, &mut at)? as usize;
        if n > part.len() - at {
            return Err(crate::errors::input("a packed posting ends early"));
        }
        let mut docs = Vec::with_capacity(n);
        let mut d = 0u32;
        for _ in 0..n {
            d = d.checked_add(varint(part, &mut at)?).ok_or_else(bad)?;
            docs.push(d);
        }
        each(key, whole.unwrap_or(n as u32), docs);
    }
    Ok(())
}

/// The size of a row of packed postings that [`passage_join`] writes.
const PART_BYTES: usize = 1 << 20;

/// What [`passage_check_group`] gives per query: the documents whose texts it needs (None when
/// done), the passage records (JSON, one per passage), the summary record (JSON), and within a
/// corpus the text without its repeats and the code points removed.
type Checked = (Option<Vec<i64>>, Vec<String>, Option<String>, Option<(String, u64)>);

fn number(n: i64) -> PyResult<u32> {
    u32::try_from(n).map_err(|_| crate::errors::input(format!("document number {n} out of range")))
}

/// Checks a group of queries ([`neardup::overlap::parts::check`]), on every core: `queries`
/// (their numbers), `own` (each one's number in the collection, if it is one of its documents),
/// `query_ids` (as written) and `query_texts`; `held`, the packed postings of the keys the
/// group's queries read, each key once ([`passage_join`]'s parts: its first holders when
/// `first`, for a first pass that learns what to ship, else whole); and the texts shipped to
/// the group, each once (`docs`, `doc_ids` as written, `doc_texts`). Every query of the group
/// reads the same postings and texts.
#[pyfunction]
#[pyo3(signature = (spec, within, exclude, queries, own, query_ids, query_texts, held, first, docs, doc_ids, doc_texts))]
#[allow(clippy::too_many_arguments)]
fn passage_check_group<'py>(
    py: Python<'py>,
    spec: &str,
    within: bool,
    exclude: Vec<i64>,
    queries: Vec<i64>,
    own: Vec<Option<i64>>,
    query_ids: Vec<Option<String>>,
    query_texts: &Bound<'py, PyAny>,
    held: Vec<Bound<'py, PyBytes>>,
    first: bool,
    docs: Vec<i64>,
    doc_ids: Vec<String>,
    doc_texts: &Bound<'py, PyAny>,
) -> PyResult<Vec<Checked>> {
    guard(|| {
        let spec = spec_of(spec)?;
        let exclude: Vec<u32> = exclude.into_iter().map(number).collect::<PyResult<_>>()?;
        let query_source = Source::from_py(query_texts)?;
        let query_texts = query_source.texts()?;
        let doc_source = Source::from_py(doc_texts)?;
        let doc_texts = doc_source.texts()?;
        let n = queries.len();
        if own.len() != n || query_ids.len() != n || query_texts.len() != n {
            return Err(crate::errors::input("one number, id and text per query"));
        }
        if doc_ids.len() != docs.len() || doc_texts.len() != docs.len() {
            return Err(crate::errors::input("one id and text per document shipped"));
        }
        for q in &queries {
            number(*q)?;
        }
        let mut lists = Vec::new();
        for part in &held {
            held_records(part.as_bytes(), first, |key, n, holders| lists.push((key, n, holders)))?;
        }
        let postings = match first {
            true => ShippedPostings::first_holders(&spec, lists),
            false => {
                ShippedPostings::new(&spec, lists.into_iter().map(|(k, _, h)| (k, h)).collect())
            }
        };
        let postings = Arc::new(postings.map_err(overlap_error)?);
        let mut names: HashMap<u32, JsonId> = HashMap::with_capacity(docs.len());
        let mut texts = Vec::with_capacity(docs.len());
        for ((d, id), text) in docs.iter().zip(doc_ids).zip(&doc_texts) {
            let d = number(*d)?;
            let id = RawValue::from_string(id)
                .map_err(|e| crate::errors::input(format!("a source's id: {e}")))?;
            names.insert(d, id);
            texts.push((d, text.to_string()));
        }
        let texts = Arc::new(ShippedTexts::new(texts));
        let mut work = Vec::with_capacity(n);
        for ((own, qid), text) in own.into_iter().zip(query_ids).zip(&query_texts) {
            work.push((own.map(number).transpose()?, qid, *text));
        }
        let run = |(own, qid, text): (Option<u32>, Option<String>, &str)| {
            let shipped = Shipped::sharing(Arc::clone(&postings), Arc::clone(&texts));
            answer(&spec, &shipped, qid, text, own, &exclude, within, &names)
        };
        py.detach(|| work.into_par_iter().map(run).collect())
    })
}

/// One query's check from its shipped parts, as [`Checked`].
#[allow(clippy::too_many_arguments)]
fn answer(
    spec: &OverlapSpec,
    shipped: &Shipped,
    qid: Option<String>,
    text: &str,
    own: Option<u32>,
    exclude: &[u32],
    within: bool,
    names: &HashMap<u32, JsonId>,
) -> PyResult<Checked> {
    let found =
        match parts::check(spec, shipped, text, own, exclude, within).map_err(overlap_error)? {
            Step::Needs(docs) => {
                return Ok((Some(docs.into_iter().map(i64::from).collect()), vec![], None, None))
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
        return Err(crate::errors::input(format!("source {d} was not shipped with its id")));
    }
    let name = |n: u32| names[&n].clone();
    let json = |e: serde_json::Error| crate::errors::input(e.to_string());
    let lines = found
        .all_passages()
        .into_iter()
        .map(|p| serde_json::to_string(&PassageRecord::new(query.as_deref(), p, &name)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(json)?;
    let summary =
        serde_json::to_string(&found.summary_record(query.as_deref(), &name)).map_err(json)?;
    let rewritten = match (within, own) {
        (true, Some(n)) => Some(found.without_repeats(text, n)),
        _ => None,
    };
    Ok((None, lines, Some(summary), rewritten))
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
