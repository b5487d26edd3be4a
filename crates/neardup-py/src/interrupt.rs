//! Long calls that Ctrl-C interrupts and that show their progress.
//!
//! Python delivers a signal to the main thread only when it runs Python code: a call that holds
//! the thread in Rust for minutes ignores Ctrl-C until it returns. [`interruptible`] runs the
//! work on a thread of its own (the GIL released) while the calling thread wakes every 50 ms to
//! check for signals and draw the progress line; on `KeyboardInterrupt` it raises the work's
//! [`Stop`] flag, which the work's loops check between documents, waits for it to wind down
//! (milliseconds) and raises the interrupt.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Set when the caller was interrupted; the work checks it between documents. It also counts
/// the documents done, for the progress line.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    stopped: Arc<AtomicBool>,
    done: AtomicU64,
}

/// The work stopped because the caller was interrupted.
#[derive(Debug)]
pub(crate) struct Stopped;

impl Stop {
    /// True once the caller was interrupted.
    pub(crate) fn is_set(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// `Err(Stopped)` once the caller was interrupted.
    pub(crate) fn check(&self) -> Result<(), Stopped> {
        if self.is_set() {
            Err(Stopped)
        } else {
            Ok(())
        }
    }

    /// A stop that raises `flag`: the one a long-lived library object keeps (an `Index`'s
    /// passage index, shared by the threads that use it).
    pub(crate) fn on(flag: Arc<AtomicBool>) -> Stop {
        Stop { stopped: flag, done: AtomicU64::new(0) }
    }

    /// The flag itself, for library calls that take one (`PassageIndex::set_stop`).
    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        self.stopped.clone()
    }

    /// Counts `n` more documents done.
    pub(crate) fn advance(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }
}

impl From<Stopped> for PyErr {
    fn from(_: Stopped) -> PyErr {
        // Replaced by the KeyboardInterrupt itself: only seen if the work stopped on its own.
        PyRuntimeError::new_err("interrupted")
    }
}

/// Whether to draw a progress line: `Some(true|false)` as the caller said, `None` when
/// standard error is a terminal.
pub(crate) fn wants_progress(py: Python<'_>, progress: Option<bool>) -> bool {
    progress.unwrap_or_else(|| {
        py.import("sys")
            .and_then(|sys| sys.getattr("stderr"))
            .and_then(|err| err.call_method0("isatty"))
            .and_then(|tty| tty.extract::<bool>())
            .unwrap_or(false)
    })
}

/// Runs `work` with the GIL released on a thread of its own, checking for signals every 50 ms
/// on the calling thread: Ctrl-C stops the work (through [`Stop`]) and raises
/// `KeyboardInterrupt` within a fraction of a second. With `progress`, a line on Python's
/// `sys.stderr` says `what`: documents done of `total`, and the rate, after the first second.
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    progress: Option<(&str, u64)>,
    work: impl FnOnce(&Stop) -> PyResult<T> + Send,
) -> PyResult<T> {
    interruptible_with(py, progress, Stop::default(), work)
}

/// [`interruptible`] with the work's [`Stop`] given: Ctrl-C raises its flag (`Stop::on`: one a
/// library object keeps), which stays raised for the caller to lower.
pub(crate) fn interruptible_with<T: Send>(
    py: Python<'_>,
    progress: Option<(&str, u64)>,
    stop: Stop,
    work: impl FnOnce(&Stop) -> PyResult<T> + Send,
) -> PyResult<T> {
    let started = Instant::now();
    let mut shown = false;
    // Set (and notified) when the work ends, so the caller wakes at once, not at its next tick.
    let finished = (Mutex::new(false), Condvar::new());
    let outcome = std::thread::scope(|scope| {
        let (stop, done) = (&stop, &finished);
        let handle = scope.spawn(move || {
            // A panic becomes the RuntimeError `guard` makes of it, on this thread.
            let result = crate::guard(|| work(stop));
            *done.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
            done.1.notify_all();
            result
        });
        loop {
            let ended = py.detach(|| {
                let guard = done.0.lock().unwrap_or_else(|p| p.into_inner());
                let (guard, _) = done
                    .1
                    .wait_timeout_while(guard, Duration::from_millis(50), |ended| !*ended)
                    .unwrap_or_else(|p| p.into_inner());
                *guard
            });
            if ended {
                break;
            }
            if let Err(interrupt) = py.check_signals() {
                stop.stopped.store(true, Ordering::Relaxed);
                let _ = py.detach(|| handle.join());
                return Err(interrupt);
            }
            if let Some((what, total)) = progress {
                if started.elapsed() > Duration::from_secs(1) {
                    shown = true;
                    draw(py, what, stop.done.load(Ordering::Relaxed), total, started);
                }
            }
        }
        match py.detach(|| handle.join()) {
            Ok(result) => result,
            Err(_) => Err(PyRuntimeError::new_err("internal error in neardup (please report it)")),
        }
    });
    if shown {
        if let Some((what, total)) = progress {
            draw(py, what, total.min(stop.done.load(Ordering::Relaxed)), total, started);
            let _ = write_stderr(py, "\n");
        }
    }
    outcome
}

/// The progress line, drawn over itself.
fn draw(py: Python<'_>, what: &str, done: u64, total: u64, started: Instant) {
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let line = format!(
        "\rneardup: {what} {done} of {total} documents ({:.0}%, {:.0} docs/s)",
        if total == 0 { 100.0 } else { 100.0 * done as f64 / total as f64 },
        done as f64 / secs
    );
    let _ = write_stderr(py, &line);
}

fn write_stderr(py: Python<'_>, text: &str) -> PyResult<()> {
    let err = py.import("sys")?.getattr("stderr")?;
    err.call_method1("write", (text,))?;
    err.call_method0("flush")?;
    Ok(())
}
