//! `neardup params`: the LSH bands and rows for a threshold.

use std::io::{self, Write};

use clap::Args;
use neardup::sketch::optimal_params;
use serde_json::json;

use crate::cmd::output_error;
use crate::Failure;

/// Options of `neardup params`.
#[derive(Debug, Args)]
#[command(
    after_help = "The choice is datasketch's MinHashLSH's: minimise w_fp * FP + w_fn * FN, where FP is the
area under the collision curve 1 - (1 - s^r)^b below the threshold and FN the area above it
missed, over b = 1..num_perm and r = 1..num_perm/b (first minimum wins). datasketch refuses a
choice with fewer than 2 bands.

Example:
  neardup params --threshold 0.8 --num-perm 128"
)]
pub struct ParamsArgs {
    /// Jaccard similarity threshold, in [0, 1].
    #[arg(long, value_name = "T")]
    threshold: f64,

    /// MinHash values per signature.
    #[arg(long, default_value_t = 128, value_name = "K")]
    num_perm: usize,

    /// Weights of false positives and false negatives, summing to 1.
    #[arg(long, value_delimiter = ',', default_values_t = [0.5, 0.5], value_name = "FP,FN")]
    weights: Vec<f64>,

    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: ParamsArgs) -> Result<(), Failure> {
    let [fp, fnn] = args.weights[..] else {
        return Err(Failure::Usage(anyhow::anyhow!(
            "--weights takes two numbers, FP,FN (for example 0.5,0.5)"
        )));
    };
    let weights = (fp, fnn);
    let p = optimal_params(args.threshold, args.num_perm, weights)
        .map_err(|e| Failure::Usage(anyhow::anyhow!(e)))?;
    let accepted = p.bands >= 2;
    let mut out = io::stdout().lock();
    if args.json {
        let v = json!({
            "threshold": args.threshold, "num_perm": args.num_perm, "weights": [weights.0, weights.1],
            "bands": p.bands, "rows": p.rows,
            "false_positive": p.false_positive, "false_negative": p.false_negative,
            "error": p.error(weights), "datasketch_accepts": accepted,
        });
        writeln!(out, "{v}").map_err(output_error)?;
        return Ok(());
    }
    let rows = [
        ("bands (b)", p.bands.to_string()),
        ("rows (r)", p.rows.to_string()),
        ("false positive area", format!("{:.6}", p.false_positive)),
        ("false negative area", format!("{:.6}", p.false_negative)),
        ("weighted error", format!("{:.6}", p.error(weights))),
    ];
    for (k, v) in rows {
        writeln!(out, "{k:<20} {v}").map_err(output_error)?;
    }
    if !accepted {
        writeln!(out, "note: datasketch's MinHashLSH raises ValueError for fewer than 2 bands")
            .map_err(output_error)?;
    }
    Ok(())
}
