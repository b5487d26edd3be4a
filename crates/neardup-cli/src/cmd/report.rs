//! `neardup report`: the HTML report of a dedup run from its `--clusters` (and `--pairs`)
//! output and its input, the page `neardup dedup --report` writes. Glue: the flags become a
//! `neardup_corpus::report::ReportJob`, the run's settings a `Dedup`.

use std::path::PathBuf;

use clap::Args;
use neardup::Dedup;
use neardup_corpus::report::ReportJob;
use neardup_web::report::{ReportLimits, MAX_CLUSTERS, MAX_MEMBERS, MAX_TEXT_CHARS};

use crate::args::{InputArgs, PipelineArgs};
use crate::cmd::build_pipeline;
use crate::cmd::search_args::{search_failure, MeasureArgs};
use crate::Failure;

/// How much of a run the report shows (shared by `dedup --report` and `report`).
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// The largest clusters shown in the report, 0 to 100,000.
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clusters_bound)]
    pub report_clusters: usize,

    /// How many of the other clusters the report shows, drawn at random (reproducibly), 0 to
    /// 100,000.
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clusters_bound)]
    pub report_sample: usize,

    /// Documents shown per cluster, the kept one included (then the least similar to it), 2 to
    /// 10,000.
    #[arg(long, default_value_t = 20, value_name = "N", value_parser = members_bound)]
    pub report_members: usize,

    /// Characters of each text shown (longer texts are cut, and the page says so), 100 to
    /// 1,000,000.
    #[arg(long, default_value_t = 3000, value_name = "N", value_parser = chars_bound)]
    pub report_text_chars: usize,
}

fn bounded(s: &str, lo: usize, hi: usize) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("{s:?} is not a whole number"))?;
    if n < lo || n > hi {
        return Err(format!("{n} is not between {lo} and {hi}"));
    }
    Ok(n)
}

fn clusters_bound(s: &str) -> Result<usize, String> {
    bounded(s, 0, MAX_CLUSTERS)
}

fn members_bound(s: &str) -> Result<usize, String> {
    bounded(s, 2, MAX_MEMBERS)
}

fn chars_bound(s: &str) -> Result<usize, String> {
    bounded(s, 100, MAX_TEXT_CHARS)
}

impl LimitArgs {
    pub fn limits(&self) -> ReportLimits {
        ReportLimits {
            largest: self.report_clusters,
            sample: self.report_sample,
            members: self.report_members,
            text_chars: self.report_text_chars,
        }
    }
}

/// Options of `neardup report`.
#[derive(Debug, Args)]
#[command(
    after_help = "Builds the HTML report of a dedup run from its outputs and its input, the page
`neardup dedup --report` writes: the summary, the histogram of the pairs' similarities (from
--pairs) with the threshold marked, the distribution of cluster sizes, and the clusters, largest
first, each with its kept document, its members' similarity to it, and any two members side by
side with their shared passages marked. One self-contained HTML file: no network, no CDN.

Give the run's input (the same files and the same input options: --text-field, --id-field, ...)
and its --clusters file; --pairs adds the histogram. Similarities to the kept document are
computed again with the pipeline and measure given here (by default those of `dedup`: give the
run's --preset, --method, --verify and --hamming if it used others). Only the chosen clusters'
documents are sketched, and only the shown ones' texts are kept: memory follows the clusters
shown, not the corpus.

Example:
  neardup dedup corpus.jsonl --clusters clusters.jsonl --pairs pairs.jsonl -o kept.jsonl
  neardup report corpus.jsonl --clusters clusters.jsonl --pairs pairs.jsonl -o report.html"
)]
pub struct ReportArgs {
    /// The run's input: JSONL files (.jsonl, .gz, .zst), directories, or `-`.
    #[arg(value_name = "INPUT", required = true)]
    inputs: Vec<PathBuf>,

    /// The run's --clusters output.
    #[arg(long, value_name = "FILE")]
    clusters: PathBuf,

    /// The run's --pairs output, for the histogram of similarities.
    #[arg(long, value_name = "FILE")]
    pairs: Option<PathBuf>,

    /// Write the report here (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: PathBuf,

    #[command(flatten)]
    measure: MeasureArgs,

    /// No summary on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,

    #[command(flatten)]
    limits: LimitArgs,

    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub fn run(args: ReportArgs) -> Result<(), Failure> {
    let pipeline = build_pipeline(&args.pipeline)?;
    // The run's settings, read by the same rules as `dedup` reads them.
    let config = args.measure.spec()?.resolve().map_err(search_failure)?;
    let threshold = config.threshold;
    let dedup = Dedup::new(&pipeline, config).map_err(|e| Failure::Usage(e.into()))?;
    let job = ReportJob {
        inputs: args.inputs,
        clusters: args.clusters,
        pairs: args.pairs,
        output: args.output,
        threshold,
        limits: args.limits.limits(),
        read: args.input.read_options_or(neardup_corpus::read::Format::Jsonl),
        files: args.pipeline.files(),
    };
    let done = job.run(&dedup, &|line| eprintln!("{line}"))?;
    if !args.quiet {
        eprintln!(
            "neardup report: {} clusters of {} shown ({} documents read), written to {}",
            done.shown,
            done.clusters,
            done.documents,
            job.output.display()
        );
    }
    Ok(())
}
