//! The table that JSON Lines records imply (`neardup dedup in.jsonl -o kept.parquet`), built so
//! that every value a user gave is kept as written.
//!
//! `arrow-json`'s inference rewrote values: an id `1.10` became the double `1.1`, integers past
//! 64 bits became doubles, a field of numbers and strings became all strings, and every distinct
//! key of every object became a column, so records holding maps (word counts keyed by word) made
//! a schema that grew with the square of the input (1.5 MB of records took 4.7 GB). Here:
//!
//! - a field of numbers is `Int64` when every value is an integer that fits (`UInt64` past
//!   `i64`), `Float64` when every value is written exactly as a double prints back (its
//!   shortest form: `0.5`, `1e300`; not `1.10`, `1e5` or `1`), else a text column of each number
//!   as written;
//! - a field mixing kinds (numbers and strings, objects and scalars) is a text column: a string
//!   as itself, any other value as its JSON text as written;
//! - an object with more than [`MAX_STRUCT_KEYS`] distinct keys across the run is a map: one
//!   text column of each object's JSON text as written; and a table stops adding columns at
//!   [`MAX_COLUMNS`] (further objects become text the same way).
//!
//! A text column that holds no strings carries [`super::json::RAW_JSON`]: each value is JSON as
//! written, and a JSON output writes it back so. [`Inference::notes`] says which fields became
//! text and why. Memory: the shape of the fields (bounded), and one batch of rows at a time.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};

use super::json::{shortest, Json, Kind, RAW_JSON};

/// Distinct keys past which an object is a map (one text column), not a struct.
pub const MAX_STRUCT_KEYS: usize = 256;
/// Columns (nested ones included) past which a table takes no more: a new key past it makes
/// its object one text column.
pub const MAX_COLUMNS: usize = 4096;

/// What a field's values were across the records.
#[derive(Debug)]
enum Shape {
    /// Only nulls (or absent).
    Null,
    Bool,
    Number(Numbers),
    String,
    List(Box<Shape>),
    Object(Object),
    /// Written as text: the kinds seen, and why.
    Text(u8, Why),
}

#[derive(Debug)]
struct Numbers {
    int64: bool,
    uint64: bool,
    /// Every value is written as a double prints it back.
    double: bool,
    /// The first that is not, and how a double prints it back.
    not_double: Option<(String, String)>,
}

#[derive(Debug, Default)]
struct Object {
    fields: Vec<(String, Shape)>,
    index: HashMap<String, usize>,
}

#[derive(Debug, Clone)]
enum Why {
    Mixed,
    Map,
    Columns,
}

impl Shape {
    /// The kind of values it stands for (0 for none).
    fn kinds(&self) -> u8 {
        match self {
            Shape::Null => 0,
            Shape::Bool => Kind::Bool as u8,
            Shape::Number(_) => Kind::Number as u8,
            Shape::String => Kind::String as u8,
            Shape::List(_) => Kind::Array as u8,
            Shape::Object(_) => Kind::Object as u8,
            Shape::Text(kinds, _) => *kinds,
        }
    }

    /// How many columns it holds below itself.
    fn columns_below(&self) -> usize {
        match self {
            Shape::List(item) => 1 + item.columns_below(),
            Shape::Object(o) => o.fields.iter().map(|(_, s)| 1 + s.columns_below()).sum(),
            _ => 0,
        }
    }

    /// Makes it text (`why`), giving back the columns below it.
    fn become_text(&mut self, why: Why, extra: u8, columns: &mut usize) {
        *columns = columns.saturating_sub(self.columns_below());
        *self = Shape::Text(self.kinds() | extra, why);
    }
}

/// The shape of the records seen so far.
#[derive(Debug, Default)]
pub(crate) struct Inference {
    root: Object,
    columns: usize,
}

impl Inference {
    /// Adds one record (a JSON object).
    pub(crate) fn observe(&mut self, record: &Json<'_>) -> Result<(), String> {
        let Json::Object(members, _) = record else {
            return Err(format!("a record is {}, not an object", Kind::names(record.kind() as u8)));
        };
        for (key, value) in members {
            let i = match self.root.index.get(key.as_ref()) {
                Some(&i) => i,
                None if self.root.fields.len() >= MAX_COLUMNS => {
                    return Err(format!(
                        "the records have more than {MAX_COLUMNS} distinct top-level fields, \
                         more than one table holds; write JSON Lines instead"
                    ))
                }
                None => {
                    self.columns += 1;
                    self.root.index.insert(key.to_string(), self.root.fields.len());
                    self.root.fields.push((key.to_string(), Shape::Null));
                    self.root.fields.len() - 1
                }
            };
            observe(&mut self.root.fields[i].1, value, &mut self.columns);
        }
        Ok(())
    }

    /// The table's schema.
    pub(crate) fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(fields(&self.root)))
    }

    /// The fields written as text, and why, one line each.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, shape) in &self.root.fields {
            notes(shape, name, &mut out);
        }
        out
    }

    /// Rows of the records of one batch, in [`Inference::schema`].
    pub(crate) fn rows(&self) -> Rows {
        Rows { root: Col::object(&self.root), schema: self.schema(), n: 0 }
    }
}

/// Adds one value to a field's shape.
fn observe(shape: &mut Shape, value: &Json<'_>, columns: &mut usize) {
    let kind = value.kind() as u8;
    match (&mut *shape, value) {
        (_, Json::Null) => {}
        (Shape::Text(kinds, _), _) => *kinds |= kind,
        (Shape::Null, _) => {
            *shape = match value {
                Json::Bool(_) => Shape::Bool,
                Json::Number(_) => Shape::Number(Numbers {
                    int64: true,
                    uint64: true,
                    double: true,
                    not_double: None,
                }),
                Json::String(_) => Shape::String,
                Json::Array(..) => Shape::List(Box::new(Shape::Null)),
                _ => Shape::Object(Object::default()),
            };
            if matches!(shape, Shape::List(_)) {
                *columns += 1;
            }
            observe(shape, value, columns);
        }
        (Shape::Bool, Json::Bool(_)) | (Shape::String, Json::String(_)) => {}
        (Shape::Number(n), Json::Number(text)) => n.observe(text),
        (Shape::List(item), Json::Array(items, _)) => {
            for v in items {
                observe(item, v, columns);
            }
        }
        (Shape::Object(o), Json::Object(members, _)) => {
            let mut full = None;
            for (key, v) in members {
                let i = match o.index.get(key.as_ref()) {
                    Some(&i) => i,
                    None if o.fields.len() >= MAX_STRUCT_KEYS => {
                        full = Some(Why::Map);
                        break;
                    }
                    None if *columns >= MAX_COLUMNS => {
                        full = Some(Why::Columns);
                        break;
                    }
                    None => {
                        *columns += 1;
                        o.index.insert(key.to_string(), o.fields.len());
                        o.fields.push((key.to_string(), Shape::Null));
                        o.fields.len() - 1
                    }
                };
                observe(&mut o.fields[i].1, v, columns);
            }
            if let Some(why) = full {
                shape.become_text(why, kind, columns);
            }
        }
        _ => shape.become_text(Why::Mixed, kind, columns),
    }
}

impl Numbers {
    fn observe(&mut self, text: &str) {
        let integer = !text.contains(['.', 'e', 'E']);
        // `-0` is an integer that a column of integers would write as `0`.
        self.int64 &= integer && text != "-0" && text.parse::<i64>().is_ok();
        self.uint64 &= integer && text.parse::<u64>().is_ok();
        if self.double {
            let back = text.parse::<f64>().ok().filter(|v| v.is_finite()).map(shortest);
            if back.as_deref() != Some(text) {
                self.double = false;
                let back = back.unwrap_or_else(|| "no double (out of range)".into());
                self.not_double = Some((text.to_string(), back));
            }
        }
    }

    fn data_type(&self) -> Option<DataType> {
        if self.int64 {
            Some(DataType::Int64)
        } else if self.uint64 {
            Some(DataType::UInt64)
        } else if self.double {
            Some(DataType::Float64)
        } else {
            None
        }
    }
}

/// A text column's field, marked as JSON text when it holds no strings.
fn text_field(name: &str, kinds: u8) -> Field {
    let field = Field::new(name, DataType::Utf8, true);
    if kinds & Kind::String as u8 == 0 {
        field.with_metadata(arrow_schema::Metadata::new().with(RAW_JSON.0, RAW_JSON.1))
    } else {
        field
    }
}

fn field(name: &str, shape: &Shape) -> Field {
    match shape {
        Shape::Null => Field::new(name, DataType::Utf8, true),
        Shape::Bool => Field::new(name, DataType::Boolean, true),
        Shape::Number(n) => match n.data_type() {
            Some(t) => Field::new(name, t, true),
            None => text_field(name, Kind::Number as u8),
        },
        Shape::String => Field::new(name, DataType::Utf8, true),
        Shape::List(item) => Field::new(name, DataType::List(Arc::new(field("item", item))), true),
        // Parquet holds no struct without fields: `{}` is text.
        Shape::Object(o) if o.fields.is_empty() => text_field(name, Kind::Object as u8),
        Shape::Object(o) => Field::new(name, DataType::Struct(fields(o)), true),
        Shape::Text(kinds, _) => text_field(name, *kinds),
    }
}

fn fields(o: &Object) -> Fields {
    o.fields.iter().map(|(name, shape)| field(name, shape)).collect()
}

fn notes(shape: &Shape, path: &str, out: &mut Vec<String>) {
    match shape {
        Shape::Number(n) if n.data_type().is_none() => {
            let (written, back) = n.not_double.clone().unwrap_or_default();
            out.push(format!(
                "field {path:?}: numbers written as text, as written ({written} is no 64-bit \
                 integer, and a double would print it as {back})"
            ));
        }
        Shape::Text(kinds, why) => out.push(match why {
            Why::Mixed => format!(
                "field {path:?}: {} written as text (strings as they are, other values as their \
                 JSON as written)",
                Kind::names(*kinds)
            ),
            Why::Map => format!(
                "field {path:?}: objects with more than {MAX_STRUCT_KEYS} distinct keys (a map) \
                 written as their JSON text, as written"
            ),
            Why::Columns => format!(
                "field {path:?}: written as its JSON text, as written: the table reached \
                 {MAX_COLUMNS} columns"
            ),
        }),
        Shape::Object(o) if o.fields.is_empty() => {
            out.push(format!("field {path:?}: empty objects written as their JSON text"))
        }
        Shape::List(item) => notes(item, &format!("{path}[]"), out),
        Shape::Object(o) => {
            for (name, shape) in &o.fields {
                notes(shape, &format!("{path}.{name}"), out);
            }
        }
        _ => {}
    }
}

/// A column being built, in the type its shape gave it.
enum Col {
    Bool(BooleanBuilder),
    Int(Int64Builder),
    UInt(UInt64Builder),
    Double(Float64Builder),
    Str(StringBuilder),
    /// Strings as they are, other values as written.
    Text(StringBuilder),
    List {
        item: Box<Col>,
        field: FieldRef,
        offsets: Vec<i32>,
        nulls: NullBufferBuilder,
    },
    Struct {
        fields: Fields,
        children: Vec<Col>,
        index: HashMap<String, usize>,
        nulls: NullBufferBuilder,
    },
}

impl Col {
    fn new(shape: &Shape) -> Col {
        match (shape, field("", shape).data_type()) {
            (Shape::Bool, _) => Col::Bool(BooleanBuilder::new()),
            (_, DataType::Int64) => Col::Int(Int64Builder::new()),
            (_, DataType::UInt64) => Col::UInt(UInt64Builder::new()),
            (_, DataType::Float64) => Col::Double(Float64Builder::new()),
            (Shape::String | Shape::Null, _) => Col::Str(StringBuilder::new()),
            (Shape::List(item), DataType::List(field)) => Col::List {
                item: Box::new(Col::new(item)),
                field: field.clone(),
                offsets: vec![0],
                nulls: NullBufferBuilder::new(0),
            },
            (Shape::Object(o), DataType::Struct(_)) => Col::object(o),
            _ => Col::Text(StringBuilder::new()),
        }
    }

    fn object(o: &Object) -> Col {
        Col::Struct {
            fields: fields(o),
            children: o.fields.iter().map(|(_, s)| Col::new(s)).collect(),
            index: o.index.clone(),
            nulls: NullBufferBuilder::new(0),
        }
    }

    /// Appends a value (`None`: absent or null).
    fn append(&mut self, value: Option<&Json<'_>>) -> Result<(), String> {
        let value = value.filter(|v| **v != Json::Null);
        let misfit = |v: &Json<'_>| format!("{} does not fit the column", v.text());
        match (self, value) {
            (Col::Bool(b), v) => match v {
                None => b.append_null(),
                Some(Json::Bool(x)) => b.append_value(*x),
                Some(v) => return Err(misfit(v)),
            },
            (Col::Int(b), v) => match v {
                None => b.append_null(),
                Some(v @ Json::Number(t)) => b.append_value(t.parse().map_err(|_| misfit(v))?),
                Some(v) => return Err(misfit(v)),
            },
            (Col::UInt(b), v) => match v {
                None => b.append_null(),
                Some(v @ Json::Number(t)) => b.append_value(t.parse().map_err(|_| misfit(v))?),
                Some(v) => return Err(misfit(v)),
            },
            (Col::Double(b), v) => match v {
                None => b.append_null(),
                Some(v @ Json::Number(t)) => b.append_value(t.parse().map_err(|_| misfit(v))?),
                Some(v) => return Err(misfit(v)),
            },
            (Col::Str(b), v) => match v {
                None => b.append_null(),
                Some(Json::String(s)) => b.append_value(s),
                Some(v) => return Err(misfit(v)),
            },
            (Col::Text(b), v) => match v {
                None => b.append_null(),
                Some(v) => b.append_value(v.text()),
            },
            (Col::List { item, offsets, nulls, .. }, v) => {
                match v {
                    None => nulls.append_null(),
                    Some(Json::Array(items, _)) => {
                        for x in items {
                            item.append(Some(x))?;
                        }
                        nulls.append_non_null();
                    }
                    Some(v) => return Err(misfit(v)),
                }
                let len = i32::try_from(item.len()).map_err(|_| "a list column past 2^31 items")?;
                offsets.push(len);
            }
            (Col::Struct { children, index, nulls, .. }, v) => {
                let mut given = vec![false; children.len()];
                match v {
                    None => nulls.append_null(),
                    Some(Json::Object(members, _)) => {
                        for (key, x) in members {
                            let i = *index.get(key.as_ref()).ok_or_else(|| misfit(x))?;
                            children[i].append(Some(x))?;
                            given[i] = true;
                        }
                        nulls.append_non_null();
                    }
                    Some(v) => return Err(misfit(v)),
                }
                for (child, _) in children.iter_mut().zip(given).filter(|(_, g)| !g) {
                    child.append(None)?;
                }
            }
        }
        Ok(())
    }

    /// Values appended so far.
    fn len(&self) -> usize {
        use arrow_array::builder::ArrayBuilder;
        match self {
            Col::Bool(b) => b.len(),
            Col::Int(b) => b.len(),
            Col::UInt(b) => b.len(),
            Col::Double(b) => b.len(),
            Col::Str(b) | Col::Text(b) => b.len(),
            Col::List { offsets, .. } => offsets.len() - 1,
            Col::Struct { nulls, .. } => nulls.len(),
        }
    }

    /// The column built so far; the builder starts again empty.
    fn finish(&mut self) -> Result<ArrayRef, String> {
        use arrow_array::builder::ArrayBuilder;
        Ok(match self {
            Col::Bool(b) => Arc::new(b.finish()),
            Col::Int(b) => Arc::new(b.finish()),
            Col::UInt(b) => Arc::new(b.finish()),
            Col::Double(b) => Arc::new(b.finish()),
            Col::Str(b) | Col::Text(b) => ArrayBuilder::finish(b),
            Col::List { item, field, offsets, nulls } => {
                let values = item.finish()?;
                let offsets = OffsetBuffer::new(std::mem::replace(offsets, vec![0]).into());
                Arc::new(
                    ListArray::try_new(field.clone(), offsets, values, nulls.finish())
                        .map_err(|e| e.to_string())?,
                )
            }
            Col::Struct { fields, children, nulls, .. } => {
                let columns =
                    children.iter_mut().map(Col::finish).collect::<Result<Vec<_>, _>>()?;
                Arc::new(
                    StructArray::try_new(fields.clone(), columns, nulls.finish())
                        .map_err(|e| e.to_string())?,
                )
            }
        })
    }
}

/// Records becoming rows of the inferred table, a batch at a time.
pub(crate) struct Rows {
    root: Col,
    schema: SchemaRef,
    n: usize,
}

impl Rows {
    /// Adds one record.
    pub(crate) fn push(&mut self, record: &Json<'_>) -> Result<(), String> {
        self.root.append(Some(record))?;
        self.n += 1;
        Ok(())
    }

    /// Records pushed since the last batch.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// The records pushed since the last batch, as one.
    pub(crate) fn batch(&mut self) -> Result<RecordBatch, String> {
        let n = std::mem::take(&mut self.n);
        let Col::Struct { children, .. } = &mut self.root else {
            return Err("the records are not objects".into());
        };
        let columns = children.iter_mut().map(Col::finish).collect::<Result<Vec<_>, _>>()?;
        if let Col::Struct { nulls, .. } = &mut self.root {
            nulls.finish();
        }
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(n));
        RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

    fn infer(lines: &[&str]) -> Inference {
        let mut inference = Inference::default();
        for line in lines {
            inference.observe(&Json::parse(line).expect("json")).expect("an object");
        }
        inference
    }

    #[test]
    fn numbers_are_typed_only_when_every_value_reads_back_as_written() {
        let i = infer(&[
            r#"{"int": 1, "big": 18446744073709551615, "double": 0.5, "id": 1.10, "huge": 123456789012345678901234567890, "e": 1e5}"#,
            r#"{"int": -2, "big": 1, "double": 1e300, "id": 2, "huge": 1, "e": 100000.0}"#,
        ]);
        let schema = i.schema();
        let types: Vec<(String, DataType)> =
            schema.fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect();
        assert_eq!(types[0].1, DataType::Int64);
        assert_eq!(types[1].1, DataType::UInt64);
        assert_eq!(types[2].1, DataType::Float64);
        for t in &types[3..] {
            assert_eq!(t.1, DataType::Utf8, "{}", t.0);
        }
        let notes = i.notes().join("\n");
        assert!(notes.contains("field \"id\": numbers written as text, as written (1.10 is no 64-bit integer, and a double would print it as 1.1)"), "{notes}");
    }

    #[test]
    fn mixed_kinds_are_text_and_maps_one_column() {
        let mut lines =
            vec![r#"{"m": 7, "o": {"a": 1}}"#.to_string(), r#"{"m": "x7", "o": 3}"#.to_string()];
        for i in 0..MAX_STRUCT_KEYS + 1 {
            lines.push(format!(r#"{{"meta": {{"words": {{"w{i}": {i}}}}}}}"#));
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let inference = infer(&refs);
        let schema = inference.schema();
        assert_eq!(schema.field_with_name("m").expect("m").data_type(), &DataType::Utf8);
        let meta = schema.field_with_name("meta").expect("meta");
        let DataType::Struct(inner) = meta.data_type() else { panic!("{meta}") };
        assert_eq!(inner[0].data_type(), &DataType::Utf8, "a map is one text column");
        assert_eq!(inner[0].metadata().get(RAW_JSON.0).map(String::as_str), Some(RAW_JSON.1));
        assert!(inference.columns <= 4, "the map's keys hold no columns: {}", inference.columns);
        let mut rows = inference.rows();
        for line in &refs {
            rows.push(&Json::parse(line).expect("json")).expect("fits");
        }
        let batch = rows.batch().expect("a batch");
        let m = batch.column_by_name("m").expect("m").as_string::<i32>();
        assert_eq!((m.value(0), m.value(1)), ("7", "x7"));
        let words = batch
            .column_by_name("meta")
            .expect("meta")
            .as_struct()
            .column(0)
            .as_string::<i32>()
            .clone();
        assert_eq!(words.value(2), r#"{"w0": 0}"#);
        let notes = inference.notes().join("\n");
        assert!(notes.contains("field \"m\": numbers and strings written as text"), "{notes}");
        assert!(notes.contains("field \"meta.words\": objects with more than 256"), "{notes}");
        assert!(notes.contains("field \"o\": numbers and objects"), "{notes}");
    }
}
