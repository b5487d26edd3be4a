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
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::CorpusError;

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
    /// `.arrows` and `.ipc`.
    pub fn by_name(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        if name.ends_with(".parquet") {
            return Some(Format::Parquet);
        }
        if [".arrow", ".feather", ".arrows", ".ipc"].iter().any(|e| name.ends_with(e)) {
            return Some(Format::Arrow);
        }
        let name = name.trim_end_matches(".gz").trim_end_matches(".zst").trim_end_matches(".zstd");
        [".jsonl", ".ndjson", ".json"].iter().any(|e| name.ends_with(e)).then_some(Format::Jsonl)
    }

    /// The format a file's first bytes say, for a file whose name does not: Parquet (`PAR1`)
    /// or Arrow IPC (`ARROW1`, or a stream's continuation marker and schema message).
    pub fn by_content(path: &Path) -> Option<Format> {
        let mut head = [0u8; 8];
        let mut file = File::open(path).ok()?;
        let mut n = 0;
        while n < head.len() {
            match file.read(&mut head[n..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        let head = &head[..n];
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
    /// Bad records may be skipped (the caller skips them; [`InputError::skippable`] says which).
    pub skip_bad: bool,
    /// The largest document accepted, in bytes.
    pub max_doc_bytes: usize,
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
            Source::File(p) => self
                .format
                .or_else(|| Format::by_name(p))
                .or_else(|| Format::by_content(p))
                .unwrap_or(self.fallback),
            Source::Stdin | Source::Spooled(_) => self.format.unwrap_or(self.fallback),
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
            skip_bad: false,
            max_doc_bytes: DEFAULT_MAX_DOC_BYTES,
            rank_field: None,
        }
    }
}

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
            Source::File(p) | Source::Plain(p) => p.display().to_string(),
            Source::Stdin | Source::Spooled(_) => "<stdin>".to_string(),
            Source::Text(_, i) => format!("--text #{i}"),
        }
    }

    /// The file behind this source, if it has a name.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::File(p) | Source::Plain(p) => Some(p),
            _ => None,
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
    /// source has: most likely misspelt): never skipped, since its records were read already
    /// under the wrong name.
    Request,
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
        self.kind != InputErrorKind::Record
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
                line: 0,
                rank: None,
            },
            &name,
            opts,
        )),
        Source::File(_) | Source::Spooled(_) if opts.format_of(source).is_columnar() => {
            match open_file(source) {
                Ok(file) => crate::columnar::read_columnar(
                    file,
                    opts.format_of(source),
                    &name,
                    opts,
                    &mut digest,
                    visit,
                ),
                Err(e) => visit(Err(unreadable(&name, &e))),
            }
        }
        Source::File(_) | Source::Spooled(_) => match open(source) {
            Ok(opened) => {
                let mut reader = opened.reader;
                let compressed = opened.compressed;
                let flow = if opts.format_of(source) == Format::Jsonl {
                    read_jsonl(&mut reader, &name, opts, &mut digest, compressed.as_ref(), visit)
                } else {
                    let id =
                        json_string(source.path().map_or("-".into(), |p| p.display().to_string()));
                    visit(read_plain(&mut reader, &name, id, opts, &mut digest))
                };
                flow
            }
            Err(e) => visit(Err(unreadable(&name, &e))),
        },
        Source::Plain(path) => match File::open(path) {
            Ok(file) => {
                let id = json_string(path.display().to_string());
                visit(read_plain(BufReader::new(file), &name, id, opts, &mut digest))
            }
            Err(e) => visit(Err(unreadable(&name, &e))),
        },
        Source::Stdin if opts.format_of(source).is_columnar() => visit(Err(InputError {
            place: name.clone(),
            message: format!(
                "{} is read from a file, not from standard input (save it to a file)",
                opts.format_of(source).name()
            ),
            kind: InputErrorKind::Unreadable,
        })),
        Source::Stdin => {
            let mut stdin = io::stdin().lock();
            if opts.format_of(source) == Format::Jsonl {
                read_jsonl(&mut stdin, &name, opts, &mut digest, None, visit)
            } else {
                visit(read_plain(stdin, &name, json_string("-"), opts, &mut digest))
            }
        }
    };
    (flow, digest.finish())
}

fn unreadable(name: &str, e: &io::Error) -> InputError {
    InputError {
        place: name.to_string(),
        message: format!("cannot open: {}", io_message(e)),
        kind: InputErrorKind::Unreadable,
    }
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

/// An opened source: its (decompressed) reader, and for compressed files the count of
/// compressed bytes read so far, for error messages.
#[allow(missing_debug_implementations)] // a boxed reader has no Debug
pub struct Opened {
    /// The (decompressed) bytes.
    pub reader: Box<dyn BufRead + Send>,
    /// Where a compressed file's stream stands.
    pub compressed: Option<Compressed>,
}

/// Where a compressed stream stands, for error messages.
#[derive(Debug, Clone)]
pub struct Compressed {
    /// `gzip` or `zstd`.
    pub format: &'static str,
    /// Compressed bytes read from the file so far.
    pub offset: Arc<AtomicU64>,
}

/// A reader that counts the bytes it passes on.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Reads a shared file from its start, with positioned reads (the spool of standard input is
/// read twice, each time from the start, without moving a shared offset).
struct SharedFile {
    file: Arc<File>,
    pos: u64,
}

impl Read for SharedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// The file of a named source or the spool, from its start, as it is (a columnar file is read
/// at the offsets its footer names).
pub(crate) fn open_file(source: &Source) -> io::Result<File> {
    match source {
        Source::Spooled(file) => {
            let mut f = file.try_clone()?;
            f.rewind()?;
            Ok(f)
        }
        Source::File(p) | Source::Plain(p) => File::open(p),
        Source::Stdin | Source::Text(..) => {
            Err(io::Error::new(io::ErrorKind::Unsupported, "not a file"))
        }
    }
}

/// Opens a file or the spool for reading, decompressing `.gz` (gzip, multi-member) and `.zst`
/// (Zstandard) by extension.
pub fn open(source: &Source) -> io::Result<Opened> {
    let path = match source {
        Source::Spooled(file) => {
            let reader = SharedFile { file: file.clone(), pos: 0 };
            return Ok(Opened {
                reader: Box::new(BufReader::with_capacity(1 << 16, reader)),
                compressed: None,
            });
        }
        Source::File(p) | Source::Plain(p) => p,
        Source::Stdin | Source::Text(..) => {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "not a file"))
        }
    };
    let mut file = File::open(path)?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if let Some(format) = compression_by_extension(ext) {
        check_magic(&mut file, format)?;
    }
    let offset = Arc::new(AtomicU64::new(0));
    let counted = Counting { inner: file, count: offset.clone() };
    Ok(match ext {
        "gz" => Opened {
            reader: Box::new(BufReader::with_capacity(
                1 << 16,
                flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, counted)),
            )),
            compressed: Some(Compressed { format: "gzip", offset }),
        },
        "zst" | "zstd" => Opened {
            reader: Box::new(BufReader::with_capacity(1 << 16, zstd::Decoder::new(counted)?)),
            compressed: Some(Compressed { format: "zstd", offset }),
        },
        _ => Opened {
            reader: Box::new(BufReader::with_capacity(1 << 16, counted)),
            compressed: None,
        },
    })
}

/// The compression a file's extension names.
fn compression_by_extension(ext: &str) -> Option<&'static str> {
    match ext {
        "gz" => Some("gzip"),
        "zst" | "zstd" => Some("zstd"),
        _ => None,
    }
}

/// Refuses a file named as compressed whose first bytes are not that format's magic number
/// (a plain file named `.gz` was reported as a damaged stream at the end of its header),
/// saying so at byte offset 0. An empty file passes (it holds no records).
fn check_magic(file: &mut File, format: &'static str) -> io::Result<()> {
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    file.rewind()?;
    let head = &head[..n];
    let ok = match format {
        "gzip" => head.starts_with(&[0x1f, 0x8b]),
        // A frame, or a skippable frame (0x184D2A50 to 0x184D2A5F, little-endian).
        _ => {
            head == [0x28, 0xb5, 0x2f, 0xfd]
                || (n == 4 && head[0] & 0xf0 == 0x50 && head[1..] == [0x2a, 0x4d, 0x18])
        }
    };
    if n == 0 || ok || (n < 2 && format == "gzip") {
        return Ok(());
    }
    let magic = if format == "gzip" { "1f 8b" } else { "28 b5 2f fd" };
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "not a {format} file: it does not start with {format}'s magic bytes {magic} (byte \
             offset 0); rename it if it is not compressed"
        ),
    ))
}

/// Copies standard input to an unnamed temporary file (`O_TMPFILE`, or created and unlinked at
/// once, mode 0600, in the temporary directory): no name exists that another user could plant
/// a link at or that an interrupted run could leave behind.
pub fn spool_stdin() -> io::Result<Arc<File>> {
    let mut file = tempfile::tempfile()?;
    io::copy(&mut io::stdin().lock(), &mut file)?;
    file.rewind()?;
    Ok(Arc::new(file))
}

/// The message of a read error in the middle of a source.
fn stream_error(
    name: &str,
    line: u64,
    offset: u64,
    e: &io::Error,
    compressed: Option<&Compressed>,
) -> InputError {
    let message = match compressed {
        Some(c) => format!(
            "corrupt or truncated {} stream near compressed byte offset {} (after line {line}, \
             decompressed byte {offset}): {}; the rest of the file cannot be read",
            c.format,
            c.offset.load(Ordering::Relaxed),
            io_message(e)
        ),
        None => {
            format!("read error at byte offset {offset} (after line {line}): {}", io_message(e))
        }
    };
    InputError { place: name.to_string(), message, kind: InputErrorKind::Stream }
}

fn read_plain<R: Read>(
    reader: R,
    name: &str,
    id: Box<RawValue>,
    opts: &ReadOptions,
    digest: &mut Digester,
) -> Result<Record, InputError> {
    let mut bytes = Vec::new();
    // Read one byte past the limit to know whether it was exceeded, without reading it all.
    let limit = opts.max_doc_bytes as u64 + 1;
    reader.take(limit).read_to_end(&mut bytes).map_err(|e| InputError {
        place: name.to_string(),
        message: format!("read error: {}", io_message(&e)),
        kind: InputErrorKind::Stream,
    })?;
    digest.update(&bytes);
    if bytes.len() > opts.max_doc_bytes {
        return Err(InputError {
            place: name.to_string(),
            message: format!(
                "document is larger than --max-doc-bytes {} (raise the limit to read it)",
                opts.max_doc_bytes
            ),
            kind: InputErrorKind::Record,
        });
    }
    let body = strip_bom(bytes);
    let (text, replaced) = decode(body, name, 0, opts)?;
    Ok(Record { id, body: Body::Text(text), replaced, line: 0, rank: None })
}

/// Drops a UTF-8 byte order mark at the start of a file.
fn strip_bom(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    bytes
}

/// UTF-8 from bytes; `base` is the bytes' offset in the file, for the error message.
fn decode(
    bytes: Vec<u8>,
    place: &(impl fmt::Display + ?Sized),
    base: usize,
    opts: &ReadOptions,
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
            kind: InputErrorKind::Record,
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

fn check_size(
    record: Record,
    place: &(impl fmt::Display + ?Sized),
    opts: &ReadOptions,
) -> Result<Record, InputError> {
    if record.body.len() > opts.max_doc_bytes {
        return Err(InputError {
            place: place.to_string(),
            message: format!("document is larger than --max-doc-bytes {}", opts.max_doc_bytes),
            kind: InputErrorKind::Record,
        });
    }
    Ok(record)
}

/// Reads JSON Lines from `reader`. A line longer than `--max-doc-bytes` plus room for its other
/// fields is refused without being held whole.
fn read_jsonl<R: BufRead + ?Sized>(
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

/// Expands the paths a user gave: files as given, directories walked in path order (following
/// symbolic links to files and directories, with loops detected), `-` spooled. In a directory,
/// a file whose name says JSON Lines (or every file, under `--format jsonl`) is read as JSON
/// Lines, any other as one text document; what Spark and Hadoop write beside their data is
/// passed over: names starting with `_` (`_SUCCESS`, `_metadata`) or `.` (hidden, the `.crc`
/// checksums), and `.crc` files. `report` receives each entry that cannot be read (by its own
/// path) when `opts.skip_bad` is set; without it the first such entry is the error. A given path
/// that does not exist is [`CorpusError::Usage`] (a mistake in the request); any other failure
/// is [`CorpusError::Input`].
pub fn expand_inputs(
    inputs: &[PathBuf],
    opts: &ReadOptions,
    report: impl FnMut(&InputError),
) -> Result<Vec<Source>, CorpusError> {
    expand(inputs, opts, report).map_err(|e| {
        let missing = inputs.iter().any(|p| p.display().to_string() == e.place)
            && !Path::new(&e.place).exists();
        if missing {
            CorpusError::Usage(e.to_string())
        } else {
            CorpusError::Input(e)
        }
    })
}

/// True for the files a Spark or Hadoop job writes beside its data, and hidden files.
fn is_side_file(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    name.starts_with('_') || name.starts_with('.') || name.ends_with(".crc")
}

fn expand(
    inputs: &[PathBuf],
    opts: &ReadOptions,
    mut report: impl FnMut(&InputError),
) -> Result<Vec<Source>, InputError> {
    let skip_bad = opts.skip_bad;
    let mut out = Vec::new();
    let mut stdin_used = false;
    for input in inputs {
        if input.as_os_str() == "-" {
            if stdin_used {
                return Err(InputError {
                    place: "-".into(),
                    message: "standard input is given twice".into(),
                    kind: InputErrorKind::Unreadable,
                });
            }
            stdin_used = true;
            let file = spool_stdin().map_err(|e| InputError {
                place: "<stdin>".into(),
                message: format!(
                    "cannot copy standard input to a temporary file: {}",
                    io_message(&e)
                ),
                kind: InputErrorKind::Stream,
            })?;
            out.push(Source::Spooled(file));
            continue;
        }
        let meta = std::fs::metadata(input).map_err(|e| InputError {
            place: input.display().to_string(),
            message: io_message(&e),
            kind: InputErrorKind::Unreadable,
        })?;
        if !meta.is_dir() {
            out.push(Source::File(input.clone()));
            continue;
        }
        let walker = walkdir::WalkDir::new(input)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !is_side_file(e.file_name()));
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    let place = e
                        .path()
                        .map_or_else(|| input.display().to_string(), |p| p.display().to_string());
                    if let Some(ancestor) = e.loop_ancestor() {
                        // Not an error: the loop leads back to a directory being read, whose
                        // files are all read once. Said, and not followed again.
                        report(&InputError {
                            place,
                            message: format!(
                                "symbolic link loop back to {}: not followed again",
                                ancestor.display()
                            ),
                            kind: InputErrorKind::Unreadable,
                        });
                        continue;
                    }
                    let message = match e.io_error() {
                        Some(io) => format!("cannot read: {}", io_message(io)),
                        None => e.to_string(),
                    };
                    let err = InputError { place, message, kind: InputErrorKind::Unreadable };
                    if skip_bad {
                        report(&err);
                        continue;
                    }
                    return Err(err);
                }
            };
            let kind = entry.file_type();
            if kind.is_file() {
                let path = entry.into_path();
                // Records for JSONL and tables (by name, or content: Spark names Parquet part
                // files `.parquet` but some tools write none), else one text document.
                let records = opts
                    .format
                    .or_else(|| Format::by_name(&path))
                    .or_else(|| Format::by_content(&path))
                    .is_some_and(|f| f != Format::Text);
                out.push(if records { Source::File(path) } else { Source::Plain(path) });
            } else if !kind.is_dir() {
                // FIFOs, sockets, devices: reading them could block or never end.
                report(&InputError {
                    place: entry.path().display().to_string(),
                    message: "not a regular file (a FIFO, socket or device)".into(),
                    kind: InputErrorKind::Unreadable,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
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
