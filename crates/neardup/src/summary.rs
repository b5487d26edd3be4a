//! `Summary`: the counts of a dedup run, one type for every surface. The CLI prints it (its
//! `Display`), Python returns it as a dict (its serde form), and Spark fills the same fields from
//! its aggregates and prints it the same way.

use serde::{Deserialize, Serialize};

use crate::{Dedup, DedupOutcome, Method, Verification};

/// What a dedup run did, as counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Summary {
    /// Documents of this run (not those of a saved index searched against).
    pub documents: u64,
    /// Their bytes of text, when counted.
    pub bytes: Option<u64>,
    /// Documents without features (near-duplicates of nothing).
    pub empty: u64,
    /// Clusters of two or more documents.
    pub clusters: u64,
    /// Documents dropped as near-duplicates.
    pub dropped: u64,
    /// Documents kept.
    pub kept: u64,
    /// Bytes of text of the dropped documents.
    pub bytes_dropped: u64,
    /// Dropped documents kept by a reviewer's decision (`--decisions`).
    pub kept_by_decision: u64,
    /// How candidates were found.
    pub method: Method,
    /// LSH bands (MinHash).
    pub bands: Option<usize>,
    /// LSH rows per band (MinHash).
    pub rows: Option<usize>,
    /// The probability that a pair at the threshold becomes a candidate (MinHash).
    pub candidate_probability: Option<f64>,
    /// The threshold.
    pub threshold: f64,
    /// The Hamming distance (SimHash).
    pub hamming: Option<u32>,
    /// How candidates were confirmed.
    pub verification: Verification,
    /// Candidate pairs checked.
    pub candidates: u64,
    /// Pairs verified between distinct texts.
    pub verified: u64,
    /// Documents merged into an earlier exact copy before the candidate search.
    pub exact_duplicates: u64,
    /// Candidate buckets over `max_bucket`, paired as stars (counted where the run counts them).
    pub capped_buckets: u64,
    /// Documents of a saved index searched against.
    pub against: u64,
    /// Bad records or files skipped.
    pub skipped: u64,
    /// Invalid UTF-8 sequences replaced.
    pub replaced: u64,
    /// Documents without a value of the keep rule's field (missing, `null` or NaN), under
    /// `max:FIELD` or `min:FIELD`.
    pub unranked: u64,
    /// Records repeating an earlier record's id.
    pub repeated_ids: u64,
    /// The first repeated ids, each once.
    pub repeated_id_examples: Vec<String>,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            documents: 0,
            bytes: None,
            empty: 0,
            clusters: 0,
            dropped: 0,
            kept: 0,
            bytes_dropped: 0,
            kept_by_decision: 0,
            method: Method::MinHash,
            bands: None,
            rows: None,
            candidate_probability: None,
            threshold: crate::DEFAULT_THRESHOLD,
            hamming: None,
            verification: Verification::Jaccard,
            candidates: 0,
            verified: 0,
            exact_duplicates: 0,
            capped_buckets: 0,
            against: 0,
            skipped: 0,
            replaced: 0,
            unranked: 0,
            repeated_ids: 0,
            repeated_id_examples: Vec::new(),
        }
    }
}

impl Summary {
    /// The counts of a finished run (documents `dedup.seen()..` are this run's); the caller adds
    /// what only it knows (bytes, skipped records, times).
    pub fn of(dedup: &Dedup<'_>, outcome: &DedupOutcome) -> Summary {
        let seen = dedup.seen();
        let config = dedup.config();
        let documents = (dedup.len() - seen) as u64;
        let dropped = outcome.kept[seen..].iter().filter(|k| !**k).count() as u64;
        let bytes_dropped =
            (seen..dedup.len()).filter(|&i| !outcome.kept[i]).map(|i| dedup.len_at(i)).sum();
        let (bands, rows) = dedup.banding().unzip();
        Summary {
            documents,
            empty: (seen..dedup.len()).filter(|&i| dedup.is_empty_at(i)).count() as u64,
            clusters: outcome.clusters.len() as u64,
            dropped,
            kept: documents - dropped,
            bytes_dropped,
            method: config.method,
            bands,
            rows,
            candidate_probability: dedup.candidate_probability(),
            threshold: config.threshold,
            hamming: (config.method != Method::MinHash).then_some(config.hamming),
            verification: dedup.verification(),
            candidates: outcome.candidates as u64,
            verified: outcome.edges.len() as u64,
            exact_duplicates: outcome.exact_duplicates as u64,
            against: seen as u64,
            unranked: dedup.unranked(),
            ..Summary::default()
        }
    }

    /// The library's counts out of another runner's summary (Spark's, which holds its own
    /// fields, such as each stage's seconds, beside these): each field `Summary` has is read (a
    /// `null` is not given; no bands, or zero, means no banding, rows included), the runner's
    /// own are left to it. A field of the wrong kind is refused by name.
    pub fn from_runner(value: &serde_json::Value) -> Result<Summary, serde_json::Error> {
        let Some(given) = value.as_object() else {
            return serde_json::from_value(value.clone());
        };
        let known = serde_json::to_value(Summary::default())?;
        let banded = given.get("bands").and_then(serde_json::Value::as_u64).unwrap_or(0) > 0;
        let fields: serde_json::Map<String, serde_json::Value> = given
            .iter()
            .filter(|(k, v)| known.get(k.as_str()).is_some() && !v.is_null())
            .filter(|(k, _)| banded || !matches!(k.as_str(), "bands" | "rows"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        serde_json::from_value(serde_json::Value::Object(fields))
    }

    /// The candidate search in words: "minhash, 16 bands x 6 rows, P(candidate) 0.9923 at
    /// Jaccard 0.8", "simhash, Hamming <= 3", or both.
    pub fn method_line(&self) -> String {
        let lsh = |b: usize, r: usize| {
            let p = self.candidate_probability.unwrap_or(0.0);
            format!("{b} bands x {r} rows, P(candidate) {p:.4} at Jaccard {}", self.threshold)
        };
        let hamming = self.hamming.unwrap_or(crate::DEFAULT_HAMMING);
        match (self.method, self.bands.zip(self.rows)) {
            (Method::MinHash, Some((b, r))) => format!("minhash, {}", lsh(b, r)),
            (Method::Both, Some((b, r))) => {
                format!("minhash ({}) and simhash (Hamming <= {hamming})", lsh(b, r))
            }
            _ => format!("simhash, Hamming <= {hamming}"),
        }
    }
}

/// A size for people: `512 bytes`, `12.3 KB`, `4.5 MB`, `1.2 GB` (powers of 1000).
pub fn bytes_text(n: u64) -> String {
    match n {
        n if n < 1_000 => count_of(n, "byte", "bytes"),
        n if n < 1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        n if n < 1_000_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n => format!("{:.1} GB", n as f64 / 1e9),
    }
}

/// `n` and the noun for it: `1 document`, `2 documents` (every surface's messages count so).
pub fn count_of(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The lines `neardup dedup` prints (each surface prints these).
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = self.bytes.map(|b| format!("{:.1} MB, ", b as f64 / 1e6)).unwrap_or_default();
        writeln!(
            f,
            "{} ({size}{} empty), {}, {} dropped, {} kept",
            count_of(self.documents, "document", "documents"),
            self.empty,
            count_of(self.clusters, "cluster", "clusters"),
            self.dropped,
            self.kept
        )?;
        if let Some(bytes) = self.bytes.filter(|b| *b > 0 && self.dropped > 0) {
            writeln!(
                f,
                "  removed {} of text ({:.1}% of the bytes)",
                bytes_text(self.bytes_dropped),
                100.0 * self.bytes_dropped as f64 / bytes as f64
            )?;
        }
        write!(
            f,
            "  {}, verified by {}: {}, {} verified between distinct texts, {}",
            self.method_line(),
            self.verification.name(),
            count_of(self.candidates, "candidate pair", "candidate pairs"),
            self.verified,
            count_of(self.exact_duplicates, "exact copy", "exact copies")
        )?;
        if self.capped_buckets > 0 {
            let buckets = count_of(self.capped_buckets, "bucket", "buckets");
            write!(f, "\n  {buckets} over max_bucket paired as stars (skew guard)")?;
        }
        if self.kept_by_decision > 0 {
            let docs = count_of(self.kept_by_decision, "document", "documents");
            write!(f, "\n  {docs} kept by review decisions (not duplicates)")?;
        }
        if self.against > 0 {
            let docs = count_of(self.against, "document", "documents");
            write!(f, "\n  against an index of {docs}")?;
        }
        if self.skipped > 0 {
            let bad = count_of(self.skipped, "bad record or file", "bad records or files");
            write!(f, "\n  skipped {bad}")?;
        }
        if self.replaced > 0 {
            let bad = count_of(self.replaced, "invalid UTF-8 sequence", "invalid UTF-8 sequences");
            write!(f, "\n  replaced {bad} (--lossy)")?;
        }
        if self.unranked > 0 {
            write!(
                f,
                "\n  {} without a value of the keep rule's field (missing, null or NaN): kept \
                 only where no member of the cluster has one",
                count_of(self.unranked, "document", "documents")
            )?;
        }
        if self.repeated_ids > 0 {
            write!(
                f,
                "\n  {} (records repeating an earlier record's id; \"7\" and 7 are one id), kept \
                 as separate documents, e.g. {}",
                count_of(self.repeated_ids, "duplicate id", "duplicate ids"),
                self.repeated_id_examples.join(", ")
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_prints_the_cli_lines_and_round_trips() {
        let s = Summary {
            documents: 3,
            bytes: Some(1_500_000),
            clusters: 1,
            dropped: 1,
            kept: 2,
            bytes_dropped: 500_000,
            bands: Some(16),
            rows: Some(6),
            candidate_probability: Some(0.99234),
            candidates: 2,
            verified: 1,
            repeated_ids: 1,
            repeated_id_examples: vec!["7".into()],
            ..Summary::default()
        };
        assert_eq!(
            s.to_string(),
            "3 documents (1.5 MB, 0 empty), 1 cluster, 1 dropped, 2 kept\n  removed 500.0 KB of \
             text (33.3% of the bytes)\n  minhash, 16 bands x \
             6 rows, P(candidate) 0.9923 at Jaccard 0.8, verified by jaccard: 2 candidate pairs, \
             1 verified between distinct texts, 0 exact copies\n  1 duplicate id (records \
             repeating an earlier record's id; \"7\" and 7 are one id), kept as separate \
             documents, e.g. 7"
        );
        let json = serde_json::to_string(&s).expect("serializes");
        assert_eq!(serde_json::from_str::<Summary>(&json).expect("parses"), s);
        let simhash = Summary { method: Method::SimHash, hamming: Some(4), ..Summary::default() };
        assert!(simhash.to_string().contains("  simhash, Hamming <= 4, verified by jaccard"));
    }

    #[test]
    fn a_runners_summary_gives_the_library_its_own_fields() {
        let s = Summary {
            documents: 4,
            clusters: 1,
            dropped: 1,
            kept: 3,
            method: Method::SimHash,
            hamming: Some(3),
            ..Summary::default()
        };
        let mut runner = serde_json::to_value(&s).expect("serializes");
        runner["stage_seconds"] = serde_json::json!({"sketch": 1.5});
        runner["shuffle_partitions"] = serde_json::json!(8);
        runner["bands"] = serde_json::json!(0);
        runner["rows"] = serde_json::json!(0);
        assert_eq!(Summary::from_runner(&runner).expect("reads"), s);
        runner["bands"] = serde_json::json!(16);
        runner["rows"] = serde_json::json!(6);
        let banded = Summary::from_runner(&runner).expect("reads");
        assert_eq!((banded.bands, banded.rows), (Some(16), Some(6)));
        runner["kept"] = serde_json::json!("three");
        let e = Summary::from_runner(&runner).expect_err("a count of text");
        assert!(e.to_string().contains("invalid type"), "{e}");
    }
}
