//! A reviewer's decisions from the dedup report: documents marked "not a duplicate", which
//! `neardup dedup --decisions FILE` keeps whatever the keep rule says.
//!
//! The file is JSON Lines, one decision per line, as the report exports it:
//!
//! ```text
//! {"id": "doc-17", "decision": "not_duplicate", "cluster": 3}
//! ```
//!
//! `id` is the document's id (a string or a number; `"7"` and `7` are one id, as everywhere);
//! `decision` is `not_duplicate` (the only one so far); other fields (the cluster, who and
//! when) are kept for people and ignored here.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use serde_json::value::RawValue;

use crate::read::{InputError, InputErrorKind};
use crate::CorpusError;

/// The ids a reviewer marked "not a duplicate".
#[derive(Debug, Default, Clone)]
pub struct Decisions {
    not_duplicate: HashSet<String>,
}

#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    decision: Option<String>,
}

impl Decisions {
    /// Reads a decisions file; a line that is not a decision is an error naming it.
    pub fn read(path: &Path) -> Result<Decisions, CorpusError> {
        let text = fs::read_to_string(path).map_err(|e| {
            CorpusError::Usage(format!(
                "--decisions {}: {}",
                path.display(),
                crate::read::io_message(&e)
            ))
        })?;
        let mut out = Decisions::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |message: String| {
                CorpusError::Input(InputError {
                    place: format!("{}:{}", path.display(), i + 1),
                    message,
                    kind: InputErrorKind::Record,
                })
            };
            let d: Line<'_> =
                serde_json::from_str(line).map_err(|e| bad(format!("not a decision: {e}")))?;
            let id = d.id.ok_or_else(|| bad("no \"id\"".to_string()))?;
            let id = neardup::id_from_json(id.get()).map_err(|e| bad(format!("\"id\": {e}")))?;
            match d.decision.as_deref() {
                Some("not_duplicate") => {
                    out.not_duplicate.insert(id.into_owned());
                }
                Some(other) => {
                    return Err(bad(format!(
                        "\"decision\" is {other:?}; the decision known is \"not_duplicate\""
                    )))
                }
                None => return Err(bad("no \"decision\"".to_string())),
            }
        }
        Ok(out)
    }

    /// True when the document of this id (as [`neardup::id_from_json`] gives it) was marked
    /// "not a duplicate".
    pub fn not_duplicate(&self, id: &str) -> bool {
        self.not_duplicate.contains(id)
    }

    /// The marked ids not in `found` (the ids a run matched), sorted.
    pub fn unmatched(&self, found: &HashSet<String>) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .not_duplicate
            .iter()
            .filter(|id| !found.contains(*id))
            .map(String::as_str)
            .collect();
        out.sort_unstable();
        out
    }

    /// How many ids were marked.
    pub fn len(&self) -> usize {
        self.not_duplicate.len()
    }

    /// True when nothing was marked.
    pub fn is_empty(&self) -> bool {
        self.not_duplicate.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_read_by_id_and_bad_lines_named() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.jsonl");
        fs::write(
            &path,
            "{\"id\": \"a\", \"decision\": \"not_duplicate\", \"cluster\": 3}\n\n\
             {\"id\": 7, \"decision\": \"not_duplicate\"}\n",
        )
        .expect("write");
        let d = Decisions::read(&path).expect("read");
        assert!(d.not_duplicate("a") && d.not_duplicate("7") && !d.not_duplicate("b"));
        assert_eq!(d.len(), 2);
        for (line, says) in [
            ("{\"id\": \"a\", \"decision\": \"maybe\"}", "the decision known"),
            ("{\"decision\": \"not_duplicate\"}", "no \"id\""),
            ("not json", "not a decision"),
        ] {
            fs::write(&path, format!("{{\"id\": 1, \"decision\": \"not_duplicate\"}}\n{line}\n"))
                .expect("write");
            let e = Decisions::read(&path).expect_err(line).to_string();
            assert!(e.contains("d.jsonl:2") && e.contains(says), "{e}");
        }
    }
}
