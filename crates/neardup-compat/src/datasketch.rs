//! datasketch's `MinHash(num_perm, seed, scheme)` (SPEC.md C.1, C.2).
//!
//! Tokens are hashed with SHA-1 of their bytes (`sha1_hash32`: the first 4 bytes of the digest,
//! little-endian; `sha1_hash64`: the first 8), then permuted:
//!
//! | scheme | permutation of h | initial value |
//! |---|---|---|
//! | `legacy` (datasketch < 2.0) | `(((a*h) mod 2^64 + b) mod 2^64) mod (2^61 - 1) & (2^32 - 1)` | `2^32 - 1` |
//! | `affine32` (2.0 default) | `(a * fmix32(h) + b) mod 2^32` | `2^32 - 1` |
//! | `affine64` | `(a * fmix64(h64) + b) mod 2^64` | `2^64 - 1` |
//!
//! The wrapping in `legacy` is numpy uint64 arithmetic, not the textbook `(a*h + b) mod p`.

use neardup_sketch::fmix64;
use sha1::{Digest, Sha1};

use crate::mt19937::Mt19937;

/// The datasketch hashing scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// datasketch before 2.0: Mersenne prime 2^61 - 1, 32-bit values.
    Legacy,
    /// datasketch 2.0's default: 32-bit affine permutations after `fmix32`.
    Affine32,
    /// 64-bit affine permutations after `fmix64`, over `sha1_hash64`.
    Affine64,
}

impl Scheme {
    /// The scheme's name in datasketch.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Legacy => "legacy",
            Scheme::Affine32 => "affine32",
            Scheme::Affine64 => "affine64",
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "legacy" => Ok(Scheme::Legacy),
            "affine32" => Ok(Scheme::Affine32),
            "affine64" => Ok(Scheme::Affine64),
            other => Err(format!(
                "unknown datasketch scheme {other:?}: expected legacy, affine32 or affine64"
            )),
        }
    }
}

/// datasketch's `sha1_hash32`.
pub fn sha1_hash32(bytes: &[u8]) -> u32 {
    let d = Sha1::digest(bytes);
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// datasketch's `sha1_hash64`.
pub fn sha1_hash64(bytes: &[u8]) -> u64 {
    let d = Sha1::digest(bytes);
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// The MurmurHash3 32-bit finaliser.
pub fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

const MERSENNE_61: u64 = (1 << 61) - 1;

/// The permutations of one `(num_perm, seed, scheme)`, as datasketch draws them.
#[derive(Debug, Clone)]
pub struct Permutations {
    scheme: Scheme,
    a: Vec<u64>,
    b: Vec<u64>,
}

impl Permutations {
    /// Draws the parameters with numpy `RandomState(seed)`, in datasketch's order.
    pub fn new(num_perm: usize, seed: u32, scheme: Scheme) -> Permutations {
        let mut mt = Mt19937::new(seed);
        let (mut a, mut b) = (Vec::with_capacity(num_perm), Vec::with_capacity(num_perm));
        match scheme {
            Scheme::Legacy => {
                // Interleaved: a_0, b_0, a_1, b_1, ...
                for _ in 0..num_perm {
                    a.push(mt.randint_u64(1, MERSENNE_61));
                    b.push(mt.randint_u64(0, MERSENNE_61));
                }
            }
            Scheme::Affine32 => {
                for _ in 0..num_perm {
                    a.push(u64::from(mt.randint_u32(0, 1 << 31)) * 2 + 1);
                }
                for _ in 0..num_perm {
                    b.push(u64::from(mt.randint_u32(0, 1 << 32)));
                }
            }
            Scheme::Affine64 => {
                for _ in 0..num_perm {
                    a.push(mt.randint_u64(0, 1 << 63).wrapping_mul(2).wrapping_add(1));
                }
                for _ in 0..num_perm {
                    b.push(mt.next_u64());
                }
            }
        }
        Permutations { scheme, a, b }
    }

    /// `a` parameters.
    pub fn a(&self) -> &[u64] {
        &self.a
    }

    /// `b` parameters.
    pub fn b(&self) -> &[u64] {
        &self.b
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// datasketch's `MinHash.hashvalues` after `update` with each token's bytes.
    pub fn hash_values<T: AsRef<[u8]>>(&self, tokens: impl IntoIterator<Item = T>) -> Vec<u64> {
        let n = self.a.len();
        match self.scheme {
            Scheme::Legacy => {
                let mut values = vec![u64::from(u32::MAX); n];
                for t in tokens {
                    let h = u64::from(sha1_hash32(t.as_ref()));
                    for (v, (&a, &b)) in values.iter_mut().zip(self.a.iter().zip(&self.b)) {
                        let p = (a.wrapping_mul(h).wrapping_add(b) % MERSENNE_61) & 0xffff_ffff;
                        *v = (*v).min(p);
                    }
                }
                values
            }
            Scheme::Affine32 => {
                let mut values = vec![u64::from(u32::MAX); n];
                for t in tokens {
                    let g = fmix32(sha1_hash32(t.as_ref()));
                    for (v, (&a, &b)) in values.iter_mut().zip(self.a.iter().zip(&self.b)) {
                        let p = (a as u32).wrapping_mul(g).wrapping_add(b as u32);
                        *v = (*v).min(u64::from(p));
                    }
                }
                values
            }
            Scheme::Affine64 => {
                let mut values = vec![u64::MAX; n];
                for t in tokens {
                    let g = fmix64(sha1_hash64(t.as_ref()));
                    for (v, (&a, &b)) in values.iter_mut().zip(self.a.iter().zip(&self.b)) {
                        *v = (*v).min(a.wrapping_mul(g).wrapping_add(b));
                    }
                }
                values
            }
        }
    }
}

/// `x mod (2^61 - 1)` for any `u64`, without a division: `2^61 ≡ 1`, so `x ≡ (x >> 61) + (x &
/// (2^61 - 1))`, which is below `2^61 + 7` and needs at most one subtraction.
#[inline]
pub fn mod_mersenne61(x: u64) -> u64 {
    let r = (x & MERSENNE_61) + (x >> 61);
    if r >= MERSENNE_61 {
        r - MERSENNE_61
    } else {
        r
    }
}

/// `legacy`: `values[k] = min(values[k], ((a[k] * h + b[k]) mod 2^64 mod (2^61 - 1)) & (2^32 -
/// 1))` for every hash `h` (the 32-bit outputs of the hash function), as datasketch's
/// `update_batch` computes it in numpy uint64.
///
/// Each hash updates every value in turn, so the loop over values runs in SIMD lanes; the
/// function is compiled for AVX2 and SSE4.1 too, picked at run time (`multiversion`).
#[multiversion::multiversion(targets("x86_64+avx2", "x86_64+sse4.1"))]
pub fn update_legacy(a: &[u64], b: &[u64], values: &mut [u64], hashes: &[u64]) {
    let n = values.len().min(a.len()).min(b.len());
    let (a, b, values) = (&a[..n], &b[..n], &mut values[..n]);
    for &h in hashes {
        for ((v, &a), &b) in values.iter_mut().zip(a).zip(b) {
            *v = (*v).min(mod_mersenne61(a.wrapping_mul(h).wrapping_add(b)) & 0xffff_ffff);
        }
    }
}

/// `affine32`: `values[k] = min(values[k], a[k] * fmix32(h) + b[k] mod 2^32)` for every hash
/// `h`; the hashes are pre-mixed once. SIMD as [`update_legacy`].
#[multiversion::multiversion(targets("x86_64+avx2", "x86_64+sse4.1"))]
pub fn update_affine32(a: &[u32], b: &[u32], values: &mut [u32], hashes: &[u32]) {
    let n = values.len().min(a.len()).min(b.len());
    let (a, b, values) = (&a[..n], &b[..n], &mut values[..n]);
    for &h in hashes {
        let g = fmix32(h);
        for ((v, &a), &b) in values.iter_mut().zip(a).zip(b) {
            *v = (*v).min(a.wrapping_mul(g).wrapping_add(b));
        }
    }
}

/// `affine64`: `values[k] = min(values[k], a[k] * fmix64(h) + b[k] mod 2^64)` for every hash.
/// SIMD as [`update_legacy`].
#[multiversion::multiversion(targets("x86_64+avx2", "x86_64+sse4.1"))]
pub fn update_affine64(a: &[u64], b: &[u64], values: &mut [u64], hashes: &[u64]) {
    let n = values.len().min(a.len()).min(b.len());
    let (a, b, values) = (&a[..n], &b[..n], &mut values[..n]);
    for &h in hashes {
        let g = fmix64(h);
        for ((v, &a), &b) in values.iter_mut().zip(a).zip(b) {
            *v = (*v).min(a.wrapping_mul(g).wrapping_add(b));
        }
    }
}

/// datasketch's `MinHash.jaccard`: the fraction of equal positions (both signatures must come from
/// the same permutations).
pub fn jaccard(a: &[u64], b: &[u64]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    Some(a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64)
}

/// The key datasketch's `MinHashLSH` stores for band `i` of `r` rows: the band's values
/// byte-swapped to big-endian, 8 bytes per value (`legacy`, `affine64`) or 4 (`affine32`).
pub fn band_key(values: &[u64], band: usize, rows: usize, scheme: Scheme) -> Vec<u8> {
    let slice = &values[band * rows..(band + 1) * rows];
    match scheme {
        Scheme::Affine32 => slice.iter().flat_map(|&v| (v as u32).to_be_bytes()).collect(),
        Scheme::Legacy | Scheme::Affine64 => slice.iter().flat_map(|&v| v.to_be_bytes()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mersenne_reduction_equals_the_remainder() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            assert_eq!(mod_mersenne61(x), x % MERSENNE_61, "{x}");
        }
        for x in [0, MERSENNE_61 - 1, MERSENNE_61, MERSENNE_61 + 1, u64::MAX, 7 << 61] {
            assert_eq!(mod_mersenne61(x), x % MERSENNE_61, "{x}");
        }
    }

    #[test]
    fn kernels_equal_hash_values() {
        let tokens: Vec<String> = (0..50).map(|i| format!("token{i}")).collect();
        for scheme in [Scheme::Legacy, Scheme::Affine32, Scheme::Affine64] {
            let p = Permutations::new(64, 7, scheme);
            let want = p.hash_values(tokens.iter().map(String::as_bytes));
            let got: Vec<u64> = match scheme {
                Scheme::Legacy => {
                    let hashes: Vec<u64> =
                        tokens.iter().map(|t| u64::from(sha1_hash32(t.as_bytes()))).collect();
                    let mut v = vec![u64::from(u32::MAX); 64];
                    update_legacy(p.a(), p.b(), &mut v, &hashes);
                    v
                }
                Scheme::Affine32 => {
                    let hashes: Vec<u32> =
                        tokens.iter().map(|t| sha1_hash32(t.as_bytes())).collect();
                    let a: Vec<u32> = p.a().iter().map(|&x| x as u32).collect();
                    let b: Vec<u32> = p.b().iter().map(|&x| x as u32).collect();
                    let mut v = vec![u32::MAX; 64];
                    update_affine32(&a, &b, &mut v, &hashes);
                    v.into_iter().map(u64::from).collect()
                }
                Scheme::Affine64 => {
                    let hashes: Vec<u64> =
                        tokens.iter().map(|t| sha1_hash64(t.as_bytes())).collect();
                    let mut v = vec![u64::MAX; 64];
                    update_affine64(p.a(), p.b(), &mut v, &hashes);
                    v
                }
            };
            assert_eq!(got, want, "{}", scheme.name());
        }
    }
}
