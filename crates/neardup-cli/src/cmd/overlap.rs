//! `neardup overlap`: which passages of each query are copied from which documents, and how much
//! of each query that is. Glue: the flags become a [`OverlapJob`] (the library's driver reads,
//! checks and writes), and its outcome is said on stderr.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::anyhow;
use clap::Args;
use neardup::count_of;
use neardup::overlap::OverlapOptions;
use neardup_corpus::overlap::{OverlapJob, OverlapObserver, OverlapOutcome};
use neardup_corpus::write as output;
use neardup_web::thousands;

use crate::args::{thread_pool, InputArgs};
use crate::cmd::progress::Progress;
use crate::Failure;
use neardup_corpus::peak_memory;

/// Options of `neardup overlap`.
#[derive(Debug, Args)]
#[command(
    about = "Find the passages of each query copied from a collection (the thesis check), or \
             shared between the inputs",
    long_about = "Find the passages of each query copied from a collection (the thesis check, \
                  论文查重), or, without --against, the passages the input documents share.\n\n\
                  Passages are found over normalized text (full-width forms, case, punctuation \
                  and line breaks do not matter; Chinese by character, other scripts by word), \
                  tolerate edits (substituted, inserted or deleted words, swapped or dropped \
                  sentences), and are given as code point and byte offsets into both texts as \
                  written. Quotations and a reference list are left out of the copied share \
                  (--keep-quotes counts them); a source with the query's own id is never its \
                  source.",
    after_help = "Examples:\n  neardup overlap thesis.txt --against library.jsonl --summary -\n  \
                  neardup overlap theses/ --against library/ --save-index lib.idx \
                  --passages found.jsonl\n  neardup overlap new.jsonl --against lib.idx \
                  --passages found.jsonl --summary summary.jsonl\n  \
                  neardup overlap theses/ --against library.jsonl --report report.html\n  \
                  neardup overlap corpus.jsonl -o corpus.dedup.jsonl    # remove repeated \
                  passages"
)]
pub struct OverlapArgs {
    /// The queries: JSONL files (`.jsonl`, `.ndjson`, also `.gz`/`.zst`), plain text files (one
    /// document each), directories of text files, or `-` for standard input. Without
    /// --against, the collection is these documents themselves. Left out only with --against
    /// LIBRARY --save-index DIR, which indexes the library alone.
    #[arg(value_name = "QUERY")]
    pub inputs: Vec<PathBuf>,

    /// The collection checked against: a saved passage index (a directory written by
    /// --save-index) and/or documents, read as the queries are.
    #[arg(long, value_name = "COLLECTION", num_args = 1..)]
    pub against: Vec<PathBuf>,

    /// Write one JSON line per copied passage, in query order, quotations and the reference
    /// list included: query, start, end, source, source_start, source_end, similarity,
    /// evidence, the byte offsets (code points are Python string indices, end exclusive), also
    /// (other documents holding it), quotation (true when cited: left out of the copied share)
    /// and exclusion (null, "quote" or "references"). Standard output when no other output is
    /// given.
    #[arg(long, value_name = "FILE")]
    pub passages: Option<PathBuf>,

    /// Write one JSON line per query: its characters (chars), the copied ones (copied_chars,
    /// each counted once), the copied share without and with quotations (copied,
    /// copied_with_quotations), the quoted ones (excluded_chars), and per source its chars,
    /// copied share and quoted_chars.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Write a self-contained HTML page: per query, the copied share (with and without
    /// quotations), the sources, the text with each copied passage marked in its source's
    /// colour, and each passage beside its source with the differences marked.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Without --against: write every input document with the passages it repeats from an
    /// earlier document removed, the first occurrence kept (substring dedup). FILE.jsonl:
    /// JSON Lines records keep every other field as written (a plain-text document becomes a
    /// record {"id", "text"}, a table's row a JSON object); FILE.parquet, FILE.arrow or
    /// FILE.feather: a table, every input column kept (its text column rewritten).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// With -o: drop the records left shorter than N characters once their repeats are
    /// removed (by default every record is kept, and the summary says how many were left
    /// empty).
    #[arg(long, value_name = "N", requires = "output")]
    pub min_chars: Option<u64>,

    /// Save the passage index of the collection (--against, or without it every input) to
    /// this directory, for later --against. The queries checked against a collection are not
    /// added unless --add is given.
    #[arg(long, value_name = "DIR")]
    pub save_index: Option<PathBuf>,

    /// With --against and --save-index: add the queries to the saved index too (a query
    /// replaces a document of its id), so that later queries are checked against them.
    #[arg(long, requires = "save_index")]
    pub add: bool,

    /// Without --against: where the corpus's temporary index is kept while it is checked (its
    /// texts and fingerprints: up to 2.5 times its text while it is built, 1.6 times after;
    /// removed when the run ends), so that memory does not grow with the corpus's texts
    /// [default: the system's temporary directory, $TMPDIR].
    #[arg(long, value_name = "DIR")]
    pub spill_dir: Option<PathBuf>,

    /// Documents never counted as sources (the author's own earlier work), by id: ids are
    /// text, so 7 names the document whose id is 7 or "7".
    #[arg(long, value_name = "ID", num_args = 1..)]
    pub exclude_source: Vec<String>,

    #[arg(long)]
    pub keep_quotes: bool,

    #[arg(long, value_name = "N")]
    pub max_quote_chars: Option<u32>,

    #[arg(long, value_name = "N")]
    pub min_units: Option<u32>,

    #[arg(long, value_name = "N")]
    pub max_gap: Option<u32>,

    #[arg(long, value_name = "X")]
    pub min_similarity: Option<f64>,

    #[arg(long, value_name = "X")]
    pub min_density: Option<f64>,

    #[arg(long, value_name = "N")]
    pub min_anchor_chars: Option<u32>,

    #[arg(long, value_name = "N")]
    pub seed_units: Option<u32>,

    #[arg(long, value_name = "N")]
    pub window: Option<u32>,

    #[arg(long, value_name = "N")]
    pub max_sources: Option<u32>,

    #[arg(long, value_enum, value_name = "SCRIPT")]
    pub zh_script: Option<String>,

    #[command(flatten)]
    pub input: InputArgs,

    /// Worker threads (default: all cores), 1 to 256.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,

    /// No summary line on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The progress line and the lines said as the job goes.
struct Said {
    progress: Progress,
    quiet: bool,
}

impl OverlapObserver for Said {
    fn say(&self, line: &str) {
        self.progress.println(line);
    }
    fn note(&self, line: &str) {
        if !self.quiet {
            self.progress.println(line);
        }
    }
    fn progress(&self, message: &str) {
        self.progress.message(message);
    }
}

pub fn run(args: OverlapArgs) -> Result<(), Failure> {
    let started = Instant::now();
    thread_pool(args.threads)?;
    // The options given (a saved index's own settings stand for the others).
    let options = OverlapOptions {
        min_units: args.min_units,
        max_gap: args.max_gap,
        min_similarity: args.min_similarity,
        seed_units: args.seed_units,
        window: args.window,
        max_sources: args.max_sources,
        keep_quotes: args.keep_quotes.then_some(true),
        zh_script: args
            .zh_script
            .as_deref()
            .map(|s| serde_json::from_value(serde_json::json!(s)))
            .transpose()
            .map_err(|e| Failure::Usage(anyhow!("--zh-script: {e}")))?,
        min_density: args.min_density,
        max_quote_chars: args.max_quote_chars,
        min_anchor_chars: args.min_anchor_chars,
    };
    options
        .to_spec()
        .map_err(|e| Failure::Usage(anyhow!("--{}", e.to_string().replace('_', "-"))))?;
    let job = OverlapJob {
        inputs: args.inputs,
        against: args.against,
        options,
        read: args.input.read_options(),
        add: args.add,
        exclude_source: args.exclude_source,
        passages: args.passages,
        summary: args.summary,
        report: args.report,
        output: args.output,
        min_chars: args.min_chars,
        save_index: args.save_index,
        spill_dir: args.spill_dir,
    };
    let said = Said { progress: Progress::new(args.quiet), quiet: args.quiet };
    let outcome = job.run(&said);
    said.progress.finish();
    let outcome = outcome?;
    if !args.quiet && !output::stdout_closed() {
        let _ = say_outcome(&job, &outcome, started);
    }
    if output::stdout_closed() {
        return Err(Failure::Reported);
    }
    Ok(())
}

/// The summary on stderr: what was checked, what was found, what `-o` removed, the notes of
/// reading and writing, time and memory.
fn say_outcome(job: &OverlapJob, o: &OverlapOutcome, started: Instant) -> io::Result<()> {
    let mut err = io::stderr().lock();
    let docs = |n: usize| count_of(n as u64, "document", "documents");
    let from_saved =
        if o.loaded > 0 { format!(" ({} from the saved index)", o.loaded) } else { String::new() };
    if o.library_only {
        let dir = job.save_index.as_deref().unwrap_or(Path::new(""));
        writeln!(
            err,
            "neardup overlap: {} indexed in {}{from_saved}",
            docs(o.collection),
            dir.display()
        )?;
    } else {
        let what = if o.within {
            format!("{} checked against each other", docs(o.queries as usize))
        } else {
            format!(
                "{} against {}{from_saved}",
                count_of(o.queries, "query", "queries"),
                docs(o.collection)
            )
        };
        let quoted = if o.quoted > 0 {
            format!(" (and {} quoted)", count_of(o.quoted as u64, "passage", "passages"))
        } else {
            String::new()
        };
        writeln!(
            err,
            "neardup overlap: {what}: {} in {} of them{quoted}, {:.1}% copied on average",
            count_of(o.passages as u64, "passage", "passages"),
            o.with_copies,
            o.mean_copied * 100.0
        )?;
    }
    for note in &o.query_notes {
        writeln!(err, "  {note}")?;
    }
    for note in &o.collection_notes {
        writeln!(err, "  {note} (--against)")?;
    }
    if let Some(r) = &o.rewritten {
        writeln!(
            err,
            "  -o: {} of {} characters removed as repeats of earlier documents ({:.1}%)",
            thousands(r.removed),
            thousands(o.chars),
            r.removed as f64 / o.chars.max(1) as f64 * 100.0
        )?;
        if let Some(min) = job.min_chars {
            writeln!(
                err,
                "  -o: {} left shorter than --min-chars {min} dropped",
                count_of(r.dropped, "record", "records"),
            )?;
        } else if r.emptied > 0 {
            writeln!(
                err,
                "  -o: {} left empty by the removal kept (--min-chars N drops those shorter \
                 than N)",
                count_of(r.emptied, "record", "records"),
            )?;
        }
    }
    for note in &o.output_notes {
        writeln!(err, "  {note}")?;
    }
    if o.collection == 0 && !o.within {
        writeln!(err, "  the collection is empty: nothing can be copied from it")?;
    }
    writeln!(
        err,
        "  {:.1} MB read, time {:.2} s (read and check {:.2} s), peak memory {}",
        o.read_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        o.check_time.as_secs_f64(),
        peak_memory().unwrap_or_else(|| "unknown".into())
    )
}
