//! The within-corpus mode (`neardup overlap CORPUS`, with `-o`, `--passages`, `--summary`) in
//! memory that does not grow with the corpus's texts.
//!
//! The corpus is read once into a temporary saved passage index ([`IndexBuilder`] in a
//! directory under `--spill-dir`): its texts go to the file as they are read, only the
//! fingerprints stay in memory until the postings are written. The index is then opened where
//! it lies ([`SavedIndex`]) and each document checked against the others
//! ([`SavedIndex::check_member`]: its text, its keys' postings and the texts of the sources it
//! aligns read by position), a chunk of documents at a time on every core; each chunk's
//! records and `-o` texts are written before the next is checked. The answers are those of
//! the index loaded whole ([`neardup::overlap::PassageIndex::check_member`]). The directory is
//! removed when the run ends, whatever its end.

use std::path::PathBuf;
use std::time::Instant;

use neardup::overlap::{IndexBuilder, JsonId, Overlap, OverlapSpec, SavedIndex};
use rayon::prelude::*;

use super::rewrite::remove_repeats_with;
use super::{docs, write_records, OverlapJob, OverlapObserver, OverlapOutcome};
use crate::columnar::RecordsOutput;
use crate::dedup::Place;
use crate::read::Source;
use crate::write::{commit_section, temporary_dir_guard};
use crate::CorpusError;

/// Text read before a batch of documents is fingerprinted into the temporary index.
const BATCH_BYTES: usize = 64 << 20;
/// Text checked in one chunk, on every core, before its records are written.
const CHUNK_BYTES: usize = 8 << 20;

/// What the read kept of each document: where it is, and how its id was written where that
/// is not as the index saved it (a string written with escapes): the records name a document
/// as its input wrote it.
struct Corpus {
    places: Vec<Place>,
    written: std::collections::HashMap<u32, JsonId>,
}

impl OverlapJob {
    /// The within-corpus mode on disk (see the module's documentation).
    pub(super) fn run_within(
        &self,
        spec: OverlapSpec,
        sources: &[Source],
        passages_path: Option<PathBuf>,
        started: Instant,
        observer: &dyn OverlapObserver,
    ) -> Result<OverlapOutcome, CorpusError> {
        let overlap = CorpusError::Overlap;
        let spill = match &self.spill_dir {
            Some(dir) if !dir.is_dir() => {
                return Err(CorpusError::Usage(format!(
                    "--spill-dir {}: not a directory",
                    dir.display()
                )))
            }
            Some(dir) => dir.clone(),
            None => std::env::temp_dir(),
        };
        // What a failed write of the temporary index asks for.
        const ROOM: &str = "give --spill-dir DIR with room for 2.5 times the corpus's text";
        let tmp = tempfile::Builder::new().prefix("neardup-overlap-").tempdir_in(&spill).map_err(
            |e| {
                CorpusError::Runtime(format!(
                    "{}: making the temporary index of the corpus: {e} ({ROOM})",
                    spill.display()
                ))
            },
        )?;
        // A signal (Ctrl-C) removes it too: it holds about 1.6 times the corpus's text.
        let guard = temporary_dir_guard(tmp.path());
        let lock = neardup::IndexLock::acquire(tmp.path()).map_err(CorpusError::Dedup)?;
        let mut builder = IndexBuilder::new(spec, &lock).map_err(overlap)?;
        // A write that fails (a full disk) names where the index was and what it needs.
        let room = |e: CorpusError| match e {
            CorpusError::Overlap(e @ neardup::overlap::OverlapError::Io { .. }) => {
                CorpusError::Runtime(format!(
                    "{e} (the corpus's temporary index, in {}: {ROOM})",
                    spill.display()
                ))
            }
            e => e,
        };
        let (corpus, read, bytes) =
            self.read_into(sources, &mut builder, observer).map_err(room)?;
        builder.finish().map_err(overlap).map_err(room)?;
        let saved = SavedIndex::open_resident(tmp.path(), &self.options)
            .map_err(overlap)?
            .ok_or_else(|| CorpusError::Runtime("the temporary index has an old format".into()))?;
        let exclude = self.excluded_by(|id| saved.find(id))?;

        let mut outcome = OverlapOutcome {
            within: true,
            collection: saved.len(),
            read_bytes: bytes,
            query_notes: read.notes,
            ..OverlapOutcome::default()
        };
        let (mut passages_out, mut summary_out) = self.record_outputs(passages_path.as_deref())?;
        let name = |n: u32| saved.id_raw(n);
        let total = corpus.places.len();
        let mut copied = 0f64;
        let checked_at = Instant::now();
        let rewrite = self.output.is_some();
        // Checks the chunk of documents from `from` on, writes its records, and gives its answers
        // with its texts (for `-o`).
        let mut check_chunk = |from: usize| -> Result<Vec<(Overlap, String)>, CorpusError> {
            let mut to = from;
            let mut chunk_bytes = 0usize;
            while to < total && (to == from || chunk_bytes < CHUNK_BYTES) {
                chunk_bytes += saved.text_len(to as u32) as usize;
                to += 1;
            }
            let (results, texts): (Vec<Overlap>, Vec<String>) = (from..to)
                .into_par_iter()
                .map(|n| {
                    let o = saved.check_member(n as u32, &exclude, None)?;
                    // `-o` writes the text again, less its repeats.
                    let text = match rewrite {
                        true => saved.text(n as u32)?,
                        false => String::new(),
                    };
                    Ok((o, text))
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(overlap)?
                .into_iter()
                .unzip();
            outcome.queries += results.len() as u64;
            outcome.passages += results.iter().map(|r| r.passages.len()).sum::<usize>();
            outcome.quoted += results.iter().map(|r| r.excluded.len()).sum::<usize>();
            outcome.with_copies += results.iter().filter(|r| !r.passages.is_empty()).count();
            outcome.chars += results.iter().map(|r| r.chars).sum::<u64>();
            copied += results.iter().map(|r| r.copied()).sum::<f64>();
            let written: Vec<JsonId> = (from..to)
                .map(|n| corpus.written.get(&(n as u32)).cloned().unwrap_or_else(|| name(n as u32)))
                .collect();
            write_records((&mut passages_out, &mut summary_out), &written, &results, &name, true)?;
            let rate = to as f64 / checked_at.elapsed().as_secs_f64().max(1e-9);
            observer.progress(&format!(
                "checked {to} of {} ({rate:.0}/s)",
                neardup::count_of(total as u64, "document", "documents")
            ));
            Ok(results.into_iter().zip(texts).collect())
        };
        let mut rewritten = None;
        let kept_out = match &self.output {
            Some(path) => {
                let mut out = RecordsOutput::create("--output", path)?;
                let mut chunk: std::vec::IntoIter<(Overlap, String)> = Vec::new().into_iter();
                let mut next = 0usize;
                let mut text_of = |n: usize| -> Result<(String, u64), CorpusError> {
                    if n != next || n >= total {
                        return Err(CorpusError::Runtime(
                            "the input holds more documents than the first read".into(),
                        ));
                    }
                    let (o, text) = match chunk.next() {
                        Some(found) => found,
                        None => {
                            chunk = check_chunk(n)?.into_iter();
                            chunk.next().expect("a chunk holds a document")
                        }
                    };
                    next += 1;
                    Ok(o.without_repeats(&text, n as u32))
                };
                rewritten = Some(remove_repeats_with(
                    &mut out,
                    sources,
                    &self.read,
                    &read.digests,
                    &corpus.places,
                    &|n| saved.id(n as u32).into_owned(),
                    &mut text_of,
                    self.min_chars,
                )?);
                if next < total {
                    return Err(CorpusError::Runtime(
                        "the input holds fewer documents than the first read".into(),
                    ));
                }
                Some(out.finish()?)
            }
            None => {
                let mut from = 0;
                while from < total {
                    from += check_chunk(from)?.len();
                }
                None
            }
        };
        outcome.rewritten = rewritten;
        outcome.mean_copied = copied / total.max(1) as f64;
        outcome.check_time = started.elapsed();
        outcome.output_notes = kept_out.iter().flat_map(|o| o.notes()).collect();
        commit_section(|| -> Result<(), CorpusError> {
            for out in [passages_out, summary_out].into_iter().flatten() {
                out.commit()?;
            }
            if let Some(out) = kept_out {
                out.commit()?;
            }
            Ok(())
        })?;
        drop(saved);
        drop(lock);
        drop(guard);
        tmp.close()
            .map_err(|e| CorpusError::Runtime(format!("removing the temporary index: {e}")))?;
        Ok(outcome)
    }

    /// Reads the corpus into `builder` in batches, refusing a repeated id (naming both places)
    /// and, for `-o`, a document given by its tokens.
    fn read_into(
        &self,
        sources: &[Source],
        builder: &mut IndexBuilder<'_>,
        observer: &dyn OverlapObserver,
    ) -> Result<(Corpus, docs::Read, u64), CorpusError> {
        let overlap = CorpusError::Overlap;
        let mut written_ids = neardup::overlap::WrittenIds::default();
        let mut bytes = 0u64;
        let mut batch: Vec<(String, String, String)> = Vec::new();
        let mut batch_bytes = 0usize;
        // The ids of the batch not yet added, and their numbers in it (the builder holds the
        // others'): a repeated id is refused naming both places.
        let mut batch_ids: std::collections::HashMap<String, usize> = Default::default();
        let mut corpus = Corpus { places: Vec::new(), written: Default::default() };
        let read = docs::read_each(
            sources,
            &self.read,
            &mut written_ids,
            &mut bytes,
            observer,
            &mut |d| {
                if self.output.is_some() && d.tokens {
                    return Err(CorpusError::Usage(format!(
                        "-o/--output rewrites a text field, and document {} has tokens \
                         (--tokens-field): give its text",
                        d.written.get()
                    )));
                }
                let first = match builder.position(&d.id) {
                    Some(n) => Some(n),
                    None => batch_ids.get(&d.id).map(|i| builder.len() + i),
                };
                if let Some(first) = first {
                    let first = corpus.places[first];
                    return Err(docs::repeated_id(
                        sources,
                        "the queries",
                        &d.written,
                        first,
                        d.place,
                    ));
                }
                if d.text.len() >= u32::MAX as usize {
                    return Err(overlap(neardup::overlap::OverlapError::TooLong {
                        id: d.id,
                        bytes: d.text.len(),
                    }));
                }
                // As a saved index keeps ids (`WrittenIds`): a number as written, else a JSON string.
                let saved = match d.written.get().trim_start().starts_with('"') {
                    true => neardup::id_to_json(&d.id),
                    false => d.written.get().trim().to_string(),
                };
                if d.written.get() != saved {
                    corpus.written.insert(corpus.places.len() as u32, d.written);
                }
                corpus.places.push(d.place);
                batch_bytes += d.text.len();
                batch_ids.insert(d.id.clone(), batch.len());
                batch.push((d.id, saved, d.text));
                if batch_bytes >= BATCH_BYTES {
                    batch_bytes = 0;
                    batch_ids.clear();
                    builder.add(std::mem::take(&mut batch)).map_err(overlap)?;
                }
                Ok(())
            },
        )?;
        builder.add(batch).map_err(overlap)?;
        Ok((corpus, read, bytes))
    }
}
