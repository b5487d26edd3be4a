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

/// True for letters of the scripts that run words together without spaces and are not
/// ideographic: those Unicode gives line-break class SA, "complex context" (Thai, Lao, Myanmar,
/// Khmer, Tai Le, New Tai Lue, Tai Tham, Tai Viet), and Tibetan, whose syllable mark (tsheg)
/// is often left out in running text. A run of these letters is a sentence, not a word: what
/// compares text by words must cut it finer (the passage check takes each letter with its
/// marks as a unit, as it takes each Han character).
#[inline]
pub fn is_unspaced_alphabetic(c: char) -> bool {
    matches!(c,
        '\u{0E00}'..='\u{0EFF}'     // Thai, Lao
        | '\u{0F00}'..='\u{0FFF}'   // Tibetan
        | '\u{1000}'..='\u{109F}'   // Myanmar
        | '\u{1780}'..='\u{17FF}'   // Khmer
        | '\u{1950}'..='\u{19FF}'   // Tai Le, New Tai Lue, Khmer symbols
        | '\u{1A20}'..='\u{1AAF}'   // Tai Tham
        | '\u{A9E0}'..='\u{A9FF}'   // Myanmar Extended-B
        | '\u{AA60}'..='\u{AADF}') // Myanmar Extended-A, Tai Viet
}

/// `c.is_alphanumeric()`, with the answer given without a table search for the characters
/// that fill Chinese text besides ideographs: ASCII, CJK symbols and punctuation (U+3000..U+303F),
/// general punctuation (U+2000..U+206F) and the full-width forms' punctuation. The standard
/// library's lookup for them is a binary search over two tables, a large share of the time of
/// script detection and token classification on Chinese text.
#[inline]
pub(crate) fn is_alphanumeric(c: char) -> bool {
    match c {
        '\0'..='\u{7F}' => c.is_ascii_alphanumeric(),
        '\u{4E00}'..='\u{9FFF}' => true,
        // 々 〆 〇, the Hangzhou numerals, the kana repeat marks, 〸..〼.
        '\u{3000}'..='\u{303F}' => matches!(c,
            '\u{3005}'..='\u{3007}' | '\u{3021}'..='\u{3029}' | '\u{3031}'..='\u{3035}'
            | '\u{3038}'..='\u{303C}'),
        '\u{2000}'..='\u{206F}'
        | '\u{FF01}'..='\u{FF0F}'
        | '\u{FF1A}'..='\u{FF20}'
        | '\u{FF3B}'..='\u{FF40}'
        | '\u{FF5B}'..='\u{FF65}' => false,
        '\u{FF10}'..='\u{FF19}' | '\u{FF21}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}' => true,
        _ => c.is_alphanumeric(),
    }
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
            } else if is_alphanumeric(c) {
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

    /// The fast answers agree with the standard library for every character.
    #[test]
    fn is_alphanumeric_agrees_with_std() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(is_alphanumeric(c), c.is_alphanumeric(), "{c:?} U+{:04X}", c as u32);
        }
    }

    #[test]
    fn detects() {
        assert!(is_han('中') && is_han('〇') && is_han('\u{20000}'));
        assert!(!is_han('a') && !is_han('。') && !is_han('あ'));
        assert_eq!(Script::detect("今天天气很好 ok"), Script::Han);
        assert_eq!(Script::detect("the weather is 好"), Script::Spaced);
        assert_eq!(Script::detect(""), Script::Spaced);
    }
}
