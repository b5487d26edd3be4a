//! The plan of a run: the configuration (data) resolved against a pipeline into the banding,
//! verification and widths that dedup and the live engine use.

use neardup_index::Banding;
use neardup_sketch::{optimal_params, params_for_recall};

use super::{DedupError, Method, SearchConfig, Verification};
use crate::Pipeline;

/// The banding, verification and widths a run uses, resolved from a config and a pipeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Plan {
    pub(crate) method: Method,
    pub(crate) verification: Verification,
    pub(crate) banding: Option<Banding>,
    /// The probability that a pair exactly at the threshold shares a band (MinHash).
    pub(crate) candidate_probability: Option<f64>,
    pub(crate) bits: u32,
    /// MinHash values per signature (the pipeline's `num_perm`).
    pub(crate) num_perm: usize,
}

impl Plan {
    /// True when a pair passes by its SimHash distance (at most `hamming` bits), whatever the
    /// threshold: Hamming verification, or the estimate of a SimHash-only search.
    pub(crate) fn verifies_by_bits(&self) -> bool {
        self.verification == Verification::Hamming
            || (self.verification == Verification::Estimate && self.method == Method::SimHash)
    }

    /// Validates `config` against `pipeline` and resolves its defaults.
    ///
    /// The banding is, in order: `config.banding` as given; the weighted-error choice of
    /// `config.weights` (datasketch's); the cheapest banding that reaches `config.recall`; and
    /// by default [`super::DEFAULT_RECALL`] under exact verification or datasketch's
    /// `(0.5, 0.5)` weights under [`Verification::Estimate`].
    pub(crate) fn resolve(pipeline: &Pipeline, config: &SearchConfig) -> Result<Plan, DedupError> {
        let invalid = |message: String| Err(DedupError::InvalidConfig { message });
        if !(config.threshold > 0.0 && config.threshold <= 1.0) {
            return invalid(format!("threshold {} is not in (0, 1]", config.threshold));
        }
        if let Some(r) = config.recall {
            if !(r > 0.0 && r < 1.0) {
                return invalid(format!("recall {r} is not in (0, 1)"));
            }
        }
        let bits = pipeline.simhash_bits().get();
        if config.hamming >= bits {
            return invalid(format!(
                "Hamming distance {} must be below the SimHash width {bits}",
                config.hamming
            ));
        }
        if config.method.uses_simhash() {
            // The permuted tables need k + 1 blocks, at most 16 (C(16, k) tables at most).
            neardup_index::HammingIndex::new(bits, config.hamming).map_err(|e| {
                DedupError::InvalidConfig {
                    message: format!("Hamming distance {}: {e}", config.hamming),
                }
            })?;
        }
        let verification = config.verification.unwrap_or(Verification::default_for(config.method));
        let num_perm = pipeline.spec().minhash.num_perm;
        let to_config =
            |e: neardup_sketch::SketchError| DedupError::InvalidConfig { message: e.to_string() };
        let (banding, candidate_probability) = match config.method {
            Method::SimHash => (None, None),
            Method::MinHash | Method::Both => {
                let (bands, rows) = match (config.banding, config.weights, config.recall) {
                    (Some(br), _, _) => br,
                    (None, Some(weights), _) => {
                        let p = optimal_params(config.threshold, num_perm, weights)
                            .map_err(to_config)?;
                        (p.bands, p.rows)
                    }
                    (None, None, Some(recall)) => {
                        let p = params_for_recall(config.threshold, num_perm, recall)
                            .map_err(to_config)?;
                        (p.bands, p.rows)
                    }
                    (None, None, None) if verification == Verification::Estimate => {
                        let p = optimal_params(config.threshold, num_perm, (0.5, 0.5))
                            .map_err(to_config)?;
                        (p.bands, p.rows)
                    }
                    (None, None, None) => {
                        let p =
                            params_for_recall(config.threshold, num_perm, super::DEFAULT_RECALL)
                                .map_err(to_config)?;
                        (p.bands, p.rows)
                    }
                };
                let banding = Banding::new(bands, rows)
                    .map_err(|e| DedupError::InvalidConfig { message: e.to_string() })?;
                banding.check(num_perm).map_err(|e| DedupError::InvalidConfig {
                    message: format!("{e} (num_perm {num_perm})"),
                })?;
                let p = 1.0 - (1.0 - config.threshold.powi(rows as i32)).powi(bands as i32);
                (Some(banding), Some(p))
            }
        };
        Ok(Plan {
            method: config.method,
            verification,
            banding,
            candidate_probability,
            bits,
            num_perm,
        })
    }

    /// How many MinHash values the plan reads: `bands x rows`, or every value when the
    /// signature itself is compared ([`Verification::Estimate`]).
    pub(crate) fn minhash_values(&self, num_perm: usize) -> usize {
        match (self.verification, self.banding) {
            (Verification::Estimate, _) | (_, None) => num_perm,
            (_, Some(b)) => b.bands() * b.rows(),
        }
    }

    /// The MinHash values kept per document for [`Verification::Estimate`].
    pub(crate) fn signature_width(&self) -> usize {
        self.num_perm
    }
}
