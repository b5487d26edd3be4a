//! `neardup compare`.

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use clap::Args;
use neardup::compare;

use crate::args::{InputArgs, PipelineArgs};
use crate::cmd::profile::{Profile, ProfileArgs};
use crate::cmd::{build_pipeline, build_pipeline_from, output_error};
use crate::Failure;
use neardup_corpus::read::{read_all, Body, Record, Source};

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

With --profile, the two fingerprints of that profile and their distance instead: the Hamming
distance for the SimHash profiles (yanyiwu, jiebar, gojieba, jieba-md5), the estimated Jaccard
for datasketch, the Jaccard of the min_hash token sets for lucene.

With --html, a page instead of the table: every measure, and the two texts side by side with
the passages they share marked (runs of 3 words, or of 4 characters for Chinese and Japanese).
One self-contained file: `neardup compare --html a.txt b.txt > compare.html`.

Examples:
  neardup compare examples/data/zh/news_a.txt examples/data/zh/news_b.txt
  neardup compare --html examples/data/en/report_a.txt examples/data/en/report_b.txt > compare.html
  neardup compare --text 'the cat sat on the mat' --text 'the cat sat on a mat' --json
  neardup compare --profile gojieba --topn 20 a.txt b.txt")]
pub struct CompareArgs {
    /// Two files (or one file and one --text, or `-` for standard input).
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,

    /// A document given directly (repeatable).
    #[arg(long, value_name = "STRING")]
    text: Vec<String>,

    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "html")]
    json: bool,

    /// Print an HTML page instead: every measure, and the two texts side by side with the
    /// passages they share marked (self-contained; redirect it to a file and open it).
    #[arg(long, conflicts_with = "profile")]
    html: bool,

    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    pipeline: PipelineArgs,

    #[command(flatten)]
    profile: ProfileArgs,
}

pub fn run(args: CompareArgs) -> Result<(), Failure> {
    let sources = Source::from_args(&args.files, &args.text)?;
    let mut records: Vec<Record> = Vec::new();
    let mut failure = None;
    let _ = read_all(&sources, &args.input.read_options(), |item| match item {
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
    if args.profile.profile.is_some() {
        return compare_profiles(&args, &records);
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
    if args.html {
        let side = |r: &Record| neardup_web::compare::Side {
            title: crate::cmd::report::display_id(r.id.get()),
            text: match &r.body {
                Body::Text(t) => t.clone(),
                Body::Tokens(t) => t.join(" "),
            },
        };
        let page = neardup_web::compare::ComparePage {
            a: side(&records[0]),
            b: side(&records[1]),
            measures: rows.iter().map(|(n, v)| (n.to_string(), v.clone())).collect(),
        };
        out.write_all(page.render().as_bytes()).map_err(output_error)?;
        return out.flush().map_err(output_error);
    }
    for (name, value) in rows {
        writeln!(out, "{name:<20} {value}").map_err(output_error)?;
    }
    Ok(())
}

/// The distance of two fingerprints of one profile: `(measure, value, bits)`.
fn profile_distance(
    a: &serde_json::Value,
    b: &serde_json::Value,
) -> Result<(&'static str, serde_json::Value, Option<usize>), Failure> {
    Ok(if let (Some(x), Some(y)) = (a["bits"].as_str(), b["bits"].as_str()) {
        // The recipe's distance: its printed bit strings, compared character by character.
        // Strings of other lengths (Go prints int64's minimum with a sign and 64 digits)
        // have none: then the distance of the values, never a made-up 0.
        match neardup::compat::recipes::bit_distance(x, y) {
            Some(d) => ("hamming", serde_json::json!(d), Some(x.len())),
            None => {
                let value =
                    |v: &serde_json::Value| v["simhash_u64"].as_u64().or(v["simhash_u32"].as_u64());
                let (Some(p), Some(q)) = (value(a), value(b)) else {
                    return Err(Failure::Runtime(anyhow::anyhow!(
                        "the two fingerprints print with {} and {} characters: they cannot \
                         be compared",
                        x.len(),
                        y.len()
                    )));
                };
                let width = if a["simhash_u64"].is_u64() { 64 } else { 32 };
                ("hamming", serde_json::json!((p ^ q).count_ones()), Some(width))
            }
        }
    } else if let (Some(x), Some(y)) = (a["simhash_u64"].as_u64(), b["simhash_u64"].as_u64()) {
        ("hamming", serde_json::json!((x ^ y).count_ones()), Some(64))
    } else if let (Some(x), Some(y)) = (a["minhash"].as_array(), b["minhash"].as_array()) {
        let equal = x.iter().zip(y).filter(|(p, q)| p == q).count();
        ("jaccard_estimate", serde_json::json!(equal as f64 / x.len().max(1) as f64), None)
    } else {
        let set = |v: &serde_json::Value| -> std::collections::BTreeSet<String> {
            v["min_hash_tokens"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_str().map(String::from))
                .collect()
        };
        let (x, y) = (set(a), set(b));
        let union = x.union(&y).count();
        let j = if union == 0 { 0.0 } else { x.intersection(&y).count() as f64 / union as f64 };
        ("jaccard_tokens", serde_json::json!(j), None)
    })
}

/// `compare --profile`: both fingerprints of the profile and their distance.
fn compare_profiles(args: &CompareArgs, records: &[Record]) -> Result<(), Failure> {
    let profile =
        Profile::build(&args.profile, &args.pipeline, false, false)?.expect("a profile is given");
    let pipeline = build_pipeline_from(&args.pipeline, Profile::default_preset(&args.profile))?;
    let mut scratch = neardup::Scratch::default();
    let mut fps = Vec::with_capacity(2);
    for r in records {
        let fp = profile
            .fingerprint(&pipeline, &r.id, &r.body, &mut scratch)
            .map_err(|m| Failure::Runtime(anyhow::anyhow!("{}: {m}", r.id.get())))?;
        fps.push(fp);
    }
    let (a, b) = (&fps[0], &fps[1]);
    let name = args.profile.profile.map(|p| p.name()).unwrap_or_default();
    let (measure, value, width) = profile_distance(a, b)?;
    let mut out = io::stdout().lock();
    if args.json {
        let v = serde_json::json!({"profile": name, measure: value, "bits": width, "a": a, "b": b});
        let json = serde_json::to_string_pretty(&v).map_err(anyhow::Error::from)?;
        writeln!(out, "{json}").map_err(output_error)?;
        return Ok(());
    }
    match width {
        Some(w) => writeln!(out, "{name} {measure:<12} {value} / {w} bits"),
        None => writeln!(out, "{name} {measure:<12} {value}"),
    }
    .map_err(output_error)?;
    for (label, fp) in [("a", a), ("b", b)] {
        let shown = fp.get("bits").or(fp.get("simhash")).cloned().unwrap_or_default();
        writeln!(out, "{label:<20} {}", shown.as_str().unwrap_or(&shown.to_string()))
            .map_err(output_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bit_strings_of_other_lengths_are_compared_by_value_never_as_zero() {
        // Go prints int64's minimum as "-1" and 63 zeros: 65 characters beside 64.
        let min = json!({"bits": format!("-1{}", "0".repeat(63)), "simhash_u64": 1u64 << 63});
        let one = json!({"bits": format!("{:064b}", 1), "simhash_u64": 1u64});
        let (measure, d, width) = profile_distance(&min, &one).expect("comparable");
        assert_eq!((measure, d, width), ("hamming", json!(2), Some(64)));
        // Without values, it is an error, not a distance.
        let e = profile_distance(&json!({"bits": "101"}), &json!({"bits": "10"}));
        assert!(e.is_err());
        // Same lengths: the recipe's own distance, character by character.
        let d = profile_distance(&json!({"bits": "1010"}), &json!({"bits": "1001"})).expect("ok");
        assert_eq!(d.1, json!(2));
    }
}
