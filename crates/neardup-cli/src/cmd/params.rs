//! `neardup params`: the LSH bands and rows for a threshold.

use std::io::{self, Write};

use clap::Args;
use neardup::sketch::{optimal_params, params_for_recall, MAX_LSH_NUM_PERM};
use serde_json::json;

use crate::cmd::output_error;
use crate::Failure;

/// Options of `neardup params`.
#[derive(Debug, Args)]
#[command(
    after_help = "The choice is datasketch's MinHashLSH's: minimise w_fp * FP + w_fn * FN, where FP is the
area under the collision curve 1 - (1 - s^r)^b below the threshold and FN the area above it
missed, over b = 1..num_perm and r = 1..num_perm/b (first minimum wins). A choice with fewer
than 2 bands is refused, as datasketch refuses it.

With --recall R, the choice is dedup's instead: among b x r <= num_perm, the banding with the
smallest false-positive area under which a pair exactly at the threshold becomes a candidate
with probability at least R (`neardup dedup` uses R = 0.99 by default).

Examples:
  neardup params --threshold 0.8 --num-perm 128
  neardup params --threshold 0.8 --recall 0.99"
)]
pub struct ParamsArgs {
    /// Jaccard similarity threshold, in [0, 1].
    #[arg(long, value_name = "T")]
    threshold: f64,

    /// MinHash values per signature (at most 65536; neardup's own sketches take at most 1024,
    /// datasketch's any number).
    #[arg(long, default_value_t = 128, value_name = "K")]
    num_perm: usize,

    /// Weights of false positives and false negatives, summing to 1 [default: 0.5,0.5].
    #[arg(long, value_delimiter = ',', value_name = "FP,FN", conflicts_with = "recall")]
    weights: Option<Vec<f64>>,

    /// Instead of weights: the probability, in (0, 1), that a pair exactly at the threshold
    /// becomes a candidate (dedup's choice).
    #[arg(long, value_name = "R")]
    recall: Option<f64>,

    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: ParamsArgs) -> Result<(), Failure> {
    let usage = |m: String| Failure::Usage(anyhow::anyhow!(m));
    if args.num_perm > MAX_LSH_NUM_PERM {
        return Err(usage(format!("--num-perm must be at most {MAX_LSH_NUM_PERM}")));
    }
    let weights = match args.weights.as_deref() {
        None => (0.5, 0.5),
        Some(&[fp, fnn]) => (fp, fnn),
        Some(_) => {
            return Err(usage("--weights takes two numbers, FP,FN (for example 0.5,0.5)".into()))
        }
    };
    let p = match args.recall {
        Some(r) => params_for_recall(args.threshold, args.num_perm, r),
        None => optimal_params(args.threshold, args.num_perm, weights),
    }
    .map_err(|e| usage(e.to_string()))?;
    let accepted = p.bands >= 2;
    if !accepted && args.recall.is_none() {
        // The weighted choice is datasketch's: give what it gives, its refusal included.
        return Err(usage(format!(
            "at threshold {} with {} permutations the choice is {} band(s) of {} rows, which \
             datasketch's MinHashLSH refuses (\"The number of bands are too small (b < 2)\"); \
             lower the threshold, give more permutations, or use --recall for dedup's choice",
            args.threshold, args.num_perm, p.bands, p.rows
        )));
    }
    let probability = p.collision_probability(args.threshold);
    let mut out = io::stdout().lock();
    if args.json {
        let mut v = json!({
            "threshold": args.threshold, "num_perm": args.num_perm,
            "bands": p.bands, "rows": p.rows,
            "false_positive": p.false_positive, "false_negative": p.false_negative,
            "candidate_probability": probability, "datasketch_accepts": accepted,
        });
        match args.recall {
            Some(r) => v["recall"] = json!(r),
            None => {
                v["weights"] = json!([weights.0, weights.1]);
                v["error"] = json!(p.error(weights));
            }
        }
        writeln!(out, "{v}").map_err(output_error)?;
        return Ok(());
    }
    let mut rows = vec![
        ("bands (b)", p.bands.to_string()),
        ("rows (r)", p.rows.to_string()),
        ("false positive area", format!("{:.6}", p.false_positive)),
        ("false negative area", format!("{:.6}", p.false_negative)),
        ("P(candidate) at t", format!("{probability:.6}")),
    ];
    if args.recall.is_none() {
        rows.push(("weighted error", format!("{:.6}", p.error(weights))));
    }
    for (k, v) in rows {
        writeln!(out, "{k:<20} {v}").map_err(output_error)?;
    }
    if !accepted {
        writeln!(out, "note: datasketch's MinHashLSH raises ValueError for fewer than 2 bands")
            .map_err(output_error)?;
    }
    Ok(())
}
