//! Throughput of the pipeline on ~1 KB documents, in bytes of input per second (one thread).
//!
//! English: the license texts under /usr/share/common-licenses (real prose, on every Debian
//! system), falling back to the bundled examples. Chinese: the bundled Chinese examples. Each
//! benchmark checks inside the loop that it did the work (features were found).
//!
//! cargo bench -p neardup --bench throughput

use std::hint::black_box;
use std::path::Path;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use neardup::sketch::{Densification, MinHashScheme};
use neardup::text::{FeatureKind, SegmenterKind};
use neardup::{Document, MinHashSpec, Pipeline, PipelineSpec, Scratch, Sketches};

mod common;
use common::{bundled, chinese, documents};

fn english() -> Vec<String> {
    let dir = Path::new("/usr/share/common-licenses");
    let mut text = String::new();
    for name in
        ["GPL-3", "GPL-2", "LGPL-3", "LGPL-2.1", "Apache-2.0", "MPL-2.0", "GFDL-1.3", "Artistic"]
    {
        if let Ok(t) = std::fs::read_to_string(dir.join(name)) {
            text.push_str(&t);
            text.push('\n');
        }
    }
    if text.is_empty() {
        text = bundled("en");
    }
    documents(&text, 1024)
}

fn bytes(docs: &[String]) -> u64 {
    docs.iter().map(|d| d.len() as u64).sum()
}

fn spec(segmenter: SegmenterKind, features: FeatureKind) -> PipelineSpec {
    PipelineSpec { segmenter, features, ..PipelineSpec::default() }
}

/// Benchmarks SimHash-64 of every document of `docs` with `spec`.
fn simhash_all(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    spec: PipelineSpec,
    docs: &[String],
) {
    let p = Pipeline::new(spec).expect("valid");
    g.bench_function(name, |b| {
        let mut s = Scratch::default();
        b.iter(|| {
            let mut acc = 0u64;
            for d in docs {
                acc ^= p.simhash(Document::Text(black_box(d)), &mut s).as_u64();
            }
            assert_ne!(acc, 0);
            acc
        })
    });
}

fn bench_simhash(c: &mut Criterion) {
    let en = english();
    let mut g = c.benchmark_group("simhash64");
    g.throughput(Throughput::Bytes(bytes(&en)));
    for (name, spec) in [
        ("en_words", spec(SegmenterKind::Auto, FeatureKind::Words)),
        ("en_shingles5", spec(SegmenterKind::Auto, FeatureKind::WordShingles { n: 5 })),
        ("en_default_preset", PipelineSpec::default()),
    ] {
        simhash_all(&mut g, name, spec, &en);
    }
    g.finish();
}

fn bench_chinese(c: &mut Criterion) {
    let zh = chinese();
    let mut g = c.benchmark_group("zh");
    g.throughput(Throughput::Bytes(bytes(&zh)));
    let jieba = neardup::text::zh::jieba();
    g.bench_function("jieba_rs_cut_hmm", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for d in &zh {
                n += jieba.cut(black_box(d), true).len();
            }
            assert!(n > 0);
            n
        })
    });
    for (name, spec) in [
        ("jieba_words_simhash64", spec(SegmenterKind::Jieba, FeatureKind::Words)),
        ("auto_words_simhash64", spec(SegmenterKind::Auto, FeatureKind::Words)),
        ("default_preset_simhash64", PipelineSpec::default()),
    ] {
        simhash_all(&mut g, name, spec, &zh);
    }
    g.finish();
}

fn bench_minhash(c: &mut Criterion) {
    let en = english();
    let mut g = c.benchmark_group("minhash128");
    g.throughput(Throughput::Bytes(bytes(&en)));
    for (name, scheme) in [
        ("en_shingles5_permutations", MinHashScheme::Permutations),
        (
            "en_shingles5_oph",
            MinHashScheme::OnePermutation { densification: Densification::Optimal },
        ),
    ] {
        let p = Pipeline::new(PipelineSpec {
            features: FeatureKind::WordShingles { n: 5 },
            minhash: MinHashSpec { scheme, ..MinHashSpec::default() },
            ..PipelineSpec::default()
        })
        .expect("valid");
        g.bench_function(name, |b| {
            let mut s = Scratch::default();
            b.iter(|| {
                let mut acc = 0u32;
                for d in &en {
                    acc ^= p.minhash(Document::Text(black_box(d)), &mut s).values()[0];
                }
                assert_ne!(acc, 0);
                acc
            })
        });
    }
    // The full fingerprint command path: SimHash and MinHash in one pass.
    let p = Pipeline::new(PipelineSpec::default()).expect("valid");
    g.bench_function("en_default_fingerprint_simhash_and_minhash", |b| {
        let mut s = Scratch::default();
        b.iter(|| {
            let mut n = 0usize;
            for d in &en {
                n +=
                    p.fingerprint(Document::Text(black_box(d)), &mut s, Sketches::MINHASH).features;
            }
            assert!(n > 0);
            n
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4));
    targets = bench_simhash, bench_chinese, bench_minhash
}
criterion_main!(benches);
