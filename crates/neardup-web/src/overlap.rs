//! The report of a passage check (`neardup overlap --report`): one self-contained HTML page
//! with, per query, its copied share (with and without quotations and references), its
//! sources, its text with every copied passage marked in one colour per source, and each
//! passage beside its source with what differs marked. The table of queries is static HTML; the
//! marked texts are drawn by the same script as the service's "Copied passages" view.
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
//!     sources: vec![SourceView { id: "s".into(), chars: 7 }],
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
use crate::service::OVERLAP_JS;

const OVERLAP_REPORT_JS: &str = include_str!("../assets/overlap_report.js");

/// The most queries whose texts the page holds (the most copied first).
pub const MAX_DETAILED: usize = 500;

/// A source's share of a query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceView {
    /// The source's id, as written in the collection.
    pub id: String,
    /// Code points of the query in its passages.
    pub chars: u64,
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
            "<main>\n<header class=\"page\"><h1>Copied passages: {}</h1><p>{} queries, the most \
             copied first</p></header>\n<section id=\"summary\"><h2>Summary</h2>\n\
             <dl class=\"summary\">",
            escape(&self.title),
            thousands(self.queries.len() as u64)
        );
        for (label, value) in &self.summary {
            let _ = write!(body, "<div><dt>{}</dt><dd>{}</dd></div>", escape(label), escape(value));
        }
        body.push_str(
            "</dl></section>\n<section id=\"queries\"><h2>Queries</h2>\n<table class=\"members\" \
             id=\"query-table\"><thead><tr><th>Query</th><th>Characters</th><th>Copied</th>\
             <th>With quotations and references</th><th>Sources (share of the query)</th>\
             </tr></thead><tbody>",
        );
        let detailed = order.len().min(MAX_DETAILED);
        for (rank, &i) in order.iter().enumerate() {
            let q = &self.queries[i];
            let sources = q
                .sources
                .iter()
                .take(5)
                .map(|s| format!("{} ({})", s.id, share(s.chars, q.chars)))
                .collect::<Vec<_>>()
                .join(", ");
            let more = q.sources.len().saturating_sub(5);
            let id = if rank < detailed {
                format!("<a href=\"#q{rank}\">{}</a>", escape(&q.id))
            } else {
                escape(&q.id)
            };
            let _ = write!(
                body,
                "<tr><td class=\"id\" data-label=\"Query\">{id}</td><td data-label=\"Characters\">{}\
                 </td><td class=\"copied\" data-label=\"Copied\">{}</td><td data-label=\"With \
                 quotations and references\">{}</td><td data-label=\"Sources\">{}{}</td></tr>",
                thousands(q.chars),
                share(q.copied_chars, q.chars),
                share(q.copied_chars + q.excluded_chars, q.chars),
                escape(&sources),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            );
        }
        body.push_str("</tbody></table>\n");
        if detailed < order.len() {
            let _ = write!(
                body,
                "<p class=\"note\" id=\"detail-note\">The texts of the {detailed} most copied \
                 queries are below; the other {} are in the table only.</p>",
                thousands((order.len() - detailed) as u64)
            );
        }
        body.push_str(
            "<noscript><p class=\"note\">The marked texts need JavaScript; the table above does \
             not.</p></noscript>\n<div id=\"query-list\"></div></section>\n</main>",
        );
        let data: Vec<&QueryView> =
            order.iter().take(detailed).map(|&i| &self.queries[i]).collect();
        Page {
            title: &format!("Copied passages: {}", self.title),
            body,
            data: Some(("overlap-data", json_block(&data))),
            scripts: &[SHARED_JS, OVERLAP_JS, OVERLAP_REPORT_JS],
            css: "",
            network: Network::None,
        }
        .render()
    }
}
