//! The report's two charts as static SVG: the similarities of the pairs, with the threshold
//! marked, and the sizes of the clusters. Counts span orders of magnitude (copies of one
//! boilerplate page against a handful of true near-duplicates), so the vertical axis is
//! logarithmic and every bar carries its exact count in a tooltip (`<title>`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::html::{escape, thousands};

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 250.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 18.0;
const BOTTOM: f64 = 42.0;

struct Bar {
    count: u64,
    /// The label under the bar, if it gets one.
    label: Option<String>,
    /// The tooltip.
    title: String,
    class: &'static str,
}

/// A vertical marker at `at` bar widths from the left edge, with its label; with `shade`, the
/// region left of it is shaded and titled so.
struct Marker {
    at: f64,
    label: String,
    shade: Option<String>,
}

fn bar_chart(
    id: &str,
    summary: &str,
    bars: &[Bar],
    y_label: &str,
    marker: Option<Marker>,
) -> String {
    let max = bars.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    // Log scale on count + 1, with ticks at powers of ten up to the first one above the max.
    let mut top_tick = 1u64;
    while top_tick < max {
        top_tick = top_tick.saturating_mul(10);
    }
    let scale = ((top_tick + 1) as f64).log10();
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let y = |count: u64| TOP + plot_h - plot_h * ((count + 1) as f64).log10() / scale;
    let bw = plot_w / bars.len().max(1) as f64;

    let mut s = String::new();
    let _ = write!(
        s,
        "<svg id=\"{}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\">",
        escape(id),
        escape(summary)
    );
    let mut tick = 1u64;
    loop {
        let ty = y(tick);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{ty:.1}\" y2=\"{ty:.1}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            ty + 4.0,
            short(tick)
        );
        if tick >= top_tick {
            break;
        }
        tick *= 10;
    }
    for (i, b) in bars.iter().enumerate() {
        let x = LEFT + i as f64 * bw;
        if b.count > 0 {
            let top = y(b.count).min(TOP + plot_h - 1.5);
            let _ = write!(
                s,
                "<rect class=\"{}\" data-count=\"{}\" x=\"{:.2}\" y=\"{top:.2}\" width=\"{:.2}\" \
                 height=\"{:.2}\"><title>{}</title></rect>",
                b.class,
                b.count,
                x + bw * 0.08,
                (bw * 0.84).max(0.5),
                TOP + plot_h - top,
                escape(&b.title)
            );
        }
        if let Some(label) = &b.label {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x + bw / 2.0,
                TOP + plot_h + 15.0,
                escape(label)
            );
        }
    }
    let _ = write!(
        s,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{:.1}\"/>\
         <text class=\"label\" x=\"12\" y=\"{:.1}\" transform=\"rotate(-90 12 {:.1})\" \
         text-anchor=\"middle\">{}</text>",
        WIDTH - RIGHT,
        TOP + plot_h,
        TOP + plot_h,
        TOP + plot_h,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        escape(y_label)
    );
    if let Some(m) = marker {
        let x = LEFT + m.at * bw;
        if let Some(title) = m.shade.as_ref().filter(|_| x > LEFT + 0.5) {
            let _ = write!(
                s,
                "<path class=\"unverified\" d=\"M{LEFT} {TOP}H{x:.1}V{:.1}H{LEFT}Z\"><title>{}\
                 </title></path>",
                TOP + plot_h,
                escape(title)
            );
        }
        let anchor = if m.at > bars.len() as f64 * 0.7 { "end" } else { "start" };
        let dx = if anchor == "end" { -5.0 } else { 5.0 };
        let _ = write!(
            s,
            "<line class=\"threshold\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{:.1}\"/>\
             <text class=\"threshold-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            TOP + plot_h,
            x + dx,
            TOP + 12.0,
            escape(&m.label)
        );
    }
    s.push_str("</svg>");
    s
}

/// 1, 10, 100, 1k, 10k, 100k, 1M, ...
fn short(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{}G", n / 1_000_000_000),
        n if n >= 1_000_000 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// Bins of width 0.01 over [0, 1), and one for exactly 1.
pub(crate) const SIMILARITY_BINS: usize = 101;

/// The bin of a similarity.
pub(crate) fn similarity_bin(s: f64) -> usize {
    if s.is_nan() || s <= 0.0 {
        return 0;
    }
    if s >= 1.0 {
        return SIMILARITY_BINS - 1;
    }
    ((s * 100.0 + 1e-9).floor() as usize).min(SIMILARITY_BINS - 2)
}

/// The histogram of the pairs' similarities from 0 to 1, with the threshold marked and the
/// region below it shaded (the run verified no pair there).
pub(crate) fn similarity_chart(bins: &[u64], threshold: f64, measure: &str) -> String {
    let total: u64 = bins.iter().sum();
    let lo = 0;
    let step = 10;
    let bars: Vec<Bar> = (lo..SIMILARITY_BINS)
        .map(|i| {
            let count = bins[i];
            let what = if count == 1 { "pair" } else { "pairs" };
            let (title, class) = if i == SIMILARITY_BINS - 1 {
                (format!("similarity 1: {} {what}", thousands(count)), "bar identical")
            } else {
                let (a, b) = (i as f64 / 100.0, (i + 1) as f64 / 100.0);
                (format!("similarity {a:.2} to {b:.2}: {} {what}", thousands(count)), "bar")
            };
            let label = (i % step == 0).then(|| {
                if i == SIMILARITY_BINS - 1 {
                    "1".to_string()
                } else {
                    format!("{:.2}", i as f64 / 100.0)
                }
            });
            Bar { count, label, title, class }
        })
        .collect();
    let marker = Marker {
        at: threshold * 100.0 - lo as f64,
        label: format!("threshold {}", trim_float(threshold)),
        shade: Some(format!(
            "below the threshold {}: pairs here were not verified (run with a lower --threshold \
             to see them)",
            trim_float(threshold)
        )),
    };
    let summary = format!(
        "Histogram of the {measure} similarity of {} pairs, threshold {}",
        thousands(total),
        trim_float(threshold)
    );
    bar_chart("similarity-svg", &summary, &bars, "pairs (log scale)", Some(marker))
}

/// The distribution of cluster sizes: 2, 3, 4, then doubling ranges (5-8, 9-16, ...).
pub(crate) fn size_chart(sizes: &BTreeMap<u64, u64>) -> String {
    let max = sizes.keys().next_back().copied().unwrap_or(2).max(2);
    let mut ranges: Vec<(u64, u64)> = vec![(2, 2), (3, 3), (4, 4)];
    let mut lo = 5u64;
    while lo <= max {
        let hi = (lo - 1) * 2;
        ranges.push((lo, hi));
        lo = hi + 1;
    }
    while ranges.len() > 3 && ranges.last().is_some_and(|&(lo, _)| lo > max) {
        ranges.pop();
    }
    let bars: Vec<Bar> = ranges
        .iter()
        .map(|&(lo, hi)| {
            let count: u64 = sizes.range(lo..=hi).map(|(_, &c)| c).sum();
            let label = if lo == hi {
                lo.to_string()
            } else {
                format!("{}–{}", short_size(lo), short_size(hi))
            };
            let what = if count == 1 { "cluster" } else { "clusters" };
            let title = if lo == hi {
                format!("{} {what} of {lo} documents", thousands(count))
            } else {
                format!("{} {what} of {lo} to {hi} documents", thousands(count))
            };
            Bar { count, label: Some(label), title, class: "bar" }
        })
        .collect();
    let total: u64 = sizes.values().sum();
    let summary = format!("Histogram of the sizes of {} clusters", thousands(total));
    bar_chart("size-svg", &summary, &bars, "clusters (log scale)", None)
}

fn short_size(n: u64) -> String {
    if n >= 10_000 {
        short(n)
    } else {
        n.to_string()
    }
}

/// A float without trailing zeros: 0.8, 0.85, 1.
pub(crate) fn trim_float(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_put_one_apart_and_thresholds_on_their_left_edge() {
        assert_eq!(similarity_bin(1.0), 100);
        assert_eq!(similarity_bin(0.999_999), 99);
        assert_eq!(similarity_bin(0.8), 80);
        assert_eq!(similarity_bin(0.799_999_999_999_999_9), 80);
        assert_eq!(similarity_bin(0.0), 0);
        assert_eq!(similarity_bin(f64::NAN), 0);
    }

    #[test]
    fn the_similarity_chart_has_a_bar_per_used_bin_and_the_threshold() {
        let mut bins = vec![0u64; SIMILARITY_BINS];
        bins[82] = 3;
        bins[95] = 1200;
        bins[100] = 40;
        let svg = similarity_chart(&bins, 0.8, "Jaccard");
        assert_eq!(svg.matches("<rect").count(), 3);
        assert!(svg.contains("data-count=\"1200\""));
        assert!(svg.contains("class=\"threshold\""));
        assert!(svg.contains("threshold 0.8"));
        assert!(svg.contains("similarity 0.95 to 0.96: 1,200 pairs"));
        assert!(svg.contains("similarity 1: 40 pairs"));
        // From 0 to 1, the region below the threshold shaded.
        assert!(svg.contains(">0.00</text>") && svg.contains(">0.50</text>"));
        assert!(svg.contains("class=\"unverified\"") && svg.contains("were not verified"));
    }

    #[test]
    fn the_size_chart_buckets_by_doubling_ranges() {
        let sizes: BTreeMap<u64, u64> = [(2, 10), (3, 4), (7, 2), (8, 1), (40, 1)].into();
        let svg = size_chart(&sizes);
        assert!(svg.contains("3 clusters of 5 to 8 documents"));
        assert!(svg.contains("1 cluster of 33 to 64 documents"));
        assert!(!svg.contains("65–128"));
    }

    #[test]
    fn trim_float_drops_trailing_zeros() {
        assert_eq!(trim_float(0.8), "0.8");
        assert_eq!(trim_float(1.0), "1");
        assert_eq!(trim_float(0.85), "0.85");
    }
}
