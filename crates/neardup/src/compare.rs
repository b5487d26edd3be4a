//! Two documents measured every way at once.

use neardup_sketch::{cosine, jaccard_sorted, weighted_jaccard, SketchError};
use serde::Serialize;

use crate::{Document, Pipeline, Scratch, Sketches};

/// Edit similarity is quadratic in length; past this many characters in either text it is not
/// computed (reported as `None`).
pub const EDIT_SIMILARITY_MAX_CHARS: usize = 10_000;

/// SimHash distance of two documents.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SimHashComparison {
    /// Number of differing bits (all of them when either document is empty).
    pub hamming: u32,
    /// `1 - hamming / bits`.
    pub similarity: f64,
    /// Fingerprint width.
    pub bits: u32,
}

/// Every measure `neardup compare` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// SimHash distance.
    pub simhash: SimHashComparison,
    /// MinHash estimate of the Jaccard similarity of the feature sets.
    pub jaccard_estimate: f64,
    /// Exact Jaccard similarity of the feature sets.
    pub jaccard_exact: f64,
    /// Weighted Jaccard of the weighted feature vectors.
    pub weighted_jaccard: f64,
    /// Cosine similarity of the TF-IDF vectors.
    pub cosine: f64,
    /// `1 - Levenshtein / max length` over the normalized texts' characters; `None` when either
    /// text is longer than [`EDIT_SIMILARITY_MAX_CHARS`].
    pub edit_similarity: Option<f64>,
    /// Distinct features of each document.
    pub features: [usize; 2],
}

/// Compares `a` and `b` with `pipeline`.
pub fn compare(
    pipeline: &Pipeline,
    a: Document<'_>,
    b: Document<'_>,
) -> Result<Comparison, SketchError> {
    let mut scratch = Scratch::default();
    let fa = pipeline.fingerprint(a, &mut scratch, Sketches::MINHASH);
    let fb = pipeline.fingerprint(b, &mut scratch, Sketches::MINHASH);
    let (ma, mb) = (fa.minhash.as_ref(), fb.minhash.as_ref());
    let jaccard_estimate = match (ma, mb) {
        (Some(x), Some(y)) => x.jaccard(y)?,
        _ => 0.0,
    };
    let va = pipeline.feature_vector(a, &mut scratch);
    let vb = pipeline.feature_vector(b, &mut scratch);
    let sa: Vec<u64> = va.hashes().collect();
    let sb: Vec<u64> = vb.hashes().collect();
    let ta = pipeline.tfidf_vector(a, &mut scratch);
    let tb = pipeline.tfidf_vector(b, &mut scratch);
    // An empty document (no features) is similar to nothing, itself included, in every
    // measure: its SimHash is all zeros, which is not evidence of sameness (as in search and
    // dedup, where it never matches).
    let empty = fa.features == 0 || fb.features == 0;
    let bits = fa.simhash.bits().get();
    let simhash = if empty {
        SimHashComparison { hamming: bits, similarity: 0.0, bits }
    } else {
        SimHashComparison {
            hamming: fa.simhash.hamming(&fb.simhash)?,
            similarity: fa.simhash.similarity(&fb.simhash)?,
            bits,
        }
    };
    Ok(Comparison {
        simhash,
        jaccard_estimate,
        jaccard_exact: jaccard_sorted(&sa, &sb),
        weighted_jaccard: weighted_jaccard(&va, &vb),
        cosine: cosine(&ta, &tb),
        edit_similarity: if empty { Some(0.0) } else { edit_similarity(pipeline, a, b) },
        features: [fa.features, fb.features],
    })
}

fn edit_similarity(pipeline: &Pipeline, a: Document<'_>, b: Document<'_>) -> Option<f64> {
    let normalizer = neardup_text::Normalizer::new(pipeline.spec().normalize);
    let text = |d: Document<'_>| match d {
        Document::Text(t) => normalizer.normalize(t).into_owned(),
        Document::Tokens(t) => t.join(" "),
    };
    let (ta, tb) = (text(a), text(b));
    if ta.chars().count() > EDIT_SIMILARITY_MAX_CHARS
        || tb.chars().count() > EDIT_SIMILARITY_MAX_CHARS
    {
        return None;
    }
    Some(strsim::normalized_levenshtein(&ta, &tb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PipelineSpec;

    #[test]
    fn identical_texts_are_identical_every_way() {
        let p = Pipeline::new(PipelineSpec::default()).expect("valid");
        let t = "The quick brown fox jumps over the lazy dog near the river bank today";
        let c = compare(&p, Document::Text(t), Document::Text(t)).expect("same pipeline");
        assert_eq!(c.simhash.hamming, 0);
        assert_eq!(c.jaccard_estimate, 1.0);
        assert_eq!(c.jaccard_exact, 1.0);
        assert!((c.cosine - 1.0).abs() < 1e-9);
        assert_eq!(c.edit_similarity, Some(1.0));
    }

    #[test]
    fn near_duplicates_score_between_unrelated_and_identical() {
        let p = Pipeline::new(PipelineSpec::preset("en-web").expect("preset")).expect("valid");
        let a = "The city council approved the new budget on Monday after a long debate about \
                 schools, roads and the public library.";
        let b = "The city council approved the new budget on Tuesday after a long debate about \
                 schools, roads and the public library.";
        let c =
            "Quantum chromodynamics describes the strong interaction between quarks and gluons.";
        let near = compare(&p, Document::Text(a), Document::Text(b)).expect("ok");
        let far = compare(&p, Document::Text(a), Document::Text(c)).expect("ok");
        assert!(near.jaccard_exact > 0.8 && far.jaccard_exact < 0.1);
        assert!(near.cosine > far.cosine);
        assert!(near.simhash.hamming < far.simhash.hamming);
    }

    #[test]
    fn empty_documents_are_similar_to_nothing() {
        let p = Pipeline::new(PipelineSpec::default()).expect("valid");
        for (a, b) in [("", ""), ("", "some words here"), ("!!! ...", "!!! ..."), ("  ", "")] {
            let c = compare(&p, Document::Text(a), Document::Text(b)).expect("ok");
            assert_eq!((c.jaccard_estimate, c.jaccard_exact, c.cosine), (0.0, 0.0, 0.0));
            // Regression: two empty texts compared at SimHash and edit similarity 1.0.
            assert_eq!(c.simhash.similarity, 0.0, "{a:?} {b:?}");
            assert_eq!(c.simhash.hamming, 64, "{a:?} {b:?}");
            assert_eq!(c.edit_similarity, Some(0.0), "{a:?} {b:?}");
        }
    }
}
