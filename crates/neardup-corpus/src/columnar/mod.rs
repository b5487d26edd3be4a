//! Columnar files: Parquet and Arrow IPC, read as records (one per row) and written as outputs.
//!
//! A row's text, id and keep-rule value come from columns named like JSONL fields: the whole
//! name first, then a dotted path into struct columns (`meta.url`). Only those columns are
//! decoded in the first pass (every column when the rows are written back). Strings are read
//! as bytes and checked value by value (`strings`), so a value that is not UTF-8 is one bad
//! row. The second pass reads every column and gives the rows to the
//! [`RecordSink`](crate::dedup::RecordSink) as batches, so a Parquet output keeps the input's
//! schema and types ([`check_table_inputs`] first makes sure every part fits one); a JSONL
//! output gets each row as a JSON object ([`rows_as_json`]); JSON records become a table in the
//! schema they imply, every value as written ([`TableWriter`]).

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
