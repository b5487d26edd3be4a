//! Opening a source: its file (decompressed by extension, the magic bytes checked), the spool of
//! standard input, and the messages of a stream that breaks.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{io_message, Format, InputError, InputErrorKind, ReadOptions, Source};

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

/// The file of a named source or a spool, from its start, as it is (a columnar file is read
/// at the offsets its footer names).
pub(crate) fn open_file(source: &Source) -> io::Result<File> {
    match source {
        Source::Spooled(file) | Source::Pipe(_, file) => {
            let mut f = file.try_clone()?;
            f.rewind()?;
            Ok(f)
        }
        Source::File(p) | Source::Plain(p) | Source::Partitioned(p, _) => File::open(p),
        Source::Stdin | Source::Text(..) => {
            Err(io::Error::new(io::ErrorKind::Unsupported, "not a file"))
        }
    }
}

/// Opens a file or a spool for reading, decompressing `.gz` (gzip, multi-member) and `.zst`
/// (Zstandard) by extension (standard input's spool has no name, and is read as it is).
pub fn open(source: &Source) -> io::Result<Opened> {
    match source {
        Source::Spooled(file) => decompress(SharedFile { file: file.clone(), pos: 0 }, ""),
        Source::Pipe(path, file) => {
            let ext = extension(path);
            if let Some(format) = compression_by_extension(ext) {
                check_magic(file, format)?;
            }
            decompress(SharedFile { file: file.clone(), pos: 0 }, ext)
        }
        Source::File(path) | Source::Plain(path) | Source::Partitioned(path, _) => {
            let file = File::open(path)?;
            let ext = extension(path);
            if let Some(format) = compression_by_extension(ext) {
                check_magic(&file, format)?;
            }
            decompress(file, ext)
        }
        Source::Stdin | Source::Text(..) => {
            Err(io::Error::new(io::ErrorKind::Unsupported, "not a file"))
        }
    }
}

/// A path's extension, `""` for none.
fn extension(path: &Path) -> &str {
    path.extension().and_then(|e| e.to_str()).unwrap_or("")
}

/// `inner` decompressed as `ext` says (`gz`, `zst`), with its compressed bytes counted.
fn decompress<R: Read + Send + 'static>(inner: R, ext: &str) -> io::Result<Opened> {
    let offset = Arc::new(AtomicU64::new(0));
    let counted = Counting { inner, count: offset.clone() };
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

/// A source opened once, as it is read.
#[allow(missing_debug_implementations)] // a boxed reader has no Debug
pub(crate) enum Reading {
    /// Read front to back: JSON Lines, a text document.
    Stream(Opened),
    /// Read at the offsets its footer names (Parquet, Arrow IPC): a file, or an input that
    /// cannot seek copied to an unnamed temporary file.
    Table(File),
}

/// Opens `source` once and says the format it is read in ([`ReadOptions::format_of`]). A
/// named pipe or standard input can be read once only: their format, when neither the options
/// nor the name say it, comes from their first bytes, and the read goes on from those bytes
/// (a second open would wait for a writer that never comes, or find its first bytes gone). A
/// character or block device is refused: `/dev/zero` and `/dev/urandom` never end.
pub(crate) fn open_input(
    source: &Source,
    opts: &ReadOptions,
) -> Result<(Format, Reading), InputError> {
    let name = source.name();
    let cannot = |e: io::Error| InputError {
        place: name.clone(),
        message: format!("cannot open: {}", io_message(&e)),
        kind: InputErrorKind::Unreadable,
    };
    let whole = |source: &Source| -> Result<(Format, Reading), InputError> {
        let format = opts.format_of(source);
        Ok((
            format,
            if format.is_columnar() {
                Reading::Table(open_file(source).map_err(cannot)?)
            } else {
                Reading::Stream(open(source).map_err(cannot)?)
            },
        ))
    };
    match source {
        Source::File(path) => {
            let meta = std::fs::metadata(path).map_err(cannot)?;
            if let Some(what) = endless(&meta) {
                return Err(device_error(path, what));
            }
            if meta.is_file() {
                return whole(source);
            }
            let file = File::open(path).map_err(cannot)?;
            let known = opts.format.or_else(|| Format::by_name(path));
            open_stream(file, known, opts.fallback, extension(path)).map_err(cannot)
        }
        Source::Stdin => open_stream(io::stdin(), opts.format, opts.fallback, "").map_err(cannot),
        Source::Spooled(_) | Source::Pipe(..) | Source::Plain(_) | Source::Partitioned(..) => {
            whole(source)
        }
        Source::Text(..) => Err(cannot(io::Error::new(io::ErrorKind::Unsupported, "not a file"))),
    }
}

/// Reads a stream that can be read once: its format from `known`, else its first bytes, else
/// `fallback`; a table is copied to an unnamed temporary file (read at offsets), anything else
/// read on from the bytes already taken.
fn open_stream<R: Read + Send + 'static>(
    mut reader: R,
    known: Option<Format>,
    fallback: Format,
    ext: &str,
) -> io::Result<(Format, Reading)> {
    let mut head = Vec::with_capacity(8);
    if known.is_none() {
        (&mut reader).take(8).read_to_end(&mut head)?;
    }
    let format = known.or_else(|| Format::by_head(&head)).unwrap_or(fallback);
    let mut rest = io::Cursor::new(head).chain(reader);
    if format.is_columnar() {
        let mut spool = tempfile::tempfile()?;
        io::copy(&mut rest, &mut spool)?;
        spool.rewind()?;
        return Ok((format, Reading::Table(spool)));
    }
    Ok((format, Reading::Stream(decompress(rest, ext)?)))
}

/// What kind of endless or unopenable file `meta` is, if it is one.
pub(crate) fn endless(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// The refusal of a device named as an input: a mistake in the request, never skipped.
pub(crate) fn device_error(path: &Path, what: &str) -> InputError {
    InputError {
        place: path.display().to_string(),
        message: format!(
            "{what}, not a file: it is not read (a device such as /dev/zero or /dev/urandom \
             never ends); give a file, a named pipe, or - for standard input"
        ),
        kind: InputErrorKind::Request,
    }
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
/// saying so at byte offset 0. An empty file passes (it holds no records). The bytes are read
/// at offset 0 without moving the file's offset.
fn check_magic(file: &File, format: &'static str) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match file.read_at(&mut head[n..], n as u64)? {
            0 => break,
            k => n += k,
        }
    }
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
    spool(io::stdin().lock())
}

/// Copies a stream that can be read once (standard input, a named pipe) to an unnamed
/// temporary file, as [`spool_stdin`] does.
pub fn spool(mut reader: impl Read) -> io::Result<Arc<File>> {
    let mut file = tempfile::tempfile()?;
    io::copy(&mut reader, &mut file)?;
    file.rewind()?;
    Ok(Arc::new(file))
}

/// The message of a read error in the middle of a source.
pub(super) fn stream_error(
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
