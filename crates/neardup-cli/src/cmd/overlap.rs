//! `neardup overlap`: which passages of each query are copied from which documents, and how much
//! of each query that is. Glue over `neardup::overlap`: read the documents, build or load the
//! passage index, check every query, write the passages and the summaries.

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::anyhow;
use clap::Args;
use neardup::count_of;
use neardup::overlap::{
    Batch, OnExistingId, Overlap, OverlapError, OverlapOptions, OverlapSpec, Passage, PassageIndex,
    PassageRecord, WrittenIds, PASSAGE_INDEX_FILE,
};
use neardup_corpus::columnar::RecordsOutput;
use neardup_corpus::dedup::Place;
use neardup_corpus::overlap::{remove_repeats, Rewritten};
use neardup_corpus::read::{
    encoding_name, expand_inputs, read_source, Body, Format, InputError, ReadOptions, Source,
    SourceDigest,
};
use neardup_corpus::write::{self as output, check_conflicts, Input, Output, OutputFile};
use neardup_corpus::CorpusError;
use neardup_web::overlap::{OverlapReport, PassageView, QueryView, SourceView};
use neardup_web::thousands;
use serde_json::value::RawValue;

use crate::args::{thread_pool, InputArgs, ZhScriptArg};
use crate::cmd::dedup::peak_memory;
use crate::cmd::progress::Progress;
use crate::Failure;

/// Options of `neardup overlap`.
#[derive(Debug, Args)]
#[command(
    about = "Find the passages of each query copied from a collection (the thesis check), or \
             shared between the inputs",
    long_about = "Find the passages of each query copied from a collection (the thesis check, \
                  论文查重), or, without --against, the passages the input documents share.\n\n\
                  Passages are found over normalized text (full-width forms, case, punctuation \
                  and line breaks do not matter; Chinese by character, other scripts by word), \
                  tolerate edits (substituted, inserted or deleted words, swapped or dropped \
                  sentences), and are given as code point and byte offsets into both texts as \
                  written. Quotations and a reference list are left out of the copied share \
                  (--keep-quotes counts them); a source with the query's own id is never its \
                  source.",
    after_help = "Examples:\n  neardup overlap thesis.txt --against library.jsonl --summary -\n  \
                  neardup overlap theses/ --against library/ --save-index lib.idx \
                  --passages found.jsonl\n  neardup overlap new.jsonl --against lib.idx \
                  --passages found.jsonl --summary summary.jsonl\n  \
                  neardup overlap theses/ --against library.jsonl --report report.html\n  \
                  neardup overlap corpus.jsonl -o corpus.dedup.jsonl    # remove repeated \
                  passages"
)]
pub struct OverlapArgs {
    /// The queries: JSONL files (`.jsonl`, `.ndjson`, also `.gz`/`.zst`), plain text files (one
    /// document each), directories of text files, or `-` for standard input. Without
    /// --against, the collection is these documents themselves. Left out only with --against
    /// LIBRARY --save-index DIR, which indexes the library alone.
    #[arg(value_name = "QUERY")]
    pub inputs: Vec<PathBuf>,

    /// The collection checked against: a saved passage index (a directory written by
    /// --save-index) and/or documents, read as the queries are.
    #[arg(long, value_name = "COLLECTION", num_args = 1..)]
    pub against: Vec<PathBuf>,

    /// Write one JSON line per copied passage, in query order, quotations and the reference
    /// list included: query, start, end, source, source_start, source_end, similarity,
    /// evidence, the byte offsets (code points are Python string indices, end exclusive), also
    /// (other documents holding it), quotation (true when cited: left out of the copied share)
    /// and exclusion (null, "quote" or "references"). Standard output when no other output is
    /// given.
    #[arg(long, value_name = "FILE")]
    pub passages: Option<PathBuf>,

    /// Write one JSON line per query: its characters (chars), the copied ones (copied_chars,
    /// each counted once), the copied share without and with quotations (copied,
    /// copied_with_quotations), the quoted ones (excluded_chars), and per source its chars,
    /// copied share and quoted_chars.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Write a self-contained HTML page: per query, the copied share (with and without
    /// quotations), the sources, the text with each copied passage marked in its source's
    /// colour, and each passage beside its source with the differences marked.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Without --against: write every input document with the passages it repeats from an
    /// earlier document removed, the first occurrence kept (substring dedup). FILE.jsonl:
    /// JSON Lines records keep every other field as written (a plain-text document becomes a
    /// record {"id", "text"}, a table's row a JSON object); FILE.parquet, FILE.arrow or
    /// FILE.feather: a table, every input column kept (its text column rewritten).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// With -o: drop the records left shorter than N characters once their repeats are
    /// removed (by default every record is kept, and the summary says how many were left
    /// empty).
    #[arg(long, value_name = "N", requires = "output")]
    pub min_chars: Option<u64>,

    /// Save the passage index of the collection (--against, or without it every input) to
    /// this directory, for later --against. The queries checked against a collection are not
    /// added unless --add is given.
    #[arg(long, value_name = "DIR")]
    pub save_index: Option<PathBuf>,

    /// With --against and --save-index: add the queries to the saved index too (a query
    /// replaces a document of its id), so that later queries are checked against them.
    #[arg(long, requires = "save_index")]
    pub add: bool,

    /// Documents never counted as sources (the author's own earlier work), by id: ids are
    /// text, so 7 names the document whose id is 7 or "7".
    #[arg(long, value_name = "ID", num_args = 1..)]
    pub exclude_source: Vec<String>,

    /// Count quotations and the reference list as copied text (left out by default).
    #[arg(long)]
    pub keep_quotes: bool,

    /// The longest quotation, in characters, 1 to 100,000: an opening mark whose closing mark
    /// is farther, or past the end of its line, quotes nothing, so that quotation marks cannot
    /// hide a long copy.
    #[arg(long, value_name = "N", default_value_t = OverlapSpec::default().max_quote_chars)]
    pub max_quote_chars: u32,

    /// The shortest passage reported, in units (a Chinese character, or a word), 1 to 1,000.
    #[arg(long, value_name = "N", default_value_t = OverlapSpec::default().min_units)]
    pub min_units: u32,

    /// The longest run of edited units bridged inside one passage, 0 to 1,000.
    #[arg(long, value_name = "N", default_value_t = OverlapSpec::default().max_gap)]
    pub max_gap: u32,

    /// The least similarity of a passage to its source, in (0, 1]: units aligned one to one
    /// over its length (one word in ten replaced: 0.9; a sentence frame shared with other
    /// names in it: 0.5 to 0.8).
    #[arg(long, value_name = "X", default_value_t = OverlapSpec::default().min_similarity)]
    pub min_similarity: f64,

    /// The least evidence per unit of a passage, in [0, 1]: its k-grams the index keeps, each
    /// weighed by how few other documents hold it (a verbatim copy has about 0.3, a heavily
    /// reworded one 0.1 to 0.2, a long loose match of a field's stock phrases under 0.05).
    /// Higher drops more false passages and more reworded copies; 0 keeps every alignment.
    #[arg(long, value_name = "X", default_value_t = OverlapSpec::default().min_density)]
    pub min_density: f64,

    /// Units per shared k-gram, the seed of every match (an index's own setting), 1 to 1,000.
    #[arg(long, value_name = "N", default_value_t = OverlapSpec::default().seed)]
    pub seed_units: u32,

    /// Winnowing window in k-grams (an index's own setting), 1 to 1,000.
    #[arg(long, value_name = "N", default_value_t = OverlapSpec::default().window)]
    pub window: u32,

    /// The most candidate sources aligned with each query, those sharing most k-grams first,
    /// 1 to 1,000,000.
    #[arg(long, value_name = "N", default_value_t = OverlapSpec::default().max_sources)]
    pub max_sources: u32,

    /// The Chinese script passages are compared in (an index's own setting): simplified
    /// (default: a copy converted to traditional characters still matches its source, OpenCC's
    /// t2s), traditional (s2t), mainland (Taiwan's vocabulary too, tw2sp), or keep (as written).
    /// Against a saved index, the index's own unless given. [default: simplified]
    #[arg(long, value_enum, value_name = "SCRIPT")]
    pub zh_script: Option<ZhScriptArg>,

    #[command(flatten)]
    pub input: InputArgs,

    /// Worker threads (default: all cores), 1 to 256.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,

    /// No summary line on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// A document read for the check: its id (as text: the one id rule) and as written, its text,
/// and where it was read (source number, 1-based JSONL line or 0 for a whole file; a token list
/// is marked, as its text is the tokens joined).
struct Doc {
    id: String,
    written: Box<RawValue>,
    text: String,
    place: (usize, u64),
    tokens: bool,
}

pub fn run(args: OverlapArgs) -> Result<(), Failure> {
    let started = Instant::now();
    thread_pool(args.threads)?;
    let spec = OverlapOptions {
        min_units: Some(args.min_units),
        max_gap: Some(args.max_gap),
        min_similarity: Some(args.min_similarity),
        seed_units: Some(args.seed_units),
        window: Some(args.window),
        max_sources: Some(args.max_sources),
        keep_quotes: Some(args.keep_quotes),
        zh_script: args.zh_script.map(ZhScriptArg::script),
        min_density: Some(args.min_density),
        max_quote_chars: Some(args.max_quote_chars),
    }
    .to_spec()
    .map_err(|e| Failure::Usage(anyhow!("--{}", e.to_string().replace('_', "-"))))?;

    // No query: only a library indexed alone (--against LIBRARY --save-index DIR).
    let library_only = args.inputs.is_empty();
    if library_only && (args.against.is_empty() || args.save_index.is_none()) {
        let hint = if args.against.len() > 1 {
            " (--against takes every path after it: give QUERY before --against)"
        } else {
            ""
        };
        return Err(Failure::Usage(anyhow!(
            "give the QUERY files to check (or `-` for standard input){hint}; without a \
             query, `neardup overlap --against LIBRARY --save-index DIR` indexes a library alone"
        )));
    }
    if args.add && args.against.is_empty() {
        return Err(Failure::Usage(anyhow!(
            "--add adds the queries checked against a collection (--against) to its saved \
             index; without --against every input is saved already"
        )));
    }

    // The collection: at most one saved index, plus documents. A directory holding an index of
    // `neardup dedup` instead is refused by what it is (its files are not documents either).
    if let Some(p) =
        args.against.iter().find(|p| !is_passage_index(p) && p.join("manifest.json").is_file())
    {
        return Err(overlap_failure(PassageIndex::load(p, None).err().unwrap_or_else(|| {
            OverlapError::Format { path: p.clone(), message: "not a passage index".into() }
        })));
    }
    let (index_dirs, against_files): (Vec<PathBuf>, Vec<PathBuf>) =
        args.against.iter().cloned().partition(|p| is_passage_index(p));
    if index_dirs.len() > 1 {
        return Err(Failure::Usage(anyhow!(
            "--against names {} saved passage indexes ({}): give one",
            index_dirs.len(),
            index_dirs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    if args.output.is_some() && !args.against.is_empty() {
        return Err(Failure::Usage(anyhow!(
            "-o/--output writes the inputs with the passages they repeat from each other \
             removed: give it without --against"
        )));
    }
    let query_sources = sources(&args.inputs, &args.input)?;
    if args.output.as_deref().is_some_and(RecordsOutput::is_table) {
        // A table output holds one schema: the inputs' tables must share theirs.
        neardup_corpus::columnar::check_table_inputs(&query_sources, &args.input.read_options())?;
    }
    // A saved index's directory may hold documents too (an index saved beside the library it
    // was built from): they are read, so that files added since are not passed over silently.
    let against_paths: Vec<PathBuf> = against_files.iter().chain(&index_dirs).cloned().collect();
    let against_sources = sources(&against_paths, &args.input)?;

    let mut inputs: Vec<Input> = Vec::new();
    for (what, list) in [("input", &query_sources), ("--against", &against_sources)] {
        inputs.extend(
            list.iter().filter_map(|s| {
                s.path().map(|p| Input { what: what.into(), path: p.to_path_buf() })
            }),
        );
    }
    let mut planned: Vec<Output> = [
        ("--passages", &args.passages),
        ("--summary", &args.summary),
        ("--report", &args.report),
        ("--output", &args.output),
    ]
    .into_iter()
    .filter_map(|(option, p)| p.clone().map(|path| Output { option, path }))
    .collect();
    check_conflicts(&inputs, &planned)?;
    if let Some(dir) = &args.save_index {
        planned.push(Output { option: "--save-index", path: dir.join(PASSAGE_INDEX_FILE) });
        check_conflicts(&inputs, &planned)?;
    }
    let lock =
        args.save_index.as_deref().map(|dir| super::lock_index("overlap", dir)).transpose()?;

    // Every id is text (`7` and `"7"` are one document); outputs write it as it was written.
    let mut written = WrittenIds::default();
    let mut index = match index_dirs.first() {
        Some(dir) => match written.load(dir, Some(&spec)) {
            // The script is the index's own unless asked for (an index made before units were
            // written in one script compared them as written).
            Err(OverlapError::Mismatch { field: "zh_script", index, .. })
                if args.zh_script.is_none() =>
            {
                let zh_script = serde_json::from_value(serde_json::Value::String(index))
                    .map_err(|e| Failure::Runtime(anyhow!("{}: {e}", dir.display())))?;
                written
                    .load(dir, Some(&OverlapSpec { zh_script, ..spec.clone() }))
                    .map_err(overlap_failure)?
            }
            loaded => loaded.map_err(overlap_failure)?,
        },
        None => PassageIndex::new(spec.clone()).map_err(overlap_failure)?,
    };
    let loaded = index.len();
    let mut read_bytes = 0u64;
    let progress = Progress::new(args.quiet);
    let collection =
        read_docs(&against_sources, &args.input, &mut written, &mut read_bytes, &progress)?;
    let within = args.against.is_empty();
    let queries = read_docs(&query_sources, &args.input, &mut written, &mut read_bytes, &progress)?;
    if args.output.is_some() {
        if let Some(d) = queries.docs.iter().find(|d| d.tokens) {
            return Err(Failure::Usage(anyhow!(
                "-o/--output rewrites a text field, and document {} has tokens \
                 (--tokens-field): give its text",
                d.written.get()
            )));
        }
    }
    refuse_repeated_ids(&collection.docs, &against_sources, "--against")?;
    refuse_repeated_ids(&queries.docs, &query_sources, "the queries")?;
    // Documents the saved index holds already are taken as they are; a document given again
    // with another text replaces its saved version (a revised paper), and new ones are added.
    let (mut fresh, mut changed, mut unchanged) = (Vec::new(), Vec::new(), 0usize);
    for d in collection.docs {
        match index.find(&d.id) {
            Some(n) if index.text(n) == d.text => unchanged += 1,
            Some(_) => changed.push((d.id, d.text)),
            None => fresh.push((d.id, d.text)),
        }
    }
    let (added, replaced) = (fresh.len(), changed.len());
    index.add_documents(fresh, OnExistingId::Refuse).map_err(overlap_failure)?;
    index.add_documents(changed, OnExistingId::Replace).map_err(overlap_failure)?;
    if loaded > 0 && added + replaced + unchanged > 0 && !args.quiet {
        progress.println(&format!(
            "neardup overlap: {} from the saved index; of the {} given besides, {added} new \
             and {replaced} changed were added ({unchanged} already in it)",
            count_of(loaded as u64, "document", "documents"),
            count_of((added + replaced + unchanged) as u64, "document", "documents"),
        ));
    }
    let collection_docs = index.len();

    let exclude: Vec<u32> = args
        .exclude_source
        .iter()
        .map(|given| {
            // `"a"` and `7` as JSON, else the text as given (a, or 7 as text: one id).
            let id = neardup::id_from_json(given).map_or(given.as_str().into(), |c| c);
            index.find(&id).ok_or_else(|| {
                Failure::Usage(anyhow!(
                    "--exclude-source {given}: no document of the collection has this id"
                ))
            })
        })
        .collect::<Result<_, _>>()?;

    // The check: queries against the collection (added to it only with --add), or every input
    // against the others.
    let mode = match (within, args.add) {
        (true, _) => Batch::Within,
        (false, true) => Batch::AgainstThenAdd,
        (false, false) => Batch::Against,
    };
    let query_ids: Vec<String> = queries.docs.iter().map(|q| q.id.clone()).collect();
    let query_written: Vec<Box<RawValue>> =
        queries.docs.iter().map(|q| q.written.clone()).collect();
    let places: Vec<Place> = queries.places.clone();
    // The report and --min-chars show or measure the queries' texts, which a check against the
    // collection consumes.
    let query_texts: Vec<String> = match (&args.report, within) {
        (Some(_), false) => queries.docs.iter().map(|q| q.text.clone()).collect(),
        _ => Vec::new(),
    };
    progress.message(&format!("checking {}", count_of(query_ids.len() as u64, "query", "queries")));
    let results = index
        .check_batch(queries.docs.into_iter().map(|d| (d.id, d.text)).collect(), mode, &exclude)
        .map_err(overlap_failure)?;
    progress.finish();
    let check_time = started.elapsed();
    let name = |n: u32| written.json(index.id(n));

    // Outputs: passages to stdout when nothing else is asked for.
    let passages_path =
        match (&args.passages, &args.summary, &args.save_index, &args.report, &args.output) {
            (None, None, None, None, None) => Some(PathBuf::from("-")),
            (p, ..) => p.clone(),
        };
    let mut passages_out =
        passages_path.as_deref().map(|p| OutputFile::create("--passages", p)).transpose()?;
    let mut summary_out =
        args.summary.as_deref().map(|p| OutputFile::create("--summary", p)).transpose()?;
    let report_out = match &args.report {
        Some(path) => {
            let title = format!(
                "{} {}",
                describe_paths(&args.inputs),
                if within {
                    "against each other".to_string()
                } else {
                    format!("against {}", describe_paths(&args.against))
                }
            );
            let mut report = OverlapReport::new(&title);
            report.summary = vec![
                ("queries".into(), thousands(results.len() as u64)),
                ("documents in the collection".into(), thousands(collection_docs as u64)),
                (
                    "copied on average".into(),
                    format!(
                        "{:.1}%",
                        results.iter().map(Overlap::copied).sum::<f64>()
                            / results.len().max(1) as f64
                            * 100.0
                    ),
                ),
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
            for (i, (qid, overlap)) in query_ids.iter().zip(&results).enumerate() {
                let text = if within {
                    index.find(qid).map(|n| index.text(n)).unwrap_or_default()
                } else {
                    query_texts[i].as_str()
                };
                report.queries.push(query_view(qid, text, overlap, &index));
            }
            let mut out = OutputFile::create("--report", path)?;
            out.write_bytes(report.render().as_bytes())?;
            Some(out)
        }
        None => None,
    };
    let mut rewritten = Rewritten::default();
    let kept_out = match &args.output {
        Some(path) => {
            let texts: Vec<(String, u64)> = query_ids
                .iter()
                .zip(&results)
                .map(|(id, o)| {
                    let n = index.find(id).expect("every input is in the index");
                    without_repeats(index.text(n), n, o)
                })
                .collect();
            let mut out = RecordsOutput::create("--output", path)?;
            rewritten = remove_repeats(
                &mut out,
                &query_sources,
                &args.input.read_options(),
                &queries.digests,
                &places,
                &query_ids,
                &texts,
                args.min_chars,
            )
            .map_err(|e| match e {
                CorpusError::Usage(m) => Failure::Usage(anyhow!(m)),
                e => Failure::from(e),
            })?;
            Some(out.finish()?)
        }
        None => None,
    };
    let mut line = Vec::new();
    for (written_id, overlap) in query_written.iter().zip(&results) {
        let query = Some(&**written_id);
        if let Some(out) = &mut passages_out {
            for p in overlap.all_passages() {
                line.clear();
                let record = PassageRecord::new(query, p, &name);
                serde_json::to_writer(&mut line, &record).map_err(anyhow::Error::from)?;
                line.push(b'\n');
                out.write_bytes(&line)?;
            }
        }
        if let Some(out) = &mut summary_out {
            line.clear();
            let record = overlap.summary_record(query, &name);
            serde_json::to_writer(&mut line, &record).map_err(anyhow::Error::from)?;
            line.push(b'\n');
            out.write_bytes(&line)?;
        }
        if output::stdout_closed() && args.save_index.is_none() {
            return Err(Failure::Reported);
        }
    }
    let notes: Vec<String> = kept_out.iter().flat_map(|o| o.notes()).collect();
    output::commit_section(|| -> Result<(), Failure> {
        for out in [passages_out, summary_out, report_out].into_iter().flatten() {
            out.commit()?;
        }
        if let Some(out) = kept_out {
            out.commit()?;
        }
        if let Some(lock) = &lock {
            written.save(&index, lock).map_err(overlap_failure)?;
        }
        Ok(())
    })?;

    if !args.quiet && !output::stdout_closed() {
        let n = results.len() as u64;
        let passages: usize = results.iter().map(|r| r.passages.len()).sum();
        let quoted: usize = results.iter().map(|r| r.excluded.len()).sum();
        let with_copies = results.iter().filter(|r| !r.passages.is_empty()).count();
        let mean =
            if n == 0 { 0.0 } else { results.iter().map(Overlap::copied).sum::<f64>() / n as f64 };
        let mut err = io::stderr().lock();
        let docs = |n: usize| count_of(n as u64, "document", "documents");
        if library_only {
            let _ = writeln!(
                err,
                "neardup overlap: {} indexed in {}{}",
                docs(collection_docs),
                args.save_index.as_deref().unwrap_or(Path::new("")).display(),
                if loaded > 0 {
                    format!(" ({loaded} from the saved index)")
                } else {
                    String::new()
                }
            );
        } else {
            let what = if within {
                format!("{} checked against each other", docs(n as usize))
            } else {
                format!(
                    "{} against {}{}",
                    count_of(n, "query", "queries"),
                    docs(collection_docs),
                    if loaded > 0 {
                        format!(" ({loaded} from the saved index)")
                    } else {
                        String::new()
                    }
                )
            };
            let _ = writeln!(
                err,
                "neardup overlap: {what}: {} in {with_copies} of them{}, {:.1}% copied on average",
                count_of(passages as u64, "passage", "passages"),
                if quoted > 0 {
                    format!(" (and {} quoted)", count_of(quoted as u64, "passage", "passages"))
                } else {
                    String::new()
                },
                mean * 100.0
            );
        }
        for note in &queries.notes {
            let _ = writeln!(err, "  {note}");
        }
        for note in &collection.notes {
            let _ = writeln!(err, "  {note} (--against)");
        }
        if args.output.is_some() {
            let total: u64 = results.iter().map(|r| r.chars).sum();
            let _ = writeln!(
                err,
                "  -o: {} of {} characters removed as repeats of earlier documents ({:.1}%)",
                thousands(rewritten.removed),
                thousands(total),
                rewritten.removed as f64 / total.max(1) as f64 * 100.0
            );
            if let Some(min) = args.min_chars {
                let _ = writeln!(
                    err,
                    "  -o: {} left shorter than --min-chars {min} dropped",
                    count_of(rewritten.dropped, "record", "records"),
                );
            } else if rewritten.emptied > 0 {
                let _ = writeln!(
                    err,
                    "  -o: {} left empty by the removal kept (--min-chars N drops those \
                     shorter than N)",
                    count_of(rewritten.emptied, "record", "records"),
                );
            }
        }
        for note in &notes {
            let _ = writeln!(err, "  {note}");
        }
        if collection_docs == 0 && !within {
            let _ = writeln!(err, "  the collection is empty: nothing can be copied from it");
        }
        let _ = writeln!(
            err,
            "  {:.1} MB read, time {:.2} s (read and check {:.2} s), peak memory {}",
            read_bytes as f64 / 1e6,
            started.elapsed().as_secs_f64(),
            check_time.as_secs_f64(),
            peak_memory().unwrap_or_else(|| "unknown".into())
        );
    }
    if output::stdout_closed() {
        return Err(Failure::Reported);
    }
    Ok(())
}

/// `text` without the byte ranges of its passages whose source is an earlier document (a
/// passage given to a later one is this text's first occurrence, kept), and the code points
/// removed.
fn without_repeats(text: &str, own: u32, o: &Overlap) -> (String, u64) {
    let mut cut: Vec<(usize, usize)> = o
        .passages
        .iter()
        .chain(&o.excluded)
        .filter(|p| p.source < own)
        .map(|p| (p.start_byte as usize, p.end_byte as usize))
        .collect();
    cut.sort_unstable();
    let (mut out, mut at, mut removed) = (String::with_capacity(text.len()), 0usize, 0u64);
    for (a, b) in cut {
        if b <= at {
            continue;
        }
        let a = a.max(at);
        out.push_str(&text[at..a]);
        removed += text[a..b].chars().count() as u64;
        at = b;
    }
    out.push_str(&text[at..]);
    (out, removed)
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

/// An id as the page shows it: its text (a number as written).
fn shown_id(id: &str) -> String {
    id.to_string()
}

/// One query of the report, with the source's text of each passage.
fn query_view(id: &str, text: &str, o: &Overlap, index: &PassageIndex) -> QueryView {
    let passage = |p: &Passage| PassageView {
        start: p.start,
        end: p.end,
        source: shown_id(index.id(p.source)),
        source_start: p.source_start,
        source_end: p.source_end,
        similarity: p.similarity,
        also: p.also.iter().map(|&a| shown_id(index.id(a))).collect(),
        source_text: index
            .text(p.source)
            .get(p.source_start_byte as usize..p.source_end_byte as usize)
            .unwrap_or_default()
            .to_string(),
        exclusion: p.exclusion.map(|e| e.as_str().to_string()),
    };
    QueryView {
        id: shown_id(id),
        text: text.to_string(),
        chars: o.chars,
        copied_chars: o.copied_chars,
        excluded_chars: o.excluded_chars,
        sources: o
            .sources
            .iter()
            .map(|s| SourceView {
                id: shown_id(index.id(s.source)),
                chars: s.chars,
                quoted_chars: s.quoted_chars,
                passages: o.passages.iter().filter(|p| p.source == s.source).count() as u64,
            })
            .collect(),
        passages: o.passages.iter().map(passage).collect(),
        excluded: o.excluded.iter().map(passage).collect(),
    }
}

/// True when `path` is a directory holding a saved passage index.
fn is_passage_index(path: &Path) -> bool {
    path.join(PASSAGE_INDEX_FILE).is_file()
}

/// The sources of the given paths: directories walked, `-` spooled.
fn sources(paths: &[PathBuf], input: &InputArgs) -> Result<Vec<Source>, Failure> {
    let opts = input.read_options();
    Ok(expand_inputs(paths, &opts, |e| {
        eprintln!("neardup: {}: {e}", if e.is_notice() { "note" } else { "skipped" })
    })?)
}

/// Refuses two documents of one id among `docs` (read from `sources`), naming both places:
/// the library's refusal named the id only.
fn refuse_repeated_ids(docs: &[Doc], sources: &[Source], what: &str) -> Result<(), Failure> {
    let place = |(si, line): (usize, u64)| match line {
        0 => sources[si].name(),
        n => format!("{}:{n}", sources[si].name()),
    };
    let mut seen: std::collections::HashMap<&str, (usize, u64)> = Default::default();
    for d in docs {
        if let Some(first) = seen.insert(d.id.as_str(), d.place) {
            return Err(Failure::Runtime(anyhow!(
                "{what}: id {} is given to two documents, {} and {}: each needs its own id \
                 (--id-field chooses the field; 7 and \"7\" are one id)",
                d.written.get(),
                place(first),
                place(d.place)
            )));
        }
    }
    Ok(())
}

/// The reading options of one source: JSON Lines when its name says so (or with --format
/// jsonl), and standard input is JSON Lines unless --format says otherwise.
fn source_opts(source: &Source, input: &ReadOptions) -> ReadOptions {
    let mut opts = input.clone();
    if matches!(source, Source::Spooled(_) | Source::Stdin) {
        opts.format = Some(input.format.unwrap_or(Format::Jsonl));
    }
    opts
}

/// The documents of some sources, where each was read, and what the reading noted.
struct Read {
    docs: Vec<Doc>,
    /// Where each document was read (for `-o`, which reads the sources again).
    places: Vec<Place>,
    /// Each source's digest, to check that a second read is of the same bytes.
    digests: Vec<Option<SourceDigest>>,
    /// Lines for the summary: files read in another encoding than UTF-8, bytes replaced.
    notes: Vec<String>,
}

/// Reads every document of `sources`: a file given by name is JSON Lines when its name says
/// so (or with --jsonl), else one plain-text document; files found in directories are plain
/// text. Text that is not UTF-8 is decoded as detected or given (--encoding), and said. Bad
/// records stop the run unless --skip-bad.
fn read_docs(
    sources: &[Source],
    args: &InputArgs,
    written: &mut WrittenIds,
    bytes: &mut u64,
    progress: &Progress,
) -> Result<Read, Failure> {
    let input = args.read_options();
    let mut read =
        Read { docs: Vec::new(), places: Vec::new(), digests: Vec::new(), notes: Vec::new() };
    let mut fatal: Option<InputError> = None;
    let mut replaced = 0u64;
    for (si, source) in sources.iter().enumerate() {
        let opts = source_opts(source, &input);
        // Per source: the records read in each encoding other than UTF-8.
        let mut encodings: Vec<(&'static str, u64)> = Vec::new();
        let (flow, digest) = read_source(source, &opts, &mut |item| match item {
            Ok(record) => {
                let tokens = matches!(record.body, Body::Tokens(_));
                let text = record.body.into_display_text();
                *bytes += text.len() as u64;
                replaced += record.replaced as u64;
                if let Some(e) = record.encoding.map(encoding_name) {
                    match encodings.iter_mut().find(|(name, _)| *name == e) {
                        Some((_, n)) => *n += 1,
                        None => encodings.push((e, 1)),
                    }
                }
                // The reader lets only strings and numbers through as ids.
                let id = match written.read(record.id.get()) {
                    Ok(id) => id,
                    Err(e) => {
                        fatal = Some(InputError {
                            place: format!("{}:{}", source.name(), record.line),
                            message: e.to_string(),
                            kind: neardup_corpus::read::InputErrorKind::Record,
                        });
                        return ControlFlow::Break(());
                    }
                };
                read.places.push(Place { source: si as u32, line: record.line });
                read.docs.push(Doc {
                    id,
                    written: record.id,
                    text,
                    place: (si, record.line),
                    tokens,
                });
                if read.docs.len().is_multiple_of(1024) {
                    progress.message(&format!(
                        "read {} documents, {:.1} MB",
                        read.docs.len(),
                        *bytes as f64 / 1e6
                    ));
                }
                ControlFlow::Continue(())
            }
            Err(e) if input.skip_bad && e.skippable() => {
                progress.println(&format!("neardup: skipped: {e}"));
                ControlFlow::Continue(())
            }
            Err(e) => {
                fatal = Some(e);
                ControlFlow::Break(())
            }
        });
        read.digests.push(Some(digest));
        if let Some(e) = fatal {
            let hint = if e.skippable() { "; use --skip-bad to skip bad records" } else { "" };
            return Err(Failure::Runtime(anyhow!("{e}\n(no output was written{hint})")));
        }
        for (encoding, n) in encodings {
            read.notes.push(match opts.format_of(source) {
                Format::Text => format!("{} read as {encoding}", source.name()),
                _ => format!(
                    "{}: {} read as {encoding}",
                    source.name(),
                    count_of(n, "record", "records")
                ),
            });
        }
        if flow.is_break() {
            break;
        }
    }
    if replaced > 0 {
        read.notes.push(format!(
            "{} invalid UTF-8 {} replaced with U+FFFD (--lossy): the text there is lost to the \
             check",
            thousands(replaced),
            if replaced == 1 { "sequence" } else { "sequences" }
        ));
    }
    Ok(read)
}

fn overlap_failure(e: OverlapError) -> Failure {
    match e {
        OverlapError::InvalidSpec { .. } => Failure::Usage(anyhow!("{e}")),
        OverlapError::Mismatch { .. } => Failure::Usage(anyhow!("{e}")),
        OverlapError::Format { ref path, .. } if path.is_dir() => Failure::Usage(anyhow!("{e}")),
        _ => Failure::Runtime(anyhow!("{e}")),
    }
}
