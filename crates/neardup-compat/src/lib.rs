//! Bit-exact reproductions of other systems' fingerprints, so that data stored by them can be
//! queried or migrated without re-indexing.
//!
//! - [`datasketch`]: datasketch's `MinHash` (schemes `legacy`, `affine32`, `affine64`), with
//!   numpy `RandomState`'s exact draws ([`mt19937`]); the `MinHashLSH` band choice is
//!   [`neardup_sketch::optimal_params`].
//! - [`lucene`]: Lucene's `MinHashFilter`, which Elasticsearch exposes as the `min_hash` token
//!   filter, with its whitespace tokenizer and shingle filter in front.
//! - [`yanyiwu`]: the SimHash of yanyiwu/simhash and of jiebaR 0.9's `worker("simhash")`:
//!   cppjieba's MixSegment and TF-IDF keyword extractor, Jenkins lookup3 hashes, bit voting.
//! - [`recipes`]: two SimHash recipes copied from widely read articles: gojieba's keywords with
//!   FNV-1a 64 and Go's signed `%064b` bit strings, and Python jieba's Han words with MD5
//!   hex-digit bits.
//!
//! Each module cites the section of `SPEC.md` (`tests/golden/SPEC.md`, beside the golden
//! vectors) that it follows;
//! `tests/golden.rs` runs every vector as a named test.
#![deny(missing_docs)]

pub mod datasketch;
pub mod lucene;
pub mod mt19937;
pub mod recipes;
pub mod sha1x;
pub mod yanyiwu;
