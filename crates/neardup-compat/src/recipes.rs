//! Two SimHash recipes in wide use, copied from widely read articles, reproduced bit for bit
//! (`tests/golden/recipes/README.md` gives the vectors and their provenance).
//!
//! **gojieba + FNV** (Go, 64 bits): `jieba.ExtractWithWeight(text, topk)` (gojieba v1.4.7: its
//! bundled cppjieba's MixSegment and TF-IDF keyword extractor, the yanyiwu profile's code with
//! [`Flavor::Gojieba`]'s data), then for each keyword `b := int64(fnv64a(word))` and
//! `s := fmt.Sprintf("%064b", b)`: every character of `s` that is not `'0'` votes `+weight` for
//! its position, `'0'` votes `-weight`; the `f64` sums run in keyword order; bit = sum > 0. The
//! quirk: for a hash with its top bit set, `int64` is negative and Go prints a minus sign and
//! the absolute value in 63 digits, so position 0 votes `+` (the `-` is not `'0'`) and the other
//! positions carry the negated value's bits. The text is cut at its first NUL (a cgo C string).
//!
//! **jieba + MD5** (Python, 32 bits): `[w for w in jieba.cut(s) if re.match('[\u4e00-\u9fa5]+',
//! w)]` (Python jieba 0.42.1, default dictionary, HMM on: jieba-rs follows the same algorithm
//! and dictionary, and agrees on every vector); each distinct word weighs its count over the
//! number of kept words; its 32 bits are the 32 hex digits of `md5(word.encode('utf-8'))`, a
//! digit 8-9 or a-f giving 1 (the high bit of each nibble); votes are summed in `f64` in the
//! words' first-occurrence order (the original sums in `set` order, which depends on Python's
//! hash seed; the two agree wherever no exact tie makes the order matter). A text with no such
//! word makes the original raise: here it is [`RecipeError::NoHanWords`].

use std::fmt;

use md5::{Digest, Md5};

use crate::yanyiwu::{self, Flavor, Keyword};

/// gojieba v1.4.7's `ExtractWithWeight` + FNV-1a 64 fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub struct GojiebaFingerprint {
    /// The 64 bits as the Go program prints them, `'0'` and `'1'`, first bit first.
    pub bits: String,
    /// The same bits as an unsigned number (the first character is the most significant bit).
    pub value: u64,
    /// The keywords with their weights, in the order they voted.
    pub keywords: Vec<Keyword>,
}

/// The Python jieba + MD5 fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub struct Md5Fingerprint {
    /// The 32 bits, `'0'` and `'1'`, first bit first.
    pub bits: String,
    /// The same bits as an unsigned number (the first character is the most significant bit).
    pub value: u32,
    /// Each distinct kept word with its weight (count / kept words), in first-occurrence order.
    pub words: Vec<(String, f64)>,
}

/// A text the recipe cannot fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecipeError {
    /// The jieba + MD5 recipe kept no word (none starts with a character in U+4E00..U+9FA5):
    /// the original raises `TypeError` on such a text.
    NoHanWords,
}

impl fmt::Display for RecipeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecipeError::NoHanWords => write!(
                f,
                "the text has no word of Han characters (U+4E00..U+9FA5), so the jieba-md5 \
                 recipe has nothing to hash (the original raises TypeError)"
            ),
        }
    }
}

impl std::error::Error for RecipeError {}

/// FNV-1a, 64 bits (Go's `hash/fnv` `New64a`).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `fmt.Sprintf("%064b", int64(h))`: 64 binary digits, or for a negative value `-` and the
/// absolute value's digits zero-padded to 63 (65 characters for `i64::MIN`, whose absolute
/// value needs 64 digits).
pub fn go_binary(h: u64) -> String {
    let v = h as i64;
    if v >= 0 {
        format!("{v:064b}")
    } else {
        format!("-{:063b}", v.unsigned_abs())
    }
}

/// The gojieba + FNV fingerprint of `text` from its `topk` keywords.
pub fn gojieba_simhash(text: &[u8], topk: usize) -> GojiebaFingerprint {
    // cgo hands C the text up to its first NUL.
    let text = text.split(|&b| b == 0).next().unwrap_or_default();
    let keywords = yanyiwu::simhasher_for(Flavor::Gojieba).keywords(text, topk);
    let mut sums = [0.0f64; 64];
    for k in &keywords {
        // The Go loop ranges over the string's characters; a 65th (i64::MIN only, probability
        // 2^-64) would index past its 64 sums and panic there: it is not voted here.
        for (sum, c) in sums.iter_mut().zip(go_binary(fnv1a64(&k.word)).chars()) {
            if c == '0' {
                *sum -= k.weight;
            } else {
                *sum += k.weight;
            }
        }
    }
    let bits: String = sums.iter().map(|&s| if s > 0.0 { '1' } else { '0' }).collect();
    let value = sums.iter().fold(0u64, |v, &s| (v << 1) | u64::from(s > 0.0));
    GojiebaFingerprint { bits, value, keywords }
}

/// Python jieba's `jieba.cut(text)` (precise mode, HMM on), as jieba-rs computes it.
pub fn jieba_cut(text: &str) -> Vec<&str> {
    neardup_text::zh::jieba().cut(text, true).into_iter().map(|t| t.word).collect()
}

/// The words the jieba + MD5 recipe keeps: those whose first character is in U+4E00..U+9FA5
/// (`re.match` anchors at the start only).
pub fn han_words<'t>(cut: &[&'t str]) -> Vec<&'t str> {
    cut.iter()
        .copied()
        .filter(|w| w.chars().next().is_some_and(|c| ('\u{4e00}'..='\u{9fa5}').contains(&c)))
        .collect()
}

/// The 32 bits of `word`: the high bit of each of the 32 nibbles of its MD5 digest, first
/// nibble first (hex digits 8-9 and a-f give 1).
pub fn md5_bits(word: &[u8]) -> u32 {
    let digest = Md5::digest(word);
    digest
        .iter()
        .fold(0u32, |v, &byte| (v << 2) | u32::from(byte >> 7) << 1 | u32::from((byte >> 3) & 1))
}

/// The jieba + MD5 fingerprint of `text`.
pub fn jieba_md5_simhash(text: &str) -> Result<Md5Fingerprint, RecipeError> {
    let cut = jieba_cut(text);
    let kept = han_words(&cut);
    if kept.is_empty() {
        return Err(RecipeError::NoHanWords);
    }
    // Distinct words in first-occurrence order, with their counts.
    let mut words: Vec<(&str, usize)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for w in &kept {
        match index.get(w) {
            Some(&i) => words[i].1 += 1,
            None => {
                index.insert(w, words.len());
                words.push((w, 1));
            }
        }
    }
    let total = kept.len() as f64;
    let mut sums = [0.0f64; 32];
    let mut out = Vec::with_capacity(words.len());
    for (w, count) in words {
        let weight = count as f64 / total;
        let bits = md5_bits(w.as_bytes());
        for (i, sum) in sums.iter_mut().enumerate() {
            if (bits >> (31 - i)) & 1 == 1 {
                *sum += weight;
            } else {
                *sum -= weight;
            }
        }
        out.push((w.to_string(), weight));
    }
    let bits: String = sums.iter().map(|&s| if s > 0.0 { '1' } else { '0' }).collect();
    let value = sums.iter().fold(0u32, |v, &s| (v << 1) | u32::from(s > 0.0));
    Ok(Md5Fingerprint { bits, value, words: out })
}

/// The Hamming distance of two fingerprints given as bit strings of the same length.
pub fn bit_distance(a: &str, b: &str) -> Option<u32> {
    (a.len() == b.len()).then(|| a.bytes().zip(b.bytes()).filter(|(x, y)| x != y).count() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_prints_negative_values_with_a_sign() {
        assert_eq!(go_binary(5), format!("{:064b}", 5));
        let s = go_binary(u64::MAX); // int64 -1
        assert_eq!(s.len(), 64);
        assert_eq!(&s[..1], "-");
        assert_eq!(&s[1..], &format!("{:063b}", 1));
        assert_eq!(go_binary(1 << 63).len(), 65); // i64::MIN
    }

    #[test]
    fn fnv_and_md5_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        // md5("") = d41d8cd98f00b204e9800998ecf8427e: nibbles >= 8 give 1.
        let expected = "d41d8cd98f00b204e9800998ecf8427e"
            .chars()
            .map(|c| if c.to_digit(16).expect("hex") >= 8 { '1' } else { '0' })
            .collect::<String>();
        assert_eq!(format!("{:032b}", md5_bits(b"")), expected);
    }

    #[test]
    fn no_han_word_is_an_error() {
        assert_eq!(jieba_md5_simhash("hello world 123"), Err(RecipeError::NoHanWords));
        assert_eq!(jieba_md5_simhash(""), Err(RecipeError::NoHanWords));
    }
}
