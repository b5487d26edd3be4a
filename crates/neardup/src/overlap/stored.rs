//! The passage check of a collection that a store holds (a database many servers share), with
//! nothing of the collection in memory: the store gives the first holders of the query's keys
//! (the postings an index keeps, [`parts::fingerprints`] of each document) and, when the check
//! asks, the texts of the sources it aligns. The check is the one of [`parts`], so its answer
//! is the one a [`PassageIndex`](super::PassageIndex) of the stored documents gives, the
//! documents numbered in the order the store first stored them.

use std::sync::atomic::AtomicBool;

use rustc_hash::FxHashMap;

use super::parts::{self, Shipped, Step};
use super::{Overlap, OverlapError, OverlapSpec};

/// What a store gives a passage check. A document is named by its place in the order the store
/// first stored the collection's documents (`order`: ascending, not necessarily dense).
pub trait PassageStore {
    /// The store's error.
    type Error;
    /// The first `cap` holders of each of `keys` (the documents whose [`parts::fingerprints`]
    /// hold it), by order ascending: `(key, order)` pairs, in any order.
    fn holders(&self, keys: &[u32], cap: usize) -> Result<Vec<(u32, u64)>, Self::Error>;
    /// The id and text of each document at `orders`, as `(order, id, text)` in any order; one
    /// removed meanwhile is left out (a check reading one snapshot never meets one).
    fn texts(&self, orders: &[u64]) -> Result<Vec<(u64, String, String)>, Self::Error>;
}

/// Why a stored check ended without its answer.
#[derive(Debug)]
pub enum StoredError<E> {
    /// The store failed.
    Store(E),
    /// The check did (bad settings, a text too long, stopped by the caller).
    Overlap(OverlapError),
}

impl<E> From<OverlapError> for StoredError<E> {
    fn from(e: OverlapError) -> Self {
        StoredError::Overlap(e)
    }
}

/// A stored check's answer, with the ids and texts of the sources it names.
#[derive(Debug)]
pub struct StoredOverlap {
    /// The answer; `source` numbers are the check's own, read with [`StoredOverlap::id`] and
    /// [`StoredOverlap::text`].
    pub overlap: Overlap,
    ids: FxHashMap<u32, String>,
    texts: FxHashMap<u32, String>,
}

impl StoredOverlap {
    /// The id of source `n` of [`StoredOverlap::overlap`].
    pub fn id(&self, n: u32) -> &str {
        self.ids.get(&n).map_or("", String::as_str)
    }

    /// The text of source `n` of [`StoredOverlap::overlap`].
    pub fn text(&self, n: u32) -> &str {
        self.texts.get(&n).map_or("", String::as_str)
    }
}

/// Checks `text` against the collection `store` holds, as
/// [`PassageIndex::check`](super::PassageIndex::check) does: `own` (the query's own document,
/// by order) and `exclude` are never sources; `stop` set stops it between sources. Reads the
/// postings of the query's keys once, then the texts of each round's candidates (and those
/// likely next) until the check has what it aligns.
pub fn check<S: PassageStore>(
    spec: &OverlapSpec,
    store: &S,
    text: &str,
    own: Option<u64>,
    exclude: &[u64],
    stop: Option<&AtomicBool>,
) -> Result<StoredOverlap, StoredError<S::Error>> {
    let keys = parts::query_keys(spec, text)?;
    let pairs = store.holders(&keys, spec.max_postings as usize).map_err(StoredError::Store)?;
    // The check's numbers: the holders, own and excluded documents in the store's order.
    let mut orders: Vec<u64> = pairs.iter().map(|&(_, o)| o).chain(own).collect();
    orders.extend_from_slice(exclude);
    orders.sort_unstable();
    orders.dedup();
    if orders.len() >= u32::MAX as usize {
        // More holders than a check numbers: only a query of billions of keys has them.
        return Err(OverlapError::TooLong { id: "the query".into(), bytes: text.len() }.into());
    }
    let number = |o: u64| orders.binary_search(&o).map_or(u32::MAX, |n| n as u32);
    let mut by_key: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for &(k, o) in &pairs {
        by_key.entry(k).or_default().push(number(o));
    }
    let held: Vec<(u32, Vec<u32>)> = by_key.into_iter().collect();
    let own = own.map(number);
    let exclude: Vec<u32> = exclude.iter().map(|&o| number(o)).collect();
    let mut ids = FxHashMap::default();
    let mut parts = Shipped::new(spec, held, Vec::new())?;
    loop {
        match parts::check_until(spec, &parts, text, own, &exclude, false, stop)? {
            Step::Done(overlap) => {
                return Ok(StoredOverlap { overlap, ids, texts: parts.into_texts() })
            }
            Step::Needs(needed) => {
                let wanted: Vec<u64> = needed.iter().map(|&n| orders[n as usize]).collect();
                let mut read: FxHashMap<u32, String> = FxHashMap::default();
                for (o, id, t) in store.texts(&wanted).map_err(StoredError::Store)? {
                    let n = number(o);
                    ids.insert(n, id);
                    read.insert(n, t);
                }
                // A document gone meanwhile is a source of nothing: shipped empty, so that
                // every pass ships something new and the check ends.
                for n in needed {
                    read.entry(n).or_default();
                }
                parts.ship(read);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! A stored check against an index of the same documents: the same answer.
    use super::*;
    use crate::overlap::parts::tests::corpus;
    use crate::overlap::{OnExistingId, PassageIndex};
    use proptest::prelude::*;
    use std::cell::Cell;

    /// The documents as a store holds them: at orders 10, 20, 30, ... (sparse, as a database's
    /// sequence leaves them), each read counted.
    struct Memory {
        docs: Vec<String>,
        reads: Cell<usize>,
    }

    impl PassageStore for Memory {
        type Error = String;

        fn holders(&self, keys: &[u32], cap: usize) -> Result<Vec<(u32, u64)>, String> {
            let mut out = Vec::new();
            for &k in keys {
                let mut holders: Vec<u64> = Vec::new();
                for (d, t) in self.docs.iter().enumerate() {
                    if parts::fingerprints(&OverlapSpec::default(), t).expect("spec").contains(&k) {
                        holders.push(10 * (d as u64 + 1));
                    }
                }
                out.extend(holders.into_iter().take(cap).map(|o| (k, o)));
            }
            Ok(out)
        }

        fn texts(&self, orders: &[u64]) -> Result<Vec<(u64, String, String)>, String> {
            self.reads.set(self.reads.get() + orders.len());
            Ok(orders
                .iter()
                .map(|&o| (o, format!("d{}", o / 10 - 1), self.docs[(o / 10 - 1) as usize].clone()))
                .collect())
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn a_stored_check_gives_the_index_answer(
            (docs, query) in corpus(),
            max_postings in 1u32..6,
            exclude_first in any::<bool>(),
            own_last in any::<bool>(),
        ) {
            let spec = OverlapSpec { max_postings, min_density: 0.0, ..OverlapSpec::default() };
            let mut index = PassageIndex::new(spec.clone()).expect("index");
            let named: Vec<(String, String)> =
                docs.iter().enumerate().map(|(i, t)| (format!("d{i}"), t.clone())).collect();
            index.add_documents(named, OnExistingId::Refuse).expect("add");
            let store = Memory { docs: docs.clone(), reads: Cell::new(0) };
            let exclude = if exclude_first && docs.len() > 1 { vec![10] } else { vec![] };
            let own_id = own_last.then(|| format!("d{}", docs.len() - 1));
            let own = own_last.then_some(10 * docs.len() as u64);
            let want = index
                .check(own_id.as_deref(), &query, &exclude.iter().map(|_| 0u32).collect::<Vec<_>>())
                .expect("check");
            let got = check(&spec, &store, &query, own, &exclude, None).expect("stored check");
            // The same passages, their sources named by the same ids, the same shares.
            let named = |o: &Overlap, id: &dyn Fn(u32) -> String| -> Vec<(u64, u64, String, u64, u64)> {
                o.passages.iter().map(|p| (p.start, p.end, id(p.source), p.source_start, p.source_end)).collect()
            };
            prop_assert_eq!(
                named(&got.overlap, &|n| got.id(n).to_string()),
                named(&want, &|n| index.id(n).to_string())
            );
            prop_assert_eq!(got.overlap.copied_chars, want.copied_chars);
            // Each text read once at most.
            prop_assert!(store.reads.get() <= docs.len());
        }
    }

    #[test]
    fn a_source_is_named_by_its_id_with_its_text() {
        let docs = vec![
            "nothing in this one is shared with the query at all".to_string(),
            "winnowing selects the minimum hash in every window of consecutive k-gram hashes"
                .to_string(),
        ];
        let store = Memory { docs: docs.clone(), reads: Cell::new(0) };
        let query = "as is known, winnowing selects the minimum hash in every window of \
                     consecutive k-gram hashes";
        let got = check(&OverlapSpec::default(), &store, query, None, &[], None).expect("check");
        let p = &got.overlap.passages[0];
        assert_eq!(got.id(p.source), "d1");
        assert_eq!(
            &got.text(p.source)[p.source_start_byte as usize..p.source_end_byte as usize],
            "winnowing selects the minimum hash in every window of consecutive k-gram hashes"
        );
        assert_eq!(store.reads.get(), 1, "only the source's text is read");
        // Excluded, it is no source.
        let got = check(&OverlapSpec::default(), &store, query, None, &[20], None).expect("check");
        assert!(got.overlap.passages.is_empty());
    }
}
