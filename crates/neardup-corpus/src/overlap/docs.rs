//! The documents of the passage job, read whole: each with its id as text (the one id rule) and
//! as written, its text, and where it was read (for `-o`, which reads the sources again).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;

use neardup::count_of;
use neardup::overlap::WrittenIds;
use neardup_web::thousands;
use serde_json::value::RawValue;

use super::OverlapObserver;
use crate::dedup::Place;
use crate::read::{
    encoding_name, expand_inputs, read_source, Body, Format, InputError, InputErrorKind,
    ReadOptions, Source, SourceDigest,
};
use crate::CorpusError;

/// A document read for the check: its id (as text: the one id rule) and as written, its text,
/// and where it was read (source number, 1-based JSONL line or 0 for a whole file); a token
/// list is marked, as its text is the tokens joined.
pub(super) struct Doc {
    pub id: String,
    pub written: Box<RawValue>,
    pub text: String,
    pub place: Place,
    pub tokens: bool,
}

/// The documents of some sources, where each was read, and what the reading noted.
#[derive(Default)]
pub(super) struct Read {
    pub docs: Vec<Doc>,
    /// Each source's digest, to check that a second read is of the same bytes.
    pub digests: Vec<Option<SourceDigest>>,
    /// Lines for the summary: files read in another encoding than UTF-8, bytes replaced.
    pub notes: Vec<String>,
}

impl Read {
    /// Where each document was read.
    pub fn places(&self) -> Vec<Place> {
        self.docs.iter().map(|d| d.place).collect()
    }
}

/// The sources of the given paths: directories walked, `-` spooled; files passed over are said
/// (a saved passage index of `indexes`, named as one, without its note).
pub(super) fn sources(
    paths: &[PathBuf],
    opts: &ReadOptions,
    observer: &dyn OverlapObserver,
    indexes: &[PathBuf],
) -> Result<Vec<Source>, CorpusError> {
    expand_inputs(paths, opts, |e| {
        // A saved passage index named as one (`--against LIB`) is known to be one: its
        // directory is still read for documents, but without a note that its files are not.
        if e.is_notice() && indexes.iter().any(|p| p.display().to_string() == e.place) {
            return;
        }
        observer.say(&format!("neardup: {}: {e}", if e.is_notice() { "note" } else { "skipped" }))
    })
}

/// The reading options of one source: standard input is JSON Lines unless the format is given.
fn source_opts(source: &Source, input: &ReadOptions) -> ReadOptions {
    let mut opts = input.clone();
    if matches!(source, Source::Spooled(_) | Source::Stdin) {
        opts.format = Some(input.format.unwrap_or(Format::Jsonl));
    }
    opts
}

/// Reads every document of `sources`: a file given by name is JSON Lines when its name says so
/// (or the format is given), else one plain-text document; files found in directories are plain
/// text. Text that is not UTF-8 is decoded as detected or given, and said. Bad records stop the
/// run unless `skip_bad`. `bytes` counts the text read.
pub(super) fn read_docs(
    sources: &[Source],
    input: &ReadOptions,
    written: &mut WrittenIds,
    bytes: &mut u64,
    observer: &dyn OverlapObserver,
) -> Result<Read, CorpusError> {
    let mut docs = Vec::new();
    let mut read = read_each(sources, input, written, bytes, observer, &mut |d| {
        docs.push(d);
        Ok(())
    })?;
    read.docs = docs;
    Ok(read)
}

/// [`read_docs`], each document given to `sink` as it is read instead of kept (a library
/// indexed as it is read); an error of `sink` stops the reading and is returned.
pub(super) fn read_each(
    sources: &[Source],
    input: &ReadOptions,
    written: &mut WrittenIds,
    bytes: &mut u64,
    observer: &dyn OverlapObserver,
    sink: &mut dyn FnMut(Doc) -> Result<(), CorpusError>,
) -> Result<Read, CorpusError> {
    let mut read = Read::default();
    let mut count = 0usize;
    let mut failed: Option<CorpusError> = None;
    let mut fatal: Option<InputError> = None;
    let mut replaced = 0u64;
    for (si, source) in sources.iter().enumerate() {
        let opts = source_opts(source, input);
        // Per source: the records read in each encoding other than UTF-8.
        let mut encodings: Vec<(&'static str, u64)> = Vec::new();
        let (flow, digest) = read_source(source, &opts, &mut |item| match item {
            Ok(record) => {
                let tokens = matches!(record.body, Body::Tokens(_));
                let text = record.body.into_display_text();
                *bytes += text.len() as u64;
                replaced += record.replaced as u64;
                if let Some(e) = record.encoding.map(encoding_name) {
                    match encodings.iter_mut().find(|(name, _)| *name == e) {
                        Some((_, n)) => *n += 1,
                        None => encodings.push((e, 1)),
                    }
                }
                // The reader lets only strings and numbers through as ids.
                let id = match written.read(record.id.get()) {
                    Ok(id) => id,
                    Err(e) => {
                        fatal = Some(InputError {
                            place: format!("{}:{}", source.name(), record.line),
                            message: e.to_string(),
                            kind: InputErrorKind::Record,
                        });
                        return ControlFlow::Break(());
                    }
                };
                let place = Place { source: si as u32, line: record.line };
                if let Err(e) = sink(Doc { id, written: record.id, text, place, tokens }) {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
                count += 1;
                if count.is_multiple_of(1024) {
                    observer.progress(&format!(
                        "read {count} documents, {:.1} MB",
                        *bytes as f64 / 1e6
                    ));
                }
                ControlFlow::Continue(())
            }
            Err(e) if input.skip_bad && e.skippable() => {
                observer.say(&format!("neardup: skipped: {e}"));
                ControlFlow::Continue(())
            }
            Err(e) => {
                fatal = Some(e);
                ControlFlow::Break(())
            }
        });
        read.digests.push(Some(digest));
        if let Some(e) = failed {
            return Err(e);
        }
        if let Some(e) = fatal {
            let hint = if e.skippable() { "; use --skip-bad to skip bad records" } else { "" };
            return Err(CorpusError::Runtime(format!("{e}\n(no output was written{hint})")));
        }
        for (encoding, n) in encodings {
            read.notes.push(match opts.format_of(source) {
                Format::Text => format!("{} read as {encoding}", source.name()),
                _ => format!(
                    "{}: {} read as {encoding}",
                    source.name(),
                    count_of(n, "record", "records")
                ),
            });
        }
        if flow.is_break() {
            break;
        }
    }
    if replaced > 0 {
        read.notes.push(format!(
            "{} invalid UTF-8 {} replaced with U+FFFD (--lossy): the text there is lost to the \
             check",
            thousands(replaced),
            if replaced == 1 { "sequence" } else { "sequences" }
        ));
    }
    Ok(read)
}

/// Refuses two documents of one id among `docs` (read from `sources`), naming both places.
pub(super) fn refuse_repeated_ids(
    docs: &[Doc],
    sources: &[Source],
    what: &str,
) -> Result<(), CorpusError> {
    let mut seen: HashMap<&str, Place> = HashMap::new();
    for d in docs {
        if let Some(first) = seen.insert(d.id.as_str(), d.place) {
            return Err(repeated_id(sources, what, &d.written, first, d.place));
        }
    }
    Ok(())
}

/// The error of an id (as written) given to the documents at `first` and `second`.
pub(super) fn repeated_id(
    sources: &[Source],
    what: &str,
    written: &RawValue,
    first: Place,
    second: Place,
) -> CorpusError {
    let place = |p: Place| match p.line {
        0 => sources[p.source as usize].name(),
        n => format!("{}:{n}", sources[p.source as usize].name()),
    };
    CorpusError::Runtime(format!(
        "{what}: id {} is given to two documents, {} and {}: each needs its own id \
         (--id-field chooses the field; 7 and \"7\" are one id)",
        written.get(),
        place(first),
        place(second)
    ))
}
