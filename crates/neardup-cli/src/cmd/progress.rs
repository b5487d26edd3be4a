//! The progress line of the long commands (`dedup`, `overlap`): on stderr, only on a terminal,
//! without --quiet, and only once a run has taken a second.

use std::io::{self, IsTerminal};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress line on stderr, shown only on a terminal, without --quiet, after one second.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: std::cell::Cell<bool>,
}

impl Progress {
    pub(crate) fn new(quiet: bool) -> Progress {
        let bar = (!quiet && io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        Progress { bar, started: Instant::now(), shown: std::cell::Cell::new(false) }
    }

    pub(crate) fn documents(&self, docs: u64, bytes: u64) {
        let Some(bar) = &self.bar else { return };
        let elapsed = self.started.elapsed();
        if !self.shown.get() && elapsed > Duration::from_secs(1) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
            self.shown.set(true);
        }
        let secs = elapsed.as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "sketched {docs} documents, {:.1} MB ({:.0} docs/s, {:.1} MB/s)",
            bytes as f64 / 1e6,
            docs as f64 / secs,
            bytes as f64 / 1e6 / secs
        ));
    }

    /// Shows `message` (after the first second, as [`Progress::documents`]).
    pub(crate) fn message(&self, message: &str) {
        let Some(bar) = &self.bar else { return };
        if !self.shown.get() && self.started.elapsed() > Duration::from_secs(1) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
            self.shown.set(true);
        }
        bar.set_message(message.to_string());
    }

    pub(crate) fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) if self.shown.get() => bar.println(line),
            _ => eprintln!("{line}"),
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
