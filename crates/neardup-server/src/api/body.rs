//! Documents in requests: ids by the library's rule, text or tokens within the limits.

use super::*;

/// A document id: a JSON string, or a number kept as written (`1.10` stays `"1.10"`).
pub(super) fn doc_id(raw: &RawValue, what: &str) -> Result<String, ApiError> {
    // The library's id rule: `"7"` and `7` are one id.
    let id = neardup::id_from_json(raw.get())
        .map_err(|e| ApiError::bad("invalid_field", format!("{what}: {e}")))?;
    neardup::check_collection_id(&id)
        .map_err(|e| ApiError::bad("invalid_id", format!("{what}: {e}")))?;
    Ok(id.into_owned())
}

/// A request value that is a JSON object, and what the client is told to send otherwise.
pub(super) trait Shape: serde::de::DeserializeOwned {
    /// What the value is, in the client's words (`an object {"docs": [...]}`).
    const EXPECTING: &'static str;
}

impl Shape for serde_json::Map<String, Value> {
    const EXPECTING: &'static str = "an object";
}

/// A value read only from a JSON object. serde reads a struct from an array too, field by field
/// in order, so `["some text", 5]` would have been taken for `{"text": "some text", ...}`; and
/// its messages name the Rust type (`expected struct InDoc`) where the client needs to hear
/// what to send ([`Shape::EXPECTING`]).
pub(super) struct Object<T>(pub(super) T);

impl<'de, T: Shape> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Object<T>, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: Shape> serde::de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(T::EXPECTING)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Fields(std::marker::PhantomData)).map(Object)
    }
}

/// A list of objects ([`Object`]), for `#[serde(deserialize_with)]`.
pub(super) fn objects<'de, D: serde::Deserializer<'de>, T: Shape>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    Vec::<Object<T>>::deserialize(d).map(|v| v.into_iter().map(|o| o.0).collect())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InDoc {
    pub(super) id: Box<RawValue>,
    pub(super) text: Option<String>,
    pub(super) tokens: Option<Vec<String>>,
    /// Kept as written (absent or `null`: none, or keep a stored document's).
    #[serde(default)]
    pub(super) metadata: Option<Box<RawValue>>,
}

/// A match of a search or a check: an id, its similarity and its metadata as stored.
#[derive(Debug, serde::Serialize)]
pub(super) struct Match {
    pub(super) id: String,
    pub(super) similarity: f64,
    pub(super) metadata: Box<RawValue>,
}

/// A batch of `n` documents within `--max-batch-docs` (413 otherwise).
pub(super) fn check_batch(n: usize, limits: &crate::Limits) -> Result<(), ApiError> {
    if n > limits.max_batch_docs {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!("{n} documents, the limit is {}", limits.max_batch_docs),
        ));
    }
    Ok(())
}

/// A request's document: text or tokens (the library's owned document).
pub(super) type Body = neardup::OwnedDocument;

/// The document of a request's `text` or `tokens` field (one of them), checked against the
/// size limit; `what` names it in errors.
pub(super) fn body_from_parts(
    text: Option<String>,
    tokens: Option<Vec<String>>,
    limit: usize,
    what: &str,
) -> Result<Body, ApiError> {
    let body = match (text, tokens) {
        (Some(t), None) => Body::Text(t),
        (None, Some(t)) => Body::Tokens(t),
        (Some(_), Some(_)) => {
            return Err(ApiError::bad(
                "invalid_field",
                format!("{what}: give text or tokens, not both"),
            ))
        }
        (None, None) => {
            return Err(ApiError::bad("invalid_field", format!("{what}: no text or tokens")))
        }
    };
    if body.len() > limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "document_too_large",
            format!("{what}: {} bytes, the limit is {limit}", body.len()),
        ));
    }
    Ok(body)
}

impl Shape for InDoc {
    const EXPECTING: &'static str = "a document object {\"id\", \"text\" | \"tokens\"}";
}
