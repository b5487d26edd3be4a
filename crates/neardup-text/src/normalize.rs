//! Normalization: Unicode NFKC (which also folds full-width forms to half-width), case folding,
//! an optional keep-filter, and whitespace collapsing.
//!
//! Each step returns the input unchanged (borrowed) when it would not change it, and pure ASCII
//! text skips the Unicode machinery: NFKC is the identity on ASCII, and case folding is
//! `to_ascii_lowercase`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use crate::{is_han, is_unspaced};

/// Which characters survive normalization.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum KeepFilter {
    /// Keep everything.
    #[default]
    All,
    /// Keep only Han ideographs (some users hash only the Chinese characters of a page).
    Han,
    /// Keep letters, digits and whitespace; drop punctuation and symbols.
    Alphanumeric,
}

/// Which Chinese script text is written in before its features are taken: traditional and
/// simplified writings of one sentence share few characters (Jaccard 0.11 for a Hong Kong and a
/// mainland copy of one news item), so the Chinese presets map both to one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ZhScript {
    /// Leave the characters as written.
    #[default]
    Keep,
    /// Traditional to simplified (OpenCC's `t2s`: phrases, then characters).
    Simplified,
    /// Simplified to traditional (OpenCC's `s2t`).
    Traditional,
    /// Taiwan's writing to the mainland's, vocabulary included (OpenCC's `tw2sp`: Taiwan
    /// phrases such as 軟體, 網路 and 使用者 as 软件, 网络 and 用户, Taiwan variants, then
    /// characters as `t2s`). `Simplified` converts characters only, so a Taiwan and a mainland
    /// edition of one text still differ in every such word.
    Mainland,
}

impl ZhScript {
    /// True for [`ZhScript::Keep`].
    pub fn is_keep(&self) -> bool {
        *self == ZhScript::Keep
    }
}

/// Normalization settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct NormalizeConfig {
    /// Apply Unicode NFKC (compatibility composition): full-width `Ａ１，` becomes `A1,`.
    pub nfkc: bool,
    /// Fold case (Unicode lowercase mapping).
    pub case_fold: bool,
    /// Replace every run of whitespace with one space and trim both ends; a run next to a
    /// character of a script written without spaces (Han, kana, CJK punctuation: see
    /// [`crate::is_unspaced`]) is removed, so a line break inside a Chinese sentence changes
    /// nothing.
    pub collapse_whitespace: bool,
    /// Which characters to keep.
    pub keep: KeepFilter,
    /// The Chinese script to write text in (after NFKC and case folding). Left out of the
    /// serialized spec when `Keep`, so the specs (and pipeline ids) made before it are unchanged.
    #[serde(skip_serializing_if = "ZhScript::is_keep")]
    pub zh_script: ZhScript,
}

impl Default for NormalizeConfig {
    fn default() -> Self {
        NormalizeConfig {
            nfkc: true,
            case_fold: true,
            collapse_whitespace: true,
            keep: KeepFilter::All,
            zh_script: ZhScript::Keep,
        }
    }
}

/// A compiled normalizer.
#[derive(Debug, Clone)]
pub struct Normalizer {
    config: NormalizeConfig,
}

impl Normalizer {
    /// A normalizer for `config`.
    pub fn new(config: NormalizeConfig) -> Normalizer {
        Normalizer { config }
    }

    /// The configuration.
    pub fn config(&self) -> &NormalizeConfig {
        &self.config
    }

    /// Normalizes `text`, borrowing it when nothing changes.
    pub fn normalize<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.normalize_with(text, self.config.collapse_whitespace)
    }

    /// Normalizes `text` but collapses whitespace only if `collapse` is set (and configured),
    /// or if the text is not ASCII. Token features never see whitespace, so the pipeline skips
    /// that pass for ASCII text; other text may hold whitespace inside a Chinese word (a line
    /// break in `共识算\n法`) that segmentation must not see.
    pub(crate) fn normalize_with<'a>(&self, text: &'a str, collapse: bool) -> Cow<'a, str> {
        let c = &self.config;
        let mut out = if text.is_ascii() {
            if c.case_fold {
                fold_ascii(text)
            } else {
                Cow::Borrowed(text)
            }
        } else if c.nfkc || c.case_fold {
            self.fold_unicode(text)
        } else {
            Cow::Borrowed(text)
        };
        if !c.zh_script.is_keep() {
            out = crate::zh_script::convert(out, c.zh_script);
        }
        match c.keep {
            KeepFilter::All => {}
            KeepFilter::Han => out = retain(out, is_han),
            KeepFilter::Alphanumeric => {
                out = retain(out, |ch| ch.is_alphanumeric() || ch.is_whitespace())
            }
        }
        if c.collapse_whitespace && (collapse || !out.is_ascii()) {
            out = collapse_whitespace(out);
        }
        out
    }

    /// NFKC and case folding in one pass over the bytes. Characters that both steps leave alone
    /// (ASCII other than capitals, and those of [`is_stable`]) stay in place and are copied in
    /// bulk; full-width ASCII forms map directly; the runs between go through
    /// `unicode-normalization`. Splitting there is exact: a run ends before a character with
    /// canonical combining class 0 and NFKC quick-check Yes, so nothing before it can reorder or
    /// compose with anything after it. An ASCII letter or digit just before a run is taken into
    /// the run, because a following combining mark may compose with it (`e` + U+0301 = `é`).
    fn fold_unicode<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let c = &self.config;
        let bytes = text.as_bytes();
        let mut out = String::new();
        let mut changed = false;
        // text[copied..pos] is unchanged and not yet in `out`.
        let mut copied = 0;
        let mut pos = 0;
        while pos < bytes.len() {
            let b = bytes[pos];
            if b < 0x80 {
                if c.case_fold && b.is_ascii_uppercase() {
                    out.push_str(&text[copied..pos]);
                    out.push(b.to_ascii_lowercase() as char);
                    changed = true;
                    copied = pos + 1;
                }
                pos += 1;
                continue;
            }
            // Lead bytes E4..E9 start U+4000..U+9FFF: CJK ideographs (and the Yijing hexagram
            // symbols), all stable.
            if (0xE4..=0xE9).contains(&b) {
                pos += 3;
                continue;
            }
            let ch = text[pos..].chars().next().expect("pos is a char boundary");
            let len = ch.len_utf8();
            if is_stable(ch) {
                pos += len;
                continue;
            }
            if c.nfkc {
                if let Some(mapped) = fullwidth(ch) {
                    let next = text[pos + len..].chars().next();
                    if next.is_none_or(|n| n.is_ascii() || is_stable(n) || fullwidth(n).is_some()) {
                        out.push_str(&text[copied..pos]);
                        out.push(if c.case_fold { mapped.to_ascii_lowercase() } else { mapped });
                        changed = true;
                        pos += len;
                        copied = pos;
                        continue;
                    }
                }
            }
            // A run of characters that may change, up to the next stable character.
            let mut start = pos;
            let mut popped = false;
            if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
                start -= 1;
                popped = copied > start; // it was already written, lowercased
            }
            let mut end = pos;
            for ch in text[pos..].chars() {
                if ch.is_ascii() || is_stable(ch) {
                    break;
                }
                end += ch.len_utf8();
            }
            let run = &text[start..end];
            let normalized: Cow<'_, str> =
                if c.nfkc && is_nfkc_quick(run.chars()) != IsNormalized::Yes {
                    Cow::Owned(run.nfkc().collect())
                } else {
                    Cow::Borrowed(run)
                };
            let folding = c.case_fold && normalized.chars().any(|ch| folds(ch).is_some());
            if normalized != run || folding {
                if popped {
                    out.pop();
                } else {
                    out.push_str(&text[copied..start]);
                }
                if c.case_fold {
                    for ch in normalized.chars() {
                        match folds(ch) {
                            Some(lower) => out.extend(lower),
                            None => out.push(ch),
                        }
                    }
                } else {
                    out.push_str(&normalized);
                }
                changed = true;
                copied = end;
            }
            pos = end;
        }
        if !changed {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }
}

/// The NFKC mapping of full-width ASCII forms (U+FF01..U+FF5E) and the ideographic space.
#[inline]
fn fullwidth(ch: char) -> Option<char> {
    match ch {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(ch as u32 - 0xFEE0),
        '\u{3000}' => Some(' '),
        _ => None,
    }
}

/// True for characters that NFKC and case folding leave unchanged and that nothing around them
/// can change: the CJK Unified Ideographs (and extension A), and the CJK punctuation and quotes
/// that Chinese text is full of. (Full-width forms such as `，` are not here: NFKC maps them.)
#[inline]
fn is_stable(ch: char) -> bool {
    matches!(ch,
        '\u{4E00}'..='\u{9FFF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{3001}'..='\u{3002}'
        | '\u{3008}'..='\u{3011}'
        | '\u{2018}'..='\u{2019}'
        | '\u{201C}'..='\u{201D}'
        | '\u{2014}')
}

/// The case folding of `ch` when it differs from `ch`: its lowercase mapping, with final sigma
/// folded to sigma as Unicode case folding does. Per character, so no context is involved.
#[inline]
fn folds(ch: char) -> Option<std::char::ToLowercase> {
    if ch.is_ascii() {
        return ch.is_ascii_uppercase().then(|| ch.to_lowercase());
    }
    if ch == 'ς' {
        return Some('σ'.to_lowercase());
    }
    let mut lower = ch.to_lowercase();
    let unchanged = lower.len() == 1 && lower.next() == Some(ch);
    (!unchanged).then(|| ch.to_lowercase())
}

fn fold_ascii(text: &str) -> Cow<'_, str> {
    if !text.bytes().any(|b| b.is_ascii_uppercase()) {
        return Cow::Borrowed(text);
    }
    let mut s = text.to_string();
    s.make_ascii_lowercase();
    Cow::Owned(s)
}

fn retain(text: Cow<'_, str>, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if text.chars().all(&keep) {
        return text;
    }
    Cow::Owned(text.chars().filter(|&ch| keep(ch)).collect())
}

fn collapse_whitespace(text: Cow<'_, str>) -> Cow<'_, str> {
    if !needs_collapse(&text) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    if text.is_ascii() {
        for word in text.split_ascii_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
        // Vertical tab is whitespace to `char` but not to the ASCII splitter.
        if !out.contains('\u{b}') {
            return Cow::Owned(out);
        }
        out.clear();
    }
    // Words (maximal runs without whitespace) are copied in bulk between the bytes that may
    // start whitespace (as in `needs_collapse`); only those are decoded. Words are joined by one
    // space, or by nothing when either side is a character of an unspaced script.
    let bytes = text.as_bytes();
    let (mut pos, mut copied) = (0, 0);
    let char_at = |i: usize| text[i..].chars().next().expect("a char boundary inside the text");
    while let Some(start) = next_may_be_space(bytes, pos) {
        let ch = char_at(start);
        if !ch.is_whitespace() {
            pos = start + ch.len_utf8();
            continue;
        }
        out.push_str(&text[copied..start]);
        let mut end = start + ch.len_utf8();
        while end < bytes.len() {
            let c = char_at(end);
            if !c.is_whitespace() {
                break;
            }
            end += c.len_utf8();
        }
        if end < bytes.len() {
            if let Some(last) = out.chars().next_back() {
                if !is_unspaced(last) && !is_unspaced(char_at(end)) {
                    out.push(' ');
                }
            }
        }
        (pos, copied) = (end, end);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// True for a byte that may start a whitespace character: ASCII up to the space, and the lead
/// bytes C2, E1, E2, E3 of the other whitespace characters.
#[inline]
fn may_be_space(b: u8) -> bool {
    b <= b' ' || matches!(b, 0xC2 | 0xE1 | 0xE2 | 0xE3)
}

/// The position of the first byte at or after `from` that [`may_be_space`], eight bytes at a
/// time: Chinese text has one such byte every few dozen, so most words are skipped whole.
fn next_may_be_space(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Nonzero iff some byte of `v` is zero (exact as a test of the whole word).
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut pos = from;
    while pos + 8 <= bytes.len() {
        let x = u64::from_le_bytes(bytes[pos..pos + 8].try_into().expect("eight bytes"));
        // Bytes below 0x21 (ASCII, high bit clear), bytes equal to C2, bytes in E0..E3 (a
        // superset of E1..E3: a false hit costs one decode).
        let below = x.wrapping_sub(0x21 * ONES) & !x & HIGH;
        let hit =
            below | has_zero(x ^ (0xC2 * ONES)) | has_zero((x & (0xFC * ONES)) ^ (0xE0 * ONES));
        if hit != 0 {
            break;
        }
        pos += 8;
    }
    bytes[pos..].iter().position(|&b| may_be_space(b)).map(|k| pos + k)
}

/// True if collapsing would change `text`: it has leading, trailing, repeated or non-space
/// whitespace, or a space next to a character of an unspaced script ([`is_unspaced`]). Scans
/// bytes: the only non-ASCII whitespace characters start with bytes C2, E1, E2 or E3, and a
/// single space needs its two neighbours decoded only when it is found.
fn needs_collapse(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        // Skip ahead to the next byte that may start whitespace; the skipped bytes are neither
        // whitespace nor (being continuation bytes or other characters) spaces.
        let Some(next) = next_may_be_space(bytes, pos) else {
            return false;
        };
        pos = next;
        let b = bytes[pos];
        if b == b' ' {
            if pos == 0 || pos + 1 == bytes.len() {
                return true; // leading or trailing
            }
            let next = text[pos + 1..].chars().next().expect("not at the end");
            let prev = text[..pos].chars().next_back().expect("not at the start");
            if next.is_whitespace() || is_unspaced(prev) || is_unspaced(next) {
                return true;
            }
            pos += 1;
        } else if b < 0x80 {
            if b.is_ascii_whitespace() || b == 0x0b {
                return true;
            }
            pos += 1;
        } else {
            let ch = text[pos..].chars().next().expect("char boundary");
            if ch.is_whitespace() {
                return true;
            }
            pos += ch.len_utf8();
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(text: &str) -> String {
        Normalizer::new(NormalizeConfig::default()).normalize(text).into_owned()
    }

    #[test]
    fn nfkc_folds_width_and_case() {
        assert_eq!(norm("ＡＢＣ１２３，你好"), "abc123,你好");
        assert_eq!(norm("Straße ÉCOLE"), "straße école");
        assert_eq!(norm("  a \t\n b  "), "a b");
        assert_eq!(norm(""), "");
        assert_eq!(norm("   "), "");
    }

    #[test]
    fn borrows_when_unchanged() {
        let n = Normalizer::new(NormalizeConfig::default());
        assert!(matches!(n.normalize("already clean text"), Cow::Borrowed(_)));
        assert!(matches!(n.normalize("中文文本没有变化, ok"), Cow::Borrowed(_)));
        assert!(matches!(n.normalize("中文文本 有变化"), Cow::Owned(_)));
        assert!(matches!(n.normalize("Capital"), Cow::Owned(_)));
    }

    #[test]
    fn keep_filters() {
        let han = Normalizer::new(NormalizeConfig { keep: KeepFilter::Han, ..Default::default() });
        assert_eq!(han.normalize("新闻 News：今天2024"), "新闻今天");
        let alnum = Normalizer::new(NormalizeConfig {
            keep: KeepFilter::Alphanumeric,
            ..Default::default()
        });
        assert_eq!(alnum.normalize("Hello, world! 你好。"), "hello world你好");
    }

    /// The definition: NFKC of the whole text, then per-character case folding.
    fn reference(text: &str) -> String {
        text.nfkc()
            .flat_map(|ch| if ch == 'ς' { 'σ'.to_lowercase() } else { ch.to_lowercase() })
            .collect()
    }

    #[test]
    fn stable_characters_are_stable() {
        let ranges = [('\u{4E00}', '\u{9FFF}'), ('\u{3400}', '\u{4DBF}'), ('\u{2000}', '\u{3100}')];
        for (lo, hi) in ranges {
            for ch in (lo..=hi).filter(|&c| is_stable(c)) {
                let s = ch.to_string();
                assert_eq!(s.nfkc().collect::<String>(), s, "{ch:?} changes under NFKC");
                assert_eq!(reference(&s), s, "{ch:?} changes under case folding");
                assert_eq!(is_nfkc_quick(s.chars()), IsNormalized::Yes, "{ch:?}");
                assert_eq!(unicode_normalization::char::canonical_combining_class(ch), 0);
            }
        }
    }

    #[test]
    fn lead_bytes_e4_to_e9_are_stable() {
        for ch in ('\u{4000}'..='\u{9FFF}').filter(|c| !is_stable(*c)) {
            let s = ch.to_string();
            assert_eq!(reference(&s), s, "{ch:?}");
            assert_eq!(is_nfkc_quick(s.chars()), IsNormalized::Yes, "{ch:?}");
            assert_eq!(unicode_normalization::char::canonical_combining_class(ch), 0);
        }
    }

    /// Whitespace next to Han characters, kana and CJK punctuation carries no meaning: texts
    /// that differ only in line breaks and spaces there normalize alike (issue: Chinese
    /// defaults saw line breaks).
    #[test]
    fn whitespace_next_to_unspaced_scripts_is_removed() {
        assert_eq!(
            norm("石城古岸頭，一望思悠悠。\n幾許六朝事，不禁江水流。"),
            norm("石城古岸頭，一望思悠悠。幾許六朝事，不禁江水流。")
        );
        assert_eq!(norm("共识 算\r\n法 是"), "共识算法是");
        assert_eq!(norm("使用 Rust 语言, hello  world 。"), "使用rust语言, hello world。");
        assert_eq!(norm("カタ カナ"), "カタカナ");
        assert_eq!(norm("한국어 문장"), "한국어 문장");
        assert_eq!(norm("中 文"), "中文");
    }

    proptest::proptest! {
        /// The byte scan agrees with collapsing: it reports a change exactly when there is one.
        #[test]
        fn needs_collapse_agrees_with_collapse(text in "[a-c \n\t\u{4e00}-\u{4e03}\u{3002}\u{ac00}\u{a0}\u{3000}]{0,16}") {
            let collapsed = collapse_whitespace(Cow::Borrowed(text.as_str())).into_owned();
            proptest::prop_assert_eq!(needs_collapse(&text), collapsed != text);
        }
    }

    /// Collapsing as specified: the text split at whitespace, words joined by one space unless
    /// either neighbour is of an unspaced script.
    fn collapse_reference(text: &str) -> String {
        let mut out = String::new();
        let mut last: Option<char> = None;
        for word in text.split_whitespace() {
            let first = word.chars().next().expect("words are not empty");
            if last.is_some_and(|l| !is_unspaced(l) && !is_unspaced(first)) {
                out.push(' ');
            }
            out.push_str(word);
            last = word.chars().next_back();
        }
        out
    }

    proptest::proptest! {
        /// The byte-scanning collapse equals the reference, with every whitespace character and
        /// characters that share their lead bytes (C2, E1, E2, E3) in the mix.
        #[test]
        fn collapse_equals_reference(text in "[a-c \n\t\u{b}\u{c}\r\u{85}\u{a0}\u{a9}\u{1680}\u{1681}\u{2000}-\u{200b}\u{2014}\u{201c}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}-\u{3003}\u{4e00}-\u{4e03}\u{ac00}\u{ff0c}]{0,24}") {
            let collapsed = collapse_whitespace(Cow::Borrowed(text.as_str())).into_owned();
            proptest::prop_assert_eq!(collapsed, collapse_reference(&text));
        }
    }

    #[test]
    fn collapse_handles_every_ascii_space() {
        let n = Normalizer::new(NormalizeConfig::default());
        assert_eq!(n.normalize(" a\t\u{b}b\x0c\r\n c  "), "a b c");
    }

    #[test]
    fn whitespace_detection_matches_char_definition() {
        for ch in (0u32..0x3100).filter_map(char::from_u32) {
            let s = format!("a{ch}b");
            assert_eq!(needs_collapse(&s), ch.is_whitespace() && ch != ' ', "{ch:?}");
            // At every offset of the eight-byte scan.
            for pad in 0..8 {
                let s = format!("{}{ch}bcdefghijk", "a".repeat(pad + 1));
                assert_eq!(needs_collapse(&s), ch.is_whitespace() && ch != ' ', "{ch:?} {pad}");
            }
        }
    }

    #[test]
    fn combining_marks_compose_with_a_preceding_ascii_letter() {
        let n =
            Normalizer::new(NormalizeConfig { collapse_whitespace: false, ..Default::default() });
        assert_eq!(n.normalize("Cafe\u{301} 中\u{301}"), reference("Cafe\u{301} 中\u{301}"));
        assert_eq!(n.normalize("ΑΣa ΑΣ"), "ασa ασ");
        assert_eq!(n.normalize("Ａ\u{301}，Ｂ"), reference("Ａ\u{301}，Ｂ"));
    }

    proptest::proptest! {
        #[test]
        fn fast_path_equals_whole_text_nfkc_and_folding(
            text in "[a-zA-Z0-9 ,.\u{4e00}-\u{4e20}\u{3001}\u{3002}\u{ff01}-\u{ff5e}\u{300}-\u{36f}\u{c0}-\u{17f}\u{391}-\u{3c9}\u{1100}-\u{1112}\u{1161}-\u{1175}\u{2160}-\u{2180}\u{fb00}-\u{fb06}\u{309b}\u{3099}\u{ff65}-\u{ff9f}]{0,40}|\\PC{0,40}"
        ) {
            let n = Normalizer::new(NormalizeConfig { collapse_whitespace: false, ..Default::default() });
            proptest::prop_assert_eq!(n.normalize(&text).into_owned(), reference(&text));
        }
    }

    #[test]
    fn everything_off_is_identity() {
        let n = Normalizer::new(NormalizeConfig {
            nfkc: false,
            case_fold: false,
            collapse_whitespace: false,
            keep: KeepFilter::All,
            zh_script: ZhScript::Keep,
        });
        assert_eq!(n.normalize(" ＡB  c "), " ＡB  c ");
    }
}
