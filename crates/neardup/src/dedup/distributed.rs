//! The parts of a dedup that a distributed run (`neardup.spark`) does per partition or on its
//! driver, with the rules of [`Dedup`](crate::Dedup): the candidate pairs of the buckets a
//! partition holds, under the same skew guard, and the clusters of a graph of verified pairs.

use neardup_index::{bucket_pairs, BucketCap};

use super::union_find::UnionFind;

/// The candidate pairs of rows `(bucket, position)` holding every member of each bucket they
/// name (a partition of rows shuffled by bucket): each bucket's pairs under `cap` (the rule of
/// [`SearchConfig::bucket_cap`](crate::SearchConfig::bucket_cap)), sorted, without repeats.
/// Returns the pairs (smaller position first) and the number of buckets the cap limited. The
/// rows are sorted in place.
pub fn bucket_candidates(rows: &mut [(i64, u64)], cap: BucketCap) -> (Vec<(u64, u64)>, usize) {
    rows.sort_unstable();
    let mut out = Vec::new();
    let mut members = Vec::new();
    let mut capped = 0;
    for run in rows.chunk_by(|x, y| x.0 == y.0) {
        if run.len() < 2 {
            continue;
        }
        members.clear();
        members.extend(run.iter().map(|&(_, pos)| pos));
        members.dedup();
        if members.len() > cap.max_bucket {
            capped += 1;
        }
        bucket_pairs(&members, Some(cap), &mut out);
    }
    out.sort_unstable();
    out.dedup();
    (out, capped)
}

/// The connected components of a graph given as edges between positions: each node of an edge
/// with its component's smallest node (which names the cluster), in node order.
pub fn components(edges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut nodes: Vec<u64> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let index = |x: u64| nodes.binary_search(&x).expect("every end is a node") as u32;
    let mut sets = UnionFind::new(nodes.len());
    for &(a, b) in edges {
        sets.union(index(a), index(b));
    }
    // Nodes are in ascending order, so the first node seen of a set is its smallest.
    let mut smallest = vec![u32::MAX; nodes.len()];
    (0..nodes.len() as u32)
        .map(|i| {
            let root = sets.find(i) as usize;
            if smallest[root] == u32::MAX {
                smallest[root] = i;
            }
            (nodes[i as usize], nodes[smallest[root] as usize])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Components by repeated relaxation: every node takes the smallest label of its
    /// neighbours until nothing changes.
    fn oracle(edges: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut label: std::collections::BTreeMap<u64, u64> =
            edges.iter().flat_map(|&(a, b)| [(a, a), (b, b)]).collect();
        loop {
            let mut changed = false;
            for &(a, b) in edges {
                let m = label[&a].min(label[&b]);
                for x in [a, b] {
                    if label[&x] > m {
                        label.insert(x, m);
                        changed = true;
                    }
                }
            }
            if !changed {
                return label.into_iter().collect();
            }
        }
    }

    proptest! {
        #[test]
        fn components_are_those_of_relaxation(
            edges in prop::collection::vec((0u64..40, 0u64..40), 0..60),
            scale in prop_oneof![Just(1u64), Just(1 << 33)],
        ) {
            let edges: Vec<(u64, u64)> = edges.iter().map(|&(a, b)| (a * scale, b * scale)).collect();
            prop_assert_eq!(components(&edges), oracle(&edges));
        }

        /// The pairs of a partition are every pair sharing a bucket (each bucket's members in
        /// full up to the cap; over it, its first members with the others), however the rows
        /// are ordered.
        #[test]
        fn bucket_candidates_pair_members_as_the_rule_says(
            rows in prop::collection::vec((0i64..6, 0u64..30), 0..80),
            max_bucket in 2usize..6,
            star_width in 1usize..3,
        ) {
            let cap = BucketCap { max_bucket, star_width };
            let mut shuffled = rows.clone();
            shuffled.reverse();
            let (pairs, capped) = bucket_candidates(&mut shuffled, cap);
            let mut want = std::collections::BTreeSet::new();
            let mut want_capped = 0;
            let buckets: std::collections::BTreeSet<i64> = rows.iter().map(|r| r.0).collect();
            for b in buckets {
                let members: std::collections::BTreeSet<u64> =
                    rows.iter().filter(|r| r.0 == b).map(|r| r.1).collect();
                let members: Vec<u64> = members.into_iter().collect();
                let heads = if members.len() > max_bucket {
                    want_capped += 1;
                    star_width.min(members.len())
                } else {
                    members.len()
                };
                for i in 0..heads {
                    for &y in &members[i + 1..] {
                        want.insert((members[i], y));
                    }
                }
            }
            prop_assert_eq!(pairs, want.into_iter().collect::<Vec<_>>());
            prop_assert_eq!(capped, want_capped);
        }
    }
}
