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

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use crate::read::{InputError, InputErrorKind};
use crate::CorpusError;

/// The ids a reviewer marked "not a duplicate".
#[derive(Debug, Default, Clone)]
pub struct Decisions {
    not_duplicate: HashSet<String>,
}

/// What one line must be, for messages.
const EXPECTED: &str = "a JSON object {\"id\": ID, \"decision\": \"not_duplicate\"}";

impl Decisions {
    /// Reads a decisions file (a UTF-8 byte order mark at its start is allowed); a line that is
    /// not a decision is an error naming it and the shape expected.
    pub fn read(path: &Path) -> Result<Decisions, CorpusError> {
        let text = fs::read_to_string(path).map_err(|e| {
            CorpusError::Usage(format!(
                "--decisions {}: {}",
                path.display(),
                crate::read::io_message(&e)
            ))
        })?;
        // Editors on Windows save UTF-8 with a mark; JSON itself has none.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
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
            let id = decision(line).map_err(bad)?;
            out.not_duplicate.insert(id);
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

/// The id of one line's "not a duplicate" decision, or what is wrong with the line. Fields are
/// read by name only: an array (`["a", "not_duplicate"]`) is refused, not read by position.
fn decision(line: &str) -> Result<String, String> {
    let kind = |raw: &str| match raw.trim_start().as_bytes().first() {
        Some(b'[') => "an array",
        Some(b'{') => "an object",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    };
    if !line.trim_start().starts_with('{') {
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(line) {
            Ok(_) => format!("expected {EXPECTED}, found {}", kind(line)),
            Err(e) => format!("not JSON ({}); expected {EXPECTED}", json_error(&e)),
        });
    }
    let fields: BTreeMap<String, &RawValue> = serde_json::from_str(line)
        .map_err(|e| format!("not JSON ({}); expected {EXPECTED}", json_error(&e)))?;
    let id = fields.get("id").ok_or_else(|| format!("no \"id\"; expected {EXPECTED}"))?;
    let id = neardup::id_from_json(id.get()).map_err(|e| format!("\"id\": {e}"))?;
    let decision =
        fields.get("decision").ok_or_else(|| format!("no \"decision\"; expected {EXPECTED}"))?;
    match serde_json::from_str::<String>(decision.get()).as_deref() {
        Ok("not_duplicate") => Ok(id.into_owned()),
        Ok(other) => {
            Err(format!("\"decision\" is {other:?}; the decision known is \"not_duplicate\""))
        }
        Err(_) => Err(format!(
            "\"decision\" must be a string (\"not_duplicate\"), found {}",
            kind(decision.get())
        )),
    }
}

/// A JSON error's message with its column, without serde's "at line 1" (a line is one line).
fn json_error(e: &serde_json::Error) -> String {
    let message = e.to_string();
    let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
    format!("{message} at column {}", e.column())
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
            ("not json", "not JSON"),
        ] {
            fs::write(&path, format!("{{\"id\": 1, \"decision\": \"not_duplicate\"}}\n{line}\n"))
                .expect("write");
            let e = Decisions::read(&path).expect_err(line).to_string();
            assert!(e.contains("d.jsonl:2") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_decisions_file_with_a_byte_order_mark_was_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.jsonl");
        fs::write(&path, "\u{feff}{\"id\": \"a\", \"decision\": \"not_duplicate\"}\n")
            .expect("write");
        let d = Decisions::read(&path).expect("a mark at the start is allowed");
        assert!(d.not_duplicate("a"));
    }

    #[test]
    fn positional_decisions_were_accepted_and_errors_named_a_rust_struct() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.jsonl");
        for (line, says) in [
            ("[\"a\", \"not_duplicate\"]", "expected a JSON object {\"id\": ID, \"decision\": \"not_duplicate\"}, found an array"),
            ("7", "found a number"),
            ("{\"id\": \"a\", \"decision\": 3}", "\"decision\" must be a string (\"not_duplicate\"), found a number"),
            ("{\"id\": [1], \"decision\": \"not_duplicate\"}", "\"id\":"),
            ("{\"id\": \"a\", \"decision\": \"not_duplicate\"", "at column"),
        ] {
            fs::write(&path, format!("{line}\n")).expect("write");
            let e = Decisions::read(&path).expect_err(line).to_string();
            assert!(e.contains("d.jsonl:1") && e.contains(says), "{line}: {e}");
            assert!(!e.contains("struct") && !e.contains("Line"), "{line}: {e}");
        }
    }
}
