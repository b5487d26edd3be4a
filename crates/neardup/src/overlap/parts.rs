//! The passage check in parts, for a run that spreads its collection over many machines (the
//! Spark job, `python -m neardup.spark overlap`): each part is computed where its data is, and
//! the check of each query reads the parts shipped to it, giving the answer a
//! [`PassageIndex`](super::PassageIndex) of the whole collection gives.
//!
//! 1. Number the collection's documents in input order (`0..n`, as an index numbers them) and
//!    take each one's [`fingerprints`] (the winnowed keys an index posts).
//! 2. Group them by key; each key keeps its first `max_postings` holders, ascending (an index's
//!    postings).
//! 3. Take each query's [`query_keys`] (every k-gram's key) and join them with the postings,
//!    by group of queries: each list once to a group ([`ShippedPostings`]).
//! 4. [`check`] the query with the holders of its keys and the texts it asks for: it answers
//!    [`Step::Needs`] with the documents whose texts it lacks (the candidates of its next round
//!    of alignment, and those likely after), and [`Step::Done`] once it had every text it used.
//!    Its answer depends only on the texts it used, so shipping them and checking again gives
//!    the index's answer; most queries need two passes. A first pass needs only each list's
//!    first holders and its length ([`ShippedPostings::first_holders`]): it learns what to ship
//!    (and answers the queries with no candidate) from a fraction of the postings.
//!
//! ```
//! use neardup::overlap::parts::{check, fingerprints, query_keys, Shipped, Step};
//! use neardup::overlap::OverlapSpec;
//!
//! let spec = OverlapSpec::default();
//! let docs = ["Winnowing selects the minimum hash in every window of consecutive k-gram \
//!              hashes, so that any match long enough is certain to share a fingerprint."];
//! let query = "As is known, winnowing selects the minimum hash in every window of consecutive \
//!              k-gram hashes, so any match long enough is certain to share a fingerprint.";
//! // The postings of the query's keys: (key, holders ascending).
//! let held: Vec<(u32, Vec<u32>)> = query_keys(&spec, query)?
//!     .into_iter()
//!     .filter(|k| fingerprints(&spec, docs[0]).unwrap().contains(k))
//!     .map(|k| (k, vec![0]))
//!     .collect();
//! let mut texts: Vec<(u32, String)> = Vec::new();
//! let found = loop {
//!     let shipped = Shipped::new(&spec, held.clone(), texts.clone())?;
//!     match check(&spec, &shipped, query, None, &[], false)? {
//!         Step::Done(found) => break found,
//!         Step::Needs(docs_needed) => {
//!             texts.extend(docs_needed.iter().map(|&d| (d, docs[d as usize].to_string())))
//!         }
//!     }
//! };
//! assert_eq!(found.passages.len(), 1);
//! assert_eq!(found.passages[0].source, 0);
//! # Ok::<(), neardup::overlap::OverlapError>(())
//! ```

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::align::Attribution;
use super::check::{
    check_in, key, new_scope, Halt, Holdings, Scope, HIT_HOLDERS, NO_SCOPE, SCRATCH,
};
use super::index::winnow;
use super::units::{kgram_hashes, units};
use super::{Overlap, OverlapError, OverlapSpec};

/// The winnowed keys of a document of the collection, sorted and each once: what a
/// [`PassageIndex`](super::PassageIndex) posts for it.
pub fn fingerprints(spec: &OverlapSpec, text: &str) -> Result<Vec<u32>, OverlapError> {
    spec.validate()?;
    let mut out = Vec::new();
    SCRATCH.with_borrow_mut(|s| {
        units(text, spec.zh_script, &mut s.units);
        kgram_hashes(&s.units, spec.seed as usize, &mut s.grams);
        winnow(&s.grams, spec.window as usize, &mut out);
    });
    Ok(out)
}

/// The keys of every k-gram of a query, sorted and each once: the postings a check of it reads.
pub fn query_keys(spec: &OverlapSpec, text: &str) -> Result<Vec<u32>, OverlapError> {
    Ok(keys(spec, text, false)?.1)
}

/// A text's [`fingerprints`] (when `winnowed`; else none) and [`query_keys`], its units read
/// once: what a document of a corpus checked within itself gives, as a holder and as a query.
pub fn keys(
    spec: &OverlapSpec,
    text: &str,
    winnowed: bool,
) -> Result<(Vec<u32>, Vec<u32>), OverlapError> {
    spec.validate()?;
    let (mut fingerprints, mut every) = (Vec::new(), Vec::new());
    SCRATCH.with_borrow_mut(|s| {
        units(text, spec.zh_script, &mut s.units);
        kgram_hashes(&s.units, spec.seed as usize, &mut s.grams);
        if winnowed {
            winnow(&s.grams, spec.window as usize, &mut fingerprints);
        }
        every.extend(s.grams.iter().map(|&h| key(h)));
    });
    every.sort_unstable();
    every.dedup();
    Ok((fingerprints, every))
}

/// Texts shipped to the checks of several queries (a group of queries given each text once),
/// by document number. The checks that share them reuse each other's work on a source (its
/// hashes, kept per thread) while these texts are unchanged, as the checks of one index do.
#[derive(Debug)]
pub struct ShippedTexts {
    texts: FxHashMap<u32, String>,
    scope: Scope,
}

impl ShippedTexts {
    /// The texts `(document, text)`; a document given twice keeps its last text.
    pub fn new(texts: impl IntoIterator<Item = (u32, String)>) -> ShippedTexts {
        ShippedTexts { texts: texts.into_iter().collect(), scope: new_scope() }
    }

    /// The texts of one query's check: nothing to reuse, so nothing is kept (a scope of its
    /// own would fill the thread's source cache, and drop what a group's checks kept, for
    /// nothing).
    fn unshared(texts: impl IntoIterator<Item = (u32, String)>) -> ShippedTexts {
        ShippedTexts { texts: texts.into_iter().collect(), scope: NO_SCOPE }
    }
}

impl Default for ShippedTexts {
    /// No texts, and nothing reused.
    fn default() -> Self {
        ShippedTexts::unshared([])
    }
}

/// The postings shipped to the checks of a group of queries: the holders of every key any of
/// them reads, each list once for the group (a key that many of its queries read, boilerplate
/// or a cluster's text, was shipped once per query, the volume quadratic in a cluster's size).
#[derive(Debug, Default)]
pub struct ShippedPostings {
    keys: Vec<u32>,
    offsets: Vec<u32>,
    postings: Vec<u32>,
    /// Each key's place in `keys`: a group's lists hold hundreds of thousands of keys, where a
    /// binary search missed the cache at most of its steps, for every k-gram of every query.
    slot: FxHashMap<u32, u32>,
    /// Each key's whole list's length, when the lists are only their first holders
    /// ([`ShippedPostings::first_holders`]).
    lens: Option<Vec<u32>>,
}

/// How many first holders of each key [`ShippedPostings::first_holders`] needs, when
/// `excluded` documents are never sources: those of a check's hits, and as many more as the
/// query itself and the excluded ones can take of them.
pub fn first_holders_needed(spec: &OverlapSpec, excluded: usize) -> usize {
    (spec.max_postings as usize).min(HIT_HOLDERS) + 1 + excluded
}

impl ShippedPostings {
    /// The postings `(key, holders)`: a key's documents in any order, each once; the first
    /// `max_postings` of them, ascending, are kept. Keys the collection does not hold may be
    /// left out, and so may keys no query of the group reads.
    pub fn new(
        spec: &OverlapSpec,
        mut held: Vec<(u32, Vec<u32>)>,
    ) -> Result<ShippedPostings, OverlapError> {
        held.sort_unstable_by_key(|(k, _)| *k);
        let mut out = ShippedPostings {
            offsets: vec![0],
            slot: FxHashMap::with_capacity_and_hasher(held.len(), Default::default()),
            ..ShippedPostings::default()
        };
        for (k, mut docs) in held {
            if out.keys.last() == Some(&k) {
                return Err(OverlapError::InvalidSpec {
                    field: "postings",
                    message: format!("key {k} is given twice"),
                });
            }
            docs.sort_unstable();
            docs.dedup();
            docs.truncate(spec.max_postings as usize);
            if docs.is_empty() {
                continue;
            }
            out.slot.insert(k, out.keys.len() as u32);
            out.keys.push(k);
            out.postings.extend(docs);
            out.offsets.push(out.postings.len() as u32);
        }
        Ok(out)
    }

    /// Postings shortened for a first pass: `(key, n, holders)`, `n` the length of the key's
    /// whole list (its first `max_postings` holders) and `holders` ascending, each once, among
    /// those `n`: at least the first [`first_holders_needed`] of them, and any others the checks
    /// should know are listed (the query's own document: a Spark group's own documents).
    ///
    /// A [`check`] of these finds the same candidates as one of the whole lists (its hits are
    /// the first holders; its document frequencies come from `n`, less the query's own document
    /// and the excluded ones where given), and aligns none of them: it answers
    /// [`Step::Done`] (the answer: no candidate) or [`Step::Needs`] (the texts to ship with the
    /// whole lists), never checking a passage, which would count every holder.
    pub fn first_holders(
        spec: &OverlapSpec,
        mut held: Vec<(u32, u32, Vec<u32>)>,
    ) -> Result<ShippedPostings, OverlapError> {
        held.sort_unstable_by_key(|(k, _, _)| *k);
        let cap = spec.max_postings;
        let mut out = ShippedPostings {
            offsets: vec![0],
            slot: FxHashMap::with_capacity_and_hasher(held.len(), Default::default()),
            lens: Some(Vec::with_capacity(held.len())),
            ..ShippedPostings::default()
        };
        for (k, n, docs) in held {
            let bad = |message: String| OverlapError::InvalidSpec { field: "postings", message };
            if out.keys.last() == Some(&k) {
                return Err(bad(format!("key {k} is given twice")));
            }
            if n == 0 {
                continue;
            }
            if docs.is_empty() || docs.len() > n as usize || !docs.windows(2).all(|w| w[0] < w[1]) {
                return Err(bad(format!("key {k}: its first holders are not 1 to {n}, ascending")));
            }
            let n = n.min(cap);
            out.slot.insert(k, out.keys.len() as u32);
            out.keys.push(k);
            out.postings.extend(docs.iter().take(n as usize));
            out.offsets.push(out.postings.len() as u32);
            out.lens.as_mut().expect("shortened").push(n);
        }
        Ok(out)
    }
}

/// What a query's check is given of the collection: the holders of its keys and the texts of
/// some documents.
#[derive(Debug, Default)]
pub struct Shipped {
    postings: Arc<ShippedPostings>,
    texts: Arc<ShippedTexts>,
}

impl Shipped {
    /// The postings of the query's keys (see [`ShippedPostings::new`]) and the texts shipped.
    pub fn new(
        spec: &OverlapSpec,
        held: Vec<(u32, Vec<u32>)>,
        texts: Vec<(u32, String)>,
    ) -> Result<Shipped, OverlapError> {
        let postings = Arc::new(ShippedPostings::new(spec, held)?);
        Ok(Shipped::sharing(postings, Arc::new(ShippedTexts::unshared(texts))))
    }

    /// The postings and texts shipped to a group of queries, which its checks share (each
    /// list and each text sent once to the group).
    pub fn sharing(postings: Arc<ShippedPostings>, texts: Arc<ShippedTexts>) -> Shipped {
        Shipped { postings, texts }
    }

    /// Ships more texts to this query's check (a check that reads its sources as it asks for
    /// them, [`super::stored`]); a document given again keeps its last text.
    pub(crate) fn ship(&mut self, more: impl IntoIterator<Item = (u32, String)>) {
        // A query's own texts are not shared (`Shipped::new`), and nothing of them is kept
        // between checks (`NO_SCOPE`), so they may grow between passes.
        let own = Arc::get_mut(&mut self.texts).expect("the texts of one query's check");
        debug_assert!(own.scope == NO_SCOPE);
        own.texts.extend(more);
    }

    /// The texts shipped, by document.
    pub(crate) fn into_texts(self) -> FxHashMap<u32, String> {
        Arc::try_unwrap(self.texts).map_or_else(|shared| shared.texts.clone(), |t| t.texts)
    }
}

impl Holdings for Shipped {
    fn built(&self, key: u32) -> &[u32] {
        let p = &*self.postings;
        let j = p.slot.get(&key).map(|&j| j as usize);
        super::index::list_of(&p.keys, &p.offsets, &p.postings, j)
    }

    fn recent(&self, _key: u32) -> &[u32] {
        &[]
    }

    fn no_keys(&self) -> bool {
        // No key is held: the check finds nothing, as against an empty index.
        self.postings.keys.is_empty()
    }

    fn live(&self, _doc: u32) -> bool {
        true
    }

    fn lists_only_live(&self) -> bool {
        // Every document listed is live (see `live`): holders are counted from the lengths.
        true
    }

    fn listed_lens(&self, keys: &[u32]) -> Option<Vec<u32>> {
        let p = &*self.postings;
        let lens = p.lens.as_ref()?;
        Some(keys.iter().map(|k| p.slot.get(k).map_or(0, |&j| lens[j as usize])).collect())
    }

    fn text(&self, doc: u32) -> Option<&str> {
        self.texts.texts.get(&doc).map(String::as_str)
    }
}

/// What a check of shipped parts gave.
#[derive(Debug)]
pub enum Step {
    /// The answer: the one an index of the whole collection gives.
    Done(Overlap),
    /// Check again with these documents' texts shipped too.
    Needs(Vec<u32>),
}

/// Checks `text` with the parts shipped. `own`: the query's own number in the collection (a
/// document of its id, or the query itself within a corpus), never a source; `exclude`: never
/// sources either; `within`: the query is a document of the corpus checked within itself (a
/// stretch several documents hold goes to the earliest, as
/// [`PassageIndex::check_member`](super::PassageIndex::check_member) gives it), else it is
/// checked against the collection ([`PassageIndex::check`](super::PassageIndex::check)).
pub fn check(
    spec: &OverlapSpec,
    shipped: &Shipped,
    text: &str,
    own: Option<u32>,
    exclude: &[u32],
    within: bool,
) -> Result<Step, OverlapError> {
    check_until(spec, shipped, text, own, exclude, within, None)
}

/// [`check`] that also stops between sources when `stop` is set (a service's check that its
/// client gave up): [`OverlapError::Stopped`].
pub fn check_until(
    spec: &OverlapSpec,
    shipped: &Shipped,
    text: &str,
    own: Option<u32>,
    exclude: &[u32],
    within: bool,
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> Result<Step, OverlapError> {
    spec.validate()?;
    if text.len() >= u32::MAX as usize {
        return Err(OverlapError::TooLong { id: "the query".into(), bytes: text.len() });
    }
    let by = if within { Attribution::Earliest } else { Attribution::BestMatch };
    SCRATCH.with_borrow_mut(|s| {
        let stopped = || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
        match check_in(shipped, spec, text, own, exclude, by, &stopped, s, shipped.texts.scope) {
            Ok(found) => Ok(Step::Done(found)),
            Err(Halt::Needs(docs)) => Ok(Step::Needs(docs)),
            Err(Halt::Stopped) => Err(OverlapError::Stopped),
        }
    })
}

#[cfg(test)]
pub(crate) mod tests {
    //! The parts against an index of the whole collection: the same answer, whatever was
    //! shipped first.
    use super::*;
    use crate::overlap::{OnExistingId, PassageIndex};
    use proptest::prelude::*;

    /// The postings of every key of the query, as the distributed run joins them: each
    /// document's fingerprints grouped by key (all holders; [`Shipped::new`] keeps the first).
    fn held(spec: &OverlapSpec, docs: &[String], query: &str) -> Vec<(u32, Vec<u32>)> {
        held_of(spec, docs, &query_keys(spec, query).expect("spec"))
    }

    /// The postings of the keys `wanted` (sorted) hold, as [`held`] gives them.
    fn held_of(spec: &OverlapSpec, docs: &[String], wanted: &[u32]) -> Vec<(u32, Vec<u32>)> {
        let mut by_key: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for (d, t) in docs.iter().enumerate() {
            for k in fingerprints(spec, t).expect("spec") {
                by_key.entry(k).or_default().push(d as u32);
            }
        }
        // In any order, as a shuffle brings them.
        by_key
            .into_iter()
            .rev()
            .filter(|(k, _)| wanted.binary_search(k).is_ok())
            .map(|(k, mut v)| {
                v.reverse();
                (k, v)
            })
            .collect()
    }

    #[test]
    fn postings_are_kept_ascending_each_once_and_capped_however_they_come() {
        let spec = OverlapSpec { max_postings: 3, ..OverlapSpec::default() };
        let lists = |held: Vec<(u32, Vec<u32>)>| {
            let s = ShippedPostings::new(&spec, held).expect("new");
            (s.keys, s.offsets, s.postings)
        };
        let want = (vec![5, 9, 12], vec![0, 3, 4, 7], vec![1, 2, 7, 4, 0, 3, 8]);
        // As the distributed join gives them: ascending, each once, longer than the cap.
        assert_eq!(lists(vec![(9, vec![4]), (5, vec![1, 2, 7, 9]), (12, vec![0, 3, 8])]), want);
        // In any order, with repeats; a key with no holder is left out.
        let shuffled =
            vec![(12, vec![8, 0, 3, 3]), (7, vec![]), (5, vec![9, 7, 1, 2, 1]), (9, vec![4])];
        assert_eq!(lists(shuffled), want);
        let twice = ShippedPostings::new(&spec, vec![(5, vec![1]), (5, vec![2])]);
        assert!(twice.is_err(), "a key given twice");
    }

    /// Each key's whole list (its first `max_postings` holders) shortened as a first pass
    /// takes it: the first [`first_holders_needed`], and `also` where the whole list has them.
    fn shortened(
        spec: &OverlapSpec,
        held: Vec<(u32, Vec<u32>)>,
        excluded: usize,
        also: &[u32],
    ) -> Vec<(u32, u32, Vec<u32>)> {
        held.into_iter()
            .map(|(k, mut docs)| {
                docs.sort_unstable();
                docs.truncate(spec.max_postings as usize);
                let mut first: Vec<u32> =
                    docs.iter().take(first_holders_needed(spec, excluded)).copied().collect();
                first.extend(also.iter().filter(|d| docs.contains(d)));
                first.sort_unstable();
                first.dedup();
                (k, docs.len() as u32, first)
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// A first pass on each list's first holders and length answers a query with no
        /// candidate as the whole lists do, and asks for the texts they ask for (its document
        /// frequencies exact when the query's own document and the excluded ones are given).
        #[test]
        fn a_first_pass_on_first_holders_asks_what_the_whole_lists_ask(
            docs in prop::collection::vec(prop::collection::vec(0usize..7, 12..60), 40..90),
            max_postings in 20u32..100,
            member in any::<bool>(),
            exclude_some in any::<bool>(),
            rare_query in any::<bool>(),
        ) {
            // Most words common (lists longer than the first holders kept), a few rare.
            let vocab = ["a", "b", "c", "a", "b", "r1", "r2"];
            let docs: Vec<String> = docs
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let mut w: Vec<String> = d.iter().map(|&j| vocab[j].to_string()).collect();
                    w.push(format!("only{i}"));
                    w.join(" ")
                })
                .collect();
            let spec = OverlapSpec { max_postings, min_density: 0.0, ..OverlapSpec::default() };
            let n = docs.len() as u32 - 1;
            let (query, own) = match (member, rare_query) {
                (true, _) => (docs[n as usize].clone(), Some(n)),
                (false, true) => ("zz yy xx ww vv uu tt ss rr qq pp".to_string(), None),
                (false, false) => (docs[3].clone() + " " + &docs[7], None),
            };
            let exclude: Vec<u32> = if exclude_some { vec![0, 5] } else { vec![] };
            let whole = Shipped::new(&spec, held(&spec, &docs, &query), vec![]).expect("new");
            let also: Vec<u32> = own.into_iter().chain(exclude.iter().copied()).collect();
            let first = ShippedPostings::first_holders(
                &spec,
                shortened(&spec, held(&spec, &docs, &query), exclude.len(), &also),
            )
            .expect("first holders");
            prop_assert!(first.postings.len() <= whole.postings.postings.len());
            let first = Shipped::sharing(Arc::new(first), Arc::default());
            let within = member;
            let want = check(&spec, &whole, &query, own, &exclude, within).expect("check");
            let got = check(&spec, &first, &query, own, &exclude, within).expect("check");
            match (want, got) {
                (Step::Done(w), Step::Done(g)) => prop_assert_eq!(w, g),
                (Step::Needs(w), Step::Needs(g)) => prop_assert_eq!(w, g),
                (w, g) => prop_assert!(false, "whole lists {:?}, first holders {:?}", w, g),
            }
        }
    }

    /// A first pass aligns nothing, even with the texts at hand: its lists cannot count a
    /// passage's holders.
    #[test]
    fn a_first_pass_never_aligns() {
        let spec = OverlapSpec::default();
        let docs = vec![
            "Winnowing selects the minimum hash in every window of consecutive k-gram hashes, \
             so that any match long enough is certain to share a fingerprint."
                .to_string(),
        ];
        let query = docs[0].clone();
        let held = held(&spec, &docs, &query);
        let first = ShippedPostings::first_holders(&spec, shortened(&spec, held, 0, &[]))
            .expect("first holders");
        let texts = Arc::new(ShippedTexts::new([(0, docs[0].clone())]));
        let shipped = Shipped::sharing(Arc::new(first), texts);
        match check(&spec, &shipped, &query, None, &[], false).expect("check") {
            Step::Needs(d) => assert_eq!(d, vec![0], "the whole lists' check would align it"),
            Step::Done(o) => panic!("a first pass answered {o:?}"),
        }
        let bad = ShippedPostings::first_holders(&spec, vec![(7, 2, vec![3, 1])]);
        assert!(bad.is_err(), "holders out of order");
        let bad = ShippedPostings::first_holders(&spec, vec![(7, 1, vec![1, 3])]);
        assert!(bad.is_err(), "more first holders than the list holds");
    }

    /// Checks until done, shipping what is asked; returns the answer and the passes.
    fn by_parts(
        spec: &OverlapSpec,
        docs: &[String],
        query: &str,
        own: Option<u32>,
        exclude: &[u32],
        within: bool,
    ) -> (Overlap, usize) {
        let mut texts: Vec<(u32, String)> = Vec::new();
        for pass in 1.. {
            let shipped = Shipped::new(spec, held(spec, docs, query), texts.clone()).expect("new");
            match check(spec, &shipped, query, own, exclude, within).expect("check") {
                Step::Done(found) => return (found, pass),
                Step::Needs(needed) => {
                    assert!(!needed.is_empty());
                    for d in needed {
                        assert!(texts.iter().all(|(x, _)| *x != d), "{d} asked twice");
                        texts.push((d, docs[d as usize].clone()));
                    }
                }
            }
        }
        unreachable!()
    }

    /// Texts over a small vocabulary, and queries made of their stretches with words between.
    pub(crate) fn corpus() -> impl Strategy<Value = (Vec<String>, String)> {
        let vocab: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let words = prop::collection::vec(0usize..40, 10..80);
        (
            prop::collection::vec(words.clone(), 1..12),
            prop::collection::vec((0usize..12, 0usize..80, 5usize..40, 0usize..5), 1..6),
        )
            .prop_map(move |(docs, picks)| {
                let docs: Vec<Vec<&str>> =
                    docs.iter().map(|d| d.iter().map(|&i| vocab[i].as_str()).collect()).collect();
                let mut query: Vec<&str> = Vec::new();
                for (d, at, len, noise) in picks {
                    let doc = &docs[d % docs.len()];
                    let at = at % doc.len();
                    query.extend(&doc[at..(at + len).min(doc.len())]);
                    query.extend(std::iter::repeat_n("filler", noise));
                }
                (docs.iter().map(|d| d.join(" ")).collect(), query.join(" "))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn a_check_by_parts_gives_the_index_answer(
            (docs, query) in corpus(),
            max_postings in 1u32..6,
            max_sources in 1u32..6,
            min_units in 3u32..10,
            as_member in any::<bool>(),
            exclude_first in any::<bool>(),
        ) {
            let spec = OverlapSpec {
                max_postings,
                max_sources,
                min_units,
                min_density: 0.0,
                ..OverlapSpec::default()
            };
            let mut index = PassageIndex::new(spec.clone()).expect("index");
            let named: Vec<(String, String)> =
                docs.iter().enumerate().map(|(i, t)| (format!("d{i}"), t.clone())).collect();
            index.add_documents(named, OnExistingId::Refuse).expect("add");
            let exclude: Vec<u32> = if exclude_first && docs.len() > 1 { vec![0] } else { vec![] };
            if as_member {
                // Within a corpus: the last document, checked against the others.
                let n = docs.len() as u32 - 1;
                let want = index.check_member(n, &exclude).expect("check");
                let (got, _) = by_parts(&spec, &docs, &docs[n as usize], Some(n), &exclude, true);
                prop_assert_eq!(got, want);
            } else {
                let want = index.check(None, &query, &exclude).expect("check");
                let (got, _) = by_parts(&spec, &docs, &query, None, &exclude, false);
                prop_assert_eq!(got, want);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// A group of queries checked with one set of shipped postings and texts (each check
        /// reading the lists of the group's keys, and reusing the sources' hashes the group's
        /// earlier checks computed) gives each the index's answer.
        #[test]
        fn checks_sharing_shipped_texts_give_the_index_answers(
            (docs, _) in corpus(),
            max_postings in 1u32..6,
            min_units in 3u32..10,
        ) {
            let spec = OverlapSpec { max_postings, min_units, min_density: 0.0, ..OverlapSpec::default() };
            let mut index = PassageIndex::new(spec.clone()).expect("index");
            let named: Vec<(String, String)> =
                docs.iter().enumerate().map(|(i, t)| (format!("d{i}"), t.clone())).collect();
            index.add_documents(named, OnExistingId::Refuse).expect("add");
            let texts = Arc::new(ShippedTexts::new(
                docs.iter().enumerate().map(|(i, t)| (i as u32, t.clone())),
            ));
            // Every key any query of the group reads, each once.
            let mut wanted: Vec<u32> = docs
                .iter()
                .flat_map(|d| query_keys(&spec, d).expect("spec"))
                .collect();
            wanted.sort_unstable();
            wanted.dedup();
            let postings =
                Arc::new(ShippedPostings::new(&spec, held_of(&spec, &docs, &wanted)).expect("new"));
            // Twice over, so that the second round reads what the first kept.
            for n in (0..docs.len() as u32).chain(0..docs.len() as u32) {
                let shipped = Shipped::sharing(Arc::clone(&postings), Arc::clone(&texts));
                let got = match check(&spec, &shipped, &docs[n as usize], Some(n), &[], true)
                    .expect("check")
                {
                    Step::Done(found) => found,
                    Step::Needs(d) => panic!("every text was shipped, and {d:?} asked"),
                };
                prop_assert_eq!(got, index.check_member(n, &[]).expect("check"));
            }
        }
    }

    #[test]
    fn a_query_without_a_held_key_is_done_at_once() {
        let spec = OverlapSpec::default();
        let docs = vec!["alpha beta gamma delta epsilon zeta eta theta".to_string()];
        let (found, passes) =
            by_parts(&spec, &docs, "nothing here is shared at all", None, &[], false);
        assert_eq!((found.passages.len(), passes), (0, 1));
    }

    /// A query copying from more documents than one pass ships: more passes, the index's answer.
    #[test]
    fn a_query_of_many_sources_takes_more_passes_and_gives_the_index_answer() {
        let spec = OverlapSpec::default();
        let docs: Vec<String> = (0..300)
            .map(|d| (0..40).map(|i| format!("d{d}w{i}")).collect::<Vec<_>>().join(" "))
            .collect();
        let query: String = docs.iter().map(String::as_str).collect::<Vec<_>>().join(". ");
        let mut index = PassageIndex::new(spec.clone()).expect("index");
        let named = docs.iter().enumerate().map(|(i, t)| (format!("d{i}"), t.clone())).collect();
        index.add_documents(named, OnExistingId::Refuse).expect("add");
        let want = index.check(None, &query, &[]).expect("check");
        let (got, passes) = by_parts(&spec, &docs, &query, None, &[], false);
        assert_eq!(want.sources.len(), 300);
        assert!(passes >= 3, "{passes} passes");
        assert_eq!(got, want);
    }
}
