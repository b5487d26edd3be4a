//! SimHash all-pairs at k = 3 over 1,000,000 random 64-bit fingerprints (one thread), with 1,000
//! planted near copies so that there is something to find, and single queries.
//!
//! cargo bench -p neardup-index --bench hamming

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use neardup_index::HammingIndex;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fingerprints(n: usize) -> Vec<u64> {
    let mut s = 42u64;
    let mut v: Vec<u64> = (0..n - 1000).map(|_| splitmix(&mut s)).collect();
    for i in 0..1000 {
        let flips = (splitmix(&mut s) % 4) as u32; // 0..=3 bits
        let mut fp = v[i * 7];
        for _ in 0..flips {
            fp ^= 1 << (splitmix(&mut s) % 64);
        }
        v.push(fp);
    }
    v
}

fn bench(c: &mut Criterion) {
    let fps = fingerprints(1_000_000);
    let mut idx = HammingIndex::new(64, 3).expect("valid");
    for (i, &fp) in fps.iter().enumerate() {
        idx.insert(i as u64, u128::from(fp));
    }
    let mut g = c.benchmark_group("hamming_k3_1m");
    g.sample_size(10);
    g.bench_function("all_pairs", |b| {
        b.iter(|| {
            let pairs = idx.pairs();
            assert!(pairs.len() >= 1000, "{}", pairs.len());
            pairs.len()
        })
    });
    g.bench_function("query", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i = (i + 7919) % fps.len();
            idx.query(u128::from(black_box(fps[i]))).len()
        })
    });
    g.bench_function("insert_1m", |b| {
        b.iter(|| {
            let mut fresh = HammingIndex::new(64, 3).expect("valid");
            for (i, &fp) in fps.iter().enumerate() {
                fresh.insert(i as u64, u128::from(fp));
            }
            fresh.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
