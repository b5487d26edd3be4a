//! The passage check's answers as records: one shape, with the same keys, for every surface
//! (`neardup overlap --passages` and `--summary`, Python's dicts and Arrow tables, the service's
//! JSON), and the ids they name.
//!
//! Ids follow the one id rule ([`crate::id_from_json`]): a passage index holds each document
//! under its id as text, so `7` and `"7"` name one document, and an output writes an id as its
//! document was written (a number stays a number, as `neardup dedup` keeps records as written).

use std::path::Path;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{Exclusion, Overlap, OverlapError, Passage, PassageIndex};
use crate::{id_from_json, id_to_json, IdError, IndexLock};

/// An id as an output writes it: a JSON string, or a number as written.
pub type JsonId = Box<RawValue>;

/// One passage of a query: what `neardup overlap --passages` writes per line, and what Python
/// and the service give, key for key. Counted passages and those left out of the copied share
/// (quotations, the reference list: `quotation` true, `exclusion` says which) alike.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PassageRecord {
    /// The query's id (null for a query given without one).
    pub query: Option<JsonId>,
    /// First code point in the query (a Python string index).
    pub start: u64,
    /// End (exclusive) in the query.
    pub end: u64,
    /// The source's id.
    pub source: JsonId,
    /// First code point in the source.
    pub source_start: u64,
    /// End (exclusive) in the source.
    pub source_end: u64,
    /// The units aligned one to one with its source over the longer of the passage and the
    /// source's stretches (1 for a verbatim copy).
    pub similarity: f64,
    /// The k-grams it matches exactly, each counted `1 / df` ([`Passage::evidence`]).
    pub evidence: f64,
    /// First byte in the query (UTF-8).
    pub start_byte: u64,
    /// End byte (exclusive) in the query.
    pub end_byte: u64,
    /// First byte in the source.
    pub source_start_byte: u64,
    /// End byte (exclusive) in the source.
    pub source_end_byte: u64,
    /// Other documents that hold the same text (empty when none).
    pub also: Vec<JsonId>,
    /// True for a passage inside a quotation or the reference list: cited, so left out of the
    /// copied share, and still reported with its source.
    pub quotation: bool,
    /// Why it is left out (`quote`, `references`), or null for a counted passage.
    pub exclusion: Option<Exclusion>,
}

impl PassageRecord {
    /// The record of passage `p` of query `query`; `id` names a document of the index.
    pub fn new(query: Option<&RawValue>, p: &Passage, id: &dyn Fn(u32) -> JsonId) -> Self {
        PassageRecord {
            query: query.map(ToOwned::to_owned),
            start: p.start,
            end: p.end,
            source: id(p.source),
            source_start: p.source_start,
            source_end: p.source_end,
            similarity: p.similarity,
            evidence: p.evidence,
            start_byte: p.start_byte,
            end_byte: p.end_byte,
            source_start_byte: p.source_start_byte,
            source_end_byte: p.source_end_byte,
            also: p.also.iter().map(|&a| id(a)).collect(),
            quotation: p.exclusion.is_some(),
            exclusion: p.exclusion,
        }
    }
}

/// How much of a query one source holds, as the summary gives it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceRecord {
    /// The source's id.
    pub id: JsonId,
    /// Code points of the query inside counted passages of this source.
    pub chars: u64,
    /// `chars` as a share of the query (four decimals).
    pub copied: f64,
    /// Code points inside quotations (and the reference list) that this source holds and no
    /// counted passage covers.
    pub quoted_chars: u64,
}

/// The summary of one query: what `neardup overlap --summary` writes per line, and the
/// top-level keys of Python's and the service's answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryRecord {
    /// The query's id (null for a query given without one).
    pub query: Option<JsonId>,
    /// Code points of the query.
    pub chars: u64,
    /// Code points inside some counted passage, each counted once.
    pub copied_chars: u64,
    /// The copied share: `copied_chars / chars` (four decimals), quotations left out.
    pub copied: f64,
    /// The copied share counting quotations and the reference list too.
    pub copied_with_quotations: f64,
    /// Code points inside some quotation or reference list passage and no counted one.
    pub excluded_chars: u64,
    /// The sources, most copied first.
    pub sources: Vec<SourceRecord>,
}

impl Overlap {
    /// Every passage, counted and left out alike, in query order (by start, then end).
    pub fn all_passages(&self) -> Vec<&Passage> {
        let mut all: Vec<&Passage> = self.passages.iter().chain(&self.excluded).collect();
        all.sort_by_key(|p| (p.start, p.end));
        all
    }

    /// The summary record of this answer; `id` names a document of the index.
    pub fn summary_record(
        &self,
        query: Option<&RawValue>,
        id: &dyn Fn(u32) -> JsonId,
    ) -> SummaryRecord {
        SummaryRecord {
            query: query.map(ToOwned::to_owned),
            chars: self.chars,
            copied_chars: self.copied_chars,
            copied: self.share(self.copied_chars),
            copied_with_quotations: self.share(self.copied_chars + self.excluded_chars),
            excluded_chars: self.excluded_chars,
            sources: self
                .sources
                .iter()
                .map(|s| SourceRecord {
                    id: id(s.source),
                    chars: s.chars,
                    copied: self.share(s.chars),
                    quoted_chars: s.quoted_chars,
                })
                .collect(),
        }
    }
}

/// A JSON text as an id value (`"a"`, `7`).
fn raw(json: String) -> JsonId {
    RawValue::from_string(json).expect("an id's JSON text is valid JSON")
}

/// The ids of a passage index as its documents were written. The index holds every document
/// under its id as text (the one id rule); this keeps how each number was written, so that an
/// output writes `7` for a document read with the id `7` and `"7"` for one read with `"7"` (the
/// first form read wins when both name it).
#[derive(Debug, Default, Clone)]
pub struct WrittenIds {
    /// Ids written as numbers, by their text: only these differ from [`id_to_json`].
    numbers: FxHashMap<String, String>,
}

impl WrittenIds {
    /// The id that the JSON value `json` (`"7"`, `7`) stands for, noting how it was written.
    pub fn read(&mut self, json: &str) -> Result<String, IdError> {
        let id = id_from_json(json)?.into_owned();
        if !json.trim_start().starts_with('"') && !self.numbers.contains_key(&id) {
            self.numbers.insert(id.clone(), id.clone());
        }
        Ok(id)
    }

    /// The id `id` as an output writes it: a number as written, else a JSON string.
    pub fn json(&self, id: &str) -> JsonId {
        raw(self.text(id))
    }

    fn text(&self, id: &str) -> String {
        match self.numbers.get(id) {
            Some(n) => n.clone(),
            None => id_to_json(id),
        }
    }

    /// Loads the passage index saved in `dir` (see [`PassageIndex::load`]), whose ids are JSON
    /// text, holding each document under its id as text.
    pub fn load(
        &mut self,
        dir: &Path,
        options: &super::OverlapOptions,
    ) -> Result<PassageIndex, OverlapError> {
        let mut index = PassageIndex::load(dir, options)?;
        let mut bad = None;
        let mut plain: FxHashMap<String, String> = FxHashMap::default();
        for n in index.documents() {
            let json = index.id(n);
            match self.read(json) {
                Ok(id) => {
                    plain.insert(json.to_string(), id);
                }
                Err(e) => bad = Some(format!("a document's id {json}: {e}")),
            }
        }
        if let Some(message) = bad {
            return Err(OverlapError::Format { path: dir.to_path_buf(), message });
        }
        index.rename_ids(|json| plain.get(json).cloned().unwrap_or_else(|| json.to_string()))?;
        Ok(index)
    }

    /// Saves `index` (see [`PassageIndex::save`]) with every id written as JSON text, as
    /// [`WrittenIds::load`] reads it back (and Python's `Index.load`).
    pub fn save(&self, index: &PassageIndex, lock: &IndexLock) -> Result<(), OverlapError> {
        index.save_with_ids(lock, |id| self.text(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_text_and_a_number_is_written_as_read() {
        let mut ids = WrittenIds::default();
        assert_eq!(ids.read("7").expect("an id"), "7");
        assert_eq!(ids.read("\"7\"").expect("an id"), "7");
        assert_eq!(ids.read("\"a\"").expect("an id"), "a");
        assert_eq!(ids.json("7").get(), "7");
        assert_eq!(ids.json("a").get(), "\"a\"");
        assert_eq!(ids.json("never read").get(), "\"never read\"");
        assert!(ids.read("{}").is_err());
        let mut strings_first = WrittenIds::default();
        strings_first.read("\"7\"").expect("an id");
        strings_first.read("7").expect("an id");
        assert_eq!(strings_first.json("7").get(), "7", "a number read later still writes as one");
    }

    #[test]
    fn a_passage_record_has_every_key_and_says_whether_it_is_a_quotation() {
        let p = Passage {
            source: 0,
            also: vec![],
            start: 1,
            end: 5,
            start_byte: 1,
            end_byte: 5,
            source_start: 0,
            source_end: 4,
            source_start_byte: 0,
            source_end_byte: 4,
            similarity: 1.0,
            evidence: 2.0,
            exclusion: Some(Exclusion::Quote),
        };
        let ids = WrittenIds::default();
        let name = |_n: u32| ids.json("src");
        let r = PassageRecord::new(None, &p, &name);
        let v = serde_json::to_value(&r).expect("serializes");
        let keys: Vec<&str> = v.as_object().expect("object").keys().map(String::as_str).collect();
        for k in [
            "query",
            "start",
            "end",
            "source",
            "source_start",
            "source_end",
            "similarity",
            "evidence",
            "start_byte",
            "end_byte",
            "source_start_byte",
            "source_end_byte",
            "also",
            "quotation",
            "exclusion",
        ] {
            assert!(keys.contains(&k), "{k} in {v}");
        }
        assert_eq!(
            (&v["quotation"], &v["exclusion"], &v["also"]),
            (&serde_json::json!(true), &serde_json::json!("quote"), &serde_json::json!([]))
        );
    }
}
