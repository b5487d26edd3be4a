//! `neardup fingerprint`.

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use clap::Args;
use neardup::{Pipeline, Scratch, Sketches, WeightedFeature};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::args::{thread_pool, InputArgs, PipelineArgs, MAX_THREADS};
use crate::cmd::profile::{Profile, ProfileArgs};
use crate::cmd::{build_pipeline_from, output_error};
use crate::Failure;
use neardup_corpus::read::{read_all, Record, Source};

/// Options of `neardup fingerprint`.
#[derive(Debug, Args)]
#[command(after_help = "Output, one JSON object per document, in input order:
  {\"id\": ..., \"simhash\": \"<hex>\", \"minhash\": [...], \"features\": N, \"explain\": [...]}
simhash is lowercase hex (16 digits for 64 bits); minhash appears with --minhash; features is
the number of distinct features; explain (with --explain) lists the weighted features, heaviest
first. An empty document, or one of only stop words, has simhash 0 and 0 features.

Bad input: a file that is not UTF-8 is reported with its byte offset and skipped, the other files
are still read, and the exit code is 1 (--lossy replaces bad bytes instead). In JSONL, a
malformed line, a line without the text field or an oversized document stops the run after
everything before it was written (exit 1); with --skip-bad it is reported and skipped (exit 0).

Examples:
  neardup fingerprint examples/data/en/*.txt
  neardup fingerprint corpus.jsonl --minhash --preset zh-news
  neardup fingerprint --text '你妈妈叫你回家吃饭啊' --preset zh-keywords --explain")]
pub struct FingerprintArgs {
    /// Input files: JSON Lines when named .jsonl, .ndjson or .json (or with --format jsonl),
    /// otherwise plain text, one document per file. `-` reads standard input (plain text unless
    /// --format jsonl).
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,

    /// A document given directly (repeatable).
    #[arg(long, value_name = "STRING")]
    text: Vec<String>,

    /// Also output a MinHash signature (`minhash`, num_perm integers).
    #[arg(long)]
    minhash: bool,

    /// Also output the weighted features used (`explain`).
    #[arg(long)]
    explain: bool,

    /// Worker threads, 1 to 256 (default: all cores).
    #[arg(long, short = 'j', value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
    threads: Option<u16>,

    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    pipeline: PipelineArgs,

    #[command(flatten)]
    profile: ProfileArgs,
}

#[derive(Serialize)]
struct Output<'a> {
    id: &'a RawValue,
    simhash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    minhash: Option<&'a [u32]>,
    features: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    explain: Option<&'a [WeightedFeature]>,
}

/// Documents per parallel batch, and bytes of text per batch: enough to keep every core busy,
/// small enough that memory follows the batch, not the corpus.
const BATCH_DOCS: usize = 4096;
const BATCH_BYTES: usize = 64 << 20;

pub fn run(args: FingerprintArgs) -> Result<(), Failure> {
    let opts = args.input.read_options();
    let sources = Source::from_args_expanded(&args.files, &args.text, &opts, |e| {
        eprintln!("neardup: {}: {e}", if e.is_notice() { "note" } else { "skipped" })
    })?;
    if sources.is_empty() {
        return Err(Failure::Usage(anyhow::anyhow!(
            "no input: give FILE arguments, `-` for standard input, or --text STRING"
        )));
    }
    thread_pool(args.threads)?;
    let profile = Profile::build(&args.profile, &args.pipeline, args.minhash, args.explain)?;
    let pipeline = build_pipeline_from(&args.pipeline, Profile::default_preset(&args.profile))?;
    let mut sketches = Sketches::SIMHASH;
    if args.minhash {
        sketches = sketches | Sketches::MINHASH;
    }
    if args.explain {
        sketches = sketches | Sketches::EXPLAIN;
    }

    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut batch: Vec<Record> = Vec::new();
    let mut batch_bytes = 0usize;
    let (mut errors, mut skipped, mut replaced) = (0usize, 0usize, 0usize);
    let mut write_error: Option<Failure> = None;
    let jsonl = sources.iter().any(|s| opts.format_of(s) == neardup_corpus::read::Format::Jsonl);
    let mut refused = Refused { skip: args.input.skip_bad, errors: 0, skipped: 0 };

    let flow = read_all(&sources, &opts, |item| {
        match item {
            Ok(record) => {
                replaced += record.replaced;
                batch_bytes += record.body.len();
                batch.push(record);
                if batch.len() >= BATCH_DOCS || batch_bytes >= BATCH_BYTES {
                    batch_bytes = 0;
                    if let Err(e) = process(
                        &pipeline,
                        profile.as_ref(),
                        sketches,
                        &mut batch,
                        &mut out,
                        &mut refused,
                    ) {
                        write_error = Some(e);
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            }
            Err(e) => {
                // Write what came before, so an error never loses accepted documents.
                if let Err(e) = process(
                    &pipeline,
                    profile.as_ref(),
                    sketches,
                    &mut batch,
                    &mut out,
                    &mut refused,
                ) {
                    write_error = Some(e);
                    return ControlFlow::Break(());
                }
                batch_bytes = 0;
                if args.input.skip_bad && e.skippable() {
                    eprintln!("neardup: {}: {e}", if e.is_notice() { "note" } else { "skipped" });
                    skipped += 1;
                    ControlFlow::Continue(())
                } else {
                    eprintln!("neardup: error: {e}");
                    errors += 1;
                    // A bad file is skipped and the rest read; a bad JSONL record or a broken
                    // stream stops the run.
                    if (jsonl && !e.fatal_for_source()) || !e.skippable() {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                }
            }
        }
    });
    if let Some(e) = write_error {
        return Err(e);
    }
    if flow.is_continue() {
        process(&pipeline, profile.as_ref(), sketches, &mut batch, &mut out, &mut refused)?;
    }
    out.flush().map_err(output_error)?;
    errors += refused.errors;
    skipped += refused.skipped;
    if skipped > 0 {
        eprintln!(
            "neardup: skipped {}",
            neardup::count_of(skipped as u64, "bad record", "bad records")
        );
    }
    if replaced > 0 {
        eprintln!(
            "neardup: replaced {} with U+FFFD (--lossy)",
            neardup::count_of(replaced as u64, "invalid UTF-8 sequence", "invalid UTF-8 sequences")
        );
    }
    if errors > 0 {
        return Err(Failure::Reported);
    }
    Ok(())
}

/// Documents a profile cannot fingerprint (jieba-md5 without a Han word): reported by id, and
/// skipped and counted under `--skip-bad`, else counted as errors (exit 1 at the end).
struct Refused {
    skip: bool,
    errors: usize,
    skipped: usize,
}

fn process<W: Write>(
    pipeline: &Pipeline,
    profile: Option<&Profile>,
    sketches: Sketches,
    batch: &mut Vec<Record>,
    out: &mut W,
    refused: &mut Refused,
) -> Result<(), Failure> {
    if batch.is_empty() {
        return Ok(());
    }
    if let Some(profile) = profile {
        let lines: Vec<Result<serde_json::Value, String>> = batch
            .par_iter()
            .map_init(Scratch::default, |scratch, record| {
                profile.fingerprint(pipeline, &record.id, &record.body, scratch)
            })
            .collect();
        for (record, line) in batch.iter().zip(&lines) {
            match line {
                Ok(line) => {
                    serde_json::to_writer(&mut *out, line).map_err(|e| output_error(e.into()))?;
                    out.write_all(b"\n").map_err(output_error)?;
                }
                Err(message) if refused.skip => {
                    eprintln!("neardup: skipped: {}: {message}", record.id.get());
                    refused.skipped += 1;
                }
                Err(message) => {
                    eprintln!("neardup: error: {}: {message}", record.id.get());
                    refused.errors += 1;
                }
            }
        }
        batch.clear();
        return Ok(());
    }
    let fingerprints: Vec<_> = batch
        .par_iter()
        .map_init(Scratch::default, |scratch, record| {
            pipeline.fingerprint(record.body.as_document(), scratch, sketches)
        })
        .collect();
    for (record, fp) in batch.iter().zip(&fingerprints) {
        let line = Output {
            id: &record.id,
            simhash: fp.simhash.to_hex(),
            minhash: fp.minhash.as_ref().map(|m| m.values()),
            features: fp.features,
            explain: fp.explain.as_deref(),
        };
        serde_json::to_writer(&mut *out, &line).map_err(|e| output_error(e.into()))?;
        out.write_all(b"\n").map_err(output_error)?;
    }
    batch.clear();
    Ok(())
}
