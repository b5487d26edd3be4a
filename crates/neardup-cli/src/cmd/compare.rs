//! `neardup compare`.

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use clap::Args;
use neardup::compare;

use crate::args::{InputArgs, PipelineArgs};
use crate::cmd::{build_pipeline, output_error};
use crate::input::{read_all, Record, Source};
use crate::Failure;

/// Options of `neardup compare`.
#[derive(Debug, Args)]
#[command(after_help = "Measures:
  simhash hamming     differing bits of the two SimHash fingerprints (<= 3 of 64: near-duplicate)
  jaccard estimate    MinHash estimate of the Jaccard similarity of the feature sets
  jaccard exact       |A n B| / |A u B| of the feature sets
  weighted jaccard    sum of min weights / sum of max weights
  cosine              cosine of the TF-IDF vectors
  edit similarity     1 - Levenshtein distance / longer length, over the normalized texts
                      (not computed past 10,000 characters)
Empty documents are similar to nothing: every measure is 0.

Examples:
  neardup compare examples/data/zh/news_a.txt examples/data/zh/news_b.txt
  neardup compare --text 'the cat sat on the mat' --text 'the cat sat on a mat' --json")]
pub struct CompareArgs {
    /// Two files (or one file and one --text, or `-` for standard input).
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,

    /// A document given directly (repeatable).
    #[arg(long, value_name = "STRING")]
    text: Vec<String>,

    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,

    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub fn run(args: CompareArgs) -> Result<(), Failure> {
    let sources = Source::from_args(&args.files, &args.text);
    let mut records: Vec<Record> = Vec::new();
    let mut failure = None;
    let _ = read_all(&sources, &args.input, |item| match item {
        Ok(r) => {
            records.push(r);
            ControlFlow::Continue(())
        }
        Err(e) => {
            failure = Some(anyhow::anyhow!("{e}"));
            ControlFlow::Break(())
        }
    });
    if let Some(e) = failure {
        return Err(Failure::Runtime(e));
    }
    if records.len() != 2 {
        return Err(Failure::Usage(anyhow::anyhow!(
            "compare needs exactly two documents, got {} (two files, two --text, or one of each)",
            records.len()
        )));
    }
    let pipeline = build_pipeline(&args.pipeline)?;
    let c = compare(&pipeline, records[0].body.as_document(), records[1].body.as_document())
        .map_err(anyhow::Error::from)?;
    let mut out = io::stdout().lock();
    if args.json {
        let json = serde_json::to_string_pretty(&c).map_err(anyhow::Error::from)?;
        writeln!(out, "{json}").map_err(output_error)?;
        return Ok(());
    }
    let edit = match c.edit_similarity {
        Some(e) => format!("{e:.4}"),
        None => "- (text too long)".to_string(),
    };
    let rows = [
        ("simhash hamming", format!("{} / {} bits", c.simhash.hamming, c.simhash.bits)),
        ("simhash similarity", format!("{:.4}", c.simhash.similarity)),
        ("jaccard estimate", format!("{:.4}", c.jaccard_estimate)),
        ("jaccard exact", format!("{:.4}", c.jaccard_exact)),
        ("weighted jaccard", format!("{:.4}", c.weighted_jaccard)),
        ("cosine (tf-idf)", format!("{:.4}", c.cosine)),
        ("edit similarity", edit),
        ("features", format!("{} / {}", c.features[0], c.features[1])),
    ];
    for (name, value) in rows {
        writeln!(out, "{name:<20} {value}").map_err(output_error)?;
    }
    Ok(())
}
