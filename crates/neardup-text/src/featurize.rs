//! Featurization: filtered tokens (or the normalized text) -> feature strings.

use serde::{Deserialize, Serialize};

use crate::{Script, Token};

/// Which features a document yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FeatureKind {
    /// Word `n`-shingles for space-separated scripts and character `n`-grams for Han text,
    /// decided per document (Han when at least half its letters are Han).
    Auto {
        /// Shingle and n-gram size.
        n: usize,
    },
    /// Each word (unigram).
    Words,
    /// Overlapping runs of `n` words, joined by one space.
    WordShingles {
        /// Words per shingle.
        n: usize,
    },
    /// Overlapping runs of `n` characters of the normalized text (step 1). Segmentation, stop
    /// words and the punctuation filter do not apply.
    CharNgrams {
        /// Characters per n-gram.
        n: usize,
    },
    /// The `top_n` words of highest TF-IDF (jieba's keyword extraction). The selection is made
    /// after weighting, by the caller; this stage yields the words.
    Keywords {
        /// How many keywords to keep.
        top_n: usize,
    },
}

impl Default for FeatureKind {
    fn default() -> Self {
        FeatureKind::Auto { n: 5 }
    }
}

impl FeatureKind {
    /// True when this kind reads tokens (and so needs segmentation).
    pub fn needs_tokens(self) -> bool {
        !matches!(self, FeatureKind::CharNgrams { .. })
    }

    /// The concrete kind for one document: `Auto` becomes word shingles or character n-grams.
    pub fn resolve(self, text: &str) -> FeatureKind {
        match self {
            FeatureKind::Auto { n } => match Script::detect(text) {
                Script::Han => FeatureKind::CharNgrams { n },
                Script::Spaced => FeatureKind::WordShingles { n },
            },
            other => other,
        }
    }
}

/// Emits the features of one document.
#[derive(Debug, Clone, Copy)]
pub struct Featurizer {
    kind: FeatureKind,
}

impl Featurizer {
    /// A featurizer for `kind`. Sizes of 0 are treated as 1.
    pub fn new(kind: FeatureKind) -> Featurizer {
        Featurizer { kind }
    }

    /// The configured kind.
    pub fn kind(&self) -> FeatureKind {
        self.kind
    }

    /// Calls `sink` with each feature of a document, in document order. `tokens` are the kept
    /// tokens of `text`; `buf` and `offsets` are scratch space.
    ///
    /// A document shorter than one shingle (or n-gram) but not empty yields one feature, the whole
    /// of it, so that short texts still have a fingerprint.
    pub fn emit<F: FnMut(&str)>(
        &self,
        text: &str,
        tokens: &[Token],
        buf: &mut String,
        offsets: &mut Vec<usize>,
        mut sink: F,
    ) {
        match self.kind.resolve(text) {
            FeatureKind::Words | FeatureKind::Keywords { .. } => {
                for t in tokens {
                    sink(t.text(text));
                }
            }
            FeatureKind::WordShingles { n } => {
                let n = n.max(1);
                if tokens.is_empty() {
                    return;
                }
                if n == 1 {
                    tokens.iter().for_each(|t| sink(t.text(text)));
                    return;
                }
                // A window whose tokens are separated by exactly one space in the text is that
                // slice of the text: no copy. `bad` counts the other gaps inside the window.
                let bytes = text.as_bytes();
                let gap_bad = |i: usize| {
                    let (a, b) = (tokens[i], tokens[i + 1]);
                    !(b.start == a.end + 1 && bytes[a.end] == b' ')
                };
                let width = n.min(tokens.len());
                let mut bad = (0..width - 1).filter(|&i| gap_bad(i)).count();
                let windows = tokens.len() - width + 1;
                for start in 0..windows {
                    if start > 0 {
                        bad -= usize::from(gap_bad(start - 1));
                        bad += usize::from(gap_bad(start + width - 2));
                    }
                    let window = &tokens[start..start + width];
                    if bad == 0 {
                        sink(&text[window[0].start..window[width - 1].end]);
                        continue;
                    }
                    buf.clear();
                    for (k, t) in window.iter().enumerate() {
                        if k > 0 {
                            buf.push(' ');
                        }
                        buf.push_str(t.text(text));
                    }
                    sink(buf);
                }
            }
            FeatureKind::CharNgrams { n } => {
                let n = n.max(1);
                if text.is_empty() {
                    return;
                }
                if text.is_ascii() {
                    if text.len() <= n {
                        sink(text);
                    } else {
                        (0..=text.len() - n).for_each(|i| sink(&text[i..i + n]));
                    }
                    return;
                }
                offsets.clear();
                offsets.extend(text.char_indices().map(|(i, _)| i));
                offsets.push(text.len());
                let chars = offsets.len() - 1;
                if chars <= n {
                    sink(text);
                } else {
                    (0..=chars - n).for_each(|i| sink(&text[offsets[i]..offsets[i + n]]));
                }
            }
            FeatureKind::Auto { .. } => unreachable!("resolve() never returns Auto"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{segment_text, TokenKind, UnicodeWordSegmenter};

    fn run(kind: FeatureKind, text: &str) -> Vec<String> {
        let tokens: Vec<Token> = segment_text(&UnicodeWordSegmenter, text)
            .into_iter()
            .filter(|t| t.kind == TokenKind::Word)
            .collect();
        let mut out = Vec::new();
        Featurizer::new(kind)
            .emit(text, &tokens, &mut String::new(), &mut Vec::new(), |f| out.push(f.to_string()));
        out
    }

    #[test]
    fn shingles() {
        assert_eq!(run(FeatureKind::WordShingles { n: 2 }, "a b c"), ["a b", "b c"]);
        assert_eq!(run(FeatureKind::WordShingles { n: 5 }, "a b"), ["a b"]);
        assert!(run(FeatureKind::WordShingles { n: 5 }, "").is_empty());
        assert!(run(FeatureKind::WordShingles { n: 3 }, " , ").is_empty());
    }

    #[test]
    fn shingles_over_irregular_gaps_are_joined_by_one_space() {
        let text = "a b,  c\nd e f";
        let expected: Vec<String> = {
            let words = ["a", "b", "c", "d", "e", "f"];
            words.windows(3).map(|w| w.join(" ")).collect()
        };
        assert_eq!(run(FeatureKind::WordShingles { n: 3 }, text), expected);
    }

    proptest::proptest! {
        /// Shingles equal the words of each window joined by one space, however the text is spaced.
        #[test]
        fn shingles_equal_joined_windows(text in "[a-c ,.\n]{0,40}", n in 1usize..6) {
            let words: Vec<String> = segment_text(&UnicodeWordSegmenter, &text)
                .into_iter()
                .filter(|t| t.kind == TokenKind::Word)
                .map(|t| t.text(&text).to_string())
                .collect();
            let expected: Vec<String> = if words.is_empty() {
                Vec::new()
            } else if words.len() <= n {
                vec![words.join(" ")]
            } else {
                words.windows(n).map(|w| w.join(" ")).collect()
            };
            proptest::prop_assert_eq!(run(FeatureKind::WordShingles { n }, &text), expected);
        }
    }

    #[test]
    fn char_ngrams() {
        assert_eq!(run(FeatureKind::CharNgrams { n: 2 }, "abc"), ["ab", "bc"]);
        assert_eq!(run(FeatureKind::CharNgrams { n: 2 }, "中文字"), ["中文", "文字"]);
        assert_eq!(run(FeatureKind::CharNgrams { n: 5 }, "中文"), ["中文"]);
        assert!(run(FeatureKind::CharNgrams { n: 5 }, "").is_empty());
    }

    #[test]
    fn auto_picks_by_script() {
        assert_eq!(run(FeatureKind::Auto { n: 2 }, "one two three"), ["one two", "two three"]);
        assert_eq!(run(FeatureKind::Auto { n: 2 }, "今天很好"), ["今天", "天很", "很好"]);
    }
}
