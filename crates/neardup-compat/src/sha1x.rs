//! The first words of SHA-1 digests of many short messages, computed several at a time.
//!
//! datasketch hashes every token with SHA-1 (`sha1_hash32`, `sha1_hash64`), so a drop-in must
//! too, bit for bit. One SHA-1 block on the x86 SHA extensions is a chain of 20 dependent
//! `sha1rnds4` instructions: a single message leaves the unit idle for most of each
//! instruction's latency. Here messages that fit one block (up to 55 bytes: word shingles,
//! character n-grams) are hashed [`LANES`] at a time, their independent chains interleaved.
//! Longer messages, and machines without the extensions, go through the `sha1` crate one by
//! one. Either way the result is SHA-1's (tests compare with the `sha1` crate).

use sha1::{Digest, Sha1};

/// Messages hashed together by the SHA-extension kernel.
const LANES: usize = 4;

/// The longest message that fits one padded block (64 bytes less the 0x80 byte and the 8-byte
/// length).
const ONE_BLOCK: usize = 55;

/// The first two words of each message's SHA-1 digest, `(H0, H1)` as big-endian numbers,
/// passed to `emit` with the message's index, in order.
pub fn sha1_heads<M: AsRef<[u8]>>(messages: &[M], mut emit: impl FnMut(usize, u32, u32)) {
    #[cfg(target_arch = "x86_64")]
    if x86::available() {
        let mut lanes = Lanes::default();
        for (i, m) in messages.iter().enumerate() {
            let m = m.as_ref();
            if m.len() <= ONE_BLOCK {
                if lanes.push(i, m) {
                    lanes.flush(&mut emit);
                }
            } else {
                // The lanes first: messages are emitted in order.
                lanes.flush(&mut emit);
                let (a, b) = heads_by_crate(m);
                emit(i, a, b);
            }
        }
        lanes.flush(&mut emit);
        return;
    }
    for (i, m) in messages.iter().enumerate() {
        let (a, b) = heads_by_crate(m.as_ref());
        emit(i, a, b);
    }
}

/// datasketch's `sha1_hash32` of each message, appended to `out`.
pub fn sha1_hash32_many<M: AsRef<[u8]>>(messages: &[M], out: &mut Vec<u32>) {
    let start = out.len();
    out.resize(start + messages.len(), 0);
    let dst = &mut out[start..];
    sha1_heads(messages, |i, a, _| dst[i] = a.swap_bytes());
}

/// datasketch's `sha1_hash64` of each message, appended to `out`.
pub fn sha1_hash64_many<M: AsRef<[u8]>>(messages: &[M], out: &mut Vec<u64>) {
    let start = out.len();
    out.resize(start + messages.len(), 0);
    let dst = &mut out[start..];
    sha1_heads(messages, |i, a, b| {
        dst[i] = u64::from(a.swap_bytes()) | (u64::from(b.swap_bytes()) << 32);
    });
}

fn heads_by_crate(m: &[u8]) -> (u32, u32) {
    let d = Sha1::digest(m);
    (u32::from_be_bytes([d[0], d[1], d[2], d[3]]), u32::from_be_bytes([d[4], d[5], d[6], d[7]]))
}

/// Up to [`LANES`] padded one-block messages waiting for the kernel.
#[cfg(target_arch = "x86_64")]
struct Lanes {
    /// Each block's sixteen message words, big-endian as SHA-1 reads them.
    words: [[u32; 16]; LANES],
    index: [usize; LANES],
    len: usize,
}

#[cfg(target_arch = "x86_64")]
impl Default for Lanes {
    fn default() -> Self {
        Lanes { words: [[0; 16]; LANES], index: [0; LANES], len: 0 }
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes {
    /// Pads `m` (at most [`ONE_BLOCK`] bytes) into the next lane; true when the lanes are full.
    fn push(&mut self, index: usize, m: &[u8]) -> bool {
        let mut block = [0u8; 64];
        block[..m.len()].copy_from_slice(m);
        block[m.len()] = 0x80;
        // The length in bits: at most 440, so the top bytes stay zero.
        let bits = (m.len() as u64) * 8;
        block[56..].copy_from_slice(&bits.to_be_bytes());
        let words = &mut self.words[self.len];
        for (w, chunk) in words.iter_mut().zip(block.chunks_exact(4)) {
            *w = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        self.index[self.len] = index;
        self.len += 1;
        self.len == LANES
    }

    fn flush(&mut self, emit: &mut impl FnMut(usize, u32, u32)) {
        if self.len == 0 {
            return;
        }
        // Lanes past `len` hold earlier blocks: hashed and ignored.
        let heads = x86::heads(&self.words);
        for (&i, &(a, b)) in self.index[..self.len].iter().zip(heads.iter()) {
            emit(i, a, b);
        }
        self.len = 0;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_extract_epi32, _mm_set_epi32, _mm_sha1msg1_epu32,
        _mm_sha1msg2_epu32, _mm_sha1nexte_epu32, _mm_sha1rnds4_epu32, _mm_xor_si128,
    };

    use super::LANES;

    /// SHA-1's initial state.
    const H: [u32; 5] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476, 0xc3d2_e1f0];

    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("sse2")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1")
    }

    /// `(H0, H1)` of the SHA-1 digest of each one-block message (`blocks` already padded).
    #[allow(unsafe_code)] // one call to a function that needs CPU features, checked first
    pub(super) fn heads(blocks: &[[u32; 16]; LANES]) -> [(u32, u32); LANES] {
        assert!(available(), "the SHA extensions are required");
        // SAFETY: `compress` only needs the features `available()` has just confirmed this CPU
        // has; it reads nothing but its argument (no pointers, no memory access of its own).
        unsafe { compress(blocks) }
    }

    /// The 20 groups of four rounds of one block for every lane, the lanes interleaved so that
    /// each instruction's latency is covered by the other lanes' independent work.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn compress(blocks: &[[u32; 16]; LANES]) -> [(u32, u32); LANES] {
        let abcd0 = _mm_set_epi32(H[0] as i32, H[1] as i32, H[2] as i32, H[3] as i32);
        let e0 = _mm_set_epi32(H[4] as i32, 0, 0, 0);
        // The message words, four per register, the first in the highest lane.
        let mut w: [[__m128i; 4]; LANES] = [[e0; 4]; LANES];
        for (lane, block) in w.iter_mut().zip(blocks) {
            for (reg, q) in lane.iter_mut().zip(block.chunks_exact(4)) {
                *reg = _mm_set_epi32(q[0] as i32, q[1] as i32, q[2] as i32, q[3] as i32);
            }
        }
        let mut abcd = [abcd0; LANES];
        let mut prev = [abcd0; LANES];
        for group in 0..20 {
            for l in 0..LANES {
                let wl = &mut w[l];
                if group >= 4 {
                    // W[t..t+4] = rol1(W[t-3] ^ W[t-8] ^ W[t-14] ^ W[t-16]).
                    let x = _mm_sha1msg1_epu32(wl[group % 4], wl[(group + 1) % 4]);
                    let x = _mm_xor_si128(x, wl[(group + 2) % 4]);
                    wl[group % 4] = _mm_sha1msg2_epu32(x, wl[(group + 3) % 4]);
                }
                let msg = wl[group % 4];
                let e = if group == 0 {
                    _mm_add_epi32(e0, msg)
                } else {
                    _mm_sha1nexte_epu32(prev[l], msg)
                };
                prev[l] = abcd[l];
                abcd[l] = match group / 5 {
                    0 => _mm_sha1rnds4_epu32::<0>(abcd[l], e),
                    1 => _mm_sha1rnds4_epu32::<1>(abcd[l], e),
                    2 => _mm_sha1rnds4_epu32::<2>(abcd[l], e),
                    _ => _mm_sha1rnds4_epu32::<3>(abcd[l], e),
                };
            }
        }
        let mut out = [(0, 0); LANES];
        for (o, a) in out.iter_mut().zip(abcd) {
            let sum = _mm_add_epi32(a, abcd0);
            *o = (_mm_extract_epi32::<3>(sum) as u32, _mm_extract_epi32::<2>(sum) as u32);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn by_crate(messages: &[Vec<u8>]) -> Vec<(u32, u32)> {
        messages.iter().map(|m| heads_by_crate(m)).collect()
    }

    #[test]
    fn known_digests() {
        // FIPS 180 examples: SHA-1("abc") and SHA-1("").
        let mut got = Vec::new();
        sha1_heads(&[&b"abc"[..], &b""[..]], |i, a, b| got.push((i, a, b)));
        assert_eq!(got, vec![(0, 0xa999_3e36, 0x4706_816a), (1, 0xda39_a3ee, 0x5e6b_4b0d)]);
    }

    #[test]
    fn every_length_around_the_block_boundary() {
        // Lengths in a scrambled order, so that long messages come between partly filled lanes.
        let messages: Vec<Vec<u8>> = (0..=130)
            .map(|k| (k * 37) % 131)
            .map(|n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        let mut got = Vec::new();
        sha1_heads(&messages, |i, a, b| got.push((i, (a, b))));
        assert!(got.iter().enumerate().all(|(k, (i, _))| k == *i), "in order");
        let heads: Vec<(u32, u32)> = got.into_iter().map(|(_, h)| h).collect();
        assert_eq!(heads, by_crate(&messages));
    }

    proptest! {
        #[test]
        fn batches_equal_one_by_one(
            messages in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 0..23),
        ) {
            let mut h32 = vec![7];
            sha1_hash32_many(&messages, &mut h32);
            let mut h64 = Vec::new();
            sha1_hash64_many(&messages, &mut h64);
            let want32: Vec<u32> = std::iter::once(7)
                .chain(messages.iter().map(|m| crate::datasketch::sha1_hash32(m)))
                .collect();
            let want64: Vec<u64> =
                messages.iter().map(|m| crate::datasketch::sha1_hash64(m)).collect();
            prop_assert_eq!(h32, want32);
            prop_assert_eq!(h64, want64);
        }
    }
}
