//! Rows as records (the first pass) and rows handed on whole (the second).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::ControlFlow;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_schema::{ArrowError, DataType, Schema, TimeUnit};
use serde_json::value::RawValue;

use super::open::{open_table, read_error, Rows};
use super::RecordBatch;
use crate::read::{
    json_string, Body, Digester, Format, InputError, InputErrorKind, ReadOptions, Record,
};

/// A columnar source to read: its file, its format, and the columns its directories add.
#[derive(Debug)]
pub(crate) struct Input<'a> {
    pub file: File,
    pub format: Format,
    pub partition: &'a [(String, Option<String>)],
}

/// The top-level column a field name reads: the column of that whole name, else the column of
/// its first dotted segment.
pub(super) fn root_of(schema: &Schema, name: &str) -> Option<usize> {
    schema.index_of(name).ok().or_else(|| {
        let (head, _) = name.split_once('.')?;
        schema.index_of(head).ok()
    })
}

/// The column a field name reads in `batch`: the whole name, else a dotted path into struct
/// columns.
fn column(batch: &RecordBatch, name: &str) -> Option<ArrayRef> {
    if let Some(c) = batch.column_by_name(name) {
        return Some(c.clone());
    }
    let (head, rest) = name.split_once('.')?;
    let mut current = batch.column_by_name(head)?.clone();
    let mut rest = rest;
    loop {
        let DataType::Struct(_) = current.data_type() else { return None };
        let s = current.as_struct();
        if let Some(c) = s.column_by_name(rest) {
            return Some(c.clone());
        }
        let (head, tail) = rest.split_once('.')?;
        current = s.column_by_name(head)?.clone();
        rest = tail;
    }
}

/// True for the string types a text column may have.
fn is_string(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => is_string(value),
        _ => false,
    }
}

/// A column as `Utf8` (strings of any width, views and dictionaries of strings).
fn as_utf8(c: &ArrayRef) -> Result<ArrayRef, String> {
    arrow_cast::cast(c, &DataType::LargeUtf8).map_err(|e| e.to_string())
}

/// The ids of a batch as raw JSON (strings quoted, integers as written); `None` for a null.
fn ids(c: &ArrayRef, name: &str) -> Result<Vec<Option<Box<RawValue>>>, String> {
    let t = c.data_type();
    if is_string(t) {
        let s = as_utf8(c)?;
        let s = s.as_string::<i64>();
        return Ok(s.iter().map(|v| v.map(json_string)).collect());
    }
    let raw = |text: String| RawValue::from_string(text).expect("a number is JSON");
    if t.is_unsigned_integer() {
        let v = arrow_cast::cast(c, &DataType::UInt64).map_err(|e| e.to_string())?;
        return Ok(v
            .as_primitive::<UInt64Type>()
            .iter()
            .map(|v| v.map(|v| raw(v.to_string())))
            .collect());
    }
    if t.is_integer() {
        let v = arrow_cast::cast(c, &DataType::Int64).map_err(|e| e.to_string())?;
        return Ok(v
            .as_primitive::<Int64Type>()
            .iter()
            .map(|v| v.map(|v| raw(v.to_string())))
            .collect());
    }
    if t.is_floating() {
        // pandas writes a nullable integer column as floats; JSONL ids may be any number.
        let v = arrow_cast::cast(c, &DataType::Float64).map_err(|e| e.to_string())?;
        return Ok(v
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.and_then(serde_json::Number::from_f64).map(|n| raw(n.to_string())))
            .collect());
    }
    Err(format!("the id column {name:?} holds {t}: ids are strings or numbers"))
}

/// The keep rule's values of a batch: numbers, dates and timestamps (as instants; one
/// without a time zone read as UTC), or strings read as numbers or ISO 8601 dates.
fn ranks(c: &ArrayRef, name: &str) -> Result<Vec<Result<Option<neardup::Rank>, String>>, String> {
    use neardup::Rank;
    let t = c.data_type();
    let int64 = |c: &ArrayRef| -> Result<Vec<Option<i64>>, String> {
        let v = arrow_cast::cast(c, &DataType::Int64).map_err(|e| e.to_string())?;
        Ok(v.as_primitive::<Int64Type>().iter().collect())
    };
    // Instants in nanoseconds, integers as integers, decimals as their digits: exact (as
    // doubles, integers past 2^53 and timestamps 1 ns apart tied, and the first was kept).
    let nanos = |values: Vec<Option<i64>>, per: i128| -> Vec<Result<Option<Rank>, String>> {
        values.into_iter().map(|v| Ok(v.map(|v| Rank::from_nanos(i128::from(v) * per)))).collect()
    };
    Ok(match t {
        _ if is_string(t) => {
            let s = as_utf8(c)?;
            s.as_string::<i64>()
                .iter()
                .map(|v| Ok(v.map(Rank::parse_value).transpose()?.flatten()))
                .collect()
        }
        DataType::Timestamp(unit, _) => {
            let per = match unit {
                TimeUnit::Second => 1_000_000_000,
                TimeUnit::Millisecond => 1_000_000,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1,
            };
            nanos(int64(c)?, per)
        }
        DataType::Date32 => {
            let v = arrow_cast::cast(c, &DataType::Int32).map_err(|e| e.to_string())?;
            let days = v.as_primitive::<arrow_array::types::Int32Type>();
            nanos(days.iter().map(|d| d.map(i64::from)).collect(), 86_400 * 1_000_000_000)
        }
        DataType::Date64 => nanos(int64(c)?, 1_000_000),
        _ if t.is_unsigned_integer() => {
            let v = arrow_cast::cast(c, &DataType::UInt64).map_err(|e| e.to_string())?;
            let v = v.as_primitive::<UInt64Type>();
            v.iter().map(|v| Ok(v.map(|v| Rank::from_i128(i128::from(v))))).collect()
        }
        _ if t.is_integer() => {
            int64(c)?.into_iter().map(|v| Ok(v.map(|v| Rank::from_i128(i128::from(v))))).collect()
        }
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => {
            // Their text is exact (digits and the scale's point).
            let s = as_utf8(&arrow_cast::cast(c, &DataType::Utf8).map_err(|e| e.to_string())?)?;
            s.as_string::<i64>()
                .iter()
                .map(|v| Ok(v.map(Rank::parse_value).transpose()?.flatten()))
                .collect()
        }
        _ if t.is_numeric() => {
            // Floats: NaN is no value (as Python reads it), infinities are values.
            let v = arrow_cast::cast(c, &DataType::Float64).map_err(|e| e.to_string())?;
            v.as_primitive::<Float64Type>().iter().map(|v| Ok(v.and_then(Rank::from_f64))).collect()
        }
        _ => {
            return Err(format!(
                "the column {name:?} (of --keep) holds {t}: expected numbers, dates or strings"
            ))
        }
    })
}

/// Reads a columnar source: each row a record whose `line` is its 1-based row number. The
/// whole file is digested first (the second pass checks it reads the same bytes). Only the
/// text, id and keep columns are decoded, unless [`ReadOptions::read_every_column`].
pub(crate) fn read_columnar(
    input: Input<'_>,
    name: &str,
    opts: &ReadOptions,
    digest: &mut Digester,
    visit: &mut impl FnMut(Result<Record, InputError>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let whole = |message: String| InputError {
        place: name.to_string(),
        message,
        kind: InputErrorKind::Unreadable,
    };
    let Input { mut file, format, partition } = input;
    if let Err(e) = digest_file(&mut file, digest) {
        return visit(Err(whole(format!("read error: {}", crate::read::io_message(&e)))));
    }
    let mut wanted = vec![opts.text_field.as_str(), opts.id_field.as_str()];
    wanted.extend(opts.rank_field.as_deref());
    let wanted = (!opts.read_every_column).then_some(wanted.as_slice());
    let table = match open_table(file, format, wanted) {
        Ok(table) => table.with_partition(partition),
        Err(message) => return visit(Err(whole(message))),
    };
    let schema = table.schema.clone();
    let columns =
        || schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ");
    if root_of(&schema, &opts.text_field).is_none() {
        return visit(Err(whole(format!(
            "no column {:?} (choose the text with --text-field); its columns are: {}",
            opts.text_field,
            columns()
        ))));
    }
    if opts.id_field_named && root_of(&schema, &opts.id_field).is_none() {
        return visit(Err(InputError {
            place: name.to_string(),
            message: format!(
                "no column {:?} named by --id-field; its columns are: {}",
                opts.id_field,
                columns()
            ),
            kind: InputErrorKind::Request,
        }));
    }
    let mut row = 0u64;
    for rows in table {
        let rows = match rows {
            Ok(rows) => rows,
            Err(e) => {
                return visit(Err(InputError {
                    place: format!("{name} after row {row}"),
                    message: read_error(&e),
                    kind: InputErrorKind::Stream,
                }))
            }
        };
        let records = match batch_records(&rows, name, row, opts) {
            Ok(r) => r,
            Err(message) => return visit(Err(whole(message))),
        };
        row += rows.batch.num_rows() as u64;
        for r in records {
            visit(r)?;
        }
    }
    ControlFlow::Continue(())
}

/// The records of one batch whose first row is `first` (0-based) in its file. A column of the
/// wrong type is an error for the file (every row has it); a null text, a bad value or a
/// string that is not UTF-8 (unless `--lossy` replaced it) is the row's.
fn batch_records(
    rows: &Rows,
    name: &str,
    first: u64,
    opts: &ReadOptions,
) -> Result<Vec<Result<Record, InputError>>, String> {
    let batch = &rows.batch;
    let n = batch.num_rows();
    let text = column(batch, &opts.text_field).ok_or_else(|| {
        format!("no column {:?} (choose the text with --text-field)", opts.text_field)
    })?;
    if !is_string(text.data_type()) {
        return Err(format!(
            "the text column {:?} holds {}, not strings",
            opts.text_field,
            text.data_type()
        ));
    }
    let text = as_utf8(&text)?;
    let text = text.as_string::<i64>();
    let ids = match column(batch, &opts.id_field) {
        Some(c) => ids(&c, &opts.id_field)?,
        None if opts.id_field_named => {
            return Err(format!("no column {:?} named by --id-field", opts.id_field))
        }
        None => vec![None; n],
    };
    // A file without the keep rule's column (an older part of a dataset) has no values, as a
    // JSONL record without the field.
    let ranks = match opts.rank_field.as_deref().and_then(|f| Some((f, column(batch, f)?))) {
        Some((field, c)) => ranks(&c, field)?,
        None => (0..n).map(|_| Ok(None)).collect(),
    };
    let mut bad_values = rows.bad.iter().peekable();
    let mut out = Vec::with_capacity(n);
    for (i, (id, rank)) in ids.into_iter().zip(ranks).enumerate() {
        let line = first + i as u64 + 1;
        let bad = |message: String| InputError {
            place: format!("{name} row {line}"),
            message,
            kind: InputErrorKind::Record,
        };
        let mut replaced = 0;
        let mut not_utf8 = None;
        while let Some(v) = bad_values.next_if(|v| v.row == i) {
            replaced += v.replaced;
            not_utf8.get_or_insert(v);
        }
        let record = match (text.is_null(i), rank, not_utf8) {
            (_, _, Some(v)) if !opts.lossy => Err(bad(format!(
                "invalid UTF-8 in column {:?} at byte offset {} of its value (use --lossy to \
                 replace bad bytes)",
                v.column, v.offset
            ))),
            (true, _, _) => Err(bad(format!("the text column {:?} is null", opts.text_field))),
            (false, Err(e), _) => Err(bad(format!(
                "column {:?} (of --keep): {e}",
                opts.rank_field.as_deref().unwrap_or("")
            ))),
            (false, Ok(rank), _) => {
                let body = text.value(i);
                if body.len() > opts.max_doc_bytes {
                    Err(bad(format!(
                        "document is larger than --max-doc-bytes {}",
                        opts.max_doc_bytes
                    )))
                } else {
                    Ok(Record {
                        id: id.unwrap_or_else(|| json_string(format!("{name}:{line}"))),
                        body: Body::Text(body.to_string()),
                        replaced,
                        encoding: None,
                        line,
                        rank,
                    })
                }
            }
        };
        out.push(record);
    }
    Ok(out)
}

/// Adds every byte of `file` to `digest`, and goes back to its start.
fn digest_file(file: &mut File, digest: &mut Digester) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => digest.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    file.seek(SeekFrom::Start(0)).map(drop)
}

/// The second pass over a columnar source: every column, batch by batch, each row marked with
/// whether it is kept (`None` for a row that is not a document: skipped as bad in the first
/// pass). `rows(batch, marks)` is called per batch. The file must digest as it did.
pub(crate) fn copy_columnar<E>(
    input: Input<'_>,
    name: &str,
    mut mark: impl FnMut(u64) -> Option<bool>,
    digest: &mut Digester,
    mut rows: impl FnMut(&RecordBatch, &[Option<bool>]) -> Result<(), E>,
    fail: impl Fn(String) -> E,
) -> Result<(), E> {
    let Input { mut file, format, partition } = input;
    digest_file(&mut file, digest).map_err(|e| fail(format!("{name}: reading again: {e}")))?;
    // Strings that are not UTF-8 come replaced: their rows were bad records of the first pass
    // (not written), or replaced there too (--lossy).
    let table = open_table(file, format, None).map_err(|e| fail(format!("{name}: {e}")))?;
    let table = table.with_partition(partition);
    let mut row = 0u64;
    for read in table {
        let batch = read.map_err(|e| fail(format!("{name}: reading again: {e}")))?.batch;
        let marks: Vec<Option<bool>> =
            (0..batch.num_rows() as u64).map(|i| mark(row + i + 1)).collect();
        row += batch.num_rows() as u64;
        rows(&batch, &marks)?;
    }
    Ok(())
}

/// The rows of `batch` whose mark is `Some(want)`.
pub fn select_rows(
    batch: &RecordBatch,
    marks: &[Option<bool>],
    want: bool,
) -> Result<RecordBatch, ArrowError> {
    let keep: BooleanArray = marks.iter().map(|m| Some(*m == Some(want))).collect();
    arrow_select::filter::filter_record_batch(batch, &keep)
}
