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
use neardup::profile::ProfileDistance;
use neardup_corpus::read::{read_all, Record, Source};

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
            title: neardup_corpus::report::display_id(r.id.get()),
            text: r.body.as_document().display_text().into_owned(),
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

/// `compare --profile`: both fingerprints of the profile and their distance.
fn compare_profiles(args: &CompareArgs, records: &[Record]) -> Result<(), Failure> {
    let profile =
        Profile::build(&args.profile, &args.pipeline, false, false)?.expect("a profile is given");
    let pipeline = build_pipeline_from(&args.pipeline, Profile::default_preset(&args.profile))?;
    let mut scratch = neardup::Scratch::default();
    let mut fps = Vec::with_capacity(2);
    for r in records {
        let fp = profile
            .fingerprint_of(&pipeline, &r.body, &mut scratch)
            .map_err(|m| Failure::Runtime(anyhow::anyhow!("{}: {m}", r.id.get())))?;
        fps.push(fp);
    }
    let distance = fps[0].distance(&fps[1]).map_err(|e| Failure::Runtime(e.into()))?;
    let (a, b) = (profile.json(&records[0].id, &fps[0]), profile.json(&records[1].id, &fps[1]));
    let (a, b) = (&a, &b);
    let name = args.profile.profile.map(|p| p.name()).unwrap_or_default();
    let measure = distance.measure();
    let width = distance.bits();
    let value = match distance {
        ProfileDistance::Hamming { distance, .. } => serde_json::json!(distance),
        ProfileDistance::JaccardEstimate(j) | ProfileDistance::JaccardTokens(j) => {
            serde_json::json!(j)
        }
    };
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
