//! Feature hash functions.
//!
//! `xxh3` is the default: the fastest of the set on short keys. The others exist because users
//! arrive with fingerprints made by other systems: `murmur3` (x64_128, as Lucene and many
//! libraries), `fnv1a` (64-bit), `md5` (as the `simhash` PyPI package), and `jenkins` (lookup3
//! `hashlittle2`, as yanyiwu/simhash and cppjieba). MurmurHash3 and lookup3 are written here
//! because they must be bit-exact with those systems; the reference algorithms are public domain.

use std::hash::Hasher;

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use crate::SimHashBits;

/// A feature: its hash and its weight.
///
/// `hash` is the 64-bit hash used by MinHash, SimHash-64 and SimHash-32 (low 32 bits). `hash_hi`
/// carries the upper 64 bits of a 128-bit hash and is only filled for SimHash-128; it is 0
/// otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feature {
    /// The low (or only) 64 bits of the feature hash.
    pub hash: u64,
    /// The high 64 bits, for 128-bit fingerprints; 0 otherwise.
    pub hash_hi: u64,
    /// The feature's weight, as given by the weighting scheme.
    pub weight: f64,
}

/// Which function hashes a feature's bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FeatureHasher {
    /// XXH3 (64 or 128 bits), seed 0.
    #[default]
    Xxh3,
    /// MurmurHash3 x64_128, seed 0; the 64-bit hash is its first word (`h1`).
    Murmur3,
    /// FNV-1a, 64 bits. For 128-bit fingerprints the high word is `splitmix64` of the hash.
    Fnv1a,
    /// MD5, read as the big-endian integer of the digest (as Python's
    /// `int(md5(x).hexdigest(), 16)`); 64 bits are its low 64 bits.
    Md5,
    /// Bob Jenkins' lookup3 `hashlittle2` with both seeds 0, as `(c << 32) | b`.
    /// For 128-bit fingerprints the high word is `splitmix64` of the hash.
    Jenkins,
}

impl FeatureHasher {
    /// Every hasher, for help texts and tests.
    pub const ALL: [FeatureHasher; 5] = [
        FeatureHasher::Xxh3,
        FeatureHasher::Murmur3,
        FeatureHasher::Fnv1a,
        FeatureHasher::Md5,
        FeatureHasher::Jenkins,
    ];

    /// The name used in specs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FeatureHasher::Xxh3 => "xxh3",
            FeatureHasher::Murmur3 => "murmur3",
            FeatureHasher::Fnv1a => "fnv1a",
            FeatureHasher::Md5 => "md5",
            FeatureHasher::Jenkins => "jenkins",
        }
    }

    /// The 64-bit hash of `bytes`.
    #[inline]
    pub fn hash64(self, bytes: &[u8]) -> u64 {
        match self {
            FeatureHasher::Xxh3 => xxhash_rust::xxh3::xxh3_64(bytes),
            FeatureHasher::Murmur3 => murmur3_x64_128(bytes, 0).0,
            FeatureHasher::Fnv1a => {
                let mut h = fnv::FnvHasher::default();
                h.write(bytes);
                h.finish()
            }
            FeatureHasher::Md5 => md5_u128(bytes) as u64,
            FeatureHasher::Jenkins => jenkins64(bytes),
        }
    }

    /// The 128-bit hash of `bytes` as `(low 64 bits, high 64 bits)`. The low word always equals
    /// [`FeatureHasher::hash64`].
    #[inline]
    pub fn hash128(self, bytes: &[u8]) -> (u64, u64) {
        match self {
            FeatureHasher::Xxh3 => {
                let h = xxhash_rust::xxh3::xxh3_128(bytes);
                // The 64-bit and 128-bit XXH3 variants differ; keep the low word equal to
                // hash64 so that MinHash and SimHash-64 agree whatever the fingerprint width.
                (xxhash_rust::xxh3::xxh3_64(bytes), (h >> 64) as u64)
            }
            FeatureHasher::Murmur3 => murmur3_x64_128(bytes, 0),
            FeatureHasher::Md5 => {
                let h = md5_u128(bytes);
                (h as u64, (h >> 64) as u64)
            }
            FeatureHasher::Fnv1a | FeatureHasher::Jenkins => {
                let lo = self.hash64(bytes);
                (lo, splitmix64(lo))
            }
        }
    }

    /// Hashes `bytes` into a [`Feature`] wide enough for fingerprints of `bits`.
    #[inline]
    pub fn feature(self, bytes: &[u8], weight: f64, bits: SimHashBits) -> Feature {
        if bits == SimHashBits::B128 {
            let (hash, hash_hi) = self.hash128(bytes);
            Feature { hash, hash_hi, weight }
        } else {
            Feature { hash: self.hash64(bytes), hash_hi: 0, weight }
        }
    }
}

impl std::str::FromStr for FeatureHasher {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FeatureHasher::ALL.into_iter().find(|h| h.name() == s).ok_or_else(|| {
            format!("unknown hash {s:?}: expected one of xxh3, murmur3, fnv1a, md5, jenkins")
        })
    }
}

fn md5_u128(bytes: &[u8]) -> u128 {
    let digest = Md5::digest(bytes);
    u128::from_be_bytes(digest.into())
}

/// The SplitMix64 output function (Steele, Lea, Flood 2014): a strong 64-bit mixer.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The MurmurHash3 64-bit finaliser.
#[inline]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// MurmurHash3 x64_128 of `bytes` with `seed`, returned as `(h1, h2)`.
///
/// Bit-exact with Austin Appleby's reference `MurmurHash3_x64_128` and with Lucene's
/// `StringHelper.murmurhash3_x64_128` (which reports the same words as signed longs).
pub fn murmur3_x64_128(bytes: &[u8], seed: u64) -> (u64, u64) {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    let len = bytes.len();
    let mut h1 = seed;
    let mut h2 = seed;
    let mut blocks = bytes.chunks_exact(16);
    for block in &mut blocks {
        let (lo, hi) = block.split_at(8);
        let mut k1 = u64::from_le_bytes(lo.try_into().expect("8-byte half"));
        let mut k2 = u64::from_le_bytes(hi.try_into().expect("8-byte half"));
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1.rotate_left(27).wrapping_add(h2).wrapping_mul(5).wrapping_add(0x52dc_e729);
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2.rotate_left(31).wrapping_add(h1).wrapping_mul(5).wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    if tail.len() > 8 {
        let mut k2 = 0u64;
        for (i, &b) in tail[8..].iter().enumerate() {
            k2 |= u64::from(b) << (8 * i);
        }
        h2 ^= k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
    }
    if !tail.is_empty() {
        let mut k1 = 0u64;
        for (i, &b) in tail[..tail.len().min(8)].iter().enumerate() {
            k1 |= u64::from(b) << (8 * i);
        }
        h1 ^= k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
    }
    h1 ^= len as u64;
    h2 ^= len as u64;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

/// The 64-bit Jenkins hash of yanyiwu/simhash: lookup3 `hashlittle2` with both initial values 0,
/// returned as `(c << 32) | b`.
pub fn jenkins64(bytes: &[u8]) -> u64 {
    #[inline(always)]
    fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(4);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(6);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(8);
        *b = b.wrapping_add(*a);
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(16);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(19);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(4);
        *b = b.wrapping_add(*a);
    }
    #[inline(always)]
    fn final_(a: &mut u32, b: &mut u32, c: &mut u32) {
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(14));
        *a ^= *c;
        *a = a.wrapping_sub(c.rotate_left(11));
        *b ^= *a;
        *b = b.wrapping_sub(a.rotate_left(25));
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(16));
        *a ^= *c;
        *a = a.wrapping_sub(c.rotate_left(4));
        *b ^= *a;
        *b = b.wrapping_sub(a.rotate_left(14));
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(24));
    }
    #[inline(always)]
    fn word(bytes: &[u8]) -> u32 {
        let mut w = [0u8; 4];
        w[..bytes.len()].copy_from_slice(bytes);
        u32::from_le_bytes(w)
    }
    // lookup3 keeps the length in 32 bits; texts over 4 GiB wrap as the C code does.
    let init = 0xdead_beefu32.wrapping_add(bytes.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut rest = bytes;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if !rest.is_empty() {
        let mut pad = [0u8; 12];
        pad[..rest.len()].copy_from_slice(rest);
        a = a.wrapping_add(word(&pad[0..4]));
        b = b.wrapping_add(word(&pad[4..8]));
        c = c.wrapping_add(word(&pad[8..12]));
        final_(&mut a, &mut b, &mut c);
    }
    (u64::from(c) << 32) | u64::from(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur3_matches_lucene_check_value() {
        // SPEC.md B.2: Lucene hashes a token's UTF-16 code units, little-endian.
        let bytes: Vec<u8> =
            "woof woof woof woof woof".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let (h1, h2) = murmur3_x64_128(&bytes, 0);
        assert_eq!(h1, 7638079586852243959);
        assert_eq!(h2, 4378804943379391304);
    }

    #[test]
    fn murmur3_matches_independent_crate_on_all_tail_lengths() {
        let data: Vec<u8> = (0u8..=255).collect();
        for len in 0..80 {
            for seed in [0u32, 1, 0xdead_beef] {
                let ours = murmur3_x64_128(&data[..len], u64::from(seed));
                let theirs = murmur3::murmur3_x64_128(&mut &data[..len], seed).expect("in memory");
                assert_eq!(ours.0, theirs as u64, "len {len} seed {seed}");
                assert_eq!(ours.1, (theirs >> 64) as u64, "len {len} seed {seed}");
            }
        }
    }

    #[test]
    fn jenkins_of_empty_is_initial_state() {
        assert_eq!(jenkins64(b""), 0xDEAD_BEEF_DEAD_BEEF);
    }

    #[test]
    fn md5_reads_digest_big_endian() {
        // md5("") = d41d8cd98f00b204e9800998ecf8427e
        let (lo, hi) = FeatureHasher::Md5.hash128(b"");
        assert_eq!(hi, 0xd41d_8cd9_8f00_b204);
        assert_eq!(lo, 0xe980_0998_ecf8_427e);
        assert_eq!(FeatureHasher::Md5.hash64(b""), lo);
    }

    #[test]
    fn fnv1a_matches_published_vector() {
        // FNV-1a 64 of "a" from the FNV reference test suite.
        assert_eq!(FeatureHasher::Fnv1a.hash64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn low_word_of_128_equals_64_for_every_hasher() {
        for h in FeatureHasher::ALL {
            for text in ["", "a", "近似重复", "the quick brown fox jumps"] {
                assert_eq!(h.hash128(text.as_bytes()).0, h.hash64(text.as_bytes()), "{h:?}");
            }
        }
    }

    #[test]
    fn hasher_names_round_trip() {
        for h in FeatureHasher::ALL {
            assert_eq!(h.name().parse::<FeatureHasher>(), Ok(h));
        }
        assert!("sha1".parse::<FeatureHasher>().is_err());
    }
}
