//! Outputs that never harm inputs or each other.
//!
//! Before anything is opened, every output path is checked against every input and every other
//! output: the same file (device and inode, through symbolic links) or the same path is refused.
//! Each output is then written to a temporary file beside its target (so the rename is within
//! one file system) and renamed into place only when the whole run has succeeded: a failed or
//! interrupted run leaves the old files as they were. Temporary files are removed on error, on
//! drop, and on SIGINT, SIGTERM and SIGHUP (a handler thread removes them before exiting).
//!
//! A symbolic link is written through: the temporary file is made beside the link's final target
//! and renamed onto it, so the link stays a link. A target that exists and is not a regular file
//! (a device such as `/dev/null`, a FIFO, a socket, or a descriptor named through `/dev/fd` or
//! `/proc/self/fd`, which is what `/dev/stdout` and a shell's `>(...)` are) cannot be replaced
//! without harm: it is opened and written in place, never renamed over.
//!
//! Standard output (`-`) is written directly. When its reader goes away (`| head`), writes to it
//! become no-ops and [`stdout_closed`] turns true; the command then ends quietly with exit 0.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, Once};

use crate::read::io_message;
use crate::CorpusError;

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
    /// A directory of the run's own, with everything in it.
    Dir(PathBuf),
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

/// Held while a run commits its outputs; `true` once they are committed. A termination signal
/// waits for it, so that the exit status says which state the files are in: 128 + the signal
/// with the old state, or (the signal ignored, the run ending normally) 0 with the new one.
static COMMITTED: Mutex<bool> = Mutex::new(false);

/// Runs `commit` (the renames that make a run's outputs and index the current ones) with
/// termination signals deferred until it ends.
pub fn commit_section<T, E>(commit: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    install_handler();
    let mut done = COMMITTED.lock().unwrap_or_else(|p| p.into_inner());
    let result = commit();
    *done = result.is_ok();
    result
}

/// Installs the signal handler that removes temporary files and exits with 128 + the signal.
fn install_handler() {
    HANDLER.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            for signal in signals.forever() {
                let committed = COMMITTED.lock().unwrap_or_else(|p| p.into_inner());
                if *committed {
                    // Everything is written: the run is ending with success.
                    continue;
                }
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
            Cleanup::Dir(dir) => {
                let _ = fs::remove_dir_all(dir);
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

/// Registers a saved index's directory (of `dedup` or of `overlap`), whose temporary files a
/// signal must remove; the caller holds its lock, so they are this run's.
pub fn register_index_dir(dir: &Path) {
    register(Cleanup::Prefixed(
        dir.to_path_buf(),
        &[".docs", ".manifest.json.", neardup::overlap::TEMPORARY_PREFIX],
    ));
}

/// A temporary directory of the run's own (the within-corpus check's index of the corpus):
/// removed with everything in it if a signal ends the run, until the guard is dropped (the
/// caller removes it then).
pub fn temporary_dir_guard(dir: &Path) -> impl Drop {
    struct Guard(Cleanup);
    impl Drop for Guard {
        fn drop(&mut self) {
            unregister(&self.0);
        }
    }
    register(Cleanup::Dir(dir.to_path_buf()));
    Guard(Cleanup::Dir(dir.to_path_buf()))
}

/// One file the run reads, for [`check_conflicts`].
#[derive(Debug, Clone)]
pub struct Input {
    /// What it is, for messages (`input`, `--against`, `--spec`).
    pub what: String,
    /// Its path.
    pub path: PathBuf,
}

/// One file the run writes: the option and the path (`-` for standard output).
#[derive(Debug, Clone)]
pub struct Output {
    /// The option that names it (`--output`), for messages.
    pub option: &'static str,
    /// Its path.
    pub path: PathBuf,
}

/// `-`, or the standard output's own name.
fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-" || path.as_os_str() == "/dev/stdout"
}

fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
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

/// Refuses a directory for an index (`option`, `--save-index`) that is an input directory or
/// lies inside one, naming both: the next run over that input would walk into the index (its
/// files are passed over, but a run that reads its input while it writes the index there is
/// asking for trouble).
pub fn check_index_dir(option: &str, dir: &Path, inputs: &[PathBuf]) -> Result<(), CorpusError> {
    let index = resolved(dir);
    for input in inputs.iter().filter(|p| p.as_os_str() != "-" && p.is_dir()) {
        if index.starts_with(resolved(input)) {
            let place = if index == resolved(input) { "is" } else { "is inside" };
            return Err(CorpusError::Usage(format!(
                "{option} {} {place} the input directory {}: save the index outside the \
                 directories being read",
                dir.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// `path` made absolute with its longest existing ancestor's symbolic links resolved (the rest
/// may not exist yet).
fn resolved(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

/// Refuses outputs that are an input, or another output, before anything is opened.
pub fn check_conflicts(inputs: &[Input], outputs: &[Output]) -> Result<(), CorpusError> {
    let usage = |m: String| Err(CorpusError::Usage(m));
    for (i, out) in outputs.iter().enumerate() {
        let stdout = is_stdout(&out.path);
        for other in &outputs[..i] {
            let other_stdout = is_stdout(&other.path);
            if stdout && other_stdout {
                return usage(format!(
                    "{} and {} both write to standard output; give one of them a file",
                    other.option, out.option
                ));
            }
            // Two outputs into one sink device (`/dev/null`) lose nothing.
            if !stdout
                && !other_stdout
                && same_file(&out.path, &other.path)
                && !is_char_device(&out.path)
            {
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
    File {
        writer: BufWriter<File>,
        tmp: tempfile::TempPath,
        target: PathBuf,
    },
    /// A device, FIFO or descriptor, written where it is.
    InPlace {
        writer: BufWriter<File>,
        target: PathBuf,
    },
}

/// Where an output's bytes go, once its path is resolved.
#[derive(Debug, PartialEq)]
enum Target {
    /// A regular file, existing or not, at this path (symbolic links followed): written to a
    /// temporary file beside it and renamed onto it.
    Replace(PathBuf),
    /// Something that must be opened and written where it is.
    InPlace,
}

/// The most symbolic links followed in one path, as the kernel's own limit (ELOOP).
const MAX_LINKS: usize = 40;

/// Resolves `path` to what its bytes should replace: the final target of a chain of symbolic
/// links (which may not exist yet), or [`Target::InPlace`] for what is not a regular file.
fn resolve_target(path: &Path) -> io::Result<Target> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if is_descriptor_path(&current) {
            return Ok(Target::InPlace);
        }
        let meta = match fs::symlink_metadata(&current) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::Replace(current)),
            Err(e) => return Err(e),
        };
        if meta.file_type().is_symlink() {
            let link = fs::read_link(&current)?;
            current = match current.parent() {
                Some(dir) if link.is_relative() => dir.join(link),
                _ => link,
            };
            continue;
        }
        return Ok(if meta.file_type().is_file() {
            Target::Replace(current)
        } else {
            Target::InPlace
        });
    }
    Err(io::Error::other(format!("more than {MAX_LINKS} symbolic links (a loop?)")))
}

/// True for paths that name an open descriptor (`/dev/fd/N`, `/proc/self/fd/N`, `/dev/stdout`):
/// their "links" point at pipes and terminals that no rename may replace.
fn is_descriptor_path(path: &Path) -> bool {
    let s = path.as_os_str().to_string_lossy();
    s.starts_with("/dev/fd/")
        || s.starts_with("/proc/")
        || matches!(s.as_ref(), "/dev/stdout" | "/dev/stderr" | "/dev/stdin")
}

impl OutputFile {
    /// Opens `path` (`-`: standard output) for the option `option`.
    pub fn create(option: &'static str, path: &Path) -> Result<OutputFile, CorpusError> {
        if is_stdout(path) {
            let writer = BufWriter::with_capacity(1 << 16, io::stdout());
            return Ok(OutputFile { option, sink: Some(Sink::Stdout(writer)) });
        }
        let cannot = |e: io::Error| {
            CorpusError::Runtime(format!("{option} {}: {}", path.display(), io_message(&e)))
        };
        let target = match resolve_target(path).map_err(cannot)? {
            Target::InPlace => {
                // No truncation: a device or FIFO has nothing to cut, and a descriptor's file
                // was opened (and truncated or not) by whoever handed it to us.
                // Appending: a descriptor reopened through /proc is a new open file whose offset
                // is 0, so a shell's `>>` must not be written over from the start.
                let file = fs::OpenOptions::new().append(true).open(path).map_err(cannot)?;
                let writer = BufWriter::with_capacity(1 << 20, file);
                let target = path.to_path_buf();
                return Ok(OutputFile { option, sink: Some(Sink::InPlace { writer, target }) });
            }
            Target::Replace(target) => target,
        };
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| {
                CorpusError::Runtime(format!(
                    "{option} {}: cannot create a file in {}: {}",
                    path.display(),
                    dir.display(),
                    io_message(&e)
                ))
            })?;
        let (file, tmp) = file.into_parts();
        register(Cleanup::File(tmp.to_path_buf()));
        let writer = BufWriter::with_capacity(1 << 20, file);
        Ok(OutputFile { option, sink: Some(Sink::File { writer, tmp, target }) })
    }

    /// True for standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self.sink, Some(Sink::Stdout(_)))
    }

    /// Writes all of `bytes`; an error names the output.
    pub fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), CorpusError> {
        self.write_all(bytes).map_err(|e| self.failure(e))
    }

    fn failure(&self, e: io::Error) -> CorpusError {
        match &self.sink {
            Some(Sink::File { target, .. } | Sink::InPlace { target, .. }) => CorpusError::Runtime(
                format!("{} {}: {}", self.option, target.display(), io_message(&e)),
            ),
            _ => CorpusError::Runtime(format!("writing standard output: {}", io_message(&e))),
        }
    }

    /// Flushes, syncs and renames the file into place (flushes standard output).
    pub fn commit(mut self) -> Result<(), CorpusError> {
        let option = self.option;
        match self.sink.take() {
            None => Ok(()),
            Some(Sink::Stdout(mut w)) => {
                if let Err(e) = w.flush() {
                    if e.kind() == io::ErrorKind::BrokenPipe {
                        mark_stdout_closed();
                    } else {
                        return Err(CorpusError::Runtime(format!(
                            "writing standard output: {}",
                            io_message(&e)
                        )));
                    }
                }
                Ok(())
            }
            Some(Sink::InPlace { writer, target }) => {
                writer.into_inner().map_err(|e| {
                    CorpusError::Runtime(format!(
                        "{option} {}: {}",
                        target.display(),
                        io_message(e.error())
                    ))
                })?;
                Ok(())
            }
            Some(Sink::File { writer, tmp, target }) => {
                let fail = |e: io::Error| {
                    CorpusError::Runtime(format!(
                        "{option} {}: {}",
                        target.display(),
                        io_message(&e)
                    ))
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
            Some(Sink::File { writer, .. } | Sink::InPlace { writer, .. }) => writer.write(buf),
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
            Some(Sink::File { writer, .. } | Sink::InPlace { writer, .. }) => writer.flush(),
        }
    }
}

/// The lock of the index saved in `dir` (made if need be) for `neardup COMMAND`, waiting while
/// another run holds it: the wait is said through `say` first.
pub fn lock_index(
    command: &str,
    dir: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<neardup::IndexLock, CorpusError> {
    if let Some(lock) = neardup::IndexLock::try_acquire(dir).map_err(CorpusError::Dedup)? {
        return Ok(lock);
    }
    say(&format!(
        "neardup {command}: waiting for another run that writes the index in {}",
        dir.display()
    ));
    neardup::IndexLock::acquire(dir).map_err(CorpusError::Dedup)
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

    fn write_and_commit(path: &Path, bytes: &[u8]) {
        let mut o = OutputFile::create("--output", path).expect("create");
        o.write_bytes(bytes).expect("write");
        o.commit().expect("commit");
    }

    #[test]
    fn a_symbolic_link_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("sub/real.jsonl");
        fs::create_dir(dir.path().join("sub")).expect("mkdir");
        fs::write(&real, "old\n").expect("write");
        // A chain of two links, the first relative.
        let link2 = dir.path().join("sub/link2");
        std::os::unix::fs::symlink("real.jsonl", &link2).expect("symlink");
        let link1 = dir.path().join("link1");
        std::os::unix::fs::symlink(&link2, &link1).expect("symlink");
        write_and_commit(&link1, b"new\n");
        assert!(fs::symlink_metadata(&link1).expect("meta").file_type().is_symlink());
        assert!(fs::symlink_metadata(&link2).expect("meta").file_type().is_symlink());
        assert_eq!(fs::read_to_string(&real).expect("read"), "new\n");
        // A dangling link gets its target created.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink("sub/made.jsonl", &dangling).expect("symlink");
        write_and_commit(&dangling, b"made\n");
        assert!(fs::symlink_metadata(&dangling).expect("meta").file_type().is_symlink());
        assert_eq!(fs::read_to_string(dir.path().join("sub/made.jsonl")).expect("read"), "made\n");
        let left = fs::read_dir(dir.path().join("sub")).expect("dir").count();
        assert_eq!(left, 3, "no temporary file left beside the targets");
    }

    #[test]
    fn a_link_loop_is_an_error_naming_the_output() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a");
        std::os::unix::fs::symlink(dir.path().join("b"), &a).expect("symlink");
        std::os::unix::fs::symlink(&a, dir.path().join("b")).expect("symlink");
        let e = OutputFile::create("--output", &a).expect_err("a loop");
        assert!(format!("{e:?}").contains("--output"), "{e:?}");
    }

    #[test]
    fn devices_and_fifos_are_written_in_place() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().expect("tempdir");
        // A link to /dev/null: were it replaced, the link would be; /dev/null is never at risk.
        let null = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &null).expect("symlink");
        write_and_commit(&null, b"gone\n");
        assert!(fs::symlink_metadata(&null).expect("meta").file_type().is_symlink());
        assert!(fs::metadata("/dev/null").expect("meta").file_type().is_char_device());

        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read_to_string(fifo).expect("read the fifo"))
        };
        write_and_commit(&fifo, b"through the pipe\n");
        assert_eq!(reader.join().expect("reader"), "through the pipe\n");
        assert!(fs::symlink_metadata(&fifo).expect("meta").file_type().is_fifo());
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 2, "no temporary file left");
    }

    #[test]
    fn two_outputs_may_share_dev_null_but_not_a_file() {
        let null = Path::new("/dev/null");
        assert!(check_conflicts(&[], &[out("--output", null), out("--dropped", null)]).is_ok());
        let dev_stdout = Path::new("/dev/stdout");
        let dash = Path::new("-");
        assert!(check_conflicts(&[], &[out("--output", dev_stdout), out("--pairs", dash)]).is_err());
    }
}
