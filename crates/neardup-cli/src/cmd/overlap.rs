//! `neardup overlap`: which passages of each query are copied from which documents, and how much
//! of each query that is. Glue over `neardup::overlap`: read the documents, build or load the
//! passage index, check every query, write the passages and the summaries.

use std::io::{self, BufRead, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::anyhow;
use clap::Args;
use neardup::overlap::{
    Batch, OnExistingId, Overlap, OverlapError, OverlapOptions, OverlapSpec, Passage, PassageIndex,
    PASSAGE_INDEX_FILE,
};
use neardup_web::overlap::{OverlapReport, PassageView, QueryView, SourceView};
use neardup_web::thousands;
use serde_json::json;
use serde_json::value::RawValue;

use crate::args::{thread_pool, InputArgs, ZhScriptArg};
use crate::cmd::dedup::peak_memory;
use crate::Failure;
use neardup_corpus::read::{
    expand_inputs, open, read_source, Body, Format, InputError, ReadOptions, Source,
};
use neardup_corpus::write::{self as output, check_conflicts, Input, Output, OutputFile};

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
    /// --against, the collection is these documents themselves.
    #[arg(value_name = "QUERY", required = true)]
    pub inputs: Vec<PathBuf>,

    /// The collection checked against: a saved passage index (a directory written by
    /// --save-index) and/or documents, read as the queries are.
    #[arg(long, value_name = "COLLECTION", num_args = 1..)]
    pub against: Vec<PathBuf>,

    /// Write one JSON line per copied passage: query, start, end, source, source_start,
    /// source_end, similarity and the byte offsets (code points are Python string indices,
    /// end exclusive). Standard output when no other output is given.
    #[arg(long, value_name = "FILE")]
    pub passages: Option<PathBuf>,

    /// Write one JSON line per query: its characters, the copied ones (each counted once), the
    /// copied share and the share of each source.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Write a self-contained HTML page: per query, the copied share (with and without
    /// quotations), the sources, the text with each copied passage marked in its source's
    /// colour, and each passage beside its source with the differences marked.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Without --against: write every input document with the passages it repeats from an
    /// earlier document removed, the first occurrence kept (substring dedup). JSON Lines
    /// records keep every other field as written; a plain-text document becomes a record
    /// {"id", "text"}.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Save the passage index of every document read (the collection and the queries; a query
    /// replaces a document with its id) to this directory, for later --against.
    #[arg(long, value_name = "DIR")]
    pub save_index: Option<PathBuf>,

    /// Documents never counted as sources (the author's own earlier work), by id as written in
    /// the collection (`"a"` or a for the string a, 7 for the number 7).
    #[arg(long, value_name = "ID", num_args = 1..)]
    pub exclude_source: Vec<String>,

    /// Count quotations and the reference list as copied text (left out by default).
    #[arg(long)]
    pub keep_quotes: bool,

    /// The shortest passage reported, in units (a Chinese character, or a word), 1 to 1,000.
    #[arg(long, value_name = "N", default_value_t = OverlapSpec::default().min_units)]
    pub min_units: u32,

    /// The longest run of edited units bridged inside one passage, 0 to 1,000.
    #[arg(long, value_name = "N", default_value_t = OverlapSpec::default().max_gap)]
    pub max_gap: u32,

    /// The smallest share of a passage's units in exactly shared runs, in (0, 1].
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

/// A document read for the check: its id as JSON text, its text, and where it was read
/// (source number, 1-based JSONL line or 0 for a whole file; a token list is marked, as its
/// text is the tokens joined).
struct Doc {
    id: Box<RawValue>,
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
    }
    .to_spec()
    .map_err(|e| Failure::Usage(anyhow!("--{}", e.to_string().replace('_', "-"))))?;

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

    let mut index = match index_dirs.first() {
        Some(dir) => match PassageIndex::load(dir, Some(&spec)) {
            // The script is the index's own unless asked for (an index made before units were
            // written in one script compared them as written).
            Err(OverlapError::Mismatch { field: "zh_script", index, .. })
                if args.zh_script.is_none() =>
            {
                let zh_script = serde_json::from_value(serde_json::Value::String(index))
                    .map_err(|e| Failure::Runtime(anyhow!("{}: {e}", dir.display())))?;
                PassageIndex::load(dir, Some(&OverlapSpec { zh_script, ..spec.clone() }))
                    .map_err(overlap_failure)?
            }
            loaded => loaded.map_err(overlap_failure)?,
        },
        None => PassageIndex::new(spec.clone()).map_err(overlap_failure)?,
    };
    let loaded = index.len();
    let mut read_bytes = 0u64;
    let collection = read_docs(&against_sources, &args.input.read_options(), &mut read_bytes)?;
    let within = args.against.is_empty();
    let queries = read_docs(&query_sources, &args.input.read_options(), &mut read_bytes)?;
    if args.output.is_some() {
        if let Some(d) = queries.iter().find(|d| d.tokens) {
            return Err(Failure::Usage(anyhow!(
                "-o/--output rewrites a text field, and document {} has tokens \
                 (--tokens-field): give its text",
                d.id.get()
            )));
        }
    }
    let places: Vec<(usize, u64)> = queries.iter().map(|d| d.place).collect();
    refuse_repeated_ids(&collection, &against_sources, "--against")?;
    refuse_repeated_ids(&queries, &query_sources, "the queries")?;
    // Documents the saved index holds already are taken as they are; a document given again
    // with another text replaces its saved version (a revised paper), and new ones are added.
    let (mut fresh, mut changed, mut unchanged) = (Vec::new(), Vec::new(), 0usize);
    for d in collection {
        let id = d.id.get().to_string();
        match index.find(&id) {
            Some(n) if index.text(n) == d.text => unchanged += 1,
            Some(_) => changed.push((id, d.text)),
            None => fresh.push((id, d.text)),
        }
    }
    let (added, replaced) = (fresh.len(), changed.len());
    index.add_documents(fresh, OnExistingId::Refuse).map_err(overlap_failure)?;
    index.add_documents(changed, OnExistingId::Replace).map_err(overlap_failure)?;
    if loaded > 0 && added + replaced + unchanged > 0 && !args.quiet {
        eprintln!(
            "neardup overlap: {} documents from the saved index; of the {} documents given \
             besides, {added} new and {replaced} changed were added ({unchanged} already in it)",
            thousands(loaded as u64),
            thousands((added + replaced + unchanged) as u64)
        );
    }
    let collection_docs = index.len();

    let exclude: Vec<u32> = args
        .exclude_source
        .iter()
        .map(|id| {
            let as_json = if serde_json::from_str::<serde_json::Value>(id).is_ok() {
                id.clone()
            } else {
                serde_json::to_string(id).expect("a string serializes")
            };
            index.find(&as_json).or_else(|| index.find(id)).ok_or_else(|| {
                Failure::Usage(anyhow!(
                    "--exclude-source {id}: no document of the collection has this id"
                ))
            })
        })
        .collect::<Result<_, _>>()?;

    // The check: queries against the collection, or every input against the others.
    let mode = match (within, args.save_index.is_some()) {
        (true, _) => Batch::Within,
        (false, true) => Batch::AgainstThenAdd,
        (false, false) => Batch::Against,
    };
    let query_ids: Vec<String> = queries.iter().map(|q| q.id.get().to_string()).collect();
    // The report shows the queries' texts, which a check against the collection consumes.
    let query_texts: Vec<String> = match (&args.report, within) {
        (Some(_), false) => queries.iter().map(|q| q.text.clone()).collect(),
        _ => Vec::new(),
    };
    let results = index
        .check_batch(
            queries.into_iter().map(|d| (d.id.get().to_string(), d.text)).collect(),
            mode,
            &exclude,
        )
        .map_err(overlap_failure)?;
    let check_time = started.elapsed();

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
    let mut removed_chars = 0u64;
    let kept_out = match &args.output {
        Some(path) => {
            let mut out = OutputFile::create("--output", path)?;
            removed_chars = write_without_repeats(
                &mut out,
                &query_sources,
                &args.input.read_options(),
                &places,
                &query_ids,
                &results,
                &index,
            )?;
            Some(out)
        }
        None => None,
    };
    let mut line = Vec::new();
    for (qid, overlap) in query_ids.iter().zip(&results) {
        if let Some(out) = &mut passages_out {
            for p in &overlap.passages {
                line.clear();
                write_passage(&mut line, qid, p, &index);
                out.write_bytes(&line)?;
            }
        }
        if let Some(out) = &mut summary_out {
            line.clear();
            write_summary(&mut line, qid, overlap, &index);
            out.write_bytes(&line)?;
        }
        if output::stdout_closed() && args.save_index.is_none() {
            return Err(Failure::Reported);
        }
    }
    output::commit_section(|| -> Result<(), Failure> {
        for out in [passages_out, summary_out, report_out, kept_out].into_iter().flatten() {
            out.commit()?;
        }
        if let Some(lock) = &lock {
            index.save(lock).map_err(overlap_failure)?;
        }
        Ok(())
    })?;

    if !args.quiet && !output::stdout_closed() {
        let n = results.len();
        let passages: usize = results.iter().map(|r| r.passages.len()).sum();
        let with_copies = results.iter().filter(|r| !r.passages.is_empty()).count();
        let mean =
            if n == 0 { 0.0 } else { results.iter().map(Overlap::copied).sum::<f64>() / n as f64 };
        let mut err = io::stderr().lock();
        let what = if within {
            format!("{n} documents checked against each other")
        } else {
            format!(
                "{n} queries against {collection_docs} documents{}",
                if loaded > 0 {
                    format!(" ({loaded} from the saved index)")
                } else {
                    String::new()
                }
            )
        };
        let _ = writeln!(
            err,
            "neardup overlap: {what}: {passages} passages in {with_copies} of them, {:.1}% copied \
             on average",
            mean * 100.0
        );
        if args.output.is_some() {
            let total: u64 = results.iter().map(|r| r.chars).sum();
            let _ = writeln!(
                err,
                "  -o: {} of {} characters removed as repeats of earlier documents ({:.1}%)",
                thousands(removed_chars),
                thousands(total),
                removed_chars as f64 / total.max(1) as f64 * 100.0
            );
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

/// Writes every query with its repeats removed (see --output): JSON Lines records read again
/// and their text field replaced, other fields as written; whole-file documents as
/// `{"id", "text"}`. A record that is not what the first read gave (the file changed) stops
/// the run. Returns the code points removed.
fn write_without_repeats(
    out: &mut OutputFile,
    sources: &[Source],
    input: &ReadOptions,
    places: &[(usize, u64)],
    ids: &[String],
    results: &[Overlap],
    index: &PassageIndex,
) -> Result<u64, Failure> {
    let mut removed = 0u64;
    // Per source, its documents in line order: (line, query number).
    let mut by_source: Vec<Vec<(u64, usize)>> = vec![Vec::new(); sources.len()];
    for (q, &(si, line)) in places.iter().enumerate() {
        by_source[si].push((line, q));
    }
    let rewrite = |q: usize| {
        let n = index.find(&ids[q]).expect("every query is in the index");
        (n, without_repeats(index.text(n), n, &results[q]))
    };
    let mut buf = Vec::new();
    for (si, source) in sources.iter().enumerate() {
        let docs = &by_source[si];
        if docs.is_empty() {
            continue;
        }
        if source_opts(source, input).format_of(source) != Format::Jsonl {
            for &(_, q) in docs {
                let (_, (text, r)) = rewrite(q);
                removed += r;
                buf.clear();
                let _ = writeln!(buf, "{{\"id\":{},\"text\":{}}}", ids[q], json!(text));
                out.write_bytes(&buf)?;
            }
            continue;
        }
        let changed = || {
            Failure::Runtime(anyhow!(
                "{} changed while it was checked: -o was not written",
                source.name()
            ))
        };
        let failed = |e: io::Error| Failure::Runtime(anyhow!("{}: {e}", source.name()));
        let mut reader = open(source).map_err(failed)?.reader;
        let (mut line_no, mut next) = (0u64, 0usize);
        let mut raw = Vec::new();
        while next < docs.len() {
            raw.clear();
            if reader.read_until(b'\n', &mut raw).map_err(failed)? == 0 {
                return Err(changed());
            }
            line_no += 1;
            if docs[next].0 != line_no {
                continue; // a blank line, or a record skipped under --skip-bad
            }
            let q = docs[next].1;
            next += 1;
            // The record as written (its ending and a byte order mark aside); only the text
            // field's value is replaced, every other byte kept (`1.10` stays `1.10`).
            let record = neardup::record_line(&raw).ok_or_else(changed)?;
            let at = record.as_ptr() as usize - raw.as_ptr() as usize;
            let record = std::str::from_utf8(record).map_err(|_| changed())?;
            let fields = neardup::RecordFields {
                text: &input.text_field,
                id: &input.id_field,
                tokens: &input.tokens_field,
                rank: None,
            };
            let span = neardup::text_span(record, &fields).ok().flatten().ok_or_else(changed)?;
            let (n, (text, r)) = rewrite(q);
            let was: String = serde_json::from_str(&record[span.clone()]).map_err(|_| changed())?;
            if was != index.text(n) {
                return Err(changed());
            }
            removed += r;
            buf.clear();
            let line = raw.strip_suffix(b"\n").unwrap_or(&raw);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if r == 0 {
                buf.extend_from_slice(line);
            } else {
                let (a, b) = (at + span.start, at + span.end);
                buf.extend_from_slice(&line[..a]);
                buf.extend_from_slice(json!(text).to_string().as_bytes());
                buf.extend_from_slice(&line[b..]);
            }
            buf.push(b'\n');
            out.write_bytes(&buf)?;
        }
    }
    Ok(removed)
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

/// An id as the page shows it: a string's value, a number as written.
fn shown_id(id: &str) -> String {
    serde_json::from_str::<String>(id).unwrap_or_else(|_| id.to_string())
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
        if let Some(first) = seen.insert(d.id.get(), d.place) {
            return Err(Failure::Runtime(anyhow!(
                "{what}: id {} is given to two documents, {} and {}: each needs its own id \
                 (--id-field chooses the field)",
                d.id.get(),
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

/// Reads every document of `sources`: a file given by name is JSON Lines when its name says
/// so (or with --jsonl), else one plain-text document; files found in directories are plain
/// text. Bad records stop the run unless --skip-bad.
fn read_docs(
    sources: &[Source],
    input: &ReadOptions,
    bytes: &mut u64,
) -> Result<Vec<Doc>, Failure> {
    let mut docs = Vec::new();
    let mut fatal: Option<InputError> = None;
    for (si, source) in sources.iter().enumerate() {
        let opts = source_opts(source, input);
        let (flow, _) = read_source(source, &opts, &mut |item| match item {
            Ok(record) => {
                let tokens = matches!(record.body, Body::Tokens(_));
                let text = record.body.into_display_text();
                *bytes += text.len() as u64;
                docs.push(Doc { id: record.id, text, place: (si, record.line), tokens });
                ControlFlow::Continue(())
            }
            Err(e) if input.skip_bad && e.skippable() => {
                eprintln!("neardup: skipped: {e}");
                ControlFlow::Continue(())
            }
            Err(e) => {
                fatal = Some(e);
                ControlFlow::Break(())
            }
        });
        if let Some(e) = fatal {
            let hint = if e.skippable() { "; use --skip-bad to skip bad records" } else { "" };
            return Err(Failure::Runtime(anyhow!("{e}\n(no output was written{hint})")));
        }
        if flow.is_break() {
            break;
        }
    }
    Ok(docs)
}

fn overlap_failure(e: OverlapError) -> Failure {
    match e {
        OverlapError::InvalidSpec { .. } => Failure::Usage(anyhow!("{e}")),
        OverlapError::Mismatch { .. } => Failure::Usage(anyhow!("{e}")),
        OverlapError::Format { ref path, .. } if path.is_dir() => Failure::Usage(anyhow!("{e}")),
        _ => Failure::Runtime(anyhow!("{e}")),
    }
}

/// One passage line: the ids as written, offsets as the issue's format gives them.
fn write_passage(out: &mut Vec<u8>, query: &str, p: &Passage, index: &PassageIndex) {
    let _ = write!(
        out,
        "{{\"query\":{query},\"start\":{},\"end\":{},\"source\":{},\"source_start\":{},\
         \"source_end\":{},\"similarity\":{},\"evidence\":{},\"start_byte\":{},\
         \"end_byte\":{},\"source_start_byte\":{},\"source_end_byte\":{}",
        p.start,
        p.end,
        index.id(p.source),
        p.source_start,
        p.source_end,
        p.similarity,
        p.evidence,
        p.start_byte,
        p.end_byte,
        p.source_start_byte,
        p.source_end_byte
    );
    if !p.also.is_empty() {
        out.extend_from_slice(b",\"also\":[");
        for (i, &a) in p.also.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(index.id(a).as_bytes());
        }
        out.push(b']');
    }
    out.extend_from_slice(b"}\n");
}

/// One summary line.
fn write_summary(out: &mut Vec<u8>, query: &str, o: &Overlap, index: &PassageIndex) {
    let _ = write!(
        out,
        "{{\"query\":{query},\"chars\":{},\"copied_chars\":{},\"copied\":{},\"excluded_chars\":{},\
         \"sources\":[",
        o.chars,
        o.copied_chars,
        o.share(o.copied_chars),
        o.excluded_chars
    );
    for (i, s) in o.sources.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = write!(
            out,
            "{{\"id\":{},\"chars\":{},\"copied\":{}}}",
            index.id(s.source),
            s.chars,
            o.share(s.chars)
        );
    }
    out.extend_from_slice(b"]}\n");
}
