//! What a thesis check leaves out: text the author marked as someone else's. Quotations (text
//! between quotation marks) and the reference list (from a `参考文献` or `References` heading to
//! the end, or to the next appendix or acknowledgements heading) are copied on purpose and cited;
//! checkers report them apart rather than as copying.

use serde::{Deserialize, Serialize};

/// Why a range of a query is left out of its copied share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Exclusion {
    /// Between quotation marks.
    Quote,
    /// In the reference list.
    References,
}

impl Exclusion {
    /// The name used in outputs: `quote` or `references`.
    pub fn as_str(self) -> &'static str {
        match self {
            Exclusion::Quote => "quote",
            Exclusion::References => "references",
        }
    }
}

/// A range of code points `[start, end)` left out, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Excluded {
    pub start: u32,
    pub end: u32,
    pub why: Exclusion,
}

/// Quotation mark pairs: Chinese and English curly quotes, corner brackets, guillemets and
/// straight double quotes. Single quotes are left alone: `'` is far more often an apostrophe.
const QUOTE_PAIRS: [(char, char); 5] =
    [('\u{201C}', '\u{201D}'), ('「', '」'), ('『', '』'), ('«', '»'), ('"', '"')];

/// The quotations of `text`: each opening mark with its closing mark later in the same
/// paragraph (a line break ends one: Chinese theses separate paragraphs by a single newline)
/// and at most `max_chars` code points away, marks included. An opening mark without such a
/// closing mark is a stray mark, and what follows it is no quotation: a quotation cannot hide a
/// copy longer than `max_chars` or running past its paragraph. Quotations do not nest: the text
/// of one is not searched for others.
pub(crate) fn quotations(text: &str, max_chars: usize) -> Vec<Excluded> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let Some(&(_, close)) = QUOTE_PAIRS.iter().find(|(open, _)| *open == chars[i]) else {
            i += 1;
            continue;
        };
        let limit = chars.len().min(i + max_chars.max(2));
        let mut j = i + 1;
        let mut found = None;
        while j < limit {
            if chars[j] == close {
                found = Some(j);
                break;
            }
            if chars[j] == '\n' || chars[j] == '\u{2029}' {
                break;
            }
            j += 1;
        }
        match found {
            Some(j) => {
                out.push(Excluded { start: i as u32, end: j as u32 + 1, why: Exclusion::Quote });
                i = j + 1;
            }
            None => i += 1,
        }
    }
    out
}

/// Headings that open a reference list, lowercase.
const REFERENCE_HEADINGS: [&str; 10] = [
    "参考文献",
    "参考资料",
    "参考书目",
    "引用文献",
    "參考文獻",
    "references",
    "reference",
    "bibliography",
    "works cited",
    "literature cited",
];

/// Headings that end one (what follows a reference list in a thesis), lowercase.
const AFTER_REFERENCE_HEADINGS: [&str; 8] =
    ["附录", "附錄", "致谢", "致謝", "谢辞", "appendix", "appendices", "acknowledgements"];

/// The reference lists of `text`: from a line that is a reference heading (alone on its line,
/// perhaps numbered or marked up: `七、参考文献`, `## References`, `5. Bibliography:`) to the
/// next appendix or acknowledgements heading, or to the end.
pub(crate) fn reference_lists(text: &str) -> Vec<Excluded> {
    let mut out = Vec::new();
    let mut open: Option<u32> = None;
    let mut at = 0u32;
    for line in text.split_inclusive('\n') {
        let heading = heading_words(line);
        if !heading.is_empty() {
            let lower = heading.to_lowercase();
            if open.is_none() && REFERENCE_HEADINGS.contains(&lower.as_str()) {
                open = Some(at);
            } else if let Some(start) = open {
                if AFTER_REFERENCE_HEADINGS.contains(&lower.as_str()) || lower == "acknowledgments"
                {
                    out.push(Excluded { start, end: at, why: Exclusion::References });
                    open = None;
                }
            }
        }
        at += line.chars().count() as u32;
    }
    if let Some(start) = open {
        out.push(Excluded { start, end: at, why: Exclusion::References });
    }
    out
}

/// The words of a line that may be a heading, without markup, numbering and a trailing colon;
/// empty for a line too long to be a heading.
fn heading_words(line: &str) -> &str {
    let line = line.trim();
    if line.chars().count() > 40 {
        return "";
    }
    let numbering = |c: char| {
        c.is_ascii_digit()
            || c.is_whitespace()
            || matches!(c, '#' | '.' | '、' | '．' | '(' | ')' | '（' | '）' | '[' | ']' | '*')
            || "一二三四五六七八九十第章节ivxIVX".contains(c)
    };
    let mut words = line.trim_start_matches(numbering);
    // `IV. References`: roman numerals eat into the word only when followed by a separator.
    if words.len() < line.len() && !words.is_empty() {
        let skipped = &line[..line.len() - words.len()];
        if skipped.ends_with(|c: char| c.is_ascii_alphabetic()) {
            words = line.trim_start_matches(|c: char| !c.is_whitespace() && c != '、');
            words = words.trim_start_matches(|c: char| c.is_whitespace() || c == '、');
        }
    }
    words.trim_end_matches([':', '：', '*', '#', ' ']).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        quotations(text, 300)
            .iter()
            .map(|q| chars[q.start as usize..q.end as usize].iter().collect())
            .collect()
    }

    #[test]
    fn quotations_are_found_in_chinese_and_english_within_a_paragraph() {
        assert_eq!(
            quoted("他说：“学而时习之”。又说「温故知新」"),
            ["“学而时习之”", "「温故知新」"]
        );
        assert_eq!(quoted(r#"As "they say" and "so on"#), [r#""they say""#]);
        // A line break ends the paragraph, and the search for the closing mark: a stray
        // opening mark hides nothing after it (Chinese paragraphs end with one newline).
        assert!(quoted("“开头\n\n下一段”").is_empty());
        assert!(quoted("“一行\n下一行”").is_empty());
        assert_eq!(quoted("他说“没有闭合\n“真正的引文”。"), ["“真正的引文”"]);
        // Longer than the bound: no quotation, so no hiding place for a long copy.
        let long = format!("“{}”", "抄".repeat(400));
        assert!(quoted(&long).is_empty());
        assert_eq!(quotations(&long, 500).len(), 1);
    }

    #[test]
    fn reference_lists_run_from_their_heading_to_the_appendix_or_the_end() {
        let text = "正文。\n七、参考文献\n[1] 张三. 论文.\n附录\n表格\n";
        let r = reference_lists(text);
        let chars: Vec<char> = text.chars().collect();
        let got: String = chars[r[0].start as usize..r[0].end as usize].iter().collect();
        assert_eq!(got, "七、参考文献\n[1] 张三. 论文.\n");
        let text = "Body text.\n\n## References:\n1. Knuth.";
        let r = reference_lists(text);
        assert_eq!((r[0].start, r[0].end), (12, text.chars().count() as u32));
        assert_eq!(reference_lists("IV. References\nx")[0].start, 0);
        // A sentence that mentions references is not a heading.
        assert!(reference_lists("See the references below for more.\n").is_empty());
    }
}
