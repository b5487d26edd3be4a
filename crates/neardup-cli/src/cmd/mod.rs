//! One module per subcommand.

pub mod compare;
pub mod dedup;
pub mod fingerprint;
pub mod idf;
pub mod options;
pub mod overlap;
pub mod params;
pub mod profile;
pub mod progress;
pub mod report;
pub mod search_args;
pub mod serve;
pub mod store;

use std::io::{self, Write};

use clap::Args;
use neardup::{BuildError, Pipeline, PRESETS};

use crate::args::PipelineArgs;
use crate::Failure;

/// Maps a write error on standard output: a broken pipe is remembered (and ends the run with
/// exit 0).
pub fn output_error(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        neardup_corpus::write::mark_stdout_closed();
        Failure::Reported
    } else {
        Failure::Runtime(anyhow::anyhow!(
            "writing standard output: {}",
            neardup_corpus::read::io_message(&e)
        ))
    }
}

/// Builds the pipeline from the options; spec mistakes are usage errors.
pub fn build_pipeline(args: &PipelineArgs) -> Result<Pipeline, Failure> {
    build_pipeline_from(args, "default")
}

/// Builds the pipeline, starting from `default_preset` when no --preset is given.
pub fn build_pipeline_from(args: &PipelineArgs, default_preset: &str) -> Result<Pipeline, Failure> {
    let spec = args.to_spec_from(default_preset).map_err(Failure::Usage)?;
    Pipeline::new(spec).map_err(|e| match e {
        BuildError::UnknownPreset { .. } | BuildError::InvalidSpec { .. } => {
            Failure::Usage(e.into())
        }
        other => Failure::Runtime(other.into()),
    })
}

/// Prints the presets.
pub fn presets() -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    for p in PRESETS {
        writeln!(out, "{:<12} {}", p.name, p.description).map_err(output_error)?;
    }
    Ok(())
}

/// Options of `neardup spec`.
#[derive(Debug, Args)]
pub struct SpecArgs {
    #[command(flatten)]
    pipeline: PipelineArgs,
}

/// Prints the resolved spec.
pub fn spec(args: SpecArgs) -> Result<(), Failure> {
    let pipeline = build_pipeline(&args.pipeline)?;
    let json = serde_json::to_string_pretty(pipeline.spec()).map_err(anyhow::Error::from)?;
    writeln!(io::stdout().lock(), "{json}").map_err(output_error)?;
    Ok(())
}
