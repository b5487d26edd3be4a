//! The report of a passage check (`neardup overlap --report`): one self-contained HTML page
//! that reads like the thesis-check reports supervisors know (CNKI's 检测报告). Per query: the
//! copied share without and with quotations and references, the largest single source, a table
//! of its sources (label, id, share, characters, passages, quoted characters), a table of its
//! sections where the text has headings (第一章, `1.2 Method`, Markdown `#`; see
//! `sections.rs`), the quotations and reference lists that match a source, listed apart with
//! their sources, and then its text with every copied passage marked, and its passages grouped
//! by source, longest first, each beside its source with what differs marked.
//!
//! Figures and tables are static HTML, readable without JavaScript; the marked text and the
//! passages are drawn by the same script as the service's "Copied passages" view. Each source
//! has a label (`S1` is the most copied) shown on every mark beside its colour, and the colours
//! are generated for any number of sources (golden-angle hues, overlap.js). The page speaks
//! Chinese to a browser that prefers it, as the other pages do (shared.js).
//!
//! A run over many long texts would make a page nobody can open: the page holds the texts of
//! the [`MAX_DETAILED`] queries with the largest copied share, and lists every query in the
//! table; it says so when it leaves texts out.
//!
//! ```
//! use neardup_web::overlap::{OverlapReport, PassageView, QueryView, SourceView};
//!
//! let mut report = OverlapReport::new("theses.jsonl against library.jsonl");
//! report.queries.push(QueryView {
//!     id: "t1".into(),
//!     text: "我们认为，这一段是抄来的。".into(),
//!     chars: 13,
//!     copied_chars: 7,
//!     excluded_chars: 0,
//!     sources: vec![SourceView { id: "s".into(), chars: 7, quoted_chars: 0, passages: 1 }],
//!     passages: vec![PassageView {
//!         start: 5, end: 12, source: "s".into(), source_start: 0, source_end: 7,
//!         similarity: 1.0, also: vec![], source_text: "这一段是抄来的".into(), exclusion: None,
//!     }],
//!     excluded: vec![],
//! });
//! let html = report.render();
//! assert!(html.contains("53.8%"));
//! ```

use std::fmt::Write as _;

use serde::Serialize;

use crate::html::{escape, json_block, thousands, Network, Page, SHARED_JS};
use crate::sections;
use crate::service::OVERLAP_JS;

const OVERLAP_REPORT_JS: &str = include_str!("../assets/overlap_report.js");

/// The most queries whose texts the page holds (the most copied first).
pub const MAX_DETAILED: usize = 500;

/// A source's share of a query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceView {
    /// The source's id, as written in the collection.
    pub id: String,
    /// Code points of the query in its counted passages.
    pub chars: u64,
    /// Code points of the query in quotations (and reference lists) this source holds, and no
    /// counted passage: cited, listed apart (a CNKI report's 引用).
    pub quoted_chars: u64,
    /// Its counted passages.
    pub passages: u64,
}

/// A copied passage, with the source's text over it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassageView {
    /// First code point in the query.
    pub start: u64,
    /// End (exclusive) in the query.
    pub end: u64,
    /// The source's id.
    pub source: String,
    /// First code point in the source.
    pub source_start: u64,
    /// End (exclusive) in the source.
    pub source_end: u64,
    /// The passage's similarity.
    pub similarity: f64,
    /// Other documents holding the same text.
    pub also: Vec<String>,
    /// The source's text of the passage.
    pub source_text: String,
    /// `quote` or `references` for a passage left out of the copied share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclusion: Option<String>,
}

/// One query of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryView {
    /// The query's id, as written in the input.
    pub id: String,
    /// Its text.
    pub text: String,
    /// Its code points.
    pub chars: u64,
    /// Code points inside a counted passage, each once.
    pub copied_chars: u64,
    /// Code points inside quotations and references copied, and no counted passage.
    pub excluded_chars: u64,
    /// The sources, most copied first.
    pub sources: Vec<SourceView>,
    /// The counted passages, in query order.
    pub passages: Vec<PassageView>,
    /// The passages left out (quotations, references).
    pub excluded: Vec<PassageView>,
}

/// The report of one run.
#[derive(Debug, Clone, Default)]
pub struct OverlapReport {
    /// What was checked against what.
    pub title: String,
    /// Label and value pairs of the run (documents, time, settings).
    pub summary: Vec<(String, String)>,
    /// Every query.
    pub queries: Vec<QueryView>,
}

fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0%".into()
    } else {
        format!("{:.1}%", part as f64 / whole as f64 * 100.0)
    }
}

/// The label of the `i`-th source of a query (most copied first): `S1`, `S2`, ... It is shown
/// on each marked passage beside the source's colour, since no set of colours stays apart past
/// a dozen sources. overlap.js labels the same way (`OverlapView.label`).
fn label(i: usize) -> String {
    format!("S{}", i + 1)
}

/// The code points of `[start, end)` inside some range of `ranges`, each once.
fn covered(ranges: &[(u64, u64)], start: u64, end: u64) -> u64 {
    let mut clipped: Vec<(u64, u64)> =
        ranges.iter().map(|&(s, e)| (s.max(start), e.min(end))).filter(|&(s, e)| s < e).collect();
    clipped.sort_unstable();
    let (mut total, mut reach) = (0, start);
    for (s, e) in clipped {
        let s = s.max(reach);
        if e > s {
            total += e - s;
            reach = e;
        }
    }
    total
}

/// One section of a query: from a heading to the next (or the text before the first).
#[derive(Debug, Clone, PartialEq)]
struct SectionShare {
    /// The heading; `None` for the text before the first heading.
    title: Option<String>,
    /// 1 for a chapter, 2 for its sections, ...
    level: u8,
    /// Its code points, heading included.
    chars: u64,
    /// Code points inside counted passages.
    copied_chars: u64,
    /// Code points inside quotations and references copied, and no counted passage.
    quoted_chars: u64,
}

/// The sections of `q` with their copied characters; empty when its text has no heading.
/// The sections cover the text, so their characters add up to the query's.
fn section_shares(q: &QueryView) -> Vec<SectionShare> {
    let heads = sections::headings(&q.text);
    if heads.is_empty() {
        return Vec::new();
    }
    let total = q.text.chars().count() as u64;
    let counted: Vec<(u64, u64)> = q.passages.iter().map(|p| (p.start, p.end)).collect();
    let all: Vec<(u64, u64)> =
        counted.iter().copied().chain(q.excluded.iter().map(|p| (p.start, p.end))).collect();
    let mut bounds: Vec<(Option<String>, u8, u64)> = Vec::with_capacity(heads.len() + 1);
    // The text before the first heading (a title page, a thesis's title) is a section of its
    // own when it holds more than white space.
    let before: String = q.text.chars().take(heads[0].start as usize).collect();
    if !before.trim().is_empty() {
        bounds.push((None, 1, 0));
    }
    bounds.extend(heads.into_iter().map(|h| (Some(h.title), h.level, h.start)));
    let mut out = Vec::with_capacity(bounds.len());
    for (i, (title, level, start)) in bounds.iter().enumerate() {
        let end = bounds.get(i + 1).map_or(total, |b| b.2);
        let copied_chars = covered(&counted, *start, end);
        out.push(SectionShare {
            title: title.clone(),
            level: *level,
            chars: end - start,
            copied_chars,
            quoted_chars: covered(&all, *start, end) - copied_chars,
        });
    }
    out
}

/// At most `max` characters of `text`, with `…` when cut.
fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `text[start..end)` in code points.
fn slice_chars(text: &str, start: u64, end: u64) -> &str {
    let byte = |cp: u64| text.char_indices().nth(cp as usize).map_or(text.len(), |(b, _)| b);
    let (s, e) = (byte(start), byte(end));
    text.get(s..e.max(s)).unwrap_or_default()
}

/// A source's label and id, as the report shows them everywhere: `S1 wang2021`.
fn source_cell(sources: &[SourceView], id: &str) -> String {
    match sources.iter().position(|s| s.id == id) {
        Some(i) => format!(
            "<span class=\"swatch src\" data-src=\"{i}\"></span><span class=\"src-tag\">{}</span> \
             <span class=\"id\" translate=\"no\">{}</span>",
            label(i),
            escape(id)
        ),
        None => format!("<span class=\"id\" translate=\"no\">{}</span>", escape(id)),
    }
}

/// The part of a query's section the page holds as static HTML: its figures, its sources, its
/// sections and its quotations, readable without JavaScript (the marked text and the passages
/// beside their sources are drawn into `.ov-drawn`). Every word is its own text node, so the
/// page's translation (shared.js, `translateStatic`) finds it; document text is marked
/// `translate="no"`.
fn write_query(body: &mut String, rank: usize, q: &QueryView) {
    let n_sources = q.sources.iter().filter(|s| s.chars > 0).count();
    let _ = write!(
        body,
        "<details class=\"query\" id=\"q{rank}\" data-id=\"{id}\"{open}><summary><strong \
         class=\"id\" translate=\"no\">{id}</strong> · <span class=\"q-copied\">{copied}</span> \
         <span>copied</span> · <span>{n_sources}</span> <span>{sources}</span> · \
         <span>{chars}</span> <span>characters</span></summary>\n<div class=\"query-body\">",
        id = escape(&q.id),
        open = if rank == 0 { " open" } else { "" },
        copied = share(q.copied_chars, q.chars),
        sources = if n_sources == 1 { "source" } else { "sources" },
        chars = thousands(q.chars),
    );

    // The figures a supervisor reads first (CNKI's 去除引用文献复制比, 总文字复制比 and
    // 单篇最大文字复制比).
    let largest = match q.sources.first().filter(|s| s.chars > 0) {
        Some(s) => format!(
            "{} <span class=\"share\">{}</span>",
            source_cell(&q.sources, &s.id),
            share(s.chars, q.chars)
        ),
        None => "<span>none</span>".into(),
    };
    let _ = writeln!(
        body,
        "<dl class=\"summary figures\"><div class=\"fig-copied\"><dt>Copied</dt><dd>{}</dd></div>\
         <div class=\"fig-with-quotes\"><dt>With quotations and references</dt><dd>{}</dd></div>\
         <div class=\"fig-largest\"><dt>Largest single source</dt><dd>{largest}</dd></div>\
         <div class=\"fig-chars\"><dt>Characters</dt><dd>{}</dd></div>\
         <div class=\"fig-copied-chars\"><dt>Copied characters</dt><dd>{}</dd></div>\
         <div class=\"fig-passages\"><dt>Passages</dt><dd>{}</dd></div>\
         <div class=\"fig-quotations\"><dt>Quotations and references</dt><dd>{}</dd></div></dl>",
        share(q.copied_chars, q.chars),
        share(q.copied_chars + q.excluded_chars, q.chars),
        thousands(q.chars),
        thousands(q.copied_chars),
        thousands(q.passages.len() as u64),
        thousands(q.excluded.len() as u64),
    );

    // Per source.
    if !q.sources.is_empty() {
        body.push_str(
            "<h3>Sources</h3>\n<table class=\"members ov-source-table\"><thead><tr><th>Label</th>\
             <th>Source</th><th>Share</th><th>Characters</th><th>Passages</th>\
             <th>Quoted characters</th></tr></thead><tbody>",
        );
        for (i, s) in q.sources.iter().enumerate() {
            let _ = write!(
                body,
                "<tr data-id=\"{id}\"><td class=\"label\" data-label=\"Label\"><span class=\"swatch \
                 src\" data-src=\"{i}\"></span><span class=\"src-tag\">{label}</span></td><td \
                 class=\"id\" data-label=\"Source\" translate=\"no\">{id}</td><td class=\"num \
                 share\" data-label=\"Share\">{share}</td><td class=\"num chars\" \
                 data-label=\"Characters\">{chars}</td><td class=\"num passages\" \
                 data-label=\"Passages\">{passages}</td><td class=\"num quoted\" \
                 data-label=\"Quoted characters\">{quoted}</td></tr>",
                id = escape(&s.id),
                label = label(i),
                share = share(s.chars, q.chars),
                chars = thousands(s.chars),
                passages = thousands(s.passages),
                quoted = thousands(s.quoted_chars),
            );
        }
        body.push_str("</tbody></table>\n");
    }

    // Per section, where the text has headings.
    let sections = section_shares(q);
    if !sections.is_empty() {
        body.push_str(
            "<h3>Sections</h3>\n<table class=\"members ov-section-table\"><thead><tr>\
             <th>Section</th><th>Characters</th><th>Copied</th><th>Copied characters</th>\
             <th>Quoted characters</th></tr></thead><tbody>",
        );
        for s in &sections {
            let title = match &s.title {
                Some(t) => format!("<span translate=\"no\">{}</span>", escape(t)),
                None => "<span class=\"muted\">before the first heading</span>".into(),
            };
            let _ = write!(
                body,
                "<tr class=\"level-{level}\"><td class=\"section\" data-label=\"Section\">{title}\
                 </td><td class=\"num chars\" data-label=\"Characters\">{chars}</td><td class=\
                 \"num share\" data-label=\"Copied\">{share}</td><td class=\"num copied\" \
                 data-label=\"Copied characters\">{copied}</td><td class=\"num quoted\" \
                 data-label=\"Quoted characters\">{quoted}</td></tr>",
                level = s.level.min(4),
                chars = thousands(s.chars),
                share = share(s.copied_chars, s.chars),
                copied = thousands(s.copied_chars),
                quoted = thousands(s.quoted_chars),
            );
        }
        body.push_str("</tbody></table>\n");
    }

    // The quotations and reference lists that match a source: cited, not counted, each with
    // its source (a quotation is no hiding place, and no accusation either).
    body.push_str("<h3>Quotations and references, not counted</h3>\n");
    if q.excluded.is_empty() {
        body.push_str(
            "<p class=\"note ov-no-quotes\">No quotation or reference list matches a source.</p>\n",
        );
    } else {
        body.push_str(
            "<table class=\"members ov-quote-table\"><thead><tr><th>Kind</th><th>Where</th>\
             <th>Source</th><th>Characters</th><th>Text</th></tr></thead><tbody>",
        );
        for p in &q.excluded {
            let kind = if p.exclusion.as_deref() == Some("references") {
                "reference list"
            } else {
                "quotation"
            };
            let _ = write!(
                body,
                "<tr data-source=\"{source_id}\"><td class=\"kind\" data-label=\"Kind\">{kind}</td>\
                 <td class=\"num where\" data-label=\"Where\">{start}–{end}</td><td class=\"source\" \
                 data-label=\"Source\">{source}</td><td class=\"num chars\" \
                 data-label=\"Characters\">{chars}</td><td class=\"text\" data-label=\"Text\" \
                 translate=\"no\">{text}</td></tr>",
                source_id = escape(&p.source),
                start = p.start,
                end = p.end,
                source = source_cell(&q.sources, &p.source),
                chars = thousands(p.end - p.start),
                text = escape(&excerpt(slice_chars(&q.text, p.start, p.end), 160)),
            );
        }
        body.push_str("</tbody></table>\n");
    }
    body.push_str("<div class=\"ov-drawn\"></div></div></details>\n");
}

impl OverlapReport {
    /// An empty report titled `title`.
    pub fn new(title: &str) -> OverlapReport {
        OverlapReport { title: title.to_string(), ..OverlapReport::default() }
    }

    /// The page.
    pub fn render(&self) -> String {
        let mut order: Vec<usize> = (0..self.queries.len()).collect();
        let copied =
            |q: &QueryView| if q.chars == 0 { 0.0 } else { q.copied_chars as f64 / q.chars as f64 };
        order.sort_by(|&a, &b| {
            copied(&self.queries[b]).total_cmp(&copied(&self.queries[a])).then(a.cmp(&b))
        });
        let mut body = String::with_capacity(16 * 1024);
        let _ = write!(
            body,
            "<main>\n<header class=\"page\"><h1><span>Passage check report</span>: <span \
             translate=\"no\">{}</span></h1><p><span>{}</span> <span>{}</span></p></header>\n\
             <section id=\"summary\"><h2>Summary</h2>\n<dl class=\"summary\">",
            escape(&self.title),
            thousands(self.queries.len() as u64),
            if self.queries.len() == 1 { "query" } else { "queries, the most copied first" }
        );
        for (label, value) in &self.summary {
            let _ = write!(body, "<div><dt>{}</dt><dd>{}</dd></div>", escape(label), escape(value));
        }
        body.push_str(
            "</dl></section>\n<section id=\"queries\"><h2>Queries</h2>\n<table class=\"members\" \
             id=\"query-table\"><thead><tr><th>Query</th><th>Characters</th><th>Copied</th>\
             <th>With quotations and references</th><th>Largest single source</th>\
             <th>Sources (share of the query)</th></tr></thead><tbody>",
        );
        let detailed = order.len().min(MAX_DETAILED);
        for (rank, &i) in order.iter().enumerate() {
            let q = &self.queries[i];
            let counted: Vec<&SourceView> = q.sources.iter().filter(|s| s.chars > 0).collect();
            let sources = counted
                .iter()
                .take(5)
                .map(|s| format!("{} ({})", s.id, share(s.chars, q.chars)))
                .collect::<Vec<_>>()
                .join(", ");
            let more = counted.len().saturating_sub(5);
            let id = if rank < detailed {
                format!("<a href=\"#q{rank}\">{}</a>", escape(&q.id))
            } else {
                escape(&q.id)
            };
            let largest = counted.first().map_or(String::new(), |s| share(s.chars, q.chars));
            let _ = write!(
                body,
                "<tr><td class=\"id\" data-label=\"Query\" translate=\"no\">{id}</td><td \
                 data-label=\"Characters\">{}</td><td class=\"copied\" data-label=\"Copied\">{}\
                 </td><td class=\"with-quotes\" data-label=\"With quotations and references\">{}\
                 </td><td class=\"largest\" data-label=\"Largest single source\">{largest}</td>\
                 <td data-label=\"Sources (share of the query)\"><span translate=\"no\">{}</span>{}\
                 </td></tr>",
                thousands(q.chars),
                share(q.copied_chars, q.chars),
                share(q.copied_chars + q.excluded_chars, q.chars),
                escape(&sources),
                if more > 0 {
                    format!(" <span class=\"more\" data-n=\"{more}\">and {more} more</span>")
                } else {
                    String::new()
                }
            );
        }
        body.push_str("</tbody></table>\n");
        if detailed < order.len() {
            let _ = write!(
                body,
                "<p class=\"note\" id=\"detail-note\" data-shown=\"{detailed}\" data-rest=\"{rest}\">\
                 The texts of the {detailed} most copied queries are below; the other {rest} are \
                 in the table only.</p>",
                rest = thousands((order.len() - detailed) as u64)
            );
        }
        body.push_str(
            "<noscript><p class=\"note\">The marked texts need JavaScript; the figures and tables \
             do not.</p></noscript>\n<div id=\"query-list\">\n",
        );
        for (rank, &i) in order.iter().take(detailed).enumerate() {
            write_query(&mut body, rank, &self.queries[i]);
        }
        body.push_str("</div></section>\n</main>");
        let data: Vec<&QueryView> =
            order.iter().take(detailed).map(|&i| &self.queries[i]).collect();
        Page {
            title: &format!("Passage check report: {}", self.title),
            body,
            data: Some(("overlap-data", json_block(&data))),
            scripts: &[SHARED_JS, OVERLAP_JS, OVERLAP_REPORT_JS],
            css: "",
            network: Network::None,
        }
        .render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(start: u64, end: u64, source: &str, exclusion: Option<&str>) -> PassageView {
        PassageView {
            start,
            end,
            source: source.into(),
            source_start: 0,
            source_end: end - start,
            similarity: 1.0,
            also: vec![],
            source_text: String::new(),
            exclusion: exclusion.map(String::from),
        }
    }

    /// A thesis of three sections: a title line, 第一章 copying 10 characters from `a`, and
    /// 1.1 copying 5 from `b` and quoting 6 of `c`.
    fn thesis() -> QueryView {
        let text = "题目行\n第一章 绪论\n一二三四五六七八九十。\n1.1 背景\n甲乙丙丁戊，“子丑寅卯辰巳”完。\n";
        let at = |s: &str| text[..text.find(s).expect("in the text")].chars().count() as u64;
        let (a, b, c) = (at("一二三"), at("甲乙"), at("子丑"));
        QueryView {
            id: "t<1>".into(),
            text: text.into(),
            chars: text.chars().count() as u64,
            copied_chars: 15,
            excluded_chars: 6,
            sources: vec![
                SourceView { id: "a".into(), chars: 10, quoted_chars: 0, passages: 1 },
                SourceView { id: "b".into(), chars: 5, quoted_chars: 0, passages: 1 },
                SourceView { id: "c".into(), chars: 0, quoted_chars: 6, passages: 0 },
            ],
            passages: vec![passage(a, a + 10, "a", None), passage(b, b + 5, "b", None)],
            excluded: vec![passage(c, c + 6, "c", Some("quote"))],
        }
    }

    #[test]
    fn covered_counts_each_code_point_once_inside_the_window() {
        assert_eq!(covered(&[(0, 10), (5, 15), (20, 30)], 0, 100), 25);
        assert_eq!(covered(&[(0, 10), (5, 15), (20, 30)], 8, 25), 12);
        assert_eq!(covered(&[], 0, 10), 0);
    }

    #[test]
    fn sections_cover_the_text_and_hold_their_copies() {
        let q = thesis();
        let s = section_shares(&q);
        let titles: Vec<Option<&str>> = s.iter().map(|x| x.title.as_deref()).collect();
        assert_eq!(titles, vec![None, Some("第一章 绪论"), Some("1.1 背景")]);
        assert_eq!(s.iter().map(|x| x.level).collect::<Vec<_>>(), vec![1, 1, 2]);
        assert_eq!(s.iter().map(|x| x.chars).sum::<u64>(), q.chars);
        assert_eq!(s.iter().map(|x| x.copied_chars).collect::<Vec<_>>(), vec![0, 10, 5]);
        assert_eq!(s.iter().map(|x| x.quoted_chars).collect::<Vec<_>>(), vec![0, 0, 6]);
    }

    #[test]
    fn a_text_without_headings_has_no_section_table() {
        let mut q = thesis();
        q.text = "一段没有标题的正文。".into();
        q.passages.clear();
        q.excluded.clear();
        assert!(section_shares(&q).is_empty());
        let mut report = OverlapReport::new("x");
        report.queries.push(q);
        assert!(!report.render().contains("<table class=\"members ov-section-table\">"));
    }

    #[test]
    fn the_page_holds_the_figures_the_sources_and_the_quotations_as_html() {
        let mut report = OverlapReport::new("thesis.txt against <lib>");
        report.queries.push(thesis());
        let html = report.render();
        let q = thesis();
        let (copied, with) = (share(15, q.chars), share(21, q.chars));
        assert!(html.contains(&format!("<dt>Copied</dt><dd>{copied}</dd>")), "{html}");
        assert!(html.contains(&format!("<dd>{with}</dd>")));
        // The largest source, its label and its share.
        let largest = &html[html.find("<div class=\"fig-largest\">").expect("largest")..];
        assert!(largest.contains("<span class=\"src-tag\">S1</span>"));
        assert!(largest.contains(&share(10, q.chars)));
        // One row per source, labelled in order, with its passages and quoted characters.
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            assert!(html.contains(&format!("<tr data-id=\"{id}\"><td class=\"label\"")));
            assert!(html
                .contains(&format!("data-src=\"{i}\"></span><span class=\"src-tag\">S{}", i + 1)));
        }
        assert!(html.contains("data-label=\"Quoted characters\">6</td>"));
        // The quotation, apart, with its source and its text.
        let quotes =
            &html[html.find("<table class=\"members ov-quote-table\">").expect("quotations")..];
        assert!(quotes.contains("<td class=\"kind\" data-label=\"Kind\">quotation</td>"));
        assert!(quotes.contains("<span class=\"src-tag\">S3</span>"));
        assert!(quotes.contains(">子丑寅卯辰巳</td>"));
        // Escaped ids and title, and sections.
        assert!(html.contains("t&lt;1&gt;") && html.contains("&lt;lib&gt;"));
        assert!(!html.contains("t<1>"));
        assert!(html.contains("<tr class=\"level-2\"><td class=\"section\" data-label=\"Section\"><span translate=\"no\">1.1 背景</span>"));
    }

    #[test]
    fn excerpts_and_slices_count_code_points() {
        assert_eq!(excerpt("一二三四", 2), "一二…");
        assert_eq!(excerpt("一二", 2), "一二");
        assert_eq!(slice_chars("a一二b", 1, 3), "一二");
        assert_eq!(slice_chars("a一", 1, 9), "一");
    }
}
