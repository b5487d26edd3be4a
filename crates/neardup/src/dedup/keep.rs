//! Which document of a cluster is kept: by input order, by length, or by a field of the records
//! (the newest crawl: `max:fetched_at`), and the values such a field holds.
//!
//! A rule is written as one string everywhere (specs, options, the command line):
//! `first`, `longest`, `shortest`, `max:FIELD`, `min:FIELD`. The library does not read records;
//! the caller gives each document's [`Rank`] (the field's value) with [`super::Dedup::push_ranked`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::rank::{Order, Rank, RankKind};

/// Which document of a cluster is kept. Ties, and documents without the field, go to the
/// first in input order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Keep {
    /// The first in input order.
    #[default]
    First,
    /// The longest (bytes of text).
    Longest,
    /// The shortest.
    Shortest,
    /// The one whose field (a number or an ISO 8601 date) is largest (the newest date).
    Max(String),
    /// The one whose field is smallest (the oldest date).
    Min(String),
}

impl Keep {
    /// The record field the rule reads, if it reads one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Keep::Max(f) | Keep::Min(f) => Some(f),
            Keep::First | Keep::Longest | Keep::Shortest => None,
        }
    }

    /// What the rule takes, for messages.
    pub const TAKES: &'static str =
        "first, longest, shortest, max:FIELD or min:FIELD (a field of numbers or ISO 8601 dates)";
}

impl fmt::Display for Keep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Keep::First => f.write_str("first"),
            Keep::Longest => f.write_str("longest"),
            Keep::Shortest => f.write_str("shortest"),
            Keep::Max(field) => write!(f, "max:{field}"),
            Keep::Min(field) => write!(f, "min:{field}"),
        }
    }
}

impl FromStr for Keep {
    type Err = String;

    fn from_str(s: &str) -> Result<Keep, String> {
        let by_field = |field: &str, make: fn(String) -> Keep| {
            if field.trim().is_empty() {
                Err(format!("{s:?} names no field (write it as max:fetched_at)"))
            } else {
                Ok(make(field.to_string()))
            }
        };
        match s {
            "first" => Ok(Keep::First),
            "longest" => Ok(Keep::Longest),
            "shortest" => Ok(Keep::Shortest),
            _ => match s.split_once(':') {
                Some(("max", field)) => by_field(field, Keep::Max),
                Some(("min", field)) => by_field(field, Keep::Min),
                _ => Err(format!("unknown keep rule {s:?}: expected {}", Keep::TAKES)),
            },
        }
    }
}

impl TryFrom<String> for Keep {
    type Error = String;

    fn try_from(s: String) -> Result<Keep, String> {
        s.parse()
    }
}

impl From<Keep> for String {
    fn from(k: Keep) -> String {
        k.to_string()
    }
}

/// The documents' ranks under a rule that reads a field, by position ([`Order::NONE`] for
/// none). Holds one kind.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ranks {
    values: Vec<Order>,
    kind: Option<RankKind>,
}

impl Ranks {
    /// Adds the next document's rank; refuses a kind other than the field's so far.
    pub(crate) fn push(&mut self, position: usize, rank: Option<Rank>) -> Result<(), RankKind> {
        // Documents pushed without a rank (or before the first ranked one) have none.
        self.values.resize(position, Order::NONE);
        match rank {
            Some(r) => {
                if let Some(kind) = self.kind {
                    if kind != r.kind {
                        return Err(kind);
                    }
                }
                self.kind = Some(r.kind);
                self.values.push(r.order());
            }
            None => self.values.push(Order::NONE),
        }
        Ok(())
    }

    /// The rank of a document (`None` when it has none).
    pub(crate) fn get(&self, position: u32) -> Option<Order> {
        self.values.get(position as usize).copied().filter(|v| *v != Order::NONE)
    }

    /// The kind the field holds, once a document had a value.
    pub(crate) fn kind(&self) -> Option<RankKind> {
        self.kind
    }

    /// How many of the documents at `positions` have no rank.
    pub(crate) fn missing(&self, positions: std::ops::Range<usize>) -> u64 {
        positions.filter(|&p| self.get(p as u32).is_none()).count() as u64
    }
}

/// What a keep rule sorts a cluster's members by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    /// The length of the text in bytes.
    Len,
    /// The keep field's value ([`Rank::sort_key`]); members without one sort last, whichever
    /// way the rule sorts.
    Rank,
    /// The position in the input.
    Pos,
}

impl Keep {
    /// The rule as a sort of a cluster's members, best first: `(key, descending)` pairs, the
    /// input position last so ties go to the first. The library's keeper sorts by it, and a
    /// distributed job hands it to its engine's sort (Spark's window), so both keep the same
    /// document.
    pub fn order(&self) -> &'static [(SortBy, bool)] {
        match self {
            Keep::First => &[(SortBy::Pos, false)],
            Keep::Longest => &[(SortBy::Len, true), (SortBy::Pos, false)],
            Keep::Shortest => &[(SortBy::Len, false), (SortBy::Pos, false)],
            Keep::Max(_) => &[(SortBy::Rank, true), (SortBy::Pos, false)],
            Keep::Min(_) => &[(SortBy::Rank, false), (SortBy::Pos, false)],
        }
    }
}

/// The member of `members` (positions) the rule keeps: the first by [`Keep::order`], given
/// each member's length and the ranks.
pub(crate) fn keeper_of(
    keep: &Keep,
    members: &[u32],
    len: impl Fn(u32) -> u64,
    ranks: &Ranks,
) -> Option<u32> {
    let compare = |a: &u32, b: &u32| {
        for &(key, descending) in keep.order() {
            let order = match key {
                SortBy::Len => len(*a).cmp(&len(*b)),
                SortBy::Pos => a.cmp(b),
                SortBy::Rank => match (ranks.get(*a), ranks.get(*b)) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    // Without a value: last, in either direction.
                    (Some(_), None) => return std::cmp::Ordering::Less,
                    (None, Some(_)) => return std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                },
            };
            let order = if descending { order.reverse() } else { order };
            if order.is_ne() {
                return order;
            }
        }
        std::cmp::Ordering::Equal
    };
    members.iter().copied().min_by(compare)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_are_one_string() {
        for s in ["first", "longest", "shortest", "max:fetched_at", "min:meta.crawl"] {
            let k: Keep = s.parse().expect(s);
            assert_eq!(k.to_string(), s);
            assert_eq!(serde_json::to_value(&k).expect("json"), json!(s));
            assert_eq!(serde_json::from_value::<Keep>(json!(s)).expect("back"), k);
        }
        assert_eq!("max:a.b".parse::<Keep>().expect("max").field(), Some("a.b"));
        for bad in ["oldest", "max:", "max: ", "avg:x", ""] {
            let e = bad.parse::<Keep>().expect_err(bad);
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn length_rules_pick_by_length_ties_to_the_first() {
        let lens = [5u64, 9, 2, 9, 2];
        let pick = |keep: &str| {
            keeper_of(
                &keep.parse().expect("rule"),
                &[0, 1, 2, 3, 4],
                |m| lens[m as usize],
                &Ranks::default(),
            )
        };
        assert_eq!(pick("first"), Some(0));
        assert_eq!(pick("longest"), Some(1));
        assert_eq!(pick("shortest"), Some(2));
    }

    #[test]
    fn field_rules_pick_by_rank_ties_and_missing_to_the_first() {
        let mut ranks = Ranks::default();
        let n = |v: f64| Rank::from_f64(v);
        for (i, r) in [None, n(3.0), n(5.0), n(5.0), n(1.0)].into_iter().enumerate() {
            ranks.push(i, r).expect("one kind");
        }
        let by_rank = |members: &[u32], keep: &str| {
            keeper_of(&keep.parse().expect("rule"), members, |_| 0, &ranks)
        };
        assert_eq!(by_rank(&[0, 1, 2, 3, 4], "max:f"), Some(2));
        assert_eq!(by_rank(&[0, 1, 2, 3, 4], "min:f"), Some(4));
        assert_eq!(by_rank(&[0, 3], "max:f"), Some(3), "a member with a value before one without");
        assert_eq!(by_rank(&[0], "max:f"), Some(0), "none has one: the first");
        assert_eq!(by_rank(&[7, 0], "min:f"), Some(0), "past the end: no rank, ties by position");
        assert_eq!(ranks.missing(0..5), 1);
        let t = Some(Rank::from_nanos(0));
        assert_eq!(ranks.push(5, t), Err(RankKind::Number));
    }
}
