//! The passage job of a corpus on disk (`neardup overlap`): read the queries and the collection
//! (files, directories, standard input, a saved passage index), check every query, and write
//! the passages, the summaries, the HTML report, the inputs with their repeated passages removed
//! (`-o`) and the saved index, each output to a temporary file renamed into place when the run
//! succeeded. [`OverlapJob::run`] is the whole job; a surface fills an [`OverlapJob`] from its
//! own options and says the [`OverlapOutcome`] its own way.

mod docs;
mod report;
mod rewrite;
mod within;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use neardup::overlap::{
    Batch, IndexBuilder, Joined, JsonId, Overlap, OverlapError, OverlapOptions, PassageIndex,
    PassageRecord, SavedIndex, WrittenIds, PASSAGE_INDEX_FILE,
};

pub use rewrite::{remove_repeats, Rewritten};

use crate::columnar::{check_table_inputs, RecordsOutput};
use crate::read::ReadOptions;
use crate::write::{
    check_conflicts, commit_section, lock_index, register_index_dir, stdout_closed, Input, Output,
    OutputFile,
};
use crate::CorpusError;

/// Hears of the job as it goes. Each does nothing by default.
pub trait OverlapObserver {
    /// A line to say now: a file passed over, a record skipped, the wait for an index's lock.
    fn say(&self, _line: &str) {}
    /// A line about the run that a quiet run leaves unsaid: what joined a saved index.
    fn note(&self, _line: &str) {}
    /// What the job is doing (a progress line).
    fn progress(&self, _message: &str) {}
}

/// An observer that hears nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl OverlapObserver for Quiet {}

/// What to check, against what, and what to write: `neardup overlap`'s options.
#[derive(Debug, Clone, Default)]
pub struct OverlapJob {
    /// The queries (files, directories, `-`); without `against`, the collection too.
    pub inputs: Vec<PathBuf>,
    /// The collection: files, directories, at most one saved passage index.
    pub against: Vec<PathBuf>,
    /// The passage settings given (a saved index's own settings stand for the others).
    pub options: OverlapOptions,
    /// How the inputs are read.
    pub read: ReadOptions,
    /// The queries join the saved index after their check.
    pub add: bool,
    /// Ids of documents of the collection that are never a source (as given: JSON or text).
    pub exclude_source: Vec<String>,
    /// Where to write the passages as JSON Lines (`-`: standard output).
    pub passages: Option<PathBuf>,
    /// Where to write one summary per query as JSON Lines.
    pub summary: Option<PathBuf>,
    /// Where to write the HTML report.
    pub report: Option<PathBuf>,
    /// Where to write the inputs with the passages they repeat from earlier ones removed.
    pub output: Option<PathBuf>,
    /// With `output`: records left shorter than this many code points are dropped.
    pub min_chars: Option<u64>,
    /// Where to save the passage index (the collection, with the queries when they joined it).
    pub save_index: Option<PathBuf>,
    /// Where the within-corpus mode keeps its temporary index of the corpus (the texts and
    /// the postings; removed when the run ends); `None`: the system's temporary directory.
    pub spill_dir: Option<PathBuf>,
}

/// What a run did, for its summary line.
#[derive(Debug, Clone, Default)]
pub struct OverlapOutcome {
    /// No query: a library indexed alone.
    pub library_only: bool,
    /// The inputs were checked against each other.
    pub within: bool,
    /// Queries checked.
    pub queries: u64,
    /// Documents of the collection at the end.
    pub collection: usize,
    /// Documents read from the saved index.
    pub loaded: usize,
    /// How the documents given besides joined the saved index (all zero without one).
    pub joined: Joined,
    /// Passages found, over every query.
    pub passages: usize,
    /// Passages left out as quotations or references.
    pub quoted: usize,
    /// Queries with at least one passage.
    pub with_copies: usize,
    /// The mean of the queries' copied shares.
    pub mean_copied: f64,
    /// Code points of the queries.
    pub chars: u64,
    /// What `-o` removed and dropped.
    pub rewritten: Option<Rewritten>,
    /// Notes of reading the queries (encodings, replaced bytes).
    pub query_notes: Vec<String>,
    /// Notes of reading the collection.
    pub collection_notes: Vec<String>,
    /// Notes of writing the outputs.
    pub output_notes: Vec<String>,
    /// Bytes of text read.
    pub read_bytes: u64,
    /// Time taken to read and check.
    pub check_time: Duration,
}

/// Runs `work` (the check of `total` queries, adding one to its counter as each ends) on a
/// thread of its own while this one tells `observer` how far it is (the observer stays on the
/// caller's thread): queries checked of all, and the rate.
fn checked_with_progress(
    total: u64,
    work: impl FnOnce(&std::sync::atomic::AtomicU64) -> Result<Vec<Overlap>, OverlapError> + Send,
    observer: &dyn OverlapObserver,
) -> Result<Vec<Overlap>, OverlapError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let (checked, started) = (AtomicU64::new(0), Instant::now());
    std::thread::scope(|scope| {
        let work = scope.spawn(|| work(&checked));
        let mut said = Instant::now();
        while !work.is_finished() {
            // Polled often, so that a short check is not kept waiting; said every 200 ms.
            std::thread::sleep(Duration::from_millis(10));
            if said.elapsed() >= Duration::from_millis(200) {
                said = Instant::now();
                let n = checked.load(Ordering::Relaxed);
                let rate = n as f64 / started.elapsed().as_secs_f64().max(1e-9);
                observer.progress(&format!(
                    "checked {n} of {} ({rate:.0}/s)",
                    neardup::count_of(total, "query", "queries")
                ));
            }
        }
        work.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// True when a passage error is the caller's to change (a setting, an index of other settings,
/// a directory that is not an index, a source that is not in the collection).
pub fn is_usage(e: &OverlapError) -> bool {
    match e {
        OverlapError::InvalidSpec { .. }
        | OverlapError::WrongType { .. }
        | OverlapError::UnknownOption { .. }
        | OverlapError::Mismatch { .. }
        | OverlapError::UnknownSource { .. } => true,
        OverlapError::Format { path, .. } => path.is_dir(),
        _ => false,
    }
}

/// True when `path` is a directory holding a saved passage index.
pub fn is_passage_index(path: &Path) -> bool {
    path.join(PASSAGE_INDEX_FILE).is_file()
}

impl OverlapJob {
    /// The default output: the passages to standard output when nothing else is asked for.
    fn passages_path(&self) -> Option<PathBuf> {
        let nothing = self.summary.is_none()
            && self.save_index.is_none()
            && self.report.is_none()
            && self.output.is_none();
        match &self.passages {
            None if nothing => Some(PathBuf::from("-")),
            p => p.clone(),
        }
    }

    /// Refuses what cannot be run as asked, before anything is read.
    fn check_request(&self) -> Result<(), CorpusError> {
        let usage = |m: String| Err(CorpusError::Usage(m));
        if self.inputs.is_empty() && (self.against.is_empty() || self.save_index.is_none()) {
            let hint = if self.against.len() > 1 {
                " (--against takes every path after it: give QUERY before --against)"
            } else {
                ""
            };
            return usage(format!(
                "give the QUERY files to check (or `-` for standard input){hint}; without a \
                 query, `neardup overlap --against LIBRARY --save-index DIR` indexes a library \
                 alone"
            ));
        }
        if self.add && self.against.is_empty() {
            return usage(
                "--add adds the queries checked against a collection (--against) to its saved \
                 index; without --against every input is saved already"
                    .into(),
            );
        }
        // A directory holding an index of `neardup dedup` instead is refused by what it is (its
        // files are not documents either).
        if let Some(p) =
            self.against.iter().find(|p| !is_passage_index(p) && p.join("manifest.json").is_file())
        {
            return Err(CorpusError::Overlap(
                PassageIndex::load(p, &OverlapOptions::default()).err().unwrap_or_else(|| {
                    OverlapError::Format { path: p.clone(), message: "not a passage index".into() }
                }),
            ));
        }
        let indexes: Vec<&PathBuf> = self.against.iter().filter(|p| is_passage_index(p)).collect();
        if indexes.len() > 1 {
            return usage(format!(
                "--against names {} saved passage indexes ({}): give one",
                indexes.len(),
                indexes.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        if self.output.is_some() && !self.against.is_empty() {
            return usage(
                "-o/--output writes the inputs with the passages they repeat from each other \
                 removed: give it without --against"
                    .into(),
            );
        }
        Ok(())
    }

    /// Runs the job: checks the request, reads, checks every query, writes every output and
    /// the saved index (all renamed into place together at the end, or none).
    pub fn run(&self, observer: &dyn OverlapObserver) -> Result<OverlapOutcome, CorpusError> {
        let started = Instant::now();
        let spec = self.options.to_spec().map_err(CorpusError::Overlap)?;
        self.check_request()?;
        let (index_dirs, against_files): (Vec<PathBuf>, Vec<PathBuf>) =
            self.against.iter().cloned().partition(|p| is_passage_index(p));
        let query_sources = docs::sources(&self.inputs, &self.read, observer, &[])?;
        if self.output.as_deref().is_some_and(RecordsOutput::is_table) {
            // A table output holds one schema: the inputs' tables must share theirs.
            check_table_inputs(&query_sources, &self.read)?;
        }
        // A saved index's directory may hold documents too (an index saved beside the library
        // it was built from): they are read, so that files added since are not passed over.
        let against_paths: Vec<PathBuf> =
            against_files.iter().chain(&index_dirs).cloned().collect();
        let against_sources = docs::sources(&against_paths, &self.read, observer, &index_dirs)?;

        let mut inputs: Vec<Input> = Vec::new();
        for (what, list) in [("input", &query_sources), ("--against", &against_sources)] {
            inputs.extend(list.iter().filter_map(|s| {
                s.path().map(|p| Input { what: what.into(), path: p.to_path_buf() })
            }));
        }
        let passages_path = self.passages_path();
        let mut planned: Vec<Output> = [
            ("--passages", &self.passages),
            ("--summary", &self.summary),
            ("--report", &self.report),
            ("--output", &self.output),
        ]
        .into_iter()
        .filter_map(|(option, p)| p.clone().map(|path| Output { option, path }))
        .collect();
        check_conflicts(&inputs, &planned)?;
        if let Some(dir) = &self.save_index {
            planned.push(Output { option: "--save-index", path: dir.join(PASSAGE_INDEX_FILE) });
            check_conflicts(&inputs, &planned)?;
        }
        let lock = match &self.save_index {
            Some(dir) => {
                let lock = lock_index("overlap", dir, &mut |l| observer.say(l))?;
                register_index_dir(dir);
                Some(lock)
            }
            None => None,
        };

        // A library indexed alone is built as it is read: its texts go to the file, only its
        // fingerprints stay in memory.
        if let (true, true, Some(lock)) = (self.inputs.is_empty(), index_dirs.is_empty(), &lock) {
            return self.run_build(spec, &against_sources, lock, started, observer);
        }
        // A check against a saved index alone reads only what each query needs of it.
        let alone = index_dirs.len() == 1
            && against_sources.is_empty()
            && !self.add
            && self.save_index.is_none();
        if alone {
            if let Some(saved) =
                SavedIndex::open(&index_dirs[0], &self.options).map_err(CorpusError::Overlap)?
            {
                return self.run_against_saved(
                    &saved,
                    &query_sources,
                    passages_path,
                    started,
                    observer,
                );
            }
        }

        // Within one corpus, unless the report (every text at once) or the index is asked for,
        // the texts stay on disk.
        if self.against.is_empty() && self.report.is_none() && self.save_index.is_none() {
            return self.run_within(spec, &query_sources, passages_path, started, observer);
        }
        // Every id is text (`7` and `"7"` are one document); outputs write it as written.
        let mut written = WrittenIds::default();
        let overlap = CorpusError::Overlap;
        let mut index = match index_dirs.first() {
            Some(dir) => written.load(dir, &self.options).map_err(overlap)?,
            None => PassageIndex::new(spec).map_err(overlap)?,
        };
        let mut outcome = OverlapOutcome {
            library_only: self.inputs.is_empty(),
            within: self.against.is_empty(),
            loaded: index.len(),
            ..OverlapOutcome::default()
        };
        let mut bytes = 0u64;
        let collection =
            docs::read_docs(&against_sources, &self.read, &mut written, &mut bytes, observer)?;
        let queries =
            docs::read_docs(&query_sources, &self.read, &mut written, &mut bytes, observer)?;
        outcome.read_bytes = bytes;
        if self.output.is_some() {
            if let Some(d) = queries.docs.iter().find(|d| d.tokens) {
                return Err(CorpusError::Usage(format!(
                    "-o/--output rewrites a text field, and document {} has tokens \
                     (--tokens-field): give its text",
                    d.written.get()
                )));
            }
        }
        docs::refuse_repeated_ids(&collection.docs, &against_sources, "--against")?;
        docs::refuse_repeated_ids(&queries.docs, &query_sources, "the queries")?;
        outcome.collection_notes = collection.notes;
        outcome.joined = index
            .join(collection.docs.into_iter().map(|d| (d.id, d.text)).collect())
            .map_err(overlap)?;
        let j = outcome.joined;
        if outcome.loaded > 0 && j.added + j.replaced + j.unchanged > 0 {
            observer.note(&format!(
                "neardup overlap: {} from the saved index; of the {} given besides, {} new \
                 and {} changed were added ({} already in it)",
                neardup::count_of(outcome.loaded as u64, "document", "documents"),
                neardup::count_of(
                    (j.added + j.replaced + j.unchanged) as u64,
                    "document",
                    "documents"
                ),
                j.added,
                j.replaced,
                j.unchanged
            ));
        }
        let exclude = self.excluded(&index)?;

        // The check: queries against the collection (added to it only with --add), or every
        // input against the others.
        let places = queries.places();
        let query_ids: Vec<String> = queries.docs.iter().map(|q| q.id.clone()).collect();
        let query_written: Vec<_> = queries.docs.iter().map(|q| q.written.clone()).collect();
        // The report shows the queries' texts, which a check against the collection consumes.
        let query_texts: Vec<String> = match (&self.report, outcome.within) {
            (Some(_), false) => queries.docs.iter().map(|q| q.text.clone()).collect(),
            _ => Vec::new(),
        };
        observer.progress(&format!(
            "checking {}",
            neardup::count_of(query_ids.len() as u64, "query", "queries")
        ));
        let batch: Vec<(String, String)> =
            queries.docs.into_iter().map(|d| (d.id, d.text)).collect();
        let mode = Batch::of(outcome.within, self.add);
        let total = batch.len() as u64;
        let results = checked_with_progress(
            total,
            |checked| index.check_batch_counted(batch, mode, &exclude, checked),
            observer,
        )
        .map_err(overlap)?;
        outcome.check_time = started.elapsed();
        outcome.collection = index.len();
        outcome.queries = results.len() as u64;
        outcome.passages = results.iter().map(|r| r.passages.len()).sum();
        outcome.quoted = results.iter().map(|r| r.excluded.len()).sum();
        outcome.with_copies = results.iter().filter(|r| !r.passages.is_empty()).count();
        outcome.mean_copied =
            results.iter().map(|r| r.copied()).sum::<f64>() / results.len().max(1) as f64;
        outcome.chars = results.iter().map(|r| r.chars).sum();
        outcome.query_notes = queries.notes;

        // Outputs, all committed together at the end.
        let (mut passages_out, mut summary_out) = self.record_outputs(passages_path.as_deref())?;
        let report_out = match &self.report {
            Some(path) => {
                let shown: Vec<(&str, &str, &neardup::overlap::Overlap)> = query_ids
                    .iter()
                    .zip(&results)
                    .enumerate()
                    .map(|(i, (id, o))| {
                        let text = match outcome.within {
                            true => index.find(id).map(|n| index.text(n)).unwrap_or_default(),
                            false => query_texts[i].as_str(),
                        };
                        (id.as_str(), text, o)
                    })
                    .collect();
                Some(self.write_report(path, &index, &shown)?)
            }
            None => None,
        };
        let kept_out = match &self.output {
            Some(path) => {
                let texts: Vec<(String, u64)> = query_ids
                    .iter()
                    .zip(&results)
                    .map(|(id, o)| {
                        let n = index.find(id).expect("every input is in the index");
                        o.without_repeats(index.text(n), n)
                    })
                    .collect();
                let mut out = RecordsOutput::create("--output", path)?;
                outcome.rewritten = Some(remove_repeats(
                    &mut out,
                    &query_sources,
                    &self.read,
                    &queries.digests,
                    &places,
                    &query_ids,
                    texts,
                    self.min_chars,
                )?);
                Some(out.finish()?)
            }
            None => None,
        };
        let name = |n: u32| written.json(index.id(n));
        let outs = (&mut passages_out, &mut summary_out);
        write_records(outs, &query_written, &results, &name, self.save_index.is_none())?;
        outcome.output_notes = kept_out.iter().flat_map(|o| o.notes()).collect();
        commit_section(|| -> Result<(), CorpusError> {
            for out in [passages_out, summary_out, report_out].into_iter().flatten() {
                out.commit()?;
            }
            if let Some(out) = kept_out {
                out.commit()?;
            }
            if let Some(lock) = &lock {
                written.save(&index, lock).map_err(overlap)?;
            }
            Ok(())
        })?;
        Ok(outcome)
    }

    /// The check of the queries against a saved index alone ([`SavedIndex`]): its postings and
    /// the texts of the sources each query aligns are read from the file as the check needs
    /// them, so one query costs its own keys and sources, not a load of the index.
    fn run_against_saved(
        &self,
        saved: &SavedIndex,
        query_sources: &[crate::read::Source],
        passages_path: Option<PathBuf>,
        started: Instant,
        observer: &dyn OverlapObserver,
    ) -> Result<OverlapOutcome, CorpusError> {
        use rayon::prelude::*;
        let mut written = WrittenIds::default();
        let mut bytes = 0u64;
        let queries =
            docs::read_docs(query_sources, &self.read, &mut written, &mut bytes, observer)?;
        docs::refuse_repeated_ids(&queries.docs, query_sources, "the queries")?;
        let exclude = self.excluded_by(|id| saved.find(id))?;
        let total = queries.docs.len() as u64;
        observer.progress(&format!("checking {}", neardup::count_of(total, "query", "queries")));
        let results = checked_with_progress(
            total,
            |checked| {
                queries
                    .docs
                    .par_iter()
                    .map(|q| {
                        let found = saved.check(Some(&q.id), &q.text, &exclude);
                        checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        found
                    })
                    .collect()
            },
            observer,
        )
        .map_err(CorpusError::Overlap)?;
        let outcome = OverlapOutcome {
            loaded: saved.len(),
            collection: saved.len(),
            read_bytes: bytes,
            check_time: started.elapsed(),
            queries: results.len() as u64,
            passages: results.iter().map(|r| r.passages.len()).sum(),
            quoted: results.iter().map(|r| r.excluded.len()).sum(),
            with_copies: results.iter().filter(|r| !r.passages.is_empty()).count(),
            mean_copied: results.iter().map(|r| r.copied()).sum::<f64>()
                / results.len().max(1) as f64,
            chars: results.iter().map(|r| r.chars).sum(),
            query_notes: queries.notes,
            ..OverlapOutcome::default()
        };
        let (mut passages_out, mut summary_out) = self.record_outputs(passages_path.as_deref())?;
        // Ids as the index saved them (JSON text); one saved plain (an index of an older
        // writer) as a JSON string.
        let report_out = match &self.report {
            Some(path) => {
                let shown: Vec<(&str, &str, &neardup::overlap::Overlap)> = queries
                    .docs
                    .iter()
                    .zip(&results)
                    .map(|(q, o)| (q.id.as_str(), q.text.as_str(), o))
                    .collect();
                Some(self.write_report(path, saved, &shown)?)
            }
            None => None,
        };
        let name = |n: u32| saved.id_raw(n);
        let query_written: Vec<JsonId> = queries.docs.iter().map(|q| q.written.clone()).collect();
        write_records(
            (&mut passages_out, &mut summary_out),
            &query_written,
            &results,
            &name,
            true,
        )?;
        commit_section(|| -> Result<(), CorpusError> {
            for out in [passages_out, summary_out, report_out].into_iter().flatten() {
                out.commit()?;
            }
            Ok(())
        })?;
        Ok(outcome)
    }

    /// Indexes the collection alone as it is read ([`IndexBuilder`]), in batches of up to
    /// 64 MB: the memory is the fingerprints' (8 bytes a kept k-gram) and one batch's, not the
    /// collection's.
    fn run_build(
        &self,
        spec: neardup::overlap::OverlapSpec,
        sources: &[crate::read::Source],
        lock: &neardup::IndexLock,
        started: Instant,
        observer: &dyn OverlapObserver,
    ) -> Result<OverlapOutcome, CorpusError> {
        const BATCH_BYTES: usize = 64 << 20;
        let overlap = CorpusError::Overlap;
        let mut builder = IndexBuilder::new(spec, lock).map_err(overlap)?;
        let mut written = WrittenIds::default();
        let mut bytes = 0u64;
        let mut batch: Vec<(String, String, String)> = Vec::new();
        let mut batch_bytes = 0usize;
        let mut seen: std::collections::HashMap<String, crate::dedup::Place> = Default::default();
        let read =
            docs::read_each(sources, &self.read, &mut written, &mut bytes, observer, &mut |d| {
                if let Some(first) = seen.insert(d.id.clone(), d.place) {
                    return Err(docs::repeated_id(
                        sources,
                        "--against",
                        &d.written,
                        first,
                        d.place,
                    ));
                }
                // As a saved index keeps ids (`WrittenIds`): a number as written, else a JSON string.
                let saved = match d.written.get().trim_start().starts_with('"') {
                    true => neardup::id_to_json(&d.id),
                    false => d.written.get().trim().to_string(),
                };
                batch_bytes += d.text.len();
                batch.push((d.id, saved, d.text));
                if batch_bytes >= BATCH_BYTES {
                    batch_bytes = 0;
                    builder.add(std::mem::take(&mut batch)).map_err(overlap)?;
                }
                Ok(())
            })?;
        builder.add(batch).map_err(overlap)?;
        let outcome = OverlapOutcome {
            library_only: true,
            within: false,
            collection: builder.len(),
            read_bytes: bytes,
            collection_notes: read.notes,
            check_time: started.elapsed(),
            ..OverlapOutcome::default()
        };
        commit_section(|| builder.finish().map_err(overlap))?;
        Ok(outcome)
    }

    /// The numbers of the sources left out: each id as JSON (`"a"`, `7`), else as the text given.
    /// The HTML report of the queries shown (id, text, answer), written to its temporary file
    /// (committed with the other outputs).
    fn write_report(
        &self,
        path: &Path,
        collection: &dyn report::Collection,
        shown: &[(&str, &str, &neardup::overlap::Overlap)],
    ) -> Result<OutputFile, CorpusError> {
        let page = report::report(&self.inputs, &self.against, collection, shown)
            .map_err(CorpusError::Overlap)?
            .render();
        let mut out = OutputFile::create("--report", path)?;
        out.write_bytes(page.as_bytes())?;
        Ok(out)
    }

    /// The temporary files of `--passages` (at `passages`, the default output included) and
    /// `--summary`, each when asked for.
    fn record_outputs(
        &self,
        passages: Option<&Path>,
    ) -> Result<(Option<OutputFile>, Option<OutputFile>), CorpusError> {
        Ok((
            passages.map(|p| OutputFile::create("--passages", p)).transpose()?,
            self.summary.as_deref().map(|p| OutputFile::create("--summary", p)).transpose()?,
        ))
    }

    fn excluded(&self, index: &PassageIndex) -> Result<Vec<u32>, CorpusError> {
        self.excluded_by(|id| index.find(id))
    }

    /// [`OverlapJob::excluded`], each id looked up by `find`.
    fn excluded_by(&self, find: impl Fn(&str) -> Option<u32>) -> Result<Vec<u32>, CorpusError> {
        self.exclude_source
            .iter()
            .map(|given| {
                let id = neardup::id_from_json(given).map_or(given.clone(), |c| c.into_owned());
                find(&id).ok_or_else(|| {
                    CorpusError::Usage(format!(
                        "--exclude-source {given}: no document of the collection has this id"
                    ))
                })
            })
            .collect()
    }
}

/// Writes each query's passage records and summary record (JSON Lines) to the outputs asked for;
/// stops when standard output was closed (`head`), unless something else is still to be saved.
fn write_records(
    (passages_out, summary_out): (&mut Option<OutputFile>, &mut Option<OutputFile>),
    query_written: &[JsonId],
    results: &[Overlap],
    name: &dyn Fn(u32) -> JsonId,
    stop_on_closed: bool,
) -> Result<(), CorpusError> {
    let json = |e: serde_json::Error| CorpusError::Runtime(e.to_string());
    let mut line = Vec::new();
    for (written_id, overlap) in query_written.iter().zip(results) {
        let query = Some(&**written_id);
        if let Some(out) = passages_out {
            for p in overlap.all_passages() {
                line.clear();
                serde_json::to_writer(&mut line, &PassageRecord::new(query, p, name))
                    .map_err(json)?;
                line.push(b'\n');
                out.write_bytes(&line)?;
            }
        }
        if let Some(out) = summary_out {
            line.clear();
            serde_json::to_writer(&mut line, &overlap.summary_record(query, name)).map_err(json)?;
            line.push(b'\n');
            out.write_bytes(&line)?;
        }
        if stdout_closed() && stop_on_closed {
            return Err(CorpusError::StdoutClosed);
        }
    }
    Ok(())
}
