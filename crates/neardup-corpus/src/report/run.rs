//! The report of a dedup run as it runs (`neardup dedup --report`): the clusters chosen, their
//! members' similarities to the kept document from the sketches in memory, and the shown texts
//! from a further read of the input (checked against the first read's digests).

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use neardup::{Dedup, DedupOutcome, Verification};
use neardup_web::report::ReportLimits;

use super::{input_title, measure_name, read_again, sample_key, Chosen, ShownText};
use crate::dedup::{Ids, Sketched};
use crate::read::{ReadOptions, Source};
use crate::CorpusError;

/// What a run measured, for its report.
#[derive(Debug)]
pub struct RunFigures<'a> {
    /// The run's summary.
    pub summary: &'a neardup::Summary,
    /// When the run started.
    pub started: Instant,
    /// Reading and sketching.
    pub read_time: Duration,
    /// Search and verification.
    pub search_time: Duration,
    /// Writing the outputs.
    pub write_time: Duration,
}

/// The report of this run: the clusters chosen, their members' similarities to the kept
/// document from the sketches in memory, and the shown texts from a further read of the input
/// (checked against the first read's digests).
#[allow(clippy::too_many_arguments)]
pub fn run_report(
    inputs: &[PathBuf],
    limits: ReportLimits,
    dedup: &Dedup<'_>,
    outcome: &DedupOutcome,
    ids: &Ids,
    sources: &[Source],
    read: &Sketched,
    input: &ReadOptions,
    figures: &RunFigures<'_>,
) -> Result<String, CorpusError> {
    let seen = outcome.seen() as usize;
    let config = dedup.config();
    let mut page = neardup_web::report::Report::new(&input_title(inputs), limits);
    page.threshold = config.threshold;
    page.measure = measure_name(dedup.verification()).to_string();
    let mut pairs = 0u64;
    for (similarity, n) in outcome.pair_weights() {
        page.add_pair(similarity, n);
        pairs += n;
    }
    for c in &outcome.clusters {
        page.add_cluster_size(c.members.len() as u64);
    }
    // The table is the run's own counts only for a run by similarity without --against.
    let by_similarity = seen == 0 && dedup.verification() != Verification::Hamming;
    let thresholds = if by_similarity {
        neardup_web::report::table_thresholds(config.threshold)
    } else {
        Vec::new()
    };
    page.thresholds = outcome
        .at_thresholds(&thresholds)
        .into_iter()
        .map(|a| neardup_web::report::ThresholdRow {
            threshold: a.threshold,
            pairs: a.pairs,
            clusters: a.clusters,
            dropped: a.dropped,
        })
        .collect();
    let sizes: Vec<u64> = outcome.clusters.iter().map(|c| c.members.len() as u64).collect();
    let keys: Vec<u64> =
        outcome.clusters.iter().map(|c| sample_key(ids.get(c.keep as usize))).collect();
    let mut chosen: Vec<Chosen<u32>> = Vec::new();
    for (i, sampled) in neardup_web::report::select_clusters(&sizes, &keys, limits) {
        let c = &outcome.clusters[i];
        let mut others: Vec<(u32, f64)> = Vec::with_capacity(c.members.len());
        for &m in c.members.iter().filter(|&&m| m != c.keep) {
            let s = dedup.similarity_at(c.keep, m).map_err(CorpusError::Dedup)?;
            others.push((m, s));
        }
        let (others, hidden) = neardup_web::report::choose_members(others, limits);
        chosen.push(Chosen {
            number: i as u64,
            size: sizes[i],
            weakest: (c.similarity * 1e6).round() / 1e6, // as --clusters writes it
            sampled,
            keep: c.keep,
            others,
            hidden,
        });
    }
    let wanted: HashSet<u32> = chosen
        .iter()
        .flat_map(|c| std::iter::once(c.keep).chain(c.others.iter().map(|o| o.0)))
        .filter(|&p| p as usize >= seen)
        .collect();
    let mut texts = std::collections::HashMap::new();
    let mut next = 0usize;
    if !wanted.is_empty() {
        read_again(sources, input, Some(&read.digests), |source, record| {
            // Records arrive in input order; the first pass placed each accepted one.
            if let Some(place) = read.places.get(next) {
                if place.source == source && place.line == record.line {
                    let position = (seen + next) as u32;
                    if wanted.contains(&position) {
                        texts.insert(position, ShownText::of(&record, limits.text_chars));
                    }
                    next += 1;
                }
            }
        })?;
    }
    page.clusters = chosen
        .iter()
        .map(|c| {
            c.view(
                |k| ids.get(k as usize).to_string(),
                &texts,
                "(a document of the --against index: its text is not in this run's input)",
            )
        })
        .collect();
    let n = |x: u64| neardup_web::thousands(x);
    let summary = figures.summary;
    page.subtitle = format!(
        "neardup dedup {} · threshold {} · keep {}",
        env!("CARGO_PKG_VERSION"),
        config.threshold,
        config.keep
    );
    let mut rows = vec![
        (
            "documents".to_string(),
            format!(
                "{} ({:.1} MB, {} empty)",
                n(summary.documents),
                summary.bytes.unwrap_or(0) as f64 / 1e6,
                n(summary.empty)
            ),
        ),
        ("clusters".into(), n(summary.clusters)),
        ("dropped".into(), n(summary.dropped)),
        ("kept".into(), n(summary.kept)),
        (
            "removed".into(),
            format!(
                "{} of text, {:.1}% of the bytes",
                neardup::bytes_text(summary.bytes_dropped),
                100.0 * summary.bytes_dropped as f64 / summary.bytes.unwrap_or(0).max(1) as f64
            ),
        ),
        ("method".into(), summary.method_line()),
        (
            "verified by".into(),
            format!(
                "{}: {} candidate pairs, {} verified between distinct texts, {} exact copies",
                summary.verification.name(),
                n(summary.candidates),
                n(summary.verified),
                n(summary.exact_duplicates)
            ),
        ),
        ("pairs at or above the threshold".into(), format!("{} (copies included)", n(pairs))),
        ("pipeline".into(), dedup.pipeline().id().to_string()),
    ];
    if summary.kept_by_decision > 0 {
        rows.push(("kept by review decisions".into(), n(summary.kept_by_decision)));
    }
    if summary.against > 0 {
        rows.push(("against an index of".into(), format!("{} documents", n(summary.against))));
    }
    if summary.capped_buckets > 0 {
        rows.push(("large buckets paired as stars".into(), n(summary.capped_buckets)));
    }
    if summary.skipped > 0 {
        rows.push(("skipped (bad records)".into(), n(summary.skipped)));
    }
    if summary.replaced > 0 {
        rows.push(("invalid UTF-8 replaced".into(), n(summary.replaced)));
    }
    rows.push((
        "time".into(),
        format!(
            "{:.2} s (read and sketch {:.2} s, search and verify {:.2} s, write {:.2} s), then this report",
            figures.started.elapsed().as_secs_f64(),
            figures.read_time.as_secs_f64(),
            figures.search_time.as_secs_f64(),
            figures.write_time.as_secs_f64()
        ),
    ));
    rows.push(("peak memory".into(), crate::peak_memory().unwrap_or_else(|| "unknown".into())));
    page.summary = rows;
    Ok(page.render())
}
