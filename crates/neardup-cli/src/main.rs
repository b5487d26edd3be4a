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
    /// The option table: every option of the pipeline, the search and the passage check, with
    /// what it takes, its default and its spelling on each surface (--json for the rows).
    Options(cmd::options::OptionsArgs),
    /// Build the HTML report of a dedup run from its --clusters (and --pairs) output and its
    /// input: the page `dedup --report` writes.
    Report(cmd::report::ReportArgs),
    /// Serve collections over HTTP: similar-text search and near-duplicate checks on an
    /// embedded store or PostgreSQL.
    Serve(cmd::serve::ServeArgs),
    /// A service's store: copy its collections to another store (embedded or PostgreSQL).
    #[command(subcommand)]
    Store(cmd::store::StoreCommand),
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
            Ok(e) if e.is_usage() => Failure::Usage(e.into()),
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
    // The help of every flag in the library's option table comes from the table.
    let matches =
        cmd::options::with_table_help(<Cli as clap::CommandFactory>::command()).get_matches();
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Fingerprint(args) => cmd::fingerprint::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Dedup(args) => cmd::dedup::run(args),
        Command::Idf(command) => cmd::idf::run(command),
        Command::Params(args) => cmd::params::run(args),
        Command::Overlap(args) => cmd::overlap::run(args),
        Command::Presets => cmd::presets(),
        Command::Options(args) => cmd::options::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Spec(args) => cmd::spec(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Store(command) => cmd::store::run(command),
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

    /// clap checks the definitions (unique names, valid defaults) of every subcommand, with
    /// the help the option table gives.
    #[test]
    fn cli_definitions_are_valid() {
        crate::cmd::options::with_table_help(super::Cli::command()).debug_assert();
    }

    /// Every flag of the option table shows the table's default in `--help`, and its doc: the
    /// table, not a hand list, is what each command is checked against.
    #[test]
    fn every_flag_of_the_option_table_shows_its_default_in_help() {
        use neardup::{OptionGroup, OptionKind};
        let mut cli = crate::cmd::options::with_table_help(super::Cli::command());
        let help = |cli: &mut clap::Command, name: &str| -> String {
            cli.find_subcommand_mut(name).expect("subcommand").render_long_help().to_string()
        };
        let (dedup, overlap) = (help(&mut cli, "dedup"), help(&mut cli, "overlap"));
        for row in neardup::option_table() {
            let Some(flag) = row.cli.as_deref() else { continue };
            let text = match row.group {
                OptionGroup::Passages => &overlap,
                OptionGroup::Pipeline | OptionGroup::Search => &dedup,
                _ => continue,
            };
            let at = text.find(&format!("{flag} ")).or_else(|| text.find(&format!("{flag}\n")));
            let at = at.unwrap_or_else(|| panic!("{flag} is not in the help"));
            let next = text[at + 2..].find("\n      -").map_or(text.len(), |n| at + 2 + n);
            let shown: String = text[at..next].split_whitespace().collect::<Vec<_>>().join(" ");
            let words: String = row.doc.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
            assert!(shown.to_lowercase().contains(&words.to_lowercase()), "{flag}: {shown}");
            if row.kind != OptionKind::Flag && !row.default.is_null() {
                let default = match &row.default {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Array(a) if a.is_empty() => "none".into(),
                    v => v.to_string(),
                };
                assert!(shown.contains(&format!("[default: {default}]")), "{flag}: {shown}");
            }
        }
    }

    /// The long flags of a subcommand.
    fn flags(command: &str) -> Vec<String> {
        let cli = super::Cli::command();
        let sub = cli.find_subcommand(command).expect("subcommand");
        sub.get_arguments().filter_map(|a| a.get_long().map(str::to_string)).collect()
    }

    /// The one option table: every option the table spells for the command line is a flag of
    /// the commands of its group (pipeline and search options of `dedup`, passage options of
    /// `overlap`).
    #[test]
    fn the_commands_follow_the_option_table() {
        use neardup::OptionGroup;
        let (dedup, overlap) = (flags("dedup"), flags("overlap"));
        for row in neardup::option_table() {
            let Some(flag) = row.cli.as_deref() else { continue };
            let long = flag.trim_start_matches("--").to_string();
            match row.group {
                OptionGroup::Pipeline | OptionGroup::Search => {
                    assert!(dedup.contains(&long), "dedup lacks {flag}")
                }
                OptionGroup::Passages => assert!(overlap.contains(&long), "overlap lacks {flag}"),
                _ => {}
            }
        }
    }
}
