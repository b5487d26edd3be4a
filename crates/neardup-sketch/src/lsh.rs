//! Choosing LSH bands and rows for a Jaccard threshold.
//!
//! With `b` bands of `r` rows, two sets of Jaccard similarity `s` collide in at least one band
//! with probability `1 - (1 - s^r)^b`. The false-positive area is `∫₀ᵗ 1 - (1 - s^r)^b ds` and
//! the false-negative area `∫ₜ¹ (1 - s^r)^b ds`. As datasketch's `MinHashLSH`, we minimise
//! `w_fp · FP + w_fn · FN` over `b = 1..=num_perm` (outer) and `r = 1..=num_perm / b` (inner),
//! keeping a point only if it is strictly better, so the first minimum in that order wins.
//! datasketch integrates with `scipy.integrate.quad`; any accurate integrator picks the same
//! point (the closest runner-up is 1.2e-5 relative away in its test grid), and here an adaptive
//! Gauss-Kronrod (7, 15) rule is used, accurate to about 1e-14.

use crate::SketchError;

/// The most permutations the band optimiser searches over. datasketch's `MinHashLSH` has no
/// limit (its search takes about `num_perm * ln(num_perm)` integrations, seconds at this bound);
/// the sketches themselves stop at [`crate::MAX_NUM_PERM`], but the datasketch drop-in does
/// not, so the optimiser takes what it may be given.
pub const MAX_LSH_NUM_PERM: usize = 1 << 16;

/// The chosen bands and rows, with their error areas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LshParams {
    /// Number of bands.
    pub bands: usize,
    /// Rows (hash values) per band.
    pub rows: usize,
    /// False-positive area.
    pub false_positive: f64,
    /// False-negative area.
    pub false_negative: f64,
}

impl LshParams {
    /// `w_fp · FP + w_fn · FN`.
    pub fn error(&self, weights: (f64, f64)) -> f64 {
        weights.0 * self.false_positive + weights.1 * self.false_negative
    }

    /// The probability that a pair of Jaccard similarity `s` becomes a candidate.
    pub fn collision_probability(&self, s: f64) -> f64 {
        1.0 - (1.0 - s.powi(self.rows as i32)).powi(self.bands as i32)
    }
}

/// The `(bands, rows)` that minimise the weighted error areas around `threshold`.
///
/// `weights` are `(false positive, false negative)`, each in [0, 1], summing to exactly 1.
pub fn optimal_params(
    threshold: f64,
    num_perm: usize,
    weights: (f64, f64),
) -> Result<LshParams, SketchError> {
    if !(0.0..=1.0).contains(&threshold) {
        return Err(SketchError::InvalidLsh {
            message: format!("threshold {threshold} is not in [0, 1]"),
        });
    }
    if num_perm < 2 {
        return Err(SketchError::InvalidLsh { message: "num_perm must be at least 2".into() });
    }
    if num_perm > MAX_LSH_NUM_PERM {
        return Err(SketchError::InvalidLsh {
            message: format!("num_perm {num_perm} is above the limit of {MAX_LSH_NUM_PERM}"),
        });
    }
    let (wf, wn) = weights;
    if !(0.0..=1.0).contains(&wf) || !(0.0..=1.0).contains(&wn) || wf + wn != 1.0 {
        return Err(SketchError::InvalidLsh {
            message: format!("weights ({wf}, {wn}) must each be in [0, 1] and sum to 1"),
        });
    }
    let mut best: Option<(f64, LshParams)> = None;
    for b in 1..=num_perm {
        for r in 1..=num_perm / b {
            let (bi, ri) = (b as i32, r as i32);
            let fp = integrate(|s| 1.0 - (1.0 - s.powi(ri)).powi(bi), 0.0, threshold);
            let fnn = integrate(|s| (1.0 - s.powi(ri)).powi(bi), threshold, 1.0);
            let error = wf * fp + wn * fnn;
            if best.as_ref().is_none_or(|(e, _)| error < *e) {
                best = Some((
                    error,
                    LshParams { bands: b, rows: r, false_positive: fp, false_negative: fnn },
                ));
            }
        }
    }
    Ok(best.expect("num_perm >= 2 gives at least one point").1)
}

/// The cheapest `(bands, rows)` under which a pair of Jaccard similarity exactly `threshold`
/// becomes a candidate with probability at least `recall`.
///
/// For each `r`, the fewest bands that reach the target are `b = ⌈ln(1 - R) / ln(1 - tʳ)⌉`
/// (more bands only add candidates); among the `(b, r)` with `b · r <= num_perm`, the one with
/// the smallest false-positive area `∫₀ᵗ 1 - (1 - sʳ)ᵇ ds` wins (ties to fewer values). Pairs
/// above the threshold collide more often still, so the recall over all true pairs is at least
/// `recall`. Under exact verification a false candidate costs one check and a missed one a
/// missed duplicate, which is why this, not datasketch's weighted error, picks dedup's banding.
pub fn params_for_recall(
    threshold: f64,
    num_perm: usize,
    recall: f64,
) -> Result<LshParams, SketchError> {
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(SketchError::InvalidLsh {
            message: format!("threshold {threshold} is not in (0, 1]"),
        });
    }
    if !(recall > 0.0 && recall < 1.0) {
        return Err(SketchError::InvalidLsh {
            message: format!("recall {recall} is not in (0, 1)"),
        });
    }
    if num_perm == 0 {
        return Err(SketchError::ZeroPermutations);
    }
    if num_perm > MAX_LSH_NUM_PERM {
        return Err(SketchError::InvalidLsh {
            message: format!("num_perm {num_perm} is above the limit of {MAX_LSH_NUM_PERM}"),
        });
    }
    let mut best: Option<LshParams> = None;
    for r in 1..=num_perm {
        let tr = threshold.powi(r as i32);
        let b = if tr >= 1.0 {
            1
        } else {
            let need = ((1.0 - recall).ln() / (1.0 - tr).ln()).ceil();
            if !need.is_finite() || need > num_perm as f64 {
                continue;
            }
            (need as usize).max(1)
        };
        if b * r > num_perm {
            continue;
        }
        let (bi, ri) = (b as i32, r as i32);
        let fp = integrate(|s| 1.0 - (1.0 - s.powi(ri)).powi(bi), 0.0, threshold);
        let fnn = integrate(|s| (1.0 - s.powi(ri)).powi(bi), threshold, 1.0);
        let better = best.as_ref().is_none_or(|p| {
            fp < p.false_positive - 1e-15
                || (fp <= p.false_positive + 1e-15 && b * r < p.bands * p.rows)
        });
        if better {
            best = Some(LshParams { bands: b, rows: r, false_positive: fp, false_negative: fnn });
        }
    }
    best.ok_or_else(|| SketchError::InvalidLsh {
        message: format!(
            "no banding of {num_perm} values reaches recall {recall} at threshold {threshold}; \
             raise num_perm or lower the recall"
        ),
    })
}

/// Adaptive Gauss-Kronrod (7, 15) quadrature of `f` over `[a, b]`.
fn integrate(f: impl Fn(f64) -> f64 + Copy, a: f64, b: f64) -> f64 {
    if b <= a {
        return 0.0;
    }
    let (k, g) = gk15(f, a, b);
    adapt(f, a, b, k, (k - g).abs(), 1e-14, 40)
}

fn adapt(
    f: impl Fn(f64) -> f64 + Copy,
    a: f64,
    b: f64,
    whole: f64,
    err: f64,
    tol: f64,
    depth: u32,
) -> f64 {
    if err <= tol.max(1e-15 * whole.abs()) || depth == 0 {
        return whole;
    }
    let m = 0.5 * (a + b);
    let (kl, gl) = gk15(f, a, m);
    let (kr, gr) = gk15(f, m, b);
    adapt(f, a, m, kl, (kl - gl).abs(), tol / 2.0, depth - 1)
        + adapt(f, m, b, kr, (kr - gr).abs(), tol / 2.0, depth - 1)
}

/// The 15-point Kronrod and embedded 7-point Gauss estimates.
fn gk15(f: impl Fn(f64) -> f64, a: f64, b: f64) -> (f64, f64) {
    const XK: [f64; 8] = [
        0.991_455_371_120_812_6,
        0.949_107_912_342_758_5,
        0.864_864_423_359_769_1,
        0.741_531_185_599_394_4,
        0.586_087_235_467_691_1,
        0.405_845_151_377_397_2,
        0.207_784_955_007_898_5,
        0.0,
    ];
    const WK: [f64; 8] = [
        0.022_935_322_010_529_22,
        0.063_092_092_629_978_55,
        0.104_790_010_322_250_2,
        0.140_653_259_715_525_9,
        0.169_004_726_639_267_9,
        0.190_350_578_064_785_4,
        0.204_432_940_075_298_9,
        0.209_482_141_084_728,
    ];
    const WG: [f64; 4] = [
        0.129_484_966_168_869_7,
        0.279_705_391_489_276_7,
        0.381_830_050_505_118_9,
        0.417_959_183_673_469_4,
    ];
    let c = 0.5 * (a + b);
    let h = 0.5 * (b - a);
    let fc = f(c);
    let mut k = WK[7] * fc;
    let mut g = WG[3] * fc;
    for j in 0..7 {
        let x = h * XK[j];
        let s = f(c - x) + f(c + x);
        k += WK[j] * s;
        if j % 2 == 1 {
            g += WG[j / 2] * s;
        }
    }
    (k * h, g * h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrates_polynomials_exactly() {
        let v = integrate(|s| s.powi(40), 0.0, 1.0);
        assert!((v - 1.0 / 41.0).abs() < 1e-15, "{v}");
        let v = integrate(|s| (1.0 - s.powi(13)).powi(9), 0.0, 0.8);
        assert!(v > 0.0 && v < 0.8);
    }

    #[test]
    fn datasketch_documented_choice() {
        // datasketch's docs: threshold 0.9, 128 permutations -> 5 bands of 25 rows.
        let p = optimal_params(0.9, 128, (0.5, 0.5)).expect("valid");
        assert_eq!((p.bands, p.rows), (5, 25));
    }

    #[test]
    fn recall_target_is_met_at_least_cost() {
        for &(t, r) in &[(0.5, 0.99), (0.7, 0.99), (0.8, 0.95), (0.8, 0.99), (0.9, 0.999)] {
            let p = params_for_recall(t, 128, r).expect("reachable");
            assert!(p.collision_probability(t) >= r, "{t} {r}: {p:?}");
            assert!(p.bands * p.rows <= 128);
            // One band fewer misses the target: no band is wasted.
            let fewer = LshParams { bands: p.bands - 1, ..p };
            assert!(p.bands == 1 || fewer.collision_probability(t) < r, "{t} {r}: {p:?}");
        }
        let p = params_for_recall(0.8, 128, 0.99).expect("reachable");
        assert_eq!((p.bands, p.rows), (16, 6));
        assert!(params_for_recall(0.8, 128, 1.0).is_err());
        assert!(params_for_recall(0.5, 4, 0.999_999).is_err());
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(optimal_params(0.5, 1, (0.5, 0.5)).is_err());
        assert!(optimal_params(1.5, 128, (0.5, 0.5)).is_err());
        assert!(optimal_params(0.5, 128, (0.6, 0.6)).is_err());
    }
}
