//! Table outputs (`-o kept.parquet`, `-o kept.arrow`) and the record outputs of a dedup.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::sync::Arc;

use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::infer::Inference;
use super::json::{non_finite, rows_as_json, Json};
use super::open::BATCH_ROWS;
use super::read::select_rows;
use super::RecordBatch;
use crate::read::Format;

/// A table output (`-o kept.parquet`, `-o kept.arrow`): rows from columnar inputs are written
/// in their own schema (every input the same); records from JSONL are gathered in a temporary
/// file and written at the end in the schema they imply, every value kept as written
/// (numbers typed only when every value reads back as written; others, mixed kinds and maps
/// as text).
pub struct TableWriter<W: Write + Send> {
    format: Format,
    state: TableState<W>,
}

enum TableState<W: Write + Send> {
    /// Nothing written yet.
    Empty(W),
    /// Rows in the first batch's schema.
    Batches(Box<BatchWriter<W>>),
    /// JSON records gathered until the end, and the shape of their fields.
    Lines { out: W, spool: File, inference: Box<Inference> },
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

    /// `batch` in the writer's schema: as it is, or its columns cast when they differ only in
    /// nullability or metadata (Spark's parts do); other differences are refused in words
    /// ([`super::check::difference`]).
    fn fit(&self, batch: &RecordBatch) -> Result<RecordBatch, String> {
        if batch.schema().fields() == self.schema.fields() {
            return Ok(batch.clone());
        }
        if let Some(d) =
            super::check::difference(&self.schema, "the first input", &batch.schema(), "this one")
        {
            return Err(format!(
                "the inputs' columns differ and one table output holds one schema: {d} (write \
                 JSON Lines, or dedup them apart)"
            ));
        }
        let columns = self
            .schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, c)| arrow_cast::cast(c, f.data_type()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| format!("a part's rows do not fit the first part's columns: {e}"))
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
                let batch = match w.fit(batch) {
                    Ok(batch) => batch,
                    Err(e) => {
                        self.state = TableState::Batches(w);
                        return Err(e);
                    }
                };
                w.write(&batch)?;
                self.state = TableState::Batches(w);
                Ok(())
            }
            TableState::Lines { out, spool, inference } => {
                // A columnar input after JSONL ones: its rows join the JSON records.
                self.state = TableState::Lines { out, spool, inference };
                let json = rows_as_json(batch).map_err(|e| e.to_string())?;
                for line in json.split_inclusive(|b| *b == b'\n') {
                    self.write_record(line)?;
                }
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
                let inference = Box::default();
                self.state = TableState::Lines { out, spool, inference };
                self.write_record(record)
            }
            TableState::Lines { out, mut spool, mut inference } => {
                // The record without its line ending or byte order mark (a line of any file
                // may start with one).
                let Some(record) = neardup::record_line(record) else {
                    self.state = TableState::Lines { out, spool, inference };
                    return Ok(());
                };
                let parsed = std::str::from_utf8(record)
                    .map_err(|e| e.to_string())
                    .and_then(|text| Json::parse(text).map_err(|e| e.to_string()))
                    .and_then(|json| inference.observe(&json));
                if let Err(e) = parsed {
                    return Err(format!("a kept record as a table row: {e}"));
                }
                spool.write_all(record).map_err(|e| e.to_string())?;
                spool.write_all(b"\n").map_err(|e| e.to_string())?;
                self.state = TableState::Lines { out, spool, inference };
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

    /// Finishes the file; returns the writer (to commit it) and what was said of its fields
    /// (those written as text, and why).
    pub fn finish(mut self) -> Result<(W, Vec<String>), String> {
        match std::mem::replace(&mut self.state, TableState::Done) {
            TableState::Empty(out) => {
                let w = BatchWriter::new(self.format, out, Arc::new(Schema::empty()))?;
                Ok((w.finish()?, Vec::new()))
            }
            TableState::Batches(w) => Ok((w.finish()?, Vec::new())),
            TableState::Lines { out, mut spool, inference } => {
                spool.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
                let mut w = BatchWriter::new(self.format, out, inference.schema())?;
                let mut rows = inference.rows();
                let table = |e: String| format!("the kept records as a table: {e}");
                for line in BufReader::new(spool).lines() {
                    let line = line.map_err(|e| table(e.to_string()))?;
                    let json = Json::parse(&line).map_err(|e| table(e.to_string()))?;
                    rows.push(&json).map_err(table)?;
                    if rows.len() >= BATCH_ROWS {
                        w.write(&rows.batch().map_err(table)?)?;
                    }
                }
                if rows.len() > 0 {
                    w.write(&rows.batch().map_err(table)?)?;
                }
                Ok((w.finish()?, inference.notes()))
            }
            TableState::Done => Err("the output was already finished".into()),
        }
    }
}

/// Where the second pass writes records: JSON Lines (newline-ended records, rows of tables as
/// JSON objects), or a table file when the path names one (`.parquet`, `.arrow`, `.feather`).
/// It notes what was not written as given (fields of JSON records written as text, values
/// without a JSON form), for the run's summary ([`RecordsOutput::notes`]).
#[derive(Debug)]
pub struct RecordsOutput {
    option: &'static str,
    sink: Sink,
    /// Values without a JSON form written as `null`, by column, in the order first met.
    non_finite: Vec<(String, u64)>,
    notes: Vec<String>,
}

#[derive(Debug)]
enum Sink {
    /// JSON Lines (or a finished table).
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
        let sink = match Format::by_name(path).filter(|f| f.is_columnar() && !out.is_stdout()) {
            Some(format) => Sink::Table(TableWriter::new(format, out)),
            None => Sink::Lines(out),
        };
        Ok(RecordsOutput { option, sink, non_finite: Vec::new(), notes: Vec::new() })
    }

    /// True when `path` names a table output (`.parquet`, `.arrow`, ...), not standard output:
    /// its inputs must fit one schema ([`super::check_table_inputs`]).
    pub fn is_table(path: &std::path::Path) -> bool {
        path.as_os_str() != "-" && Format::by_name(path).is_some_and(Format::is_columnar)
    }

    /// True when it is standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(&self.sink, Sink::Lines(out) if out.is_stdout())
    }

    /// Writes one record (newline added when it has none).
    pub fn record(&mut self, record: &[u8]) -> Result<(), crate::CorpusError> {
        match &mut self.sink {
            Sink::Lines(out) => {
                out.write_bytes(record)?;
                if record.last() != Some(&b'\n') {
                    out.write_bytes(b"\n")?;
                }
                Ok(())
            }
            Sink::Table(t) => t.write_record(record).map_err(crate::CorpusError::Runtime),
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
        match &mut self.sink {
            Sink::Lines(out) => {
                for (column, n) in non_finite(&rows) {
                    match self.non_finite.iter_mut().find(|(c, _)| *c == column) {
                        Some((_, count)) => *count += n,
                        None => self.non_finite.push((column, n)),
                    }
                }
                out.write_bytes(&rows_as_json(&rows).map_err(runtime)?)
            }
            Sink::Table(t) => t.write_batch(&rows).map_err(crate::CorpusError::Runtime),
        }
    }

    /// Writes out what a table holds (its encoding can fail), leaving a file that
    /// [`RecordsOutput::commit`] only renames.
    pub fn finish(mut self) -> Result<RecordsOutput, crate::CorpusError> {
        if let Sink::Table(t) = self.sink {
            let (out, notes) = t.finish().map_err(crate::CorpusError::Runtime)?;
            self.notes.extend(notes.into_iter().map(|n| format!("{}: {n}", self.option)));
            self.sink = Sink::Lines(out);
        }
        Ok(self)
    }

    /// What was not written as given, one line each: fields of JSON records written as text
    /// in a table (and why), values without a JSON form written as `null`. Complete once
    /// [`RecordsOutput::finish`]ed.
    pub fn notes(&self) -> Vec<String> {
        let mut out = self.notes.clone();
        for (column, n) in &self.non_finite {
            out.push(format!(
                "{}: {} of column {column:?} (NaN or infinite) {} no JSON form: written as null",
                self.option,
                neardup::count_of(*n, "value", "values"),
                if *n == 1 { "has" } else { "have" }
            ));
        }
        out
    }

    /// Finishes the file and renames it into place.
    pub fn commit(self) -> Result<(), crate::CorpusError> {
        match self.finish()?.sink {
            Sink::Lines(out) => out.commit(),
            Sink::Table(_) => unreachable!("finish makes a table a finished file"),
        }
    }
}
