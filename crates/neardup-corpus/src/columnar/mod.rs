//! Columnar files: Parquet and Arrow IPC, read as records (one per row) and written as outputs.
//!
//! A row's text, id and keep-rule value come from columns named like JSONL fields: the whole
//! name first, then a dotted path into struct columns (`meta.url`). Only those columns are
//! decoded in the first pass. The second pass reads every column and gives the rows to the
//! [`RecordSink`](crate::dedup::RecordSink) as batches, so a Parquet output keeps the input's
//! schema and types; a JSONL output gets each row as a JSON object (`arrow-json`).

mod check;
mod infer;
mod ipc;
mod json;
mod open;
mod read;
mod strings;
mod write;

pub use arrow_array::RecordBatch;

pub use check::check_table_inputs;
pub use infer::{MAX_COLUMNS, MAX_STRUCT_KEYS};
pub use json::{non_finite, rows_as_json};
pub use read::select_rows;
pub(crate) use read::{copy_columnar, read_columnar, Input};
pub use write::{RecordsOutput, TableWriter};
