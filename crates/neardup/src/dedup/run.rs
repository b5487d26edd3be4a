//! The run: exact-duplicate groups, candidates among their representatives, parallel exact
//! verification, union-find clusters, the keeper rule; and the outcome, whose pairs are
//! expanded on demand so that every pair at or above the threshold can be listed without
//! holding them all.

use neardup_index::{candidate_pairs_capped, hamming_pairs_capped};
use rayon::prelude::*;

use super::store::ReadScratch;
use super::union_find::UnionFind;
use super::{Dedup, DedupError, Method};

/// A verified pair, by document position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// The earlier document.
    pub a: u32,
    /// The later document.
    pub b: u32,
    /// Its similarity under the verification measure.
    pub similarity: f64,
}

/// A cluster of two or more documents.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Document positions, ascending.
    pub members: Vec<u32>,
    /// The kept document.
    pub keep: u32,
    /// The smallest similarity among the verified pairs that joined it (its weakest link).
    pub similarity: f64,
}

const NO_GROUP: u32 = u32::MAX;

/// What another threshold would have given ([`DedupOutcome::at_thresholds`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AtThreshold {
    /// The threshold.
    pub threshold: f64,
    /// Pairs at or above it (copies included).
    pub pairs: u64,
    /// Clusters of two or more documents.
    pub clusters: u64,
    /// Documents dropped (each cluster keeps one).
    pub dropped: u64,
}

/// The result of [`Dedup::run`].
///
/// Pairs come in two forms. [`DedupOutcome::pairs`] lists **every** pair of documents at or
/// above the threshold (the complete answer to "which documents match which"), expanded on
/// demand from the compact form: the verified [`edges`](DedupOutcome::edges) between the
/// representatives of exact-duplicate groups, and the groups themselves (every two copies in
/// a group match with similarity 1, and a copy matches whatever its representative matches, with
/// the same similarity, because the verification sees identical input). The compact form is
/// linear in the number of documents whatever the groups; the complete one is quadratic in a
/// group's size, so it is streamed, never stored.
#[derive(Debug, Clone, Default)]
pub struct DedupOutcome {
    /// Verified pairs between the representatives (first copies) of exact-duplicate groups,
    /// sorted by `(a, b)`: the compact form, with [`DedupOutcome::groups`].
    pub edges: Vec<Pair>,
    /// Clusters of two or more documents, ordered by their first member.
    pub clusters: Vec<Cluster>,
    /// For each document, the index of its cluster in `clusters`, or `None` if it is alone.
    pub cluster_of: Vec<Option<u32>>,
    /// For each document, whether it is kept.
    pub kept: Vec<bool>,
    /// Candidate pairs checked.
    pub candidates: usize,
    /// Documents merged into an earlier exact duplicate before candidate search.
    pub exact_duplicates: usize,
    /// For each document, its exact-duplicate group, or `NO_GROUP`.
    group_of: Vec<u32>,
    /// The members of each group, ascending, group after group.
    group_members: Vec<u32>,
    /// `group_members[group_bounds[g]..group_bounds[g + 1]]` is group `g`.
    group_bounds: Vec<u32>,
    /// Documents `0..seen` came from a saved index: pairs among them are not reported.
    seen: u32,
}

impl DedupOutcome {
    /// Keeps the documents at `positions` that the run dropped (a reviewer's "not a
    /// duplicate", `neardup dedup --decisions`); returns how many changed. Clusters and pairs
    /// stay as found: the decision changes what is kept, not what is similar.
    pub fn keep_also(&mut self, positions: impl IntoIterator<Item = u32>) -> u64 {
        let mut changed = 0;
        for p in positions {
            if let Some(k) = self.kept.get_mut(p as usize) {
                changed += u64::from(!*k);
                *k = true;
            }
        }
        changed
    }

    /// What each of `thresholds` (at or above the run's) would have given, from the pairs the
    /// run verified: pairs (copies included, as [`DedupOutcome::pair_weights`] counts them),
    /// clusters, and documents dropped (one kept per cluster). A threshold below the run's sees
    /// only the pairs at or above the run's: run lower to know what it would add. Returned in
    /// the order given. For a run by similarity without a loaded index: with `--against` old
    /// documents are never dropped, and Hamming verification accepts pairs by bits, so the
    /// counts would not be the run's.
    pub fn at_thresholds(&self, thresholds: &[f64]) -> Vec<AtThreshold> {
        let n = self.kept.len();
        let mut sets = super::union_find::UnionFind::new(n);
        // (clusters, dropped) so far.
        let mut counts = (0u64, 0u64);
        let join = |sets: &mut super::union_find::UnionFind, counts: &mut (u64, u64), a, b| {
            let (ra, rb) = (sets.find(a), sets.find(b));
            if ra == rb {
                return;
            }
            match (sets.size(ra) > 1, sets.size(rb) > 1) {
                (false, false) => counts.0 += 1,
                (true, true) => counts.0 -= 1,
                _ => {}
            }
            counts.1 += 1;
            sets.union(ra, rb);
        };
        for g in self.groups() {
            for &m in &g[1..] {
                join(&mut sets, &mut counts, g[0], m);
            }
        }
        let mut edges: Vec<&Pair> = self.edges.iter().collect();
        edges.sort_by(|x, y| y.similarity.total_cmp(&x.similarity));
        let mut weights: Vec<(f64, u64)> = self.pair_weights().collect();
        weights.sort_by(|x, y| y.0.total_cmp(&x.0));
        let mut order: Vec<usize> = (0..thresholds.len()).collect();
        order.sort_by(|&x, &y| thresholds[y].total_cmp(&thresholds[x]));
        let mut out = vec![AtThreshold::default(); thresholds.len()];
        let (mut e, mut w, mut pairs) = (0, 0, 0u64);
        for i in order {
            let t = thresholds[i];
            // The tolerance of verification itself (a pair at 0.7999999999999999 passes 0.8).
            let t = t - 1e-12;
            while e < edges.len() && edges[e].similarity >= t {
                join(&mut sets, &mut counts, edges[e].a, edges[e].b);
                e += 1;
            }
            while w < weights.len() && weights[w].0 >= t {
                pairs += weights[w].1;
                w += 1;
            }
            let (clusters, dropped) = counts;
            out[i] = AtThreshold { threshold: thresholds[i], pairs, clusters, dropped };
        }
        out
    }

    /// The number of documents that came from a loaded index (positions `0..seen`).
    pub fn seen(&self) -> u32 {
        self.seen
    }

    /// The exact-duplicate groups of two or more documents (the same features), each ascending;
    /// the first member is the group's representative.
    pub fn groups(&self) -> impl Iterator<Item = &[u32]> + '_ {
        self.group_bounds.windows(2).map(|w| &self.group_members[w[0] as usize..w[1] as usize])
    }

    /// The documents with exactly the features of `doc` (itself included), ascending.
    pub fn copies_of(&self, doc: u32) -> Copies<'_> {
        match self.group_of.get(doc as usize) {
            Some(&g) if g != NO_GROUP => Copies::Group(self.group(g).iter()),
            _ => Copies::One(Some(doc)),
        }
    }

    fn group(&self, g: u32) -> &[u32] {
        let (start, end) = (self.group_bounds[g as usize], self.group_bounds[g as usize + 1]);
        &self.group_members[start as usize..end as usize]
    }

    /// Every pair of documents at or above the threshold, each once with `a < b`: the pairs
    /// inside exact-duplicate groups (similarity 1), then, edge by edge, every copy of one end
    /// with every copy of the other. Pairs between two documents of a loaded index are left
    /// out (they were reported when that index was built). Streamed: memory stays constant
    /// whatever the number of pairs ([`DedupOutcome::pair_count`] says how many).
    pub fn pairs(&self) -> Pairs<'_> {
        Pairs { outcome: self, phase: Phase::Groups { group: 0, i: 0, j: 1 } }
    }

    /// The number of pairs [`DedupOutcome::pairs`] yields.
    pub fn pair_count(&self) -> u64 {
        self.pair_weights().map(|(_, n)| n).sum()
    }

    /// The similarities of [`DedupOutcome::pairs`] with how often each occurs, without listing
    /// the pairs: one item per exact-duplicate group (its pairs, at similarity 1) and one per
    /// verified edge (every copy of one end with every copy of the other, at the edge's
    /// similarity). Items with a count of 0 (old documents only) are left out.
    pub fn pair_weights(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let seen = u64::from(self.seen);
        let within = self.groups().map(move |g| {
            let n = g.len() as u64;
            let old = g.iter().filter(|&&m| u64::from(m) < seen).count() as u64;
            (1.0, n * (n - 1) / 2 - old * old.saturating_sub(1) / 2)
        });
        let between = self.edges.iter().map(move |e| {
            let (ca, cb) = (self.copies_of(e.a), self.copies_of(e.b));
            let (oa, ob) = (ca.old(self.seen), cb.old(self.seen));
            (e.similarity, ca.len() as u64 * cb.len() as u64 - oa * ob)
        });
        within.chain(between).filter(|&(_, n)| n > 0)
    }

    /// The compact form as pairs: each verified edge between representatives, and each copy
    /// with its group's first member (similarity 1). Joining them transitively gives the
    /// clusters; they are not every matching pair ([`DedupOutcome::pairs`] is).
    pub fn compact_pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        let seen = self.seen;
        let copies = self.groups().flat_map(move |g| {
            g[1..].iter().filter(move |&&m| m >= seen).map(move |&m| Pair {
                a: g[0],
                b: m,
                similarity: 1.0,
            })
        });
        copies.chain(self.edges.iter().copied())
    }
}

/// The copies of one document: see [`DedupOutcome::copies_of`].
#[derive(Debug, Clone)]
pub enum Copies<'a> {
    /// A document without copies.
    One(Option<u32>),
    /// The members of a group.
    Group(std::slice::Iter<'a, u32>),
}

impl Copies<'_> {
    /// How many documents of a loaded index (positions below `seen`) are among them.
    fn old(&self, seen: u32) -> u64 {
        self.clone().filter(|&m| m < seen).count() as u64
    }
}

impl Iterator for Copies<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match self {
            Copies::One(d) => d.take(),
            Copies::Group(it) => it.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Copies::One(d) => usize::from(d.is_some()),
            Copies::Group(it) => it.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Copies<'_> {}

#[derive(Debug, Clone)]
enum Phase {
    Groups { group: usize, i: usize, j: usize },
    Edges { edge: usize, i: usize, j: usize },
    Done,
}

/// Every pair at or above the threshold: see [`DedupOutcome::pairs`].
#[derive(Debug, Clone)]
pub struct Pairs<'a> {
    outcome: &'a DedupOutcome,
    phase: Phase,
}

impl Iterator for Pairs<'_> {
    type Item = Pair;

    fn next(&mut self) -> Option<Pair> {
        let o = self.outcome;
        loop {
            match &mut self.phase {
                Phase::Groups { group, i, j } => {
                    if *group + 1 >= o.group_bounds.len() {
                        self.phase = Phase::Edges { edge: 0, i: 0, j: 0 };
                        continue;
                    }
                    let members = o.group(*group as u32);
                    if *j >= members.len() {
                        *i += 1;
                        *j = *i + 1;
                        if *j >= members.len() {
                            *group += 1;
                            (*i, *j) = (0, 1);
                        }
                        continue;
                    }
                    let (a, b) = (members[*i], members[*j]);
                    *j += 1;
                    if b < o.seen {
                        continue; // both old: members are ascending, so a < b < seen
                    }
                    return Some(Pair { a, b, similarity: 1.0 });
                }
                Phase::Edges { edge, i, j } => {
                    let Some(e) = o.edges.get(*edge) else {
                        self.phase = Phase::Done;
                        continue;
                    };
                    let (ca, cb) = (o.copies_of(e.a).len(), o.copies_of(e.b).len());
                    if *i >= ca {
                        *edge += 1;
                        (*i, *j) = (0, 0);
                        continue;
                    }
                    if *j >= cb {
                        *i += 1;
                        *j = 0;
                        continue;
                    }
                    let x = nth(o, e.a, *i);
                    let y = nth(o, e.b, *j);
                    *j += 1;
                    if x < o.seen && y < o.seen {
                        continue;
                    }
                    return Some(Pair { a: x.min(y), b: x.max(y), similarity: e.similarity });
                }
                Phase::Done => return None,
            }
        }
    }
}

/// The `i`-th copy of `doc`.
fn nth(o: &DedupOutcome, doc: u32, i: usize) -> u32 {
    match o.group_of[doc as usize] {
        NO_GROUP => doc,
        g => o.group(g)[i],
    }
}

impl Dedup<'_> {
    /// Finds the clusters among everything added. Fails only when spilled verification data
    /// cannot be written or read back.
    pub fn run(&mut self) -> Result<DedupOutcome, DedupError> {
        self.docs.finish_writing()?;
        let n = self.docs.len();
        let seen = self.seen as u32;
        // Exact duplicates: group non-empty documents by their exact key; the first of each
        // group represents it.
        let mut by_key: Vec<u32> =
            (0..n as u32).filter(|&i| !self.docs.is_empty_at(i as usize)).collect();
        by_key.sort_unstable_by_key(|&i| (self.docs.exact(i as usize), i));
        let mut reps: Vec<u32> = Vec::new();
        let mut group_of = vec![NO_GROUP; n];
        let mut group_members: Vec<u32> = Vec::new();
        let mut group_bounds: Vec<u32> = vec![0];
        // Groups are numbered in order of their first member, so that output is in input order.
        let mut groups: Vec<&[u32]> = Vec::new();
        let mut exact_duplicates = 0;
        let mut start = 0;
        while start < by_key.len() {
            let key = self.docs.exact(by_key[start] as usize);
            let mut end = start + 1;
            while end < by_key.len() && self.docs.exact(by_key[end] as usize) == key {
                end += 1;
            }
            let members = &by_key[start..end];
            reps.push(members[0]);
            if members.len() > 1 {
                groups.push(members);
                // Old documents were deduplicated against each other when they were indexed.
                exact_duplicates += members[1..].iter().filter(|&&m| m >= seen).count();
            }
            start = end;
        }
        groups.sort_unstable_by_key(|g| g[0]);
        for (g, members) in groups.iter().enumerate() {
            for &m in members.iter() {
                group_of[m as usize] = g as u32;
            }
            group_members.extend_from_slice(members);
            group_bounds.push(group_members.len() as u32);
        }
        reps.sort_unstable();
        // A representative's group may hold new documents even if the representative is old.
        let has_new = |rep: u32| match group_of[rep as usize] {
            NO_GROUP => rep >= seen,
            g => group_members[group_bounds[g as usize + 1] as usize - 1] >= seen,
        };

        // Candidates among representatives, as positions into `reps`.
        let mut candidates: Vec<(u32, u32)> = Vec::new();
        if self.plan.method.uses_minhash() && self.docs.bands() > 0 {
            let docs = &self.docs;
            candidates = candidate_pairs_capped(
                reps.len(),
                docs.bands(),
                |i, band| docs.keys(reps[i] as usize)[band],
                Some(self.config.bucket_cap()),
            );
        }
        if self.plan.method.uses_simhash() {
            let fps: Vec<u128> = reps.iter().map(|&r| self.docs.simhash(r as usize)).collect();
            candidates.extend(
                hamming_pairs_capped(
                    self.plan.bits,
                    self.config.hamming,
                    &fps,
                    Some(self.config.bucket_cap()),
                )
                .expect("widths and distances are validated in Dedup::new")
                .into_iter()
                .map(|(x, y, _)| (x, y)),
            );
            if self.plan.method == Method::Both {
                candidates.sort_unstable();
                candidates.dedup();
            }
        }
        let to_check: Vec<(u32, u32)> = candidates
            .into_iter()
            .map(|(x, y)| (reps[x as usize], reps[y as usize]))
            .filter(|&(a, b)| has_new(a) || has_new(b))
            .collect();
        let checked = to_check.len();
        let checked_pairs: Vec<Option<Pair>> = to_check
            .par_iter()
            .with_min_len(1024)
            .map_init(ReadScratch::default, |scratch, &(a, b)| {
                let similarity = self.verified(a, b, scratch)?;
                Ok(similarity.map(|similarity| Pair { a, b, similarity }))
            })
            .collect::<Result<_, DedupError>>()?;
        let mut edges: Vec<Pair> = checked_pairs.into_iter().flatten().collect();
        edges.sort_unstable_by_key(|p| (p.a, p.b));
        let mut outcome = DedupOutcome {
            edges,
            exact_duplicates,
            candidates: checked,
            group_of,
            group_members,
            group_bounds,
            seen,
            ..DedupOutcome::default()
        };
        self.cluster(&mut outcome);
        Ok(outcome)
    }

    /// The similarity of a candidate pair if it passes verification.
    fn verified(
        &self,
        a: u32,
        b: u32,
        scratch: &mut ReadScratch,
    ) -> Result<Option<f64>, DedupError> {
        let (threshold, hamming) = (self.config.threshold, self.config.hamming);
        self.docs.with_pair(a as usize, b as usize, scratch, |da, db| {
            super::sketch::verify(&self.plan, threshold, hamming, da, db)
        })
    }

    /// Clusters: the components of the edges and the exact-duplicate groups.
    fn cluster(&self, o: &mut DedupOutcome) {
        let n = self.docs.len();
        let mut sets = UnionFind::new(n);
        for g in o.groups() {
            // A group of old documents only was clustered when its index was built.
            if g[g.len() - 1] < o.seen {
                continue;
            }
            for &m in &g[1..] {
                sets.union(g[0], m);
            }
        }
        for p in &o.edges {
            sets.union(p.a, p.b);
        }
        // Group members by root, in order of first member.
        let mut cluster_of_root: Vec<u32> = vec![u32::MAX; n];
        let mut clusters: Vec<Cluster> = Vec::new();
        let mut cluster_of = vec![None; n];
        for i in 0..n as u32 {
            if sets.size(i) < 2 {
                continue;
            }
            let root = sets.find(i) as usize;
            if cluster_of_root[root] == u32::MAX {
                cluster_of_root[root] = clusters.len() as u32;
                clusters.push(Cluster { members: Vec::new(), keep: i, similarity: 1.0 });
            }
            let c = cluster_of_root[root];
            clusters[c as usize].members.push(i);
            cluster_of[i as usize] = Some(c);
        }
        for p in &o.edges {
            if let Some(c) = cluster_of[p.a as usize] {
                let cluster = &mut clusters[c as usize];
                cluster.similarity = cluster.similarity.min(p.similarity);
            }
        }
        let mut kept = vec![true; n];
        for cluster in &mut clusters {
            cluster.keep = self.keeper(&cluster.members);
            for &m in &cluster.members {
                // Documents of a loaded index were kept before and are never dropped.
                kept[m as usize] = m == cluster.keep || (m as usize) < self.seen;
            }
        }
        o.clusters = clusters;
        o.cluster_of = cluster_of;
        o.kept = kept;
    }

    /// The keeper of a cluster: an old document if there is one (it was kept before), else the
    /// keep rule with ties to the first.
    fn keeper(&self, members: &[u32]) -> u32 {
        if let Some(&old) = members.iter().find(|&&m| (m as usize) < self.seen) {
            return old;
        }
        let len = |m: u32| self.docs.doc_len(m as usize);
        super::keep::keeper_of(&self.config.keep, members, len, &self.ranks).unwrap_or(members[0])
    }
}
