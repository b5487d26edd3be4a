//! `neardup overlap -o`: every input record written again with the passages it repeats from
//! earlier documents removed (substring dedup), in the output's format (JSON Lines, Parquet,
//! Arrow), every other field or column as the input wrote it.
//!
//! The inputs are read a second time ([`copy_records`]: checked by digest to be the bytes of the
//! first read); only the text field's value (a JSON Lines record's bytes, a table's text
//! column) is replaced.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};

use crate::columnar::RecordsOutput;
use crate::dedup::{copy_records, Place, RecordSink};
use crate::read::{Format, ReadOptions, Source, SourceDigest};
use crate::CorpusError;

/// What the rewrite did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Rewritten {
    /// Code points removed, over every record.
    pub removed: u64,
    /// Records dropped as shorter than `min_chars` after the removal.
    pub dropped: u64,
    /// Records kept that the removal left empty (no `min_chars` given).
    pub emptied: u64,
}

/// Writes every document of `sources` (read before as `places` say, with `digests`) to `out`,
/// its text replaced by `texts[i]` (the new text and the code points removed from it); a
/// document left shorter than `min_chars` code points is dropped.
#[allow(clippy::too_many_arguments)]
pub fn remove_repeats(
    out: &mut RecordsOutput,
    sources: &[Source],
    opts: &ReadOptions,
    digests: &[Option<SourceDigest>],
    places: &[Place],
    ids: &[String],
    texts: Vec<(String, u64)>,
    min_chars: Option<u64>,
) -> Result<Rewritten, CorpusError> {
    let mut texts = texts.into_iter();
    let mut next = |_: usize| texts.next().ok_or_else(more_documents);
    let id_of = |n: usize| ids[n].clone();
    remove_repeats_with(out, sources, opts, digests, places, &id_of, &mut next, min_chars)
}

/// [`remove_repeats`], document `i`'s new text given by `text_of(i)`, asked once for each
/// document in input order (a caller that checks the documents a chunk at a time), and its id
/// (for a plain-text document, written as a record) by `id_of(i)`.
#[allow(clippy::too_many_arguments)]
pub fn remove_repeats_with(
    out: &mut RecordsOutput,
    sources: &[Source],
    opts: &ReadOptions,
    digests: &[Option<SourceDigest>],
    places: &[Place],
    id_of: &dyn Fn(usize) -> String,
    text_of: &mut dyn FnMut(usize) -> Result<(String, u64), CorpusError>,
    min_chars: Option<u64>,
) -> Result<Rewritten, CorpusError> {
    let kept = vec![true; places.len()];
    let mut sink = Sink {
        out,
        sources,
        opts,
        places,
        id_of,
        text_of,
        min_chars: min_chars.unwrap_or(0),
        next: 0,
        done: Rewritten::default(),
    };
    copy_records(sources, opts, digests, places, &kept, &mut sink)?;
    Ok(sink.done)
}

fn more_documents() -> CorpusError {
    CorpusError::Runtime("the input holds more documents than the first read".into())
}

struct Sink<'a> {
    out: &'a mut RecordsOutput,
    sources: &'a [Source],
    opts: &'a ReadOptions,
    places: &'a [Place],
    id_of: &'a dyn Fn(usize) -> String,
    text_of: &'a mut dyn FnMut(usize) -> Result<(String, u64), CorpusError>,
    min_chars: u64,
    /// The next document, in input order.
    next: usize,
    done: Rewritten,
}

impl Sink<'_> {
    /// The next document's new text, counted; `None` when it is dropped.
    fn take(&mut self) -> Result<(usize, Option<String>), CorpusError> {
        let n = self.next;
        if n >= self.places.len() {
            return Err(more_documents());
        }
        let (text, removed) = (self.text_of)(n)?;
        self.next += 1;
        self.done.removed += removed;
        let chars = text.chars().count() as u64;
        if chars < self.min_chars {
            self.done.dropped += 1;
            return Ok((n, None));
        }
        if chars == 0 && removed > 0 {
            self.done.emptied += 1;
        }
        Ok((n, Some(text)))
    }
}

impl RecordSink for Sink<'_> {
    type Error = CorpusError;

    fn record(&mut self, _kept: bool, record: &[u8]) -> Result<(), CorpusError> {
        let sources: &[Source] = self.sources;
        let place = self.places.get(self.next).ok_or_else(more_documents)?;
        let source = &sources[place.source as usize];
        let plain = self.opts.format_of(source) == Format::Text;
        let (n, Some(text)) = self.take()? else { return Ok(()) };
        if plain {
            // A whole-file document becomes {"id", "text"}, its text as decoded.
            let line = serde_json::json!({"id": (self.id_of)(n), "text": text});
            let line =
                serde_json::to_vec(&line).map_err(|e| CorpusError::Runtime(e.to_string()))?;
            return self.out.record(&line);
        }
        let changed = || {
            CorpusError::Runtime(format!(
                "{}: a record changed while it was checked: -o was not written",
                source.name()
            ))
        };
        let line = std::str::from_utf8(record).map_err(|_| changed())?;
        let line = line.trim_end_matches(['\n', '\r']);
        let fields = neardup::RecordFields {
            text: &self.opts.text_field,
            id: &self.opts.id_field,
            tokens: &self.opts.tokens_field,
            rank: None,
        };
        let span = neardup::text_span(line, &fields).ok().flatten().ok_or_else(changed)?;
        // Only the text field's value is replaced, every other byte kept (`1.10` stays `1.10`).
        let mut buf = String::with_capacity(line.len());
        buf.push_str(&line[..span.start]);
        buf.push_str(&serde_json::Value::String(text.to_string()).to_string());
        buf.push_str(&line[span.end..]);
        self.out.record(buf.as_bytes())
    }

    fn rows(&mut self, batch: &RecordBatch, marks: &[Option<bool>]) -> Result<(), CorpusError> {
        let field = self.opts.text_field.as_str();
        let Ok(column) = batch.schema().index_of(field) else {
            return Err(CorpusError::Usage(format!(
                "-o of a Parquet or Arrow input rewrites its text column, and it has no \
                 top-level column {field:?} (a column inside a struct is not rewritten)"
            )));
        };
        let mut texts: Vec<Option<String>> = Vec::with_capacity(batch.num_rows());
        let mut keep: Vec<Option<bool>> = Vec::with_capacity(batch.num_rows());
        let old = batch.column(column);
        let old_text = arrow_cast::cast(old, &arrow_schema::DataType::Utf8)
            .map_err(|e| CorpusError::Runtime(format!("column {field:?}: {e}")))?;
        let old_text = old_text.as_any().downcast_ref::<StringArray>().ok_or_else(|| {
            CorpusError::Runtime(format!("column {field:?} is not a string column"))
        })?;
        for (row, mark) in marks.iter().enumerate() {
            if mark.is_none() {
                // Not a document (a bad row skipped in the first read): not written either.
                texts.push(old_text.is_valid(row).then(|| old_text.value(row).to_string()));
                keep.push(None);
                continue;
            }
            let (_, text) = self.take()?;
            keep.push(Some(text.is_some()));
            texts.push(Some(text.unwrap_or_default()));
        }
        let new: ArrayRef = Arc::new(StringArray::from(texts));
        let new = arrow_cast::cast(&new, old.data_type())
            .map_err(|e| CorpusError::Runtime(format!("column {field:?}: {e}")))?;
        let mut columns = batch.columns().to_vec();
        columns[column] = new;
        let rewritten = RecordBatch::try_new(batch.schema(), columns)
            .map_err(|e| CorpusError::Runtime(format!("writing rows: {e}")))?;
        self.out.rows(&rewritten, &keep, true)
    }
}
