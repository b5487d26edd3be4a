//! The dedup job of a corpus on disk (`neardup dedup`): every input and output checked before
//! anything is written, the index's lock, the two passes, the review decisions, every output
//! (records, clusters, pairs, assignments, the report) and the saved index committed together.
//! A surface fills a [`DedupJob`], makes the [`Dedup`] from its pipeline and settings, and says
//! the [`DedupRun`] its own way.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use neardup::{Dedup, Summary};
use neardup_web::report::ReportLimits;

use super::{copy_records, sketch_sources, Ids, Lines, Observer, RecordSink};
use crate::columnar::{check_table_inputs, RecordBatch, RecordsOutput};
use crate::decisions::Decisions;
use crate::read::{expand_inputs, ReadOptions};
use crate::report::{run_report, RunFigures};
use crate::write::{
    check_conflicts, check_index_dir, commit_section, register_index_dir, stdout_closed, Input,
    Output, OutputFile,
};
use crate::CorpusError;

/// What to dedup and what to write: `neardup dedup`'s options besides the search's.
#[derive(Debug, Clone, Default)]
pub struct DedupJob {
    /// Files, directories, `-`.
    pub inputs: Vec<PathBuf>,
    /// How they are read (the keep rule's field and whether rows are read whole are set by
    /// the job).
    pub read: ReadOptions,
    /// The kept records.
    pub output: Option<PathBuf>,
    /// The dropped records.
    pub dropped: Option<PathBuf>,
    /// The clusters.
    pub clusters: Option<PathBuf>,
    /// Every pair at or above the threshold.
    pub pairs: Option<PathBuf>,
    /// The compact form of the pairs.
    pub compact_pairs: Option<PathBuf>,
    /// Every document's cluster and fate.
    pub assignments: Option<PathBuf>,
    /// The HTML report.
    pub report: Option<PathBuf>,
    /// How much of the run the report shows.
    pub report_limits: ReportLimits,
    /// A saved index searched as documents seen before.
    pub against: Option<PathBuf>,
    /// Where to save the index of every document.
    pub save_index: Option<PathBuf>,
    /// A reviewer's decisions: documents kept whatever the keep rule says.
    pub decisions: Option<PathBuf>,
    /// Other files the job reads (the pipeline's), by what they are: no output may be one.
    pub files: Vec<(String, PathBuf)>,
}

/// Hears of the job as it goes: the first pass's news, and lines to say now.
pub trait DedupObserver: Observer {
    /// A line to say now (a file passed over, decisions that matched nothing, the lock's wait).
    fn say(&mut self, _line: &str) {}
    /// The first pass is over.
    fn read_done(&mut self) {}
}

/// What a run did, for its summary.
#[derive(Debug)]
pub struct DedupRun {
    /// The run's summary (the report's table says the same).
    pub summary: Summary,
    /// Pairs written to `pairs`.
    pub pairs_written: Option<u64>,
    /// What the record outputs did not write as given.
    pub notes: Vec<String>,
    /// Records that repeated an id.
    pub repeated_ids: u64,
    /// Reading and sketching, search and verification, writing.
    pub times: [Duration; 3],
}

/// The outputs of a run, opened before the first pass and committed after the last write.
struct Outputs {
    records: [Option<RecordsOutput>; 2],
    files: [Option<OutputFile>; 5],
}

/// The line outputs, in the order they are written.
const CLUSTERS: usize = 0;
const PAIRS: usize = 1;
const COMPACT_PAIRS: usize = 2;
const ASSIGNMENTS: usize = 3;
const REPORT: usize = 4;

impl DedupJob {
    fn record_outputs(&self) -> [(&'static str, &Option<PathBuf>); 2] {
        [("--output", &self.output), ("--dropped", &self.dropped)]
    }

    fn line_outputs(&self) -> [(&'static str, &Option<PathBuf>); 5] {
        [
            ("--clusters", &self.clusters),
            ("--pairs", &self.pairs),
            ("--compact-pairs", &self.compact_pairs),
            ("--assignments", &self.assignments),
            ("--report", &self.report),
        ]
    }

    fn plan(&self) -> Vec<Output> {
        let mut out: Vec<Output> = self
            .record_outputs()
            .into_iter()
            .chain(self.line_outputs())
            .filter_map(|(option, p)| p.clone().map(|path| Output { option, path }))
            .collect();
        // The manifest is the index's commit point (its docs file gets a new name each save).
        if let Some(dir) = &self.save_index {
            out.push(Output { option: "--save-index", path: dir.join("manifest.json") });
        }
        out
    }

    fn create(&self) -> Result<Outputs, CorpusError> {
        let records = self
            .record_outputs()
            .map(|(option, p)| p.as_deref().map(|p| RecordsOutput::create(option, p)).transpose());
        let files = self
            .line_outputs()
            .map(|(option, p)| p.as_deref().map(|p| OutputFile::create(option, p)).transpose());
        let [kept, dropped] = records;
        let [a, b, c, d, e] = files;
        Ok(Outputs { records: [kept?, dropped?], files: [a?, b?, c?, d?, e?] })
    }

    /// Runs the job with `dedup` (the pipeline and the search's settings).
    pub fn run(
        &self,
        dedup: &mut Dedup<'_>,
        observer: &mut dyn DedupObserver,
    ) -> Result<DedupRun, CorpusError> {
        let started = Instant::now();
        let mut input = self.read.clone();
        input.rank_field = dedup.config().keep.field().map(str::to_string);
        // Rows written back are read whole in the first pass, so a value that cannot be
        // written (a string that is not UTF-8) is a bad row there.
        input.read_every_column = self.output.is_some() || self.dropped.is_some();

        // Every input (sources, the index read, the files the spec names) and every output are
        // known before anything is opened for writing.
        let mut skipped = 0u64;
        if let Some(dir) = &self.save_index {
            check_index_dir("--save-index", dir, &self.inputs)?;
        }
        let mut said = Vec::new();
        let sources = expand_inputs(&self.inputs, &input, |e| {
            if e.is_notice() {
                said.push(format!("neardup: note: {e}"));
            } else {
                said.push(format!("neardup: skipped: {e}"));
                skipped += 1;
            }
        })?;
        for line in said {
            observer.say(&line);
        }
        let mut inputs: Vec<Input> = sources
            .iter()
            .filter_map(|s| s.path().map(|p| Input { what: "input".into(), path: p.into() }))
            .collect();
        if let Some(dir) = &self.against {
            let path = dir.join("manifest.json");
            inputs.push(Input { what: "--against index file".into(), path });
        }
        inputs.extend(self.files.iter().map(|(w, p)| Input { what: w.clone(), path: p.clone() }));
        if let Some(path) = &self.decisions {
            inputs.push(Input { what: "--decisions file".into(), path: path.clone() });
        }
        // --save-index may be the --against directory: the index is read first and replaced
        // atomically at the end.
        let (index_outputs, file_outputs): (Vec<Output>, Vec<Output>) =
            self.plan().into_iter().partition(|o| o.option == "--save-index");
        check_conflicts(&inputs, &file_outputs)?;
        let non_index_inputs: Vec<Input> =
            inputs.iter().filter(|i| i.what != "--against index file").cloned().collect();
        let mut all_outputs = file_outputs.clone();
        all_outputs.extend(index_outputs);
        check_conflicts(&non_index_inputs, &all_outputs)?;
        // A table output holds one schema: every part's is checked before anything is read
        // or written (a mismatch was found after --clusters - had streamed).
        if [&self.output, &self.dropped].into_iter().flatten().any(|p| RecordsOutput::is_table(p)) {
            check_table_inputs(&sources, &input)?;
        }
        let decisions = self.decisions.as_deref().map(Decisions::read).transpose()?;

        // One writer per index directory, from before its documents are read (when it is also
        // --against) until its new state is committed: concurrent runs take turns.
        let index_lock = match &self.save_index {
            Some(dir) => Some(crate::write::lock_index("dedup", dir, &mut |l| observer.say(l))?),
            None => None,
        };

        // Old documents first, so that positions 0..seen are theirs.
        let mut ids = Ids::default();
        if let Some(dir) = &self.against {
            for id in dedup.load(dir).map_err(CorpusError::Dedup)? {
                ids.push(&id);
            }
        }
        let seen = ids.len();
        let mut outputs = self.create()?;
        if let Some(dir) = &self.save_index {
            register_index_dir(dir);
        }

        let read = match sketch_sources(dedup, &sources, &input, &mut ids, observer) {
            Ok(read) => read,
            Err(CorpusError::Input(e)) => {
                let hint = if e.skippable() { "; use --skip-bad to skip bad records" } else { "" };
                return Err(CorpusError::Runtime(format!("{e}\n(no output was written{hint})")));
            }
            Err(e) => return Err(e),
        };
        observer.read_done();
        let read_time = started.elapsed();

        let search_started = Instant::now();
        let mut outcome = dedup.run().map_err(CorpusError::Dedup)?;
        let search_time = search_started.elapsed();
        let mut kept_by_decision = 0;
        if let Some(decisions) = &decisions {
            let mut found = HashSet::new();
            let marked: Vec<u32> = (seen..ids.len())
                .filter(|&i| match neardup::id_from_json(ids.get(i)) {
                    Ok(id) if decisions.not_duplicate(&id) => {
                        found.insert(id.into_owned());
                        true
                    }
                    _ => false,
                })
                .map(|i| i as u32)
                .collect();
            kept_by_decision = outcome.keep_also(marked);
            let unmatched = decisions.unmatched(&found);
            if let Some(example) = unmatched.first() {
                // Said, not refused: decisions may cover more than this run's input.
                observer.say(&format!(
                    "neardup: {} of --decisions matched no document of this run, e.g. \
                     {example:?} (were they made with other --id-field settings?)",
                    neardup::count_of(unmatched.len() as u64, "id", "ids")
                ));
            }
        }
        // One summary of the run: what stderr says and what the report's table says.
        let mut summary = Summary::of(dedup, &outcome);
        summary.bytes = Some(read.bytes);
        summary.skipped = skipped + read.skipped;
        summary.replaced = read.replaced;
        summary.repeated_ids = read.repeated_ids.records() as u64;
        summary.repeated_id_examples = read.repeated_ids.examples().to_vec();
        summary.kept_by_decision = kept_by_decision;

        let write_started = Instant::now();
        let writer = Lines { ids: &ids, outcome: &outcome, seen };
        let saving = self.save_index.is_some();
        let mut pairs_written = None;
        if let Some(out) = &mut outputs.files[CLUSTERS] {
            writer.clusters(out)?;
        }
        outputs.stop_if_stdout_gone(saving)?;
        if let Some(out) = &mut outputs.files[PAIRS] {
            pairs_written = Some(writer.pairs(out, outcome.pairs())?);
        }
        outputs.stop_if_stdout_gone(saving)?;
        if let Some(out) = &mut outputs.files[COMPACT_PAIRS] {
            writer.pairs(out, outcome.compact_pairs())?;
        }
        if let Some(out) = &mut outputs.files[ASSIGNMENTS] {
            writer.assignments(out)?;
        }
        outputs.stop_if_stdout_gone(saving)?;
        if outputs.records.iter().any(Option::is_some) {
            let kept = &outcome.kept[seen..];
            copy_records(&sources, &input, &read.digests, &read.places, kept, &mut outputs)?;
        }
        if outputs.files[REPORT].is_some() {
            let figures = RunFigures {
                summary: &summary,
                started,
                read_time,
                search_time,
                write_time: write_started.elapsed(),
            };
            let page = run_report(
                &self.inputs,
                self.report_limits,
                dedup,
                &outcome,
                &ids,
                &sources,
                &read,
                &input,
                &figures,
            )?;
            if let Some(out) = &mut outputs.files[REPORT] {
                out.write_bytes(page.as_bytes())?;
            }
        }
        // The index is written now and committed last: a run that fails or is stopped before
        // the end leaves it as it was (a rerun then repeats the whole run), and once it is
        // committed the run has succeeded. Termination signals wait while the outputs and the
        // index commit.
        let prepared = match &index_lock {
            Some(lock) => {
                Some(dedup.prepare_save(lock, &ids.to_vec()).map_err(CorpusError::Dedup)?)
            }
            None => None,
        };
        outputs.finish_records()?;
        let notes: Vec<String> = outputs.records.iter().flatten().flat_map(|o| o.notes()).collect();
        commit_section(|| -> Result<(), CorpusError> {
            outputs.commit()?;
            if let Some(prepared) = prepared {
                prepared.commit().map_err(CorpusError::Dedup)?;
            }
            Ok(())
        })?;
        Ok(DedupRun {
            summary,
            pairs_written,
            notes,
            repeated_ids: read.repeated_ids.records() as u64,
            times: [read_time, search_time, write_started.elapsed()],
        })
    }
}

impl Outputs {
    /// Finishes the record outputs' files (a table's encoding can fail: a schema the records
    /// do not fit, a full disk), so that committing is only renames.
    fn finish_records(&mut self) -> Result<(), CorpusError> {
        for slot in &mut self.records {
            if let Some(out) = slot.take() {
                *slot = Some(out.finish()?);
            }
        }
        Ok(())
    }

    /// Renames every output into place; the caller finished them ([`Outputs::finish_records`]).
    fn commit(self) -> Result<(), CorpusError> {
        for out in self.records.into_iter().flatten() {
            out.commit()?;
        }
        for out in self.files.into_iter().flatten() {
            out.commit()?;
        }
        Ok(())
    }

    /// True when some output is a file (not standard output).
    fn any_file(&self) -> bool {
        self.records.iter().flatten().any(|o| !o.is_stdout())
            || self.files.iter().flatten().any(|o| !o.is_stdout())
    }

    /// Ends the run quietly when standard output closed and nothing else is being written.
    fn stop_if_stdout_gone(&self, saving: bool) -> Result<(), CorpusError> {
        if stdout_closed() && !self.any_file() && !saving {
            return Err(CorpusError::StdoutClosed);
        }
        Ok(())
    }
}

/// The second pass writes each record to `--output` (kept) or `--dropped`, newline-ended, and
/// stops when standard output is gone and nothing else is written.
impl RecordSink for Outputs {
    type Error = CorpusError;

    fn record(&mut self, keep: bool, record: &[u8]) -> Result<(), CorpusError> {
        let Some(out) = &mut self.records[usize::from(!keep)] else { return Ok(()) };
        out.record(record)
    }

    fn rows(&mut self, batch: &RecordBatch, marks: &[Option<bool>]) -> Result<(), CorpusError> {
        for (i, out) in self.records.iter_mut().enumerate() {
            if let Some(out) = out {
                out.rows(batch, marks, i == 0)?;
            }
        }
        Ok(())
    }

    fn source_done(&mut self) -> Result<(), CorpusError> {
        self.stop_if_stdout_gone(false)
    }
}
