//! Reading documents: plain text files, JSON Lines, directories, standard input and `--text`
//! strings.
//!
//! Every bad record becomes an [`InputError`] that says where it is (file, line, byte offset),
//! delivered in order with the good records, so the caller decides whether to stop or skip. Its
//! [`InputErrorKind`] says what may be skipped: a bad record, or a file that cannot be opened, is
//! skippable (`--skip-bad`); a stream that breaks in the middle (a corrupt or truncated `.gz` or
//! `.zst`, a read error) never is, because everything after the break would be lost unseen.
//!
//! Each JSONL line is read by the library's one rule for a record ([`neardup::parse_json_record`]:
//! the fields found by name, every other field skipped, the id kept as written), which Spark's
//! executors also use on the lines its text reader gives.

use std::fmt;
use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::CorpusError;

mod encoding;
mod jsonl;
mod open;
mod plain;
mod walk;

pub use encoding::{encoding_for_label, encoding_name, TextEncoding};
pub(crate) use jsonl::add_partition;
use jsonl::read_jsonl;
pub(crate) use open::open_file;
pub use open::{open, spool, spool_stdin, Compressed, Opened};
use open::{open_input, Reading};
pub(crate) use plain::count_invalid;
use plain::{check_size, read_plain};

/// A whole document's bytes as the readers decode them (UTF-8, or the encoding given or
/// detected); the error says why not.
pub(crate) fn decode_document(
    bytes: Vec<u8>,
    place: &str,
    base: usize,
    opts: &ReadOptions,
) -> Result<String, InputError> {
    encoding::decode_document(bytes, place, base, opts, &mut None).map(|d| d.text)
}
pub use walk::expand_inputs;

/// How a file holds its documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// JSON Lines: one object per line.
    Jsonl,
    /// One plain-text document per file.
    Text,
    /// Parquet: one record per row, fields are columns.
    Parquet,
    /// Arrow IPC (the file form, `.arrow`/`.feather`, or the stream form, `.arrows`): one
    /// record per row.
    Arrow,
}

impl Format {
    /// The format a file's name says: JSON Lines for `.jsonl`, `.ndjson` and `.json` (also
    /// compressed: `.jsonl.gz`, `.json.zst`, ...; Spark writes JSON Lines as `part-*.json`),
    /// Parquet for `.parquet` (`part-*.snappy.parquet`), Arrow for `.arrow`, `.feather`,
    /// `.arrows` and `.ipc`, one plain-text document for `.txt`, `.text`, `.md` and `.rst`
    /// (also compressed).
    pub fn by_name(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        if name.ends_with(".parquet") {
            return Some(Format::Parquet);
        }
        if [".arrow", ".feather", ".arrows", ".ipc"].iter().any(|e| name.ends_with(e)) {
            return Some(Format::Arrow);
        }
        let name = name.trim_end_matches(".gz").trim_end_matches(".zst").trim_end_matches(".zstd");
        if [".jsonl", ".ndjson", ".json"].iter().any(|e| name.ends_with(e)) {
            return Some(Format::Jsonl);
        }
        // A named text file is a document, whatever the command reads by default (`neardup
        // dedup a.txt b.txt` parsed each line as JSON: "malformed JSON at column 1").
        Format::TEXT_NAMES.iter().any(|e| name.ends_with(e)).then_some(Format::Text)
    }

    /// The endings of file names read as one plain-text document each.
    pub const TEXT_NAMES: [&'static str; 4] = [".txt", ".text", ".md", ".rst"];

    /// The format a file's first bytes say, for a file whose name does not: Parquet (`PAR1`)
    /// or Arrow IPC (`ARROW1`, or a stream's continuation marker and schema message). Only a
    /// regular file is opened for this: a named pipe read here would lose its first bytes to
    /// the sniff (or wait for a writer), so [`read_source`] sniffs those from the one read.
    pub fn by_content(path: &Path) -> Option<Format> {
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return None;
        }
        Format::by_file(&File::open(path).ok()?)
    }

    /// [`Format::by_content`] of an open file, read at offset 0 without moving its offset.
    fn by_file(file: &File) -> Option<Format> {
        use std::os::unix::fs::FileExt;
        let mut head = [0u8; 8];
        let mut n = 0;
        while n < head.len() {
            match file.read_at(&mut head[n..], n as u64) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        Format::by_head(&head[..n])
    }

    /// The format that a file's first (up to 8) bytes say, if they say one.
    pub fn by_head(head: &[u8]) -> Option<Format> {
        if head.starts_with(b"PAR1") {
            Some(Format::Parquet)
        } else if head.starts_with(b"ARROW1") || head.starts_with(&[0xff, 0xff, 0xff, 0xff]) {
            Some(Format::Arrow)
        } else {
            None
        }
    }

    /// True for the formats read as tables of rows.
    pub fn is_columnar(self) -> bool {
        matches!(self, Format::Parquet | Format::Arrow)
    }

    /// Its name in messages and options.
    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Text => "text",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
        }
    }
}

/// How records are read: the format, the fields of a JSONL record, and what to do with bad
/// bytes. The CLI's input options are these (`--format`, `--text-field`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// The format of every file and of standard input; `None`: each file's own by its name
    /// ([`Format::by_name`]), else [`ReadOptions::fallback`].
    pub format: Option<Format>,
    /// The format of a file whose name does not say, and of standard input, when
    /// [`ReadOptions::format`] is `None`.
    pub fallback: Format,
    /// The JSONL field holding the text; a dotted path (`content.body`) reaches into objects
    /// when no field has the whole name.
    pub text_field: String,
    /// The JSONL field holding the id (a string or a number), dotted like `text_field`; without
    /// it the id is `FILE:LINE`.
    pub id_field: String,
    /// The id field was named by the user: a JSONL source none of whose records has it is an
    /// error (a misspelt name would otherwise give every record a `FILE:LINE` id).
    pub id_field_named: bool,
    /// The JSONL field holding pre-tokenized text (an array of strings), used when the text
    /// field is absent.
    pub tokens_field: String,
    /// Replace invalid UTF-8 with U+FFFD (counted in [`Record::replaced`]) instead of failing.
    pub lossy: bool,
    /// The encoding of text that is not UTF-8 (`--encoding`); `None`: detected, and refused
    /// when detection is not sure ([`Record::encoding`] says what a record was read as).
    pub encoding: Option<TextEncoding>,
    /// Bad records may be skipped (the caller skips them; [`InputError::skippable`] says which).
    pub skip_bad: bool,
    /// The largest document accepted, in bytes.
    pub max_doc_bytes: usize,
    /// Parquet and Arrow: decode every column in the first pass, not only the text, id and
    /// keep columns, so that a row that could not be written back (a string that is not
    /// UTF-8) is a bad record there (skipped from every output, or replaced under
    /// [`ReadOptions::lossy`]). Set it when the rows are written (`-o`, `--dropped`).
    pub read_every_column: bool,
    /// The field or column read into [`Record::rank`] (the field of `--keep max:FIELD`), dotted
    /// like `text_field`; a record without it has no rank (the dedup driver refuses a run in
    /// which no record has one).
    pub rank_field: Option<String>,
}

/// The default of [`ReadOptions::max_doc_bytes`] (the library's, for every surface).
pub use neardup::DEFAULT_MAX_DOC_BYTES;

impl ReadOptions {
    /// The format `source` is read in: a `--text` string and a file found in a directory
    /// under a name that does not say JSON Lines are text; a named file by
    /// [`ReadOptions::format`], else its name, else [`ReadOptions::fallback`].
    pub fn format_of(&self, source: &Source) -> Format {
        match source {
            Source::Text(..) | Source::Plain(_) => Format::Text,
            Source::File(p) | Source::Partitioned(p, _) => self
                .format
                .or_else(|| Format::by_name(p))
                .or_else(|| Format::by_content(p))
                .unwrap_or(self.fallback),
            Source::Pipe(p, spool) => self
                .format
                .or_else(|| Format::by_name(p))
                .or_else(|| Format::by_file(spool))
                .unwrap_or(self.fallback),
            Source::Spooled(spool) => {
                self.format.or_else(|| Format::by_file(spool)).unwrap_or(self.fallback)
            }
            // Read once, its format from its first bytes (see `open::open_input`).
            Source::Stdin => self.format.unwrap_or(self.fallback),
        }
    }
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            format: None,
            fallback: Format::Text,
            text_field: "text".into(),
            id_field: "id".into(),
            id_field_named: false,
            tokens_field: "tokens".into(),
            lossy: false,
            encoding: None,
            skip_bad: false,
            max_doc_bytes: DEFAULT_MAX_DOC_BYTES,
            read_every_column: false,
            rank_field: None,
        }
    }
}

/// The `key=value` directories between a walked directory and a file, in order: columns that
/// every record of the file has, as strings (as Spark reads them without type inference); a
/// value `None` is null (Hive's `__HIVE_DEFAULT_PARTITION__`). A record's own field or a file's
/// own column of the same name wins.
pub type Partition = Arc<[(String, Option<String>)]>;

/// One input.
#[derive(Debug, Clone)]
pub enum Source {
    /// A file, in the format [`ReadOptions::format_of`] gives it (one text document, or one
    /// record per line). `.gz` and `.zst` files are decompressed.
    File(PathBuf),
    /// A file found in a directory that is one plain-text document.
    Plain(PathBuf),
    /// Standard input copied to an unnamed temporary file (so that `dedup` can read it twice);
    /// it is named `<stdin>` in messages.
    Spooled(Arc<File>),
    /// A named pipe given by name, copied to an unnamed temporary file as it is read (it can
    /// be read once, and `dedup` reads its input twice); named by its path.
    Pipe(PathBuf, Arc<File>),
    /// A file (JSON Lines, Parquet, Arrow) found in a walked directory below `key=value`
    /// directories (Hive's partitioning, as Spark writes `lang=en/part-0.parquet`): read as
    /// [`Source::File`], each record with those columns ([`Partition`]).
    Partitioned(PathBuf, Partition),
    /// Standard input, written `-`.
    Stdin,
    /// A document given on the command line; the number is its 1-based position.
    Text(String, usize),
}

impl Source {
    /// Sources from positional paths (`-` is stdin) followed by `--text` strings. Standard input
    /// can be read once: `-` given twice is refused (it was read as a document and then as an
    /// empty one).
    pub fn from_args(paths: &[PathBuf], texts: &[String]) -> Result<Vec<Source>, CorpusError> {
        if paths.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
            return Err(CorpusError::Usage(
                "standard input (-) is given twice: it can be read once; save it to a file to \
                 name it twice"
                    .into(),
            ));
        }
        for path in paths.iter().filter(|p| p.as_os_str() != "-") {
            // A device given by name never ends (`/dev/zero`): refused before anything runs.
            if let Some(what) = std::fs::metadata(path).ok().as_ref().and_then(open::endless) {
                return Err(CorpusError::Usage(open::device_error(path, what).to_string()));
            }
        }
        let mut sources: Vec<Source> = paths
            .iter()
            .map(|p| if p.as_os_str() == "-" { Source::Stdin } else { Source::File(p.clone()) })
            .collect();
        sources.extend(texts.iter().enumerate().map(|(i, t)| Source::Text(t.clone(), i + 1)));
        Ok(sources)
    }

    /// [`Source::from_args`] with each directory among `paths` expanded to the files in it, as
    /// [`expand_inputs`] expands them (records by name or content, what Spark and Hadoop write
    /// beside their data passed over); standard input stays a stream.
    pub fn from_args_expanded(
        paths: &[PathBuf],
        texts: &[String],
        opts: &ReadOptions,
        mut report: impl FnMut(&InputError),
    ) -> Result<Vec<Source>, CorpusError> {
        let mut sources = Vec::new();
        for source in Source::from_args(paths, texts)? {
            match source {
                Source::File(path) if path.is_dir() => {
                    sources.extend(expand_inputs(std::slice::from_ref(&path), opts, &mut report)?)
                }
                other => sources.push(other),
            }
        }
        Ok(sources)
    }

    /// Its name in messages: the path, `<stdin>` or `--text #N`.
    pub fn name(&self) -> String {
        match self {
            Source::File(p) | Source::Plain(p) | Source::Pipe(p, _) | Source::Partitioned(p, _) => {
                p.display().to_string()
            }
            Source::Stdin | Source::Spooled(_) => "<stdin>".to_string(),
            Source::Text(_, i) => format!("--text #{i}"),
        }
    }

    /// The file behind this source, if it has a name.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::File(p) | Source::Plain(p) | Source::Pipe(p, _) | Source::Partitioned(p, _) => {
                Some(p)
            }
            _ => None,
        }
    }

    /// The columns its directories give every record ([`Partition`]); none for most sources.
    pub fn partition(&self) -> &[(String, Option<String>)] {
        match self {
            Source::Partitioned(_, partition) => partition,
            _ => &[],
        }
    }
}

/// A document's content: text, or pre-tokenized text (the library's owned document).
pub use neardup::OwnedDocument as Body;

/// A document read from a source.
#[derive(Debug, Clone)]
pub struct Record {
    /// Its id as JSON text: the JSONL id field exactly as written, or a string made from where
    /// it was read.
    pub id: Box<RawValue>,
    /// Its content.
    pub body: Body,
    /// Invalid UTF-8 sequences replaced under --lossy.
    pub replaced: usize,
    /// The encoding its bytes were read as, when not UTF-8 (GB18030, Big5, UTF-16LE, ...).
    pub encoding: Option<TextEncoding>,
    /// Its 1-based line in a JSONL source (0 for a whole-file document).
    pub line: u64,
    /// Its value of [`ReadOptions::rank_field`], when it has one.
    pub rank: Option<neardup::Rank>,
}

/// What kind of failure an [`InputError`] is, which decides whether `--skip-bad` may skip it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputErrorKind {
    /// One bad record (malformed JSON, a missing or mistyped field, invalid UTF-8, too large);
    /// the source goes on.
    Record,
    /// A file or directory entry that cannot be opened; nothing of it was read.
    Unreadable,
    /// The source broke after it was opened (a corrupt or truncated compressed stream, a read
    /// error): what follows cannot be read, so skipping it would lose records unseen.
    Stream,
    /// A mistake in the request rather than the data (an `--id-field` that no record of a
    /// source has: most likely misspelt; a device named as an input): never skipped, since
    /// its records were read already under the wrong name.
    Request,
    /// Not an error: something the reader passed over on purpose and says once (a symbolic
    /// link loop, a saved neardup index in a directory). Nothing is lost.
    Notice,
}

/// A record that could not be read, and where.
#[derive(Debug)]
pub struct InputError {
    /// `FILE`, `FILE:LINE` or `--text #N`.
    pub place: String,
    /// What is wrong.
    pub message: String,
    /// What kind of failure it is.
    pub kind: InputErrorKind,
}

impl InputError {
    /// True when the rest of the source cannot be read either.
    pub fn fatal_for_source(&self) -> bool {
        !matches!(self.kind, InputErrorKind::Record | InputErrorKind::Notice)
    }

    /// True for a [`InputErrorKind::Notice`]: said, not counted as skipped.
    pub fn is_notice(&self) -> bool {
        self.kind == InputErrorKind::Notice
    }

    /// True when `--skip-bad` may skip it.
    pub fn skippable(&self) -> bool {
        !matches!(self.kind, InputErrorKind::Stream | InputErrorKind::Request)
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

/// What was read of one source: its byte count and an xxh3 digest of every byte (decompressed),
/// so that a second pass can tell whether it reads the same input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceDigest {
    /// Bytes read.
    pub bytes: u64,
    /// Their xxh3-64 digest.
    pub digest: u64,
}

/// Reads every source in order, calling `visit` for each record or error. `visit` returns
/// `Break` to stop reading.
pub fn read_all(
    sources: &[Source],
    opts: &ReadOptions,
    mut visit: impl FnMut(Result<Record, InputError>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    for source in sources {
        read_source(source, opts, &mut visit).0?;
    }
    ControlFlow::Continue(())
}

/// Reads one source, calling `visit` for each record or error; returns whether reading was
/// stopped, and the digest of what was read (complete when the source was read to its end).
pub fn read_source(
    source: &Source,
    opts: &ReadOptions,
    visit: &mut impl FnMut(Result<Record, InputError>) -> ControlFlow<()>,
) -> (ControlFlow<()>, SourceDigest) {
    let name = source.name();
    let mut digest = Digester::default();
    let flow = match source {
        Source::Text(text, _) => visit(check_size(
            Record {
                id: json_string(&name),
                body: Body::Text(text.clone()),
                replaced: 0,
                encoding: None,
                line: 0,
                rank: None,
            },
            &name,
            opts,
        )),
        _ => match open_input(source, opts) {
            Ok((format, Reading::Table(file))) => {
                let table = crate::columnar::Input { file, format, partition: source.partition() };
                crate::columnar::read_columnar(table, &name, opts, &mut digest, visit)
            }
            Ok((format, Reading::Stream(opened))) => {
                let mut reader = opened.reader;
                if format == Format::Jsonl {
                    let lines = jsonl::Lines {
                        compressed: opened.compressed.as_ref(),
                        partition: source.partition(),
                    };
                    read_jsonl(&mut reader, &name, opts, &mut digest, &lines, visit)
                } else {
                    let id = source.path().map_or("-".into(), |p| p.display().to_string());
                    visit(read_plain(&mut reader, &name, json_string(id), opts, &mut digest))
                }
            }
            Err(e) => visit(Err(e)),
        },
    };
    (flow, digest.finish())
}

/// An I/O error's message without the `(os error N)` suffix repeated by some printers.
pub fn io_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

/// A JSON string as raw JSON text.
pub fn json_string(s: impl AsRef<str>) -> Box<RawValue> {
    serde_json::value::to_raw_value(s.as_ref()).expect("a string serializes")
}

/// The running digest of a source's bytes.
#[derive(Default)]
pub struct Digester {
    hasher: xxhash_rust::xxh3::Xxh3,
    bytes: u64,
}

impl fmt::Debug for Digester {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Digester").field("bytes", &self.bytes).finish_non_exhaustive()
    }
}

impl Digester {
    /// Adds bytes read.
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.bytes += bytes.len() as u64;
    }

    /// The digest of everything added so far.
    pub fn finish(&self) -> SourceDigest {
        SourceDigest { bytes: self.bytes, digest: self.hasher.digest() }
    }
}
