//! Reading documents: plain text files, JSON Lines, standard input and `--text` strings.
//!
//! Every bad record becomes an [`InputError`] that says where it is (file, line, byte offset),
//! delivered in order with the good records, so the caller decides whether to stop or skip.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::args::InputArgs;

/// One input.
#[derive(Debug, Clone)]
pub enum Source {
    /// A file (plain text: one document; with --jsonl: one per line). `.gz` and `.zst` files
    /// are decompressed.
    File(PathBuf),
    /// A file that is always one plain-text document (found in a directory given to `dedup`).
    Plain(PathBuf),
    /// Standard input copied to a temporary file (so that `dedup` can read it twice); it is
    /// named `<stdin>` in messages.
    Spooled(PathBuf),
    /// Standard input, written `-`.
    Stdin,
    /// A document given on the command line; the number is its 1-based position.
    Text(String, usize),
}

impl Source {
    /// Sources from positional paths (`-` is stdin) followed by `--text` strings.
    pub fn from_args(paths: &[PathBuf], texts: &[String]) -> Vec<Source> {
        let mut sources: Vec<Source> = paths
            .iter()
            .map(|p| if p.as_os_str() == "-" { Source::Stdin } else { Source::File(p.clone()) })
            .collect();
        sources.extend(texts.iter().enumerate().map(|(i, t)| Source::Text(t.clone(), i + 1)));
        sources
    }

    pub fn name(&self) -> String {
        match self {
            Source::File(p) | Source::Plain(p) => p.display().to_string(),
            Source::Stdin | Source::Spooled(_) => "<stdin>".to_string(),
            Source::Text(_, i) => format!("--text #{i}"),
        }
    }
}

/// A document's content.
#[derive(Debug, Clone)]
pub enum Body {
    /// Text.
    Text(String),
    /// Pre-tokenized text.
    Tokens(Vec<String>),
}

impl Body {
    pub fn len(&self) -> usize {
        match self {
            Body::Text(t) => t.len(),
            Body::Tokens(t) => t.iter().map(|s| s.len()).sum(),
        }
    }

    pub fn as_document(&self) -> neardup::Document<'_> {
        match self {
            Body::Text(t) => neardup::Document::Text(t),
            Body::Tokens(t) => neardup::Document::Tokens(t),
        }
    }
}

/// A document read from a source.
#[derive(Debug, Clone)]
pub struct Record {
    /// Its id: the JSONL id field as given, or a name made from where it was read.
    pub id: Value,
    /// Its content.
    pub body: Body,
    /// Invalid UTF-8 sequences replaced under --lossy.
    pub replaced: usize,
    /// Its 1-based line in a JSONL source (0 for a whole-file document).
    pub line: u64,
}

/// A record that could not be read, and where.
#[derive(Debug)]
pub struct InputError {
    /// `FILE`, `FILE:LINE` or `--text #N`.
    pub place: String,
    /// What is wrong.
    pub message: String,
    /// True when the rest of the source cannot be read either (I/O failure).
    pub fatal_for_source: bool,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

/// Reads every source in order, calling `visit` for each record or error. `visit` returns
/// `Break` to stop reading.
pub fn read_all(
    sources: &[Source],
    opts: &InputArgs,
    mut visit: impl FnMut(Result<Record, InputError>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    for source in sources {
        let name = source.name();
        let result = match source {
            Source::Text(text, _) => visit(check_size(
                Record {
                    id: Value::String(name.clone()),
                    body: Body::Text(text.clone()),
                    replaced: 0,
                    line: 0,
                },
                &name,
                opts,
            )),
            Source::File(path) | Source::Spooled(path) => match open(path) {
                Ok(reader) => read_one(reader, &name, Some(path), opts.jsonl, opts, &mut visit),
                Err(e) => visit(Err(InputError {
                    place: name,
                    message: e.to_string(),
                    fatal_for_source: true,
                })),
            },
            Source::Plain(path) => match File::open(path) {
                Ok(file) => {
                    read_one(BufReader::new(file), &name, Some(path), false, opts, &mut visit)
                }
                Err(e) => visit(Err(InputError {
                    place: name,
                    message: e.to_string(),
                    fatal_for_source: true,
                })),
            },
            Source::Stdin => {
                read_one(io::stdin().lock(), &name, None, opts.jsonl, opts, &mut visit)
            }
        };
        result?;
    }
    ControlFlow::Continue(())
}

/// Opens a file for reading, decompressing `.gz` (gzip, multi-member) and `.zst` (Zstandard)
/// by extension.
pub fn open(path: &Path) -> io::Result<Box<dyn BufRead + Send>> {
    let file = File::open(path)?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    Ok(match ext {
        "gz" => Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file)),
        )),
        "zst" | "zstd" => Box::new(BufReader::with_capacity(1 << 16, zstd::Decoder::new(file)?)),
        _ => Box::new(BufReader::with_capacity(1 << 16, file)),
    })
}

fn read_one<R: BufRead>(
    reader: R,
    name: &str,
    path: Option<&Path>,
    jsonl: bool,
    opts: &InputArgs,
    visit: &mut impl FnMut(Result<Record, InputError>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    if jsonl {
        read_jsonl(reader, name, opts, visit)
    } else {
        let id = match path {
            Some(p) => Value::String(p.display().to_string()),
            None => Value::String("-".to_string()),
        };
        visit(read_plain(reader, name, id, opts))
    }
}

fn read_plain<R: Read>(
    reader: R,
    name: &str,
    id: Value,
    opts: &InputArgs,
) -> Result<Record, InputError> {
    let mut bytes = Vec::new();
    // Read one byte past the limit to know whether it was exceeded, without reading it all.
    let limit = opts.max_doc_bytes as u64 + 1;
    reader.take(limit).read_to_end(&mut bytes).map_err(|e| InputError {
        place: name.to_string(),
        message: e.to_string(),
        fatal_for_source: true,
    })?;
    if bytes.len() > opts.max_doc_bytes {
        return Err(InputError {
            place: name.to_string(),
            message: format!(
                "document is larger than --max-doc-bytes {} (raise the limit to read it)",
                opts.max_doc_bytes
            ),
            fatal_for_source: true,
        });
    }
    let (text, replaced) = decode(bytes, name, 0, opts)?;
    Ok(Record { id, body: Body::Text(text), replaced, line: 0 })
}

/// UTF-8 from bytes; `base` is the bytes' offset in the file, for the error message.
fn decode(
    bytes: Vec<u8>,
    place: &str,
    base: usize,
    opts: &InputArgs,
) -> Result<(String, usize), InputError> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, 0)),
        Err(e) if opts.lossy => {
            let bytes = e.into_bytes();
            let replaced = count_invalid(&bytes);
            Ok((String::from_utf8_lossy(&bytes).into_owned(), replaced))
        }
        Err(e) => Err(InputError {
            place: place.to_string(),
            message: format!(
                "invalid UTF-8 at byte offset {} (use --lossy to replace bad bytes)",
                base + e.utf8_error().valid_up_to()
            ),
            fatal_for_source: false,
        }),
    }
}

/// The number of U+FFFD that lossy decoding inserts.
fn count_invalid(mut bytes: &[u8]) -> usize {
    let mut n = 0;
    while !bytes.is_empty() {
        match std::str::from_utf8(bytes) {
            Ok(_) => break,
            Err(e) => {
                n += 1;
                let skip = e.valid_up_to() + e.error_len().unwrap_or(bytes.len() - e.valid_up_to());
                bytes = &bytes[skip..];
            }
        }
    }
    n
}

fn check_size(record: Record, place: &str, opts: &InputArgs) -> Result<Record, InputError> {
    if record.body.len() > opts.max_doc_bytes {
        return Err(InputError {
            place: place.to_string(),
            message: format!("document is larger than --max-doc-bytes {}", opts.max_doc_bytes),
            fatal_for_source: false,
        });
    }
    Ok(record)
}

fn read_jsonl<R: BufRead>(
    mut reader: R,
    name: &str,
    opts: &InputArgs,
    visit: &mut impl FnMut(Result<Record, InputError>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut line = Vec::new();
    let mut offset = 0usize;
    for number in 1.. {
        line.clear();
        let n = match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                return visit(Err(InputError {
                    place: format!("{name}:{number}"),
                    message: e.to_string(),
                    fatal_for_source: true,
                }))
            }
        };
        let place = format!("{name}:{number}");
        let start = offset;
        offset += n;
        while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue; // blank lines are not records
        }
        let bytes = std::mem::take(&mut line);
        let record = decode(bytes, &place, start, opts)
            .and_then(|(text, replaced)| parse_record(&text, &place, number, name, opts, replaced));
        visit(record)?;
    }
    ControlFlow::Continue(())
}

fn parse_record(
    line: &str,
    place: &str,
    number: usize,
    name: &str,
    opts: &InputArgs,
    replaced: usize,
) -> Result<Record, InputError> {
    let bad =
        |message: String| InputError { place: place.to_string(), message, fatal_for_source: false };
    let value: Value = serde_json::from_str(line).map_err(|e| {
        // serde_json ends its message with "at line 1 column N"; say it once, our way.
        let message = e.to_string();
        let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
        bad(format!("malformed JSON at column {}: {message}", e.column()))
    })?;
    let Value::Object(mut object) = value else {
        return Err(bad("expected a JSON object".to_string()));
    };
    let id = match object.remove(&opts.id_field) {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(other) => {
            return Err(bad(format!(
                "field {:?} must be a string or a number, found {}",
                opts.id_field,
                kind(&other)
            )))
        }
        None => Value::String(format!("{name}:{number}")),
    };
    let body = match object.remove(&opts.text_field) {
        Some(Value::String(text)) => Body::Text(text),
        Some(other) => {
            return Err(bad(format!(
                "field {:?} must be a string, found {}",
                opts.text_field,
                kind(&other)
            )))
        }
        None => match object.remove(&opts.tokens_field) {
            Some(Value::Array(items)) => {
                let mut tokens = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    match item {
                        Value::String(s) => tokens.push(s),
                        other => {
                            return Err(bad(format!(
                                "field {:?}[{i}] must be a string, found {}",
                                opts.tokens_field,
                                kind(&other)
                            )))
                        }
                    }
                }
                Body::Tokens(tokens)
            }
            Some(other) => {
                return Err(bad(format!(
                    "field {:?} must be an array of strings, found {}",
                    opts.tokens_field,
                    kind(&other)
                )))
            }
            None => {
                return Err(bad(format!(
                    "no {:?} field (nor {:?}); choose the field with --text-field",
                    opts.text_field, opts.tokens_field
                )))
            }
        },
    };
    check_size(Record { id, body, replaced, line: number as u64 }, place, opts)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_invalid_sequences() {
        assert_eq!(count_invalid(b"ok"), 0);
        assert_eq!(count_invalid(b"a\xffb\xfe\xfd"), 3);
        assert_eq!(count_invalid(&[0xe4, 0xbd]), 1); // truncated sequence at the end
    }
}
