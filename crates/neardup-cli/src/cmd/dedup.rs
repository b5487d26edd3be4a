//! `neardup dedup`: near-duplicate clusters of a corpus, and the deduplicated corpus.
//!
//! The flags of the corpus crate's two passes (`neardup_corpus::dedup`: sketch every record,
//! `Dedup::run`, read the input again to copy kept records byte for byte after checking it is
//! the same input): this module turns flags into a `DedupConfig` and `ReadOptions`, opens the
//! outputs (each a temporary file renamed into place only when everything succeeded), holds the
//! index lock, and says what happened on stderr.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use clap::Args;
use neardup::{Dedup, DedupConfig, DedupOutcome, Keep, SearchSpec, SearchSpecError, Verification};
use neardup_corpus::columnar::RecordsOutput;
use neardup_corpus::decisions::Decisions;
use neardup_corpus::dedup::{copy_records, sketch_sources, Ids, Lines, Sketched};
pub(crate) use neardup_corpus::peak_memory;
use neardup_corpus::read::{expand_inputs, Format, InputError, ReadOptions, Source};
use neardup_corpus::write::{self as output, check_conflicts, Input, Output, OutputFile};
use neardup_corpus::CorpusError;

use crate::args::{thread_pool, InputArgs, PipelineArgs, MAX_THREADS};
use crate::cmd::build_pipeline;
use crate::cmd::progress::Progress;
use crate::cmd::report::{self, LimitArgs};
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

    #[arg(long, value_name = "METHOD")]
    method: Option<String>,

    #[arg(long, default_value_t = neardup::DEFAULT_THRESHOLD, value_name = "T")]
    threshold: f64,

    #[arg(long, value_name = "K")]
    hamming: Option<u32>,

    #[arg(long, value_name = "MEASURE")]
    verify: Option<String>,

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

    /// Deduplicate against the index saved in this directory.
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

/// A choice flag's value as the library's value (the option table's choices are the serde
/// names, which the command line checked already).
pub(crate) fn choice<T: serde::de::DeserializeOwned>(
    flag: &str,
    value: Option<&str>,
) -> Result<Option<T>, Failure> {
    value
        .map(|v| serde_json::from_value(serde_json::json!(v)))
        .transpose()
        .map_err(|e| Failure::Usage(anyhow!("{flag}: {e}")))
}

/// The outputs of a run, opened before the first pass and committed after the last write.
struct Outputs {
    records: [Option<RecordsOutput>; 2],
    clusters: Option<OutputFile>,
    pairs: Option<OutputFile>,
    compact_pairs: Option<OutputFile>,
    assignments: Option<OutputFile>,
    report: Option<OutputFile>,
}

impl Outputs {
    fn plan(args: &DedupArgs) -> Vec<Output> {
        let list = [
            ("--output", &args.output),
            ("--dropped", &args.dropped),
            ("--clusters", &args.clusters),
            ("--pairs", &args.pairs),
            ("--compact-pairs", &args.compact_pairs),
            ("--assignments", &args.assignments),
            ("--report", &args.report),
        ];
        let mut out: Vec<Output> = list
            .into_iter()
            .filter_map(|(option, p)| p.clone().map(|path| Output { option, path }))
            .collect();
        // The manifest is the index's commit point (its docs file gets a new name each save).
        if let Some(dir) = &args.save_index {
            out.push(Output { option: "--save-index", path: dir.join("manifest.json") });
        }
        out
    }

    fn create(args: &DedupArgs) -> Result<Outputs, Failure> {
        let open = |option, p: &Option<PathBuf>| {
            p.as_deref().map(|p| OutputFile::create(option, p)).transpose()
        };
        let records = |option, p: &Option<PathBuf>| {
            p.as_deref().map(|p| RecordsOutput::create(option, p)).transpose()
        };
        Ok(Outputs {
            records: [records("--output", &args.output)?, records("--dropped", &args.dropped)?],
            clusters: open("--clusters", &args.clusters)?,
            pairs: open("--pairs", &args.pairs)?,
            compact_pairs: open("--compact-pairs", &args.compact_pairs)?,
            assignments: open("--assignments", &args.assignments)?,
            report: open("--report", &args.report)?,
        })
    }

    /// Finishes the record outputs' files (a table's encoding can fail: a schema the records
    /// do not fit, a full disk), so that committing is only renames.
    fn finish_records(&mut self) -> Result<(), CorpusError> {
        for slot in &mut self.records {
            if let Some(out) = slot.take() {
                *slot = Some(out.finish()?);
            }
        }
        Ok(())
    }

    /// Renames every output into place; the caller finished them ([`Outputs::finish_records`]).
    fn commit(self) -> Result<(), CorpusError> {
        let [kept, dropped] = self.records;
        for out in [kept, dropped].into_iter().flatten() {
            out.commit()?;
        }
        for out in [self.clusters, self.pairs, self.compact_pairs, self.assignments, self.report]
            .into_iter()
            .flatten()
        {
            out.commit()?;
        }
        Ok(())
    }

    /// True when some output is a file (not standard output).
    fn any_file(&self) -> bool {
        if self.records.iter().flatten().any(|o| !o.is_stdout()) {
            return true;
        }
        [&self.clusters, &self.pairs, &self.compact_pairs, &self.assignments, &self.report]
            .into_iter()
            .flatten()
            .any(|o| !o.is_stdout())
    }
}

/// Ends the run quietly when standard output closed and nothing else is being written.
fn stop_if_stdout_gone(outputs: &Outputs, save_index: bool) -> Result<(), Failure> {
    if output::stdout_closed() && !outputs.any_file() && !save_index {
        return Err(Failure::Reported);
    }
    Ok(())
}

pub fn run(args: DedupArgs) -> Result<(), Failure> {
    let started = Instant::now();
    thread_pool(args.threads)?;
    let config = dedup_config(&args)?;
    let pipeline = build_pipeline(&args.pipeline)?;
    let mut dedup = Dedup::new(&pipeline, config.clone()).map_err(|e| Failure::Usage(e.into()))?;
    let mut input = args.input.read_options_or(Format::Jsonl);
    input.rank_field = config.keep.field().map(str::to_string);
    // Rows written back are read whole in the first pass, so a value that cannot be written
    // (a string that is not UTF-8) is a bad row there.
    input.read_every_column = args.output.is_some() || args.dropped.is_some();
    let progress = Progress::new(args.quiet);

    // Every input (sources, the index read, the files the spec names) and every output are
    // known before anything is opened for writing.
    let mut skipped = 0u64;
    if let Some(dir) = &args.save_index {
        output::check_index_dir("--save-index", dir, &args.inputs)?;
    }
    let sources = expand_inputs(&args.inputs, &input, |e| {
        if e.is_notice() {
            progress.println(&format!("neardup: note: {e}"));
        } else {
            progress.println(&format!("neardup: skipped: {e}"));
            skipped += 1;
        }
    })?;
    let mut inputs: Vec<Input> = sources
        .iter()
        .filter_map(|s| s.path().map(|p| Input { what: "input".into(), path: p.to_path_buf() }))
        .collect();
    if let Some(dir) = &args.against {
        let path = dir.join("manifest.json");
        inputs.push(Input { what: "--against index file".into(), path });
    }
    inputs.extend(args.pipeline.files().into_iter().map(|(what, path)| Input { what, path }));
    if let Some(path) = &args.decisions {
        inputs.push(Input { what: "--decisions file".into(), path: path.clone() });
    }
    let planned = Outputs::plan(&args);
    // --save-index may be the --against directory: the index is read first and replaced
    // atomically at the end.
    let reads_index = |o: &Output| o.option == "--save-index";
    let (index_outputs, file_outputs): (Vec<Output>, Vec<Output>) =
        planned.into_iter().partition(reads_index);
    check_conflicts(&inputs, &file_outputs)?;
    let non_index_inputs: Vec<Input> =
        inputs.iter().filter(|i| i.what != "--against index file").cloned().collect();
    let mut all_outputs = file_outputs.clone();
    all_outputs.extend(index_outputs);
    check_conflicts(&non_index_inputs, &all_outputs)?;
    // A table output holds one schema: every part's is checked before anything is read or
    // written (a mismatch was found after --clusters - had streamed).
    if [&args.output, &args.dropped].into_iter().flatten().any(|p| RecordsOutput::is_table(p)) {
        neardup_corpus::columnar::check_table_inputs(&sources, &input)?;
    }
    let decisions = args.decisions.as_deref().map(Decisions::read).transpose()?;

    // One writer per index directory, from before its documents are read (when it is also
    // --against) until its new state is committed: concurrent runs take turns.
    let index_lock =
        args.save_index.as_deref().map(|dir| super::lock_index("dedup", dir)).transpose()?;

    // Old documents first, so that positions 0..seen are theirs.
    let mut ids = Ids::default();
    if let Some(dir) = &args.against {
        for id in dedup.load(dir).map_err(Failure::from)? {
            ids.push(&id);
        }
    }
    let seen = ids.len();
    let mut outputs = Outputs::create(&args)?;
    if let Some(dir) = &args.save_index {
        output::register_index_dir(dir);
    }

    let mut observer = Observer { progress: &progress };
    let read = match sketch_sources(&mut dedup, &sources, &input, &mut ids, &mut observer) {
        Ok(read) => read,
        Err(CorpusError::Input(e)) => {
            let hint = if e.skippable() { "; use --skip-bad to skip bad records" } else { "" };
            return Err(Failure::Runtime(anyhow!("{e}\n(no output was written{hint})")));
        }
        Err(e) => return Err(e.into()),
    };
    progress.finish();
    let skipped = skipped + read.skipped;
    let read_time = started.elapsed();

    let search_started = Instant::now();
    let mut outcome = dedup.run().map_err(|e| Failure::Runtime(e.into()))?;
    let search_time = search_started.elapsed();
    let mut kept_by_decision = 0;
    if let Some(decisions) = &decisions {
        let mut found = std::collections::HashSet::new();
        let marked: Vec<u32> = (seen..ids.len())
            .filter(|&i| match neardup::id_from_json(ids.get(i)) {
                Ok(id) if decisions.not_duplicate(&id) => {
                    found.insert(id.into_owned());
                    true
                }
                _ => false,
            })
            .map(|i| i as u32)
            .collect();
        kept_by_decision = outcome.keep_also(marked);
        let unmatched = decisions.unmatched(&found);
        if let Some(example) = unmatched.first() {
            // Said, not refused: decisions may cover more than this run's input.
            eprintln!(
                "neardup: {} of --decisions matched no document of this run, e.g. {example:?} (were \
                 they made with other --id-field settings?)",
                neardup::count_of(unmatched.len() as u64, "id", "ids")
            );
        }
    }
    // One summary of the run: what stderr says and what the report's table says.
    let mut summary = neardup::Summary::of(&dedup, &outcome);
    summary.bytes = Some(read.bytes);
    summary.skipped = skipped;
    summary.replaced = read.replaced;
    summary.repeated_ids = read.repeated_ids.records() as u64;
    summary.repeated_id_examples = read.repeated_ids.examples().to_vec();
    summary.kept_by_decision = kept_by_decision;

    let write_started = Instant::now();
    let writer = Lines { ids: &ids, outcome: &outcome, seen };
    let mut pairs_written = None;
    if let Some(out) = &mut outputs.clusters {
        writer.clusters(out)?;
    }
    stop_if_stdout_gone(&outputs, args.save_index.is_some())?;
    if let Some(out) = &mut outputs.pairs {
        pairs_written = Some(writer.pairs(out, outcome.pairs())?);
    }
    stop_if_stdout_gone(&outputs, args.save_index.is_some())?;
    if let Some(out) = &mut outputs.compact_pairs {
        writer.pairs(out, outcome.compact_pairs())?;
    }
    if let Some(out) = &mut outputs.assignments {
        writer.assignments(out)?;
    }
    stop_if_stdout_gone(&outputs, args.save_index.is_some())?;
    if outputs.records.iter().any(Option::is_some) {
        copy_records(
            &sources,
            &input,
            &read.digests,
            &read.places,
            &outcome.kept[seen..],
            &mut outputs,
        )?;
    }
    if outputs.report.is_some() {
        let figures = Figures {
            summary: &summary,
            started,
            read_time,
            search_time,
            write_time: write_started.elapsed(),
        };
        let page = build_report(&args, &dedup, &outcome, &ids, &sources, &read, &input, &figures)?;
        if let Some(out) = &mut outputs.report {
            out.write_bytes(page.as_bytes())?;
        }
    }
    // The index is written now and committed last: a run that fails or is stopped before the
    // end leaves it as it was (a rerun then repeats the whole run), and once it is committed
    // the run has succeeded. Termination signals wait while the outputs and the index commit.
    let prepared = match &index_lock {
        Some(lock) => {
            Some(dedup.prepare_save(lock, &ids.to_vec()).map_err(|e| Failure::Runtime(e.into()))?)
        }
        None => None,
    };
    outputs.finish_records()?;
    // What the record outputs did not write as given (fields written as text, values without
    // a JSON form), said with the summary.
    let notes: Vec<String> = outputs.records.iter().flatten().flat_map(|o| o.notes()).collect();
    output::commit_section(|| -> Result<(), Failure> {
        outputs.commit()?;
        if let Some(prepared) = prepared {
            prepared.commit().map_err(|e| Failure::Runtime(e.into()))?;
        }
        Ok(())
    })?;
    let write_time = write_started.elapsed();

    if !args.quiet && !output::stdout_closed() {
        let mut err = io::stderr().lock();
        let _ = writeln!(err, "neardup dedup: {summary}");
        if let Some(n) = pairs_written {
            let _ = writeln!(err, "  {n} pairs written to --pairs (every pair, copies included)");
        }
        for note in &notes {
            let _ = writeln!(err, "  {note}");
        }
        if read.repeated_ids.records() > 0 && args.save_index.is_some() {
            let _ = writeln!(
                err,
                "  the saved index keeps the repeated ids apart too: --against searches it as it \
                 is, but it cannot be loaded as a collection (Python's Index.load refuses it)"
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
    if output::stdout_closed() {
        return Err(Failure::Reported);
    }
    Ok(())
}

/// What a run measured, for its report.
struct Figures<'a> {
    summary: &'a neardup::Summary,
    started: Instant,
    read_time: Duration,
    search_time: Duration,
    write_time: Duration,
}

/// The report of this run: the clusters chosen, their members' similarities to the kept
/// document from the sketches in memory, and the shown texts from a further read of the input
/// (checked against the first read's digests).
#[allow(clippy::too_many_arguments)]
fn build_report(
    args: &DedupArgs,
    dedup: &Dedup<'_>,
    outcome: &DedupOutcome,
    ids: &Ids,
    sources: &[Source],
    read: &Sketched,
    input: &ReadOptions,
    figures: &Figures<'_>,
) -> Result<String, Failure> {
    let limits = args.report_limits.limits();
    let seen = outcome.seen() as usize;
    let config = dedup.config();
    let mut page = neardup_web::report::Report::new(&report::input_title(&args.inputs), limits);
    page.threshold = config.threshold;
    page.measure = report::measure_name(dedup.verification()).to_string();
    let mut pairs = 0u64;
    for (similarity, n) in outcome.pair_weights() {
        page.add_pair(similarity, n);
        pairs += n;
    }
    for c in &outcome.clusters {
        page.add_cluster_size(c.members.len() as u64);
    }
    // The table is the run's own counts only for a run by similarity without --against.
    let by_similarity = seen == 0 && dedup.verification() != Verification::Hamming;
    let thresholds = if by_similarity {
        neardup_web::report::table_thresholds(config.threshold)
    } else {
        Vec::new()
    };
    page.thresholds = outcome
        .at_thresholds(&thresholds)
        .into_iter()
        .map(|a| neardup_web::report::ThresholdRow {
            threshold: a.threshold,
            pairs: a.pairs,
            clusters: a.clusters,
            dropped: a.dropped,
        })
        .collect();
    let sizes: Vec<u64> = outcome.clusters.iter().map(|c| c.members.len() as u64).collect();
    let keys: Vec<u64> =
        outcome.clusters.iter().map(|c| report::sample_key(ids.get(c.keep as usize))).collect();
    let mut chosen: Vec<report::Chosen<u32>> = Vec::new();
    for (i, sampled) in neardup_web::report::select_clusters(&sizes, &keys, limits) {
        let c = &outcome.clusters[i];
        let mut others: Vec<(u32, f64)> = Vec::with_capacity(c.members.len());
        for &m in c.members.iter().filter(|&&m| m != c.keep) {
            let s = dedup.similarity_at(c.keep, m).map_err(|e| Failure::Runtime(e.into()))?;
            others.push((m, s));
        }
        let (others, hidden) = neardup_web::report::choose_members(others, limits);
        chosen.push(report::Chosen {
            number: i as u64,
            size: sizes[i],
            weakest: (c.similarity * 1e6).round() / 1e6, // as --clusters writes it
            sampled,
            keep: c.keep,
            others,
            hidden,
        });
    }
    let wanted: HashSet<u32> = chosen
        .iter()
        .flat_map(|c| std::iter::once(c.keep).chain(c.others.iter().map(|o| o.0)))
        .filter(|&p| p as usize >= seen)
        .collect();
    let mut texts = std::collections::HashMap::new();
    let mut next = 0usize;
    if !wanted.is_empty() {
        report::read_again(sources, input, Some(&read.digests), |source, record| {
            // Records arrive in input order; the first pass placed each accepted one.
            if let Some(place) = read.places.get(next) {
                if place.source == source && place.line == record.line {
                    let position = (seen + next) as u32;
                    if wanted.contains(&position) {
                        texts.insert(position, report::ShownText::of(&record, limits.text_chars));
                    }
                    next += 1;
                }
            }
        })?;
    }
    page.clusters = chosen
        .iter()
        .map(|c| {
            c.view(
                |k| ids.get(k as usize).to_string(),
                &texts,
                "(a document of the --against index: its text is not in this run's input)",
            )
        })
        .collect();
    let n = |x: u64| neardup_web::thousands(x);
    let summary = figures.summary;
    page.subtitle = format!(
        "neardup dedup {} · threshold {} · keep {}",
        env!("CARGO_PKG_VERSION"),
        config.threshold,
        config.keep
    );
    let mut rows = vec![
        (
            "documents".to_string(),
            format!(
                "{} ({:.1} MB, {} empty)",
                n(summary.documents),
                summary.bytes.unwrap_or(0) as f64 / 1e6,
                n(summary.empty)
            ),
        ),
        ("clusters".into(), n(summary.clusters)),
        ("dropped".into(), n(summary.dropped)),
        ("kept".into(), n(summary.kept)),
        (
            "removed".into(),
            format!(
                "{} of text, {:.1}% of the bytes",
                neardup::bytes_text(summary.bytes_dropped),
                100.0 * summary.bytes_dropped as f64 / summary.bytes.unwrap_or(0).max(1) as f64
            ),
        ),
        ("method".into(), summary.method_line()),
        (
            "verified by".into(),
            format!(
                "{}: {} candidate pairs, {} verified between distinct texts, {} exact copies",
                summary.verification.name(),
                n(summary.candidates),
                n(summary.verified),
                n(summary.exact_duplicates)
            ),
        ),
        ("pairs at or above the threshold".into(), format!("{} (copies included)", n(pairs))),
        ("pipeline".into(), dedup.pipeline().id().to_string()),
    ];
    if summary.kept_by_decision > 0 {
        rows.push(("kept by review decisions".into(), n(summary.kept_by_decision)));
    }
    if summary.against > 0 {
        rows.push(("against an index of".into(), format!("{} documents", n(summary.against))));
    }
    if summary.capped_buckets > 0 {
        rows.push(("large buckets paired as stars".into(), n(summary.capped_buckets)));
    }
    if summary.skipped > 0 {
        rows.push(("skipped (bad records)".into(), n(summary.skipped)));
    }
    if summary.replaced > 0 {
        rows.push(("invalid UTF-8 replaced".into(), n(summary.replaced)));
    }
    rows.push((
        "time".into(),
        format!(
            "{:.2} s (read and sketch {:.2} s, search and verify {:.2} s, write {:.2} s), then this report",
            figures.started.elapsed().as_secs_f64(),
            figures.read_time.as_secs_f64(),
            figures.search_time.as_secs_f64(),
            figures.write_time.as_secs_f64()
        ),
    ));
    rows.push(("peak memory".into(), peak_memory().unwrap_or_else(|| "unknown".into())));
    page.summary = rows;
    Ok(page.render())
}

fn dedup_config(args: &DedupArgs) -> Result<DedupConfig, Failure> {
    let usage = |m: String| Failure::Usage(anyhow!(m));
    let lsh_weights = match args.lsh_weights.as_deref() {
        None => None,
        Some(&[fp, fn_]) => Some((fp, fn_)),
        Some(other) => {
            return Err(usage(format!("--lsh-weights takes two numbers, got {}", other.len())))
        }
    };
    let search = SearchSpec {
        method: choice("--method", args.method.as_deref())?,
        threshold: Some(args.threshold),
        hamming: args.hamming,
        verify: choice("--verify", args.verify.as_deref())?,
        bands: args.bands,
        rows: args.rows,
        recall: args.recall,
        lsh_weights,
        keep: Some(args.keep.clone()),
        max_bucket: args.max_bucket,
        star_width: args.star_width,
    };
    let config = search.resolve().map_err(search_failure)?;
    Ok(DedupConfig {
        spill_dir: if args.in_memory {
            None
        } else {
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
                return Err(usage(format!(
                    "{given}: not a directory (give --spill-dir DIR with room for about 700 \
                     bytes per document, or --in-memory)"
                )));
            }
            Some(dir)
        },
        ..config
    })
}

/// A contradiction among the search options, with the option spelled as a flag.
pub(crate) fn search_failure(e: SearchSpecError) -> Failure {
    Failure::Usage(anyhow!("--{} {}", e.option.replace('_', "-"), e.message))
}

/// The second pass writes each record to `--output` (kept) or `--dropped`, newline-ended, and
/// stops when standard output is gone and nothing else is written.
impl neardup_corpus::dedup::RecordSink for Outputs {
    type Error = Failure;

    fn record(&mut self, keep: bool, record: &[u8]) -> Result<(), Failure> {
        let Some(out) = &mut self.records[usize::from(!keep)] else { return Ok(()) };
        Ok(out.record(record)?)
    }

    fn rows(
        &mut self,
        batch: &neardup_corpus::columnar::RecordBatch,
        marks: &[Option<bool>],
    ) -> Result<(), Failure> {
        for (i, out) in self.records.iter_mut().enumerate() {
            if let Some(out) = out {
                out.rows(batch, marks, i == 0)?;
            }
        }
        Ok(())
    }

    fn source_done(&mut self) -> Result<(), Failure> {
        stop_if_stdout_gone(self, false)
    }
}

/// The first pass's news, on the progress line.
struct Observer<'a> {
    progress: &'a Progress,
}

impl neardup_corpus::dedup::Observer for Observer<'_> {
    fn skipped(&mut self, error: &InputError) {
        self.progress.println(&format!("neardup: skipped: {error}"));
    }

    fn progress(&mut self, documents: u64, bytes: u64) {
        self.progress.documents(documents, bytes);
    }
}
