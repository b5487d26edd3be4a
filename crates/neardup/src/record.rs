//! One JSON Lines record as every surface reads it (`neardup dedup` from files, Spark's
//! executors from the lines its text reader gives): the id, text, tokens and keep-rule fields
//! found by name (a dotted name reaches into objects when no key has the whole name), every
//! other field skipped without building a `serde_json::Value`, the text read from a borrowed
//! slice of the line, and the id kept as the JSON text it was written with (`1.10` stays
//! `1.10`).

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::{OwnedDocument, Rank};

/// The largest document taken by default (`--max-doc-bytes`, and the same default on every
/// surface that reads records): 32 MiB keeps one document's sketching under about 1 GB.
pub const DEFAULT_MAX_DOC_BYTES: usize = 32 << 20;

/// The most `--max-doc-bytes` may be set to (2 GiB).
pub const MAX_DOC_BYTES: u64 = 2 << 30;

/// The names of the fields a record is read from.
#[derive(Debug, Clone, Copy)]
pub struct RecordFields<'a> {
    /// The text (a string).
    pub text: &'a str,
    /// The id (a string or a number).
    pub id: &'a str,
    /// Pre-tokenized text (an array of strings), read when the text field is absent.
    pub tokens: &'a str,
    /// The keep rule's field (`--keep max:FIELD`), if any.
    pub rank: Option<&'a str>,
}

/// The values of one record.
#[derive(Debug)]
pub struct JsonRecord {
    /// The id field as written (a JSON string or number), if the record has one.
    pub id: Option<Box<RawValue>>,
    /// The text, or the tokens.
    pub body: OwnedDocument,
    /// The keep rule's value, if the field is there and not null.
    pub rank: Option<Rank>,
}

/// Why a line is not a record: a message that says what is wrong (the caller says where).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError(pub String);

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RecordError {}

/// The bytes of a JSON Lines line that hold its record, or `None` for a blank line (no record):
/// the line without its ending (`\n`, `\r\n`, any trailing `\r`) and without a UTF-8 byte
/// order mark at its start. A mark is dropped on any line, not only a file's first, so files
/// joined with `cat` read as they did apart (JSON itself allows no mark, and a reader would
/// otherwise see an invisible character before the `{`).
pub fn record_line(line: &[u8]) -> Option<&[u8]> {
    let mut body = line;
    while let [rest @ .., b'\n' | b'\r'] = body {
        body = rest;
    }
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    (!body.iter().all(u8::is_ascii_whitespace)).then_some(body)
}

/// Reads one JSON Lines record: `line` is the line without its newline. It must be a JSON
/// object with a string text field (or, without one, an array of strings in the tokens field);
/// an id field, when present, must be a string or a number; the keep rule's field a number or
/// a date ([`Rank::from_json`]).
pub fn parse_json_record(line: &str, fields: &RecordFields<'_>) -> Result<JsonRecord, RecordError> {
    let bad = |message: String| RecordError(message);
    let malformed = |e: serde_json::Error| bad(malformed_at(0, &e));
    // A value read again on its own (a string unescaped, a number, an object a dotted name
    // reaches into) reports columns from its own start: they are moved to the line's, so an
    // error points into the value, not at a column near its key.
    let malformed_in = |raw: &RawValue, e: serde_json::Error| {
        bad(malformed_at(column_of(line, raw).saturating_sub(1), &e))
    };
    let at = |raw: &RawValue| format!("at column {}", column_of(line, raw));
    if !line.trim_start().starts_with('{') {
        // Still report a syntax error as such (`[1,` is malformed, `[1]` is not an object).
        return Err(match serde_json::from_str::<IgnoredAny>(line) {
            Err(e) => malformed(e),
            Ok(_) => bad("expected a JSON object".to_string()),
        });
    }
    let wanted = Wanted::new(fields);
    let mut de = serde_json::Deserializer::from_str(line);
    let mut found =
        wanted.deserialize(&mut de).and_then(|f| de.end().map(|()| f)).map_err(malformed)?;
    found.resolve_paths(&wanted).map_err(|(parent, e)| malformed_in(parent, e))?;
    let [found_id, found_text, found_tokens, found_rank] = found.values;
    let id = match found_id {
        Some(raw) if matches!(kind(raw), "a string" | "a number") => Some(raw.to_owned()),
        Some(raw) => {
            return Err(bad(format!(
                "field {:?} must be a string or a number, found {} {}",
                fields.id,
                kind(raw),
                at(raw)
            )))
        }
        None => None,
    };
    let string = |raw: &RawValue| unescape(raw).map_err(|e| malformed_in(raw, e));
    let body = match (found_text, found_tokens) {
        (Some(raw), _) if kind(raw) == "a string" => OwnedDocument::Text(string(raw)?),
        (Some(raw), _) => {
            return Err(bad(format!(
                "field {:?} must be a string, found {} {}",
                fields.text,
                kind(raw),
                at(raw)
            )))
        }
        (None, Some(raw)) if kind(raw) == "an array" => {
            let items: Vec<&RawValue> =
                serde_json::from_str(raw.get()).map_err(|e| malformed_in(raw, e))?;
            let mut tokens = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                if kind(item) != "a string" {
                    return Err(bad(format!(
                        "field {:?}[{i}] must be a string, found {} {}",
                        fields.tokens,
                        kind(item),
                        at(item)
                    )));
                }
                tokens.push(string(item)?);
            }
            OwnedDocument::Tokens(tokens)
        }
        (None, Some(raw)) => {
            return Err(bad(format!(
                "field {:?} must be an array of strings, found {} {}",
                fields.tokens,
                kind(raw),
                at(raw)
            )))
        }
        (None, None) => {
            return Err(bad(format!(
            "no {:?} field (nor {:?}); choose the field with --text-field (text_field in Python \
                 and Spark)",
            fields.text, fields.tokens
        )))
        }
    };
    let rank = match (found_rank, fields.rank) {
        // From its text, so that a number is compared as written (past 2^53 and 64 bits).
        (Some(raw), Some(field)) => Rank::from_json_text(raw.get())
            .map_err(|e| bad(format!("field {field:?} (of the keep rule): {e} {}", at(raw))))?,
        _ => None,
    };
    Ok(JsonRecord { id, body, rank })
}

/// Where the text of a record is written: the byte range of its text field's value (the JSON
/// string, quotes included) in `line`, found by the rule [`parse_json_record`] reads it by (a
/// whole key, else a dotted path), so a writer can put another text there and keep every other
/// byte of the record as written (`1.10` stays `1.10`, a 30-digit integer keeps its digits,
/// keys keep their order and spacing). `None` when the record has no such field.
pub fn text_span(
    line: &str,
    fields: &RecordFields<'_>,
) -> Result<Option<std::ops::Range<usize>>, RecordError> {
    let wanted = Wanted::new(fields);
    let mut de = serde_json::Deserializer::from_str(line);
    let mut found = wanted
        .deserialize(&mut de)
        .and_then(|f| de.end().map(|()| f))
        .map_err(|e| RecordError(malformed_at(0, &e)))?;
    found
        .resolve_paths(&wanted)
        .map_err(|(raw, e)| RecordError(malformed_at(column_of(line, raw) - 1, &e)))?;
    Ok(found.values[1].map(|raw| {
        // The value borrows from `line`: its offset is where it was written.
        let start = raw.get().as_ptr() as usize - line.as_ptr() as usize;
        start..start + raw.get().len()
    }))
}

/// "malformed JSON at column N: what", with serde_json's column moved by `base` bytes (the
/// start of the value it read, in the line) and its "at line 1 column N" said once, our way.
fn malformed_at(base: usize, e: &serde_json::Error) -> String {
    let message = e.to_string();
    let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
    format!("malformed JSON at column {}: {message}", base + e.column())
}

/// The 1-based column (in bytes, as serde_json counts) at which a value of `line` starts: the
/// values the reader finds are slices of the line.
fn column_of(line: &str, raw: &RawValue) -> usize {
    let (start, at) = (line.as_ptr() as usize, raw.get().as_ptr() as usize);
    if (start..=start + line.len()).contains(&at) {
        at - start + 1
    } else {
        1
    }
}

/// Which wanted field a key names: one of them (by its slot in [`Wanted::names`]), the first
/// segment of dotted ones (a bit per slot), or none.
#[derive(Clone, Copy)]
enum Field {
    /// The slots this key fills (one name may be two fields: `--keep max:id`).
    Named(u8),
    Parent(u8),
    Other,
}

/// The field names to look for; deserializes an object into [`Found`].
#[derive(Clone, Copy)]
struct Wanted<'o> {
    /// The id, text, tokens and keep-rule fields, in that order (a key may fill several: the
    /// keep rule may read the id).
    names: [Option<&'o str>; 4],
    /// The first segment of each dotted name (`meta` of `meta.url`).
    heads: [Option<&'o str>; 4],
}

impl<'o> Wanted<'o> {
    fn new(fields: &RecordFields<'o>) -> Wanted<'o> {
        let names = [Some(fields.id), Some(fields.text), Some(fields.tokens), fields.rank];
        let heads = names.map(|n| n.and_then(|name| name.split_once('.').map(|(h, _)| h)));
        Wanted { names, heads }
    }
}

/// The raw values of the wanted fields of one line (the last one, if a key repeats), and of
/// the objects that dotted names reach into, by slot.
#[derive(Default)]
struct Found<'a> {
    values: [Option<&'a RawValue>; 4],
    parents: [Option<&'a RawValue>; 4],
}

impl<'a> Found<'a> {
    /// Fills each field not found by its whole name from its dotted path, if it has one; an
    /// error comes with the object it was read from (its columns count from that object).
    fn resolve_paths(
        &mut self,
        wanted: &Wanted<'_>,
    ) -> Result<(), (&'a RawValue, serde_json::Error)> {
        for (i, slot) in self.values.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            let rest = wanted.names[i].and_then(|n| n.split_once('.')).map(|(_, rest)| rest);
            if let (Some(parent), Some(rest)) = (self.parents[i], rest) {
                *slot = lookup(parent, rest)?;
            }
        }
        Ok(())
    }
}

/// The value at a dotted `path` inside the JSON value `raw` (a key with the whole remaining
/// name first, then its first segment and the rest); `None` when it is not there or a step is
/// not an object.
fn lookup<'a>(
    raw: &'a RawValue,
    path: &str,
) -> Result<Option<&'a RawValue>, (&'a RawValue, serde_json::Error)> {
    if !raw.get().starts_with('{') {
        return Ok(None);
    }
    let object: std::collections::BTreeMap<String, &'a RawValue> =
        serde_json::from_str(raw.get()).map_err(|e| (raw, e))?;
    if let Some(value) = object.get(path) {
        return Ok(Some(value));
    }
    match path.split_once('.') {
        Some((head, rest)) => match object.get(head) {
            Some(inner) => lookup(inner, rest),
            None => Ok(None),
        },
        None => Ok(None),
    }
}

impl<'de> DeserializeSeed<'de> for Wanted<'_> {
    type Value = Found<'de>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Found<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Wanted<'_> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        let mut found = Found::default();
        while let Some(field) = map.next_key_seed(KeySeed(self))? {
            match field {
                Field::Named(bits) => {
                    let raw: &RawValue = map.next_value()?;
                    for (i, slot) in found.values.iter_mut().enumerate() {
                        if bits & (1 << i) != 0 {
                            *slot = Some(raw);
                        }
                    }
                }
                Field::Parent(bits) => {
                    let raw: &RawValue = map.next_value()?;
                    for (i, parent) in found.parents.iter_mut().enumerate() {
                        if bits & (1 << i) != 0 {
                            *parent = Some(raw);
                        }
                    }
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// Keys are compared where they lie in the line (no copy unless they hold escapes).
struct KeySeed<'o>(Wanted<'o>);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Field;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Field, D::Error> {
        d.deserialize_str(KeyVisitor(self.0))
    }
}

struct KeyVisitor<'o>(Wanted<'o>);

impl Visitor<'_> for KeyVisitor<'_> {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Field, E> {
        // A bit per slot whose name (or first dotted segment) is `key`.
        let slots = |names: &[Option<&str>; 4]| {
            names
                .iter()
                .enumerate()
                .filter(|(_, n)| **n == Some(key))
                .fold(0u8, |bits, (i, _)| bits | 1 << i)
        };
        let w = self.0;
        let named = slots(&w.names);
        Ok(if named != 0 {
            Field::Named(named)
        } else {
            let bits = slots(&w.heads);
            if bits == 0 {
                Field::Other
            } else {
                Field::Parent(bits)
            }
        })
    }
}

/// The JSON type of a raw value, for messages.
fn kind(raw: &RawValue) -> &'static str {
    match raw.get().as_bytes().first() {
        Some(b'"') => "a string",
        Some(b'[') => "an array",
        Some(b'{') => "an object",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// The string a raw JSON string value holds. The parser has already checked it (escapes and
/// control characters), so one without a backslash is its inner slice as it stands: copied once
/// instead of scanned again (BENCHMARKS.md, "Reading JSONL").
fn unescape(raw: &RawValue) -> Result<String, serde_json::Error> {
    let json = raw.get();
    match json.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) if !inner.as_bytes().contains(&b'\\') => Ok(inner.to_string()),
        _ => serde_json::from_str::<String>(json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_span_is_where_the_value_is_written_whole_key_or_dotted() {
        let fields = RecordFields { text: "text", id: "id", tokens: "tokens", rank: None };
        let line = r#"{"id": 1.10, "text" : "a \"b\" c", "n": 123456789012345678901234567890}"#;
        let span = text_span(line, &fields).expect("parsed").expect("found");
        assert_eq!(&line[span], r#""a \"b\" c""#);
        let fields = RecordFields { text: "doc.body", ..fields };
        let line = r#"{"doc": {"title": "t", "body": "the text"}, "x": [1.0]}"#;
        let span = text_span(line, &fields).expect("parsed").expect("found");
        assert_eq!(&line[span], r#""the text""#);
        assert_eq!(text_span(r#"{"x": 1}"#, &fields).expect("parsed"), None);
    }

    #[test]
    fn a_record_line_drops_its_ending_and_a_byte_order_mark() {
        assert_eq!(record_line(b"{}\r\n"), Some(&b"{}"[..]));
        assert_eq!(record_line(b"\xEF\xBB\xBF{\"a\": 1}\n"), Some(&b"{\"a\": 1}"[..]));
        assert_eq!(record_line(b"{}"), Some(&b"{}"[..]));
        for blank in [&b""[..], b"\n", b" \t\r\n", b"\xEF\xBB\xBF\n"] {
            assert_eq!(record_line(blank), None, "{blank:?}");
        }
        // Only one mark, and only at the start.
        assert_eq!(record_line(b"{}\xEF\xBB\xBF"), Some(&b"{}\xEF\xBB\xBF"[..]));
    }

    #[test]
    fn errors_about_a_value_pointed_at_the_key_not_the_value() {
        let fields =
            RecordFields { text: "text", id: "id", tokens: "tokens", rank: Some("meta.score") };
        let error = |line: &str| parse_json_record(line, &fields).expect_err(line).0;
        // Keys and values apart (the padding), so that a column says which it points at.
        for (line, says) in [
            (r#"{"id": 1,        "text": "a\ud800b"}"#, "malformed JSON at column 34"),
            (r#"{"id": 1,        "text": 5}"#, "found a number at column 26"),
            (r#"{"text": "x",    "id": [1]}"#, "found an array at column 24"),
            (r#"{"tokens": ["a", 7],  "z": 1}"#, "found a number at column 18"),
            (r#"{"text": "x",  "meta": {"score": true}}"#, "found true at column 34"),
            (r#"{"text": "x",  "meta": {"\ud800": 1}}"#, "malformed JSON at column 32"),
        ] {
            let e = error(line);
            assert!(e.contains(says), "{line}: {e}");
        }
    }
}
