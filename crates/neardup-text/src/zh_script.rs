//! Traditional <-> simplified Chinese, by OpenCC's dictionaries (through `ferrous-opencc`).
//!
//! The conversion reads phrases, then characters, and costs about 50 ns a byte; most text needs
//! none of it (a simplified text under `t2s`, any text without Han characters). A text is
//! converted only if it holds a character that the direction's character table maps (a key of
//! OpenCC's `TSCharacters` for `t2s`, of `STCharacters` for `s2t`), checked in one pass over its
//! characters against a set of them: otherwise it is returned as it is, borrowed.
//!
//! Without the `zh` feature there is no conversion (the pipeline gives such specs another id).

use std::borrow::Cow;

use crate::normalize::ZhScript;

/// The characters of `text` that `script` writes otherwise, one for one: `(byte offset in
/// text, character)`, in text order; empty when nothing changes. This is the pipeline's
/// conversion (OpenCC's phrases, then characters) read character by character, for callers
/// that must keep each character's place (the passage check's units): each run of Han
/// characters is converted as one, and a run whose conversion changes its length (a phrase
/// written with more or fewer characters, as Taiwan's 隨身碟 and the mainland's U盘) is converted
/// character by character instead.
pub fn zh_script_chars(text: &str, script: ZhScript) -> Vec<(usize, char)> {
    let mut out = Vec::new();
    if script.is_keep() || text.is_ascii() {
        return out;
    }
    let mut run_start: Option<usize> = None;
    let flush = |start: usize, end: usize, out: &mut Vec<(usize, char)>| {
        let run = &text[start..end];
        let converted = convert(Cow::Borrowed(run), script);
        if let Cow::Borrowed(_) = converted {
            return;
        }
        if converted.chars().count() == run.chars().count() {
            for ((at, c), d) in run.char_indices().zip(converted.chars()) {
                if c != d {
                    out.push((start + at, d));
                }
            }
            return;
        }
        let mut buf = [0u8; 4];
        for (at, c) in run.char_indices() {
            let one = convert(Cow::Borrowed(c.encode_utf8(&mut buf)), script);
            let mut chars = one.chars();
            if let (Some(d), None) = (chars.next(), chars.next()) {
                if d != c {
                    out.push((start + at, d));
                }
            }
        }
    };
    for (at, c) in text.char_indices() {
        match (crate::is_han(c), run_start) {
            (true, None) => run_start = Some(at),
            (false, Some(s)) => {
                flush(s, at, &mut out);
                run_start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = run_start {
        flush(s, text.len(), &mut out);
    }
    out
}

/// `text` written in `script` (borrowed when nothing changes).
pub(crate) fn convert(text: Cow<'_, str>, script: ZhScript) -> Cow<'_, str> {
    if text.is_ascii() {
        return text;
    }
    imp::convert(text, script)
}

#[cfg(feature = "zh")]
mod imp {
    use std::borrow::Cow;
    use std::sync::OnceLock;

    use ferrous_opencc::config::BuiltinConfig;
    use ferrous_opencc::OpenCC;
    use rustc_hash::FxHashSet;

    use crate::normalize::ZhScript;

    /// The characters a direction's character table maps, and its converter.
    struct Direction {
        keys: FxHashSet<char>,
        converter: OpenCC,
    }

    fn direction(script: ZhScript) -> Option<&'static Direction> {
        static T2S: OnceLock<Direction> = OnceLock::new();
        static S2T: OnceLock<Direction> = OnceLock::new();
        static TW2SP: OnceLock<Direction> = OnceLock::new();
        let (cell, keys, config) = match script {
            ZhScript::Simplified => {
                (&T2S, include_str!("../data/opencc/traditional_keys.txt"), BuiltinConfig::T2s)
            }
            ZhScript::Traditional => {
                (&S2T, include_str!("../data/opencc/simplified_keys.txt"), BuiltinConfig::S2t)
            }
            // Taiwan text is told by its traditional characters, as for `t2s`: a text without
            // any (a mainland one) keeps its words, even those that are Taiwan's phrase keys.
            ZhScript::Mainland => {
                (&TW2SP, include_str!("../data/opencc/traditional_keys.txt"), BuiltinConfig::Tw2sp)
            }
            ZhScript::Keep => return None,
        };
        Some(cell.get_or_init(|| Direction {
            keys: keys.trim_end().chars().collect(),
            // The dictionaries are compiled into the crate: building them cannot fail but for a
            // bug in it, which a test of every direction would show.
            converter: OpenCC::from_config(config).expect("OpenCC's built-in dictionaries load"),
        }))
    }

    pub(super) fn convert(text: Cow<'_, str>, script: ZhScript) -> Cow<'_, str> {
        let Some(d) = direction(script) else { return text };
        if !text.chars().any(|c| d.keys.contains(&c)) {
            return text;
        }
        Cow::Owned(d.converter.convert(&text))
    }
}

#[cfg(not(feature = "zh"))]
mod imp {
    use std::borrow::Cow;

    use crate::normalize::ZhScript;

    pub(super) fn convert(text: Cow<'_, str>, _: ZhScript) -> Cow<'_, str> {
        text
    }
}

#[cfg(all(test, feature = "zh"))]
mod tests {
    use super::*;

    #[test]
    fn traditional_and_simplified_meet_and_simplified_text_is_borrowed() {
        let hk = "香港特別行政區政府今日公佈，今年夏季防汛工作的總體安排已經確定。";
        let cn = "香港特别行政区政府今日公布，今年夏季防汛工作的总体安排已经确定。";
        assert_eq!(convert(Cow::Borrowed(hk), ZhScript::Simplified), cn);
        assert!(matches!(convert(Cow::Borrowed(cn), ZhScript::Simplified), Cow::Borrowed(_)));
        assert!(matches!(
            convert(Cow::Borrowed("plain ASCII"), ZhScript::Simplified),
            Cow::Borrowed(_)
        ));
        let back = convert(Cow::Borrowed("软件和头发"), ZhScript::Traditional);
        assert_eq!(back, "軟件和頭髮");
        assert_eq!(convert(Cow::Borrowed(hk), ZhScript::Keep), hk);
    }

    /// Read character by character, the conversion keeps every character's place, and agrees
    /// with the whole text's conversion where that keeps the length.
    #[test]
    fn characters_in_place_agree_with_the_conversion() {
        let hk = "香港特別行政區政府今日公佈，今年夏季防汛工作的總體安排已經確定。abc";
        let mut chars: Vec<char> = hk.chars().collect();
        let byte_to_index: std::collections::HashMap<usize, usize> =
            hk.char_indices().enumerate().map(|(i, (b, _))| (b, i)).collect();
        for (at, c) in zh_script_chars(hk, ZhScript::Simplified) {
            chars[byte_to_index[&at]] = c;
        }
        let folded: String = chars.into_iter().collect();
        assert_eq!(folded, convert(Cow::Borrowed(hk), ZhScript::Simplified));
        assert!(zh_script_chars("香港特别行政区", ZhScript::Simplified).is_empty());
        assert!(zh_script_chars(hk, ZhScript::Keep).is_empty());
        // A phrase of another length (隨身碟, U盘 in the mainland's words) falls back to its
        // characters, each in its place.
        let tw = "把檔案存進隨身碟。";
        let got = zh_script_chars(tw, ZhScript::Mainland);
        assert!(got.iter().all(|&(at, _)| tw.is_char_boundary(at)));
        assert!(got.iter().any(|&(_, c)| c == '随'));
    }

    /// `mainland` writes Taiwan's vocabulary as the mainland's, where `simplified` converts
    /// only the characters; a mainland text is left as it is, its words included.
    #[test]
    fn mainland_converts_taiwan_vocabulary_too() {
        let tw = "使用者可以在網路上下載這個軟體，再用滑鼠開啟檔案。";
        let cn = "用户可以在网络上下载这个软件，再用鼠标打开文件。";
        assert_eq!(convert(Cow::Borrowed(tw), ZhScript::Mainland), cn);
        let chars_only = convert(Cow::Borrowed(tw), ZhScript::Simplified);
        assert_eq!(chars_only, "使用者可以在网路上下载这个软体，再用滑鼠开启档案。");
        assert!(matches!(convert(Cow::Borrowed(cn), ZhScript::Mainland), Cow::Borrowed(_)));
        let mainland_words = "使用者用滑鼠";
        assert!(matches!(
            convert(Cow::Borrowed(mainland_words), ZhScript::Mainland),
            Cow::Borrowed(_)
        ));
    }
}
