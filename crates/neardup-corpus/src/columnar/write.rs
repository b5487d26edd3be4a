//! Table outputs (`-o kept.parquet`, `-o kept.arrow`) and the record outputs of a dedup.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom, Write};
use std::sync::Arc;

use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::open::BATCH_ROWS;
use super::read::select_rows;
use super::RecordBatch;
use crate::read::Format;

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

    /// True when `path` names a table output (`.parquet`, `.arrow`, ...), not standard output:
    /// its inputs must fit one schema ([`super::check_table_inputs`]).
    pub fn is_table(path: &std::path::Path) -> bool {
        path.as_os_str() != "-" && Format::by_name(path).is_some_and(Format::is_columnar)
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
