//! Candidate search for near-duplicates.
//!
//! [`HammingIndex`] finds every fingerprint within Hamming distance `k` of a query, exactly, with
//! the permuted tables of Manku, Jain and Das Sarma ("Detecting near-duplicates for web
//! crawling", WWW 2007); [`hamming_pairs`] is its batch all-pairs mode. [`MinHashLsh`] and
//! [`candidate_pairs`] band MinHash signatures for Jaccard search. [`brute_force`],
//! [`brute_force_pairs`] and [`brute_force_candidates`] are the oracles they are tested against.
#![deny(missing_docs)]

mod hamming;
mod lsh;

pub use hamming::{
    brute_force, brute_force_pairs, hamming_pairs, hamming_pairs_capped, HammingIndex, IndexError,
};
pub use lsh::{
    brute_force_candidates, bucket_pairs, candidate_pairs, candidate_pairs_by,
    candidate_pairs_capped, capped_pairs_by, Banding, BandingError, BucketCap, MinHashLsh,
};
