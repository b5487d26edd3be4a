//! Chinese throughput against jieba-rs's `cut` in one run, interleaved: the ratio the Chinese
//! target is stated in, measured so that a noisy machine moves both sides alike.
//!
//! cargo run --release -p neardup --example zh_ratio
//!
//! The documents are those of `benches/throughput.rs`'s `zh` group (the bundled Chinese news
//! texts repeated to ~64 KB, cut into ~1 KB documents). Each round times 20 passes over them of:
//! jieba-rs `cut(text, true)`; the jieba words + SimHash-64 pipeline; the `default` preset
//! (character 5-grams); normalization alone. Prints the best of 40 rounds of each, one thread.

use std::hint::black_box;
use std::time::Instant;

use neardup::text::{FeatureKind, Normalizer, SegmenterKind};
use neardup::{Document, Pipeline, PipelineSpec, Scratch};

#[path = "../benches/common/mod.rs"]
mod common;

/// The best time of `rounds` rounds of `passes` passes of `f` over `docs`.
fn best(rounds: usize, mut round: impl FnMut() -> usize) -> f64 {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            assert!(black_box(round()) > 0, "no work was done");
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    const PASSES: usize = 20;
    let docs = common::chinese();
    let jieba = neardup::text::zh::jieba();
    let words = Pipeline::new(PipelineSpec {
        segmenter: SegmenterKind::Jieba,
        features: FeatureKind::Words,
        ..PipelineSpec::default()
    })
    .expect("valid spec");
    let preset = Pipeline::new(PipelineSpec::default()).expect("valid spec");
    let normalizer = Normalizer::new(Default::default());
    let mut scratch = Scratch::default();
    let (mut cut, mut ours, mut chars, mut norm) = (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..40 {
        cut = cut.min(best(1, || {
            let mut n = 0;
            for _ in 0..PASSES {
                docs.iter().for_each(|d| n += jieba.cut(black_box(d), true).len());
            }
            n
        }));
        let mut simhashes = |p: &Pipeline| {
            let mut n = 1usize;
            for _ in 0..PASSES {
                for d in &docs {
                    n ^= p.simhash(Document::Text(black_box(d)), &mut scratch).value() as usize;
                }
            }
            n | 1
        };
        ours = ours.min(best(1, || simhashes(&words)));
        chars = chars.min(best(1, || simhashes(&preset)));
        norm = norm.min(best(1, || {
            let mut n = 0;
            for _ in 0..PASSES {
                docs.iter().for_each(|d| n += normalizer.normalize(black_box(d)).len());
            }
            n
        }));
    }
    let mib = docs.iter().map(String::len).sum::<usize>() as f64 * PASSES as f64 / 1048576.0;
    println!("jieba-rs cut(text, true):            {:6.1} MiB/s", mib / cut);
    println!(
        "jieba words + SimHash-64:            {:6.1} MiB/s  ({:.1}% of cut)",
        mib / ours,
        100.0 * cut / ours
    );
    println!(
        "default preset (char 5-grams):       {:6.1} MiB/s  ({:.1} MB/s)",
        mib / chars,
        mib / chars * 1.048576
    );
    println!("normalization alone:                 {:6.1} MiB/s", mib / norm);
}
