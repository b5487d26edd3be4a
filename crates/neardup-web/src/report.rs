//! The report of a dedup run: one HTML file with the run's summary, the histogram of the
//! pairs' similarities (threshold marked), the distribution of cluster sizes, and the
//! clusters, largest first, each opening to its members and a side-by-side view of two of them.
//!
//! On a big corpus the page holds a bounded selection ([`ReportLimits`]): the largest
//! clusters, a random sample of the others ([`select_clusters`]), in each the kept document and
//! the members least similar to it ([`choose_members`]), and texts cut at a length
//! ([`cut_text`]); the page says each bound it applied.
//!
//! ```
//! use neardup_web::report::{ClusterView, MemberView, Report, ReportLimits};
//!
//! let mut report = Report::new("corpus.jsonl", ReportLimits::default());
//! report.summary.push(("documents".into(), "3".into()));
//! report.add_cluster_size(2);
//! report.add_pair(0.9, 1);
//! report.clusters.push(ClusterView {
//!     number: 0,
//!     size: 2,
//!     weakest: 0.9,
//!     sampled: false,
//!     hidden: 0,
//!     members: vec![
//!         MemberView::new("a", None, "the cat sat on the mat", 3000),
//!         MemberView::new("b", Some(0.9), "the cat sat on a mat <b>", 3000),
//!     ],
//! });
//! let html = report.render();
//! assert!(html.contains("the cat sat on a mat \\u003cb\\u003e"));
//! assert!(!html.contains("<b>"));
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::charts::{self, similarity_bin, trim_float, SIMILARITY_BINS};
use crate::html::{escape, json_block, thousands, Network, Page};

const REPORT_JS: &str = include_str!("../assets/report.js");

/// The largest value of [`ReportLimits::largest`] and [`ReportLimits::sample`].
pub const MAX_CLUSTERS: usize = 100_000;
/// The largest value of [`ReportLimits::members`].
pub const MAX_MEMBERS: usize = 10_000;
/// The largest value of [`ReportLimits::text_chars`].
pub const MAX_TEXT_CHARS: usize = 1_000_000;

/// How much of a run a report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReportLimits {
    /// The largest clusters shown.
    pub largest: usize,
    /// How many of the other clusters are shown, chosen at random (reproducibly).
    pub sample: usize,
    /// Documents shown per cluster, the kept one included (at least 2).
    pub members: usize,
    /// Characters of each text shown.
    pub text_chars: usize,
}

impl Default for ReportLimits {
    fn default() -> ReportLimits {
        ReportLimits { largest: 100, sample: 100, members: 20, text_chars: 3000 }
    }
}

/// A cluster as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterView {
    /// Its number in the run's outputs (the line of `--clusters`, the `cluster` of
    /// `--assignments`), from 0.
    pub number: u64,
    /// Its documents, shown or not.
    pub size: u64,
    /// Its weakest link: the smallest similarity of the pairs that joined it.
    pub weakest: f64,
    /// Whether it is in the random sample (not among the largest).
    pub sampled: bool,
    /// Members not shown.
    pub hidden: u64,
    /// The members shown: the kept document first, then the others, least similar first.
    pub members: Vec<MemberView>,
}

/// A document as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberView {
    /// Its id, for display (a JSON string id without its quotes).
    pub id: String,
    /// Whether it is the cluster's kept document.
    pub kept: bool,
    /// Its similarity to the kept document (`None` for the kept one).
    pub similarity: Option<f64>,
    /// Its length in characters.
    pub chars: u64,
    /// Its text, cut at the report's length.
    pub text: String,
    /// Whether `text` was cut.
    pub cut: bool,
}

impl MemberView {
    /// A member from its full text, cut at `text_chars` characters; the kept document has no
    /// similarity.
    pub fn new(id: &str, similarity: Option<f64>, text: &str, text_chars: usize) -> MemberView {
        let (text, chars, cut) = cut_text(text, text_chars);
        MemberView { id: id.to_string(), kept: similarity.is_none(), similarity, chars, text, cut }
    }
}

/// `text` cut at `max_chars` characters: the text kept, the full length in characters, and
/// whether it was cut.
pub fn cut_text(text: &str, max_chars: usize) -> (String, u64, bool) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (text[..end].to_string(), text.chars().count() as u64, true),
        None => (text.to_string(), text.chars().count() as u64, false),
    }
}

/// Which clusters a report shows: the `limits.largest` largest (ties to the earlier cluster),
/// then `limits.sample` of the rest, chosen by the smallest `keys` (give a hash of something
/// stable, such as the kept document's id: the same run then gives the same sample, whichever
/// command builds the report). `sizes[i]` and `keys[i]` describe cluster `i`. Returns
/// `(cluster, sampled)`, the largest first (by size, then number), then the sample likewise.
pub fn select_clusters(sizes: &[u64], keys: &[u64], limits: ReportLimits) -> Vec<(usize, bool)> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(sizes[i]), i));
    let largest = limits.largest.min(order.len());
    let mut rest: Vec<usize> = order[largest..].to_vec();
    rest.sort_by_key(|&i| (keys.get(i).copied().unwrap_or(0), i));
    rest.truncate(limits.sample);
    rest.sort_by_key(|&i| (std::cmp::Reverse(sizes[i]), i));
    order[..largest]
        .iter()
        .map(|&i| (i, false))
        .chain(rest.into_iter().map(|i| (i, true)))
        .collect()
}

/// Which members of a cluster are shown: the kept one, then the `limits.members - 1` least
/// similar to it (ties to the earlier). `others` are `(member, similarity to the kept one)`
/// in input order. Returns the chosen others, least similar first, and how many are hidden.
pub fn choose_members<T: Copy>(
    mut others: Vec<(T, f64)>,
    limits: ReportLimits,
) -> (Vec<(T, f64)>, u64) {
    let room = limits.members.max(2) - 1;
    // A stable sort keeps input order among equal similarities.
    others.sort_by(|a, b| a.1.total_cmp(&b.1));
    let hidden = others.len().saturating_sub(room) as u64;
    others.truncate(room);
    (others, hidden)
}

/// What a threshold would give: the rows of the table under the histogram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThresholdRow {
    /// The threshold.
    pub threshold: f64,
    /// Pairs at or above it (copies included).
    pub pairs: u64,
    /// Clusters.
    pub clusters: u64,
    /// Documents dropped.
    pub dropped: u64,
}

/// The thresholds a report's table lists: the run's, then every 0.05 above it, and 1.
pub fn table_thresholds(run: f64) -> Vec<f64> {
    let mut out = vec![run];
    let mut t = (run * 20.0).floor() / 20.0 + 0.05;
    while t < 1.0 - 1e-9 {
        if t > run + 1e-9 {
            out.push((t * 100.0).round() / 100.0);
        }
        t += 0.05;
    }
    if run < 1.0 {
        out.push(1.0);
    }
    out
}

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct Report {
    /// What was deduplicated (input names), for the title.
    pub title: String,
    /// The line under the title (which command, when).
    pub subtitle: String,
    /// The summary, as label and value, in order.
    pub summary: Vec<(String, String)>,
    /// The threshold marked on the histogram.
    pub threshold: f64,
    /// The similarity measure, named for people ("Jaccard", "cosine", ...).
    pub measure: String,
    /// Pairs per similarity bin, or `None` when the pairs are not known (the page says why,
    /// in `pairs_note`).
    pub pair_bins: Option<Vec<u64>>,
    /// Why there is no histogram of pairs, when there is none.
    pub pairs_note: String,
    /// What other thresholds (at or above the run's) would give, from the pairs the run
    /// verified; empty when not known.
    pub thresholds: Vec<ThresholdRow>,
    /// Clusters by size: size -> how many clusters.
    pub cluster_sizes: BTreeMap<u64, u64>,
    /// The clusters shown, in page order.
    pub clusters: Vec<ClusterView>,
    /// The bounds applied.
    pub limits: ReportLimits,
}

#[derive(Serialize)]
struct Data<'a> {
    threshold: f64,
    measure: &'a str,
    selection: Selection,
    clusters: &'a [ClusterView],
}

#[derive(Serialize)]
struct Selection {
    largest: usize,
    sampled: usize,
    total: u64,
    members: usize,
    text_chars: usize,
}

impl Report {
    /// An empty report of `title` (the input names).
    pub fn new(title: &str, limits: ReportLimits) -> Report {
        Report {
            title: title.to_string(),
            subtitle: String::new(),
            summary: Vec::new(),
            threshold: 0.8,
            measure: "Jaccard".into(),
            pair_bins: Some(vec![0; SIMILARITY_BINS]),
            pairs_note: String::new(),
            thresholds: Vec::new(),
            cluster_sizes: BTreeMap::new(),
            clusters: Vec::new(),
            limits,
        }
    }

    /// Counts `count` pairs of similarity `similarity` in the histogram.
    pub fn add_pair(&mut self, similarity: f64, count: u64) {
        if let Some(bins) = &mut self.pair_bins {
            bins[similarity_bin(similarity)] += count;
        }
    }

    /// Counts a cluster of `size` documents in the distribution of sizes.
    pub fn add_cluster_size(&mut self, size: u64) {
        *self.cluster_sizes.entry(size).or_default() += 1;
    }

    /// The whole page.
    pub fn render(&self) -> String {
        let total_clusters: u64 = self.cluster_sizes.values().sum();
        let largest = self.clusters.iter().filter(|c| !c.sampled).count();
        let sampled = self.clusters.len() - largest;
        let mut body = String::with_capacity(16 * 1024);
        let _ = write!(
            body,
            "<main>\n<header class=\"page\"><h1><span>Near-duplicates in</span> {}</h1><p>{}</p>\
             </header>\n",
            escape(&self.title),
            escape(&self.subtitle)
        );
        body.push_str("<section id=\"summary\"><h2>Summary</h2>\n<dl class=\"summary\">");
        for (label, value) in &self.summary {
            let _ = write!(body, "<div><dt>{}</dt><dd>{}</dd></div>", escape(label), escape(value));
        }
        body.push_str("</dl></section>\n<section class=\"charts\" id=\"charts\">");
        body.push_str("<figure class=\"chart\" id=\"similarity-chart\"><figcaption>");
        match &self.pair_bins {
            Some(bins) => {
                let total: u64 = bins.iter().sum();
                let _ = write!(
                    body,
                    "Similarity ({}) of the {} pairs at or above the threshold</figcaption>",
                    escape(&self.measure),
                    thousands(total)
                );
                if total == 0 {
                    body.push_str("<p class=\"note\">No pair is at or above the threshold.</p>");
                } else {
                    body.push_str(&charts::similarity_chart(bins, self.threshold, &self.measure));
                    body.push_str(
                        "<p class=\"note\">Every pair counts, copies included: a group of n \
                         identical texts gives n(n-1)/2 pairs at 1. The dashed line is the \
                         threshold; the run verified no pair below it (shaded).</p>",
                    );
                    self.render_thresholds(&mut body);
                }
            }
            None => {
                let _ = write!(
                    body,
                    "Similarity of the pairs</figcaption><p class=\"note\">{}</p>",
                    escape(&self.pairs_note)
                );
            }
        }
        body.push_str("</figure><figure class=\"chart\" id=\"size-chart\"><figcaption>");
        let _ = write!(body, "Sizes of the {} clusters</figcaption>", thousands(total_clusters));
        if total_clusters == 0 {
            body.push_str("<p class=\"note\">No near-duplicates: every document is alone.</p>");
        } else {
            body.push_str(&charts::size_chart(&self.cluster_sizes));
        }
        body.push_str("</figure></section>\n<section id=\"clusters\"><h2>Clusters</h2>\n");
        let _ = write!(
            body,
            "<p class=\"note\" id=\"selection-note\">{}</p>",
            escape(&self.selection_note(total_clusters, largest, sampled))
        );
        body.push_str(
            "<noscript><p class=\"note\">The cluster browser needs JavaScript; the summary and \
             the charts above do not.</p></noscript>\n\
             <div id=\"cluster-tools\" class=\"toolbar hidden\">\
             <label>Filter by text or id<input type=\"search\" id=\"filter-text\" \
             placeholder=\"words, or an id\"></label>\
             <label>Similarity to kept, from<input type=\"number\" id=\"filter-min\" min=\"0\" \
             max=\"1\" step=\"0.01\" value=\"0\"></label>\
             <label>to<input type=\"number\" id=\"filter-max\" min=\"0\" max=\"1\" step=\"0.01\" \
             value=\"1\"></label>\
             <label>Order<select id=\"filter-order\"><option value=\"size\">largest first</option>\
             <option value=\"weakest\">least similar first</option>\
             <option value=\"strongest\">most similar first</option></select></label>\
             <span id=\"cluster-count\" class=\"note\" role=\"status\"></span></div>\n\
             <div id=\"decision-tools\" class=\"toolbar hidden\"><span id=\"decision-count\" \
             class=\"note\" role=\"status\"></span><a id=\"export-decisions\" class=\"button\" \
             download=\"decisions.jsonl\" href=\"#\">Export decisions (JSONL)</a>\
             <span class=\"note\">for <code>neardup dedup --decisions decisions.jsonl</code>, \
             which keeps them</span></div>\n\
             <ol class=\"clusters\" id=\"cluster-list\"></ol>\n</section>\n</main>",
        );
        let data = Data {
            threshold: self.threshold,
            measure: &self.measure,
            selection: Selection {
                largest,
                sampled,
                total: total_clusters,
                members: self.limits.members,
                text_chars: self.limits.text_chars,
            },
            clusters: &self.clusters,
        };
        let title = format!("neardup report: {}", self.title);
        Page {
            title: &title,
            body,
            data: Some(("report-data", json_block(&data))),
            scripts: &[crate::html::SHARED_JS, REPORT_JS],
            css: "",
            network: Network::None,
        }
        .render()
    }

    /// The table of what a higher threshold would give, and how to learn what a lower one
    /// would add.
    fn render_thresholds(&self, body: &mut String) {
        let Some(run) = self.thresholds.first() else { return };
        body.push_str(
            "<table class=\"thresholds\" id=\"threshold-table\"><caption class=\"note\">What \
             another threshold would give, from the pairs this run verified</caption><thead><tr>\
             <th>threshold</th><th>pairs</th><th>clusters</th><th>dropped</th>\
             <th>dropped vs this run</th></tr></thead><tbody>",
        );
        for row in &self.thresholds {
            let delta = row.dropped as i64 - run.dropped as i64;
            let _ = write!(
                body,
                "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if row == run { " class=\"run\"" } else { "" },
                trim_float(row.threshold),
                thousands(row.pairs),
                thousands(row.clusters),
                thousands(row.dropped),
                if row == run {
                    "this run".to_string()
                } else if delta == 0 {
                    "the same".to_string()
                } else if delta < 0 {
                    format!("{} fewer", thousands(delta.unsigned_abs()))
                } else {
                    format!("{} more", thousands(delta as u64))
                }
            );
        }
        let _ = write!(
            body,
            "</tbody></table><p class=\"note\">A lower threshold would add pairs this run did not \
             verify: run dedup with a lower --threshold (say {}) and its report lists each \
             threshold from there up.</p>",
            trim_float(((run.threshold - 0.1) * 20.0).round().max(1.0) / 20.0)
        );
    }

    fn selection_note(&self, total: u64, largest: usize, sampled: usize) -> String {
        let l = self.limits;
        let mut note = if (largest + sampled) as u64 >= total {
            format!("All {} clusters, largest first", thousands(total))
        } else {
            let rest = total - largest as u64;
            format!(
                "The {} largest of {} clusters, and a random sample of {} of the other {} \
                 (--report-clusters, --report-sample)",
                thousands(largest as u64),
                thousands(total),
                thousands(sampled as u64),
                thousands(rest)
            )
        };
        let _ = write!(
            note,
            ". In each, the kept document and at most {} others, the least similar to it first \
             (--report-members); texts cut at {} characters (--report-text-chars), each cut said \
             where it is. Similarities to the kept document are {} similarities{}.",
            thousands(l.members.max(2) as u64 - 1),
            thousands(l.text_chars as u64),
            self.measure,
            if self.threshold > 0.0 {
                format!("; the threshold is {}", trim_float(self.threshold))
            } else {
                String::new()
            }
        );
        note
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(largest: usize, sample: usize, members: usize) -> ReportLimits {
        ReportLimits { largest, sample, members, text_chars: 10 }
    }

    #[test]
    fn cut_text_counts_characters_not_bytes() {
        assert_eq!(cut_text("中文文本", 2), ("中文".to_string(), 4, true));
        assert_eq!(cut_text("abc", 3), ("abc".to_string(), 3, false));
        assert_eq!(cut_text("", 3), (String::new(), 0, false));
    }

    #[test]
    fn selection_takes_the_largest_then_a_reproducible_sample() {
        let sizes = [2, 9, 3, 9, 2, 2, 5];
        let keys = [50, 0, 0, 0, 10, 30, 0];
        let chosen = select_clusters(&sizes, &keys, limits(3, 2, 5));
        // Largest: 1 and 3 (size 9, by number), then 6 (5); sample: the two smallest keys of
        // {0, 2, 4, 5} -> 2 (key 0) and 4 (key 10), shown largest first.
        assert_eq!(chosen, vec![(1, false), (3, false), (6, false), (2, true), (4, true)]);
        assert_eq!(select_clusters(&sizes, &keys, limits(100, 100, 5)).len(), 7);
        assert!(select_clusters(&[], &[], limits(3, 3, 5)).is_empty());
    }

    #[test]
    fn members_are_the_least_similar_first() {
        let others = vec![("a", 0.9), ("b", 0.81), ("c", 0.95), ("d", 0.81)];
        let (chosen, hidden) = choose_members(others, limits(1, 1, 3));
        assert_eq!(chosen, vec![("b", 0.81), ("d", 0.81)]);
        assert_eq!(hidden, 2);
    }

    #[test]
    fn the_page_escapes_every_text_and_says_its_bounds() {
        let mut r = Report::new("<i>corpus</i>", limits(1, 0, 2));
        r.summary.push(("documents <b>".into(), "3 & more".into()));
        r.add_cluster_size(2);
        r.add_cluster_size(2);
        r.add_pair(0.9, 1);
        r.clusters.push(ClusterView {
            number: 0,
            size: 2,
            weakest: 0.9,
            sampled: false,
            hidden: 0,
            members: vec![
                MemberView::new(
                    "<script>alert(1)</script>",
                    None,
                    "</script><script>x()</script>",
                    100,
                ),
                MemberView::new("b", Some(0.9), "text", 100),
            ],
        });
        let html = r.render();
        assert!(html.contains("<span>Near-duplicates in</span> &lt;i&gt;corpus&lt;/i&gt;"));
        assert!(html.contains("documents &lt;b&gt;"));
        assert!(html.contains("3 &amp; more"));
        // Two script elements: the data block and the page's code; no text closes either.
        assert_eq!(html.matches("<script").count(), 2);
        assert_eq!(html.matches("</script>").count(), 2);
        assert!(
            html.contains("The 1 largest of 2 clusters, and a random sample of 0 of the other 1")
        );
        assert!(html.contains("at most 1 others"));
    }

    #[test]
    fn the_threshold_table_lists_the_run_and_higher_thresholds() {
        assert_eq!(table_thresholds(0.8), vec![0.8, 0.85, 0.9, 0.95, 1.0]);
        assert_eq!(table_thresholds(0.72), vec![0.72, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]);
        assert_eq!(table_thresholds(1.0), vec![1.0]);
        let mut r = Report::new("c", ReportLimits::default());
        r.add_pair(0.9, 3);
        let row = |threshold, pairs, clusters, dropped| ThresholdRow {
            threshold,
            pairs,
            clusters,
            dropped,
        };
        r.thresholds = vec![row(0.8, 3, 2, 5), row(0.9, 3, 2, 5), row(1.0, 0, 0, 0)];
        let html = r.render();
        assert!(html
            .contains("<tr class=\"run\"><td>0.8</td><td>3</td><td>2</td><td>5</td><td>this run"));
        assert!(html.contains("<td>1</td><td>0</td><td>0</td><td>0</td><td>5 fewer</td>"));
        assert!(html.contains("lower --threshold (say 0.7)"));
    }

    #[test]
    fn without_pairs_the_page_says_why() {
        let mut r = Report::new("c", ReportLimits::default());
        r.pair_bins = None;
        r.pairs_note = "give --pairs".into();
        let html = r.render();
        assert!(html.contains("give --pairs"));
        assert!(html.contains("No near-duplicates"));
    }
}
