//! `neardup idf build`.

use std::io::{self, BufWriter};
use std::ops::ControlFlow;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use neardup::{IdfBuilder, Scratch};

use crate::args::{InputArgs, PipelineArgs};
use crate::cmd::{build_pipeline, output_error};
use crate::Failure;
use neardup_corpus::read::{io_message, read_all, Source};
use neardup_corpus::write::{check_conflicts, Input, Output, OutputFile};

/// `neardup idf ...`.
#[derive(Debug, Subcommand)]
pub enum IdfCommand {
    /// Learn idf = ln(N / df) of every feature from a corpus, written in jieba's `feature idf`
    /// format. Use the same pipeline options (features, segmenter, stop words) as the runs that
    /// will read it with --idf.
    Build(BuildArgs),
}

/// Options of `neardup idf build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Corpus files (plain text, one document each, or JSONL with --jsonl).
    #[arg(value_name = "CORPUS", required = true)]
    corpus: Vec<PathBuf>,

    /// Output file (`-` for standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: PathBuf,

    /// Leave out features seen in fewer documents than this (they get the mean idf).
    #[arg(long, default_value_t = 1, value_name = "N")]
    min_df: u64,

    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub fn run(command: IdfCommand) -> Result<(), Failure> {
    let IdfCommand::Build(args) = command;
    let mut inputs: Vec<Input> = args
        .corpus
        .iter()
        .filter(|p| p.as_os_str() != "-")
        .map(|p| Input { what: "corpus file".into(), path: p.clone() })
        .collect();
    inputs.extend(args.pipeline.files().into_iter().map(|(what, path)| Input { what, path }));
    check_conflicts(&inputs, &[Output { option: "--output", path: args.output.clone() }])?;
    let pipeline = build_pipeline(&args.pipeline)?;
    let opts = args.input.read_options();
    let sources = Source::from_args_expanded(&args.corpus, &[], &opts, |e| {
        eprintln!("neardup: {}: {e}", if e.is_notice() { "note" } else { "skipped" })
    })?;
    let mut builder = IdfBuilder::new();
    let mut scratch = Scratch::default();
    let mut errors = 0usize;
    let jsonl = sources.iter().any(|s| opts.format_of(s) == neardup_corpus::read::Format::Jsonl);
    let flow = read_all(&sources, &opts, |item| match item {
        Ok(record) => {
            builder.begin_document();
            pipeline.for_each_feature(record.body.as_document(), &mut scratch, |f| builder.add(f));
            ControlFlow::Continue(())
        }
        Err(e) if args.input.skip_bad && e.skippable() => {
            eprintln!("neardup: {}: {e}", if e.is_notice() { "note" } else { "skipped" });
            ControlFlow::Continue(())
        }
        Err(e) => {
            eprintln!("neardup: error: {e}");
            errors += 1;
            if (jsonl && !e.fatal_for_source()) || !e.skippable() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    });
    if errors > 0 || flow.is_break() {
        return Err(Failure::Reported);
    }
    let lines = if args.output.as_os_str() == "-" {
        builder.write(BufWriter::new(io::stdout().lock()), args.min_df).map_err(output_error)?
    } else {
        let mut out = OutputFile::create("--output", &args.output)?;
        let n = builder
            .write(&mut out, args.min_df)
            .map_err(|e| anyhow::anyhow!("{}: {}", args.output.display(), io_message(&e)))?;
        out.commit()?;
        n
    };
    eprintln!(
        "neardup: {} documents, {} distinct features, {lines} written",
        builder.documents(),
        builder.features()
    );
    Ok(())
}
