//! Document ids: one rule for every surface.
//!
//! - **An id is text.** A JSON string stands for its value and a JSON number for its text as
//!   written, so `"7"` and `7` are one id (`7.0` is another: numbers are not rewritten). Anything
//!   else (an object, an array, `null`, `true`) is not an id.
//! - **In a collection** (the service's collections, Python's `Index`, a saved index loaded as
//!   one) an id names one document: storing it again replaces what it held.
//! - **In a batch run** (`dedup`, Python's `dedup`, Spark) the records are the documents: two
//!   records with one id stay two documents, and the run reports the repeats ([`RepeatedIds`]).
//!   A saved index made from such a run holds both; loading it as a collection is refused by
//!   name rather than letting the second silently replace the first.

use std::borrow::Cow;
use std::collections::HashSet;

/// The longest id a collection stores, in bytes (a key of the service's store).
pub const MAX_ID_BYTES: usize = 512;

/// Why a JSON value is not a document id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdError {
    /// The value is not a string or a number; `found` names what it is ("an object").
    NotStringOrNumber {
        /// What the value is.
        found: &'static str,
    },
    /// A string that is not valid JSON (a bad escape).
    Malformed {
        /// serde_json's message.
        message: String,
    },
    /// The empty string.
    Empty,
    /// Longer than [`MAX_ID_BYTES`] (only collections refuse it).
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
}

impl std::fmt::Display for IdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdError::NotStringOrNumber { found } => {
                write!(f, "an id must be a string or a number, found {found}")
            }
            IdError::Malformed { message } => write!(f, "malformed id: {message}"),
            IdError::Empty => write!(f, "an id must not be empty"),
            IdError::TooLong { bytes } => {
                write!(f, "an id is at most {MAX_ID_BYTES} bytes, this one is {bytes}")
            }
        }
    }
}

impl std::error::Error for IdError {}

/// The id a JSON value (as its text: `"7"`, `7`, `"a\"b"`) stands for. Borrows when the text
/// needs no unescaping.
pub fn id_from_json(raw: &str) -> Result<Cow<'_, str>, IdError> {
    let raw = raw.trim_matches(|c: char| c.is_ascii_whitespace());
    let found = match raw.as_bytes().first() {
        Some(b'"') => {
            let inner = &raw[1..raw.len().saturating_sub(1).max(1)];
            if raw.len() >= 2
                && raw.ends_with('"')
                && !inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20)
            {
                return Ok(Cow::Borrowed(inner));
            }
            return serde_json::from_str::<String>(raw)
                .map(Cow::Owned)
                .map_err(|e| IdError::Malformed { message: e.to_string() });
        }
        Some(b'-' | b'0'..=b'9') => {
            // A whole number without a leading zero is valid JSON as it stands (most numeric
            // ids; a saved index's million of them were parsed at every open).
            let digits = raw.as_bytes();
            if digits.iter().all(u8::is_ascii_digit) && (digits[0] != b'0' || digits.len() == 1) {
                return Ok(Cow::Borrowed(raw));
            }
            return match serde_json::from_str::<serde_json::Number>(raw) {
                Ok(_) => Ok(Cow::Borrowed(raw)),
                Err(e) => Err(IdError::Malformed { message: e.to_string() }),
            };
        }
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "nothing",
    };
    Err(IdError::NotStringOrNumber { found })
}

/// The id a saved index's id text stands for: its JSON's id (`"7"` and `7` are `7`), or the
/// text itself when it is not one (an index written before ids were saved as JSON).
pub fn id_from_saved(raw: &str) -> Cow<'_, str> {
    id_from_json(raw).unwrap_or(Cow::Borrowed(raw))
}

/// An id as JSON: always a string, the form saved indexes and the service write.
pub fn id_to_json(id: &str) -> String {
    serde_json::Value::String(id.to_string()).to_string()
}

/// Checks an id a collection is to store: not empty, at most [`MAX_ID_BYTES`].
pub fn check_collection_id(id: &str) -> Result<(), IdError> {
    match id.len() {
        0 => Err(IdError::Empty),
        n if n > MAX_ID_BYTES => Err(IdError::TooLong { bytes: n }),
        _ => Ok(()),
    }
}

/// The ids of a batch run that more than one record carries: counted, with the first few
/// (each once) kept as examples for the run's report.
#[derive(Debug, Default)]
pub struct RepeatedIds {
    seen: HashSet<u64>,
    examples: Vec<String>,
    example_hashes: HashSet<u64>,
    records: usize,
}

impl RepeatedIds {
    /// How many distinct repeated ids are kept as examples.
    pub const EXAMPLES: usize = 5;

    /// Notes one record's id (as [`id_from_json`] gives it); `true` when an earlier record had
    /// it. Ids are told apart by a 64-bit hash: a collision (about one in 10^7 for a billion
    /// ids) would report a repeat that is none, and lose nothing.
    pub fn note(&mut self, id: &str) -> bool {
        let h = xxhash_rust::xxh3::xxh3_64(id.as_bytes());
        if self.seen.insert(h) {
            return false;
        }
        self.records += 1;
        if self.examples.len() < Self::EXAMPLES && self.example_hashes.insert(h) {
            self.examples.push(id.to_string());
        }
        true
    }

    /// Records whose id an earlier record had.
    pub fn records(&self) -> usize {
        self.records
    }

    /// The first repeated ids, each once.
    pub fn examples(&self) -> &[String] {
        &self.examples
    }

    /// Frees the memory of the ids seen (the counts and examples stay).
    pub fn take_seen(&mut self) -> HashSet<u64> {
        std::mem::take(&mut self.seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_and_a_number_with_one_text_are_one_id() {
        assert_eq!(id_from_json("\"7\"").expect("string"), "7");
        assert_eq!(id_from_json("7").expect("number"), "7");
        assert_eq!(id_from_json(" 7 ").expect("spaces"), "7");
        assert_eq!(id_from_json("7.0").expect("float"), "7.0");
        assert_eq!(id_from_json(r#""a\"b\u00e9""#).expect("escapes"), "a\"bé");
        assert_eq!(id_from_json("\"\"").expect("empty string"), "");
        assert!(matches!(id_from_json("\"").expect_err("not an id"), IdError::Malformed { .. }));
        assert!(matches!(id_from_json("07").expect_err("not an id"), IdError::Malformed { .. }));
        // Whole numbers take a path of their own; JSON's verdict on each is kept.
        for raw in ["0", "10", "-3", "00", "1e3", "123456789012345678901234567890", "12a"] {
            let json = serde_json::from_str::<serde_json::Number>(raw).is_ok();
            assert_eq!(id_from_json(raw).is_ok(), json, "{raw}");
            if json {
                assert_eq!(id_from_json(raw).expect("number"), raw);
            }
        }
        for (raw, found) in [("{}", "an object"), ("[7]", "an array"), ("null", "null")] {
            assert_eq!(
                id_from_json(raw).expect_err("not an id"),
                IdError::NotStringOrNumber { found }
            );
        }
        assert_eq!(id_to_json("a\"b"), r#""a\"b""#);
        assert_eq!(id_from_json(&id_to_json("x y")).expect("round trip"), "x y");
    }

    #[test]
    fn collections_bound_ids() {
        assert_eq!(check_collection_id(""), Err(IdError::Empty));
        assert!(check_collection_id(&"x".repeat(MAX_ID_BYTES)).is_ok());
        assert_eq!(
            check_collection_id(&"x".repeat(MAX_ID_BYTES + 1)),
            Err(IdError::TooLong { bytes: MAX_ID_BYTES + 1 })
        );
    }

    #[test]
    fn repeats_are_counted_and_each_example_named_once() {
        let mut r = RepeatedIds::default();
        let flags: Vec<bool> = ["1", "2", "1", "1", "3", "2"].iter().map(|id| r.note(id)).collect();
        assert_eq!(flags, [false, false, true, true, false, true]);
        assert_eq!(r.records(), 3);
        assert_eq!(r.examples(), ["1", "2"]);
    }
}
