//! What 32-bit feature hashes cost in Jaccard accuracy against 64-bit ones, on real documents.
//!
//! hash_width PRESET CORPUS.jsonl [MAX_DOCS]
//!
//! Takes the `text` field of the first MAX_DOCS lines (default 5,000), makes each document's
//! features with the preset (as `neardup dedup` does), and computes the exact Jaccard of every
//! pair twice: over the distinct 64-bit feature hashes, and over their high 32 bits (what dedup
//! and the service keep, `dedup/sketch.rs`). Prints one JSON object: the pairs compared, how many
//! differ and by how much, and how many would change side at the usual thresholds.

use std::io::BufRead;

use neardup::sketch::jaccard_sorted as jaccard;
use neardup::{Document, Pipeline, PipelineSpec, Scratch};
use rayon::prelude::*;

const THRESHOLDS: [f64; 4] = [0.5, 0.7, 0.8, 0.9];

#[derive(Default, Clone)]
struct Tally {
    pairs: u64,
    differ: u64,
    max_error: f64,
    sum_error: f64,
    /// Pairs at 64-bit Jaccard >= 0.3: those a threshold could concern.
    near: u64,
    near_differ: u64,
    near_max_error: f64,
    flips: [u64; THRESHOLDS.len()],
}

impl Tally {
    fn add(mut self, j64: f64, j32: f64) -> Tally {
        let e = (j32 - j64).abs();
        self.pairs += 1;
        if e > 0.0 {
            self.differ += 1;
            self.sum_error += e;
            self.max_error = self.max_error.max(e);
        }
        if j64 >= 0.3 {
            self.near += 1;
            if e > 0.0 {
                self.near_differ += 1;
                self.near_max_error = self.near_max_error.max(e);
            }
        }
        for (k, t) in THRESHOLDS.iter().enumerate() {
            if (j64 >= *t) != (j32 >= *t) {
                self.flips[k] += 1;
            }
        }
        self
    }

    fn merge(mut self, o: Tally) -> Tally {
        self.pairs += o.pairs;
        self.differ += o.differ;
        self.sum_error += o.sum_error;
        self.max_error = self.max_error.max(o.max_error);
        self.near += o.near;
        self.near_differ += o.near_differ;
        self.near_max_error = self.near_max_error.max(o.near_max_error);
        for k in 0..THRESHOLDS.len() {
            self.flips[k] += o.flips[k];
        }
        self
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (preset, path) = match (args.get(1), args.get(2)) {
        (Some(p), Some(c)) => (p.as_str(), c.as_str()),
        _ => return Err("usage: hash_width PRESET CORPUS.jsonl [MAX_DOCS]".into()),
    };
    let max: usize = args.get(3).map_or(Ok(5_000), |n| n.parse())?;
    let pipeline = Pipeline::new(PipelineSpec::preset(preset)?)?;
    let mut scratch = Scratch::default();
    let (mut wide, mut short) = (Vec::new(), Vec::new());
    let mut features = 0usize;
    for line in std::io::BufReader::new(std::fs::File::open(path)?).lines().take(max) {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        let text = v["text"].as_str().ok_or("no text field")?;
        let mut h64: Vec<u64> =
            pipeline.features(Document::Text(text), &mut scratch).iter().map(|f| f.hash).collect();
        h64.sort_unstable();
        h64.dedup();
        let mut h32: Vec<u32> = h64.iter().map(|h| (h >> 32) as u32).collect();
        h32.sort_unstable();
        h32.dedup();
        features += h64.len();
        wide.push(h64);
        short.push(h32);
    }
    let n = wide.len();
    let tally = (0..n)
        .into_par_iter()
        .map(|i| {
            (i + 1..n).fold(Tally::default(), |t, j| {
                t.add(jaccard(&wide[i], &wide[j]), jaccard(&short[i], &short[j]))
            })
        })
        .reduce(Tally::default, Tally::merge);
    let flips: serde_json::Map<String, serde_json::Value> = THRESHOLDS
        .iter()
        .zip(tally.flips)
        .map(|(t, f)| (format!("{t}"), serde_json::json!(f)))
        .collect();
    let out = serde_json::json!({
        "preset": preset,
        "docs": n,
        "mean_features": features as f64 / n.max(1) as f64,
        "pairs": tally.pairs,
        "pairs_differing": tally.differ,
        "max_abs_error": tally.max_error,
        "mean_abs_error_where_differing": tally.sum_error / tally.differ.max(1) as f64,
        "pairs_at_or_above_0.3": tally.near,
        "of_those_differing": tally.near_differ,
        "of_those_max_abs_error": tally.near_max_error,
        "pairs_changing_side_at": flips,
    });
    println!("{out}");
    Ok(())
}
