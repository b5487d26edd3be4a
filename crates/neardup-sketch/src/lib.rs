//! Feature hashes to fingerprints: the numeric core of neardup.
//!
//! This crate knows nothing about text. It takes features as byte strings (or their hashes) with
//! weights, and produces:
//!
//! - [`SimHash`] fingerprints (Charikar 2002) of 32, 64 or 128 bits, compared by Hamming distance;
//! - [`MinHash`] signatures (Broder 1997), either with `num_perm` seeded hash functions or with
//!   one-permutation hashing and densification (Shrivastava and Li 2014; Shrivastava 2017);
//! - exact measures over feature sets and sparse vectors: Jaccard, weighted Jaccard, cosine.
//!
//! ```
//! use neardup_sketch::{Feature, FeatureHasher, SimHashBits, SimHasher};
//!
//! let hasher = FeatureHasher::Xxh3;
//! let features: Vec<Feature> = ["the", "quick", "brown", "fox"]
//!     .iter()
//!     .map(|w| hasher.feature(w.as_bytes(), 1.0, SimHashBits::B64))
//!     .collect();
//! let a = SimHasher::new(SimHashBits::B64).fingerprint(&features);
//! assert_eq!(a.hamming(&a), Ok(0));
//! assert_eq!(a.to_hex().len(), 16);
//! ```
#![deny(missing_docs)]

mod error;
mod hash;
mod lsh;
mod minhash;
mod simhash;
mod similarity;
mod weights;

pub use error::SketchError;
pub use hash::{fmix64, jenkins64, murmur3_x64_128, splitmix64, Feature, FeatureHasher};
pub use lsh::{optimal_params, params_for_recall, LshParams, MAX_LSH_NUM_PERM};
pub use minhash::{Densification, MinHash, MinHashScheme, MinHasher, MAX_NUM_PERM};
pub use simhash::{unit_simhash64, SimHash, SimHashBits, SimHasher};
pub use similarity::{cosine, jaccard_sorted, weighted_jaccard, SparseVector};
pub use weights::{IdfError, IdfTable};
