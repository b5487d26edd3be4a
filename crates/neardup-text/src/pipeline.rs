//! The text half of a pipeline: normalize, segment, filter, featurize.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::{
    is_unspaced, FeatureKind, Featurizer, NormalizeConfig, Normalizer, Script, Segmenter,
    SegmenterKind, StopWords, Token, TokenKind,
};

/// What happens to tokens with no letter or digit (punctuation, symbols, emoji).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PunctuationPolicy {
    /// Drop them (the default).
    #[default]
    Drop,
    /// Keep them as words.
    Keep,
}

/// Configuration of the text stages. Stop words are given separately to
/// [`TextPipeline::new`], since they are data loaded from somewhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct TextConfig {
    /// Normalization.
    pub normalize: NormalizeConfig,
    /// Segmentation.
    pub segmenter: SegmenterKind,
    /// Punctuation-only tokens.
    pub punctuation: PunctuationPolicy,
    /// Features.
    pub features: FeatureKind,
}

/// A compiled text pipeline: immutable and shareable across threads.
#[derive(Debug)]
pub struct TextPipeline {
    normalizer: Normalizer,
    segmenter: Box<dyn Segmenter>,
    punctuation: PunctuationPolicy,
    stop_words: StopWords,
    featurizer: Featurizer,
}

/// Per-thread buffers for [`TextPipeline`]. Reuse one per thread; it holds no results.
#[derive(Debug, Default)]
pub struct TextScratch {
    tokens: Vec<Token>,
    offsets: Vec<usize>,
    buf: String,
    joined: String,
}

/// Past this many tokens, buffers are released after use so that one huge document does not pin
/// its memory in a thread for the rest of the run.
const RELEASE_TOKENS: usize = 1 << 20;

impl TextScratch {
    fn release_if_huge(&mut self) {
        if self.tokens.capacity() > RELEASE_TOKENS {
            *self = TextScratch::default();
        }
    }
}

impl TextPipeline {
    /// Compiles `config` with `stop_words`.
    pub fn new(config: &TextConfig, stop_words: StopWords) -> TextPipeline {
        TextPipeline {
            normalizer: Normalizer::new(config.normalize),
            segmenter: config.segmenter.build(),
            punctuation: config.punctuation,
            stop_words,
            featurizer: Featurizer::new(config.features),
        }
    }

    /// The feature kind.
    pub fn feature_kind(&self) -> FeatureKind {
        self.featurizer.kind()
    }

    /// Calls `sink` with every feature of `text`, in document order.
    pub fn features<F: FnMut(&str)>(&self, text: &str, scratch: &mut TextScratch, sink: F) {
        // Script detection for `auto` features reads letters only, so it may run before
        // normalization. Whitespace matters only to features that read the raw text (character
        // n-grams): token features never see it. (Collapsing for shingles, to hash more windows
        // as slices of the text, was measured: it costs more than the copies it saves.)
        let kind = self.featurizer.kind().resolve(text);
        let mut normalized = self.normalizer.normalize_with(text, !kind.needs_tokens());
        // Character n-grams of Chinese text see no whitespace at all: between Han characters it
        // is already gone, and elsewhere in a Han-dominant document (`2024 年`, `19\n98` broken
        // across lines) it is layout, not text.
        if !kind.needs_tokens()
            && self.normalizer.config().collapse_whitespace
            && normalized.contains(char::is_whitespace)
            && Script::detect(&normalized) == Script::Han
        {
            normalized = Cow::Owned(normalized.split_whitespace().collect());
        }
        let text: &str = &normalized;
        scratch.tokens.clear();
        if kind.needs_tokens() {
            self.segmenter.segment(text, &mut scratch.tokens);
            self.filter(text, &mut scratch.tokens);
        }
        Featurizer::new(kind).emit(
            text,
            &scratch.tokens,
            &mut scratch.buf,
            &mut scratch.offsets,
            sink,
        );
        scratch.release_if_huge();
    }

    /// Calls `sink` with every feature of a pre-tokenized document: each token is normalized and
    /// filtered but not segmented further. Character n-grams run over the tokens joined by single
    /// spaces.
    pub fn features_pretokenized<S: AsRef<str>, F: FnMut(&str)>(
        &self,
        tokens: &[S],
        scratch: &mut TextScratch,
        sink: F,
    ) {
        let mut joined = std::mem::take(&mut scratch.joined);
        joined.clear();
        scratch.tokens.clear();
        for token in tokens {
            let normalized = self.normalizer.normalize(token.as_ref());
            if normalized.is_empty() {
                continue;
            }
            // Tokens are joined by one space, except next to a character of a script written
            // without spaces, as the normalizer collapses whitespace in text.
            let unspaced = joined.chars().next_back().is_some_and(is_unspaced)
                || normalized.chars().next().is_some_and(is_unspaced);
            if !joined.is_empty() && !unspaced {
                joined.push(' ');
            }
            let start = joined.len();
            joined.push_str(&normalized);
            scratch.tokens.push(Token {
                start,
                end: joined.len(),
                kind: TokenKind::of(&normalized),
            });
        }
        self.filter(&joined, &mut scratch.tokens);
        self.featurizer.emit(
            &joined,
            &scratch.tokens,
            &mut scratch.buf,
            &mut scratch.offsets,
            sink,
        );
        scratch.joined = joined;
        scratch.release_if_huge();
    }

    /// Keeps words (and punctuation if asked), minus stop words, in place.
    fn filter(&self, text: &str, tokens: &mut Vec<Token>) {
        if self.stop_words.is_empty() {
            match self.punctuation {
                PunctuationPolicy::Drop => tokens.retain(|t| t.kind == TokenKind::Word),
                PunctuationPolicy::Keep => tokens.retain(|t| t.kind != TokenKind::Space),
            }
            return;
        }
        tokens.retain(|t| {
            let wanted = match t.kind {
                TokenKind::Word => true,
                TokenKind::Punct => self.punctuation == PunctuationPolicy::Keep,
                TokenKind::Space => false,
            };
            wanted && !self.stop_words.contains(t.text(text))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BuiltinStopWords;

    fn features(config: TextConfig, stop: StopWords, text: &str) -> Vec<String> {
        let p = TextPipeline::new(&config, stop);
        let mut out = Vec::new();
        p.features(text, &mut TextScratch::default(), |f| out.push(f.to_string()));
        out
    }

    #[test]
    fn stop_words_and_punctuation() {
        let mut stop = StopWords::none();
        stop.extend_builtin(BuiltinStopWords::En);
        let config = TextConfig { features: FeatureKind::Words, ..TextConfig::default() };
        assert_eq!(features(config, stop.clone(), "The FOX, and the dog!"), ["fox", "dog"]);
        let keep = TextConfig { punctuation: PunctuationPolicy::Keep, ..config };
        assert_eq!(features(keep, stop, "The FOX, and the dog!"), ["fox", ",", "dog", "!"]);
    }

    #[test]
    fn only_stop_words_gives_nothing() {
        let mut stop = StopWords::none();
        stop.extend_builtin(BuiltinStopWords::En);
        let config =
            TextConfig { features: FeatureKind::WordShingles { n: 3 }, ..Default::default() };
        assert!(features(config, stop, "the and of to").is_empty());
    }

    /// Chinese text that differs only in line breaks and spaces has the same character
    /// n-grams, whitespace between digits or Latin letters included.
    #[test]
    fn chinese_ngrams_ignore_line_breaks_and_spaces() {
        let config = TextConfig::default();
        let a = "石城古岸頭，一望思悠悠。幾許六朝事，不禁江水流。1998年iPhone";
        let b = "石城古岸頭，一望思悠悠。\n幾許六朝事，\r\n不禁 江水流。19\n98 年 i Phone";
        assert_eq!(features(config, StopWords::none(), a), features(config, StopWords::none(), b));
        // English keeps its spaces between words.
        let c = features(config, StopWords::none(), "the cat sat");
        assert_eq!(c, ["the cat sat"]);
        let ngrams = TextConfig { features: FeatureKind::CharNgrams { n: 3 }, ..config };
        assert_eq!(features(ngrams, StopWords::none(), "ab cd"), ["ab ", "b c", " cd"]);
    }

    #[test]
    fn pretokenized_skips_segmentation() {
        let p = TextPipeline::new(
            &TextConfig { features: FeatureKind::Words, ..Default::default() },
            StopWords::none(),
        );
        let mut out = Vec::new();
        p.features_pretokenized(
            &["New York", "ＣＩＴＹ", "", "!"],
            &mut TextScratch::default(),
            |f| out.push(f.to_string()),
        );
        assert_eq!(out, ["new york", "city"]);
    }
}
