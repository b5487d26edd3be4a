//! Opening a Parquet or Arrow IPC file as batches of rows.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};

use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::read::root_of;
use super::RecordBatch;
use crate::read::Format;

/// Rows per batch read.
pub(super) const BATCH_ROWS: usize = 2048;

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

/// What a read error means for the user: a compression this build cannot read is named with
/// the way out; anything else as the reader says it.
pub(crate) fn read_error(e: &ArrowError) -> String {
    let text = e.to_string();
    match codec_of(&text) {
        Some(codec) => format!(
            "its data is compressed with {codec}, which this build of neardup cannot read \
             ({text}); write it again with snappy, zstd, lz4, gzip or brotli (pyarrow: \
             pq.write_table(table, path, compression=\"zstd\"))"
        ),
        None => format!("the file cannot be read further: {text}"),
    }
}

/// The codec an error from the Parquet or IPC reader says it lacks, if it says one.
fn codec_of(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let about_codec = ["decompression requires", "disabled feature", "codec", "compression"]
        .iter()
        .any(|w| lower.contains(w));
    if !about_codec {
        return None;
    }
    ["lzo", "lz4_raw", "lz4", "zstd", "brotli", "snappy", "gzip"]
        .iter()
        .find(|c| lower.contains(*c))
        .map(|c| c.to_uppercase())
        .or_else(|| Some("a codec".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_codec_error_names_the_codec_and_the_way_out() {
        let e =
            ArrowError::ParquetError("NYI: The codec type LZO is not supported yet".to_string());
        let said = read_error(&e);
        assert!(
            said.contains("compressed with LZO") && said.contains("compression=\"zstd\""),
            "{said}"
        );
        let e = ArrowError::InvalidArgumentError(
            "lz4 IPC decompression requires the lz4 feature".into(),
        );
        assert!(read_error(&e).contains("compressed with LZ4"));
        let e = ArrowError::ParseError("a block of -1 bytes".into());
        assert!(read_error(&e).starts_with("the file cannot be read further"));
    }
}
