//! The two-pass dedup of a corpus on disk.
//!
//! The first pass ([`sketch_sources`]) streams the records: a reader thread parses them while the
//! rayon pool sketches each batch, and only the sketches (plus id, place and length) stay in
//! memory, with a digest of every source's bytes. The library ([`neardup::Dedup::run`]) finds the
//! clusters. The second pass ([`copy_records`]) reads the input again, checks that it is the same
//! input (the same bytes, by digest), and hands each kept or dropped record on byte for byte, so
//! memory follows the number of documents, not the size of the text. [`Lines`] writes the
//! clusters, pairs and assignments as JSON Lines with the ids as the input wrote them.

use std::fs;
use std::io::{self, BufRead, Read};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use neardup::{Dedup, DedupOutcome, RepeatedIds, Scratch};
use rayon::prelude::*;
use serde_json::Value;

use crate::read::{
    io_message, open, read_source, Digester, Format, InputError, InputErrorKind, ReadOptions,
    Record, Source, SourceDigest,
};
use crate::write::{stdout_closed, OutputFile};
use crate::CorpusError;

mod job;

pub use job::{DedupJob, DedupObserver, DedupRun};

/// Where a document came from, for the second pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Its source's index in the list read.
    pub source: u32,
    /// Its 1-based JSONL line, or 0 for a whole-file document.
    pub line: u64,
}

/// Every document's id, as the JSON text its input wrote, in one buffer (one allocation for a
/// million ids instead of a million).
#[derive(Debug, Default)]
pub struct Ids {
    text: String,
    ends: Vec<usize>,
}

impl Ids {
    /// Appends an id.
    pub fn push(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len());
    }

    /// The id at position `i`.
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// How many ids there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Every id, owned.
    pub fn to_vec(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.get(i).to_string()).collect()
    }
}

/// What the first pass read, besides the sketches it pushed into the [`Dedup`].
#[derive(Debug, Default)]
pub struct Sketched {
    /// Where each new document came from, in input order.
    pub places: Vec<Place>,
    /// Each source's digest, `None` for a source not read to its end.
    pub digests: Vec<Option<SourceDigest>>,
    /// The ids given to more than one record (the library's rule: `"7"` and `7` are one id).
    pub repeated_ids: RepeatedIds,
    /// Invalid UTF-8 sequences replaced (under [`ReadOptions::lossy`]).
    pub replaced: u64,
    /// The bytes of text read.
    pub bytes: u64,
    /// Bad records skipped (under [`ReadOptions::skip_bad`]).
    pub skipped: u64,
}

/// Hears of the first pass as it goes: skipped records and progress. Both do nothing by default.
pub trait Observer {
    /// A bad record skipped under [`ReadOptions::skip_bad`].
    fn skipped(&mut self, _error: &InputError) {}
    /// Documents and bytes sketched so far (once per batch).
    fn progress(&mut self, _documents: u64, _bytes: u64) {}
}

/// An observer that hears nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Observer for Silent {}

/// Records per batch sent from the reader to the sketching pool.
const BATCH_DOCS: usize = 2048;

enum Item {
    Records(Vec<Record>),
    Bad(InputError),
    /// A source read to its end, with its digest.
    End(SourceDigest),
}

/// The first pass: reads every source (as JSONL or plain text, as `opts` says), sketches each
/// record on the rayon pool and pushes it into `dedup`, and its id into `ids`, in input order.
///
/// A bad record that `opts.skip_bad` allows is told to `observer` and counted; any other stops
/// the pass with [`CorpusError::Input`].
pub fn sketch_sources(
    dedup: &mut Dedup<'_>,
    sources: &[Source],
    opts: &ReadOptions,
    ids: &mut Ids,
    observer: &mut (impl Observer + ?Sized),
) -> Result<Sketched, CorpusError> {
    let mut out = Sketched { digests: vec![None; sources.len()], ..Sketched::default() };
    let mut fatal: Option<InputError> = None;
    // Whether any record had a value of the keep rule's field.
    let mut ranked = false;
    std::thread::scope(|scope| -> Result<(), CorpusError> {
        let (tx, rx) = mpsc::sync_channel::<(u32, Item)>(4);
        scope.spawn(move || read_in_batches(sources, opts, &tx));
        for (source, item) in rx {
            let records = match item {
                Item::Bad(e) => {
                    if opts.skip_bad && e.skippable() {
                        observer.skipped(&e);
                        out.skipped += 1;
                        continue;
                    }
                    fatal = Some(e);
                    break; // dropping the receiver stops the reader
                }
                Item::End(digest) => {
                    out.digests[source as usize] = Some(digest);
                    continue;
                }
                Item::Records(records) => records,
            };
            let sketches: Vec<_> = records
                .par_iter()
                .map_init(Scratch::default, |scratch, r| {
                    dedup.sketch(r.body.as_document(), r.body.len(), scratch)
                })
                .collect();
            for (record, sketch) in records.iter().zip(sketches) {
                match dedup.push_ranked(sketch, record.rank) {
                    Ok(_) => {}
                    Err(e @ neardup::DedupError::MixedRanks { .. }) => {
                        // Not skippable: which records were "bad" would depend on which kind
                        // came first.
                        let place = format!("{}:{}", sources[source as usize].name(), record.line);
                        fatal = Some(InputError {
                            place,
                            message: e.to_string(),
                            kind: InputErrorKind::Stream,
                        });
                        break;
                    }
                    Err(e) => return Err(CorpusError::Dedup(e)),
                }
                let id = record.id.get();
                // The reader let only strings and numbers through.
                if let Ok(canonical) = neardup::id_from_json(id) {
                    out.repeated_ids.note(&canonical);
                }
                ids.push(id);
                ranked |= record.rank.is_some();
                out.places.push(Place { source, line: record.line });
                out.replaced += record.replaced as u64;
                out.bytes += record.body.len() as u64;
            }
            if fatal.is_some() {
                break; // dropping the receiver stops the reader
            }
            observer.progress(out.places.len() as u64, out.bytes);
        }
        Ok(())
    })?;
    drop(out.repeated_ids.take_seen());
    if let (None, Some(field), false) = (&fatal, &opts.rank_field, ranked || out.places.is_empty())
    {
        // Most likely a misspelt name: every cluster would keep its first, silently.
        fatal = Some(InputError {
            place: "the input".into(),
            message: format!(
                "none of its {} records has a value in the field {field:?} named by --keep \
                 (check the name; a dotted name such as meta.fetched_at reaches into an object)",
                out.places.len()
            ),
            kind: InputErrorKind::Stream,
        });
    }
    match fatal {
        Some(e) => Err(CorpusError::Input(e)),
        None => Ok(out),
    }
}

/// The reader thread of the first pass: records in batches, bad ones one by one, and each
/// source's digest at its end. Stops when the receiver goes away.
fn read_in_batches(sources: &[Source], opts: &ReadOptions, tx: &mpsc::SyncSender<(u32, Item)>) {
    let mut batch = Vec::with_capacity(BATCH_DOCS);
    for (i, source) in sources.iter().enumerate() {
        let send = |item| tx.send((i as u32, item)).is_ok();
        let (flow, digest) = read_source(source, opts, &mut |item| match item {
            Ok(record) => {
                batch.push(record);
                if batch.len() >= BATCH_DOCS {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_DOCS));
                    if !send(Item::Records(full)) {
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            }
            Err(e) => {
                let full = std::mem::take(&mut batch);
                if !send(Item::Records(full)) || !send(Item::Bad(e)) {
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            }
        });
        if flow.is_break() {
            return;
        }
        let full = std::mem::take(&mut batch);
        if !send(Item::Records(full)) || !send(Item::End(digest)) {
            return;
        }
    }
}

/// Where the second pass puts the records it copies.
pub trait RecordSink {
    /// The sink's error; the pass's own failures convert into it.
    type Error: From<CorpusError>;

    /// One document's record as its input wrote it, and whether the dedup kept it.
    fn record(&mut self, kept: bool, record: &[u8]) -> Result<(), Self::Error>;

    /// The rows of a batch of a columnar input (Parquet, Arrow), each marked kept, dropped or
    /// `None` (not a document: a bad row skipped in the first pass). By default each marked
    /// row goes to [`RecordSink::record`] as a JSON object ([`crate::columnar::rows_as_json`]);
    /// a sink that writes tables takes the batch as it is.
    fn rows(
        &mut self,
        batch: &arrow_array::RecordBatch,
        marks: &[Option<bool>],
    ) -> Result<(), Self::Error> {
        for want in [true, false] {
            let rows = crate::columnar::select_rows(batch, marks, want)
                .and_then(|b| crate::columnar::rows_as_json(&b))
                .map_err(|e| CorpusError::Runtime(format!("a row as JSON: {e}")))?;
            for line in rows.split_inclusive(|b| *b == b'\n') {
                self.record(want, line)?;
            }
        }
        Ok(())
    }

    /// Called after each source has been copied and checked (to stop early, say).
    fn source_done(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A function of `(kept, record)` is a sink.
impl<E: From<CorpusError>, F: FnMut(bool, &[u8]) -> Result<(), E>> RecordSink for F {
    type Error = E;

    fn record(&mut self, kept: bool, record: &[u8]) -> Result<(), E> {
        self(kept, record)
    }
}

/// The second pass: reads each source again, checks that it is the input of the first pass (the
/// same bytes, by digest), and gives `sink` each document's record as its input wrote it (a
/// whole-file document becomes `{"id": PATH, "text": CONTENT}`), in input order, with `kept[i]`.
pub fn copy_records<S: RecordSink>(
    sources: &[Source],
    opts: &ReadOptions,
    digests: &[Option<SourceDigest>],
    places: &[Place],
    kept: &[bool],
    sink: &mut S,
) -> Result<(), S::Error> {
    pause_between_passes();
    let mut next = 0usize; // the next document, in input order
    for (s, source) in sources.iter().enumerate() {
        if next >= places.len() {
            break;
        }
        if places[next].source as usize != s {
            continue;
        }
        let mut digest = Digester::default();
        let read_again = |e: io::Error| {
            CorpusError::Runtime(format!("{}: reading again: {}", source.name(), io_message(&e)))
        };
        let format = opts.format_of(source);
        match source {
            Source::File(_) | Source::Spooled(_) | Source::Pipe(..) | Source::Partitioned(..)
                if format.is_columnar() =>
            {
                let file = crate::read::open_file(source).map_err(read_again)?;
                let name = source.name();
                let mark = |row: u64| {
                    let p = places.get(next)?;
                    (p.source as usize == s && p.line == row).then(|| {
                        next += 1;
                        kept[next - 1]
                    })
                };
                let input = crate::columnar::Input { file, format, partition: source.partition() };
                crate::columnar::copy_columnar(
                    input,
                    &name,
                    mark,
                    &mut digest,
                    |batch, marks| sink.rows(batch, marks),
                    |m| CorpusError::Runtime(m).into(),
                )?;
            }
            Source::Plain(_)
            | Source::File(_)
            | Source::Spooled(_)
            | Source::Pipe(..)
            | Source::Partitioned(..)
                if format == Format::Text =>
            {
                // One document: written as the JSON object {"id": PATH, "text": CONTENT}, the
                // text as the first pass read it (a byte order mark is its first character).
                let mut bytes = Vec::new();
                let mut reader = open(source).map_err(read_again)?.reader;
                reader.read_to_end(&mut bytes).map_err(read_again)?;
                digest.update(&bytes);
                // Decoded as the first pass decoded it (an encoding detected or given).
                let text = match crate::read::decode_document(bytes.clone(), "", 0, opts) {
                    Ok(text) => text,
                    Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
                };
                let id = source.path().map_or("-".into(), |p| p.display().to_string());
                let line = serde_json::json!({"id": id, "text": text});
                let line =
                    serde_json::to_vec(&line).map_err(|e| CorpusError::Runtime(e.to_string()))?;
                sink.record(kept[next], &line)?;
                next += 1;
            }
            Source::File(_) | Source::Spooled(_) | Source::Pipe(..) | Source::Partitioned(..) => {
                let mut reader = open(source).map_err(read_again)?.reader;
                let mut line = Vec::new();
                let mut number = 0u64;
                loop {
                    line.clear();
                    let n = reader.read_until(b'\n', &mut line).map_err(read_again)?;
                    if n == 0 {
                        break;
                    }
                    digest.update(&line);
                    number += 1;
                    if next < places.len()
                        && places[next].source as usize == s
                        && number == places[next].line
                    {
                        let record = if number == 1 {
                            line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line)
                        } else {
                            &line
                        };
                        let record = crate::read::add_partition(record, source.partition());
                        sink.record(kept[next], &record)?;
                        next += 1;
                    }
                }
            }
            Source::Plain(_) | Source::Stdin | Source::Text(..) => {
                return Err(CorpusError::Usage(format!(
                    "{}: read once only (spool standard input to read it twice)",
                    source.name()
                ))
                .into())
            }
        }
        if digests.get(s).copied().flatten() != Some(digest.finish()) {
            return Err(CorpusError::Runtime(format!(
                "{}: the input changed between the two passes (its bytes differ from the first \
                 read); nothing was written, the outputs are as they were",
                source.name()
            ))
            .into());
        }
        sink.source_done()?;
    }
    Ok(())
}

/// For tests of inputs that change between the passes: with `NEARDUP_TEST_PAUSE_BETWEEN_PASSES`
/// set to a path, the second pass creates that file and waits (at most a minute) until it is
/// removed.
fn pause_between_passes() {
    let Some(marker) = std::env::var_os("NEARDUP_TEST_PAUSE_BETWEEN_PASSES") else { return };
    let marker = PathBuf::from(marker);
    if fs::write(&marker, b"").is_err() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while marker.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Writes a dedup outcome as JSON Lines, each id exactly as its input wrote it: one line per
/// cluster, per pair, or per new document.
#[derive(Debug, Clone, Copy)]
pub struct Lines<'a> {
    /// Every document's id, the `--against` index's first.
    pub ids: &'a Ids,
    /// The outcome.
    pub outcome: &'a DedupOutcome,
    /// How many documents came from an index searched against (they are not written).
    pub seen: usize,
}

impl Lines<'_> {
    /// `{"cluster":[ids],"keep":id,"size":n,"similarity":s}` per cluster of two or more.
    pub fn clusters(&self, out: &mut OutputFile) -> Result<(), CorpusError> {
        for c in &self.outcome.clusters {
            let members: Vec<&str> = c.members.iter().map(|&m| self.id(m)).collect();
            let line = format!(
                "{{\"cluster\":[{}],\"keep\":{},\"size\":{},\"similarity\":{}}}\n",
                members.join(","),
                self.id(c.keep),
                c.members.len(),
                round(c.similarity)
            );
            out.write_bytes(line.as_bytes())?;
        }
        Ok(())
    }

    /// `{"a":id,"b":id,"similarity":s}` per pair, written as they come (never all held);
    /// returns how many.
    pub fn pairs(
        &self,
        out: &mut OutputFile,
        pairs: impl Iterator<Item = neardup::Pair>,
    ) -> Result<u64, CorpusError> {
        let mut n = 0u64;
        let mut line = String::new();
        for p in pairs {
            line.clear();
            use std::fmt::Write as _;
            let _ = writeln!(
                line,
                "{{\"a\":{},\"b\":{},\"similarity\":{}}}",
                self.id(p.a),
                self.id(p.b),
                round(p.similarity)
            );
            out.write_bytes(line.as_bytes())?;
            n += 1;
            if n.is_multiple_of(1 << 16) && stdout_closed() && out.is_stdout() {
                break;
            }
        }
        Ok(n)
    }

    /// `{"id":id,"cluster":n or null,"size":n,"kept":bool}` per new document.
    pub fn assignments(&self, out: &mut OutputFile) -> Result<(), CorpusError> {
        let o = self.outcome;
        for i in self.seen..self.ids.len() {
            let (cluster, size) = match o.cluster_of[i] {
                Some(c) => (c.to_string(), o.clusters[c as usize].members.len()),
                None => ("null".to_string(), 1),
            };
            let line = format!(
                "{{\"id\":{},\"cluster\":{cluster},\"size\":{size},\"kept\":{}}}\n",
                self.ids.get(i),
                o.kept[i]
            );
            out.write_bytes(line.as_bytes())?;
        }
        Ok(())
    }

    fn id(&self, position: u32) -> &str {
        self.ids.get(position as usize)
    }
}

/// Similarities to 6 decimals, as JSON numbers.
fn round(s: f64) -> Value {
    serde_json::json!((s * 1e6).round() / 1e6)
}
