//! JSON values with their text as written, and rows written as JSON.
//!
//! A JSON Lines record becomes a table row ([`super::infer`]) from a [`Json`] tree that keeps
//! each number, array and object as the slice of the line it was written as, so that a value
//! the table cannot hold in a typed column is stored as its own text. A table row becomes a
//! JSON object ([`rows_as_json`]) with every column named (a null as `null`), doubles printed as
//! their shortest form (as they are read), and a column of JSON texts ([`RAW_JSON`]) written
//! back as the values it holds.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_json::writer::{Encoder, EncoderFactory, EncoderOptions, NullableEncoder};
use arrow_schema::{ArrowError, DataType, FieldRef};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Field metadata of a text column whose every value is a JSON value's text as written
/// (numbers that no typed column holds exactly, maps): a JSON output writes each back as that
/// value, byte for byte.
pub(crate) const RAW_JSON: (&str, &str) = ("neardup:json", "text as written");

/// A JSON value, with the text it was written as where a table may need it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    /// A number, as written.
    Number(&'a str),
    String(Cow<'a, str>),
    /// The items, and the array as written.
    Array(Vec<Json<'a>>, &'a str),
    /// The members in order (a repeated key keeps its last value, in its first place), and the
    /// object as written.
    Object(Vec<(Cow<'a, str>, Json<'a>)>, &'a str),
}

impl<'a> Json<'a> {
    /// Parses one JSON value (a record line without its ending).
    pub(crate) fn parse(text: &'a str) -> Result<Json<'a>, serde_json::Error> {
        let raw: &RawValue = serde_json::from_str(text)?;
        Json::from_raw(raw)
    }

    fn from_raw(raw: &'a RawValue) -> Result<Json<'a>, serde_json::Error> {
        let text = raw.get();
        Ok(match text.as_bytes().first() {
            Some(b'{') => {
                let members = serde_json::Deserializer::from_str(text).deserialize_map(Members)?;
                let mut out: Vec<(Cow<'a, str>, Json<'a>)> = Vec::with_capacity(members.len());
                let mut at: BTreeMap<Cow<'a, str>, usize> = BTreeMap::new();
                for (key, value) in members {
                    let value = Json::from_raw(value)?;
                    match at.get(&key) {
                        Some(&i) => out[i].1 = value,
                        None => {
                            at.insert(key.clone(), out.len());
                            out.push((key, value));
                        }
                    }
                }
                Json::Object(out, text)
            }
            Some(b'[') => {
                let items: Vec<&'a RawValue> = serde_json::from_str(text)?;
                let items = items.into_iter().map(Json::from_raw).collect::<Result<_, _>>()?;
                Json::Array(items, text)
            }
            Some(b'"') => Json::String(string(text)?),
            Some(b't') => Json::Bool(true),
            Some(b'f') => Json::Bool(false),
            Some(b'n') => Json::Null,
            _ => Json::Number(text),
        })
    }

    /// What kind of value it is, for messages and for the mix of kinds in a field.
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Json::Null => Kind::Null,
            Json::Bool(_) => Kind::Bool,
            Json::Number(_) => Kind::Number,
            Json::String(_) => Kind::String,
            Json::Array(..) => Kind::Array,
            Json::Object(..) => Kind::Object,
        }
    }

    /// Its text in a text column: a string's own text, any other value as written.
    pub(crate) fn text(&self) -> Cow<'_, str> {
        match self {
            Json::Null => Cow::Borrowed("null"),
            Json::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
            Json::Number(t) | Json::Array(_, t) | Json::Object(_, t) => Cow::Borrowed(t),
            Json::String(s) => Cow::Borrowed(s),
        }
    }
}

/// The kinds of JSON value, as bits of a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Null = 1,
    Bool = 2,
    Number = 4,
    String = 8,
    Array = 16,
    Object = 32,
}

impl Kind {
    /// The kinds of a set, in words: `numbers and strings`.
    pub(crate) fn names(set: u8) -> String {
        let names: Vec<&str> = [
            (Kind::Bool, "booleans"),
            (Kind::Number, "numbers"),
            (Kind::String, "strings"),
            (Kind::Array, "arrays"),
            (Kind::Object, "objects"),
        ]
        .iter()
        .filter(|(k, _)| set & *k as u8 != 0)
        .map(|(_, n)| *n)
        .collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => "nulls".to_string(),
        }
    }
}

/// A JSON string's value: borrowed when it holds no escape.
fn string(text: &str) -> Result<Cow<'_, str>, serde_json::Error> {
    match text.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Ok(Cow::Borrowed(inner)),
        _ => serde_json::from_str::<String>(text).map(Cow::Owned),
    }
}

/// An object's members in order, values as raw slices.
struct Members;

impl<'de> Visitor<'de> for Members {
    type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Key(key)) = map.next_key()? {
            out.push((key, map.next_value()?));
        }
        Ok(out)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(serde::de::Error::custom("expected a JSON object, found an array"))
    }
}

/// An object's key: borrowed from the line when it holds no escape.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_string())))
    }
}

/// The shortest text that reads back as `v` (ryu's, as serde_json writes doubles).
pub(crate) fn shortest(v: f64) -> String {
    ryu::Buffer::new().format_finite(v).to_string()
}

/// Each row of `batch` as one JSON object, newline-ended: every column named (a null as
/// `null`), timestamps as ISO 8601 strings, binary as hex, doubles in their shortest form, a
/// column of JSON texts (marked `neardup:json` by a table neardup wrote) as those values, and a NaN or infinity (no JSON form)
/// as `null` (counted by [`non_finite`]).
pub fn rows_as_json(batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
    let mut writer = arrow_json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .with_encoder_factory(Arc::new(Encoders))
        .build::<_, arrow_json::writer::LineDelimited>(Vec::new());
    writer.write(batch)?;
    writer.finish()?;
    Ok(writer.into_inner())
}

/// The values of `batch` that have no JSON form (NaN, infinities), by column (dotted into
/// structs, `[]` for list items), in column order.
pub fn non_finite(batch: &RecordBatch) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        count_non_finite(column, field.name(), &mut out);
    }
    out
}

fn count_non_finite(array: &ArrayRef, path: &str, out: &mut Vec<(String, u64)>) {
    let mut count = |n: usize| {
        if n > 0 {
            out.push((path.to_string(), n as u64));
        }
    };
    match array.data_type() {
        DataType::Float64 => count(
            array.as_primitive::<Float64Type>().iter().flatten().filter(|v| !v.is_finite()).count(),
        ),
        DataType::Float32 => count(
            array.as_primitive::<Float32Type>().iter().flatten().filter(|v| !v.is_finite()).count(),
        ),
        DataType::Float16 => count(
            array.as_primitive::<Float16Type>().iter().flatten().filter(|v| !v.is_finite()).count(),
        ),
        DataType::Struct(fields) => {
            for (field, child) in fields.iter().zip(array.as_struct().columns()) {
                count_non_finite(child, &format!("{path}.{}", field.name()), out);
            }
        }
        DataType::List(_) => {
            count_non_finite(array.as_list::<i32>().values(), &format!("{path}[]"), out)
        }
        DataType::LargeList(_) => {
            count_non_finite(array.as_list::<i64>().values(), &format!("{path}[]"), out)
        }
        _ => {}
    }
}

/// Encoders for the columns whose JSON `arrow-json` writes otherwise: doubles (its printer's
/// digits are not always the shortest) and columns of JSON texts.
#[derive(Debug)]
struct Encoders;

impl EncoderFactory for Encoders {
    fn make_default_encoder<'a>(
        &self,
        field: &'a FieldRef,
        array: &'a dyn Array,
        _options: &'a EncoderOptions,
    ) -> Result<Option<NullableEncoder<'a>>, ArrowError> {
        let nulls = array.nulls().cloned();
        let encoder: Box<dyn Encoder + 'a> = match array.data_type() {
            DataType::Float64 => {
                Box::new(Doubles(array.as_primitive::<Float64Type>().values().clone()))
            }
            DataType::Utf8
                if field.metadata().get(RAW_JSON.0).map(String::as_str) == Some(RAW_JSON.1) =>
            {
                Box::new(RawTexts(array.as_string::<i32>().clone()))
            }
            _ => return Ok(None),
        };
        Ok(Some(NullableEncoder::new(encoder, nulls)))
    }
}

struct Doubles(arrow_buffer::ScalarBuffer<f64>);

impl Encoder for Doubles {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v = self.0[idx];
        if v.is_finite() {
            out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
        } else {
            out.extend_from_slice(b"null");
        }
    }
}

struct RawTexts(arrow_array::StringArray);

impl Encoder for RawTexts {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let text = self.0.value(idx);
        // Written back as the value it is, if it is one (a table edited since may hold
        // anything): else as a string.
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
            out.extend_from_slice(text.as_bytes());
        } else {
            out.extend_from_slice(super::super::read::json_string(text).get().as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_text_and_repeated_keys_their_last_value() {
        let line = r#"{"id": 1.10, "m": {"b": 1, "a": [1e5, "x\n"]}, "id": 7, "s": "plain"}"#;
        let Json::Object(members, text) = Json::parse(line).expect("json") else { panic!() };
        assert_eq!(text, line);
        assert_eq!(members[0], (Cow::Borrowed("id"), Json::Number("7")));
        assert_eq!(members[1].1.text(), r#"{"b": 1, "a": [1e5, "x\n"]}"#);
        assert_eq!(members[2].1, Json::String(Cow::Borrowed("plain")));
        assert_eq!(Kind::names(Kind::Number as u8 | Kind::String as u8), "numbers and strings");
    }
}
