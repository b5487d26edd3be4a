//! Opening a Parquet or Arrow IPC file as batches of rows, its strings checked value by value.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema, SchemaRef};

use super::ipc;
use super::read::root_of;
use super::strings::{binary_hint, restore, BadValue};
use super::RecordBatch;
use crate::read::Format;

/// Rows per batch read.
pub(super) const BATCH_ROWS: usize = 2048;

/// The batches of a columnar file, as its reader decodes them.
type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

/// A columnar file opened for reading: its schema (its own types) and its batches in it.
pub(crate) struct Table {
    /// The file's schema, and the partition columns its directories add.
    pub schema: SchemaRef,
    /// The file's own schema.
    file_schema: SchemaRef,
    batches: Batches,
    /// The batches come with strings as binary, to be checked ([`restore`]).
    hinted: bool,
    /// Columns of one value for every row (a partition's `key=value` directories).
    constant: Vec<Option<String>>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("schema", &self.schema).finish_non_exhaustive()
    }
}

/// One batch of rows, and the values in it that were not UTF-8 (replaced in the batch).
pub(crate) struct Rows {
    pub batch: RecordBatch,
    pub bad: Vec<BadValue>,
}

impl Iterator for Table {
    type Item = Result<Rows, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.batches.next()?;
        Some(batch.and_then(|batch| {
            let (batch, bad) =
                if self.hinted { restore(&batch, &self.file_schema)? } else { (batch, Vec::new()) };
            Ok(Rows { batch: self.with_constants(batch)?, bad })
        }))
    }
}

impl Table {
    fn new(schema: SchemaRef, batches: Batches, hinted: bool) -> Table {
        Table { file_schema: schema.clone(), schema, batches, hinted, constant: Vec::new() }
    }

    /// Adds the columns of a partition (`lang=en/`: a string column `lang` of `en` in every
    /// row), after the file's own; a column the file has keeps the file's values.
    pub(crate) fn with_partition(mut self, partition: &[(String, Option<String>)]) -> Table {
        let mut fields: Vec<FieldRef> = self.file_schema.fields().iter().cloned().collect();
        for (key, value) in partition {
            if self.file_schema.index_of(key).is_err() {
                fields.push(Arc::new(Field::new(key, DataType::Utf8, true)));
                self.constant.push(value.clone());
            }
        }
        let metadata = self.file_schema.metadata().clone();
        self.schema = Arc::new(Schema::new_with_metadata(fields, metadata));
        self
    }

    /// `batch` with the constant columns added.
    fn with_constants(&self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        if self.constant.is_empty() {
            return Ok(batch);
        }
        let n = batch.num_rows();
        let mut fields: Vec<FieldRef> = batch.schema().fields().iter().cloned().collect();
        let mut columns = batch.columns().to_vec();
        let first = self.file_schema.fields().len();
        for (field, value) in self.schema.fields()[first..].iter().zip(&self.constant) {
            fields.push(field.clone());
            let values: arrow_array::StringArray =
                std::iter::repeat_n(value.as_deref(), n).collect();
            columns.push(Arc::new(values));
        }
        let schema = Arc::new(Schema::new_with_metadata(fields, batch.schema().metadata().clone()));
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(n));
        RecordBatch::try_new_with_options(schema, columns, &options)
    }
}

/// Opens `file` as `format` (Parquet, or Arrow IPC in its file or stream form), decoding only
/// the top-level columns that `wanted` names (all when `None`).
pub(crate) fn open_table(
    file: File,
    format: Format,
    wanted: Option<&[&str]>,
) -> Result<Table, String> {
    let roots = |schema: &Schema| -> Option<Vec<usize>> {
        let wanted = wanted?;
        let mut roots: Vec<usize> =
            wanted.iter().filter_map(|name| root_of(schema, name)).collect();
        roots.sort_unstable();
        roots.dedup();
        Some(roots)
    };
    match format {
        Format::Parquet => parquet_table(file, &roots),
        _ => {
            let mut file = file;
            let mut magic = [0u8; 6];
            let is_file = file.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
            file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
            let bad = |e: ArrowError| format!("not a readable Arrow IPC file: {e}");
            let hint =
                |schema: &Schema| binary_hint(schema).unwrap_or_else(|| Arc::new(schema.clone()));
            let plan = ipc::Plan { hint: &hint, projection: &roots };
            let (schema, batches) = if is_file {
                ipc::file_batches(file, &plan).map_err(bad)?
            } else {
                ipc::stream_batches(file, &plan).map_err(bad)?
            };
            Ok(Table::new(schema, batches, true))
        }
    }
}

/// A Parquet file's table. Its string columns are read as binary when the file allows it (the
/// reader validates strings whole and refuses the batch otherwise); a file whose schema cannot
/// be read so is read as it is.
fn parquet_table(
    file: File,
    roots: &dyn Fn(&Schema) -> Option<Vec<usize>>,
) -> Result<Table, String> {
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
    use parquet::arrow::ProjectionMask;
    let bad = |e: parquet::errors::ParquetError| format!("not a readable Parquet file: {e}");
    let meta = ArrowReaderMetadata::load(&file, Default::default()).map_err(bad)?;
    let schema = meta.schema().clone();
    let binary = binary_hint(&schema).and_then(|hint| binary_metadata(&meta, hint).ok());
    let hinted = binary.is_some();
    let meta = binary.unwrap_or(meta);
    let mut builder =
        ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta).with_batch_size(BATCH_ROWS);
    if let Some(roots) = roots(&schema) {
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        builder = builder.with_projection(mask);
    }
    let reader = builder.build().map_err(bad)?;
    Ok(Table::new(schema, Box::new(reader), hinted))
}

/// The file's metadata with its string columns unannotated (plain byte arrays, which the reader
/// does not validate), read in `hint`'s types.
fn binary_metadata(
    meta: &parquet::arrow::arrow_reader::ArrowReaderMetadata,
    hint: SchemaRef,
) -> parquet::errors::Result<parquet::arrow::arrow_reader::ArrowReaderMetadata> {
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    use parquet::file::metadata::{FileMetaData, ParquetMetaData};
    use parquet::schema::types::SchemaDescriptor;
    let parquet = meta.metadata();
    let file = parquet.file_metadata();
    let root = unannotated(file.schema_descr().root_schema())?;
    let file = FileMetaData::new(
        file.version(),
        file.num_rows(),
        file.created_by().map(str::to_string),
        file.key_value_metadata().cloned(),
        Arc::new(SchemaDescriptor::new(Arc::new(root))),
        file.column_orders().cloned(),
    );
    let parquet = ParquetMetaData::new(file, parquet.row_groups().to_vec());
    ArrowReaderMetadata::try_new(Arc::new(parquet), ArrowReaderOptions::new().with_schema(hint))
}

/// A Parquet schema type with the string annotations of its byte arrays removed.
fn unannotated(
    t: &parquet::schema::types::Type,
) -> parquet::errors::Result<parquet::schema::types::Type> {
    use parquet::basic::{ConvertedType, LogicalType, Type as Physical};
    use parquet::schema::types::Type;
    match t {
        Type::PrimitiveType { basic_info, physical_type, type_length, scale, precision } => {
            let string = *physical_type == Physical::BYTE_ARRAY
                && (matches!(
                    basic_info.logical_type_ref(),
                    Some(LogicalType::String | LogicalType::Enum | LogicalType::Json)
                ) || matches!(
                    basic_info.converted_type(),
                    ConvertedType::UTF8 | ConvertedType::ENUM | ConvertedType::JSON
                ));
            let mut b = Type::primitive_type_builder(basic_info.name(), *physical_type)
                .with_repetition(basic_info.repetition())
                .with_length(*type_length)
                .with_precision(*precision)
                .with_scale(*scale)
                .with_id(basic_info.has_id().then(|| basic_info.id()));
            if !string {
                b = b
                    .with_logical_type(basic_info.logical_type_ref().cloned())
                    .with_converted_type(basic_info.converted_type());
            }
            b.build()
        }
        Type::GroupType { basic_info, fields } => {
            let fields = fields
                .iter()
                .map(|f| unannotated(f).map(Arc::new))
                .collect::<parquet::errors::Result<Vec<_>>>()?;
            let mut b = Type::group_type_builder(basic_info.name())
                .with_fields(fields)
                .with_logical_type(basic_info.logical_type_ref().cloned())
                .with_converted_type(basic_info.converted_type())
                .with_id(basic_info.has_id().then(|| basic_info.id()));
            if basic_info.has_repetition() {
                b = b.with_repetition(basic_info.repetition());
            }
            b.build()
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
    fn parquet_strings_are_read_as_bytes_whatever_the_fields_carry() {
        use arrow_array::{ArrayRef, StringArray, StructArray};
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t.parquet");
        let text = Field::new("text", DataType::Utf8, true)
            .with_metadata(arrow_schema::Metadata::new().with("neardup:json", "text as written"));
        let inner = arrow_schema::Fields::from(vec![Field::new("url", DataType::Utf8, false)]);
        let meta: ArrayRef = Arc::new(StructArray::new(
            inner.clone(),
            vec![Arc::new(StringArray::from(vec!["u"])) as ArrayRef],
            None,
        ));
        let schema =
            Arc::new(Schema::new(vec![text, Field::new("meta", DataType::Struct(inner), true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(vec!["a"])), meta],
        )
        .expect("batch");
        let mut w = parquet::arrow::ArrowWriter::try_new(
            File::create(&path).expect("create"),
            schema.clone(),
            None,
        )
        .expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        let table =
            open_table(File::open(&path).expect("open"), Format::Parquet, None).expect("table");
        assert!(table.hinted, "read as bytes and checked");
        assert_eq!(table.schema, schema);
        let rows: Vec<Rows> = table.map(|r| r.expect("rows")).collect();
        assert_eq!(rows[0].batch, batch);
    }

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
