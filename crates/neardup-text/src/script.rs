//! Script detection, just enough to route text: Han ideographs go to the Chinese segmenter.

/// True for Han ideographs: CJK Unified Ideographs and their extensions, the compatibility
/// ideographs, and U+3007 (〇).
#[inline]
pub fn is_han(c: char) -> bool {
    matches!(c,
        '\u{4E00}'..='\u{9FFF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{3007}'
        | '\u{20000}'..='\u{2A6DF}'
        | '\u{2A700}'..='\u{2EBEF}'
        | '\u{2F800}'..='\u{2FA1F}'
        | '\u{30000}'..='\u{323AF}')
}

/// True for characters of scripts written without spaces between words, whose neighbouring
/// whitespace carries no meaning (a line break inside a Chinese sentence, a space a converter
/// put between two characters): Han ideographs, kana, CJK punctuation and symbols
/// (U+3000..U+303F), CJK compatibility forms (U+FE30..U+FE4F) and the half- and full-width forms
/// (U+FF00..U+FFEF). Hangul is not here: Korean separates words with spaces.
#[inline]
pub fn is_unspaced(c: char) -> bool {
    is_han(c)
        || matches!(c,
            '\u{3000}'..='\u{303F}'
            | '\u{3040}'..='\u{30FF}'
            | '\u{31F0}'..='\u{31FF}'
            | '\u{FE30}'..='\u{FE4F}'
            | '\u{FF00}'..='\u{FFEF}')
}

/// The dominant writing style of a document, used by `auto` features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Mostly Han ideographs: no spaces between words.
    Han,
    /// Anything else: words separated by spaces.
    Spaced,
}

impl Script {
    /// Han when at least half of the letters and digits of `text` are Han ideographs.
    pub fn detect(text: &str) -> Script {
        if text.is_ascii() {
            return Script::Spaced;
        }
        let (mut han, mut other) = (0usize, 0usize);
        for c in text.chars() {
            if is_han(c) {
                han += 1;
            } else if c.is_alphanumeric() {
                other += 1;
            }
        }
        if han > 0 && han >= other {
            Script::Han
        } else {
            Script::Spaced
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects() {
        assert!(is_han('中') && is_han('〇') && is_han('\u{20000}'));
        assert!(!is_han('a') && !is_han('。') && !is_han('あ'));
        assert_eq!(Script::detect("今天天气很好 ok"), Script::Han);
        assert_eq!(Script::detect("the weather is 好"), Script::Spaced);
        assert_eq!(Script::detect(""), Script::Spaced);
    }
}
