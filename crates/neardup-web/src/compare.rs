//! The comparison of two texts: every measure in a table, and the two texts side by side with
//! the passages they share marked (`neardup compare --html`).
//!
//! ```
//! use neardup_web::compare::{ComparePage, Side};
//!
//! let page = ComparePage {
//!     a: Side { title: "a.txt".into(), text: "the cat sat on the mat".into() },
//!     b: Side { title: "b.txt".into(), text: "the cat sat on a mat".into() },
//!     measures: vec![("jaccard exact".into(), "0.4000".into())],
//! };
//! let html = page.render();
//! assert!(html.contains("<td>0.4000</td>"));
//! ```

use std::fmt::Write as _;

use serde::Serialize;

use crate::html::{escape, json_block, Network, Page};

const COMPARE_JS: &str = include_str!("../assets/compare.js");

/// One of the two texts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Side {
    /// Where it came from (a file name, `--text #1`, an id).
    pub title: String,
    /// The text.
    pub text: String,
}

/// The page of `neardup compare --html`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComparePage {
    /// The first text.
    pub a: Side,
    /// The second text.
    pub b: Side,
    /// Each measure, as name and formatted value, in order.
    pub measures: Vec<(String, String)>,
}

impl ComparePage {
    /// The whole page. Without JavaScript it shows the measures and both texts unmarked.
    pub fn render(&self) -> String {
        let mut body = String::with_capacity(self.a.text.len() + self.b.text.len() + 4096);
        let _ = write!(
            body,
            "<main>\n<header class=\"page\"><h1>Comparison</h1><p>{} · {}</p></header>\n\
             <section id=\"measures\"><h2>Measures</h2><table class=\"measures\"><tbody>",
            escape(&self.a.title),
            escape(&self.b.title)
        );
        for (name, value) in &self.measures {
            let _ = write!(body, "<tr><th>{}</th><td>{}</td></tr>", escape(name), escape(value));
        }
        body.push_str(
            "</tbody></table></section>\n<section><h2>Side by side</h2>\
             <div id=\"side-by-side\"><div class=\"sbs\"><p class=\"sbs-legend\">The two texts \
             (the shared passages are marked when JavaScript runs).</p><div class=\"sbs-panes\">",
        );
        for side in [&self.a, &self.b] {
            let _ = write!(
                body,
                "<section class=\"pane\"><h4>{}</h4><div class=\"text\">{}</div></section>",
                escape(&side.title),
                escape(&side.text)
            );
        }
        body.push_str("</div></div></div></section>\n</main>");
        #[derive(Serialize)]
        struct Data<'a> {
            a: &'a Side,
            b: &'a Side,
        }
        let title = format!("neardup compare: {} · {}", self.a.title, self.b.title);
        Page {
            title: &title,
            body,
            data: Some(("compare-data", json_block(&Data { a: &self.a, b: &self.b }))),
            scripts: &[crate::html::SHARED_JS, COMPARE_JS],
            css: "",
            network: Network::None,
        }
        .render()
    }
}
