//! `neardup dedup`: near-duplicate clusters of a corpus, and the deduplicated corpus.
//!
//! Two passes over the input. The first streams the records: a reader thread parses them while
//! the rayon pool sketches each batch, and only the sketches (plus id, place and length) stay
//! in memory. The library finds the clusters. The second pass reads the input again and copies
//! each kept (or dropped) record byte for byte, so memory follows the number of documents, not
//! the size of the text. Standard input is copied to a temporary file for the second pass.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use neardup::{Dedup, DedupConfig, DedupOutcome, Keep, Method, Scratch, Verification};
use rayon::prelude::*;
use serde_json::Value;

use crate::args::{InputArgs, PipelineArgs};
use crate::cmd::build_pipeline;
use crate::input::{open, read_all, InputError, Record, Source};
use crate::Failure;

/// Options of `neardup dedup`.
#[derive(Debug, Args)]
#[command(
    after_help = "Input: JSON Lines files (plain, .gz or .zst; one record per line, text in --text-field
or a token array in --tokens-field, id in --id-field, else FILE:LINE), directories (every file
under them, in path order, is one plain-text document whose id is its path), or `-` for standard
input (JSONL).

Method: minhash (default) finds candidates with LSH bands chosen for --threshold as `neardup
params` does (or --bands/--rows), then verifies each candidate with the exact Jaccard similarity
of the two feature sets. simhash (or just --hamming K) finds every pair within Hamming distance
K exactly, with permuted tables. --verify changes the check: cosine (weighted vectors, >=
threshold), hamming (SimHash distance <= K), estimate (no exact check: MinHash estimate >=
threshold; fast, approximate). Documents with identical features are merged before the search.

Features: the pipeline options, as in `fingerprint`. The default preset uses word 5-shingles
for space-separated text and character 5-grams for Chinese, chosen per document (--features
shingles with the jieba segmenter gives jieba word shingles instead).

Outputs, all optional, in input order:
  --output FILE      the records of the kept documents, byte for byte (a directory's file becomes
                     {\"id\": PATH, \"text\": CONTENT})
  --dropped FILE     the records of the dropped documents, likewise
  --clusters FILE    one line per cluster of two or more:
                     {\"cluster\": [ids], \"keep\": id, \"size\": n, \"similarity\": weakest verified pair}
  --pairs FILE       verified pairs {\"a\": id, \"b\": id, \"similarity\": s}; copies with identical
                     features are paired with their first copy only
  --assignments FILE every document: {\"id\": id, \"cluster\": n or null, \"size\": n, \"kept\": bool}
A summary goes to stderr (documents, clusters, dropped, time, peak memory).

Bad input: without --skip-bad, a malformed line, a line without the text field, invalid UTF-8 or
an oversized document stops the run with its file and line, and no output is written (exit 1).
With --skip-bad each is reported on stderr, left out of every output, and counted. Empty
documents (or only stop words) are near-duplicates of nothing: always kept. Duplicate ids are
reported and the documents kept apart.

Incremental: --save-index DIR writes every document's sketch; --against DIR deduplicates new
documents against a saved index (its documents are never dropped or written; a new document
near one of them is dropped). The index records the pipeline and settings and refuses others.

Examples:
  neardup dedup corpus.jsonl.zst --output kept.jsonl --clusters clusters.jsonl
  neardup dedup news/ --threshold 0.7 --keep longest --pairs pairs.jsonl
  neardup dedup today.jsonl --against seen/ --save-index seen/ --output new.jsonl"
)]
pub struct DedupArgs {
    /// JSONL files (.jsonl, .gz, .zst), directories of text files, or `-` for standard input.
    #[arg(value_name = "INPUT", required = true)]
    inputs: Vec<PathBuf>,

    /// Candidate search: minhash (LSH bands, Jaccard threshold), simhash (Hamming distance), or
    /// both (a candidate from either).
    #[arg(long, value_enum, value_name = "METHOD")]
    method: Option<MethodArg>,

    /// Similarity threshold for Jaccard, cosine and MinHash estimates, in (0, 1].
    #[arg(long, default_value_t = 0.8, value_name = "T")]
    threshold: f64,

    /// Largest SimHash Hamming distance (implies --method simhash unless --method is given).
    #[arg(long, value_name = "K")]
    hamming: Option<u32>,

    /// How candidates are confirmed [default: jaccard for minhash, hamming for simhash].
    #[arg(long, value_enum, value_name = "MEASURE")]
    verify: Option<VerifyArg>,

    /// LSH bands (with --rows), instead of the choice for --threshold.
    #[arg(long, value_name = "B", requires = "rows")]
    bands: Option<usize>,

    /// LSH rows per band (with --bands).
    #[arg(long, value_name = "R", requires = "bands")]
    rows: Option<usize>,

    /// Weights of false positives and false negatives for choosing the bands, summing to 1
    /// [default: 0.05,0.95 with exact verification (recall first: false positives are checked
    /// away), 0.5,0.5 with --verify estimate, as datasketch].
    #[arg(long, value_delimiter = ',', value_name = "FP,FN")]
    lsh_weights: Option<Vec<f64>>,

    /// Which document of a cluster is kept; ties go to the first in input order.
    #[arg(long, value_enum, default_value = "first", value_name = "RULE")]
    keep: KeepArg,

    /// Write the kept records here (`-`: standard output, as for every output below).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Write the dropped records here.
    #[arg(long, value_name = "FILE")]
    dropped: Option<PathBuf>,

    /// Write the clusters (size >= 2) here.
    #[arg(long, value_name = "FILE")]
    clusters: Option<PathBuf>,

    /// Write the verified pairs here.
    #[arg(long, value_name = "FILE")]
    pairs: Option<PathBuf>,

    /// Write every document's cluster, cluster size and fate here.
    #[arg(long, value_name = "FILE")]
    assignments: Option<PathBuf>,

    /// Deduplicate against the index saved in this directory.
    #[arg(long, value_name = "DIR")]
    against: Option<PathBuf>,

    /// Save an index of every document (those of --against included) to this directory.
    #[arg(long, value_name = "DIR")]
    save_index: Option<PathBuf>,

    /// Worker threads (default: all cores).
    #[arg(long, short = 'j', value_name = "N")]
    threads: Option<usize>,

    /// No progress bar and no summary.
    #[arg(long, short = 'q')]
    quiet: bool,

    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    pipeline: PipelineArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum MethodArg {
    Minhash,
    Simhash,
    Both,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum VerifyArg {
    Jaccard,
    Cosine,
    Hamming,
    Estimate,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum KeepArg {
    First,
    Longest,
    Shortest,
}

/// Where a document came from, for the second pass.
#[derive(Debug, Clone, Copy)]
struct Place {
    source: u32,
    /// 1-based JSONL line, or 0 for a whole-file document.
    line: u64,
}

/// Records per batch sent from the reader to the sketching pool.
const BATCH_DOCS: usize = 2048;

enum Item {
    Records(Vec<Record>),
    Bad(InputError),
}

pub fn run(args: DedupArgs) -> Result<(), Failure> {
    let started = Instant::now();
    if let Some(n) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(anyhow::Error::from)?;
    }
    let config = dedup_config(&args)?;
    let pipeline = build_pipeline(&args.pipeline)?;
    let mut dedup = Dedup::new(&pipeline, config.clone()).map_err(|e| Failure::Usage(e.into()))?;
    let mut input = args.input.clone();
    input.jsonl = true;

    // Old documents first, so that positions 0..seen are theirs.
    let mut ids: Vec<String> = match &args.against {
        Some(dir) => dedup.load(dir).map_err(|e| Failure::Runtime(e.into()))?,
        None => Vec::new(),
    };
    let seen = ids.len();

    let mut spool = Spool::default();
    let sources = sources(&args.inputs, &mut spool)?;
    let progress = Progress::new(args.quiet);
    let mut places: Vec<Place> = Vec::new();
    let mut id_hashes: HashSet<u64> = HashSet::new();
    let mut duplicate_ids: Vec<String> = Vec::new();
    let mut duplicate_id_count = 0usize;
    let (mut skipped, mut replaced, mut bytes) = (0usize, 0usize, 0u64);
    let mut fatal: Option<InputError> = None;

    std::thread::scope(|scope| -> Result<(), Failure> {
        let (tx, rx) = mpsc::sync_channel::<(u32, Item)>(4);
        let reader_sources = &sources;
        let reader_input = &input;
        scope.spawn(move || {
            let mut batch = Vec::with_capacity(BATCH_DOCS);
            for (i, source) in reader_sources.iter().enumerate() {
                let source_index = i as u32;
                let flow =
                    read_all(std::slice::from_ref(source), reader_input, |item| match item {
                        Ok(record) => {
                            batch.push(record);
                            if batch.len() >= BATCH_DOCS {
                                let full =
                                    std::mem::replace(&mut batch, Vec::with_capacity(BATCH_DOCS));
                                if tx.send((source_index, Item::Records(full))).is_err() {
                                    return ControlFlow::Break(());
                                }
                            }
                            ControlFlow::Continue(())
                        }
                        Err(e) => {
                            let full = std::mem::take(&mut batch);
                            if tx.send((source_index, Item::Records(full))).is_err()
                                || tx.send((source_index, Item::Bad(e))).is_err()
                            {
                                return ControlFlow::Break(());
                            }
                            ControlFlow::Continue(())
                        }
                    });
                if flow.is_break() {
                    return;
                }
                if !batch.is_empty() {
                    let full = std::mem::take(&mut batch);
                    if tx.send((source_index, Item::Records(full))).is_err() {
                        return;
                    }
                }
            }
        });

        for (source, item) in rx {
            let records = match item {
                Item::Bad(e) => {
                    if args.input.skip_bad {
                        progress.println(&format!("neardup: skipped: {e}"));
                        skipped += 1;
                        continue;
                    }
                    fatal = Some(e);
                    break; // dropping the receiver stops the reader
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
                dedup.push(sketch);
                let id = serde_json::to_string(&record.id).map_err(anyhow::Error::from)?;
                if !id_hashes.insert(xxhash_rust::xxh3::xxh3_64(id.as_bytes())) {
                    duplicate_id_count += 1;
                    if duplicate_ids.len() < 5 {
                        duplicate_ids.push(id.clone());
                    }
                }
                ids.push(id);
                places.push(Place { source, line: record.line });
                replaced += record.replaced;
                bytes += record.body.len() as u64;
            }
            progress.documents(places.len() as u64, bytes);
        }
        Ok(())
    })?;
    progress.finish();
    if let Some(e) = fatal {
        return Err(Failure::Runtime(anyhow!(
            "{e}\n(no output was written; use --skip-bad to skip bad records)"
        )));
    }
    let read_time = started.elapsed();

    let search_started = Instant::now();
    let outcome = dedup.run();
    let search_time = search_started.elapsed();

    let write_started = Instant::now();
    let writer = Writer { ids: &ids, outcome: &outcome, seen };
    if let Some(path) = &args.clusters {
        writer.clusters(path)?;
    }
    if let Some(path) = &args.pairs {
        writer.pairs(path)?;
    }
    if let Some(path) = &args.assignments {
        writer.assignments(path)?;
    }
    if args.output.is_some() || args.dropped.is_some() {
        copy_records(&sources, &places, &outcome.kept[seen..], &args)?;
    }
    if let Some(dir) = &args.save_index {
        dedup.save(dir, &ids).map_err(|e| Failure::Runtime(e.into()))?;
    }
    let write_time = write_started.elapsed();

    if !args.quiet {
        let new = places.len();
        let dropped = outcome.kept[seen..].iter().filter(|k| !**k).count();
        let empty = (seen..dedup.len()).filter(|&i| dedup.document(i).empty).count();
        let mut err = io::stderr().lock();
        let _ = writeln!(
            err,
            "neardup dedup: {new} documents ({:.1} MB, {empty} empty), {} clusters, {dropped} \
             dropped, {} kept",
            bytes as f64 / 1e6,
            outcome.clusters.len(),
            new - dropped
        );
        let how = match (config.method, dedup.banding()) {
            (Method::MinHash, Some((b, r))) => format!("minhash, {b} bands x {r} rows"),
            (Method::Both, Some((b, r))) => {
                format!(
                    "minhash ({b} bands x {r} rows) and simhash (Hamming <= {})",
                    config.hamming
                )
            }
            _ => format!("simhash, Hamming <= {}", config.hamming),
        };
        let _ = writeln!(
            err,
            "  {how}, verified by {:?}: {} candidate pairs, {} pairs verified, {} exact copies",
            dedup.verification(),
            outcome.candidates,
            outcome.pairs.len() - outcome.exact_duplicates,
            outcome.exact_duplicates
        );
        if seen > 0 {
            let _ = writeln!(err, "  against an index of {seen} documents");
        }
        if skipped > 0 {
            let _ = writeln!(err, "  skipped {skipped} bad record(s)");
        }
        if replaced > 0 {
            let _ = writeln!(err, "  replaced {replaced} invalid UTF-8 sequence(s) (--lossy)");
        }
        if duplicate_id_count > 0 {
            let _ = writeln!(
                err,
                "  {duplicate_id_count} duplicate id(s), kept as separate documents, e.g. {}",
                duplicate_ids.join(", ")
            );
        }
        let _ = writeln!(
            err,
            "  time {:.2} s (read and sketch {:.2} s, search and verify {:.2} s, write {:.2} s), \
             peak memory {}",
            started.elapsed().as_secs_f64(),
            read_time.as_secs_f64(),
            search_time.as_secs_f64(),
            write_time.as_secs_f64(),
            peak_memory().unwrap_or_else(|| "unknown".into())
        );
    }
    Ok(())
}

fn dedup_config(args: &DedupArgs) -> Result<DedupConfig, Failure> {
    let usage = |m: String| Failure::Usage(anyhow!(m));
    let method = match (args.method, args.hamming) {
        (Some(MethodArg::Minhash), _) => Method::MinHash,
        (Some(MethodArg::Simhash), _) | (None, Some(_)) => Method::SimHash,
        (Some(MethodArg::Both), _) => Method::Both,
        (None, None) => Method::MinHash,
    };
    let verification = args.verify.map(|v| match v {
        VerifyArg::Jaccard => Verification::Jaccard,
        VerifyArg::Cosine => Verification::Cosine,
        VerifyArg::Hamming => Verification::Hamming,
        VerifyArg::Estimate => Verification::Estimate,
    });
    if verification == Some(Verification::Hamming)
        && method == Method::MinHash
        && args.hamming.is_none()
    {
        return Err(usage("--verify hamming with --method minhash needs --hamming K".into()));
    }
    let weights = match args.lsh_weights.as_deref() {
        None => None,
        Some(&[fp, fn_]) => Some((fp, fn_)),
        Some(other) => {
            return Err(usage(format!("--lsh-weights takes two numbers, got {}", other.len())))
        }
    };
    Ok(DedupConfig {
        method,
        threshold: args.threshold,
        hamming: args.hamming.unwrap_or(3),
        verification,
        banding: args.bands.zip(args.rows),
        weights,
        keep: match args.keep {
            KeepArg::First => Keep::First,
            KeepArg::Longest => Keep::Longest,
            KeepArg::Shortest => Keep::Shortest,
        },
    })
}

/// Temporary copies of standard input, removed when dropped.
#[derive(Debug, Default)]
struct Spool {
    paths: Vec<PathBuf>,
}

impl Drop for Spool {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = fs::remove_file(p);
        }
    }
}

/// The sources in order: files as given, directories expanded to their files (sorted, as
/// plain-text documents), `-` copied to a temporary file.
fn sources(inputs: &[PathBuf], spool: &mut Spool) -> Result<Vec<Source>, Failure> {
    let mut out = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            let path = std::env::temp_dir().join(format!(
                "neardup-stdin-{}-{}.jsonl",
                std::process::id(),
                out.len()
            ));
            let mut file = File::create(&path).with_context(|| path.display().to_string())?;
            io::copy(&mut io::stdin().lock(), &mut file).context("copying standard input")?;
            spool.paths.push(path.clone());
            out.push(Source::Spooled(path));
        } else if input.is_dir() {
            let mut files = Vec::new();
            walk(input, &mut files).with_context(|| input.display().to_string())?;
            files.sort();
            out.extend(files.into_iter().map(Source::Plain));
        } else if input.exists() {
            out.push(Source::File(input.clone()));
        } else {
            return Err(Failure::Usage(anyhow!("{}: no such file or directory", input.display())));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(&entry.path(), out)?;
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    Ok(())
}

/// The second pass: copies the records of kept (and dropped) documents, byte for byte.
fn copy_records(
    sources: &[Source],
    places: &[Place],
    kept: &[bool],
    args: &DedupArgs,
) -> Result<(), Failure> {
    let mut outputs = RecordOutputs::create(args)?;
    let mut next = 0usize; // the next document, in input order
    for (s, source) in sources.iter().enumerate() {
        if next >= places.len() {
            break;
        }
        if places[next].source as usize != s {
            continue;
        }
        match source {
            Source::Plain(path) => {
                let text = fs::read(path).with_context(|| path.display().to_string())?;
                let text = String::from_utf8_lossy(&text);
                let line = serde_json::json!({"id": path.display().to_string(), "text": text});
                let line = serde_json::to_vec(&line).map_err(anyhow::Error::from)?;
                outputs.write(kept[next], &line)?;
                next += 1;
            }
            Source::File(path) | Source::Spooled(path) => {
                let mut reader = open(path).with_context(|| source.name())?;
                let mut line = Vec::new();
                let mut number = 0u64;
                while next < places.len() && places[next].source as usize == s {
                    line.clear();
                    let n = reader
                        .read_until(b'\n', &mut line)
                        .with_context(|| format!("{}: reading again", source.name()))?;
                    if n == 0 {
                        return Err(Failure::Runtime(anyhow!(
                            "{}: the file changed while neardup was reading it",
                            source.name()
                        )));
                    }
                    number += 1;
                    if number == places[next].line {
                        outputs.write(kept[next], &line)?;
                        next += 1;
                    }
                }
            }
            Source::Stdin | Source::Text(..) => unreachable!("dedup spools stdin, takes no --text"),
        }
    }
    outputs.flush()
}

/// An optional output and the path it was opened from (for error messages).
type Sink<'a> = (Option<Box<dyn Write>>, &'a Option<PathBuf>);

/// `--output` and `--dropped`: each record goes to one of them (or nowhere), newline-ended.
struct RecordOutputs<'a> {
    /// Kept records, then dropped ones.
    sinks: [Sink<'a>; 2],
}

impl<'a> RecordOutputs<'a> {
    fn create(args: &'a DedupArgs) -> Result<RecordOutputs<'a>, Failure> {
        let open = |p: &Option<PathBuf>| p.as_deref().map(create_output).transpose();
        Ok(RecordOutputs {
            sinks: [(open(&args.output)?, &args.output), (open(&args.dropped)?, &args.dropped)],
        })
    }

    fn write(&mut self, keep: bool, record: &[u8]) -> Result<(), Failure> {
        let (out, path) = &mut self.sinks[usize::from(!keep)];
        let Some(out) = out else { return Ok(()) };
        let result = out.write_all(record).and_then(|()| {
            if record.last() == Some(&b'\n') {
                Ok(())
            } else {
                out.write_all(b"\n")
            }
        });
        result.map_err(|e| output_failure(path, e))
    }

    fn flush(self) -> Result<(), Failure> {
        for (out, path) in self.sinks {
            if let Some(mut out) = out {
                out.flush().map_err(|e| output_failure(path, e))?;
            }
        }
        Ok(())
    }
}

fn output_failure(path: &Option<PathBuf>, e: io::Error) -> Failure {
    let name = path.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    Failure::Runtime(anyhow!("{name}: {e}"))
}

/// An output file, or standard output for `-`.
fn create_output(path: &Path) -> Result<Box<dyn Write>, Failure> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::with_capacity(1 << 16, io::stdout())));
    }
    let f = File::create(path)
        .with_context(|| format!("{}: cannot create", path.display()))
        .map_err(Failure::Runtime)?;
    Ok(Box::new(BufWriter::with_capacity(1 << 20, f)))
}

struct Writer<'a> {
    ids: &'a [String],
    outcome: &'a DedupOutcome,
    seen: usize,
}

impl Writer<'_> {
    fn file(path: &Path) -> Result<Box<dyn Write>, Failure> {
        create_output(path)
    }

    fn finish(path: &Path, result: io::Result<()>) -> Result<(), Failure> {
        result.map_err(|e| Failure::Runtime(anyhow!("{}: {e}", path.display())))
    }

    fn clusters(&self, path: &Path) -> Result<(), Failure> {
        let mut out = Self::file(path)?;
        let result = (|| {
            for c in &self.outcome.clusters {
                let members: Vec<&str> = c.members.iter().map(|&m| self.id(m)).collect();
                writeln!(
                    out,
                    "{{\"cluster\":[{}],\"keep\":{},\"size\":{},\"similarity\":{}}}",
                    members.join(","),
                    self.id(c.keep),
                    c.members.len(),
                    round(c.similarity)
                )?;
            }
            out.flush()
        })();
        Self::finish(path, result)
    }

    fn pairs(&self, path: &Path) -> Result<(), Failure> {
        let mut out = Self::file(path)?;
        let result = (|| {
            for p in &self.outcome.pairs {
                writeln!(
                    out,
                    "{{\"a\":{},\"b\":{},\"similarity\":{}}}",
                    self.id(p.a),
                    self.id(p.b),
                    round(p.similarity)
                )?;
            }
            out.flush()
        })();
        Self::finish(path, result)
    }

    fn assignments(&self, path: &Path) -> Result<(), Failure> {
        let mut out = Self::file(path)?;
        let o = self.outcome;
        let result = (|| {
            for i in self.seen..self.ids.len() {
                let (cluster, size) = match o.cluster_of[i] {
                    Some(c) => (c.to_string(), o.clusters[c as usize].members.len()),
                    None => ("null".to_string(), 1),
                };
                writeln!(
                    out,
                    "{{\"id\":{},\"cluster\":{cluster},\"size\":{size},\"kept\":{}}}",
                    self.ids[i], o.kept[i]
                )?;
            }
            out.flush()
        })();
        Self::finish(path, result)
    }

    fn id(&self, position: u32) -> &str {
        &self.ids[position as usize]
    }
}

/// Similarities to 6 decimals, as JSON numbers.
fn round(s: f64) -> Value {
    serde_json::json!((s * 1e6).round() / 1e6)
}

/// Peak resident memory, from /proc (Linux).
fn peak_memory() -> Option<String> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(format!("{:.0} MB", kb / 1024.0))
}

/// A progress line on stderr, shown only on a terminal, without --quiet, after one second.
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: std::cell::Cell<bool>,
}

impl Progress {
    fn new(quiet: bool) -> Progress {
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

    fn documents(&self, docs: u64, bytes: u64) {
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

    fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) if self.shown.get() => bar.println(line),
            _ => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
