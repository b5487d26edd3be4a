//! HTML reports of dedup runs: `neardup dedup --report FILE` while deduplicating, and
//! `neardup report`, which builds the same page from a run's `--clusters` (and `--pairs`)
//! output and its input.
//!
//! Both paths share the choices: the same clusters (the largest, then a sample keyed by a hash
//! of the kept document's id, so both commands draw the same sample), the same members (the
//! kept one, then the least similar to it, by the run's measure), the same cut texts. The page
//! itself is rendered by `neardup-web`.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::anyhow;
use clap::Args;
use neardup::{Dedup, DocSketch, Scratch, SearchSpec, Verification};
use neardup_web::report::{
    choose_members, cut_text, select_clusters, ClusterView, MemberView, Report, ReportLimits,
    MAX_CLUSTERS, MAX_MEMBERS, MAX_TEXT_CHARS,
};
use neardup_web::thousands;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::args::{InputArgs, PipelineArgs};
use crate::cmd::build_pipeline;
use crate::cmd::dedup::{choice, peak_memory, search_failure};
use crate::Failure;
use neardup_corpus::read::{
    expand_inputs, io_message, read_source, ReadOptions, Record, Source, SourceDigest,
};
use neardup_corpus::write::{check_conflicts, Input, Output, OutputFile};

/// How much of a run the report shows (shared by `dedup --report` and `report`).
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// The largest clusters shown in the report, 0 to 100,000.
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clusters_bound)]
    pub report_clusters: usize,

    /// How many of the other clusters the report shows, drawn at random (reproducibly), 0 to
    /// 100,000.
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clusters_bound)]
    pub report_sample: usize,

    /// Documents shown per cluster, the kept one included (then the least similar to it), 2 to
    /// 10,000.
    #[arg(long, default_value_t = 20, value_name = "N", value_parser = members_bound)]
    pub report_members: usize,

    /// Characters of each text shown (longer texts are cut, and the page says so), 100 to
    /// 1,000,000.
    #[arg(long, default_value_t = 3000, value_name = "N", value_parser = chars_bound)]
    pub report_text_chars: usize,
}

fn bounded(s: &str, lo: usize, hi: usize) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("{s:?} is not a whole number"))?;
    if n < lo || n > hi {
        return Err(format!("{n} is not between {lo} and {hi}"));
    }
    Ok(n)
}

fn clusters_bound(s: &str) -> Result<usize, String> {
    bounded(s, 0, MAX_CLUSTERS)
}

fn members_bound(s: &str) -> Result<usize, String> {
    bounded(s, 2, MAX_MEMBERS)
}

fn chars_bound(s: &str) -> Result<usize, String> {
    bounded(s, 100, MAX_TEXT_CHARS)
}

impl LimitArgs {
    pub fn limits(&self) -> ReportLimits {
        ReportLimits {
            largest: self.report_clusters,
            sample: self.report_sample,
            members: self.report_members,
            text_chars: self.report_text_chars,
        }
    }
}

/// The key that draws the sample: a hash of the kept document's id as written.
pub fn sample_key(keep_id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(keep_id.as_bytes(), 0x006e_6561_7264_7570)
}

/// An id for display: a JSON string id without its quotes and escapes, anything else as written.
pub fn display_id(id: &str) -> String {
    if id.starts_with('"') {
        if let Ok(s) = serde_json::from_str::<String>(id) {
            return s;
        }
    }
    id.to_string()
}

/// A measure named for people.
pub fn measure_name(v: Verification) -> &'static str {
    match v {
        Verification::Jaccard => "Jaccard",
        Verification::Cosine => "cosine",
        Verification::Hamming => "SimHash (1 - Hamming distance / bits)",
        Verification::Estimate => "estimated",
    }
}

/// A document's text as the report shows it: cut, with its full length.
#[derive(Debug, Clone)]
pub struct ShownText {
    pub text: String,
    pub chars: u64,
    pub cut: bool,
}

impl ShownText {
    pub fn of(record: &Record, max_chars: usize) -> ShownText {
        let (text, chars, cut) = cut_text(&record.body.as_document().display_text(), max_chars);
        ShownText { text, chars, cut }
    }

    fn missing(what: &str) -> ShownText {
        ShownText { text: what.to_string(), chars: 0, cut: false }
    }
}

/// A cluster chosen for the page, before its texts are read: members by key (a position or
/// an id), the kept one first.
#[derive(Debug, Clone)]
pub struct Chosen<K> {
    pub number: u64,
    pub size: u64,
    pub weakest: f64,
    pub sampled: bool,
    pub keep: K,
    /// The others shown, least similar to the kept one first.
    pub others: Vec<(K, f64)>,
    pub hidden: u64,
}

impl<K: Copy + Eq + std::hash::Hash> Chosen<K> {
    /// The cluster as the page shows it, with the texts read.
    pub fn view(
        &self,
        ids: impl Fn(K) -> String,
        texts: &HashMap<K, ShownText>,
        missing: &str,
    ) -> ClusterView {
        let member = |k: K, similarity: Option<f64>| {
            let t = texts.get(&k).cloned().unwrap_or_else(|| ShownText::missing(missing));
            MemberView {
                id: display_id(&ids(k)),
                kept: similarity.is_none(),
                similarity,
                chars: t.chars,
                text: t.text,
                cut: t.cut,
            }
        };
        let mut members = vec![member(self.keep, None)];
        members.extend(self.others.iter().map(|&(k, s)| member(k, Some(s))));
        ClusterView {
            number: self.number,
            size: self.size,
            weakest: self.weakest,
            sampled: self.sampled,
            hidden: self.hidden,
            members,
        }
    }
}

/// Reads every source again, calls `each` with each record (and its source's index), and
/// checks each source's bytes against `expected` (the digests of an earlier pass), if given.
/// Bad records are passed over when `--skip-bad` allowed them the first time.
pub fn read_again(
    sources: &[Source],
    input: &ReadOptions,
    expected: Option<&[Option<SourceDigest>]>,
    mut each: impl FnMut(u32, Record),
) -> Result<Vec<SourceDigest>, Failure> {
    let mut digests = Vec::with_capacity(sources.len());
    for (i, source) in sources.iter().enumerate() {
        let mut fatal = None;
        let (_, digest) = read_source(source, input, &mut |item| match item {
            Ok(record) => {
                each(i as u32, record);
                ControlFlow::Continue(())
            }
            Err(e) if input.skip_bad && e.skippable() => ControlFlow::Continue(()),
            Err(e) => {
                fatal = Some(e);
                ControlFlow::Break(())
            }
        });
        if let Some(e) = fatal {
            return Err(Failure::Runtime(anyhow!("{e}\n(no report was written)")));
        }
        if let Some(expected) = expected {
            if expected.get(i).copied().flatten() != Some(digest) {
                return Err(Failure::Runtime(anyhow!(
                    "{}: the input changed between two reads (its bytes differ); no report was \
                     written",
                    source.name()
                )));
            }
        }
        digests.push(digest);
    }
    Ok(digests)
}

/// Options of `neardup report`.
#[derive(Debug, Args)]
#[command(
    after_help = "Builds the HTML report of a dedup run from its outputs and its input, the page
`neardup dedup --report` writes: the summary, the histogram of the pairs' similarities (from
--pairs) with the threshold marked, the distribution of cluster sizes, and the clusters, largest
first, each with its kept document, its members' similarity to it, and any two members side by
side with their shared passages marked. One self-contained HTML file: no network, no CDN.

Give the run's input (the same files and the same input options: --text-field, --id-field, ...)
and its --clusters file; --pairs adds the histogram. Similarities to the kept document are
computed again with the pipeline and measure given here (by default those of `dedup`: give the
run's --preset, --method, --verify and --hamming if it used others). Only the chosen clusters'
documents are sketched, and only the shown ones' texts are kept: memory follows the clusters
shown, not the corpus.

Example:
  neardup dedup corpus.jsonl --clusters clusters.jsonl --pairs pairs.jsonl -o kept.jsonl
  neardup report corpus.jsonl --clusters clusters.jsonl --pairs pairs.jsonl -o report.html"
)]
pub struct ReportArgs {
    /// The run's input: JSONL files (.jsonl, .gz, .zst), directories, or `-`.
    #[arg(value_name = "INPUT", required = true)]
    inputs: Vec<PathBuf>,

    /// The run's --clusters output.
    #[arg(long, value_name = "FILE")]
    clusters: PathBuf,

    /// The run's --pairs output, for the histogram of similarities.
    #[arg(long, value_name = "FILE")]
    pairs: Option<PathBuf>,

    /// Write the report here (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: PathBuf,

    #[arg(long, default_value_t = neardup::DEFAULT_THRESHOLD, value_name = "T")]
    threshold: f64,

    #[arg(long, value_name = "METHOD")]
    method: Option<String>,

    #[arg(long, value_name = "K")]
    hamming: Option<u32>,

    #[arg(long, value_name = "MEASURE")]
    verify: Option<String>,

    /// No summary on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,

    #[command(flatten)]
    limits: LimitArgs,

    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    pipeline: PipelineArgs,
}

/// One line of a --clusters file.
#[derive(Deserialize)]
struct ClusterLine<'a> {
    #[serde(borrow)]
    cluster: Vec<&'a RawValue>,
    #[serde(borrow)]
    keep: &'a RawValue,
    similarity: Option<f64>,
}

/// One line of a --pairs file.
#[derive(Deserialize)]
struct PairLine<'a> {
    #[serde(borrow)]
    a: &'a RawValue,
    #[serde(borrow)]
    b: &'a RawValue,
    similarity: f64,
}

/// A similarity as a run writes it: a number in [0, 1].
fn check_similarity(s: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&s) {
        Ok(s)
    } else {
        Err(format!("similarity {s} is not in [0, 1]; give the run's own output"))
    }
}

/// An id's key in the sets below (its JSON text as written, hashed: ids are kept as the run
/// wrote them, so `"7"` and `7` differ, as in `dedup`).
fn id_key(raw: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(raw.as_bytes())
}

/// A --clusters or --pairs file: a path (compressed or not, as any input), or standard input
/// copied to a temporary file, since each is read more than once.
struct LineFile {
    option: &'static str,
    source: Source,
}

impl LineFile {
    fn new(option: &'static str, path: &Path) -> Result<LineFile, Failure> {
        let source = if path.as_os_str() == "-" {
            Source::Spooled(neardup_corpus::read::spool_stdin().map_err(|e| {
                Failure::Runtime(anyhow!(
                    "{option} -: cannot read standard input: {}",
                    io_message(&e)
                ))
            })?)
        } else {
            Source::File(path.to_path_buf())
        };
        Ok(LineFile { option, source })
    }

    fn name(&self) -> String {
        self.source.name()
    }
}

/// Reads `file` line by line; `each(line_number, line)` (blank lines skipped).
fn each_line(
    file: &LineFile,
    mut each: impl FnMut(u64, &str) -> Result<(), String>,
) -> Result<(), Failure> {
    let (option, name) = (file.option, file.name());
    let place = |n: u64| format!("{option} {name}:{n}");
    let mut reader = neardup_corpus::read::open(&file.source)
        .map_err(|e| Failure::Runtime(anyhow!("{option} {name}: {}", io_message(&e))))?
        .reader;
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| Failure::Runtime(anyhow!("{}: {}", place(n + 1), io_message(&e))))?;
        if read == 0 {
            return Ok(());
        }
        n += 1;
        let line = std::str::from_utf8(&buf).map_err(|e| {
            Failure::Runtime(anyhow!(
                "{}: invalid UTF-8 at byte {} of the line",
                place(n),
                e.valid_up_to()
            ))
        })?;
        let line = line.strip_prefix('\u{feff}').unwrap_or(line).trim();
        if line.is_empty() {
            continue;
        }
        each(n, line).map_err(|m| Failure::Runtime(anyhow!("{}: {m}", place(n))))?;
    }
}

fn parse_cluster(line: &str) -> Result<ClusterLine<'_>, String> {
    let c: ClusterLine<'_> = serde_json::from_str(line).map_err(|e| {
        format!(
            "not a cluster line ({{\"cluster\": [ids], \"keep\": id, ...}}): {e}; give the \
             run's --clusters output"
        )
    })?;
    if c.cluster.len() < 2 {
        return Err(format!(
            "a cluster of {} document(s); a cluster has two or more",
            c.cluster.len()
        ));
    }
    if !c.cluster.iter().any(|m| m.get() == c.keep.get()) {
        return Err(format!("the kept document {} is not a member of the cluster", c.keep.get()));
    }
    if let Some(s) = c.similarity {
        check_similarity(s)?;
    }
    Ok(c)
}

pub fn run(args: ReportArgs) -> Result<(), Failure> {
    let started = Instant::now();
    let limits = args.limits.limits();
    let pipeline = build_pipeline(&args.pipeline)?;
    // The run's settings, read by the same rules as `dedup` reads them.
    let config = SearchSpec {
        method: choice("--method", args.method.as_deref())?,
        threshold: Some(args.threshold),
        hamming: args.hamming,
        verify: choice("--verify", args.verify.as_deref())?,
        ..SearchSpec::default()
    }
    .resolve()
    .map_err(search_failure)?;
    let dedup = Dedup::new(&pipeline, config).map_err(|e| Failure::Usage(e.into()))?;

    let input = args.input.read_options_or(neardup_corpus::read::Format::Jsonl);
    let sources = expand_inputs(&args.inputs, &input, |e| {
        eprintln!("neardup: {}: {e}", if e.is_notice() { "note" } else { "skipped" });
    })?;
    let mut inputs: Vec<Input> = sources
        .iter()
        .filter_map(|s| s.path().map(|p| Input { what: "input".into(), path: p.to_path_buf() }))
        .collect();
    let stdin_uses = args.inputs.iter().filter(|p| p.as_os_str() == "-").count()
        + usize::from(args.clusters.as_os_str() == "-")
        + args.pairs.iter().filter(|p| p.as_os_str() == "-").count();
    if stdin_uses > 1 {
        return Err(Failure::Usage(anyhow!(
            "standard input (-) is named more than once among the input, --clusters and \
             --pairs: it can be read once"
        )));
    }
    for (what, path) in [("--clusters", Some(&args.clusters)), ("--pairs", args.pairs.as_ref())] {
        if let Some(path) = path.filter(|p| p.as_os_str() != "-") {
            inputs.push(Input { what: what.into(), path: path.clone() });
        }
    }
    inputs.extend(args.pipeline.files().into_iter().map(|(what, path)| Input { what, path }));
    check_conflicts(&inputs, &[Output { option: "--output", path: args.output.clone() }])?;
    let mut out = OutputFile::create("--output", &args.output)?;

    let clusters_file = LineFile::new("--clusters", &args.clusters)?;
    let pairs_file = args.pairs.as_deref().map(|p| LineFile::new("--pairs", p)).transpose()?;

    // The clusters file, twice: sizes, sample keys and every member's cluster first (a document
    // in two clusters is refused), then the chosen clusters' members.
    let (mut sizes, mut keys, mut weakest) = (Vec::new(), Vec::new(), Vec::new());
    let mut cluster_of: HashMap<u64, u32> = HashMap::new();
    each_line(&clusters_file, |_, line| {
        let c = parse_cluster(line)?;
        let number = sizes.len() as u32;
        for m in &c.cluster {
            if let Some(other) = cluster_of.insert(id_key(m.get()), number) {
                return Err(if other == number {
                    format!("the document {} is listed twice in the cluster", m.get())
                } else {
                    format!(
                        "the document {} is also in cluster {}: a document is in one cluster",
                        m.get(),
                        other + 1
                    )
                });
            }
        }
        sizes.push(c.cluster.len() as u64);
        keys.push(sample_key(c.keep.get()));
        weakest.push(c.similarity.unwrap_or(f64::NAN));
        Ok(())
    })?;
    let selection = select_clusters(&sizes, &keys, limits);
    let mut chosen_at: HashMap<usize, (usize, bool)> = HashMap::new();
    for (slot, &(cluster, sampled)) in selection.iter().enumerate() {
        chosen_at.insert(cluster, (slot, sampled));
    }
    // Per chosen cluster: (kept id, member ids).
    let mut members: Vec<(String, Vec<String>)> =
        vec![(String::new(), Vec::new()); selection.len()];
    let mut index = 0usize;
    each_line(&clusters_file, |_, line| {
        if let Some(&(slot, _)) = chosen_at.get(&index) {
            let c = parse_cluster(line)?;
            members[slot] =
                (c.keep.get().to_string(), c.cluster.iter().map(|m| m.get().to_string()).collect());
        }
        index += 1;
        Ok(())
    })?;
    if index != sizes.len() {
        return Err(Failure::Runtime(anyhow!(
            "--clusters {}: the file changed while it was read",
            clusters_file.name()
        )));
    }

    let mut report = Report::new(&input_title(&args.inputs), limits);
    report.threshold = args.threshold;
    report.measure = measure_name(dedup.verification()).to_string();
    for &s in &sizes {
        report.add_cluster_size(s);
    }
    let mut pair_count = None;
    match &pairs_file {
        Some(file) => {
            let mut n = 0u64;
            each_line(file, |_, line| {
                let p: PairLine<'_> = serde_json::from_str(line).map_err(|e| {
                    format!(
                        "not a pair line ({{\"a\": id, \"b\": id, \"similarity\": s}}): {e}; \
                         give the run's --pairs output"
                    )
                })?;
                let similarity = check_similarity(p.similarity)?;
                let (a, b) = (p.a.get(), p.b.get());
                if a == b {
                    return Err(format!("a pair of the document {a} with itself"));
                }
                // A pair at or above the threshold is within one cluster (and so its ends are
                // documents of the input, checked below with every member).
                match (cluster_of.get(&id_key(a)), cluster_of.get(&id_key(b))) {
                    (Some(x), Some(y)) if x == y => {}
                    (Some(x), Some(y)) => {
                        return Err(format!(
                            "{a} and {b} are in different clusters ({} and {}); give the pairs \
                             of the run that wrote the clusters",
                            x + 1,
                            y + 1
                        ))
                    }
                    (None, _) | (_, None) => {
                        let missing = if cluster_of.contains_key(&id_key(a)) { b } else { a };
                        return Err(format!(
                            "the document {missing} is in no cluster; give the pairs of the run \
                             that wrote the clusters"
                        ));
                    }
                }
                report.add_pair(similarity, 1);
                n += 1;
                Ok(())
            })?;
            pair_count = Some(n);
        }
        None => {
            report.pair_bins = None;
            report.pairs_note = "Not known: give the run's --pairs output to `neardup report` \
                                 to see them."
                .into();
        }
    }

    // First read of the input: every document counted, the chosen clusters' members sketched.
    let needed: HashSet<&str> =
        members.iter().flat_map(|(_, m)| m.iter().map(String::as_str)).collect();
    let mut sketches: HashMap<String, DocSketch> = HashMap::new();
    let (mut documents, mut bytes) = (0u64, 0u64);
    let mut scratch = Scratch::default();
    // Every member of every cluster must be a document of the input.
    let mut found: HashSet<u64> = HashSet::with_capacity(cluster_of.len());
    let digests = read_again(&sources, &input, None, |_, record| {
        documents += 1;
        bytes += record.body.len() as u64;
        let id = record.id.get();
        let key = id_key(id);
        if cluster_of.contains_key(&key) {
            found.insert(key);
        }
        if needed.contains(id) && !sketches.contains_key(id) {
            let sketch = dedup.sketch(record.body.as_document(), record.body.len(), &mut scratch);
            sketches.insert(id.to_string(), sketch);
        }
    })?;
    let digests: Vec<Option<SourceDigest>> = digests.into_iter().map(Some).collect();
    if found.len() != cluster_of.len() {
        // Name the first missing one, with its line.
        let mut missing = None;
        each_line(&clusters_file, |n, line| {
            if missing.is_none() {
                let c = parse_cluster(line)?;
                if let Some(m) = c.cluster.iter().find(|m| !found.contains(&id_key(m.get()))) {
                    missing = Some((n, m.get().to_string()));
                }
            }
            Ok(())
        })?;
        let (line, id) = missing.unwrap_or((0, "?".into()));
        return Err(Failure::Runtime(anyhow!(
            "--clusters {}:{line}: the document {id} is not in the input ({} of the clusters' \
             documents are not); give the input of the run that wrote the clusters, with the \
             same input options",
            clusters_file.name(),
            cluster_of.len() - found.len()
        )));
    }

    // The members shown: the kept one, then the least similar to it.
    let mut chosen: Vec<Chosen<usize>> = Vec::with_capacity(selection.len());
    let mut names: Vec<String> = Vec::new();
    let mut key_of: HashMap<String, usize> = HashMap::new();
    let mut key = |id: &str, names: &mut Vec<String>| {
        *key_of.entry(id.to_string()).or_insert_with(|| {
            names.push(id.to_string());
            names.len() - 1
        })
    };
    for (slot, &(cluster, sampled)) in selection.iter().enumerate() {
        let (keep, ids) = &members[slot];
        let sketch_of = |id: &str| {
            sketches.get(id).ok_or_else(|| {
                Failure::Runtime(anyhow!(
                    "--clusters {}:{}: the document {id} is not in the input (give the input \
                     of the run that wrote the clusters, with the same input options)",
                    args.clusters.display(),
                    cluster + 1
                ))
            })
        };
        let kept = sketch_of(keep)?;
        let mut others = Vec::with_capacity(ids.len());
        for id in ids.iter().filter(|m| *m != keep) {
            others.push((key(id, &mut names), dedup.similarity(kept, sketch_of(id)?)));
        }
        let (others, hidden) = choose_members(others, limits);
        chosen.push(Chosen {
            number: cluster as u64,
            size: sizes[cluster],
            weakest: weakest[cluster],
            sampled,
            keep: key(keep, &mut names),
            others,
            hidden,
        });
    }
    drop(sketches);

    // Second read: the shown documents' texts.
    let wanted: HashSet<usize> = chosen
        .iter()
        .flat_map(|c| std::iter::once(c.keep).chain(c.others.iter().map(|o| o.0)))
        .collect();
    let mut texts: HashMap<usize, ShownText> = HashMap::new();
    read_again(&sources, &input, Some(&digests), |_, record| {
        if let Some(&k) = key_of.get(record.id.get()) {
            if wanted.contains(&k) && !texts.contains_key(&k) {
                texts.insert(k, ShownText::of(&record, limits.text_chars));
            }
        }
    })?;
    report.clusters = chosen.iter().map(|c| c.view(|k| names[k].clone(), &texts, "")).collect();

    let dropped: u64 = sizes.iter().map(|s| s - 1).sum();
    let in_clusters: u64 = sizes.iter().sum();
    let n = thousands;
    report.subtitle = format!(
        "neardup report from {}{}",
        clusters_file.name(),
        pairs_file.as_ref().map(|p| format!(" and {}", p.name())).unwrap_or_default()
    );
    report.summary = vec![
        ("documents".into(), format!("{} ({:.1} MB)", n(documents), bytes as f64 / 1e6)),
        (
            "clusters".into(),
            format!("{} ({} documents in them)", n(sizes.len() as u64), n(in_clusters)),
        ),
        ("dropped".into(), n(dropped)),
        ("kept".into(), n(documents.saturating_sub(dropped))),
        (
            "pairs at or above the threshold".into(),
            pair_count.map_or_else(|| "not given (--pairs)".into(), n),
        ),
        ("threshold".into(), format!("{}", args.threshold)),
        ("similarity to the kept document".into(), measure_name(dedup.verification()).into()),
        ("pipeline".into(), pipeline.id().to_string()),
        (
            "report built in".into(),
            format!(
                "{:.2} s, peak memory {}",
                started.elapsed().as_secs_f64(),
                peak_memory().unwrap_or_else(|| "unknown".into())
            ),
        ),
    ];
    out.write_bytes(report.render().as_bytes())?;
    out.commit()?;
    if !args.quiet {
        eprintln!(
            "neardup report: {} clusters of {} shown ({} documents read), written to {}",
            selection.len(),
            sizes.len(),
            documents,
            args.output.display()
        );
    }
    Ok(())
}

/// The inputs, named for a title.
pub fn input_title(inputs: &[PathBuf]) -> String {
    let names: Vec<String> =
        inputs
            .iter()
            .map(|p| {
                if p.as_os_str() == "-" {
                    "standard input".into()
                } else {
                    p.display().to_string()
                }
            })
            .collect();
    match names.len() {
        0..=3 => names.join(", "),
        n => format!("{}, {} and {} more", names[0], names[1], n - 2),
    }
}
