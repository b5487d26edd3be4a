//! Candidate search for near-duplicates.
//!
//! [`HammingIndex`] finds every fingerprint within Hamming distance `k` of a query, exactly, with
//! the permuted tables of Manku, Jain and Das Sarma ("Detecting near-duplicates for web
//! crawling", WWW 2007). [`brute_force`] is the oracle the index is tested against.
#![deny(missing_docs)]

mod hamming;

pub use hamming::{brute_force, brute_force_pairs, HammingIndex, IndexError};
