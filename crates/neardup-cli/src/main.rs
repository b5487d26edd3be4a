//! `neardup`: near-duplicate text detection from the command line.
//!
//! Glue only: argument parsing, input and output. The work happens in the `neardup` library.
//! Streams are a contract: stdout carries data only, diagnostics go to stderr, a closed stdout
//! pipe ends the run quietly with exit code 0. Exit codes: 0 success, 1 runtime error (including
//! bad records without --skip-bad), 2 usage error.

mod args;
mod cmd;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Near-duplicate text detection: SimHash and MinHash fingerprints, similarity, and Chinese
/// segmentation with jieba.
#[derive(Debug, Parser)]
#[command(name = "neardup", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// One command is parsed per run: the size of the largest does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Fingerprint documents: one JSON object per document on stdout, in input order.
    Fingerprint(cmd::fingerprint::FingerprintArgs),
    /// Compare two documents: SimHash distance, estimated and exact Jaccard, cosine, edit
    /// similarity.
    Compare(cmd::compare::CompareArgs),
    /// Deduplicate a corpus: near-duplicate clusters, verified pairs, and the kept records.
    Dedup(cmd::dedup::DedupArgs),
    /// Inverse document frequencies.
    #[command(subcommand)]
    Idf(cmd::idf::IdfCommand),
    /// LSH bands and rows for a Jaccard threshold, as datasketch's MinHashLSH chooses them.
    Params(cmd::params::ParamsArgs),
    /// Find the passages of each query copied from a collection (the thesis check), or shared
    /// between the inputs.
    Overlap(cmd::overlap::OverlapArgs),
    /// List the pipeline presets.
    Presets,
    /// Build the HTML report of a dedup run from its --clusters (and --pairs) output and its
    /// input: the page `dedup --report` writes.
    Report(cmd::report::ReportArgs),
    /// Serve collections over HTTP: similar-text search and near-duplicate checks on an
    /// embedded store.
    Serve(cmd::serve::ServeArgs),
    /// Print the pipeline spec that the given options resolve to, as JSON (for --spec).
    Spec(cmd::SpecArgs),
}

/// Why a command failed, which decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// The user asked for something invalid (exit 2).
    Usage(anyhow::Error),
    /// Something went wrong while working (exit 1).
    Runtime(anyhow::Error),
    /// Errors were already reported on stderr (exit 1).
    Reported,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        let e = e.into();
        if is_broken_pipe(&e) {
            return Failure::Reported;
        }
        // The corpus crate says whose a failure is: the caller's (exit 2) or the run's.
        match e.downcast::<neardup_corpus::CorpusError>() {
            Ok(neardup_corpus::CorpusError::Usage(m)) => Failure::Usage(anyhow::anyhow!(m)),
            Ok(neardup_corpus::CorpusError::StdoutClosed) => Failure::Reported,
            // A directory named as an index that holds none is the caller's mistake.
            Ok(neardup_corpus::CorpusError::Dedup(e @ neardup::DedupError::NoIndex { .. })) => {
                Failure::Usage(e.into())
            }
            Ok(other) => Failure::Runtime(other.into()),
            Err(e) => match e.downcast::<neardup::DedupError>() {
                Ok(e @ neardup::DedupError::NoIndex { .. }) => Failure::Usage(e.into()),
                Ok(e) => Failure::Runtime(e.into()),
                Err(e) => Failure::Runtime(e),
            },
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    neardup_corpus::write::init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fingerprint(args) => cmd::fingerprint::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Dedup(args) => cmd::dedup::run(args),
        Command::Idf(command) => cmd::idf::run(command),
        Command::Params(args) => cmd::params::run(args),
        Command::Overlap(args) => cmd::overlap::run(args),
        Command::Presets => cmd::presets(),
        Command::Report(args) => cmd::report::run(args),
        Command::Spec(args) => cmd::spec(args),
        Command::Serve(args) => cmd::serve::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Runtime(e) | Failure::Usage(e)) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            let _ = writeln!(io::stderr(), "neardup: error: {e:#}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(e)) => {
            let _ = writeln!(io::stderr(), "neardup: error: {e:#}");
            ExitCode::from(1)
        }
        Err(Failure::Reported) => {
            // A closed stdout is a normal end for a filter (`neardup ... | head`).
            if stdout_closed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn stdout_closed() -> bool {
    neardup_corpus::write::stdout_closed()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap checks the definitions (unique names, valid defaults) of every subcommand.
    #[test]
    fn cli_definitions_are_valid() {
        super::Cli::command().debug_assert();
    }

    /// The long flags of a subcommand.
    fn flags(command: &str) -> Vec<String> {
        let cli = super::Cli::command();
        let sub = cli.find_subcommand(command).expect("subcommand");
        sub.get_arguments().filter_map(|a| a.get_long().map(str::to_string)).collect()
    }

    /// The one option table: every pipeline and search option of the library is a flag of
    /// `dedup`, spelled as its name with dashes (`lsh_weights` is `--lsh-weights`; a switch on
    /// by default as `--no-` and its name, `--no-nfkc`), and every passage option one of
    /// `overlap`. A surface that lacks one fails here.
    #[test]
    fn the_commands_follow_the_option_table() {
        let flag = |name: &str| name.replace('_', "-");
        let has = |flags: &[String], name: &str| {
            flags.contains(&flag(name)) || flags.contains(&format!("no-{}", flag(name)))
        };
        let dedup = flags("dedup");
        let pipeline = neardup::PipelineOptions::NAMES.iter().copied();
        for name in pipeline.chain(neardup::SearchSpec::OPTIONS.iter().map(|o| o.name)) {
            assert!(has(&dedup, name), "dedup lacks --{}", flag(name));
        }
        let overlap = flags("overlap");
        // The passage check has its own units (characters, words), not the pipeline's.
        for name in neardup::overlap::OverlapOptions::NAMES {
            assert!(has(&overlap, name), "overlap lacks --{}", flag(name));
        }
    }
}
