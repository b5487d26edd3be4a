//! Parsing JSONL records: the reader's way (serde_json, fields borrowed as raw values, the text
//! copied from its raw slice when it holds no escape, else unescaped) and the reader before that
//! (every text unescaped by a second parse) against a one-pass serde_json struct, sonic-rs and
//! simd-json,
//! each extracting the same two fields (the id as written, the text as an owned string), on the
//! lines of the dedup benchmark corpus (`bench/data/en_dedup_1000000.jsonl`; generated lines of
//! the same shape when it is absent).
//!
//! ```sh
//! cargo bench -p neardup-cli --bench jsonl
//! ```

use std::borrow::Cow;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde::Deserialize;
use serde_json::value::RawValue;

fn lines() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/data/en_dedup_1000000.jsonl");
    if let Ok(text) = std::fs::read_to_string(path) {
        return text.lines().take(20_000).map(str::to_string).collect();
    }
    let words = ["license", "software", "copyright", "notice", "permission", "the", "of", "and"];
    (0..20_000)
        .map(|i| {
            let text: Vec<&str> = (0..170).map(|j| words[(i * 7 + j * 13) % words.len()]).collect();
            format!("{{\"id\": {i}, \"text\": \"{}\"}}", text.join(" "))
        })
        .collect()
}

/// The reader's way: raw values first (types checked for messages), then the text.
#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    text: &'a RawValue,
}

/// One pass: the text unescaped while parsing (borrowed when it has no escapes).
#[derive(Deserialize)]
struct OnePass<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Sonic<'a> {
    #[serde(borrow)]
    id: sonic_rs::LazyValue<'a>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

fn parse(c: &mut Criterion) {
    let lines = lines();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let mut g = c.benchmark_group("jsonl");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("serde_json_raw_fast_path (the reader)", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                let r: Raw<'_> = serde_json::from_str(l).expect("valid");
                let json = r.text.get();
                let text: String = match json.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    Some(inner) if !inner.as_bytes().contains(&b'\\') => inner.to_string(),
                    _ => serde_json::from_str(json).expect("string"),
                };
                n += text.len() + r.id.get().len();
            }
            assert!(n > 0);
            black_box(n)
        })
    });
    g.bench_function("serde_json_raw_then_string (the reader before)", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                let r: Raw<'_> = serde_json::from_str(l).expect("valid");
                let text: String = serde_json::from_str(r.text.get()).expect("string");
                n += text.len() + r.id.get().len();
            }
            assert!(n > 0);
            black_box(n)
        })
    });
    g.bench_function("serde_json_one_pass", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                let r: OnePass<'_> = serde_json::from_str(l).expect("valid");
                let text: String = r.text.into_owned();
                n += text.len() + r.id.get().len();
            }
            assert!(n > 0);
            black_box(n)
        })
    });
    g.bench_function("sonic_rs", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                let r: Sonic<'_> = sonic_rs::from_str(l).expect("valid");
                let text: String = r.text.into_owned();
                n += text.len() + r.id.as_raw_str().len();
            }
            assert!(n > 0);
            black_box(n)
        })
    });
    g.bench_function("simd_json", |b| {
        let mut buf: Vec<u8> = Vec::new();
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                // simd-json parses in place: each line is copied into a mutable buffer.
                buf.clear();
                buf.extend_from_slice(l.as_bytes());
                let v = simd_json::to_borrowed_value(&mut buf).expect("valid");
                use simd_json::prelude::*;
                let text: String = v.get_str("text").expect("text").to_string();
                let id = v.get("id").expect("id").to_string();
                n += text.len() + id.len();
            }
            assert!(n > 0);
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
