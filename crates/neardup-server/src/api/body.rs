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
