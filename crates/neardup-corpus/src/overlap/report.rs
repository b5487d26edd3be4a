//! The HTML report of the passage job (`--report`): each query with its passages and the text
//! of each source they were copied from, drawn by `neardup_web::overlap`.

use std::borrow::Cow;
use std::collections::hash_map::{Entry, HashMap};
use std::path::PathBuf;

use neardup::overlap::{Overlap, OverlapError, OverlapSpec, Passage, PassageIndex, SavedIndex};
use neardup_web::overlap::{OverlapReport, PassageView, QueryView, SourceView};
use neardup_web::thousands;

/// What a report reads of the collection: a loaded index, or a saved one read in place (only
/// the sources the passages name are read).
pub(super) trait Collection {
    /// Its documents.
    fn documents(&self) -> usize;
    /// The settings of the check.
    fn settings(&self) -> &OverlapSpec;
    /// Document `n`'s id as text.
    fn name(&self, n: u32) -> Cow<'_, str>;
    /// Document `n`'s text; a saved one is read, and checked, from its file.
    fn source_text(&self, n: u32) -> Result<Cow<'_, str>, OverlapError>;
}

impl Collection for PassageIndex {
    fn documents(&self) -> usize {
        self.len()
    }
    fn settings(&self) -> &OverlapSpec {
        self.spec()
    }
    fn name(&self, n: u32) -> Cow<'_, str> {
        Cow::Borrowed(self.id(n))
    }
    fn source_text(&self, n: u32) -> Result<Cow<'_, str>, OverlapError> {
        Ok(Cow::Borrowed(self.text(n)))
    }
}

impl Collection for SavedIndex {
    fn documents(&self) -> usize {
        self.len()
    }
    fn settings(&self) -> &OverlapSpec {
        self.spec()
    }
    fn name(&self, n: u32) -> Cow<'_, str> {
        self.id(n)
    }
    fn source_text(&self, n: u32) -> Result<Cow<'_, str>, OverlapError> {
        self.text(n).map(Cow::Owned)
    }
}

/// Paths for a title: the file names, or how many.
fn describe_paths(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().map_or(p.display().to_string(), |n| n.to_string_lossy().into()))
        .collect();
    match names.len() {
        0 => "standard input".into(),
        1..=3 => names.join(", "),
        n => format!("{}, … ({n} inputs)", names[..2].join(", ")),
    }
}

/// The report of a run: `queries` (ids as text, each with its text and answer) checked against
/// `index` (built from `against`, or, when it is empty, from the inputs themselves).
pub(super) fn report(
    inputs: &[PathBuf],
    against: &[PathBuf],
    index: &dyn Collection,
    queries: &[(&str, &str, &Overlap)],
) -> Result<OverlapReport, OverlapError> {
    let title = format!(
        "{} {}",
        describe_paths(inputs),
        if against.is_empty() {
            "against each other".to_string()
        } else {
            format!("against {}", describe_paths(against))
        }
    );
    let mut report = OverlapReport::new(&title);
    let spec = index.settings();
    let mean = queries.iter().map(|q| q.2.copied()).sum::<f64>() / queries.len().max(1) as f64;
    report.summary = vec![
        ("queries".into(), thousands(queries.len() as u64)),
        ("documents in the collection".into(), thousands(index.documents() as u64)),
        ("copied on average".into(), format!("{:.1}%", mean * 100.0)),
        (
            "settings".into(),
            format!(
                "min units {}, max gap {}, min similarity {}, quotations {}",
                spec.min_units,
                spec.max_gap,
                spec.min_similarity,
                if spec.exclude_quotes { "left out" } else { "counted" }
            ),
        ),
    ];
    report.queries = queries
        .iter()
        .map(|(id, text, o)| query_view(id, text, o, index))
        .collect::<Result<_, _>>()?;
    Ok(report)
}

/// One query of the report, with the source's text of each passage (each source read once);
/// ids as text (a number as written).
fn query_view(
    id: &str,
    text: &str,
    o: &Overlap,
    index: &dyn Collection,
) -> Result<QueryView, OverlapError> {
    let mut sources: HashMap<u32, Cow<'_, str>> = HashMap::new();
    for p in o.passages.iter().chain(&o.excluded) {
        if let Entry::Vacant(e) = sources.entry(p.source) {
            e.insert(index.source_text(p.source)?);
        }
    }
    let passage = |p: &Passage| {
        let (from, to) = (p.source_start_byte as usize, p.source_end_byte as usize);
        PassageView {
            start: p.start,
            end: p.end,
            source: index.name(p.source).into_owned(),
            source_start: p.source_start,
            source_end: p.source_end,
            similarity: p.similarity,
            also: p.also.iter().map(|&a| index.name(a).into_owned()).collect(),
            source_text: sources[&p.source].get(from..to).unwrap_or_default().to_string(),
            exclusion: p.exclusion.map(|e| e.as_str().to_string()),
        }
    };
    Ok(QueryView {
        id: id.to_string(),
        text: text.to_string(),
        chars: o.chars,
        copied_chars: o.copied_chars,
        excluded_chars: o.excluded_chars,
        sources: o
            .sources
            .iter()
            .map(|s| SourceView {
                id: index.name(s.source).into_owned(),
                chars: s.chars,
                quoted_chars: s.quoted_chars,
                passages: o.passages.iter().filter(|p| p.source == s.source).count() as u64,
            })
            .collect(),
        passages: o.passages.iter().map(passage).collect(),
        excluded: o.excluded.iter().map(passage).collect(),
    })
}
