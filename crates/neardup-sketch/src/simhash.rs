//! SimHash (Charikar, "Similarity estimation techniques from rounding algorithms", STOC 2002).
//!
//! Every feature adds `+weight` to the counters of the bits that are 1 in its hash and `-weight`
//! to those that are 0; bit i of the fingerprint is 1 iff counter i is strictly positive, so a sum
//! of exactly 0 gives 0. Near-duplicates have fingerprints a small Hamming distance apart (Manku,
//! Jain and Das Sarma use k = 3 on 64 bits).
//!
//! Float addition is not associative, so summing `f64` weights in input order would make the
//! fingerprint depend on feature order when a counter lands near 0. Weights are therefore
//! quantised to multiples of 2^-32 and summed as integers: the result is exact and independent of
//! order. All-ones weights (the common "each occurrence counts 1" case) take a faster path that
//! counts bits in byte lanes; it gives the same result as the general path.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Feature, SketchError};

/// The width of a SimHash fingerprint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub enum SimHashBits {
    /// 32 bits: the low 32 bits of each 64-bit feature hash.
    B32,
    /// 64 bits, the default.
    #[default]
    B64,
    /// 128 bits: needs 128-bit feature hashes ([`Feature::hash_hi`]).
    B128,
}

impl SimHashBits {
    /// The number of bits.
    pub fn get(self) -> u32 {
        match self {
            SimHashBits::B32 => 32,
            SimHashBits::B64 => 64,
            SimHashBits::B128 => 128,
        }
    }
}

impl TryFrom<u32> for SimHashBits {
    type Error = String;

    fn try_from(bits: u32) -> Result<Self, Self::Error> {
        match bits {
            32 => Ok(SimHashBits::B32),
            64 => Ok(SimHashBits::B64),
            128 => Ok(SimHashBits::B128),
            other => Err(format!("SimHash width must be 32, 64 or 128 bits, not {other}")),
        }
    }
}

impl From<SimHashBits> for u32 {
    fn from(bits: SimHashBits) -> u32 {
        bits.get()
    }
}

/// A SimHash fingerprint of 32, 64 or 128 bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SimHash {
    value: u128,
    bits: SimHashBits,
}

impl SimHash {
    /// A fingerprint from its value; bits above the width are cleared.
    pub fn new(value: u128, bits: SimHashBits) -> SimHash {
        let mask = if bits == SimHashBits::B128 { u128::MAX } else { (1u128 << bits.get()) - 1 };
        SimHash { value: value & mask, bits }
    }

    /// The fingerprint's value.
    pub fn value(&self) -> u128 {
        self.value
    }

    /// The fingerprint as a `u64` (the low 64 bits for a 128-bit fingerprint).
    pub fn as_u64(&self) -> u64 {
        self.value as u64
    }

    /// The width.
    pub fn bits(&self) -> SimHashBits {
        self.bits
    }

    /// The number of differing bits.
    pub fn hamming(&self, other: &SimHash) -> Result<u32, SketchError> {
        if self.bits != other.bits {
            return Err(SketchError::WidthMismatch {
                left: self.bits.get(),
                right: other.bits.get(),
            });
        }
        Ok((self.value ^ other.value).count_ones())
    }

    /// `1 - hamming / bits`.
    pub fn similarity(&self, other: &SimHash) -> Result<f64, SketchError> {
        let d = self.hamming(other)?;
        Ok(1.0 - f64::from(d) / f64::from(self.bits.get()))
    }

    /// Lowercase hexadecimal, zero-padded to `bits / 4` digits.
    pub fn to_hex(&self) -> String {
        let digits = (self.bits.get() / 4) as usize;
        format!("{:0digits$x}", self.value)
    }

    /// Parses 8, 16 or 32 hexadecimal digits into a 32-, 64- or 128-bit fingerprint.
    pub fn from_hex(text: &str) -> Result<SimHash, SketchError> {
        let bits = match text.len() {
            8 => SimHashBits::B32,
            16 => SimHashBits::B64,
            32 => SimHashBits::B128,
            _ => return Err(SketchError::BadHex { text: text.to_string() }),
        };
        let value = u128::from_str_radix(text, 16)
            .map_err(|_| SketchError::BadHex { text: text.to_string() })?;
        Ok(SimHash { value, bits })
    }
}

impl fmt::Debug for SimHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimHash({})", self.to_hex())
    }
}

impl fmt::Display for SimHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for SimHash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for SimHash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        SimHash::from_hex(&text).map_err(serde::de::Error::custom)
    }
}

/// Computes SimHash fingerprints of one width.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimHasher {
    bits: SimHashBits,
}

/// Quantisation scale for weights: 2^32.
const SCALE: f64 = 4_294_967_296.0;

impl SimHasher {
    /// A SimHasher for fingerprints of `bits`.
    pub fn new(bits: SimHashBits) -> SimHasher {
        SimHasher { bits }
    }

    /// The width this hasher produces.
    pub fn bits(&self) -> SimHashBits {
        self.bits
    }

    /// The fingerprint of `features`. The order of `features` does not matter, and a feature
    /// given twice counts twice. No features (or weights that cancel) give 0.
    pub fn fingerprint(&self, features: &[Feature]) -> SimHash {
        let value = if features.iter().all(|f| f.weight == 1.0) {
            self.fingerprint_unit(features)
        } else {
            self.fingerprint_weighted(features)
        };
        SimHash::new(value, self.bits)
    }

    fn width(&self) -> usize {
        self.bits.get() as usize
    }

    /// Word `j` (0 or 1) of a feature's hash as seen by this width.
    #[inline]
    fn word(&self, f: &Feature, j: usize) -> u64 {
        match (self.bits, j) {
            (SimHashBits::B32, _) => f.hash & 0xffff_ffff,
            (_, 0) => f.hash,
            _ => f.hash_hi,
        }
    }

    /// All weights are 1: bit i is 1 iff more than half of the hashes have it set. Counts live in
    /// byte lanes (8 counters per u64), flushed to wide counters every 255 features.
    fn fingerprint_unit(&self, features: &[Feature]) -> u128 {
        if self.bits == SimHashBits::B64 {
            return u128::from(unit64(features));
        }
        let width = self.width();
        let mut ones = [0u64; 128];
        let mut lanes = [0u64; 16];
        for chunk in features.chunks(255) {
            lanes.fill(0);
            for f in chunk {
                for j in 0..width.div_ceil(64) {
                    let w = self.word(f, j);
                    for byte in 0..8 {
                        let b = ((w >> (8 * byte)) & 0xff) as usize;
                        lanes[j * 8 + byte] += SPREAD[b];
                    }
                }
            }
            for (lane_index, lane) in lanes.iter().enumerate() {
                for k in 0..8 {
                    ones[lane_index * 8 + k] += (lane >> (8 * k)) & 0xff;
                }
            }
        }
        let n = features.len() as u64;
        let mut value = 0u128;
        for (i, &count) in ones.iter().enumerate().take(width) {
            // sum_i = ones - zeros = 2 * ones - n > 0
            if 2 * count > n {
                value |= 1u128 << i;
            }
        }
        value
    }

    fn fingerprint_weighted(&self, features: &[Feature]) -> u128 {
        let width = self.width();
        let mut acc = [0i128; 128];
        for f in features {
            let q = quantise(f.weight);
            for j in 0..width.div_ceil(64) {
                let w = self.word(f, j);
                let lanes = &mut acc[j * 64..j * 64 + 64.min(width)];
                for (bit, a) in lanes.iter_mut().enumerate() {
                    if (w >> bit) & 1 == 1 {
                        *a += q;
                    } else {
                        *a -= q;
                    }
                }
            }
        }
        let mut value = 0u128;
        for (i, &a) in acc.iter().enumerate().take(width) {
            if a > 0 {
                value |= 1u128 << i;
            }
        }
        value
    }
}

/// The all-ones-weights path for 64 bits, the common case, without the width dispatch.
fn unit64(features: &[Feature]) -> u64 {
    unit_simhash64(features.iter().map(|f| f.hash))
}

/// The 64-bit SimHash of features of weight 1 given by their hashes: bit i is 1 iff more than
/// half of the hashes have bit i set, as [`SimHasher::fingerprint`] gives for unit weights (0 for
/// no hashes). What a pipeline uses when it needs no list of weighted features. Counts live in
/// byte lanes (8 counters per u64, kept in registers), flushed every 255 hashes.
pub fn unit_simhash64(hashes: impl IntoIterator<Item = u64>) -> u64 {
    fn flush(ones: &mut [u64; 64], lanes: &mut [u64; 8]) {
        for (lane_index, lane) in lanes.iter().enumerate() {
            for k in 0..8 {
                ones[lane_index * 8 + k] += (lane >> (8 * k)) & 0xff;
            }
        }
        *lanes = [0; 8];
    }
    let mut ones = [0u64; 64];
    let mut lanes = [0u64; 8];
    let (mut in_lanes, mut n) = (0u32, 0u64);
    for h in hashes {
        for (byte, lane) in lanes.iter_mut().enumerate() {
            *lane += SPREAD[((h >> (8 * byte)) & 0xff) as usize];
        }
        in_lanes += 1;
        if in_lanes == 255 {
            flush(&mut ones, &mut lanes);
            n += 255;
            in_lanes = 0;
        }
    }
    flush(&mut ones, &mut lanes);
    n += u64::from(in_lanes);
    ones.iter().enumerate().filter(|(_, &c)| 2 * c > n).fold(0u64, |v, (i, _)| v | (1 << i))
}

/// A weight as an integer multiple of 2^-32. Non-finite weights count 0 (they cannot arise from
/// the weighting schemes, and must not poison the sum).
#[inline]
fn quantise(weight: f64) -> i128 {
    if weight.is_finite() {
        (weight * SCALE).round() as i128
    } else {
        0
    }
}

/// `SPREAD[b]` has byte k equal to bit k of `b`.
static SPREAD: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut v = 0u64;
        let mut k = 0;
        while k < 8 {
            v |= (((b >> k) & 1) as u64) << (8 * k);
            k += 1;
        }
        table[b] = v;
        b += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The textbook definition, one bit at a time in f64, as a reference.
    fn naive(features: &[Feature], bits: SimHashBits) -> u128 {
        let width = bits.get() as usize;
        let mut value = 0u128;
        for i in 0..width {
            let mut sum = 0.0f64;
            for f in features {
                let h = (u128::from(f.hash_hi) << 64) | u128::from(f.hash);
                sum += if (h >> i) & 1 == 1 { f.weight } else { -f.weight };
            }
            if sum > 0.0 {
                value |= 1 << i;
            }
        }
        value
    }

    fn feature(hash: u64, hash_hi: u64, weight: f64) -> Feature {
        Feature { hash, hash_hi, weight }
    }

    #[test]
    fn empty_is_zero() {
        for bits in [SimHashBits::B32, SimHashBits::B64, SimHashBits::B128] {
            assert_eq!(SimHasher::new(bits).fingerprint(&[]).value(), 0);
        }
    }

    #[test]
    fn one_feature_is_its_hash() {
        let f = feature(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, 2.5);
        assert_eq!(SimHasher::new(SimHashBits::B64).fingerprint(&[f]).as_u64(), f.hash);
        assert_eq!(SimHasher::new(SimHashBits::B32).fingerprint(&[f]).value(), 0x89ab_cdef);
        assert_eq!(
            SimHasher::new(SimHashBits::B128).fingerprint(&[f]).value(),
            0xfedc_ba98_7654_3210_0123_4567_89ab_cdef
        );
    }

    #[test]
    fn exact_tie_gives_zero_bit() {
        // Two opposite hashes with equal weight cancel on every bit.
        let f = [feature(u64::MAX, 0, 1.0), feature(0, 0, 1.0)];
        assert_eq!(SimHasher::new(SimHashBits::B64).fingerprint(&f).value(), 0);
        let g = [feature(u64::MAX, 0, 0.3), feature(0, 0, 0.3)];
        assert_eq!(SimHasher::new(SimHashBits::B64).fingerprint(&g).value(), 0);
    }

    #[test]
    fn hex_round_trip_and_width() {
        let s = SimHash::new(0x48f0_2406_8dec_1c16, SimHashBits::B64);
        assert_eq!(s.to_hex(), "48f024068dec1c16");
        assert_eq!(SimHash::from_hex("48f024068dec1c16"), Ok(s));
        assert_eq!(SimHash::new(1, SimHashBits::B32).to_hex(), "00000001");
        assert!(SimHash::from_hex("xyz").is_err());
        let t = SimHash::new(1, SimHashBits::B32);
        assert!(matches!(s.hamming(&t), Err(SketchError::WidthMismatch { .. })));
    }

    fn arb_features(max_weight: u32) -> impl Strategy<Value = Vec<Feature>> {
        prop::collection::vec(
            (any::<u64>(), any::<u64>(), 1..=max_weight)
                .prop_map(|(h, hi, w)| feature(h, hi, f64::from(w))),
            0..600,
        )
    }

    proptest! {
        #[test]
        fn unit_weights_equal_naive(fs in arb_features(1)) {
            for bits in [SimHashBits::B32, SimHashBits::B64, SimHashBits::B128] {
                let mut input = fs.clone();
                if bits == SimHashBits::B32 {
                    for f in &mut input { f.hash &= 0xffff_ffff; f.hash_hi = 0; }
                }
                if bits == SimHashBits::B64 {
                    for f in &mut input { f.hash_hi = 0; }
                }
                prop_assert_eq!(SimHasher::new(bits).fingerprint(&input).value(), naive(&input, bits));
            }
        }

        #[test]
        fn integer_weights_equal_naive(fs in arb_features(1000)) {
            let input: Vec<Feature> = fs.iter().map(|f| Feature { hash_hi: 0, ..*f }).collect();
            prop_assert_eq!(
                SimHasher::new(SimHashBits::B64).fingerprint(&input).value(),
                naive(&input, SimHashBits::B64)
            );
        }

        #[test]
        fn fingerprint_does_not_depend_on_order(
            fs in prop::collection::vec((any::<u64>(), 0.0f64..50.0), 0..300),
            seed in any::<u64>(),
        ) {
            let input: Vec<Feature> = fs.iter().map(|&(h, w)| feature(h, 0, w)).collect();
            let mut shuffled = input.clone();
            // Fisher-Yates with a splitmix stream: proptest shrinks the seed, not the order.
            let mut state = seed;
            for i in (1..shuffled.len()).rev() {
                state = crate::splitmix64(state);
                shuffled.swap(i, (state % (i as u64 + 1)) as usize);
            }
            let hasher = SimHasher::new(SimHashBits::B64);
            prop_assert_eq!(hasher.fingerprint(&input), hasher.fingerprint(&shuffled));
        }

        #[test]
        fn real_weights_match_naive_away_from_ties(
            fs in prop::collection::vec((any::<u64>(), 0.001f64..50.0), 1..200),
        ) {
            let input: Vec<Feature> = fs.iter().map(|&(h, w)| feature(h, 0, w)).collect();
            let ours = SimHasher::new(SimHashBits::B64).fingerprint(&input).value();
            let reference = naive(&input, SimHashBits::B64);
            // Quantisation moves each sum by at most n * 2^-33; only bits whose f64 sum is that
            // close to 0 may differ.
            let slack = input.len() as f64 / SCALE;
            for i in 0..64 {
                let sum: f64 = input.iter().map(|f| if (f.hash >> i) & 1 == 1 { f.weight } else { -f.weight }).sum();
                if sum.abs() > slack {
                    prop_assert_eq!((ours >> i) & 1, (reference >> i) & 1, "bit {}", i);
                }
            }
        }
    }
}
