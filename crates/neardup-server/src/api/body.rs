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
    #[serde(default)]
    pub(super) metadata: Value,
}

/// Text or tokens, checked against the limits.
pub(super) enum Body {
    Text(String),
    Tokens(Vec<String>),
}

impl Body {
    pub(super) fn from_parts(
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

    pub(super) fn len(&self) -> usize {
        match self {
            Body::Text(t) => t.len(),
            Body::Tokens(t) => t.iter().map(String::len).sum(),
        }
    }

    pub(super) fn document(&self) -> Document<'_> {
        match self {
            Body::Text(t) => Document::Text(t),
            Body::Tokens(t) => Document::Tokens(t),
        }
    }

    pub(super) fn text(&self) -> String {
        match self {
            Body::Text(t) => t.clone(),
            Body::Tokens(t) => t.join(" "),
        }
    }
}
