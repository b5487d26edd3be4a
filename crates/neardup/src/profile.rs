//! Compatibility profiles: another system's fingerprint of a document, bit for bit, as one typed
//! value with its own distance.
//!
//! A [`Profile`] is built by one constructor per system, which checks its parameters with the
//! bounds every surface applies (the CLI's `--profile`, Python's profile functions);
//! [`Profile::fingerprint`] gives a [`ProfileFingerprint`], and
//! [`ProfileFingerprint::distance`] the measure that system compares its fingerprints with. The
//! algorithms themselves are in [`crate::compat`]; the specs they follow are in
//! `tests/golden/SPEC.md` of the repository.
//!
//! ```
//! use neardup::profile::{Profile, ProfileDistance};
//! use neardup::Document;
//!
//! let profile = Profile::gojieba(5)?;
//! let a = profile.fingerprint(Document::Text("我来到北京清华大学"), None)?;
//! let b = profile.fingerprint(Document::Text("我来到北京清华大学"), None)?;
//! assert_eq!(a.distance(&b)?, ProfileDistance::Hamming { distance: 0, bits: 64 });
//! # Ok::<(), neardup::profile::ProfileError>(())
//! ```

use std::collections::BTreeSet;
use std::fmt;

use neardup_compat::datasketch::{Permutations, Scheme};
use neardup_compat::lucene::{self, MinHashParams};
use neardup_compat::recipes::{self, GojiebaFingerprint, Md5Fingerprint};
use neardup_compat::yanyiwu::{self, Flavor, SimhashResult};

use crate::{Document, Pipeline, Scratch, MAX_NGRAM, MAX_TOP_N};

/// A profile that cannot be built, or a document or pair it cannot fingerprint or compare.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileError {
    /// A parameter out of its bounds: its name and why (shown as `{name} {message}`).
    Parameter {
        /// The parameter, by the option table's name (`topn`, `hash_count`, ...), or the
        /// product of several (`hash_count x bucket_count x hash_set_size`).
        name: &'static str,
        /// What is wrong with it, after its name: `must be at most 1000, not 5000`.
        message: String,
    },
    /// A document the profile cannot fingerprint (jieba-md5 without a word of Han characters).
    Document(String),
    /// Two fingerprints that have no common measure (of two profiles, or printed with bit
    /// strings of other lengths and no values).
    Incomparable(String),
    /// The datasketch profile hashes a pipeline's features and was given none.
    NoPipeline,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::Parameter { name, message } => write!(f, "{name} {message}"),
            ProfileError::Document(m) | ProfileError::Incomparable(m) => f.write_str(m),
            ProfileError::NoPipeline => {
                f.write_str("the datasketch profile hashes a pipeline's features: give one")
            }
        }
    }
}

impl std::error::Error for ProfileError {}

/// A compiled compatibility profile.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Profile {
    /// yanyiwu/simhash (or jiebaR 0.9's `worker("simhash")`): jieba keywords by TF-IDF, top N,
    /// each voting with its weight; `topn` `None` is upstream's default for the text's length.
    Yanyiwu {
        /// Which program.
        flavor: Flavor,
        /// Keywords that vote.
        topn: Option<usize>,
        /// Drop symbols first, as jiebaR's `worker(symbol = FALSE)` does.
        strip_symbols: bool,
    },
    /// gojieba's `ExtractWithWeight` + FNV-1a 64.
    Gojieba {
        /// The `topk` its program passed.
        topn: usize,
    },
    /// The Python jieba + MD5 recipe (32 bits).
    JiebaMd5,
    /// Lucene's `MinHashFilter` (Elasticsearch's `min_hash`) behind the whitespace tokenizer and
    /// an optional shingle filter.
    Lucene {
        /// The filter's parameters.
        params: MinHashParams,
        /// Shingles of this many tokens (1: the tokens themselves).
        shingle_size: usize,
    },
    /// datasketch's `MinHash` of a pipeline's features.
    Datasketch {
        /// Its permutations.
        permutations: Permutations,
    },
}

fn parameter(name: &'static str, message: String) -> ProfileError {
    ProfileError::Parameter { name, message }
}

fn check_topn(topn: usize) -> Result<usize, ProfileError> {
    if topn > MAX_TOP_N {
        return Err(parameter("topn", format!("must be at most {MAX_TOP_N}, not {topn}")));
    }
    Ok(topn)
}

impl Profile {
    /// yanyiwu/simhash ([`Flavor::Yanyiwu`]) or jiebaR 0.9 ([`Flavor::JiebaR09`]); `topn` at most
    /// [`MAX_TOP_N`]. Builds the dictionaries now, not in the first document's time.
    pub fn yanyiwu(
        flavor: Flavor,
        topn: Option<usize>,
        strip_symbols: bool,
    ) -> Result<Profile, ProfileError> {
        let topn = topn.map(check_topn).transpose()?;
        let _ = yanyiwu::simhasher_for(flavor);
        Ok(Profile::Yanyiwu { flavor, topn, strip_symbols })
    }

    /// gojieba + FNV-1a 64 with its `topk`, at most [`MAX_TOP_N`].
    pub fn gojieba(topn: usize) -> Result<Profile, ProfileError> {
        let topn = check_topn(topn)?;
        let _ = yanyiwu::simhasher_for(Flavor::Gojieba);
        Ok(Profile::Gojieba { topn })
    }

    /// The Python jieba + MD5 recipe.
    pub fn jieba_md5() -> Profile {
        let _ = crate::text::zh::jieba();
        Profile::JiebaMd5
    }

    /// Lucene's `MinHashFilter` with `params` (each within Lucene's bounds) over shingles of
    /// `shingle_size` tokens, 1 to [`MAX_NGRAM`].
    pub fn lucene(params: MinHashParams, shingle_size: usize) -> Result<Profile, ProfileError> {
        params.validate().map_err(lucene_error)?;
        if !(1..=MAX_NGRAM).contains(&shingle_size) {
            return Err(parameter(
                "shingle_size",
                format!("must be in 1..={MAX_NGRAM}, not {shingle_size}"),
            ));
        }
        Ok(Profile::Lucene { params, shingle_size })
    }

    /// datasketch's `MinHash(num_perm, seed)` under `scheme`: `num_perm` 1 to
    /// [`crate::sketch::MAX_NUM_PERM`], `seed` below 2^32 (numpy's `RandomState` takes no more).
    pub fn datasketch(num_perm: usize, seed: u64, scheme: Scheme) -> Result<Profile, ProfileError> {
        let max = crate::sketch::MAX_NUM_PERM;
        if !(1..=max).contains(&num_perm) {
            return Err(parameter("num_perm", format!("must be in 1..={max}, not {num_perm}")));
        }
        let seed = u32::try_from(seed).map_err(|_| {
            parameter("seed", format!("must be below 2^32 (numpy's RandomState), not {seed}"))
        })?;
        Ok(Profile::Datasketch { permutations: Permutations::new(num_perm, seed, scheme) })
    }

    /// True for the profiles that keep their own text analysis (all but datasketch, which
    /// hashes a pipeline's features).
    pub fn has_own_analysis(&self) -> bool {
        !matches!(self, Profile::Datasketch { .. })
    }

    /// The fingerprint of `doc`. Given tokens reach each system as it would get them: laid end
    /// to end for the recipes that take a text, as words for yanyiwu, as tokens for Lucene's
    /// filter, as features for datasketch. `pipeline` makes datasketch's features from a text.
    pub fn fingerprint(
        &self,
        doc: Document<'_>,
        pipeline: Option<(&Pipeline, &mut Scratch)>,
    ) -> Result<ProfileFingerprint, ProfileError> {
        let text = || match doc {
            Document::Text(t) => t.to_string(),
            Document::Tokens(t) => t.concat(),
        };
        Ok(match self {
            Profile::Gojieba { topn } => {
                ProfileFingerprint::Gojieba(recipes::gojieba_simhash(text().as_bytes(), *topn))
            }
            Profile::JiebaMd5 => ProfileFingerprint::JiebaMd5(
                recipes::jieba_md5_simhash(&text())
                    .map_err(|e| ProfileError::Document(e.to_string()))?,
            ),
            Profile::Yanyiwu { flavor, topn, strip_symbols } => {
                let s = yanyiwu::simhasher_for(*flavor);
                ProfileFingerprint::Yanyiwu(match doc {
                    Document::Text(text) => {
                        let text = if *strip_symbols {
                            yanyiwu::strip_symbols(text)
                        } else {
                            text.to_string()
                        };
                        let n = topn.unwrap_or_else(|| yanyiwu::default_topn(text.len()));
                        s.simhash(text.as_bytes(), n)
                    }
                    Document::Tokens(words) => {
                        let bytes: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
                        let len = bytes.iter().map(|w| w.len()).sum();
                        s.simhash_words(&bytes, topn.unwrap_or_else(|| yanyiwu::default_topn(len)))
                    }
                })
            }
            Profile::Lucene { params, shingle_size } => {
                let tokens = match doc {
                    Document::Text(text) => {
                        lucene::shingles(&lucene::whitespace_tokenize(text), *shingle_size)
                    }
                    Document::Tokens(list) => lucene::given_tokens(list),
                };
                let out = lucene::min_hash(&tokens, params).map_err(lucene_error)?;
                ProfileFingerprint::Lucene(out.tokens)
            }
            Profile::Datasketch { permutations } => {
                let mut features: Vec<String> = Vec::new();
                match doc {
                    // datasketch hashes exactly the bytes it is given.
                    Document::Tokens(list) => features.extend(list.iter().cloned()),
                    Document::Text(text) => {
                        let (pipeline, scratch) = pipeline.ok_or(ProfileError::NoPipeline)?;
                        pipeline.for_each_feature(Document::Text(text), scratch, |f| {
                            features.push(f.to_string())
                        })
                    }
                }
                let values = permutations.hash_values(features.iter().map(String::as_bytes));
                features.sort_unstable();
                features.dedup();
                ProfileFingerprint::Datasketch { values, features: features.len() }
            }
        })
    }
}

/// A Lucene validation message (`hash_count must be greater than 0`) as a parameter error.
fn lucene_error(message: String) -> ProfileError {
    const NAMES: [&str; 4] = [
        "hash_count x bucket_count x hash_set_size",
        "hash_count",
        "bucket_count",
        "hash_set_size",
    ];
    match NAMES.into_iter().find_map(|n| message.strip_prefix(n).map(|rest| (n, rest))) {
        Some((name, rest)) => parameter(name, rest.trim_start().to_string()),
        None => parameter("hash_count", message),
    }
}

/// One document's fingerprint under a profile.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProfileFingerprint {
    /// yanyiwu/simhash or jiebaR: 64 bits and the keywords that voted.
    Yanyiwu(SimhashResult),
    /// gojieba + FNV: the bits as Go prints them, their value, the keywords.
    Gojieba(GojiebaFingerprint),
    /// jieba + MD5: 32 bits, their value, the words.
    JiebaMd5(Md5Fingerprint),
    /// Lucene's `min_hash` tokens, as UTF-16 code units.
    Lucene(Vec<Vec<u16>>),
    /// datasketch's hash values, and how many distinct features made them.
    Datasketch {
        /// `MinHash.hashvalues`.
        values: Vec<u64>,
        /// Distinct features hashed.
        features: usize,
    },
}

/// How far apart two fingerprints of one profile are, in that system's own measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProfileDistance {
    /// Differing bits of two SimHashes of `bits` bits.
    Hamming {
        /// Differing bits.
        distance: u32,
        /// The fingerprints' width.
        bits: u32,
    },
    /// The share of equal MinHash values (datasketch's `jaccard`).
    JaccardEstimate(f64),
    /// The Jaccard similarity of the two sets of `min_hash` tokens (how Elasticsearch's matches
    /// are scored by overlap).
    JaccardTokens(f64),
}

impl ProfileDistance {
    /// The measure's name: `hamming`, `jaccard_estimate` or `jaccard_tokens`.
    pub fn measure(&self) -> &'static str {
        match self {
            ProfileDistance::Hamming { .. } => "hamming",
            ProfileDistance::JaccardEstimate(_) => "jaccard_estimate",
            ProfileDistance::JaccardTokens(_) => "jaccard_tokens",
        }
    }

    /// The fingerprints' width in bits, for the SimHash measures.
    pub fn bits(&self) -> Option<u32> {
        match self {
            ProfileDistance::Hamming { bits, .. } => Some(*bits),
            _ => None,
        }
    }
}

impl ProfileFingerprint {
    /// The distance to `other`, a fingerprint of the same profile. The recipes that print bit
    /// strings are compared as their programs compare them, character by character; strings of
    /// other lengths (Go prints int64's minimum with a sign and 64 digits) are compared by
    /// value instead, never given a made-up 0.
    pub fn distance(&self, other: &ProfileFingerprint) -> Result<ProfileDistance, ProfileError> {
        use ProfileFingerprint as F;
        let printed =
            |x: &str, y: &str, p: u64, q: u64, bits: u32| match recipes::bit_distance(x, y) {
                Some(distance) => ProfileDistance::Hamming { distance, bits: x.len() as u32 },
                None => ProfileDistance::Hamming { distance: (p ^ q).count_ones(), bits },
            };
        Ok(match (self, other) {
            (F::Yanyiwu(a), F::Yanyiwu(b)) => ProfileDistance::Hamming {
                distance: (a.simhash ^ b.simhash).count_ones(),
                bits: 64,
            },
            (F::Gojieba(a), F::Gojieba(b)) => printed(&a.bits, &b.bits, a.value, b.value, 64),
            (F::JiebaMd5(a), F::JiebaMd5(b)) => {
                printed(&a.bits, &b.bits, a.value.into(), b.value.into(), 32)
            }
            (F::Datasketch { values: a, .. }, F::Datasketch { values: b, .. }) => {
                if a.len() != b.len() {
                    return Err(ProfileError::Incomparable(format!(
                        "MinHashes of {} and {} permutations cannot be compared",
                        a.len(),
                        b.len()
                    )));
                }
                let equal = a.iter().zip(b).filter(|(p, q)| p == q).count();
                ProfileDistance::JaccardEstimate(equal as f64 / a.len().max(1) as f64)
            }
            (F::Lucene(a), F::Lucene(b)) => {
                let (x, y): (BTreeSet<&[u16]>, BTreeSet<&[u16]>) =
                    (a.iter().map(Vec::as_slice).collect(), b.iter().map(Vec::as_slice).collect());
                let union = x.union(&y).count();
                let shared = x.intersection(&y).count();
                ProfileDistance::JaccardTokens(if union == 0 {
                    0.0
                } else {
                    shared as f64 / union as f64
                })
            }
            _ => {
                return Err(ProfileError::Incomparable(
                    "fingerprints of two profiles cannot be compared".into(),
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_constructor_applies_the_bounds_every_surface_shares() {
        let e = Profile::yanyiwu(Flavor::Yanyiwu, Some(MAX_TOP_N + 1), false).expect_err("bound");
        assert!(matches!(e, ProfileError::Parameter { name: "topn", .. }), "{e:?}");
        assert!(Profile::gojieba(MAX_TOP_N + 1).is_err());
        let bad = MinHashParams { hash_count: 0, ..MinHashParams::default() };
        let e = Profile::lucene(bad, 1).expect_err("hash_count");
        assert!(matches!(e, ProfileError::Parameter { name: "hash_count", .. }), "{e:?}");
        assert!(Profile::lucene(MinHashParams::default(), MAX_NGRAM + 1).is_err());
        assert!(Profile::datasketch(0, 1, Scheme::Legacy).is_err());
        let e = Profile::datasketch(16, 1 << 32, Scheme::Legacy).expect_err("seed");
        assert_eq!(e.to_string(), "seed must be below 2^32 (numpy's RandomState), not 4294967296");
        let big =
            MinHashParams { hash_count: 1024, bucket_count: 65536, ..MinHashParams::default() };
        let e = Profile::lucene(big, 1).expect_err("too many tokens");
        assert!(
            matches!(&e, ProfileError::Parameter { name, .. } if name.contains(" x ")),
            "{e:?}"
        );
    }

    #[test]
    fn printed_bit_strings_of_other_lengths_are_compared_by_value_never_as_zero() {
        // Go prints int64's minimum as "-1" and 63 zeros: 65 characters beside 64.
        let fp = |bits: String, value: u64| {
            ProfileFingerprint::Gojieba(GojiebaFingerprint { bits, value, keywords: Vec::new() })
        };
        let min = fp(format!("-1{}", "0".repeat(63)), 1 << 63);
        let one = fp(format!("{:064b}", 1), 1);
        assert_eq!(min.distance(&one), Ok(ProfileDistance::Hamming { distance: 2, bits: 64 }));
        // Same lengths: the recipe's own distance, character by character.
        let (a, b) = (fp("1010".into(), 10), fp("1001".into(), 9));
        assert_eq!(a.distance(&b), Ok(ProfileDistance::Hamming { distance: 2, bits: 4 }));
    }

    #[test]
    fn fingerprints_of_two_profiles_have_no_distance() {
        let a = ProfileFingerprint::Lucene(vec![vec![1, 2]]);
        let b = ProfileFingerprint::Datasketch { values: vec![1], features: 1 };
        assert!(matches!(a.distance(&b), Err(ProfileError::Incomparable(_))));
        let c = ProfileFingerprint::Datasketch { values: vec![1, 2], features: 2 };
        assert!(b.distance(&c).is_err(), "other permutation counts");
        let d = ProfileFingerprint::Lucene(vec![vec![1, 2], vec![3]]);
        assert_eq!(a.distance(&d), Ok(ProfileDistance::JaccardTokens(0.5)));
    }
}
