//! The values a keep rule's field holds (`--keep max:fetched_at`), compared exactly.
//!
//! A value is a number or an instant. Numbers are compared as the decimals they were written
//! as (`9007199254740993` is more than `9007199254740992`, which a double cannot tell apart;
//! `1.10` equals `1.1`), to 38 significant digits; instants as nanoseconds since 1970-01-01 UTC
//! (two crawl times 1 ns apart are ordered; as seconds in a double they were equal). `NaN` and
//! `null` are no value, as Python reads them: a document without a value is kept only when no
//! member of its cluster has one. Infinities are values, beyond every number.

use std::cmp::Ordering;

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

/// A document's value of the keep field.
///
/// Ordered exactly ([`Rank::compare`]): numbers as written, to 38 significant digits; instants
/// to the nanosecond. [`Rank::value`] is the same value as a double, for surfaces that move
/// ranks as numbers; two ranks may differ where their doubles are equal.
#[derive(Debug, Clone, Copy)]
pub struct Rank {
    /// The value as a double: the number, or the instant's seconds since 1970-01-01 UTC (a date
    /// is its midnight; a date-time without an offset is read as UTC). Rounded where a double
    /// cannot hold it; comparisons use the exact value.
    pub value: f64,
    /// What it was.
    pub kind: RankKind,
    order: Order,
}

impl PartialEq for Rank {
    fn eq(&self, other: &Rank) -> bool {
        self.kind == other.kind && self.order == other.order
    }
}

/// A value's place in a total order, comparable field by field (the derived order): numbers
/// by sign, decimal exponent and 38 significant digits (with a bit for digits beyond them),
/// instants by nanoseconds. 24 bytes, so a million ranks take 24 MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Order {
    class: i32,
    hi: u64,
    lo: u64,
}

/// The significant digits kept exactly.
const DIGITS: usize = 38;
/// Decimal exponents are clamped to +-2^29 (a number past 10^(2^29) has no other use here).
const MAX_EXPONENT: i64 = 1 << 29;

impl Order {
    /// No value (sorts first; never compared as a value).
    pub(crate) const NONE: Order = Order { class: i32::MIN, hi: 0, lo: 0 };
    const NEG_INF: Order = Order { class: i32::MIN + 1, hi: 0, lo: 0 };
    const POS_INF: Order = Order { class: i32::MAX, hi: 0, lo: 0 };

    fn new(class: i32, mantissa: u128) -> Order {
        Order { class, hi: (mantissa >> 64) as u64, lo: mantissa as u64 }
    }

    /// The order of `0.d1d2d3... x 10^point` (digits without leading zeros), negated if `neg`.
    fn decimal(neg: bool, digits: &[u8], point: i64) -> Order {
        let Some(first) = digits.iter().position(|&d| d != 0) else {
            return Order::new(0, 0); // zero, whatever its sign
        };
        let digits = &digits[first..];
        let point = (point - first as i64).clamp(-MAX_EXPONENT, MAX_EXPONENT) as i32;
        let mut mantissa: u128 = 0;
        for i in 0..DIGITS {
            mantissa = mantissa * 10 + u128::from(digits.get(i).copied().unwrap_or(0));
        }
        // One more bit: digits past the 38th, so 38 equal digits and more are not equal.
        let sticky = digits.iter().skip(DIGITS).any(|&d| d != 0);
        let key = mantissa * 2 + u128::from(sticky);
        let class = (1 << 30) + point;
        if neg {
            Order::new(-class, u128::MAX - key)
        } else {
            Order::new(class, key)
        }
    }

    fn nanos(n: i128) -> Order {
        Order::new(0, (n as u128) ^ (1 << 127))
    }
}

impl Rank {
    fn number(order: Order, value: f64) -> Rank {
        Rank { value, kind: RankKind::Number, order }
    }

    /// The rank of an instant, in nanoseconds since 1970-01-01 UTC.
    pub fn from_nanos(nanos: i128) -> Rank {
        let (seconds, rest) = (nanos.div_euclid(1_000_000_000), nanos.rem_euclid(1_000_000_000));
        let value = seconds as f64 + rest as f64 / 1e9;
        Rank { value, kind: RankKind::Time, order: Order::nanos(nanos) }
    }

    /// The rank of an integer.
    pub fn from_i128(n: i128) -> Rank {
        let digits = n.unsigned_abs().to_string();
        let digits: Vec<u8> = digits.bytes().map(|b| b - b'0').collect();
        Rank::number(Order::decimal(n < 0, &digits, digits.len() as i64), n as f64)
    }

    /// The rank of a double: `None` for NaN (no value, as Python reads it); infinities are
    /// values beyond every number. Compared as the shortest decimal that reads back as it, so
    /// a double equals the text it was printed as.
    pub fn from_f64(v: f64) -> Option<Rank> {
        if v.is_nan() {
            return None;
        }
        if v.is_infinite() {
            let order = if v > 0.0 { Order::POS_INF } else { Order::NEG_INF };
            return Some(Rank::number(order, v));
        }
        let text = format!("{v:e}");
        decimal(&text).map(|(order, _)| Rank::number(order, v))
    }

    /// The rank of a JSON value: a number (compared as written); a string holding a number or
    /// an ISO 8601 date or date-time ([`Rank::parse_value`]); `null` is no value (the
    /// document is kept only if no member has one). Anything else is an error saying what
    /// was found.
    pub fn from_json(value: &serde_json::Value) -> Result<Option<Rank>, String> {
        match value {
            serde_json::Value::Null => Ok(None),
            // serde_json prints an integer as it was, a double as its shortest decimal.
            serde_json::Value::Number(n) => Rank::from_json_text(&n.to_string()),
            serde_json::Value::String(s) => Rank::parse_value(s),
            serde_json::Value::Bool(b) => Err(format!("expected a number or a date, found {b}")),
            serde_json::Value::Array(_) => {
                Err("expected a number or a date, found an array".to_string())
            }
            serde_json::Value::Object(_) => {
                Err("expected a number or a date, found an object".to_string())
            }
        }
    }

    /// The rank of a JSON value given as its text (a record's field as written): a number is
    /// compared as its digits, so integers past 2^53 and past 64 bits keep their order.
    pub fn from_json_text(json: &str) -> Result<Option<Rank>, String> {
        let json = json.trim();
        let found = |what: &str| Err(format!("expected a number or a date, found {what}"));
        match json.as_bytes().first() {
            Some(b'"') => {
                let s: String = serde_json::from_str(json).map_err(|e| e.to_string())?;
                Rank::parse_value(&s)
            }
            Some(b'n') => Ok(None),
            Some(b't') => found("true"),
            Some(b'f') => found("false"),
            Some(b'[') => found("an array"),
            Some(b'{') => found("an object"),
            _ => match decimal(json) {
                Some((order, value)) => Ok(Some(Rank::number(order, value))),
                None => Err(format!("{json:?} is not a JSON number")),
            },
        }
    }

    /// The rank of a string: a number (`17`, `-2.5e3`, `Infinity`), a date (`2024-05-01`) or a
    /// date-time (`2024-05-01T12:30:00.123456789Z`, `+08:00`, a space for the `T`, fractions of
    /// a second to the nanosecond, no offset meaning UTC); `NaN` is no value.
    pub fn parse_value(s: &str) -> Result<Option<Rank>, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("nan") {
            return Ok(None);
        }
        if let Some((order, value)) = decimal(t) {
            return Ok(Some(Rank::number(order, value)));
        }
        let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
        if unsigned.eq_ignore_ascii_case("inf") || unsigned.eq_ignore_ascii_case("infinity") {
            return Ok(Rank::from_f64(if t.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }));
        }
        parse_time(t)
            .map(|nanos| Some(Rank::from_nanos(nanos)))
            .ok_or_else(|| format!("{s:?} is neither a number nor an ISO 8601 date"))
    }

    /// [`Rank::parse_value`] for a string that must hold a value (`NaN` is an error).
    pub fn parse(s: &str) -> Result<Rank, String> {
        Rank::parse_value(s)?.ok_or_else(|| format!("{s:?} is no value (NaN)"))
    }

    /// How two ranks compare, exactly; `None` when they are of different kinds.
    pub fn compare(&self, other: &Rank) -> Option<Ordering> {
        (self.kind == other.kind).then(|| self.order.cmp(&other.order))
    }

    pub(crate) fn order(&self) -> Order {
        self.order
    }

    /// 20 bytes whose order (unsigned, byte by byte) is the exact order of ranks of one kind,
    /// for a system that sorts byte strings but would round a number to a double (Spark sorts
    /// its binary columns so): integers past 2^53 and nanosecond instants stay apart.
    pub fn sort_key(&self) -> [u8; 20] {
        let mut key = [0u8; 20];
        // The class is signed: its sign bit flipped, it orders as unsigned bytes do.
        key[..4].copy_from_slice(&((self.order.class as u32) ^ (1 << 31)).to_be_bytes());
        key[4..12].copy_from_slice(&self.order.hi.to_be_bytes());
        key[12..].copy_from_slice(&self.order.lo.to_be_bytes());
        key
    }
}

/// The order and the double of a decimal number's text: an optional sign, digits with at most
/// one point, an optional exponent (`-12.50e+3`); `None` for anything else.
fn decimal(t: &str) -> Option<(Order, f64)> {
    let b = t.as_bytes();
    let (neg, mut i) = match b.first()? {
        b'-' => (true, 1),
        b'+' => (false, 1),
        _ => (false, 0),
    };
    let mut digits = Vec::with_capacity(b.len());
    let mut point: Option<usize> = None;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => digits.push(c - b'0'),
            b'.' if point.is_none() => point = Some(digits.len()),
            _ => break,
        }
        i += 1;
    }
    if digits.is_empty() {
        return None;
    }
    let mut exponent: i64 = 0;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let negative = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        while let Some(c @ b'0'..=b'9') = b.get(i) {
            exponent = exponent.saturating_mul(10).saturating_add(i64::from(c - b'0'));
            i += 1;
        }
        if i == start {
            return None;
        }
        exponent = exponent.min(1 << 40);
        if negative {
            exponent = -exponent;
        }
    }
    if i != b.len() {
        return None;
    }
    let integer_digits = point.unwrap_or(digits.len()) as i64;
    let order = Order::decimal(neg, &digits, integer_digits + exponent);
    let value = t.parse::<f64>().unwrap_or(if neg { f64::NEG_INFINITY } else { f64::INFINITY });
    Some((order, value))
}

/// Nanoseconds since 1970-01-01 UTC of an ISO 8601 date or date-time.
fn parse_time(t: &str) -> Option<i128> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let nanos = |utc: DateTime<chrono::Utc>| {
        i128::from(utc.timestamp()) * 1_000_000_000 + i128::from(utc.timestamp_subsec_nanos())
    };
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Some(nanos(d.to_utc()));
    }
    // RFC 3339 with a space, or without an offset (UTC).
    for format in ["%Y-%m-%d %H:%M:%S%.f%:z", "%Y-%m-%d %H:%M:%S%.fZ"] {
        if let Ok(d) = DateTime::parse_from_str(t, format) {
            return Some(nanos(d.to_utc()));
        }
    }
    let naive = t.strip_suffix('Z').unwrap_or(t);
    for format in
        ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]
    {
        if let Ok(d) = NaiveDateTime::parse_from_str(naive, format) {
            return Some(nanos(d.and_utc()));
        }
    }
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| nanos(d.and_utc()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(v: serde_json::Value) -> Rank {
        Rank::from_json(&v).expect("valid").expect("some")
    }

    fn text(t: &str) -> Rank {
        Rank::from_json_text(t).expect("valid").expect("some")
    }

    /// The sort key orders as the ranks do, numbers and instants alike, where doubles tie.
    #[test]
    fn sort_keys_order_as_the_ranks_do() {
        let numbers = [
            "-1e400",
            "-123456789012345678901234567890",
            "-9007199254740993",
            "-9007199254740992",
            "-2.5",
            "-1e-300",
            "0",
            "1e-300",
            "0.1",
            "1",
            "1.10",
            "2",
            "9007199254740992",
            "9007199254740993",
            "18446744073709551616",
            "123456789012345678901234567890",
            "1e400",
        ];
        let dates = [
            "\"1969-12-31T23:59:59.999999999Z\"",
            "\"1970-01-01\"",
            "\"2024-05-01T12:00:00.000000001Z\"",
            "\"2024-05-01T12:00:00.000000002Z\"",
            "\"2262-04-12\"",
        ];
        for list in [&numbers[..], &dates[..]] {
            let ranks: Vec<Rank> = list.iter().map(|t| text(t)).collect();
            for a in &ranks {
                for b in &ranks {
                    let exact = a.compare(b).expect("one kind");
                    assert_eq!(a.sort_key().cmp(&b.sort_key()), exact, "{a:?} {b:?}");
                }
            }
        }
        // Where doubles tie, the keys do not.
        let (a, b) = (text("9007199254740992"), text("9007199254740993"));
        assert_eq!(a.value, b.value);
        assert!(a.sort_key() < b.sort_key());
    }

    #[test]
    fn numbers_and_dates_rank_in_time_order() {
        assert_eq!(r(json!(17)).value, 17.0);
        assert_eq!(r(json!(17)).kind, RankKind::Number);
        assert_eq!(r(json!("-2.5e3")).value, -2500.0);
        assert_eq!(r(json!("1970-01-02")).value, 86_400.0);
        assert_eq!(r(json!("1970-01-02")).kind, RankKind::Time);
        let same = [
            "2024-05-01T12:00:00Z",
            "2024-05-01T20:00:00+08:00",
            "2024-05-01 12:00:00",
            "2024-05-01T12:00:00",
            "2024-05-01 20:00:00+08:00",
            "2024-05-01T12:00",
        ];
        let first = r(json!(same[0]));
        for s in same {
            assert_eq!(r(json!(s)), first, "{s}");
        }
        assert_eq!(r(json!("2024-05-01T12:00:00.250Z")).value, first.value + 0.25);
        assert_eq!(r(json!("2024-05-02")).compare(&first), Some(Ordering::Greater));
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
    fn keep_values_past_2_pow_53_and_1_ns_apart_tied() {
        let less = |a: Rank, b: Rank| assert_eq!(a.compare(&b), Some(Ordering::Less));
        // Equal as doubles, ordered as written.
        less(text("9007199254740992"), text("9007199254740993"));
        less(text("18446744073709551615"), text("18446744073709551616"));
        less(text("123456789012345678901234567890"), text("123456789012345678901234567891"));
        less(text("-9007199254740993"), text("-9007199254740992"));
        less(text("1e400"), text("1e401"));
        less(text("-1e401"), text("-1e400"));
        less(Rank::from_i128(i128::from(u64::MAX) + 1), Rank::from_i128(i128::MAX));
        let a = Rank::parse("2024-05-01T12:00:00.000000001Z").expect("a date");
        let b = Rank::parse("2024-05-01T12:00:00.000000002Z").expect("a date");
        assert_eq!(a.value, b.value, "a double cannot tell them apart");
        less(a, b);
        less(Rank::from_nanos(-1), Rank::from_nanos(0));
        // One value, however written.
        assert_eq!(text("1.10"), text("1.1"));
        assert_eq!(text("1e2"), text("100"));
        assert_eq!(text("0.0"), text("-0"));
        assert_eq!(Rank::from_f64(0.1), Some(text("0.1")));
        assert_eq!(Rank::from_i128(-7), text("-7.000"));
        // Signs, magnitudes and the ends.
        let ordered = ["-inf", "-1e10", "-2", "-1.5", "-0.001", "0", "1e-300", "0.5", "2", "1e10"];
        for pair in ordered.windows(2) {
            let rank = |s: &str| Rank::parse(s).expect(s);
            less(rank(pair[0]), rank(pair[1]));
        }
        less(text("1e999999"), Rank::from_f64(f64::INFINITY).expect("a value"));
        assert_eq!(Rank::from_f64(f64::NAN), None);
        assert_eq!(Rank::parse_value("NaN"), Ok(None));
        assert_eq!(text("1").compare(&Rank::from_nanos(1)), None, "kinds differ");
    }
}
