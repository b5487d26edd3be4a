//! Speed of the compatibility profiles.
//!
//! cargo bench -p neardup-compat --bench profiles
//!
//! yanyiwu: one 50-character Chinese text per iteration, topN 5 (upstream's README quotes about
//! 14.5 µs per such text for its C++ debug build). lucene: input tokens per second through the
//! whitespace tokenizer, a 2-shingle filter and MinHashFilter at Elasticsearch's defaults.
//! datasketch: tokens per second into MinHash(128), scheme legacy.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use neardup_compat::datasketch::{Permutations, Scheme};
use neardup_compat::{lucene, yanyiwu};

const ZH_50: &str =
    "我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪，当上CEO，走上人生巅峰。";

fn english_words(n: usize) -> String {
    let words = [
        "near",
        "duplicate",
        "text",
        "detection",
        "with",
        "minhash",
        "and",
        "lucene",
        "filters",
        "today",
    ];
    (0..n).map(|i| words[(i * 7 + i / 3) % words.len()]).collect::<Vec<_>>().join(" ")
}

fn bench(c: &mut Criterion) {
    let s = yanyiwu::simhasher();
    let mut g = c.benchmark_group("yanyiwu");
    g.throughput(Throughput::Elements(1));
    g.bench_function("simhash_50_chars_topn5", |b| {
        b.iter(|| {
            let r = s.simhash(black_box(ZH_50.as_bytes()), 5);
            assert_eq!(r.keywords.len(), 5);
            r.simhash
        })
    });
    g.finish();

    let text = english_words(1000);
    let params = lucene::MinHashParams::default();
    let mut g = c.benchmark_group("lucene");
    g.throughput(Throughput::Elements(1000));
    g.bench_function("es_default_shingle2_1000_tokens", |b| {
        b.iter(|| {
            let tokens = lucene::shingles(&lucene::whitespace_tokenize(black_box(&text)), 2);
            let out = lucene::min_hash(&tokens, &params).expect("valid");
            assert_eq!(out.tokens.len(), 512);
            out.tokens.len()
        })
    });
    g.finish();

    let tokens: Vec<String> = english_words(1000).split(' ').map(String::from).collect();
    let p = Permutations::new(128, 1, Scheme::Legacy);
    let mut g = c.benchmark_group("datasketch");
    g.throughput(Throughput::Elements(1000));
    g.bench_function("legacy_128_1000_tokens", |b| {
        b.iter(|| {
            let v = p.hash_values(black_box(&tokens).iter().map(String::as_bytes));
            assert_eq!(v.len(), 128);
            v[0]
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
