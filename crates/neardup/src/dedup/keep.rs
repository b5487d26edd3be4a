//! Which document of a cluster is kept: by input order, by length, or by a field of the records
//! (the newest crawl: `max:fetched_at`), and the values such a field holds.
//!
//! A rule is written as one string everywhere (specs, options, the command line):
//! `first`, `longest`, `shortest`, `max:FIELD`, `min:FIELD`. The library does not read records;
//! the caller gives each document's [`Rank`] (the field's value) with [`super::Dedup::push_ranked`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

/// What kind of value a keep field holds; one field holds one kind in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankKind {
    /// A number (or a string holding one).
    Number,
    /// An ISO 8601 date or date-time.
    Time,
}

impl RankKind {
    /// The name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            RankKind::Number => "a number",
            RankKind::Time => "a date",
        }
    }
}

/// A document's value of the keep field, ordered as a number: a date-time is its seconds since
/// 1970-01-01 UTC (a date is its midnight; a date-time without an offset is read as UTC).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rank {
    /// The value compared.
    pub value: f64,
    /// What it was.
    pub kind: RankKind,
}

impl Rank {
    /// The rank of a JSON value: a number; a string holding a number or an ISO 8601 date or
    /// date-time; `null` is no value (the document is kept only if no member has one). Anything
    /// else is an error saying what was found.
    pub fn from_json(value: &serde_json::Value) -> Result<Option<Rank>, String> {
        match value {
            serde_json::Value::Null => Ok(None),
            serde_json::Value::Number(n) => match n.as_f64() {
                Some(v) if v.is_finite() => Ok(Some(Rank { value: v, kind: RankKind::Number })),
                _ => Err(format!("the number {n} is out of range")),
            },
            serde_json::Value::String(s) => Rank::parse(s).map(Some),
            serde_json::Value::Bool(b) => Err(format!("expected a number or a date, found {b}")),
            serde_json::Value::Array(_) => {
                Err("expected a number or a date, found an array".to_string())
            }
            serde_json::Value::Object(_) => {
                Err("expected a number or a date, found an object".to_string())
            }
        }
    }

    /// The rank of a string: a number (`17`, `-2.5e3`), a date (`2024-05-01`) or a date-time
    /// (`2024-05-01T12:30:00Z`, `+08:00`, a space for the `T`, fractions of a second, no offset
    /// meaning UTC).
    pub fn parse(s: &str) -> Result<Rank, String> {
        let t = s.trim();
        if let Ok(v) = t.parse::<f64>() {
            if v.is_finite() {
                return Ok(Rank { value: v, kind: RankKind::Number });
            }
        }
        parse_time(t)
            .map(|value| Rank { value, kind: RankKind::Time })
            .ok_or_else(|| format!("{s:?} is neither a number nor an ISO 8601 date"))
    }
}

/// Seconds since 1970-01-01 UTC of an ISO 8601 date or date-time.
fn parse_time(t: &str) -> Option<f64> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let seconds = |utc: DateTime<chrono::Utc>| {
        utc.timestamp() as f64 + f64::from(utc.timestamp_subsec_nanos()) / 1e9
    };
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Some(seconds(d.to_utc()));
    }
    // RFC 3339 with a space, or without an offset (UTC).
    for format in ["%Y-%m-%d %H:%M:%S%.f%:z", "%Y-%m-%d %H:%M:%S%.fZ"] {
        if let Ok(d) = DateTime::parse_from_str(t, format) {
            return Some(seconds(d.to_utc()));
        }
    }
    let naive = t.strip_suffix('Z').unwrap_or(t);
    for format in
        ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]
    {
        if let Ok(d) = NaiveDateTime::parse_from_str(naive, format) {
            return Some(seconds(d.and_utc()));
        }
    }
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| seconds(d.and_utc()))
}

/// The documents' ranks under a rule that reads a field: `NaN` for none. Holds one kind.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ranks {
    values: Vec<f64>,
    kind: Option<RankKind>,
}

impl Ranks {
    /// Adds the next document's rank; refuses a kind other than the field's so far.
    pub(crate) fn push(&mut self, position: usize, rank: Option<Rank>) -> Result<(), RankKind> {
        // Documents pushed without a rank (or before the first ranked one) have none.
        self.values.resize(position, f64::NAN);
        match rank {
            Some(r) => {
                if let Some(kind) = self.kind {
                    if kind != r.kind {
                        return Err(kind);
                    }
                }
                self.kind = Some(r.kind);
                self.values.push(r.value);
            }
            None => self.values.push(f64::NAN),
        }
        Ok(())
    }

    /// The rank of a document (`None` when it has none).
    pub(crate) fn get(&self, position: u32) -> Option<f64> {
        self.values.get(position as usize).copied().filter(|v| !v.is_nan())
    }

    /// The kind the field holds, once a document had a value.
    pub(crate) fn kind(&self) -> Option<RankKind> {
        self.kind
    }
}

/// The member kept by a field rule: the largest (`max`) or smallest rank, ties and members
/// without one to the first; `None` when no member has a rank.
pub(crate) fn by_rank(members: &[u32], ranks: &Ranks, max: bool) -> Option<u32> {
    let mut best: Option<(u32, f64)> = None;
    for &m in members {
        let Some(v) = ranks.get(m) else { continue };
        let better = match best {
            None => true,
            Some((_, b)) => {
                if max {
                    v > b
                } else {
                    v < b
                }
            }
        };
        if better {
            best = Some((m, v));
        }
    }
    best.map(|(m, _)| m)
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
    fn numbers_and_dates_rank_in_time_order() {
        let r = |v: serde_json::Value| Rank::from_json(&v).expect("valid").expect("some");
        assert_eq!(r(json!(17)), Rank { value: 17.0, kind: RankKind::Number });
        assert_eq!(r(json!("-2.5e3")).value, -2500.0);
        assert_eq!(r(json!("1970-01-02")), Rank { value: 86_400.0, kind: RankKind::Time });
        let same = [
            "2024-05-01T12:00:00Z",
            "2024-05-01T20:00:00+08:00",
            "2024-05-01 12:00:00",
            "2024-05-01T12:00:00",
            "2024-05-01 20:00:00+08:00",
            "2024-05-01T12:00",
        ];
        let first = r(json!(same[0])).value;
        for s in same {
            assert_eq!(r(json!(s)).value, first, "{s}");
        }
        assert_eq!(r(json!("2024-05-01T12:00:00.250Z")).value, first + 0.25);
        assert!(r(json!("2024-05-02")).value > first);
        assert_eq!(Rank::from_json(&json!(null)), Ok(None));
        for (bad, says) in [
            (json!("yesterday"), "neither a number nor an ISO 8601 date"),
            (json!("2024-13-01"), "neither"),
            (json!(true), "found true"),
            (json!([1]), "an array"),
            (json!({"a": 1}), "an object"),
        ] {
            let e = Rank::from_json(&bad).expect_err("bad");
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn field_rules_pick_by_rank_ties_and_missing_to_the_first() {
        let mut ranks = Ranks::default();
        let n = |v| Some(Rank { value: v, kind: RankKind::Number });
        for (i, r) in [None, n(3.0), n(5.0), n(5.0), n(1.0)].into_iter().enumerate() {
            ranks.push(i, r).expect("one kind");
        }
        assert_eq!(by_rank(&[0, 1, 2, 3, 4], &ranks, true), Some(2));
        assert_eq!(by_rank(&[0, 1, 2, 3, 4], &ranks, false), Some(4));
        assert_eq!(by_rank(&[0], &ranks, true), None);
        assert_eq!(by_rank(&[7], &ranks, true), None, "past the end: no rank");
        let t = Some(Rank { value: 0.0, kind: RankKind::Time });
        assert_eq!(ranks.push(5, t), Err(RankKind::Number));
    }
}
