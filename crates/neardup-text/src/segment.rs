//! Segmentation: text -> tokens that cover it.
//!
//! Every segmenter appends tokens whose spans tile the input exactly: concatenated, they give the
//! text back. Whitespace and punctuation are tokens too (of kind [`TokenKind::Space`] and
//! [`TokenKind::Punct`]); the token filter decides what to drop. Tokens are byte spans, so no
//! string is copied.

use std::fmt;

use serde::{Deserialize, Serialize};
use unicode_segmentation::UnicodeSegmentation;

#[cfg(feature = "zh")]
use crate::is_han;

/// What a token holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// At least one letter or digit.
    Word,
    /// No letter, digit or whitespace: punctuation, symbols, emoji.
    Punct,
    /// Only whitespace.
    Space,
}

impl TokenKind {
    /// The kind of a piece of text.
    #[inline]
    pub fn of(s: &str) -> TokenKind {
        // Fast answers for the common cases, from the first bytes: an ASCII letter or digit, or a
        // character in U+4000..U+9FFF (lead byte E4..E9), all CJK ideographs except the Yijing
        // hexagram symbols U+4DC0..U+4DFF (E4 B7 xx), which are not alphanumeric.
        let b = s.as_bytes();
        if let Some(&first) = b.first() {
            if first.is_ascii_alphanumeric()
                || ((0xE4..=0xE9).contains(&first) && !(first == 0xE4 && b.get(1) == Some(&0xB7)))
            {
                return TokenKind::Word;
            }
        }
        if s.chars().any(crate::script::is_alphanumeric) {
            TokenKind::Word
        } else if s.chars().all(char::is_whitespace) {
            TokenKind::Space
        } else {
            TokenKind::Punct
        }
    }
}

/// A token: a byte span of the normalized text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Token {
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
    /// What it holds.
    pub kind: TokenKind,
}

impl Token {
    /// The token's text within `text` (the text it was cut from).
    #[inline]
    pub fn text<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.end]
    }
}

/// Cuts text into tokens that cover it.
pub trait Segmenter: Send + Sync + fmt::Debug {
    /// Appends to `out` the tokens of `text`, in order; their spans tile `text`.
    fn segment(&self, text: &str, out: &mut Vec<Token>);
}

/// Which segmenter to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SegmenterKind {
    /// Runs of Han characters through jieba (HMM on), everything else by Unicode word boundaries
    /// (UAX #29) with a fast ASCII path. Without the `zh` feature, Unicode words everywhere.
    #[default]
    Auto,
    /// The whole text through jieba (HMM on), including its rules for Latin text.
    Jieba,
    /// Unicode word boundaries (UAX #29) everywhere: each Han character is its own word.
    Unicode,
    /// Split on whitespace only.
    Whitespace,
    /// One token per character.
    Chars,
}

impl SegmenterKind {
    /// Builds the segmenter.
    pub fn build(self) -> Box<dyn Segmenter> {
        match self {
            #[cfg(feature = "zh")]
            SegmenterKind::Auto => Box::new(AutoSegmenter::new()),
            #[cfg(feature = "zh")]
            SegmenterKind::Jieba => Box::new(ChineseSegmenter::new()),
            #[cfg(not(feature = "zh"))]
            SegmenterKind::Auto | SegmenterKind::Jieba => Box::new(UnicodeWordSegmenter),
            SegmenterKind::Unicode => Box::new(UnicodeWordSegmenter),
            SegmenterKind::Whitespace => Box::new(WhitespaceSegmenter),
            SegmenterKind::Chars => Box::new(CharSegmenter),
        }
    }
}

/// Segments `text` with a fresh vector; a convenience for tests and one-off calls.
pub fn segment_text(segmenter: &dyn Segmenter, text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    segmenter.segment(text, &mut out);
    out
}

/// Unicode word boundaries (UAX #29), with an ASCII fast path that gives the same words.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnicodeWordSegmenter;

impl Segmenter for UnicodeWordSegmenter {
    fn segment(&self, text: &str, out: &mut Vec<Token>) {
        segment_words(text, 0, out);
    }
}

/// Unicode word segmentation of `text`, whose first byte is at `base` in the full text.
fn segment_words(text: &str, base: usize, out: &mut Vec<Token>) {
    if text.is_ascii() {
        segment_ascii(text.as_bytes(), base, out);
    } else {
        for (start, piece) in text.split_word_bound_indices() {
            out.push(Token {
                start: base + start,
                end: base + start + piece.len(),
                kind: TokenKind::of(piece),
            });
        }
    }
}

/// ASCII classes of the UAX #29 word-break rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wb {
    Letter,
    Numeric,
    ExtendNumLet,
    MidLetter,
    MidNumLet,
    MidNum,
    Space,
    Other,
}

#[inline]
fn wb(b: u8) -> Wb {
    WB[b as usize]
}

/// `wb` as a table: one load per byte in the segmenter's inner loop.
static WB: [Wb; 256] = {
    let mut table = [Wb::Other; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = match c {
            b'a'..=b'z' | b'A'..=b'Z' => Wb::Letter,
            b'0'..=b'9' => Wb::Numeric,
            b'_' => Wb::ExtendNumLet,
            b':' => Wb::MidLetter,
            b'.' | b'\'' => Wb::MidNumLet,
            b',' | b';' => Wb::MidNum,
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => Wb::Space,
            _ => Wb::Other,
        };
        b += 1;
    }
    table
};

/// The word rules of UAX #29 restricted to ASCII (WB5-WB13b): letters, digits and `_` join;
/// `:` `.` `'` join two letters; `.` `'` `,` `;` join two digits. Whitespace runs become one
/// token and every other byte is its own token.
fn segment_ascii(bytes: &[u8], base: usize, out: &mut Vec<Token>) {
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        let start = i;
        let class = wb(bytes[i]);
        match class {
            Wb::Letter | Wb::Numeric | Wb::ExtendNumLet => {
                let mut prev = class;
                i += 1;
                let mut has_alnum = class != Wb::ExtendNumLet;
                while i < n {
                    // The common case first: a run of letters (or digits) of the same class.
                    while i < n && wb(bytes[i]) == prev && prev != Wb::ExtendNumLet {
                        i += 1;
                    }
                    if i == n {
                        break;
                    }
                    let c = wb(bytes[i]);
                    match c {
                        Wb::Letter | Wb::Numeric | Wb::ExtendNumLet => {
                            has_alnum |= c != Wb::ExtendNumLet;
                            prev = c;
                            i += 1;
                        }
                        Wb::MidLetter | Wb::MidNumLet | Wb::MidNum if i + 1 < n => {
                            let after = wb(bytes[i + 1]);
                            let letters = prev == Wb::Letter
                                && after == Wb::Letter
                                && matches!(c, Wb::MidLetter | Wb::MidNumLet);
                            let digits = prev == Wb::Numeric
                                && after == Wb::Numeric
                                && matches!(c, Wb::MidNum | Wb::MidNumLet);
                            if letters || digits {
                                prev = after;
                                i += 2;
                            } else {
                                break;
                            }
                        }
                        _ => break,
                    }
                }
                let kind = if has_alnum { TokenKind::Word } else { TokenKind::Punct };
                out.push(Token { start: base + start, end: base + i, kind });
            }
            Wb::Space => {
                while i < n && wb(bytes[i]) == Wb::Space {
                    i += 1;
                }
                out.push(Token { start: base + start, end: base + i, kind: TokenKind::Space });
            }
            _ => {
                i += 1;
                out.push(Token { start: base + start, end: base + i, kind: TokenKind::Punct });
            }
        }
    }
}

/// Splits on whitespace: each run of non-whitespace is one token.
#[derive(Debug, Clone, Copy, Default)]
pub struct WhitespaceSegmenter;

impl Segmenter for WhitespaceSegmenter {
    fn segment(&self, text: &str, out: &mut Vec<Token>) {
        let bytes = text.as_bytes();
        if text.is_ascii() {
            // Alternate runs of non-space and space bytes.
            let n = bytes.len();
            let mut pos = 0;
            while pos < n {
                let start = pos;
                let space = ASCII_SPACE[bytes[pos] as usize];
                pos += 1;
                while pos < n && ASCII_SPACE[bytes[pos] as usize] == space {
                    pos += 1;
                }
                out.push(whitespace_token(text, start, pos, space));
            }
            return;
        }
        // Scans bytes: every non-ASCII whitespace character starts with C2, E1, E2 or E3, so
        // other bytes need no decoding.
        let mut start = 0;
        let mut in_space: Option<bool> = None;
        let mut pos = 0;
        while pos < bytes.len() {
            let b = bytes[pos];
            let (space, len) = if b < 0x80 {
                (b.is_ascii_whitespace() || b == 0x0b, 1)
            } else if matches!(b, 0xC2 | 0xE1 | 0xE2 | 0xE3) {
                let ch = text[pos..].chars().next().expect("char boundary");
                (ch.is_whitespace(), ch.len_utf8())
            } else {
                (false, utf8_len(b))
            };
            if in_space != Some(space) {
                if let Some(was_space) = in_space {
                    out.push(whitespace_token(text, start, pos, was_space));
                }
                start = pos;
                in_space = Some(space);
            }
            pos += len;
        }
        if let Some(was_space) = in_space {
            out.push(whitespace_token(text, start, text.len(), was_space));
        }
    }
}

/// ASCII bytes that are whitespace (`char::is_whitespace`: tab, LF, VT, FF, CR, space).
static ASCII_SPACE: [bool; 256] = {
    let mut t = [false; 256];
    t[b'\t' as usize] = true;
    t[b'\n' as usize] = true;
    t[0x0b] = true;
    t[0x0c] = true;
    t[b'\r' as usize] = true;
    t[b' ' as usize] = true;
    t
};

/// The length of the UTF-8 sequence that starts with lead byte `b`.
#[inline]
fn utf8_len(b: u8) -> usize {
    match b {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        _ => 2,
    }
}

fn whitespace_token(text: &str, start: usize, end: usize, space: bool) -> Token {
    let kind = if space { TokenKind::Space } else { TokenKind::of(&text[start..end]) };
    Token { start, end, kind }
}

/// One token per character (Unicode scalar value).
#[derive(Debug, Clone, Copy, Default)]
pub struct CharSegmenter;

impl Segmenter for CharSegmenter {
    fn segment(&self, text: &str, out: &mut Vec<Token>) {
        for (i, ch) in text.char_indices() {
            let end = i + ch.len_utf8();
            out.push(Token { start: i, end, kind: TokenKind::of(&text[i..end]) });
        }
    }
}

/// Chinese word segmentation of the whole text with jieba (max-probability path over the
/// dictionary DAG, HMM for unknown words). The dictionary is loaded on first use, once per
/// process, so that pipelines which never meet Han text do not pay for it.
#[cfg(feature = "zh")]
#[derive(Debug, Default)]
pub struct ChineseSegmenter;

#[cfg(feature = "zh")]
impl ChineseSegmenter {
    /// A segmenter over jieba's bundled dictionary.
    pub fn new() -> ChineseSegmenter {
        ChineseSegmenter
    }

    fn cut(&self, text: &str, base: usize, out: &mut Vec<Token>) {
        for t in crate::zh::jieba().cut(text, true) {
            out.push(Token {
                start: base + t.byte_start,
                end: base + t.byte_end,
                kind: TokenKind::of(t.word),
            });
        }
    }
}

#[cfg(feature = "zh")]
impl Segmenter for ChineseSegmenter {
    fn segment(&self, text: &str, out: &mut Vec<Token>) {
        self.cut(text, 0, out);
    }
}

/// Runs of Han characters through jieba, everything else by Unicode word boundaries.
#[cfg(feature = "zh")]
#[derive(Debug, Default)]
pub struct AutoSegmenter {
    chinese: ChineseSegmenter,
}

#[cfg(feature = "zh")]
impl AutoSegmenter {
    /// A segmenter over jieba's bundled dictionary.
    pub fn new() -> AutoSegmenter {
        AutoSegmenter { chinese: ChineseSegmenter::new() }
    }
}

#[cfg(feature = "zh")]
impl Segmenter for AutoSegmenter {
    fn segment(&self, text: &str, out: &mut Vec<Token>) {
        if text.is_ascii() {
            segment_ascii(text.as_bytes(), 0, out);
            return;
        }
        let mut run_start = 0;
        let mut run_han: Option<bool> = None;
        for (i, ch) in text.char_indices() {
            let han = is_han(ch);
            if run_han != Some(han) {
                if let Some(was_han) = run_han {
                    self.run(text, run_start, i, was_han, out);
                }
                run_start = i;
                run_han = Some(han);
            }
        }
        if let Some(was_han) = run_han {
            self.run(text, run_start, text.len(), was_han, out);
        }
    }
}

#[cfg(feature = "zh")]
impl AutoSegmenter {
    fn run(&self, text: &str, start: usize, end: usize, han: bool, out: &mut Vec<Token>) {
        if han {
            self.chinese.cut(&text[start..end], start, out);
        } else {
            segment_words(&text[start..end], start, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(seg: &dyn Segmenter, text: &str) -> Vec<String> {
        segment_text(seg, text)
            .iter()
            .filter(|t| t.kind == TokenKind::Word)
            .map(|t| t.text(text).to_string())
            .collect()
    }

    fn assert_covers(seg: &dyn Segmenter, text: &str) -> Result<(), TestCaseError> {
        let tokens = segment_text(seg, text);
        let mut pos = 0;
        for t in &tokens {
            prop_assert_eq!(t.start, pos, "gap or overlap at {} in {:?}", pos, text);
            prop_assert!(t.end > t.start, "empty token in {:?}", text);
            prop_assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
            pos = t.end;
        }
        prop_assert_eq!(pos, text.len());
        Ok(())
    }

    #[test]
    fn kind_fast_path_agrees_with_the_definition() {
        for c in ('\u{3000}'..='\u{a000}').chain(['a', 'Z', '0', ' ', ',', '_']) {
            let s = c.to_string();
            let expected = if c.is_alphanumeric() {
                TokenKind::Word
            } else if c.is_whitespace() {
                TokenKind::Space
            } else {
                TokenKind::Punct
            };
            assert_eq!(TokenKind::of(&s), expected, "{c:?}");
        }
    }

    #[test]
    fn ascii_words() {
        let s = UnicodeWordSegmenter;
        assert_eq!(
            words(&s, "Don't stop: 3.14, e.g. a_b -- x:y 1,000;2"),
            ["Don't", "stop", "3.14", "e.g", "a_b", "x:y", "1,000;2"]
        );
    }

    #[test]
    fn unicode_words() {
        let s = UnicodeWordSegmenter;
        assert_eq!(words(&s, "Grüße, мир! 東京"), ["Grüße", "мир", "東", "京"]);
    }

    #[cfg(feature = "zh")]
    #[test]
    fn auto_uses_jieba_for_han_runs() {
        let s = AutoSegmenter::new();
        assert_eq!(
            words(&s, "我们在北京大学学习Near-duplicate检测"),
            ["我们", "在", "北京大学", "学习", "Near", "duplicate", "检测"]
        );
    }

    #[test]
    fn whitespace_and_chars() {
        assert_eq!(words(&WhitespaceSegmenter, " a-b  c\td "), ["a-b", "c", "d"]);
        assert_eq!(words(&CharSegmenter, "a,中"), ["a", "中"]);
    }

    fn all_segmenters() -> Vec<Box<dyn Segmenter>> {
        [
            SegmenterKind::Auto,
            SegmenterKind::Jieba,
            SegmenterKind::Unicode,
            SegmenterKind::Whitespace,
            SegmenterKind::Chars,
        ]
        .into_iter()
        .map(SegmenterKind::build)
        .collect()
    }

    proptest! {
        #[test]
        fn every_segmenter_covers_arbitrary_unicode(text in "\\PC{0,80}|.{0,40}") {
            for seg in all_segmenters() {
                assert_covers(seg.as_ref(), &text)?;
            }
        }

        #[test]
        fn every_segmenter_covers_mixed_chinese(
            text in "[a-zA-Z0-9 .,:'_\\-]{0,10}[\u{4e00}-\u{4e80}，。、！ ]{0,20}[a-z0-9 ]{0,10}[\u{4e00}-\u{9fff}]{0,10}"
        ) {
            for seg in all_segmenters() {
                assert_covers(seg.as_ref(), &text)?;
            }
        }

        /// The byte-scanning whitespace segmenter splits exactly where `char::is_whitespace` says.
        #[test]
        fn whitespace_segmenter_equals_split_whitespace(text in "\\PC{0,60}|[a-z\u{a0}\u{85}\u{3000}\u{2028}\u{1680} \t\n\u{e9}\u{4e2d}]{0,30}") {
            let words: Vec<&str> = segment_text(&WhitespaceSegmenter, &text)
                .iter()
                .filter(|t| t.kind != TokenKind::Space)
                .map(|t| t.text(&text))
                .collect();
            prop_assert_eq!(words, text.split_whitespace().collect::<Vec<_>>());
        }

        /// The ASCII fast path finds exactly the words UAX #29 finds.
        #[test]
        fn ascii_fast_path_equals_uax29(text in "[ -~\t\n]{0,60}") {
            let mut fast = Vec::new();
            segment_ascii(text.as_bytes(), 0, &mut fast);
            let fast: Vec<&str> =
                fast.iter().filter(|t| t.kind == TokenKind::Word).map(|t| t.text(&text)).collect();
            let reference: Vec<&str> =
                text.split_word_bounds().filter(|w| TokenKind::of(w) == TokenKind::Word).collect();
            prop_assert_eq!(fast, reference);
        }
    }
}
