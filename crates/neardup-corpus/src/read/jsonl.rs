//! JSON Lines: one record per line, read by the library's one rule for a record.

use std::fmt;
use std::io::{self, BufRead};
use std::ops::ControlFlow;

use super::encoding::decode_document;
use super::open::{stream_error, Compressed};
use super::plain::check_size;
use super::{json_string, Digester, InputError, InputErrorKind, ReadOptions, Record};

/// What a JSON Lines source brings besides its bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Lines<'a> {
    /// Where a compressed stream stands, for messages.
    pub compressed: Option<&'a Compressed>,
    /// The columns its directories give every record (a record's own field wins).
    pub partition: &'a [(String, Option<String>)],
}

/// Reads JSON Lines from `reader`. A line longer than `--max-doc-bytes` plus room for its other
/// fields is refused without being held whole.
pub(super) fn read_jsonl<R: BufRead + ?Sized>(
    reader: &mut R,
    name: &str,
    opts: &ReadOptions,
    digest: &mut Digester,
    lines: &Lines<'_>,
    visit: &mut impl FnMut(Result<Record, InputError>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let compressed = lines.compressed;
    let mut line = Vec::new();
    let mut offset = 0u64;
    let max_line = max_line_bytes(opts.max_doc_bytes);
    // Records read, and how many of them had the id field.
    let (mut records, mut with_id) = (0u64, 0u64);
    // The encoding of the file's lines that are not UTF-8, once one was read as it.
    let mut known = None;
    for number in 1u64.. {
        line.clear();
        let (n, over) = match read_line_bounded(reader, &mut line, max_line, digest) {
            Ok((0, _)) => break,
            Ok(read) => read,
            Err(e) => return visit(Err(stream_error(name, number - 1, offset, &e, compressed))),
        };
        let place = LinePlace { name, number };
        let start = offset;
        offset += n as u64;
        if over {
            visit(Err(InputError {
                place: place.to_string(),
                message: format!(
                    "a line of {n} bytes, longer than a record within --max-doc-bytes {} can be \
                     ({max_line} bytes: three times the limit for escapes, and 1 MiB of other \
                     fields); it was not held in memory",
                    opts.max_doc_bytes
                ),
                kind: InputErrorKind::Record,
            }))?;
            continue;
        }
        let Some(body) = neardup::record_line(&line) else {
            continue; // blank lines are not records
        };
        // Where the record starts in the file: after a byte order mark, if the line has one.
        let start = start + (body.as_ptr() as usize - line.as_ptr() as usize) as u64;
        let at = Line { place: &place, number, name, partition: lines.partition };
        let record = match std::str::from_utf8(body) {
            _ if number == 1 && looks_utf16(&line) => Err(InputError {
                place: place.to_string(),
                message: "JSON Lines in UTF-16: convert the file to UTF-8 (iconv -f UTF-16 -t \
                          UTF-8), or give its text as a plain text file, which is read in UTF-16"
                    .into(),
                kind: InputErrorKind::Stream,
            }),
            Ok(text) => parse_record(text, &at, opts, 0),
            Err(_) => decode_document(body.to_vec(), &place, start as usize, opts, &mut known)
                .and_then(|d| {
                    parse_record(&d.text, &at, opts, d.replaced).map(|(mut record, has_id)| {
                        record.encoding = d.encoding;
                        (record, has_id)
                    })
                }),
        };
        let record = record.map(|(record, has_id)| {
            records += 1;
            with_id += u64::from(has_id);
            record
        });
        visit(record)?;
    }
    if opts.id_field_named && records > 0 && with_id == 0 {
        // Most likely a misspelt name: every record would otherwise get a FILE:LINE id.
        return visit(Err(InputError {
            place: name.to_string(),
            message: format!(
                "none of its {records} records has the field {:?} named by --id-field (check \
                 the name; a dotted name such as meta.url reaches into an object); records \
                 without an id field (default: id) are named FILE:LINE",
                opts.id_field
            ),
            kind: InputErrorKind::Request,
        }));
    }
    ControlFlow::Continue(())
}

/// True when a first line starts as UTF-16 does: a byte order mark, or a NUL beside `{`.
fn looks_utf16(line: &[u8]) -> bool {
    matches!(line, [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..] | [b'{', 0, ..] | [0, b'{', ..])
}

/// The longest JSONL line that can hold a document of `max_doc_bytes`: its text escaped (three
/// times: `\uXXXX` for each byte of a three-byte character, as `ensure_ascii` writes Chinese)
/// and 1 MiB of other fields.
fn max_line_bytes(max_doc_bytes: usize) -> usize {
    max_doc_bytes.saturating_mul(3).saturating_add(1 << 20)
}

/// Reads one line (through its `\n`) into `line`, holding at most `max` bytes of it: the rest is
/// read, passed to the digest and dropped. Returns the line's whole length and whether it was
/// longer than `max`.
fn read_line_bounded<R: BufRead + ?Sized>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
    digest: &mut Digester,
) -> io::Result<(usize, bool)> {
    let mut total = 0usize;
    let mut over = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((total, over));
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        digest.update(chunk);
        if !over {
            if line.len() + chunk.len() <= max {
                line.extend_from_slice(chunk);
            } else {
                over = true;
                line.clear();
                line.shrink_to(1 << 16);
            }
        }
        let used = chunk.len();
        total += used;
        reader.consume(used);
        if done {
            return Ok((total, over));
        }
    }
}

/// `file:line`, formatted only when an error names it (not once per line read).
struct LinePlace<'a> {
    name: &'a str,
    number: u64,
}

impl fmt::Display for LinePlace<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.number)
    }
}

/// Where a line is, and what its source gives every record.
struct Line<'a> {
    place: &'a LinePlace<'a>,
    number: u64,
    name: &'a str,
    partition: &'a [(String, Option<String>)],
}

fn parse_record(
    line: &str,
    at: &Line<'_>,
    opts: &ReadOptions,
    replaced: usize,
) -> Result<(Record, bool), InputError> {
    let fields = neardup::RecordFields {
        text: &opts.text_field,
        id: &opts.id_field,
        tokens: &opts.tokens_field,
        rank: opts.rank_field.as_deref(),
    };
    let bad = |message: String| InputError {
        place: at.place.to_string(),
        message,
        kind: InputErrorKind::Record,
    };
    let parsed = neardup::parse_json_record(line, &fields).map_err(|e| bad(e.0))?;
    // A field the record lacks may be one of its directories' (`lang=en/`).
    let given =
        |field: &str| at.partition.iter().find(|(k, _)| k == field).and_then(|(_, v)| v.as_deref());
    let id = parsed.id.or_else(|| given(&opts.id_field).map(json_string));
    let rank = match (parsed.rank, opts.rank_field.as_deref().and_then(given)) {
        (None, Some(value)) => neardup::Rank::parse_value(value).map_err(|e| {
            bad(format!(
                "the directory's {:?} (of --keep): {e}",
                opts.rank_field.as_deref().unwrap_or("")
            ))
        })?,
        (rank, _) => rank,
    };
    let has_id = id.is_some();
    let id = id.unwrap_or_else(|| json_string(format!("{}:{}", at.name, at.number)));
    let record = Record { id, body: parsed.body, replaced, encoding: None, line: at.number, rank };
    check_size(record, at.place, opts).map(|r| (r, has_id))
}

/// A record line with the partition fields it lacks added at its end (`,"lang":"en"` before
/// its closing brace; a null value as `null`), everything else as written. A line that is not
/// an object of UTF-8 is given back as it is.
pub(crate) fn add_partition<'a>(
    line: &'a [u8],
    partition: &[(String, Option<String>)],
) -> std::borrow::Cow<'a, [u8]> {
    use std::borrow::Cow;
    let Some(body) = neardup::record_line(line).filter(|_| !partition.is_empty()) else {
        return Cow::Borrowed(line);
    };
    let Ok(text) = std::str::from_utf8(body) else { return Cow::Borrowed(line) };
    let Ok(keys) =
        serde_json::from_str::<std::collections::BTreeMap<String, serde::de::IgnoredAny>>(text)
    else {
        return Cow::Borrowed(line);
    };
    let missing: Vec<_> = partition.iter().filter(|(k, _)| !keys.contains_key(k)).collect();
    let (Some(close), false) = (body.iter().rposition(|&b| b == b'}'), missing.is_empty()) else {
        return Cow::Borrowed(line);
    };
    let at = body.as_ptr() as usize - line.as_ptr() as usize + close;
    let mut out = Vec::with_capacity(line.len() + 32 * missing.len());
    out.extend_from_slice(&line[..at]);
    for (i, (key, value)) in missing.into_iter().enumerate() {
        if i > 0 || !keys.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(json_string(key).get().as_bytes());
        out.push(b':');
        match value {
            Some(v) => out.extend_from_slice(json_string(v).get().as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
    }
    out.extend_from_slice(&line[at..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::super::plain::count_invalid;
    use super::super::{Body, Format};
    use super::*;
    use proptest::prelude::*;

    fn opts() -> ReadOptions {
        ReadOptions {
            format: Some(Format::Jsonl),
            fallback: Format::Jsonl,
            id_field_named: false,
            text_field: "text".into(),
            id_field: "id".into(),
            tokens_field: "tokens".into(),
            lossy: false,
            encoding: None,
            skip_bad: false,
            max_doc_bytes: 1 << 20,
            read_every_column: false,
            rank_field: None,
        }
    }

    /// Reads `bytes` as one JSONL source; returns the records and errors in order.
    fn read(bytes: &[u8], opts: &ReadOptions) -> Vec<Result<Record, InputError>> {
        let mut out = Vec::new();
        let mut digest = Digester::default();
        let lines = Lines::default();
        let _ = read_jsonl(&mut &bytes[..], "f.jsonl", opts, &mut digest, &lines, &mut |r| {
            out.push(r);
            ControlFlow::Continue(())
        });
        assert_eq!(digest.finish().bytes, bytes.len() as u64, "every byte is digested");
        out
    }

    proptest! {
        // Fuzz target (PROPTEST_CASES sets the count; `bench/fuzz.sh` runs it long): any bytes
        // give records or errors that say where, never a panic.
        #[test]
        fn jsonl_reader_never_panics_and_errors_say_where(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
            for item in read(&bytes, &opts()) {
                if let Err(e) = item {
                    prop_assert!(e.place.starts_with("f.jsonl:"), "{}", e);
                    prop_assert!(!e.message.is_empty());
                }
            }
        }

        /// Structured: objects with the fields in any order, escapes, extra fields and nesting
        /// come back with the text decoded and the id exactly as written.
        #[test]
        fn jsonl_records_round_trip(
            text in "\\PC{0,30}",
            id in prop_oneof![
                Just("1.10".to_string()), Just("1e2".to_string()), Just("-0".to_string()),
                "[a-z]{1,8}".prop_map(|s| format!("{s:?}")),
                Just("\"x\\u0041\"".to_string()),
            ],
            extra in prop::collection::vec(("[a-z]{1,5}", "\\PC{0,8}"), 0..3),
            id_first in any::<bool>(),
        ) {
            let text_json = serde_json::to_string(&text).expect("json");
            let mut fields = vec![format!("\"text\": {text_json}")];
            let id_field = format!("\"id\": {id}");
            if id_first { fields.insert(0, id_field) } else { fields.push(id_field) }
            for (k, v) in &extra {
                if k != "id" && k != "text" && k != "tokens" {
                    fields.push(format!("{:?}: {{\"nested\": [{}]}}", k, serde_json::to_string(v).expect("json")));
                }
            }
            let line = format!("{{{}}}\n", fields.join(", "));
            let items = read(line.as_bytes(), &opts());
            prop_assert_eq!(items.len(), 1);
            let record = items.into_iter().next().expect("one").expect("valid");
            prop_assert_eq!(record.id.get(), id.as_str());
            match record.body {
                Body::Text(t) => prop_assert_eq!(t, text),
                Body::Tokens(_) => prop_assert!(false, "tokens"),
            }
        }
    }

    #[test]
    fn dotted_names_reach_into_objects_and_a_whole_key_wins() {
        let mut o = opts();
        o.id_field = "meta.url".into();
        o.text_field = "a.b.c".into();
        let lines = concat!(
            r#"{"meta": {"url": "u1"}, "a": {"b": {"c": "deep"}}}"#,
            "\n",
            r#"{"a": {"b.c": "flat inside"}, "meta": {"u\u0072l": "escaped key"}}"#,
            "\n",
            r#"{"a.b.c": "whole key", "a": {"b": {"c": "no"}}, "meta": "not an object"}"#,
            "\n",
            r#"{"a": {"b": [1]}}"#,
            "\n",
        );
        let got = read(lines.as_bytes(), &o);
        let ok = |i: usize| got[i].as_ref().expect("a record");
        assert_eq!((ok(0).id.get(), ok(0).body.clone()), ("\"u1\"", Body::Text("deep".into())));
        assert_eq!(
            (ok(1).id.get(), ok(1).body.clone()),
            ("\"escaped key\"", Body::Text("flat inside".into()))
        );
        // `meta` is not an object: no id, so FILE:LINE.
        assert_eq!(
            (ok(2).id.get(), ok(2).body.clone()),
            ("\"f.jsonl:3\"", Body::Text("whole key".into()))
        );
        let e = got[3].as_ref().expect_err("no text");
        assert!(e.message.contains("no \"a.b.c\" field"), "{}", e.message);
    }

    #[test]
    fn field_errors_name_the_field_and_type() {
        let cases: [(&[u8], &str); 7] = [
            (b"{\"id\": 1, \"text\": 5}\n", "field \"text\" must be a string, found a number"),
            (b"{\"id\": [1], \"text\": \"a\"}\n", "found an array"),
            (b"{\"id\": 1}\n", "no \"text\" field"),
            (b"[1, 2]\n", "expected a JSON object"),
            (b"{\"text\": \"a\"} x\n", "malformed JSON at column"),
            (b"{\"tokens\": [\"a\", 3]}\n", "\"tokens\"[1] must be a string"),
            (b"{\"text\": \"a\xff\"}\n", "invalid UTF-8 at byte offset 11"),
        ];
        for (bytes, want) in cases {
            let items = read(bytes, &opts());
            let e = items.into_iter().next().expect("one").expect_err("bad");
            assert!(e.message.contains(want), "{}: {}", String::from_utf8_lossy(bytes), e);
            assert_eq!(e.place, "f.jsonl:1");
        }
    }

    #[test]
    fn partition_fields_are_added_to_a_record_that_lacks_them() {
        let partition = [("lang".to_string(), Some("en".to_string())), ("d".to_string(), None)];
        let add = |line: &str| {
            String::from_utf8(add_partition(line.as_bytes(), &partition).into_owned())
                .expect("utf8")
        };
        assert_eq!(add("{\"text\": \"a\"}\n"), "{\"text\": \"a\",\"lang\":\"en\",\"d\":null}\n");
        assert_eq!(add("{\"lang\": \"zh\", \"d\": 1}\n"), "{\"lang\": \"zh\", \"d\": 1}\n");
        assert_eq!(add("{}"), "{\"lang\":\"en\",\"d\":null}");
    }

    #[test]
    fn counts_invalid_sequences() {
        assert_eq!(count_invalid(b"ok"), 0);
        assert_eq!(count_invalid(b"a\xffb\xfe\xfd"), 3);
        assert_eq!(count_invalid(&[0xe4, 0xbd]), 1); // truncated sequence at the end
    }
}
