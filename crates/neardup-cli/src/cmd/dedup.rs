//! `neardup dedup`: near-duplicate clusters of a corpus, and the deduplicated corpus.
//!
//! The flags of the corpus crate's two passes (`neardup_corpus::dedup`: sketch every record,
//! `Dedup::run`, read the input again to copy kept records byte for byte after checking it is
//! the same input): this module turns flags into a `SearchConfig` and `ReadOptions`, opens the
//! outputs (each a temporary file renamed into place only when everything succeeded), holds the
//! index lock, and says what happened on stderr.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::anyhow;
use clap::Args;
use neardup::{Dedup, Keep, Pipeline, SearchConfig, SearchSpec};
use neardup_corpus::dedup::{DedupJob, DedupObserver};
use neardup_corpus::peak_memory;
use neardup_corpus::read::{Format, InputError};
use neardup_corpus::write as output;

use crate::args::{thread_pool, InputArgs, PipelineArgs, MAX_THREADS};
use crate::cmd::build_pipeline;
use crate::cmd::progress::Progress;
use crate::cmd::report::LimitArgs;
use crate::cmd::search_args::{search_failure, MeasureArgs};
use crate::Failure;

/// Options of `neardup dedup`.
#[derive(Debug, Args)]
#[command(
    after_help = "Input: JSON Lines files (plain, .gz or .zst; one record per line, text in --text-field
or a token array in --tokens-field, id in --id-field, else FILE:LINE; dotted names such as
meta.url reach into objects), directories (walked in path order, symbolic links followed, loops
detected: files named .jsonl, .ndjson or .json are JSON Lines, .parquet and .arrow tables, any
other file one plain-text document whose id is its path unless its first bytes say Parquet or
Arrow; names starting with _ or . and .crc files, which Spark and Hadoop write beside their part
files, are passed over, as are the files of a saved neardup index; key=value folders, as Spark
writes lang=en/part-0.parquet, are string columns of the records below them), or `-` for
standard input (JSONL; a named pipe is read once too). Parquet and Arrow IPC files give one
record per row, their columns named as fields (dotted into struct columns: meta.url).
A file named on the command line is read by --format if given; else by its name (.jsonl,
.ndjson, .json: JSON Lines; .parquet; .arrow, .feather, .arrows, .ipc; .txt, .text, .md, .rst:
one plain-text document); else by its first bytes (Parquet, Arrow); else as JSON Lines.
--format text reads every file as one document.

Method: minhash (default) finds candidates with LSH bands, then verifies each candidate with the
exact Jaccard similarity of the two feature sets. The bands are the cheapest under which a pair
exactly at --threshold becomes a candidate with probability --recall (default 0.99; the summary
prints the bands, rows and that probability), or --bands/--rows, or datasketch's choice with
--lsh-weights. simhash (or just --hamming K) finds every pair within Hamming distance K exactly,
with permuted tables. --verify changes the check: cosine (weighted vectors, >= threshold),
hamming (SimHash distance <= K), estimate (no exact check: MinHash estimate >= threshold; fast,
approximate). Documents with identical features are merged before the search.

Features: the pipeline options, as in `fingerprint`. The default preset uses word 5-shingles
for space-separated text and character 5-grams for Chinese, chosen per document (--features
shingles with the jieba segmenter gives jieba word shingles instead). Whitespace next to Han
characters is ignored, so line breaks inside Chinese text change nothing.

Outputs, all optional, in input order (each written to a temporary file and renamed into place
at the end; an output may not be an input or another output):
  --output FILE        the records of the kept documents, byte for byte (a directory's file
                       becomes {\"id\": PATH, \"text\": CONTENT}; a Parquet or Arrow row a
                       JSON object); FILE.parquet or FILE.arrow: a table, in the schema of
                       Parquet/Arrow inputs (the types kept), or the one JSONL records imply
  --dropped FILE       the records of the dropped documents, likewise
  --clusters FILE      one line per cluster of two or more:
                       {\"cluster\": [ids], \"keep\": id, \"size\": n, \"similarity\": weakest link}
  --pairs FILE         every pair at or above the threshold, {\"a\": id, \"b\": id, \"similarity\": s},
                       copies of the same text included (a group of n copies gives n(n-1)/2
                       pairs; the summary says how many were written)
  --compact-pairs FILE the compact form: verified pairs between first copies, and each copy with
                       its first copy (similarity 1); transitively the clusters, not every pair
  --assignments FILE   every document: {\"id\": id, \"cluster\": n or null, \"size\": n, \"kept\": bool}
Ids are written exactly as they appear in the input. A summary goes to stderr (documents,
clusters, dropped, pairs, time, peak memory).

Bad input: without --skip-bad, a malformed line, a line without the text field, invalid UTF-8,
an oversized document or an unreadable file stops the run with its file and line, and no output
is written (exit 1). With --skip-bad each is reported on stderr, left out of every output, and
counted. A corrupt or truncated .gz/.zst stream always stops the run (with its byte offset),
since the rest of the file could not be read. An input that changes between the two passes is
detected and nothing is written. Empty documents (or only stop words) are near-duplicates of
nothing: always kept. Duplicate ids (\"7\" and 7 are one id) are reported and the documents kept apart.

Memory: per document, its id, where it came from, and its sketch: a few fixed-width values and
the LSH band keys (about 160 bytes). The feature hashes that verify candidates go to an unnamed
temporary file (--spill-dir, default $TMPDIR; about 700 bytes per 1 KB document), read back
for candidate pairs only; --in-memory keeps them in memory instead.

Incremental: --save-index DIR writes every document's sketch; --against DIR deduplicates new
documents against a saved index (its documents are never dropped or written; a new document
near one of them is dropped). The index records the pipeline and settings and refuses others.

Examples:
  neardup dedup corpus.jsonl.zst --output kept.jsonl --clusters clusters.jsonl
  neardup dedup news/ --threshold 0.7 --keep longest --pairs pairs.jsonl
  neardup dedup today.jsonl --against seen/ --save-index seen/ --output new.jsonl"
)]
pub struct DedupArgs {
    /// JSONL files (.jsonl, .gz, .zst), Parquet or Arrow IPC files, text files, directories of
    /// them (a Spark output folder is its part files), or `-` for standard input.
    #[arg(value_name = "INPUT", required = true)]
    inputs: Vec<PathBuf>,

    #[command(flatten)]
    measure: MeasureArgs,

    #[arg(long, value_name = "R", conflicts_with_all = ["bands", "lsh_weights"])]
    recall: Option<f64>,

    #[arg(long, value_name = "B", requires = "rows", conflicts_with = "lsh_weights")]
    bands: Option<usize>,

    #[arg(long, value_name = "R", requires = "bands")]
    rows: Option<usize>,

    #[arg(long, value_delimiter = ',', value_name = "FP,FN")]
    lsh_weights: Option<Vec<f64>>,

    #[arg(long, default_value = "first", value_name = "RULE")]
    keep: Keep,

    #[arg(long, value_name = "N")]
    max_bucket: Option<usize>,

    #[arg(long, value_name = "K")]
    star_width: Option<usize>,

    /// Write the kept records here (`-`: standard output, as for every output below).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Write the dropped records here.
    #[arg(long, value_name = "FILE")]
    dropped: Option<PathBuf>,

    /// Write the clusters (size >= 2) here.
    #[arg(long, value_name = "FILE")]
    clusters: Option<PathBuf>,

    /// Write every pair at or above the threshold here, copies included.
    #[arg(long, value_name = "FILE")]
    pairs: Option<PathBuf>,

    /// Write the compact form of the pairs here (pairs between first copies, and each copy with
    /// its first copy).
    #[arg(long, value_name = "FILE")]
    compact_pairs: Option<PathBuf>,

    /// Write every document's cluster, cluster size and fate here.
    #[arg(long, value_name = "FILE")]
    assignments: Option<PathBuf>,

    /// Write an HTML report here: the summary, charts of the similarities and cluster sizes,
    /// and the clusters with their texts side by side (one self-contained file).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,

    #[command(flatten)]
    report_limits: LimitArgs,

    /// Deduplicate against the index saved in this directory, with the pipeline and search
    /// settings it was saved with for each option not given.
    #[arg(long, value_name = "DIR")]
    against: Option<PathBuf>,

    /// Save an index of every document (those of --against included) to this directory. It is
    /// committed in one step after every other output: exit 0 means the new index, any other
    /// exit the previous one, whole. Runs saving to one directory take turns (a lock file).
    #[arg(long, value_name = "DIR")]
    save_index: Option<PathBuf>,

    /// A reviewer's decisions, exported from the report ("Export decisions"): JSON Lines of
    /// {"id": ID, "decision": "not_duplicate"}. Those documents are kept whatever the keep rule
    /// says (clusters and pairs stay as found; the summary counts them).
    #[arg(long, value_name = "FILE")]
    decisions: Option<PathBuf>,

    /// Where the feature hashes that verify candidates are kept: an unnamed temporary file in
    /// this directory, read back for candidate pairs only (memory per document about 160
    /// bytes instead of about 1 KB) [default: the system's temporary directory, $TMPDIR].
    #[arg(long, value_name = "DIR", conflicts_with = "in_memory")]
    spill_dir: Option<PathBuf>,

    /// Keep the feature hashes in memory instead of a temporary file.
    #[arg(long)]
    in_memory: bool,

    /// Worker threads, 1 to 256 (default: all cores).
    #[arg(long, short = 'j', value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
    threads: Option<u16>,

    /// No progress bar and no summary.
    #[arg(long, short = 'q')]
    quiet: bool,

    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub fn run(args: DedupArgs) -> Result<(), Failure> {
    let started = Instant::now();
    thread_pool(args.threads)?;
    // A run against a saved index takes the index's job for what it is not given: its pipeline
    // unless a pipeline option is given, each search option not given.
    let saved = match &args.against {
        Some(dir) => Some(neardup::read_manifest(dir).map_err(neardup_corpus::CorpusError::Dedup)?),
        None => None,
    };
    let config = dedup_config(&args, saved.as_ref().map(|m| &m.job.search))?;
    let pipeline = match &saved {
        Some(m) if args.pipeline.given().is_empty() => {
            Pipeline::new(m.job.pipeline.clone()).map_err(|e| Failure::Runtime(e.into()))?
        }
        _ => build_pipeline(&args.pipeline)?,
    };
    let spill = spill_dir(&args)?;
    let mut dedup = Dedup::spilled(&pipeline, config, spill.as_deref())
        .map_err(|e| Failure::Usage(e.into()))?;
    let job = DedupJob {
        inputs: args.inputs,
        read: args.input.read_options_or(Format::Jsonl),
        output: args.output,
        dropped: args.dropped,
        clusters: args.clusters,
        pairs: args.pairs,
        compact_pairs: args.compact_pairs,
        assignments: args.assignments,
        report: args.report,
        report_limits: args.report_limits.limits(),
        against: args.against,
        save_index: args.save_index,
        decisions: args.decisions,
        files: args.pipeline.files(),
    };
    let mut observer = Observer { progress: Progress::new(args.quiet) };
    let done = job.run(&mut dedup, &mut observer);
    observer.progress.finish();
    let done = done?;

    if !args.quiet && !output::stdout_closed() {
        let mut err = io::stderr().lock();
        let _ = writeln!(err, "neardup dedup: {}", done.summary);
        if let Some(n) = done.pairs_written {
            let _ = writeln!(err, "  {n} pairs written to --pairs (every pair, copies included)");
        }
        // What the record outputs did not write as given (fields written as text, values
        // without a JSON form).
        for note in &done.notes {
            let _ = writeln!(err, "  {note}");
        }
        if done.repeated_ids > 0 && job.save_index.is_some() {
            let _ = writeln!(
                err,
                "  the saved index keeps the repeated ids apart too: --against searches it as it \
                 is, but it cannot be loaded as a collection (Python's Index.load refuses it)"
            );
        }
        let [read_time, search_time, write_time] = done.times;
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
    if output::stdout_closed() {
        return Err(Failure::Reported);
    }
    Ok(())
}

fn dedup_config(args: &DedupArgs, saved: Option<&SearchSpec>) -> Result<SearchConfig, Failure> {
    let usage = |m: String| Failure::Usage(anyhow!(m));
    let lsh_weights = match args.lsh_weights.as_deref() {
        None => None,
        Some(&[fp, fn_]) => Some((fp, fn_)),
        Some(other) => {
            return Err(usage(format!("--lsh-weights takes two numbers, got {}", other.len())))
        }
    };
    let search = SearchSpec {
        bands: args.bands,
        rows: args.rows,
        recall: args.recall,
        lsh_weights,
        keep: Some(args.keep.clone()),
        max_bucket: args.max_bucket,
        star_width: args.star_width,
        ..args.measure.spec()?
    };
    let search = match saved {
        Some(saved) => search.or_saved(saved),
        None => search,
    };
    search.resolve().map_err(search_failure)
}

/// Where the run spills its verification data: `--spill-dir`, or the system's temporary
/// directory; `None` with `--in-memory`.
fn spill_dir(args: &DedupArgs) -> Result<Option<PathBuf>, Failure> {
    if args.in_memory {
        return Ok(None);
    }
    // Named as the user gave it: the option, or the environment's TMPDIR.
    let (dir, given) = match &args.spill_dir {
        Some(dir) => (dir.clone(), format!("--spill-dir {}", dir.display())),
        None => {
            let dir = std::env::temp_dir();
            let given = match std::env::var_os("TMPDIR") {
                Some(t) => format!(
                    "the spill directory (TMPDIR={}, the default of --spill-dir)",
                    std::path::Path::new(&t).display()
                ),
                None => format!("the spill directory {}", dir.display()),
            };
            (dir, given)
        }
    };
    if !dir.is_dir() {
        return Err(Failure::Usage(anyhow!(
            "{given}: not a directory (give --spill-dir DIR with room for about 700 bytes per \
             document, or --in-memory)"
        )));
    }
    Ok(Some(dir))
}

/// The first pass's news, on the progress line, and the lines said as the job goes.
struct Observer {
    progress: Progress,
}

impl neardup_corpus::dedup::Observer for Observer {
    fn skipped(&mut self, error: &InputError) {
        self.progress.println(&format!("neardup: skipped: {error}"));
    }

    fn progress(&mut self, documents: u64, bytes: u64) {
        self.progress.documents(documents, bytes);
    }
}

impl DedupObserver for Observer {
    fn say(&mut self, line: &str) {
        self.progress.println(line);
    }

    fn read_done(&mut self) {
        self.progress.finish();
    }
}
