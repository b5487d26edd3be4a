//! Text to matching units: the sequence the passage check compares, with each unit's place in the
//! text as given.
//!
//! A unit is one Han ideograph or kana (Chinese and Japanese are compared character by
//! character, as Chinese thesis checkers do), one letter with its combining marks in the other
//! scripts written without spaces between words (Thai, Lao, Khmer, Myanmar, Tibetan, ...: a run
//! of their letters is a whole sentence, and as one unit no copy of it could ever match in
//! part), or one word of any other script (a maximal run of letters, digits and combining
//! marks). Everything else (punctuation, symbols, whitespace, line breaks) separates units and
//! is never compared, so a swapped comma, a line break inside a sentence or a doubled space
//! changes nothing. Each character is folded as the pipeline's
//! normalizer folds text (NFKC, so full-width `ＶＬＣ` is `vlc`; then lowercase), one character at
//! a time so that every unit keeps the exact code point and byte span it came from, and Chinese
//! is written in one script first (`zh_script`, simplified by default: a copy converted to
//! traditional characters is still a copy).

use neardup_text::{is_unspaced, is_unspaced_alphabetic, zh_script_chars, ZhScript};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use xxhash_rust::xxh3::xxh3_64;

/// One unit: the hash of its folded form and its span in the text as given (code points and
/// UTF-8 bytes, end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    pub hash: u64,
    pub start: u32,
    pub end: u32,
    pub start_byte: u32,
    pub end_byte: u32,
}

/// A word being read: where it started, and its folded bytes (one buffer reused for every word
/// of a text: a string per word made allocation most of the cost of reading a source).
struct Word {
    folded: String,
    start: u32,
    start_byte: u32,
    /// One letter of a script written without spaces: only combining marks join it.
    letter: bool,
    /// A word is being read (the fields above are its).
    open: bool,
}

impl Word {
    /// A word is being read and `f` holds of it.
    fn is_open_and(&self, f: impl Fn(&Word) -> bool) -> bool {
        self.open && f(self)
    }

    /// The word being read, or a new one starting here.
    fn continue_or_start(&mut self, start: u32, start_byte: u32, letter: bool) -> &mut Word {
        if !self.open {
            self.folded.clear();
            (self.start, self.start_byte, self.letter, self.open) =
                (start, start_byte, letter, true);
        }
        self
    }
}

/// The units of `text`, appended to `out` (cleared first), with Chinese characters written in
/// `script` first (the pipeline's OpenCC conversion, read in place: a unit keeps the span of
/// the characters as given). The caller bounds the text's length below 4 GiB, so every offset
/// fits a `u32`.
pub(crate) fn units(text: &str, script: ZhScript, out: &mut Vec<Unit>) {
    out.clear();
    if text.is_ascii() {
        return ascii_units(text.as_bytes(), out);
    }
    let converted = zh_script_chars(text, script);
    let mut converted = converted.iter().peekable();
    let mut word =
        Word { folded: String::new(), start: 0, start_byte: 0, letter: false, open: false };
    let mut chars = 0u32;
    for (byte, given) in text.char_indices() {
        let c = match converted.peek() {
            Some(&&(at, d)) if at == byte => {
                converted.next();
                d
            }
            _ => given,
        };
        let byte = byte as u32;
        let start = chars;
        chars += 1;
        let end_byte = byte + given.len_utf8() as u32;
        if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                if word.is_open_and(|w| w.letter) {
                    end_word(&mut word, start, byte, out);
                }
                let w = word.continue_or_start(start, byte, false);
                w.folded.push(c.to_ascii_lowercase());
            } else {
                end_word(&mut word, start, byte, out);
            }
            continue;
        }
        // Common ideographs fold to themselves (NFKC and case leave U+4E00..U+9FFF alone).
        if ('\u{4E00}'..='\u{9FFF}').contains(&c) {
            end_word(&mut word, start, byte, out);
            out.push(Unit { hash: han_hash(c), start, end: chars, start_byte: byte, end_byte });
            continue;
        }
        // CJK punctuation (U+3000..U+303F but the ideographic marks, U+FF01..U+FF0F) separates
        // units and folds to punctuation.
        if matches!(c, '\u{3000}'..='\u{3004}' | '\u{3008}'..='\u{3020}' | '\u{FF01}'..='\u{FF0F}')
        {
            end_word(&mut word, start, byte, out);
            continue;
        }
        // A character may fold to several (`㈱` is `(株)`); they all map back to it.
        for n in std::iter::once(c).nfkc() {
            for n in n.to_lowercase() {
                if is_unspaced(n) && n.is_alphanumeric() {
                    end_word(&mut word, start, byte, out);
                    out.push(Unit {
                        hash: han_hash(n),
                        start,
                        end: chars,
                        start_byte: byte,
                        end_byte,
                    });
                } else if n.is_alphanumeric() {
                    // A letter of a script without spaces starts a unit of its own (and ends
                    // the word before it); a letter after one starts a word.
                    // Vowel signs are alphabetic marks: they stay with their letter.
                    let mark = is_combining_mark(n);
                    let letter = is_unspaced_alphabetic(n) && !mark;
                    if letter || (!mark && word.is_open_and(|w| w.letter)) {
                        end_word(&mut word, start, byte, out);
                    }
                    let w = word.continue_or_start(start, byte, letter);
                    w.folded.push(n);
                } else if is_combining_mark(n) && word.open {
                    // An accent written apart (`e` + U+0301) stays inside its word.
                    word.folded.push(n);
                } else {
                    end_word(&mut word, start, byte, out);
                }
            }
        }
    }
    end_word(&mut word, chars, text.len() as u32, out);
}

/// The units of an ASCII text, as [`units`] reads them (a word is a run of letters and
/// digits, lowercased; every byte is a code point), without decoding characters or copying a
/// word that has no capital letter: most English text is ASCII, and reading units was a fifth
/// of a check within a corpus.
fn ascii_units(text: &[u8], out: &mut Vec<Unit>) {
    let mut folded: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if !text[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < text.len() && text[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let word = &text[start..i];
        let hash = if word.iter().any(u8::is_ascii_uppercase) {
            folded.clear();
            folded.extend(word.iter().map(u8::to_ascii_lowercase));
            xxh3_64(&folded)
        } else {
            xxh3_64(word)
        };
        let (start, end) = (start as u32, i as u32);
        out.push(Unit { hash, start, end, start_byte: start, end_byte: end });
    }
}

/// Ends the word being read, if any, at code point `end` and byte `end_byte`.
fn end_word(w: &mut Word, end: u32, end_byte: u32, out: &mut Vec<Unit>) {
    if w.open {
        w.open = false;
        out.push(Unit {
            hash: xxh3_64(w.folded.as_bytes()),
            start: w.start,
            end,
            start_byte: w.start_byte,
            end_byte,
        });
    }
}

/// A single ideograph's hash: its code point, mixed (splitmix64's finalizer) so that k-gram
/// hashes built from it spread over all bits.
fn han_hash(c: char) -> u64 {
    let mut z = u64::from(c) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The hash of the `k` units starting at each position (`units.len() + 1 - k` of them, none
/// when the text is shorter than `k` units), appended to `out` (cleared first).
pub(crate) fn kgram_hashes(units: &[Unit], k: usize, out: &mut Vec<u64>) {
    out.clear();
    if units.len() < k || k == 0 {
        return;
    }
    out.extend(units.windows(k).map(|w| {
        w.iter().fold(0x243F_6A88_85A3_08D3u64, |h, u| {
            (h.rotate_left(23) ^ u.hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        })
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        units(text, ZhScript::Keep, &mut out);
        out.iter().map(|u| &text[u.start_byte as usize..u.end_byte as usize]).collect()
    }

    #[test]
    fn chinese_is_compared_by_character_and_other_scripts_by_word() {
        assert_eq!(spans("使用 VLC 播放，好!"), ["使", "用", "VLC", "播", "放", "好"]);
        assert_eq!(spans("It's a test-case."), ["It", "s", "a", "test", "case"]);
        assert!("使".chars().all(neardup_text::is_han));
    }

    #[test]
    fn scripts_without_spaces_are_compared_by_letter_with_its_marks() {
        // Thai: a sentence with no space is units of one letter and its vowel and tone marks.
        assert_eq!(spans("ที่ไทยabc"), ["ที่", "ไ", "ท", "ย", "abc"]);
        // Khmer (a subscript consonant is a mark after the coeng sign) and Myanmar.
        assert_eq!(spans("ប្រទេស"), ["ប្", "រ", "ទេ", "ស"]);
        assert_eq!(spans("မြန်မာ x"), ["မြ", "န်", "မာ", "x"]);
    }

    #[test]
    fn full_width_case_and_line_breaks_do_not_change_the_hashes() {
        let hashes = |t: &str| {
            let mut out = Vec::new();
            units(t, ZhScript::Keep, &mut out);
            out.iter().map(|u| u.hash).collect::<Vec<_>>()
        };
        assert_eq!(hashes("此软件包提供了 ＶＬＣ 模块"), hashes("此\n软件包提供了 vlc 模块"));
        assert_eq!(hashes("Hello,   WORLD"), hashes("hello world"));
        assert_ne!(hashes("hello world"), hashes("hello word"));
    }

    #[cfg(feature = "zh")]
    #[test]
    fn traditional_and_simplified_writings_are_one_in_place() {
        let hashes = |t: &str, script| {
            let mut out = Vec::new();
            units(t, script, &mut out);
            out.iter()
                .map(|u| (u.hash, u.start, u.end, u.start_byte, u.end_byte))
                .collect::<Vec<_>>()
        };
        let hk = "總體安排已經確定，軟體 OK";
        let cn = "总体安排已经确定，软体 OK";
        assert_eq!(hashes(hk, ZhScript::Simplified), hashes(cn, ZhScript::Simplified));
        assert_ne!(hashes(hk, ZhScript::Keep), hashes(cn, ZhScript::Keep));
    }

    proptest::proptest! {
        /// The ASCII path gives the units the general one gives (an ideographic space after
        /// the text sends it through the general path and adds no unit).
        #[test]
        fn ascii_text_gives_the_units_of_the_general_reading(
            text in "[ -~\t\n]{0,80}"
        ) {
            let mut fast = Vec::new();
            units(&text, ZhScript::Keep, &mut fast);
            let mut general = Vec::new();
            units(&format!("{text} \u{3000}"), ZhScript::Keep, &mut general);
            proptest::prop_assert_eq!(fast, general);
        }
    }

    #[test]
    fn offsets_are_code_points_and_bytes_of_the_text_as_given() {
        let text = "ａ中b\u{301}c";
        let mut out = Vec::new();
        units(text, ZhScript::Keep, &mut out);
        let got: Vec<_> = out.iter().map(|u| (u.start, u.end, u.start_byte, u.end_byte)).collect();
        // `ａ` is a word, `中` a unit, `b` + combining acute + `c` one word.
        assert_eq!(got, [(0, 1, 0, 3), (1, 2, 3, 6), (2, 5, 6, 10)]);
    }
}
