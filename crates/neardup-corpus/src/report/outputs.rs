//! `neardup report`: the report of a dedup run built from its outputs (`--clusters`, and
//! `--pairs` for the histogram) and its input, the page `neardup dedup --report` writes.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

use neardup::{Dedup, DocSketch, Scratch};
use neardup_web::report::{choose_members, select_clusters, Report, ReportLimits};
use neardup_web::thousands;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{input_title, measure_name, read_again, sample_key, Chosen, ShownText};
use crate::read::{expand_inputs, io_message, ReadOptions, Source, SourceDigest};
use crate::write::{check_conflicts, Input, Output, OutputFile};
use crate::CorpusError;

/// A report of a run from its outputs: what to read and where to write.
#[derive(Debug, Clone)]
pub struct ReportJob {
    /// The run's input.
    pub inputs: Vec<PathBuf>,
    /// The run's `--clusters` output (`-`: standard input).
    pub clusters: PathBuf,
    /// The run's `--pairs` output, for the histogram.
    pub pairs: Option<PathBuf>,
    /// Where the page goes (`-`: standard output).
    pub output: PathBuf,
    /// The run's threshold.
    pub threshold: f64,
    /// How much of the run the page shows.
    pub limits: ReportLimits,
    /// How the input is read (the run's options).
    pub read: ReadOptions,
    /// Other files the job reads (the pipeline's: stop words, a dictionary), by what they are:
    /// the output may be none of them.
    pub files: Vec<(String, PathBuf)>,
}

/// What a report shows.
#[derive(Debug, Clone, Copy)]
pub struct ReportOutcome {
    /// Clusters shown.
    pub shown: usize,
    /// Clusters of the run.
    pub clusters: usize,
    /// Documents read.
    pub documents: u64,
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
    fn new(option: &'static str, path: &Path) -> Result<LineFile, CorpusError> {
        let source = if path.as_os_str() == "-" {
            Source::Spooled(crate::read::spool_stdin().map_err(|e| {
                CorpusError::Runtime(format!(
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
) -> Result<(), CorpusError> {
    let (option, name) = (file.option, file.name());
    let place = |n: u64| format!("{option} {name}:{n}");
    let mut reader = crate::read::open(&file.source)
        .map_err(|e| CorpusError::Runtime(format!("{option} {name}: {}", io_message(&e))))?
        .reader;
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| CorpusError::Runtime(format!("{}: {}", place(n + 1), io_message(&e))))?;
        if read == 0 {
            return Ok(());
        }
        n += 1;
        let line = std::str::from_utf8(&buf).map_err(|e| {
            CorpusError::Runtime(format!(
                "{}: invalid UTF-8 at byte {} of the line",
                place(n),
                e.valid_up_to()
            ))
        })?;
        let line = line.strip_prefix('\u{feff}').unwrap_or(line).trim();
        if line.is_empty() {
            continue;
        }
        each(n, line).map_err(|m| CorpusError::Runtime(format!("{}: {m}", place(n))))?;
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

impl ReportJob {
    /// Builds the page: `dedup` holds the run's pipeline and settings (the similarities to the
    /// kept document are computed again with them); `say` hears the inputs passed over.
    pub fn run(&self, dedup: &Dedup<'_>, say: &dyn Fn(&str)) -> Result<ReportOutcome, CorpusError> {
        let started = Instant::now();
        let limits = self.limits;
        let input = &self.read;
        let sources = expand_inputs(&self.inputs, input, |e| {
            say(&format!("neardup: {}: {e}", if e.is_notice() { "note" } else { "skipped" }));
        })?;
        let mut inputs: Vec<Input> = sources
            .iter()
            .filter_map(|s| s.path().map(|p| Input { what: "input".into(), path: p.to_path_buf() }))
            .collect();
        let stdin_uses = self.inputs.iter().filter(|p| p.as_os_str() == "-").count()
            + usize::from(self.clusters.as_os_str() == "-")
            + self.pairs.iter().filter(|p| p.as_os_str() == "-").count();
        if stdin_uses > 1 {
            return Err(CorpusError::Usage(
                "standard input (-) is named more than once among the input, --clusters and \
                 --pairs: it can be read once"
                    .into(),
            ));
        }
        for (what, path) in [("--clusters", Some(&self.clusters)), ("--pairs", self.pairs.as_ref())]
        {
            if let Some(path) = path.filter(|p| p.as_os_str() != "-") {
                inputs.push(Input { what: what.into(), path: path.clone() });
            }
        }
        inputs.extend(
            self.files.iter().map(|(what, path)| Input { what: what.clone(), path: path.clone() }),
        );
        check_conflicts(&inputs, &[Output { option: "--output", path: self.output.clone() }])?;
        let mut out = OutputFile::create("--output", &self.output)?;

        let clusters_file = LineFile::new("--clusters", &self.clusters)?;
        let pairs_file = self.pairs.as_deref().map(|p| LineFile::new("--pairs", p)).transpose()?;

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
                members[slot] = (
                    c.keep.get().to_string(),
                    c.cluster.iter().map(|m| m.get().to_string()).collect(),
                );
            }
            index += 1;
            Ok(())
        })?;
        if index != sizes.len() {
            return Err(CorpusError::Runtime(format!(
                "--clusters {}: the file changed while it was read",
                clusters_file.name()
            )));
        }

        let mut report = Report::new(&input_title(&self.inputs), limits);
        report.threshold = self.threshold;
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
        let digests = read_again(&sources, input, None, |_, record| {
            documents += 1;
            bytes += record.body.len() as u64;
            let id = record.id.get();
            let key = id_key(id);
            if cluster_of.contains_key(&key) {
                found.insert(key);
            }
            if needed.contains(id) && !sketches.contains_key(id) {
                let sketch =
                    dedup.sketch(record.body.as_document(), record.body.len(), &mut scratch);
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
            return Err(CorpusError::Runtime(format!(
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
                    CorpusError::Runtime(format!(
                        "--clusters {}:{}: the document {id} is not in the input (give the input \
                         of the run that wrote the clusters, with the same input options)",
                        self.clusters.display(),
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
        read_again(&sources, input, Some(&digests), |_, record| {
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
            ("threshold".into(), format!("{}", self.threshold)),
            ("similarity to the kept document".into(), measure_name(dedup.verification()).into()),
            ("pipeline".into(), dedup.pipeline().id().to_string()),
            (
                "report built in".into(),
                format!(
                    "{:.2} s, peak memory {}",
                    started.elapsed().as_secs_f64(),
                    crate::peak_memory().unwrap_or_else(|| "unknown".into())
                ),
            ),
        ];
        out.write_bytes(report.render().as_bytes())?;
        out.commit()?;
        Ok(ReportOutcome { shown: selection.len(), clusters: sizes.len(), documents })
    }
}
