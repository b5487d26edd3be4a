//! Opening a source: its file (decompressed by extension, the magic bytes checked), the spool of
//! standard input, and the messages of a stream that breaks.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{io_message, InputError, InputErrorKind, Source};

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
