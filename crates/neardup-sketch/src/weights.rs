//! Inverse document frequencies.
//!
//! The file format is jieba's: one `feature idf` pair per line. The idf is the last
//! whitespace-separated field, and everything before it (trimmed) is the feature, so multi-word
//! features such as word shingles can be stored too. Empty lines and lines starting with `#` are
//! skipped. Features are stored by hash, so the table must be built with the hasher the pipeline
//! uses. Features the table does not know get the mean idf of the table, as cppjieba does.

use std::collections::HashMap;
use std::fmt;

use crate::FeatureHasher;

/// A malformed line in an idf file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum IdfError {
    /// A line had no `feature idf` pair.
    Malformed {
        /// 1-based line number.
        line: usize,
        /// The offending line.
        text: String,
    },
    /// The idf was not a finite number at least 0.
    BadValue {
        /// 1-based line number.
        line: usize,
        /// The value as written.
        value: String,
    },
    /// The file had no entries.
    Empty,
}

impl fmt::Display for IdfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdfError::Malformed { line, text } => {
                write!(f, "line {line}: expected \"feature idf\", found {text:?}")
            }
            IdfError::BadValue { line, value } => {
                write!(f, "line {line}: idf {value:?} is not a finite number at least 0")
            }
            IdfError::Empty => write!(f, "the idf table has no entries"),
        }
    }
}

impl std::error::Error for IdfError {}

/// Feature hash -> idf, with the mean idf for unknown features.
#[derive(Debug, Clone)]
pub struct IdfTable {
    map: HashMap<u64, f64>,
    mean: f64,
}

impl IdfTable {
    /// Parses an idf file in jieba's format, hashing each feature with `hasher`.
    pub fn parse(text: &str, hasher: FeatureHasher) -> Result<IdfTable, IdfError> {
        let mut map = HashMap::new();
        let mut sum = 0.0;
        let mut count = 0usize;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (feature, value) = line
                .rsplit_once(char::is_whitespace)
                .map(|(f, v)| (f.trim_end(), v))
                .filter(|(f, _)| !f.is_empty())
                .ok_or_else(|| IdfError::Malformed { line: i + 1, text: raw.to_string() })?;
            let idf: f64 = value
                .parse()
                .ok()
                // log(N / df) is never negative; a negative weight would turn a shared feature
                // into evidence against similarity (weighted Jaccard 0 for "cat" vs "cat mat").
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| IdfError::BadValue { line: i + 1, value: value.to_string() })?;
            map.insert(hasher.hash64(feature.as_bytes()), idf);
            sum += idf;
            count += 1;
        }
        if count == 0 {
            return Err(IdfError::Empty);
        }
        Ok(IdfTable { map, mean: sum / count as f64 })
    }

    /// The idf of the feature with this hash, or the mean idf.
    #[inline]
    pub fn idf(&self, hash: u64) -> f64 {
        self.map.get(&hash).copied().unwrap_or(self.mean)
    }

    /// The idf used for unknown features: the mean over the file's lines.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The number of features in the table.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when the table is empty (never, for a parsed table).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_words_and_shingles() {
        let t =
            IdfTable::parse("劳动防护 13.9\nthe quick brown 2.0\n\n# note\n", FeatureHasher::Xxh3)
                .expect("valid");
        assert_eq!(t.len(), 2);
        assert_eq!(t.idf(FeatureHasher::Xxh3.hash64("劳动防护".as_bytes())), 13.9);
        assert_eq!(t.idf(FeatureHasher::Xxh3.hash64(b"the quick brown")), 2.0);
        assert!((t.mean() - 7.95).abs() < 1e-12);
        assert_eq!(t.idf(0), t.mean());
    }

    #[test]
    fn reports_line_of_bad_entries() {
        let err = IdfTable::parse("a 1.0\nb\n", FeatureHasher::Xxh3).expect_err("must fail");
        assert_eq!(err, IdfError::Malformed { line: 2, text: "b".into() });
        let err = IdfTable::parse("a 1.0\nb x\n", FeatureHasher::Xxh3).expect_err("must fail");
        assert_eq!(err, IdfError::BadValue { line: 2, value: "x".into() });
        // Regression: a negative idf was taken.
        for bad in ["-1.5", "-inf", "NaN", "inf"] {
            let text = format!("a 1.0\nb {bad}\n");
            let err = IdfTable::parse(&text, FeatureHasher::Xxh3).expect_err(bad);
            assert_eq!(err, IdfError::BadValue { line: 2, value: bad.into() });
        }
        IdfTable::parse("a 0\nb 0.0\n", FeatureHasher::Xxh3).expect("0 is a valid idf");
        assert_eq!(
            IdfTable::parse("\n", FeatureHasher::Xxh3).expect_err("must fail"),
            IdfError::Empty
        );
    }
}
