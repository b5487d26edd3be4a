//! Times neardup in-process on a JSONL corpus, for `bench/peers.py`. One thread.
//!
//! peer_bench MODE CORPUS.jsonl [REPEAT]
//!
//! MODE: minhash-perm | minhash-oph | simhash-shingles | simhash-words. Features are word
//! 5-shingles of whitespace-separated tokens with no normalization and punctuation kept, which is
//! exactly `" ".join(tokens[i:i+5])` over Python's `text.split()`, so the peers hash the very
//! same strings. Prints one JSON object: docs, bytes, seconds, checksum.

use std::io::BufRead;
use std::time::Instant;

use neardup::sketch::{Densification, MinHashScheme};
use neardup::text::{FeatureKind, NormalizeConfig, PunctuationPolicy, SegmenterKind};
use neardup::{Document, MinHashSpec, Pipeline, PipelineSpec, Scratch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (mode, path) = match (args.get(1), args.get(2)) {
        (Some(m), Some(p)) => (m.as_str(), p.as_str()),
        _ => return Err("usage: peer_bench MODE CORPUS.jsonl [REPEAT]".into()),
    };
    let repeat: usize = args.get(3).map_or(Ok(1), |r| r.parse())?;
    let mut docs = Vec::new();
    for line in std::io::BufReader::new(std::fs::File::open(path)?).lines() {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        docs.push(v["text"].as_str().ok_or("no text field")?.to_string());
    }
    let features = if mode == "simhash-words" {
        FeatureKind::Words
    } else {
        FeatureKind::WordShingles { n: 5 }
    };
    let scheme = if mode == "minhash-oph" {
        MinHashScheme::OnePermutation { densification: Densification::Optimal }
    } else {
        MinHashScheme::Permutations
    };
    let spec = PipelineSpec {
        normalize: NormalizeConfig {
            nfkc: false,
            case_fold: false,
            // Whitespace runs separate tokens just as in `text.split()`.
            collapse_whitespace: true,
            ..Default::default()
        },
        segmenter: SegmenterKind::Whitespace,
        punctuation: PunctuationPolicy::Keep,
        features,
        minhash: MinHashSpec { num_perm: 128, scheme, ..Default::default() },
        ..PipelineSpec::default()
    };
    let pipeline = Pipeline::new(spec)?;
    let mut scratch = Scratch::default();
    let mut checksum = 0u64;
    let start = Instant::now();
    for _ in 0..repeat {
        for d in &docs {
            checksum ^= match mode {
                "minhash-perm" | "minhash-oph" => {
                    u64::from(pipeline.minhash(Document::Text(d), &mut scratch).values()[0])
                }
                "simhash-shingles" | "simhash-words" => {
                    pipeline.simhash(Document::Text(d), &mut scratch).as_u64()
                }
                other => return Err(format!("unknown mode {other}").into()),
            };
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let bytes: usize = docs.iter().map(String::len).sum::<usize>() * repeat;
    let report = serde_json::json!({
        "docs": docs.len() * repeat, "bytes": bytes, "seconds": seconds, "checksum": checksum,
        "peak_rss_kb": peak_rss_kb(),
    });
    println!("{report}");
    Ok(())
}

/// Peak resident set size of this process (Linux `VmHWM`), in KiB; 0 where unknown.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}
