//! Normalization: Unicode NFKC (which also folds full-width forms to half-width), case folding,
//! an optional keep-filter, and whitespace collapsing.
//!
//! Each step returns the input unchanged (borrowed) when it would not change it, and pure ASCII
//! text skips the Unicode machinery: NFKC is the identity on ASCII, and case folding is
//! `to_ascii_lowercase`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use crate::is_han;

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

/// Normalization settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct NormalizeConfig {
    /// Apply Unicode NFKC (compatibility composition): full-width `Ａ１，` becomes `A1,`.
    pub nfkc: bool,
    /// Fold case (Unicode lowercase mapping).
    pub case_fold: bool,
    /// Replace every run of whitespace with one space and trim both ends.
    pub collapse_whitespace: bool,
    /// Which characters to keep.
    pub keep: KeepFilter,
}

impl Default for NormalizeConfig {
    fn default() -> Self {
        NormalizeConfig {
            nfkc: true,
            case_fold: true,
            collapse_whitespace: true,
            keep: KeepFilter::All,
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

    /// Normalizes `text`, borrowing it when nothing changes.
    pub fn normalize<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let c = &self.config;
        let mut out = Cow::Borrowed(text);
        if c.nfkc && !out.is_ascii() && is_nfkc_quick(out.chars()) != IsNormalized::Yes {
            out = Cow::Owned(out.nfkc().collect());
        }
        if c.case_fold {
            out = fold_case(out);
        }
        match c.keep {
            KeepFilter::All => {}
            KeepFilter::Han => out = retain(out, is_han),
            KeepFilter::Alphanumeric => {
                out = retain(out, |ch| ch.is_alphanumeric() || ch.is_whitespace())
            }
        }
        if c.collapse_whitespace {
            out = collapse_whitespace(out);
        }
        out
    }
}

fn fold_case(text: Cow<'_, str>) -> Cow<'_, str> {
    if text.is_ascii() {
        if !text.bytes().any(|b| b.is_ascii_uppercase()) {
            return text;
        }
        let mut s = text.into_owned();
        s.make_ascii_lowercase();
        return Cow::Owned(s);
    }
    // A character changes under lowercase iff it is uppercase or titlecase; checking first keeps
    // the common all-lowercase (and caseless CJK) text borrowed.
    if !text.chars().any(|ch| ch.is_uppercase() || (!ch.is_lowercase() && changes_case(ch))) {
        return text;
    }
    Cow::Owned(text.to_lowercase())
}

fn changes_case(ch: char) -> bool {
    let mut lower = ch.to_lowercase();
    !(lower.next() == Some(ch) && lower.next().is_none())
}

fn retain(text: Cow<'_, str>, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if text.chars().all(&keep) {
        return text;
    }
    Cow::Owned(text.chars().filter(|&ch| keep(ch)).collect())
}

fn collapse_whitespace(text: Cow<'_, str>) -> Cow<'_, str> {
    let needs = {
        let t: &str = &text;
        let mut prev_space = true; // a leading space needs trimming
        let mut needs = false;
        for ch in t.chars() {
            if ch.is_whitespace() {
                if prev_space || ch != ' ' {
                    needs = true;
                    break;
                }
                prev_space = true;
            } else {
                prev_space = false;
            }
        }
        needs || (prev_space && !t.is_empty())
    };
    if !needs {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    Cow::Owned(out)
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
        assert!(matches!(n.normalize("中文文本 没有变化"), Cow::Borrowed(_)));
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
        assert_eq!(alnum.normalize("Hello, world! 你好。"), "hello world 你好");
    }

    #[test]
    fn everything_off_is_identity() {
        let n = Normalizer::new(NormalizeConfig {
            nfkc: false,
            case_fold: false,
            collapse_whitespace: false,
            keep: KeepFilter::All,
        });
        assert_eq!(n.normalize(" ＡB  c "), " ＡB  c ");
    }
}
