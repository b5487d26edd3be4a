//! Lucene's `MinHashFilter`, which Elasticsearch exposes as the `min_hash` token filter
//! (SPEC.md B), behind Lucene's `WhitespaceTokenizer` and an optional `ShingleFilter(k, k)`.
//!
//! Lucene works on UTF-16: tokens are sequences of code units, hashed as their little-endian
//! bytes, and the filter's output tokens are arbitrary code units (unpaired surrogates included),
//! so they are modelled as `Vec<u16>`.

use std::collections::BTreeSet;

use neardup_sketch::murmur3_x64_128;

/// The filter's parameters, named as in Elasticsearch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinHashParams {
    /// `hash_count`: how many hash functions.
    pub hash_count: u32,
    /// `bucket_count`: buckets per hash function.
    pub bucket_count: u32,
    /// `hash_set_size`: minima kept per bucket.
    pub hash_set_size: u32,
    /// `with_rotation`: fill empty buckets from the next non-empty one (only when
    /// `hash_set_size` is 1).
    pub with_rotation: bool,
}

impl Default for MinHashParams {
    /// Elasticsearch's defaults: 1 / 512 / 1 / true.
    fn default() -> Self {
        MinHashParams { hash_count: 1, bucket_count: 512, hash_set_size: 1, with_rotation: true }
    }
}

impl MinHashParams {
    /// Checks that every count is positive, as Lucene's factory does, and within bounds: each
    /// count at most [`MAX_HASH_COUNT`], [`MAX_BUCKET_COUNT`] and [`MAX_HASH_SET_SIZE`], and at
    /// most [`MAX_TOKENS`] output tokens per document (`hash_count x bucket_count x
    /// hash_set_size`), so that no option allocates or works without bound.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v, max) in [
            ("hash_count", self.hash_count, MAX_HASH_COUNT),
            ("bucket_count", self.bucket_count, MAX_BUCKET_COUNT),
            ("hash_set_size", self.hash_set_size, MAX_HASH_SET_SIZE),
        ] {
            if v == 0 {
                return Err(format!("{name} must be greater than 0"));
            }
            if v > max {
                return Err(format!("{name} {v} is above the limit of {max}"));
            }
        }
        let tokens = u64::from(self.hash_count)
            * u64::from(self.bucket_count)
            * u64::from(self.hash_set_size);
        if tokens > MAX_TOKENS {
            return Err(format!(
                "hash_count x bucket_count x hash_set_size = {tokens} tokens per document, above \
                 the limit of {MAX_TOKENS}"
            ));
        }
        Ok(())
    }
}

/// The largest `hash_count`.
pub const MAX_HASH_COUNT: u32 = 1024;
/// The largest `bucket_count`.
pub const MAX_BUCKET_COUNT: u32 = 65_536;
/// The largest `hash_set_size`.
pub const MAX_HASH_SET_SIZE: u32 = 1024;
/// The most output tokens per document (`hash_count x bucket_count x hash_set_size`).
pub const MAX_TOKENS: u64 = 1 << 20;

/// A token of the input stream: its code units and end offset (in code units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputToken {
    /// UTF-16 code units.
    pub units: Vec<u16>,
    /// Offset one past its last code unit in the original text.
    pub end_offset: usize,
}

/// The filter's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinHashOutput {
    /// The emitted tokens, as UTF-16 code units.
    pub tokens: Vec<Vec<u16>>,
    /// Start offset of every emitted token (always 0).
    pub start_offset: usize,
    /// End offset of every emitted token: that of the last input token.
    pub end_offset: usize,
}

/// `Character.isWhitespace` of Java: space, line and paragraph separators except the no-break
/// spaces U+00A0, U+2007 and U+202F, plus U+0009..U+000D and U+001C..U+001F. (U+0085 is not.)
pub fn java_is_whitespace(c: char) -> bool {
    matches!(c,
        '\u{9}'..='\u{d}'
        | '\u{1c}'..='\u{20}'
        | '\u{1680}'
        | '\u{2000}'..='\u{2006}'
        | '\u{2008}'..='\u{200a}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{205f}'
        | '\u{3000}')
}

/// Lucene's `CharTokenizer` maximum token length, in code units.
const MAX_TOKEN_LEN: usize = 255;

/// Lucene's `WhitespaceTokenizer`: maximal runs of non-whitespace code points, cut after 255
/// code units as `CharTokenizer` does. Offsets count UTF-16 code units.
pub fn whitespace_tokenize(text: &str) -> Vec<InputToken> {
    let mut tokens = Vec::new();
    let mut current: Vec<u16> = Vec::new();
    let mut offset = 0usize;
    let mut buf = [0u16; 2];
    for c in text.chars() {
        let units = c.encode_utf16(&mut buf);
        offset += units.len();
        if java_is_whitespace(c) {
            if !current.is_empty() {
                tokens.push(InputToken {
                    units: std::mem::take(&mut current),
                    end_offset: offset - units.len(),
                });
            }
            continue;
        }
        current.extend_from_slice(units);
        if current.len() >= MAX_TOKEN_LEN {
            tokens.push(InputToken { units: std::mem::take(&mut current), end_offset: offset });
        }
    }
    if !current.is_empty() {
        tokens.push(InputToken { units: current, end_offset: offset });
    }
    tokens
}

/// Tokens given as they are (the filter's input when the caller has tokenized), laid end to end:
/// each one's end offset is the total of the code units up to and including it.
pub fn given_tokens<S: AsRef<str>>(tokens: &[S]) -> Vec<InputToken> {
    let mut end = 0;
    tokens
        .iter()
        .map(|t| {
            let units: Vec<u16> = t.as_ref().encode_utf16().collect();
            end += units.len();
            InputToken { units, end_offset: end }
        })
        .collect()
}

/// `ShingleFilter(k, k)` with `outputUnigrams = false` and separator `" "`: every run of `k`
/// consecutive tokens, joined by one space; nothing when there are fewer than `k` tokens.
pub fn shingles(tokens: &[InputToken], k: usize) -> Vec<InputToken> {
    if k <= 1 {
        return tokens.to_vec();
    }
    tokens
        .windows(k)
        .map(|w| {
            let mut units = Vec::new();
            for (i, t) in w.iter().enumerate() {
                if i > 0 {
                    units.push(u16::from(b' '));
                }
                units.extend_from_slice(&t.units);
            }
            InputToken { units, end_offset: w[k - 1].end_offset }
        })
        .collect()
}

/// MurmurHash3 x64_128 of the code units' little-endian bytes.
fn hash_units(units: &[u16]) -> (u64, u64) {
    let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
    murmur3_x64_128(&bytes, 0)
}

/// `intHash(i)`: MurmurHash3 of the int's 4 big-endian bytes.
fn int_hash(i: u32) -> (u64, u64) {
    murmur3_x64_128(&i.to_be_bytes(), 0)
}

/// Runs the filter over `tokens` (what reached it, in stream order).
pub fn min_hash(tokens: &[InputToken], params: &MinHashParams) -> Result<MinHashOutput, String> {
    params.validate()?;
    let MinHashParams { hash_count, bucket_count, hash_set_size, with_rotation } = *params;
    let end_offset = tokens.last().map_or(0, |t| t.end_offset);
    if tokens.is_empty() {
        return Ok(MinHashOutput { tokens: Vec::new(), start_offset: 0, end_offset });
    }
    let buckets = bucket_count as usize;
    let bucket_size: u64 = (1u64 << 32).div_ceil(u64::from(bucket_count));
    let salts: Vec<(u64, u64)> = (0..hash_count).map(int_hash).collect();
    // sets[i][bucket]: ascending (v2, v1) pairs, at most hash_set_size of them.
    let mut sets: Vec<Vec<BTreeSet<(u64, u64)>>> =
        vec![vec![BTreeSet::new(); buckets]; hash_count as usize];
    for token in tokens {
        let (h1, h2) = hash_units(&token.units);
        for (i, &(s1, s2)) in salts.iter().enumerate() {
            let v1 = h1.wrapping_mul(37).wrapping_add(s1);
            let v2 = h2.wrapping_mul(37).wrapping_add(s2);
            let bucket = ((v2 >> 32) / bucket_size) as usize;
            let set = &mut sets[i][bucket];
            let x = (v2, v1);
            if set.len() >= hash_set_size as usize {
                let max = *set.last().expect("a full set is not empty");
                if x >= max {
                    continue;
                }
                // Lucene removes the maximum before inserting: if x is already in the set, the
                // set shrinks by one (SPEC.md B.3).
                set.pop_last();
            }
            set.insert(x);
        }
    }
    if with_rotation && hash_set_size == 1 {
        for per_hash in &mut sets {
            for b in 0..buckets {
                if !per_hash[b].is_empty() {
                    continue;
                }
                let source = (1..buckets)
                    .map(|step| (b + step) % buckets)
                    .find(|&j| !per_hash[j].is_empty());
                if let Some(j) = source {
                    let min = *per_hash[j].first().expect("non-empty");
                    per_hash[b].insert(min);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (i, per_hash) in sets.iter().enumerate() {
        for set in per_hash {
            for &(v2, v1) in set {
                let mut units = Vec::with_capacity(8);
                if hash_count > 1 {
                    units.push(((i >> 16) & 0xffff) as u16);
                    units.push((i & 0xffff) as u16);
                }
                for shift in [48, 32, 16, 0] {
                    units.push((v2 >> shift) as u16);
                }
                units.push((v1 >> 48) as u16);
                units.push((v1 >> 32) as u16);
                if hash_count == 1 {
                    units.push((v1 >> 16) as u16);
                    units.push(v1 as u16);
                }
                out.push(units);
            }
        }
    }
    Ok(MinHashOutput { tokens: out, start_offset: 0, end_offset })
}

/// Code units as lowercase hex, 4 digits each.
pub fn units_hex(units: &[u16]) -> String {
    units.iter().map(|u| format!("{u:04x}")).collect()
}

/// The UTF-8 bytes Lucene indexes for a token: valid surrogate pairs become 4-byte sequences,
/// unpaired surrogates become U+FFFD (EF BF BD).
pub fn indexed_utf8(units: &[u16]) -> Vec<u8> {
    String::from_utf16_lossy(units).into_bytes()
}

/// The text's length in UTF-16 code units (Lucene's final offset).
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_hash_zero_matches_lucene() {
        let (v1, v2) = int_hash(0);
        assert_eq!(v1 as i64, -3_485_513_579_396_041_028);
        assert_eq!(v2 as i64, 6_383_328_099_726_337_777);
    }

    #[test]
    fn java_whitespace_differs_from_rust_where_java_does() {
        assert!(!java_is_whitespace('\u{a0}') && '\u{a0}'.is_whitespace());
        assert!(!java_is_whitespace('\u{85}') && '\u{85}'.is_whitespace());
        assert!(java_is_whitespace('\u{1f}') && !'\u{1f}'.is_whitespace());
        assert!(java_is_whitespace('\u{3000}'));
    }

    #[test]
    fn long_tokens_are_cut_at_255_units() {
        let text = "a".repeat(600);
        let tokens = whitespace_tokenize(&text);
        assert_eq!(tokens.iter().map(|t| t.units.len()).collect::<Vec<_>>(), [255, 255, 90]);
    }

    #[test]
    fn zero_counts_are_rejected() {
        let p = MinHashParams { bucket_count: 0, ..MinHashParams::default() };
        assert!(min_hash(&[], &p).is_err());
    }
}
