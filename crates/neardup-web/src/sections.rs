//! The sections of a text, found by its headings: what a supervisor reads a copied share by
//! (the literature review of a thesis copies more than its results, and a report that says so
//! per chapter is read, one that gives one figure is argued with).
//!
//! A heading is a line of its own, of one of the forms theses are written in:
//!
//! - a Markdown heading, `#` to `######` and a space (`## 2.1 Data`);
//! - a Chinese chapter or section, `第一章`, `第1章`, `第二节`, `第三部分` (章, 篇, 部分 and 编
//!   are chapters, 节 a section);
//! - a Chinese enumeration, `一、引言` (a chapter) or `（一）研究对象` (a section);
//! - a decimal number, `1. Introduction`, `1 Introduction`, `2.1 Data`, `3.2.1研究方法` (one
//!   level per number; the first number has at most two digits, so `2023 年的调查` is text);
//! - a title that stands alone without a number: 摘要, 参考文献, 致谢, Abstract, References and
//!   the like.
//!
//! Apart from Markdown's, a heading is short (at most [`MAX_HEADING_CHARS`] characters) and does
//! not end as a sentence does (`。`, `；`, `，`, `.` after a word...): a numbered list item that
//! is a sentence (`1. 我们先收集了数据。`) is text. No rule tells every heading from a short
//! numbered line; these keep the breakdown right on the theses we know, and a missed heading
//! only merges two sections.

/// The longest line taken for a heading (Markdown's excepted), in characters.
pub(crate) const MAX_HEADING_CHARS: usize = 40;

/// Titles that are headings without a number (compared case-insensitively, spaces removed:
/// `摘 要` is 摘要).
const UNNUMBERED: &[&str] = &[
    "摘要",
    "中文摘要",
    "英文摘要",
    "目录",
    "引言",
    "前言",
    "绪论",
    "导论",
    "结论",
    "结语",
    "致谢",
    "参考文献",
    "附录",
    "abstract",
    "contents",
    "introduction",
    "conclusion",
    "conclusions",
    "acknowledgements",
    "acknowledgments",
    "references",
    "bibliography",
    "appendix",
];

/// A heading: where its line starts (in code points), its level (1 for a chapter) and its
/// text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Heading {
    /// First code point of the heading's line.
    pub start: u64,
    /// 1 for a chapter, 2 for its sections, and so on.
    pub level: u8,
    /// The heading as written, trimmed (Markdown's `#` removed).
    pub title: String,
}

/// The headings of `text`, in text order.
pub(crate) fn headings(text: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut at = 0u64;
    for line in text.split_inclusive('\n') {
        if let Some((level, title)) = heading(line) {
            out.push(Heading { start: at, level, title });
        }
        at += line.chars().count() as u64;
    }
    out
}

fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{3000}'
}

/// The level and title of `line` when it is a heading.
fn heading(line: &str) -> Option<(u8, String)> {
    let line = line.trim_matches(is_space);
    if line.is_empty() {
        return None;
    }
    if let Some(found) = markdown(line) {
        return Some(found);
    }
    let len = line.chars().count();
    if len > MAX_HEADING_CHARS || ends_as_sentence(line) {
        return None;
    }
    let level = chinese_chapter(line)
        .or_else(|| chinese_enumeration(line))
        .or_else(|| decimal(line))
        .or_else(|| unnumbered(line))?;
    Some((level, line.to_string()))
}

/// `## Title`: a level per `#`, a space, then the title.
fn markdown(line: &str) -> Option<(u8, String)> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim_matches(is_space).trim_end_matches('#').trim_matches(is_space);
    if title.is_empty() {
        return None;
    }
    Some((hashes as u8, title.to_string()))
}

fn ends_as_sentence(line: &str) -> bool {
    matches!(
        line.chars().last(),
        Some('。' | '；' | ';' | '，' | ',' | '、' | '：' | ':' | '！' | '!' | '？' | '?' | '…')
    ) || (line.ends_with('.')
        && line.trim_end_matches('.').chars().last().is_some_and(char::is_alphabetic))
}

fn is_chinese_numeral(c: char) -> bool {
    "零〇一二三四五六七八九十百两".contains(c)
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || ('０'..='９').contains(&c)
}

/// `第一章`, `第1章`, `第二节`, `第三部分`.
fn chinese_chapter(line: &str) -> Option<u8> {
    let rest = line.strip_prefix('第')?;
    let number = rest.chars().take_while(|&c| is_chinese_numeral(c) || is_digit(c)).count();
    if number == 0 {
        return None;
    }
    let rest: String = rest.chars().skip(number).collect();
    if rest.starts_with('节') {
        Some(2)
    } else if ["章", "篇", "部分", "编"].iter().any(|w| rest.starts_with(w)) {
        Some(1)
    } else {
        None
    }
}

/// `一、引言` (a chapter) and `（一）研究对象` or `(一)` (a section).
fn chinese_enumeration(line: &str) -> Option<u8> {
    let numeral = line.chars().take_while(|&c| is_chinese_numeral(c)).count();
    if (1..=3).contains(&numeral) && line.chars().nth(numeral) == Some('、') {
        // `一、二、三` counts; `一、引言` is a heading.
        let mut title = line.chars().skip(numeral + 1).peekable();
        let counts = title.peek().is_some_and(|&c| is_chinese_numeral(c));
        return (!counts && has_title(title)).then_some(1);
    }
    let rest = line.strip_prefix(['（', '('])?;
    let numeral = rest.chars().take_while(|&c| is_chinese_numeral(c)).count();
    let close = rest.chars().nth(numeral)?;
    ((1..=3).contains(&numeral)
        && (close == '）' || close == ')')
        && has_title(rest.chars().skip(numeral + 1)))
    .then_some(2)
}

/// `1. Introduction`, `1 Introduction`, `2.1 Data`, `3.2.1研究方法`: numbers joined by `.`, the
/// first of at most two digits, then a space (or, in Chinese, the title at once).
fn decimal(line: &str) -> Option<u8> {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut groups = 0u8;
    let mut dotted_end = false;
    loop {
        let digits = chars[i..].iter().take_while(|&&c| is_digit(c)).count();
        if digits == 0 || (groups == 0 && digits > 2) {
            break;
        }
        groups += 1;
        i += digits;
        dotted_end = false;
        if matches!(chars.get(i), Some('.' | '．')) {
            i += 1;
            dotted_end = true;
        } else {
            break;
        }
    }
    if groups == 0 || groups > 6 {
        return None;
    }
    let next = *chars.get(i)?;
    let title_at = if is_space(next) {
        chars[i..].iter().position(|&c| !is_space(c)).map(|p| i + p)?
    } else if is_han(next) && (groups > 1 || dotted_end) {
        // `3.2研究方法`, `1.研究背景`; a bare `1研究` is too often text.
        i
    } else {
        return None;
    };
    let first = chars[title_at];
    (first.is_alphabetic() && has_title(chars[title_at..].iter().copied())).then_some(groups)
}

fn is_han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}' | '\u{20000}'..='\u{3134f}')
}

/// Whether what follows a number holds a word: a heading has a title.
fn has_title(mut rest: impl Iterator<Item = char>) -> bool {
    rest.any(char::is_alphabetic)
}

/// 摘要, 参考文献, References: a title that is a heading alone.
fn unnumbered(line: &str) -> Option<u8> {
    let key: String = line.chars().filter(|&c| !is_space(c)).flat_map(char::to_lowercase).collect();
    UNNUMBERED.contains(&key.as_str()).then_some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(u8, &str)> {
        // Borrowed titles for short assertions: every title is a trimmed line of the text.
        headings(text)
            .into_iter()
            .map(|h| {
                let at = text.find(h.title.as_str()).expect("a heading's title is in the text");
                (h.level, &text[at..at + h.title.len()])
            })
            .collect()
    }

    #[test]
    fn chinese_chapters_and_sections_are_headings() {
        let text =
            "论文题目\n第一章 绪论\n正文一段。\n第2章 文献综述\n第二节 数字反哺\n一、研究背景\n\
                    （一）研究对象\n(二) 资料\n第三部分 结论\n";
        assert_eq!(
            found(text),
            vec![
                (1, "第一章 绪论"),
                (1, "第2章 文献综述"),
                (2, "第二节 数字反哺"),
                (1, "一、研究背景"),
                (2, "（一）研究对象"),
                (2, "(二) 资料"),
                (1, "第三部分 结论"),
            ]
        );
    }

    #[test]
    fn numbered_headings_have_a_level_per_number() {
        let text = "1. Introduction\nWe begin.\n1.2 Related work\n2 Method\n3.2.1研究方法\n\
                    1.研究背景\n１．２　数据来源\n";
        assert_eq!(
            found(text),
            vec![
                (1, "1. Introduction"),
                (2, "1.2 Related work"),
                (1, "2 Method"),
                (3, "3.2.1研究方法"),
                (1, "1.研究背景"),
                (2, "１．２　数据来源"),
            ]
        );
    }

    #[test]
    fn markdown_headings_and_standalone_titles() {
        let text = "# 摘要\n## 2.1 Data ##\n#not a heading\n摘 要\nReferences\n参考文献\n致谢\n";
        let hs = headings(text);
        let titles: Vec<(u8, &str)> = hs.iter().map(|h| (h.level, h.title.as_str())).collect();
        assert_eq!(
            titles,
            vec![
                (1, "摘要"),
                (2, "2.1 Data"),
                (1, "摘 要"),
                (1, "References"),
                (1, "参考文献"),
                (1, "致谢")
            ]
        );
    }

    #[test]
    fn sentences_list_items_and_years_are_text() {
        let text = "1. 我们先收集了数据。\n2. We then asked them why.\n2023 年的调查\n\
                    第一次见面时他很紧张，\n一、二、三\n12345 items\n\
                    1.2\n这是一段很长的正文，它没有标点结尾但是远远超过了一个标题应有的长度所以不是标题吧真的\n\
                    3.5 percent of the sample\n";
        // "3.5 percent of the sample" reads as a section numbered 3.5: a short numbered line
        // without a sentence's end is taken for a heading (the rule the module states).
        assert_eq!(found(text), vec![(2, "3.5 percent of the sample")]);
    }

    #[test]
    fn headings_start_at_their_line_in_code_points() {
        let text = "题目\r\n第一章 绪论\r\n正文。\n\n## 方法\n";
        let hs = headings(text);
        assert_eq!(hs.iter().map(|h| h.start).collect::<Vec<_>>(), vec![4, 17]);
        let chars: Vec<char> = text.chars().collect();
        assert_eq!(chars[4..7].iter().collect::<String>(), "第一章");
        assert_eq!(chars[17..19].iter().collect::<String>(), "##");
    }
}
