//! Stop words: tokens dropped before featurization.

use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

/// A built-in stop word list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum BuiltinStopWords {
    /// 723 Chinese function words: the Han entries of cppjieba's stop word list.
    Zh,
    /// 126 English function words.
    En,
}

impl BuiltinStopWords {
    /// The list, one word per line.
    pub fn text(self) -> &'static str {
        match self {
            BuiltinStopWords::Zh => include_str!("../data/stop_words_zh.txt"),
            BuiltinStopWords::En => include_str!("../data/stop_words_en.txt"),
        }
    }
}

/// A set of stop words, matched against normalized tokens.
#[derive(Debug, Clone, Default)]
pub struct StopWords {
    words: FxHashSet<Box<str>>,
}

impl StopWords {
    /// No stop words.
    pub fn none() -> StopWords {
        StopWords::default()
    }

    /// Adds one word per non-empty line of `text` (lines are trimmed).
    pub fn extend_lines(&mut self, text: &str) {
        self.words.extend(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|l| l.into()));
    }

    /// Adds a built-in list.
    pub fn extend_builtin(&mut self, list: BuiltinStopWords) {
        self.extend_lines(list.text());
    }

    /// Adds one word.
    pub fn insert(&mut self, word: &str) {
        self.words.insert(word.into());
    }

    /// True if `token` is a stop word.
    #[inline]
    pub fn contains(&self, token: &str) -> bool {
        !self.words.is_empty() && self.words.contains(token)
    }

    /// The number of stop words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True when there are no stop words.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_lists_load() {
        let mut s = StopWords::none();
        s.extend_builtin(BuiltinStopWords::Zh);
        assert!(s.contains("的") && s.contains("我们"));
        let zh = s.len();
        s.extend_builtin(BuiltinStopWords::En);
        assert!(s.contains("the") && !s.contains("fox"));
        assert_eq!(s.len(), zh + 126);
    }
}
