//! Outputs that never harm inputs or each other.
//!
//! Before anything is opened, every output path is checked against every input and every other
//! output: the same file (device and inode, through symbolic links) or the same path is refused.
//! Each output is then written to a temporary file beside its target (so the rename is within
//! one file system) and renamed into place only when the whole run has succeeded: a failed or
//! interrupted run leaves the old files as they were. Temporary files are removed on error, on
//! drop, and on SIGINT, SIGTERM and SIGHUP (a handler thread removes them before exiting).
//!
//! Standard output (`-`) is written directly. When its reader goes away (`| head`), writes to it
//! become no-ops and [`stdout_closed`] turns true; the command then ends quietly with exit 0.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, Once};

use anyhow::anyhow;

use crate::input::io_message;
use crate::Failure;

/// Set when a write to standard output failed because its reader went away.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// True once standard output's reader has gone away.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Records that standard output's reader went away.
pub fn mark_stdout_closed() {
    STDOUT_CLOSED.store(true, Ordering::Relaxed);
}

/// Files to remove if a signal ends the run: temporary outputs, and temporary files of a saved
/// index (by directory and name prefix).
static CLEANUP: Mutex<Vec<Cleanup>> = Mutex::new(Vec::new());
static HANDLER: Once = Once::new();
/// The process's umask, read once at start (temporary files are created 0600; an output gets
/// the mode a plain create would have given it).
static UMASK: AtomicU32 = AtomicU32::new(0o022);

#[derive(Debug, Clone, PartialEq)]
enum Cleanup {
    File(PathBuf),
    /// Files in a directory whose names start with one of the prefixes and end with `.tmp`.
    Prefixed(PathBuf, &'static [&'static str]),
}

/// Reads the umask (call once, before threads start: reading it means setting it), and lets a
/// write past the file size limit (RLIMIT_FSIZE) fail with an error that the command reports,
/// instead of killing the process with SIGXFSZ (and leaving its temporary files behind).
pub fn init() {
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    UMASK.store(old.bits(), Ordering::Relaxed);
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGXFSZ,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
}

/// Installs the signal handler that removes temporary files and exits with 128 + the signal.
fn install_handler() {
    HANDLER.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                remove_all();
                std::process::exit(128 + signal);
            }
        });
    });
}

fn remove_all() {
    let list = CLEANUP.lock().map(|l| l.clone()).unwrap_or_default();
    for entry in list {
        match entry {
            Cleanup::File(path) => {
                let _ = fs::remove_file(path);
            }
            Cleanup::Prefixed(dir, prefixes) => {
                let Ok(entries) = fs::read_dir(&dir) else { continue };
                for e in entries.flatten() {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    if name.ends_with(".tmp") && prefixes.iter().any(|p| name.starts_with(p)) {
                        let _ = fs::remove_file(e.path());
                    }
                }
            }
        }
    }
}

fn register(entry: Cleanup) {
    install_handler();
    if let Ok(mut list) = CLEANUP.lock() {
        list.push(entry);
    }
}

fn unregister(entry: &Cleanup) {
    if let Ok(mut list) = CLEANUP.lock() {
        list.retain(|e| e != entry);
    }
}

/// Registers a saved index's directory, whose temporary files a signal must remove.
pub fn register_index_dir(dir: &Path) {
    register(Cleanup::Prefixed(dir.to_path_buf(), &[".docs.bin.", ".manifest.json."]));
}

/// One file the run reads, for [`check_conflicts`].
#[derive(Debug, Clone)]
pub struct Input {
    /// What it is, for messages (`input`, `--against`, `--spec`).
    pub what: String,
    pub path: PathBuf,
}

/// One file the run writes: the option and the path (`-` for standard output).
#[derive(Debug, Clone)]
pub struct Output {
    pub option: &'static str,
    pub path: PathBuf,
}

/// The identity of an existing file: device and inode, through symbolic links.
fn identity(path: &Path) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// An absolute form of `path` with its directory resolved (the file itself may not exist).
fn lexical(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => {
            fs::canonicalize(parent).map(|p| p.join(name)).unwrap_or(absolute)
        }
        _ => absolute,
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (identity(a), identity(b)) {
        (Some(x), Some(y)) if x == y => return true,
        _ => {}
    }
    lexical(a) == lexical(b)
}

/// Refuses outputs that are an input, or another output, before anything is opened.
pub fn check_conflicts(inputs: &[Input], outputs: &[Output]) -> Result<(), Failure> {
    let usage = |m: String| Err(Failure::Usage(anyhow!(m)));
    for (i, out) in outputs.iter().enumerate() {
        let stdout = out.path.as_os_str() == "-";
        for other in &outputs[..i] {
            let other_stdout = other.path.as_os_str() == "-";
            if stdout && other_stdout {
                return usage(format!(
                    "{} and {} both write to standard output; give one of them a file",
                    other.option, out.option
                ));
            }
            if !stdout && !other_stdout && same_file(&out.path, &other.path) {
                return usage(format!(
                    "{} and {} name the same file {}; each output needs its own file",
                    other.option,
                    out.option,
                    out.path.display()
                ));
            }
        }
        if stdout {
            continue;
        }
        if out.path.is_dir() {
            return usage(format!("{} {}: is a directory", out.option, out.path.display()));
        }
        for input in inputs {
            if same_file(&out.path, &input.path) {
                return usage(format!(
                    "{} {} is the {} {}: refusing to overwrite what is being read",
                    out.option,
                    out.path.display(),
                    input.what,
                    input.path.display()
                ));
            }
        }
    }
    Ok(())
}

/// An output being written: standard output, or a temporary file renamed into place by
/// [`OutputFile::commit`] (and removed if dropped without it).
#[derive(Debug)]
pub struct OutputFile {
    option: &'static str,
    /// `None` only after [`OutputFile::commit`] took it.
    sink: Option<Sink>,
}

#[derive(Debug)]
enum Sink {
    Stdout(BufWriter<io::Stdout>),
    File { writer: BufWriter<File>, tmp: tempfile::TempPath, target: PathBuf },
}

impl OutputFile {
    /// Opens `path` (`-`: standard output) for the option `option`.
    pub fn create(option: &'static str, path: &Path) -> Result<OutputFile, Failure> {
        if path.as_os_str() == "-" {
            let writer = BufWriter::with_capacity(1 << 16, io::stdout());
            return Ok(OutputFile { option, sink: Some(Sink::Stdout(writer)) });
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| {
                Failure::Runtime(anyhow!(
                    "{option} {}: cannot create a file in {}: {}",
                    path.display(),
                    dir.display(),
                    io_message(&e)
                ))
            })?;
        let (file, tmp) = file.into_parts();
        register(Cleanup::File(tmp.to_path_buf()));
        let writer = BufWriter::with_capacity(1 << 20, file);
        Ok(OutputFile {
            option,
            sink: Some(Sink::File { writer, tmp, target: path.to_path_buf() }),
        })
    }

    /// True for standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self.sink, Some(Sink::Stdout(_)))
    }

    /// Writes all of `bytes`; an error names the output.
    pub fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.write_all(bytes).map_err(|e| self.failure(e))
    }

    fn failure(&self, e: io::Error) -> Failure {
        match &self.sink {
            Some(Sink::File { target, .. }) => Failure::Runtime(anyhow!(
                "{} {}: {}",
                self.option,
                target.display(),
                io_message(&e)
            )),
            _ => Failure::Runtime(anyhow!("writing standard output: {}", io_message(&e))),
        }
    }

    /// Flushes, syncs and renames the file into place (flushes standard output).
    pub fn commit(mut self) -> Result<(), Failure> {
        let option = self.option;
        match self.sink.take() {
            None => Ok(()),
            Some(Sink::Stdout(mut w)) => {
                if let Err(e) = w.flush() {
                    if e.kind() == io::ErrorKind::BrokenPipe {
                        mark_stdout_closed();
                    } else {
                        return Err(Failure::Runtime(anyhow!(
                            "writing standard output: {}",
                            io_message(&e)
                        )));
                    }
                }
                Ok(())
            }
            Some(Sink::File { writer, tmp, target }) => {
                let fail = |e: io::Error| {
                    Failure::Runtime(anyhow!("{option} {}: {}", target.display(), io_message(&e)))
                };
                let file = writer.into_inner().map_err(|e| fail(e.into_error()))?;
                let mode = 0o666 & !UMASK.load(Ordering::Relaxed);
                file.set_permissions(fs::Permissions::from_mode(mode)).map_err(fail)?;
                file.sync_all().map_err(fail)?;
                drop(file);
                let entry = Cleanup::File(tmp.to_path_buf());
                tmp.persist(&target).map_err(|e| fail(e.error))?;
                unregister(&entry);
                Ok(())
            }
        }
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        // The temporary file itself is removed by `TempPath`'s drop.
        if let Some(Sink::File { tmp, .. }) = &self.sink {
            unregister(&Cleanup::File(tmp.to_path_buf()));
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            None => Ok(buf.len()),
            Some(Sink::Stdout(w)) => {
                if stdout_closed() {
                    return Ok(buf.len());
                }
                match w.write(buf) {
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                        mark_stdout_closed();
                        Ok(buf.len())
                    }
                    other => other,
                }
            }
            Some(Sink::File { writer, .. }) => writer.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            None => Ok(()),
            Some(Sink::Stdout(w)) => match w.flush() {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                    mark_stdout_closed();
                    Ok(())
                }
                other => other,
            },
            Some(Sink::File { writer, .. }) => writer.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(option: &'static str, path: &Path) -> Output {
        Output { option, path: path.to_path_buf() }
    }

    #[test]
    fn conflicts_by_path_inode_and_stdout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let input = dir.path().join("in.jsonl");
        fs::write(&input, "{}\n").expect("write");
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&input, &link).expect("symlink");
        let inputs = [Input { what: "input".into(), path: input.clone() }];
        assert!(check_conflicts(&inputs, &[out("--output", &input)]).is_err());
        assert!(check_conflicts(&inputs, &[out("--output", &link)]).is_err());
        let dotted = dir.path().join(".").join("in.jsonl");
        assert!(check_conflicts(&inputs, &[out("--output", &dotted)]).is_err());
        let a = dir.path().join("a.jsonl");
        assert!(check_conflicts(&inputs, &[out("--output", &a), out("--dropped", &a)]).is_err());
        let dash = Path::new("-");
        assert!(check_conflicts(&inputs, &[out("--output", dash), out("--pairs", dash)]).is_err());
        let b = dir.path().join("b.jsonl");
        assert!(check_conflicts(&inputs, &[out("--output", &a), out("--dropped", &b)]).is_ok());
    }

    #[test]
    fn a_dropped_output_leaves_the_target_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("kept.jsonl");
        fs::write(&target, "old\n").expect("write");
        {
            let mut o = OutputFile::create("--output", &target).expect("create");
            o.write_bytes(b"new\n").expect("write");
        }
        assert_eq!(fs::read_to_string(&target).expect("read"), "old\n");
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 1, "no temporary file left");
        let mut o = OutputFile::create("--output", &target).expect("create");
        o.write_bytes(b"new\n").expect("write");
        o.commit().expect("commit");
        assert_eq!(fs::read_to_string(&target).expect("read"), "new\n");
    }
}
