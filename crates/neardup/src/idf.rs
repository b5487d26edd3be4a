//! Learning IDF values from a corpus (`neardup idf build`).

use std::collections::HashMap;
use std::io::{self, Write};

/// Counts document frequencies of features and writes an idf file in jieba's format.
///
/// idf(f) = ln(N / df(f)), natural log as jieba's tables. Lines are sorted by feature so the
/// output is reproducible.
#[derive(Debug, Default)]
pub struct IdfBuilder {
    df: HashMap<String, u64>,
    seen: HashMap<String, ()>,
    documents: u64,
}

impl IdfBuilder {
    /// An empty builder.
    pub fn new() -> IdfBuilder {
        IdfBuilder::default()
    }

    /// Starts a document.
    pub fn begin_document(&mut self) {
        self.seen.clear();
        self.documents += 1;
    }

    /// Records one feature of the current document (repeats within a document count once).
    pub fn add(&mut self, feature: &str) {
        if self.seen.contains_key(feature) {
            return;
        }
        self.seen.insert(feature.to_string(), ());
        *self.df.entry(feature.to_string()).or_insert(0) += 1;
    }

    /// The number of documents seen.
    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// The number of distinct features seen.
    pub fn features(&self) -> usize {
        self.df.len()
    }

    /// Writes `feature idf` lines for features seen in at least `min_df` documents. Returns the
    /// number of lines written.
    pub fn write<W: Write>(&self, mut out: W, min_df: u64) -> io::Result<usize> {
        let n = self.documents.max(1) as f64;
        let mut rows: Vec<(&String, u64)> =
            self.df.iter().filter(|(_, &df)| df >= min_df).map(|(f, &df)| (f, df)).collect();
        rows.sort_unstable();
        for (feature, df) in &rows {
            writeln!(out, "{feature} {:.6}", (n / *df as f64).ln())?;
        }
        out.flush()?;
        Ok(rows.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_documents_not_occurrences() {
        let mut b = IdfBuilder::new();
        for doc in [&["a", "b", "a"][..], &["a"], &["c"], &["a", "c"]] {
            b.begin_document();
            doc.iter().for_each(|f| b.add(f));
        }
        let mut out = Vec::new();
        assert_eq!(b.write(&mut out, 1).expect("in memory"), 3);
        let text = String::from_utf8(out).expect("utf8");
        // N = 4: a in 3 docs, b in 1, c in 2.
        assert_eq!(
            text,
            format!("a {:.6}\nb {:.6}\nc {:.6}\n", (4f64 / 3.0).ln(), 4f64.ln(), 2f64.ln())
        );
        let mut pruned = Vec::new();
        assert_eq!(b.write(&mut pruned, 2).expect("in memory"), 2);
    }
}
