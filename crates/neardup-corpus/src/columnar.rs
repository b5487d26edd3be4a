//! Columnar files: Parquet and Arrow IPC, read as records (one per row) and written as outputs.
//!
//! A row's text, id and keep-rule value come from columns named like JSONL fields: the whole
//! name first, then a dotted path into struct columns (`meta.url`). Only those columns are
//! decoded in the first pass. The second pass reads every column and gives the rows to the
//! [`RecordSink`](crate::dedup::RecordSink) as batches, so a Parquet output keeps the input's
//! schema and types; a JSONL output gets each row as a JSON object (`arrow-json`).

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef, TimeUnit};
use serde_json::value::RawValue;

pub use arrow_array::RecordBatch;

use crate::read::{
    json_string, Body, Digester, Format, InputError, InputErrorKind, ReadOptions, Record,
};

/// Rows per batch read.
const BATCH_ROWS: usize = 2048;

/// The batches of a columnar file.
pub(crate) type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

/// Opens `file` as `format` (Parquet, or Arrow IPC in its file or stream form), decoding only
/// the top-level columns that `wanted` names (all when `None`). Returns the schema of the
/// whole file and the batches.
pub(crate) fn open_batches(
    file: File,
    format: Format,
    wanted: Option<&[&str]>,
) -> Result<(SchemaRef, Batches), String> {
    let roots = |schema: &Schema| -> Option<Vec<usize>> {
        let wanted = wanted?;
        let mut roots: Vec<usize> =
            wanted.iter().filter_map(|name| root_of(schema, name)).collect();
        roots.sort_unstable();
        roots.dedup();
        Some(roots)
    };
    match format {
        Format::Parquet => {
            use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
            use parquet::arrow::ProjectionMask;
            let builder = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|e| format!("not a readable Parquet file: {e}"))?;
            let schema = builder.schema().clone();
            let mut builder = builder.with_batch_size(BATCH_ROWS);
            if let Some(roots) = roots(&schema) {
                let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
                builder = builder.with_projection(mask);
            }
            let reader =
                builder.build().map_err(|e| format!("not a readable Parquet file: {e}"))?;
            Ok((schema, Box::new(reader)))
        }
        _ => {
            let mut file = file;
            let mut magic = [0u8; 6];
            let is_file = file.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
            file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
            let bad = |e: ArrowError| format!("not a readable Arrow IPC file: {e}");
            if is_file {
                let probe = arrow_ipc::reader::FileReader::try_new(
                    file.try_clone().map_err(|e| e.to_string())?,
                    None,
                )
                .map_err(bad)?;
                let schema = probe.schema();
                let reader =
                    arrow_ipc::reader::FileReader::try_new(file, roots(&schema)).map_err(bad)?;
                Ok((schema, Box::new(reader)))
            } else {
                let probe = arrow_ipc::reader::StreamReader::try_new(
                    BufReader::new(file.try_clone().map_err(|e| e.to_string())?),
                    None,
                )
                .map_err(bad)?;
                let schema = probe.schema();
                drop(probe);
                file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
                let reader =
                    arrow_ipc::reader::StreamReader::try_new(BufReader::new(file), roots(&schema))
                        .map_err(bad)?;
                Ok((schema, Box::new(reader)))
            }
        }
    }
}

/// The top-level column a field name reads: the column of that whole name, else the column of
/// its first dotted segment.
fn root_of(schema: &Schema, name: &str) -> Option<usize> {
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
    use neardup::{Rank, RankKind};
    let t = c.data_type();
    let time = |seconds: Option<f64>| Ok(seconds.map(|value| Rank { value, kind: RankKind::Time }));
    let int64 = |c: &ArrayRef| -> Result<Vec<Option<i64>>, String> {
        let v = arrow_cast::cast(c, &DataType::Int64).map_err(|e| e.to_string())?;
        Ok(v.as_primitive::<Int64Type>().iter().collect())
    };
    Ok(match t {
        _ if is_string(t) => {
            let s = as_utf8(c)?;
            s.as_string::<i64>().iter().map(|v| v.map(Rank::parse).transpose()).collect()
        }
        DataType::Timestamp(unit, _) => {
            let per_second = match unit {
                TimeUnit::Second => 1.0,
                TimeUnit::Millisecond => 1e3,
                TimeUnit::Microsecond => 1e6,
                TimeUnit::Nanosecond => 1e9,
            };
            int64(c)?.into_iter().map(|v| time(v.map(|v| v as f64 / per_second))).collect()
        }
        DataType::Date32 => {
            let v = arrow_cast::cast(c, &DataType::Int32).map_err(|e| e.to_string())?;
            let days = v.as_primitive::<arrow_array::types::Int32Type>();
            days.iter().map(|d| time(d.map(|d| f64::from(d) * 86_400.0))).collect()
        }
        DataType::Date64 => {
            int64(c)?.into_iter().map(|v| time(v.map(|ms| ms as f64 / 1e3))).collect()
        }
        _ if t.is_numeric() => {
            let v = arrow_cast::cast(c, &DataType::Float64).map_err(|e| e.to_string())?;
            v.as_primitive::<Float64Type>()
                .iter()
                .map(|v| match v {
                    Some(v) if !v.is_finite() => Err(format!("the number {v} is out of range")),
                    v => Ok(v.map(|value| Rank { value, kind: RankKind::Number })),
                })
                .collect()
        }
        _ => {
            return Err(format!(
                "the column {name:?} (of --keep) holds {t}: expected numbers, dates or strings"
            ))
        }
    })
}

/// Reads a columnar source: each row a record whose `line` is its 1-based row number. The
/// whole file is digested first (the second pass checks it reads the same bytes).
pub(crate) fn read_columnar(
    mut file: File,
    format: Format,
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
    if let Err(e) = digest_file(&mut file, digest) {
        return visit(Err(whole(format!("read error: {}", crate::read::io_message(&e)))));
    }
    let mut wanted = vec![opts.text_field.as_str(), opts.id_field.as_str()];
    wanted.extend(opts.rank_field.as_deref());
    let (schema, batches) = match open_batches(file, format, Some(&wanted)) {
        Ok(opened) => opened,
        Err(message) => return visit(Err(whole(message))),
    };
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
    for batch in batches {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                return visit(Err(InputError {
                    place: format!("{name} after row {row}"),
                    message: format!("the file cannot be read further: {e}"),
                    kind: InputErrorKind::Stream,
                }))
            }
        };
        let records = match batch_records(&batch, name, row, opts) {
            Ok(r) => r,
            Err(message) => return visit(Err(whole(message))),
        };
        row += batch.num_rows() as u64;
        for r in records {
            visit(r)?;
        }
    }
    ControlFlow::Continue(())
}

/// The records of one batch whose first row is `first` (0-based) in its file. A column of the
/// wrong type is an error for the file (every row has it); a null text or a bad value is the
/// row's.
fn batch_records(
    batch: &RecordBatch,
    name: &str,
    first: u64,
    opts: &ReadOptions,
) -> Result<Vec<Result<Record, InputError>>, String> {
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
    let mut out = Vec::with_capacity(n);
    for (i, (id, rank)) in ids.into_iter().zip(ranks).enumerate() {
        let line = first + i as u64 + 1;
        let bad = |message: String| InputError {
            place: format!("{name} row {line}"),
            message,
            kind: InputErrorKind::Record,
        };
        let record = match (text.is_null(i), rank) {
            (true, _) => Err(bad(format!("the text column {:?} is null", opts.text_field))),
            (false, Err(e)) => Err(bad(format!(
                "column {:?} (of --keep): {e}",
                opts.rank_field.as_deref().unwrap_or("")
            ))),
            (false, Ok(rank)) => {
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
                        replaced: 0,
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
    mut file: File,
    format: Format,
    name: &str,
    mut mark: impl FnMut(u64) -> Option<bool>,
    digest: &mut Digester,
    mut rows: impl FnMut(&RecordBatch, &[Option<bool>]) -> Result<(), E>,
    fail: impl Fn(String) -> E,
) -> Result<(), E> {
    digest_file(&mut file, digest).map_err(|e| fail(format!("{name}: reading again: {e}")))?;
    let (_, batches) =
        open_batches(file, format, None).map_err(|e| fail(format!("{name}: {e}")))?;
    let mut row = 0u64;
    for batch in batches {
        let batch = batch.map_err(|e| fail(format!("{name}: reading again: {e}")))?;
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

/// Each row of `batch` as one JSON object, newline-ended (`arrow-json`'s rules: nulls left
/// out, timestamps as ISO 8601 strings, binary as hex).
pub fn rows_as_json(batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
    let mut writer = arrow_json::LineDelimitedWriter::new(Vec::new());
    writer.write(batch)?;
    writer.finish()?;
    Ok(writer.into_inner())
}

/// A table output (`-o kept.parquet`, `-o kept.arrow`): rows from columnar inputs are written
/// in their own schema (every input the same); records from JSONL are gathered in a temporary
/// file and written at the end in the schema they imply (`arrow-json`'s inference over all of
/// them).
pub struct TableWriter<W: Write + Send> {
    format: Format,
    state: TableState<W>,
}

enum TableState<W: Write + Send> {
    /// Nothing written yet.
    Empty(W),
    /// Rows in the first batch's schema.
    Batches(Box<BatchWriter<W>>),
    /// JSON records gathered until the end.
    Lines { out: W, spool: File, records: u64 },
    /// Finished (or failed).
    Done,
}

impl<W: Write + Send> std::fmt::Debug for TableWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWriter").field("format", &self.format).finish_non_exhaustive()
    }
}

/// A Parquet or Arrow IPC file writer, and the schema it writes.
struct BatchWriter<W: Write + Send> {
    schema: SchemaRef,
    inner: Inner<W>,
}

enum Inner<W: Write + Send> {
    Parquet(parquet::arrow::ArrowWriter<W>),
    Arrow(arrow_ipc::writer::FileWriter<W>),
}

impl<W: Write + Send> BatchWriter<W> {
    fn new(format: Format, out: W, schema: SchemaRef) -> Result<BatchWriter<W>, String> {
        let inner = Self::inner(format, out, schema.clone())?;
        Ok(BatchWriter { schema, inner })
    }

    fn inner(format: Format, out: W, schema: SchemaRef) -> Result<Inner<W>, String> {
        Ok(match format {
            Format::Parquet => {
                // Row groups of at most 64 Ki rows and 128 MB: the writer holds one group in
                // memory (its default of 1 Mi rows held a whole 1M-document output, 0.97 GB).
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_compression(parquet::basic::Compression::SNAPPY)
                    .set_max_row_group_row_count(Some(64 * 1024))
                    .set_max_row_group_bytes(Some(128 << 20))
                    .build();
                Inner::Parquet(
                    parquet::arrow::ArrowWriter::try_new(out, schema, Some(props))
                        .map_err(|e| e.to_string())?,
                )
            }
            _ => Inner::Arrow(
                arrow_ipc::writer::FileWriter::try_new(out, &schema).map_err(|e| e.to_string())?,
            ),
        })
    }

    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        match &mut self.inner {
            Inner::Parquet(w) => w.write(batch).map_err(|e| e.to_string()),
            Inner::Arrow(w) => w.write(batch).map_err(|e| e.to_string()),
        }
    }

    fn finish(self) -> Result<W, String> {
        match self.inner {
            Inner::Parquet(w) => w.into_inner().map_err(|e| e.to_string()),
            Inner::Arrow(mut w) => {
                w.finish().map_err(|e| e.to_string())?;
                w.into_inner().map_err(|e| e.to_string())
            }
        }
    }
}

impl<W: Write + Send> TableWriter<W> {
    /// A writer of `format` (Parquet or Arrow) into `out`.
    pub fn new(format: Format, out: W) -> TableWriter<W> {
        TableWriter { format, state: TableState::Empty(out) }
    }

    /// Writes rows of a columnar input.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), String> {
        // An empty batch still gives an empty output its schema.
        if batch.num_rows() == 0 && !matches!(self.state, TableState::Empty(_)) {
            return Ok(());
        }
        match std::mem::replace(&mut self.state, TableState::Done) {
            TableState::Empty(out) => {
                let mut w = BatchWriter::new(self.format, out, batch.schema())?;
                w.write(batch)?;
                self.state = TableState::Batches(Box::new(w));
                Ok(())
            }
            TableState::Batches(mut w) => {
                if w.schema().fields() != batch.schema().fields() {
                    return Err(format!(
                        "the inputs have different columns ({} and {}): one {} output holds one \
                         schema (write JSONL, or dedup them apart)",
                        describe(&w.schema()),
                        describe(&batch.schema()),
                        self.format.name()
                    ));
                }
                w.write(batch)?;
                self.state = TableState::Batches(w);
                Ok(())
            }
            TableState::Lines { out, mut spool, records } => {
                // A columnar input after JSONL ones: its rows join the JSON records.
                let json = rows_as_json(batch).map_err(|e| e.to_string())?;
                spool.write_all(&json).map_err(|e| e.to_string())?;
                self.state =
                    TableState::Lines { out, spool, records: records + batch.num_rows() as u64 };
                Ok(())
            }
            TableState::Done => Err("the output was already finished".into()),
        }
    }

    /// Writes one JSON record (a line of a JSONL input, or a text file's `{"id", "text"}`).
    pub fn write_record(&mut self, record: &[u8]) -> Result<(), String> {
        match std::mem::replace(&mut self.state, TableState::Done) {
            TableState::Empty(out) => {
                let spool = tempfile::tempfile().map_err(|e| format!("a temporary file: {e}"))?;
                self.state = TableState::Lines { out, spool, records: 0 };
                self.write_record(record)
            }
            TableState::Lines { out, mut spool, records } => {
                let record = record.strip_suffix(b"\n").unwrap_or(record);
                spool.write_all(record).map_err(|e| e.to_string())?;
                spool.write_all(b"\n").map_err(|e| e.to_string())?;
                self.state = TableState::Lines { out, spool, records: records + 1 };
                Ok(())
            }
            TableState::Batches(w) => {
                self.state = TableState::Batches(w);
                Err(format!(
                    "JSON records after rows of a columnar input: one {} output takes one or \
                     the other (write JSONL, or dedup them apart)",
                    self.format.name()
                ))
            }
            TableState::Done => Err("the output was already finished".into()),
        }
    }

    /// Finishes the file; returns the writer (to commit it).
    pub fn finish(mut self) -> Result<W, String> {
        match std::mem::replace(&mut self.state, TableState::Done) {
            TableState::Empty(out) => {
                BatchWriter::new(self.format, out, Arc::new(Schema::empty()))?.finish()
            }
            TableState::Batches(w) => w.finish(),
            TableState::Lines { out, mut spool, records: _ } => {
                spool.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
                let (schema, _) =
                    arrow_json::reader::infer_json_schema(BufReader::new(&mut spool), None)
                        .map_err(|e| format!("the kept records as a table: {e}"))?;
                let schema = Arc::new(schema);
                spool.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
                // A field inferred as strings that holds a number in some record (ids 7 and
                // "x7") keeps the number as its text.
                let reader = arrow_json::ReaderBuilder::new(schema.clone())
                    .with_coerce_primitive(true)
                    .with_batch_size(BATCH_ROWS)
                    .build(BufReader::new(spool))
                    .map_err(|e| e.to_string())?;
                let mut w = BatchWriter::new(self.format, out, schema)?;
                for batch in reader {
                    w.write(&batch.map_err(|e| format!("the kept records as a table: {e}"))?)?;
                }
                w.finish()
            }
            TableState::Done => Err("the output was already finished".into()),
        }
    }
}

/// A schema in a message: its column names.
fn describe(schema: &Schema) -> String {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    format!("[{}]", names.join(", "))
}

/// Where the second pass writes records: JSON Lines (newline-ended records, rows of tables as
/// JSON objects), or a table file when the path names one (`.parquet`, `.arrow`, `.feather`).
#[derive(Debug)]
pub enum RecordsOutput {
    /// JSON Lines.
    Lines(crate::write::OutputFile),
    /// Parquet or Arrow IPC.
    Table(TableWriter<crate::write::OutputFile>),
}

impl RecordsOutput {
    /// Opens the output for `option` at `path` (`-`: standard output, JSON Lines), as its
    /// name says.
    pub fn create(
        option: &'static str,
        path: &std::path::Path,
    ) -> Result<RecordsOutput, crate::CorpusError> {
        let out = crate::write::OutputFile::create(option, path)?;
        Ok(match Format::by_name(path).filter(|f| f.is_columnar() && !out.is_stdout()) {
            Some(format) => RecordsOutput::Table(TableWriter::new(format, out)),
            None => RecordsOutput::Lines(out),
        })
    }

    /// True when it is standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self, RecordsOutput::Lines(out) if out.is_stdout())
    }

    /// Writes one record (newline added when it has none).
    pub fn record(&mut self, record: &[u8]) -> Result<(), crate::CorpusError> {
        match self {
            RecordsOutput::Lines(out) => {
                out.write_bytes(record)?;
                if record.last() != Some(&b'\n') {
                    out.write_bytes(b"\n")?;
                }
                Ok(())
            }
            RecordsOutput::Table(t) => t.write_record(record).map_err(crate::CorpusError::Runtime),
        }
    }

    /// Writes the rows of `batch` marked `Some(want)`.
    pub fn rows(
        &mut self,
        batch: &RecordBatch,
        marks: &[Option<bool>],
        want: bool,
    ) -> Result<(), crate::CorpusError> {
        let runtime = |e: ArrowError| crate::CorpusError::Runtime(format!("writing rows: {e}"));
        let rows = select_rows(batch, marks, want).map_err(runtime)?;
        match self {
            RecordsOutput::Lines(out) => out.write_bytes(&rows_as_json(&rows).map_err(runtime)?),
            RecordsOutput::Table(t) => t.write_batch(&rows).map_err(crate::CorpusError::Runtime),
        }
    }

    /// Writes out what a table holds (its encoding can fail), leaving a file that
    /// [`RecordsOutput::commit`] only renames.
    pub fn finish(self) -> Result<RecordsOutput, crate::CorpusError> {
        match self {
            RecordsOutput::Lines(out) => Ok(RecordsOutput::Lines(out)),
            RecordsOutput::Table(t) => {
                Ok(RecordsOutput::Lines(t.finish().map_err(crate::CorpusError::Runtime)?))
            }
        }
    }

    /// Finishes the file and renames it into place.
    pub fn commit(self) -> Result<(), crate::CorpusError> {
        match self.finish()? {
            RecordsOutput::Lines(out) => out.commit(),
            RecordsOutput::Table(_) => unreachable!("finish makes a table a finished file"),
        }
    }
}
