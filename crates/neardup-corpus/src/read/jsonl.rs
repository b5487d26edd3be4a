//! JSON Lines: one record per line, read by the library's one rule for a record.

use std::fmt;
use std::io::{self, BufRead};
use std::ops::ControlFlow;

use super::open::{stream_error, Compressed};
use super::plain::{check_size, decode};
use super::{json_string, Digester, InputError, InputErrorKind, ReadOptions, Record};

/// Reads JSON Lines from `reader`. A line longer than `--max-doc-bytes` plus room for its other
/// fields is refused without being held whole.
pub(super) fn read_jsonl<R: BufRead + ?Sized>(
    reader: &mut R,
    name: &str,
    opts: &ReadOptions,
    digest: &mut Digester,
    compressed: Option<&Compressed>,
    visit: &mut impl FnMut(Result<Record, InputError>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut line = Vec::new();
    let mut offset = 0u64;
    let max_line = max_line_bytes(opts.max_doc_bytes);
    // Records read, and how many of them had the id field.
    let (mut records, mut with_id) = (0u64, 0u64);
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
        let record =
            match std::str::from_utf8(body) {
                Ok(text) => parse_record(text, &place, number, name, opts, 0),
                Err(_) => decode(body.to_vec(), &place, start as usize, opts).and_then(
                    |(text, replaced)| parse_record(&text, &place, number, name, opts, replaced),
                ),
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

fn parse_record(
    line: &str,
    place: &LinePlace<'_>,
    number: u64,
    name: &str,
    opts: &ReadOptions,
    replaced: usize,
) -> Result<(Record, bool), InputError> {
    let fields = neardup::RecordFields {
        text: &opts.text_field,
        id: &opts.id_field,
        tokens: &opts.tokens_field,
        rank: opts.rank_field.as_deref(),
    };
    let parsed = neardup::parse_json_record(line, &fields).map_err(|e| InputError {
        place: place.to_string(),
        message: e.0,
        kind: InputErrorKind::Record,
    })?;
    let has_id = parsed.id.is_some();
    let id = parsed.id.unwrap_or_else(|| json_string(format!("{name}:{number}")));
    let record = Record { id, body: parsed.body, replaced, line: number, rank: parsed.rank };
    check_size(record, place, opts).map(|r| (r, has_id))
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
        let _ = read_jsonl(&mut &bytes[..], "f.jsonl", opts, &mut digest, None, &mut |r| {
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
    fn counts_invalid_sequences() {
        assert_eq!(count_invalid(b"ok"), 0);
        assert_eq!(count_invalid(b"a\xffb\xfe\xfd"), 3);
        assert_eq!(count_invalid(&[0xe4, 0xbd]), 1); // truncated sequence at the end
    }
}
