//! Exact similarity measures, used to verify candidates and by `compare`.

use crate::Feature;

/// A sparse vector: `(feature hash, weight)` pairs sorted by hash, each hash once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseVector {
    entries: Vec<(u64, f64)>,
}

impl SparseVector {
    /// Builds a vector from features in any order; weights of equal hashes are summed.
    pub fn from_features(features: &[Feature]) -> SparseVector {
        SparseVector::from_entries(features.iter().map(|f| (f.hash, f.weight)).collect())
    }

    /// Builds a vector from `(hash, weight)` pairs in any order; weights of equal hashes are
    /// summed.
    pub fn from_entries(mut entries: Vec<(u64, f64)>) -> SparseVector {
        entries.sort_unstable_by_key(|e| e.0);
        entries.dedup_by(|later, first| {
            if later.0 == first.0 {
                first.1 += later.1;
                true
            } else {
                false
            }
        });
        SparseVector { entries }
    }

    /// The `(hash, weight)` pairs, sorted by hash.
    pub fn entries(&self) -> &[(u64, f64)] {
        &self.entries
    }

    /// The number of distinct features.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no features.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The distinct hashes, sorted.
    pub fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries.iter().map(|e| e.0)
    }
}

/// Walks two sorted sequences, calling `visit(left, right)` once per key with the weight on
/// each side (`0.0` where the key is absent).
fn merge_walk(a: &[(u64, f64)], b: &[(u64, f64)], mut visit: impl FnMut(f64, f64)) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                visit(a[i].1, 0.0);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                visit(0.0, b[j].1);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                visit(a[i].1, b[j].1);
                i += 1;
                j += 1;
            }
        }
    }
    a[i..].iter().for_each(|e| visit(e.1, 0.0));
    b[j..].iter().for_each(|e| visit(0.0, e.1));
}

/// The Jaccard similarity `|A ∩ B| / |A ∪ B|` of two sets given as sorted, deduplicated slices.
/// Two empty sets have similarity 0: an empty document is a near-duplicate of nothing.
pub fn jaccard_sorted<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// The weighted (Ruzicka) Jaccard similarity `Σ min(a, b) / Σ max(a, b)` over non-negative
/// weights; 0 when both are empty.
pub fn weighted_jaccard(a: &SparseVector, b: &SparseVector) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    merge_walk(&a.entries, &b.entries, |x, y| {
        num += x.min(y);
        den += x.max(y);
    });
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

/// The cosine similarity of two sparse vectors; 0 when either has zero norm.
pub fn cosine(a: &SparseVector, b: &SparseVector) -> f64 {
    let mut dot = 0.0f64;
    merge_walk(&a.entries, &b.entries, |x, y| dot += x * y);
    let na: f64 = a.entries.iter().map(|e| e.1 * e.1).sum::<f64>().sqrt();
    let nb: f64 = b.entries.iter().map(|e| e.1 * e.1).sum::<f64>().sqrt();
    if na > 0.0 && nb > 0.0 {
        // Rounding can push a self-similarity a hair over 1.
        (dot / (na * nb)).min(1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(pairs: &[(u64, f64)]) -> SparseVector {
        let fs: Vec<Feature> =
            pairs.iter().map(|&(hash, weight)| Feature { hash, hash_hi: 0, weight }).collect();
        SparseVector::from_features(&fs)
    }

    #[test]
    fn jaccard_basics() {
        assert_eq!(jaccard_sorted(&[1, 2, 3], &[2, 3, 4]), 0.5);
        assert_eq!(jaccard_sorted::<u64>(&[], &[]), 0.0);
        assert_eq!(jaccard_sorted(&[1], &[]), 0.0);
        assert_eq!(jaccard_sorted(&[5, 9], &[5, 9]), 1.0);
    }

    #[test]
    fn merge_sums_duplicates() {
        let a = v(&[(3, 1.0), (1, 2.0), (3, 0.5)]);
        assert_eq!(a.entries(), &[(1, 2.0), (3, 1.5)]);
    }

    #[test]
    fn cosine_and_weighted() {
        let a = v(&[(1, 1.0), (2, 1.0)]);
        let b = v(&[(2, 1.0), (3, 1.0)]);
        assert!((cosine(&a, &b) - 0.5).abs() < 1e-12);
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-12);
        assert_eq!(cosine(&a, &SparseVector::default()), 0.0);
        let c = v(&[(1, 2.0), (2, 1.0)]);
        // min: 1 + 1 = 2; max: 2 + 1 = 3
        assert!((weighted_jaccard(&a, &c) - 2.0 / 3.0).abs() < 1e-12);
    }
}
