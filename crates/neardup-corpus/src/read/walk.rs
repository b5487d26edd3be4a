//! The paths a user gave, expanded: directories walked, standard input and named pipes
//! spooled, devices refused.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::open::{device_error, endless, spool, spool_stdin};
use super::{io_message, Format, InputError, InputErrorKind, ReadOptions, Source};
use crate::CorpusError;

/// Expands the paths a user gave: files as given, directories walked in path order (following
/// symbolic links to files and directories, with loops detected), `-` and named pipes spooled
/// (read once, into an unnamed temporary file). In a directory, a file whose name says JSON
/// Lines (or every file, under `--format jsonl`) is read as JSON Lines, any other as one text
/// document; what Spark and Hadoop write beside their data is passed over: names starting with
/// `_` (`_SUCCESS`, `_metadata`) or `.` (hidden, the `.crc` checksums), and `.crc` files; so
/// are the files of a saved neardup index ([`neardup::saved_index_files`]), said once per
/// directory. `report` receives each entry that cannot be read (by its own path) when
/// `opts.skip_bad` is set, and every notice ([`InputErrorKind::Notice`]); without
/// `skip_bad` the first entry that cannot be read is the error. A given path that does not
/// exist, or is a device, is [`CorpusError::Usage`] (a mistake in the request); any other
/// failure is [`CorpusError::Input`].
pub fn expand_inputs(
    inputs: &[PathBuf],
    opts: &ReadOptions,
    report: impl FnMut(&InputError),
) -> Result<Vec<Source>, CorpusError> {
    expand(inputs, opts, report).map_err(|e| {
        let missing = inputs.iter().any(|p| p.display().to_string() == e.place)
            && !Path::new(&e.place).exists();
        if missing || e.kind == InputErrorKind::Request {
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
        if meta.is_dir() {
            walk(input, opts, &mut out, &mut report)?;
        } else if let Some(what) = endless(&meta) {
            return Err(device_error(input, what));
        } else if meta.is_file() {
            out.push(Source::File(input.clone()));
        } else {
            out.push(Source::Pipe(input.clone(), spool_pipe(input)?));
        }
    }
    Ok(out)
}

/// A named pipe read once into an unnamed temporary file: its format is then read from its
/// first bytes, and `dedup` reads it twice, without opening the pipe again (a second open waited
/// for a writer that never came, and a sniff of its first bytes took them from the read).
fn spool_pipe(path: &Path) -> Result<std::sync::Arc<std::fs::File>, InputError> {
    let fail = |e: std::io::Error| InputError {
        place: path.display().to_string(),
        message: format!("cannot copy the pipe to a temporary file: {}", io_message(&e)),
        kind: InputErrorKind::Stream,
    };
    spool(std::fs::File::open(path).map_err(fail)?).map_err(fail)
}

/// Walks the directory `input`, pushing its files as sources.
fn walk(
    input: &Path,
    opts: &ReadOptions,
    out: &mut Vec<Source>,
    report: &mut impl FnMut(&InputError),
) -> Result<(), InputError> {
    // The names of saved-index files, by directory (each directory is looked at when the walk
    // enters it, before its files).
    let mut index_files: HashMap<PathBuf, Vec<OsString>> = HashMap::new();
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
                        kind: InputErrorKind::Notice,
                    });
                    continue;
                }
                let message = match e.io_error() {
                    Some(io) => format!("cannot read: {}", io_message(io)),
                    None => e.to_string(),
                };
                let err = InputError { place, message, kind: InputErrorKind::Unreadable };
                if opts.skip_bad {
                    report(&err);
                    continue;
                }
                return Err(err);
            }
        };
        let kind = entry.file_type();
        if kind.is_dir() {
            let files = neardup::saved_index_files(entry.path());
            if !files.is_empty() {
                report(&InputError {
                    place: entry.path().display().to_string(),
                    message: "holds a saved neardup index; its files are not read as documents"
                        .into(),
                    kind: InputErrorKind::Notice,
                });
                index_files.insert(entry.path().to_path_buf(), files);
            }
        } else if kind.is_file() {
            let in_index = entry.path().parent().and_then(|dir| index_files.get(dir));
            if in_index.is_some_and(|names| names.iter().any(|n| n == entry.file_name())) {
                continue;
            }
            let path = entry.into_path();
            // Records for JSONL and tables (by name, or content: Spark names Parquet part
            // files `.parquet` but some tools write none), else one text document.
            let records = opts
                .format
                .or_else(|| Format::by_name(&path))
                .or_else(|| Format::by_content(&path))
                .is_some_and(|f| f != Format::Text);
            let partition = partition_of(input, &path);
            out.push(match (records, partition.is_empty()) {
                (false, _) => Source::Plain(path),
                (true, true) => Source::File(path),
                (true, false) => Source::Partitioned(path, partition.into()),
            });
        } else {
            // FIFOs, sockets, devices: reading them could block or never end.
            report(&InputError {
                place: entry.path().display().to_string(),
                message: "not a regular file (a FIFO, socket or device)".into(),
                kind: InputErrorKind::Unreadable,
            });
        }
    }
    Ok(())
}

/// The `key=value` directories between `root` and the file `path` (Hive's partitioning, as
/// Spark writes `lang=en/part-0.parquet`), their names and values unescaped as Spark escapes
/// them (`%2F` for `/`); `__HIVE_DEFAULT_PARTITION__` is null. A key given twice keeps its
/// deepest value.
fn partition_of(root: &Path, path: &Path) -> Vec<(String, Option<String>)> {
    let Some(dirs) = path.parent().and_then(|dir| dir.strip_prefix(root).ok()) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    for part in dirs.components() {
        let std::path::Component::Normal(part) = part else { continue };
        let part = part.to_string_lossy();
        let Some((key, value)) = part.split_once('=') else { continue };
        if key.is_empty() {
            continue;
        }
        let key = unescape(key);
        let value = (value != "__HIVE_DEFAULT_PARTITION__").then(|| unescape(value));
        out.retain(|(k, _)| *k != key);
        out.push((key, value));
    }
    out
}

/// `%XX` escapes decoded (a malformed one is kept as written).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_directories_below_the_root_are_columns() {
        let root = Path::new("/data/year=2024");
        let got =
            partition_of(root, Path::new("/data/year=2024/lang=en/x/src=a%2Fb/part-0.parquet"));
        let want = [("lang", Some("en")), ("src", Some("a/b"))];
        let want: Vec<(String, Option<String>)> =
            want.iter().map(|(k, v)| (k.to_string(), v.map(str::to_string))).collect();
        assert_eq!(got, want, "year=2024 is the root's own name, not a partition");
        let null =
            partition_of(root, Path::new("/data/year=2024/lang=__HIVE_DEFAULT_PARTITION__/p"));
        assert_eq!(null, [("lang".to_string(), None)]);
        assert!(partition_of(root, Path::new("/data/year=2024/p.parquet")).is_empty());
        assert_eq!(unescape("100%"), "100%");
    }
}
