//! The HTML report of a dedup run, as `neardup dedup --report` writes it while deduplicating
//! ([`run_report`]) and as `neardup report` builds it from a run's outputs and its input
//! ([`ReportJob`]).
//!
//! Both share the choices: the same clusters (the largest, then a sample keyed by a hash of the
//! kept document's id, so both draw the same sample), the same members (the kept one, then the
//! least similar to it, by the run's measure), the same cut texts. The page itself is rendered
//! by `neardup-web`.

mod outputs;
mod run;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;

use neardup::Verification;
use neardup_web::report::{cut_text, ClusterView, MemberView};

pub use outputs::{ReportJob, ReportOutcome};
pub use run::{run_report, RunFigures};

use crate::read::{read_source, ReadOptions, Record, Source, SourceDigest};
use crate::CorpusError;

/// The key that draws the sample: a hash of the kept document's id as written.
pub fn sample_key(keep_id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(keep_id.as_bytes(), 0x006e_6561_7264_7570)
}

/// An id for display: a JSON string id without its quotes and escapes, anything else as written.
pub fn display_id(id: &str) -> String {
    if id.starts_with('"') {
        if let Ok(s) = serde_json::from_str::<String>(id) {
            return s;
        }
    }
    id.to_string()
}

/// A measure named for people.
pub fn measure_name(v: Verification) -> &'static str {
    match v {
        Verification::Jaccard => "Jaccard",
        Verification::Cosine => "cosine",
        Verification::Hamming => "SimHash (1 - Hamming distance / bits)",
        Verification::Estimate => "estimated",
    }
}

/// A document's text as the report shows it: cut, with its full length.
#[derive(Debug, Clone)]
pub struct ShownText {
    /// The text shown.
    pub text: String,
    /// The whole text's length in code points.
    pub chars: u64,
    /// True when `text` is cut.
    pub cut: bool,
}

impl ShownText {
    /// The text of `record`, cut to `max_chars`.
    pub fn of(record: &Record, max_chars: usize) -> ShownText {
        let (text, chars, cut) = cut_text(&record.body.as_document().display_text(), max_chars);
        ShownText { text, chars, cut }
    }

    fn missing(what: &str) -> ShownText {
        ShownText { text: what.to_string(), chars: 0, cut: false }
    }
}

/// A cluster chosen for the page, before its texts are read: members by key (a position or
/// an id), the kept one first.
#[derive(Debug, Clone)]
pub struct Chosen<K> {
    /// The cluster's number in the run (0-based).
    pub number: u64,
    /// Its members.
    pub size: u64,
    /// Its weakest similarity to the kept document.
    pub weakest: f64,
    /// Drawn by the sample (not among the largest).
    pub sampled: bool,
    /// The kept document.
    pub keep: K,
    /// The others shown, least similar to the kept one first.
    pub others: Vec<(K, f64)>,
    /// Members not shown.
    pub hidden: u64,
}

impl<K: Copy + Eq + std::hash::Hash> Chosen<K> {
    /// The cluster as the page shows it, with the texts read.
    pub fn view(
        &self,
        ids: impl Fn(K) -> String,
        texts: &HashMap<K, ShownText>,
        missing: &str,
    ) -> ClusterView {
        let member = |k: K, similarity: Option<f64>| {
            let t = texts.get(&k).cloned().unwrap_or_else(|| ShownText::missing(missing));
            MemberView {
                id: display_id(&ids(k)),
                kept: similarity.is_none(),
                similarity,
                chars: t.chars,
                text: t.text,
                cut: t.cut,
            }
        };
        let mut members = vec![member(self.keep, None)];
        members.extend(self.others.iter().map(|&(k, s)| member(k, Some(s))));
        ClusterView {
            number: self.number,
            size: self.size,
            weakest: self.weakest,
            sampled: self.sampled,
            hidden: self.hidden,
            members,
        }
    }
}

/// Reads every source again, calls `each` with each record (and its source's index), and
/// checks each source's bytes against `expected` (the digests of an earlier pass), if given.
/// Bad records are passed over when `--skip-bad` allowed them the first time.
pub fn read_again(
    sources: &[Source],
    input: &ReadOptions,
    expected: Option<&[Option<SourceDigest>]>,
    mut each: impl FnMut(u32, Record),
) -> Result<Vec<SourceDigest>, CorpusError> {
    let mut digests = Vec::with_capacity(sources.len());
    for (i, source) in sources.iter().enumerate() {
        let mut fatal = None;
        let (_, digest) = read_source(source, input, &mut |item| match item {
            Ok(record) => {
                each(i as u32, record);
                ControlFlow::Continue(())
            }
            Err(e) if input.skip_bad && e.skippable() => ControlFlow::Continue(()),
            Err(e) => {
                fatal = Some(e);
                ControlFlow::Break(())
            }
        });
        if let Some(e) = fatal {
            return Err(CorpusError::Runtime(format!("{e}\n(no report was written)")));
        }
        if let Some(expected) = expected {
            if expected.get(i).copied().flatten() != Some(digest) {
                return Err(CorpusError::Runtime(format!(
                    "{}: the input changed between two reads (its bytes differ); no report was \
                     written",
                    source.name()
                )));
            }
        }
        digests.push(digest);
    }
    Ok(digests)
}

/// The inputs, named for a title.
pub fn input_title(inputs: &[PathBuf]) -> String {
    let names: Vec<String> =
        inputs
            .iter()
            .map(|p| {
                if p.as_os_str() == "-" {
                    "standard input".into()
                } else {
                    p.display().to_string()
                }
            })
            .collect();
    match names.len() {
        0..=3 => names.join(", "),
        n => format!("{}, {} and {} more", names[0], names[1], n - 2),
    }
}
