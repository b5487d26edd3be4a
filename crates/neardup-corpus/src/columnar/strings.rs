//! String columns read as bytes, then checked value by value.
//!
//! Arrow refuses a whole batch when one value of a string column is not UTF-8, and the Parquet
//! reader does too, so `--lossy` and `--skip-bad` could not act on one row. Columns are read
//! with their string types as the matching binary types ([`binary_hint`]), and [`restore`] makes
//! each value a string again: a bad value is replaced (U+FFFD for each invalid sequence) and
//! reported with its row, its column and the byte offset of the first bad byte, so that the
//! reader makes it one bad record.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, RecordBatch, StructArray};
use arrow_schema::{ArrowError, DataType, FieldRef, Fields, Schema, SchemaRef};

/// A value that was not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadValue {
    /// Its row in the batch (0-based).
    pub row: usize,
    /// Its column, dotted into structs (`meta.title`), `[]` for a list's items.
    pub column: String,
    /// The byte offset of its first invalid byte, within the value.
    pub offset: usize,
    /// The invalid sequences replaced.
    pub replaced: usize,
}

/// `t` with every string type as the binary type of the same layout.
pub(crate) fn binary_type(t: &DataType) -> DataType {
    match t {
        DataType::Utf8 => DataType::Binary,
        DataType::LargeUtf8 => DataType::LargeBinary,
        DataType::Utf8View => DataType::BinaryView,
        DataType::Dictionary(k, v) => DataType::Dictionary(k.clone(), Box::new(binary_type(v))),
        DataType::Struct(fields) => DataType::Struct(binary_fields(fields)),
        DataType::List(f) => DataType::List(binary_field(f)),
        DataType::LargeList(f) => DataType::LargeList(binary_field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(binary_field(f), *n),
        DataType::Map(f, sorted) => DataType::Map(binary_field(f), *sorted),
        other => other.clone(),
    }
}

fn binary_field(f: &FieldRef) -> FieldRef {
    Arc::new(f.as_ref().clone().with_data_type(binary_type(f.data_type())))
}

fn binary_fields(fields: &Fields) -> Fields {
    fields.iter().map(binary_field).collect()
}

/// `schema` with its string types as binary ([`binary_type`]); `None` when it holds no string.
pub(crate) fn binary_hint(schema: &Schema) -> Option<SchemaRef> {
    let fields = binary_fields(schema.fields());
    (fields != *schema.fields())
        .then(|| Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}

/// A batch read with [`binary_hint`] types, as `schema` (its own types) again: every value
/// checked, a bad one replaced and returned in the list.
pub(crate) fn restore(
    batch: &RecordBatch,
    schema: &SchemaRef,
) -> Result<(RecordBatch, Vec<BadValue>), ArrowError> {
    let mut bad = Vec::new();
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        // A projected batch holds some of the schema's columns, by name.
        let target = schema.field_with_name(field.name()).map_or(field.as_ref(), |f| f);
        columns.push(restore_array(column, target.data_type(), field.name(), &mut bad)?);
        fields.push(target.clone());
    }
    bad.sort_by_key(|b| b.row);
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok((RecordBatch::try_new_with_options(schema, columns, &options)?, bad))
}

/// One array as `target` again; bad values are reported under `path`, by their row in this
/// array.
fn restore_array(
    array: &ArrayRef,
    target: &DataType,
    path: &str,
    bad: &mut Vec<BadValue>,
) -> Result<ArrayRef, ArrowError> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    match (array.data_type(), target) {
        (DataType::Binary, DataType::Utf8) => {
            Ok(strings::<i32>(array.as_binary::<i32>(), path, bad))
        }
        (DataType::LargeBinary, DataType::LargeUtf8) => {
            Ok(strings::<i64>(array.as_binary::<i64>(), path, bad))
        }
        (DataType::BinaryView | DataType::Dictionary(..), _) => {
            // Through a plain binary array: a bad dictionary value is bad in each row that
            // holds it.
            let plain = arrow_cast::cast(array, &DataType::LargeBinary)?;
            let restored = strings::<i64>(plain.as_binary::<i64>(), path, bad);
            arrow_cast::cast(&restored, target)
        }
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let s = array.as_struct();
            let mut children = Vec::with_capacity(fields.len());
            for (field, child) in fields.iter().zip(s.columns()) {
                let child_path = format!("{path}.{}", field.name());
                children.push(restore_array(child, field.data_type(), &child_path, bad)?);
            }
            Ok(Arc::new(StructArray::try_new(fields.clone(), children, s.nulls().cloned())?))
        }
        (DataType::List(_), DataType::List(field)) => {
            list::<i32>(array.as_list::<i32>(), field, path, bad)
        }
        (DataType::LargeList(_), DataType::LargeList(field)) => {
            list::<i64>(array.as_list::<i64>(), field, path, bad)
        }
        // Other nestings of strings (maps, fixed-size lists): checked as a whole by Arrow.
        _ => arrow_cast::cast(array, target),
    }
}

/// A binary array's values as strings, each checked.
fn strings<O: OffsetSizeTrait>(
    values: &arrow_array::GenericBinaryArray<O>,
    path: &str,
    bad: &mut Vec<BadValue>,
) -> ArrayRef {
    // All valid (the usual case): the same buffers, checked at once, nothing copied.
    if let Ok(valid) = arrow_array::GenericStringArray::<O>::try_from_binary(values.clone()) {
        return Arc::new(valid);
    }
    let mut out = arrow_array::builder::GenericStringBuilder::<O>::with_capacity(
        values.len(),
        values.value_data().len(),
    );
    for (row, value) in values.iter().enumerate() {
        match value {
            None => out.append_null(),
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(s) => out.append_value(s),
                Err(e) => {
                    let replaced = crate::read::count_invalid(bytes);
                    let column = path.to_string();
                    bad.push(BadValue { row, column, offset: e.valid_up_to(), replaced });
                    out.append_value(String::from_utf8_lossy(bytes));
                }
            },
        }
    }
    Arc::new(out.finish())
}

/// A list array whose items are restored; a bad item is reported at the row holding it.
fn list<O: OffsetSizeTrait>(
    array: &GenericListArray<O>,
    field: &FieldRef,
    path: &str,
    bad: &mut Vec<BadValue>,
) -> Result<ArrayRef, ArrowError> {
    let mut items = Vec::new();
    let values =
        restore_array(array.values(), field.data_type(), &format!("{path}[]"), &mut items)?;
    let offsets = array.value_offsets();
    for mut item in items {
        // The row whose range of items holds this one.
        let at = O::from_usize(item.row).unwrap_or_else(O::zero);
        item.row = offsets.partition_point(|o| *o <= at).saturating_sub(1);
        bad.push(item);
    }
    Ok(Arc::new(GenericListArray::<O>::try_new(
        field.clone(),
        array.offsets().clone(),
        values,
        array.nulls().cloned(),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BinaryArray, ListArray, StringArray};
    use arrow_schema::Field;

    #[test]
    fn bad_values_are_replaced_and_reported_by_row_and_column() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("text", DataType::Utf8, true),
            Field::new("tags", DataType::new_list(DataType::Utf8, true), true),
        ]));
        let hint = binary_hint(&schema).expect("strings");
        assert_eq!(hint.field(0).data_type(), &DataType::Binary);
        let text = BinaryArray::from(vec![Some(&b"ok"[..]), Some(b"ab\xffc"), None]);
        let items = BinaryArray::from(vec![&b"x"[..], b"y", b"\xfe", b"z"]);
        let tags = ListArray::new(
            Arc::new(Field::new("item", DataType::Binary, true)),
            arrow_buffer::OffsetBuffer::new(vec![0, 1, 1, 4].into()),
            Arc::new(items),
            None,
        );
        let batch = RecordBatch::try_new(hint, vec![Arc::new(text), Arc::new(tags)]).expect("b");
        let (restored, bad) = restore(&batch, &schema).expect("restored");
        assert_eq!(restored.schema(), schema);
        let text = restored.column(0).as_any().downcast_ref::<StringArray>().expect("strings");
        assert_eq!(text.value(1), "ab\u{fffd}c");
        assert_eq!(
            bad,
            [
                BadValue { row: 1, column: "text".into(), offset: 2, replaced: 1 },
                BadValue { row: 2, column: "tags[]".into(), offset: 0, replaced: 1 },
            ]
        );
    }
}
