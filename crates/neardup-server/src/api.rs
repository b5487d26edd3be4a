//! Routes, request parsing, errors, authentication and metrics.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, FromRequestParts, MatchedPath, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use neardup::overlap::{Overlap, OverlapOptions, OverlapSpec, Passage, PassageIndex};
use neardup::{Document, Method, Pipeline, PipelineSpec, Scratch, SearchUse};
use rayon::prelude::*;
use redb::{Database, ReadableTable};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

use crate::store::{docs_def, encode_record, new_incarnation, CollectionInfo, Record, COLLECTIONS};
use crate::{build_engine, new_live, Collection, Live, State as AppState, DELETED, LIVE, RELOADED};

type Shared = Arc<AppState>;

/// An error reply: `{"error": {"code", "message"}}` with its status.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// Seconds for a `Retry-After` header (503 busy).
    retry_after: Option<u32>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), retry_after: None }
    }
    fn bad(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }
    fn internal(message: impl std::fmt::Display) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message.to_string())
    }
    fn unavailable(reason: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            format!("{reason}; the store is being reopened, retry later"),
        )
    }
    fn collection_gone(name: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "collection_not_found",
            format!("no collection {name:?} (it was deleted)"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

/// A turn of a heavy request (search, check, insert, compare); given back when dropped. It
/// moves into the blocking work it guards, so a client that goes away does not free the turn
/// while its work still runs.
type Turn = tokio::sync::OwnedSemaphorePermit;

/// Takes a turn for a heavy request: at once if one of the `max_concurrent` is free, else after
/// waiting in a queue of at most `max_queued` for at most [`crate::HEAVY_WAIT`]; past either,
/// 503 `busy` with `Retry-After`. Called once the request is read and checked, so a refused
/// request never waits, and a slow client cannot hold a turn by sending its body slowly.
async fn turn(state: &AppState) -> Result<Turn, ApiError> {
    use std::sync::atomic::AtomicUsize;
    use tokio::sync::TryAcquireError;
    let busy = |why: String| ApiError {
        retry_after: Some(1),
        ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", format!("{why}; retry later"))
    };
    match state.turns.clone().try_acquire_owned() {
        Ok(turn) => return Ok(turn),
        Err(TryAcquireError::Closed) => return Err(ApiError::internal("the turns are closed")),
        Err(TryAcquireError::NoPermits) => {}
    }
    /// Counts a waiting request for as long as it waits (a cancelled wait included).
    struct Waiting<'a>(&'a AtomicUsize);
    impl Drop for Waiting<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let ahead = state.waiting.fetch_add(1, Ordering::SeqCst);
    let _waiting = Waiting(&state.waiting);
    let limits = &state.limits;
    if ahead >= limits.max_queued {
        return Err(busy(format!(
            "all {} turns for search, check, insert and compare are taken and {ahead} requests \
             wait (--max-concurrent, --max-queued)",
            limits.max_concurrent
        )));
    }
    match tokio::time::timeout(crate::HEAVY_WAIT, state.turns.clone().acquire_owned()).await {
        Ok(Ok(turn)) => Ok(turn),
        Ok(Err(_)) => Err(ApiError::internal("the turns are closed")),
        Err(_) => Err(busy(format!(
            "no turn for search, check, insert or compare came in {} s (--max-concurrent {})",
            crate::HEAVY_WAIT.as_secs(),
            limits.max_concurrent
        ))),
    }
}

/// Refuses metadata over `--max-metadata-bytes` (measured as the JSON it is stored as): with
/// `--max-top-k` it bounds what one search answer carries.
fn check_metadata(metadata: &Value, limit: usize, what: &str, id: &str) -> Result<(), ApiError> {
    let size = serde_json::to_vec(metadata).map_err(ApiError::internal)?.len();
    if size > limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "metadata_too_large",
            format!(
                "{what} (id {id:?}): metadata of {size} bytes as JSON, the limit is {limit} \
                 (--max-metadata-bytes)"
            ),
        ));
    }
    Ok(())
}

type ApiResult = Result<Response, ApiError>;

fn ok(status: StatusCode, body: Value) -> ApiResult {
    Ok((status, Json(body)).into_response())
}

/// Maps a store error: an I/O error makes the service unhealthy (503 until the store is
/// reopened); a table that no longer exists means the collection was deleted (404).
fn store_err(state: &AppState, name: &str, e: impl Into<redb::Error>) -> ApiError {
    match e.into() {
        e @ (redb::Error::Io(_) | redb::Error::PreviousIo) => {
            let reason = format!("storage I/O error: {e}");
            state.set_unhealthy(reason.clone());
            ApiError::unavailable(reason)
        }
        redb::Error::TableDoesNotExist(_) => ApiError::collection_gone(name),
        e => ApiError::internal(format!("store: {e}")),
    }
}

/// Decodes a stored record; one that fails its checksum is counted as damage (`/v1/health`
/// reports it) and answered as a 500 naming it, never served.
fn read_record(
    state: &AppState,
    collection: &str,
    id: &str,
    bytes: &[u8],
) -> Result<Record, ApiError> {
    Record::decode(id, bytes).map_err(|what| {
        state.record_damage(collection, id, &what);
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "damaged_record",
            format!("collection {collection:?}, document {id:?}: {what}"),
        )
    })
}

impl AppState {
    /// Runs `f` on the store, unless the service is unhealthy (503).
    fn with_db<T>(&self, f: impl FnOnce(&Database) -> Result<T, ApiError>) -> Result<T, ApiError> {
        if let Some(reason) = self.unhealthy() {
            return Err(ApiError::unavailable(reason));
        }
        let guard = self.db.read().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(ApiError::unavailable("the store is closed")),
        }
    }
}

/// Parses a JSON body, saying what is wrong and where.
fn parse<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", e.body_text())
        } else {
            ApiError::bad("bad_body", e.body_text())
        }
    })?;
    if let Err(e) = std::str::from_utf8(&bytes) {
        return Err(ApiError::bad(
            "invalid_utf8",
            format!("the body is not UTF-8: invalid byte at offset {}", e.valid_up_to()),
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        let code = match e.classify() {
            serde_json::error::Category::Data => "invalid_field",
            _ => "malformed_json",
        };
        ApiError::bad(code, friendly(&e.to_string()))
    })
}

/// serde's messages name Rust types (`struct CreateRequest`); say what the client sent instead.
fn friendly(message: &str) -> String {
    let mut m = message.to_string();
    for (from, to) in [
        ("expected struct InsertRequest", "expected an object {\"docs\": [...]}"),
        ("expected struct InDoc", "expected a document object {\"id\", \"text\" | \"tokens\"}"),
        ("expected struct CreateRequest", "expected an object"),
        ("expected struct SearchRequest", "expected an object"),
        ("expected struct CheckRequest", "expected an object"),
        ("expected struct CompareRequest", "expected an object {\"a\", \"b\"}"),
        ("expected struct ", "expected an object "),
    ] {
        m = m.replace(from, to);
    }
    m
}

/// Path parameters, with errors as JSON.
struct ApiPath<T>(T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(t)) => Ok(ApiPath(t)),
            Err(e) => Err(ApiError::bad("invalid_path", e.body_text())),
        }
    }
}

/// Collection names: letters, digits, `_`, `-`, `.`, not starting with `.`, at most 64 bytes.
fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad(
            "invalid_name",
            format!("collection name {name:?}: use 1-64 letters, digits, '_', '-' or '.'"),
        ))
    }
}

fn collection(state: &AppState, name: &str) -> Result<Arc<Collection>, ApiError> {
    check_name(name)?;
    if let Some(reason) = state.unhealthy() {
        return Err(ApiError::unavailable(reason));
    }
    let map = state.collections.read().unwrap_or_else(|p| p.into_inner());
    map.get(name).cloned().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "collection_not_found",
            format!("no collection {name:?}"),
        )
    })
}

fn live(c: &Collection) -> Result<&std::sync::RwLock<Live>, ApiError> {
    c.live.as_ref().map_err(|m| {
        ApiError::new(
            StatusCode::CONFLICT,
            "spec_mismatch",
            format!("collection {:?}: {m}", c.info.name),
        )
    })
}

/// Refuses a write on a collection object that was deleted or replaced (call under its
/// writer lock).
fn check_writable(c: &Collection) -> Result<(), ApiError> {
    match c.retired.load(Ordering::SeqCst) {
        LIVE => Ok(()),
        DELETED => Err(ApiError::collection_gone(&c.info.name)),
        RELOADED => Err(ApiError::unavailable("the store was reopened during the request")),
        _ => Err(ApiError::internal("unknown collection state")),
    }
}

/// In a write transaction: the collection must still be the stored incarnation (a delete may
/// have committed since the request found it).
fn check_incarnation(
    txn: &redb::WriteTransaction,
    state: &AppState,
    c: &Collection,
) -> Result<(), ApiError> {
    let t = txn.open_table(COLLECTIONS).map_err(|e| store_err(state, &c.info.name, e))?;
    let stored = t.get(c.info.name.as_str()).map_err(|e| store_err(state, &c.info.name, e))?;
    let same = stored.is_some_and(|v| {
        serde_json::from_str::<CollectionInfo>(v.value())
            .is_ok_and(|i| i.incarnation == c.info.incarnation)
    });
    if same {
        Ok(())
    } else {
        Err(ApiError::collection_gone(&c.info.name))
    }
}

/// Runs blocking store work off the async workers. A panic in it is an internal error, never
/// a dropped connection.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(ApiError::internal)?
}

// ---- documents in requests ---------------------------------------------------------------------

/// A document id: a JSON string, or a number kept as written (`1.10` stays `"1.10"`).
fn doc_id(raw: &RawValue, what: &str) -> Result<String, ApiError> {
    // The library's id rule: `"7"` and `7` are one id.
    let id = neardup::id_from_json(raw.get())
        .map_err(|e| ApiError::bad("invalid_field", format!("{what}: {e}")))?;
    neardup::check_collection_id(&id)
        .map_err(|e| ApiError::bad("invalid_id", format!("{what}: {e}")))?;
    Ok(id.into_owned())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InDoc {
    id: Box<RawValue>,
    text: Option<String>,
    tokens: Option<Vec<String>>,
    #[serde(default)]
    metadata: Value,
}

/// Text or tokens, checked against the limits.
enum Body {
    Text(String),
    Tokens(Vec<String>),
}

impl Body {
    fn from_parts(
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

    fn len(&self) -> usize {
        match self {
            Body::Text(t) => t.len(),
            Body::Tokens(t) => t.iter().map(String::len).sum(),
        }
    }

    fn document(&self) -> Document<'_> {
        match self {
            Body::Text(t) => Document::Text(t),
            Body::Tokens(t) => Document::Tokens(t),
        }
    }

    fn text(&self) -> String {
        match self {
            Body::Text(t) => t.clone(),
            Body::Tokens(t) => t.join(" "),
        }
    }
}

// ---- collections -------------------------------------------------------------------------------

/// A collection's settings as created: the pipeline (`preset` or `spec`), what is stored, and
/// the search options by their names in the library's one table (`threshold`, `method`,
/// `hamming`, `verify`, `bands`, `rows`, `recall`, `lsh_weights`).
#[derive(Debug, Default)]
struct CreateRequest {
    preset: Option<String>,
    spec: Option<Value>,
    search: neardup::SearchSpec,
    store_text: bool,
    /// `true`, or the passage check's options (`neardup overlap`'s, by their names).
    passages: Option<Value>,
}

impl CreateRequest {
    /// The fields of the body's object; an unknown one is refused with the list of names.
    fn from_body(body: serde_json::Map<String, Value>) -> Result<CreateRequest, ApiError> {
        let bad = |m: String| ApiError::bad("invalid_field", m);
        let mut req = CreateRequest::default();
        for (key, value) in body {
            match key.as_str() {
                "preset" => match value {
                    Value::String(p) => req.preset = Some(p),
                    Value::Null => {}
                    other => return Err(bad(format!("preset: expected a string, found {other}"))),
                },
                "spec" => req.spec = Some(value).filter(|v| !v.is_null()),
                "store_text" => match value {
                    Value::Bool(b) => req.store_text = b,
                    Value::Null => {}
                    other => {
                        return Err(bad(format!("store_text: expected a boolean, found {other}")))
                    }
                },
                "passages" => req.passages = Some(value),
                name => req.search.set(name, &value, SearchUse::Collection).map_err(|e| {
                    if e.option == "options" {
                        let names: Vec<&str> = ["preset", "spec", "store_text", "passages"]
                            .into_iter()
                            .chain(neardup::SearchSpec::names(SearchUse::Collection))
                            .collect();
                        bad(format!("unknown field {name:?}: expected one of {}", names.join(", ")))
                    } else {
                        bad(e.to_string())
                    }
                })?,
            }
        }
        Ok(req)
    }
}

/// The passage settings of a new collection: `true` (the defaults), `false`, or an object of
/// options.
fn passage_settings(passages: Option<Value>) -> Result<Option<OverlapSpec>, ApiError> {
    let bad = |m: String| ApiError::bad("invalid_field", format!("passages: {m}"));
    match passages {
        None | Some(Value::Bool(false)) | Some(Value::Null) => Ok(None),
        Some(Value::Bool(true)) => Ok(Some(OverlapSpec::default())),
        Some(v @ Value::Object(_)) => {
            let options: OverlapOptions =
                serde_json::from_value(v).map_err(|e| bad(e.to_string()))?;
            options.to_spec().map(Some).map_err(|e| bad(e.to_string()))
        }
        Some(_) => Err(bad(format!(
            "expected true, false or an object of options ({})",
            OverlapOptions::NAMES.join(", ")
        ))),
    }
}

/// The pipeline spec of a request: a preset name or a spec object (never both). A spec may name
/// files (stop words, idf); over HTTP that would read outside the data directory, so such a spec
/// is refused.
fn resolve_spec(preset: Option<String>, spec: Option<Value>) -> Result<PipelineSpec, ApiError> {
    let spec = match (preset, spec) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad("invalid_field", "give preset or spec, not both"))
        }
        (_, Some(spec)) => PipelineSpec::from_value(spec)
            .map_err(|e| ApiError::bad("invalid_field", e.to_string()))?,
        (preset, None) => PipelineSpec::preset(preset.as_deref().unwrap_or("default"))
            .map_err(|e| ApiError::bad("invalid_field", e.to_string()))?,
    };
    if spec.stop_words.file.is_some() || matches!(spec.idf, neardup::IdfSource::File { .. }) {
        return Err(ApiError::bad(
            "invalid_field",
            "spec: files (stop_words.file, idf) cannot be named over HTTP",
        ));
    }
    spec.validate().map_err(|e| ApiError::bad("invalid_field", format!("spec: {e}")))?;
    Ok(spec)
}

/// The search settings of a new collection, by the rules every surface shares
/// ([`neardup::SearchSpec::resolve`], as `neardup dedup` and Python): `hamming` alone means
/// simhash; `hamming` with minhash and `recall` with simhash are refused naming them, never
/// stored and ignored; the defaults (threshold 0.8, Hamming 3) come from there too.
fn search_settings(req: &CreateRequest) -> Result<neardup::DedupConfig, ApiError> {
    req.search.resolve().map_err(|e| ApiError::bad("invalid_field", e.to_string()))
}

async fn create_collection(
    State(state): State<Shared>,
    ApiPath(name): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    check_name(&name)?;
    let req = CreateRequest::from_body(parse(body)?)?;
    let settings = search_settings(&req)?;
    let spec = resolve_spec(req.preset, req.spec)?;
    let passages = passage_settings(req.passages)?;
    // The passage index is built from the stored texts at start: keeping passages keeps texts.
    let store_text = req.store_text || passages.is_some();
    let neardup::DedupConfig {
        method,
        threshold,
        hamming,
        recall,
        verification,
        banding,
        weights,
        ..
    } = settings;
    // Building the pipeline and the engine validates everything (bounded by the spec's limits).
    let (info, live) = blocking(move || {
        let pipeline = Pipeline::new(spec.clone())
            .map_err(|e| ApiError::bad("invalid_field", e.to_string()))?;
        let info = CollectionInfo {
            name,
            incarnation: new_incarnation(),
            spec,
            method,
            threshold,
            hamming,
            recall,
            verify: verification,
            banding,
            lsh_weights: weights,
            store_text,
            passages,
            pipeline_id: pipeline.id().to_string(),
        };
        let engine = build_engine(&info).map_err(|e| ApiError::bad("invalid_field", e))?;
        let live = new_live(&info, engine).map_err(|e| ApiError::bad("invalid_field", e))?;
        Ok((info, live))
    })
    .await?;
    let _admin = state.admin.lock().await;
    let existing =
        state.collections.read().unwrap_or_else(|p| p.into_inner()).get(&info.name).cloned();
    if let Some(existing) = existing {
        return if existing.info.same_settings(&info) {
            ok(StatusCode::OK, describe(&existing))
        } else {
            // Name each setting that differs: a bare "other settings" left the client to
            // compare the whole description by hand.
            let differences = existing.info.differences(&info);
            let shown = differences.iter().take(20).cloned().collect::<Vec<_>>().join("; ");
            let more = match differences.len().saturating_sub(20) {
                0 => String::new(),
                n => format!("; and {n} more"),
            };
            Err(ApiError::new(
                StatusCode::CONFLICT,
                "collection_exists",
                format!(
                    "collection {:?} exists with other settings: {shown}{more} (delete it to \
                     create it anew, or ask for the stored settings)",
                    info.name
                ),
            ))
        };
    }
    let text = serde_json::to_string(&info).map_err(ApiError::internal)?;
    let c = Arc::new(Collection::new(info, Ok(std::sync::RwLock::new(live))));
    let (st, c2) = (state.clone(), c.clone());
    blocking(move || {
        let name = c2.info.name.as_str();
        st.with_db(|db| {
            let err = |e: redb::Error| store_err(&st, name, e);
            let txn = db.begin_write().map_err(|e| err(e.into()))?;
            {
                let mut t = txn.open_table(COLLECTIONS).map_err(|e| err(e.into()))?;
                t.insert(name, text.as_str()).map_err(|e| err(e.into()))?;
                txn.open_table(docs_def(&c2.table)).map_err(|e| err(e.into()))?;
            }
            txn.commit().map_err(|e| err(e.into()))
        })
    })
    .await?;
    state
        .collections
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(c.info.name.clone(), c.clone());
    ok(StatusCode::CREATED, describe(&c))
}

fn describe(c: &Collection) -> Value {
    let (documents, banding, verification, error) = match &c.live {
        Ok(live) => {
            let live = live.read().unwrap_or_else(|p| p.into_inner());
            (
                Some(live.engine().len()),
                live.engine().banding().map(|(b, r)| (b, r, live.engine().candidate_probability())),
                Some(live.engine().verification().name()),
                None,
            )
        }
        Err(m) => (None, None, None, Some(m.clone())),
    };
    json!({
        "name": c.info.name,
        "documents": documents,
        "method": c.info.method,
        "threshold": c.info.threshold,
        "hamming": c.info.hamming,
        "recall": c.info.recall,
        "store_text": c.info.store_text,
        "passages": c.info.passages,
        "verification": verification,
        "lsh": banding.map(|(b, r, p)| json!({"bands": b, "rows": r, "candidate_probability": p})),
        "pipeline_id": c.info.pipeline_id,
        "spec": c.info.spec,
        "error": error,
    })
}

async fn list_collections(State(state): State<Shared>) -> ApiResult {
    let list: Vec<Value> = state
        .collections
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .map(|c| describe(c))
        .collect();
    ok(StatusCode::OK, json!({ "collections": list }))
}

async fn get_collection(State(state): State<Shared>, ApiPath(name): ApiPath<String>) -> ApiResult {
    let c = collection(&state, &name)?;
    ok(StatusCode::OK, describe(&c))
}

async fn delete_collection(
    State(state): State<Shared>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult {
    let _admin = state.admin.lock().await;
    let c = collection(&state, &name)?;
    let _writer = c.writer.lock().await;
    check_writable(&c)?;
    let (st, c2) = (state.clone(), c.clone());
    blocking(move || {
        let name = c2.info.name.as_str();
        st.with_db(|db| {
            let err = |e: redb::Error| store_err(&st, name, e);
            let txn = db.begin_write().map_err(|e| err(e.into()))?;
            check_incarnation(&txn, &st, &c2)?;
            {
                let mut t = txn.open_table(COLLECTIONS).map_err(|e| err(e.into()))?;
                t.remove(name).map_err(|e| err(e.into()))?;
            }
            txn.delete_table(docs_def(&c2.table)).map_err(|e| err(e.into()))?;
            txn.commit().map_err(|e| err(e.into()))
        })
    })
    .await?;
    c.retired.store(DELETED, Ordering::SeqCst);
    state.collections.write().unwrap_or_else(|p| p.into_inner()).remove(&c.info.name);
    ok(StatusCode::OK, json!({"deleted": c.info.name}))
}

// ---- documents ---------------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InsertRequest {
    docs: Vec<InDoc>,
}

async fn insert_docs(
    State(state): State<Shared>,
    ApiPath(name): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let req: InsertRequest = parse(body)?;
    let limits = state.limits;
    if req.docs.len() > limits.max_batch_docs {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!("{} documents, the limit is {}", req.docs.len(), limits.max_batch_docs),
        ));
    }
    let mut docs = Vec::with_capacity(req.docs.len());
    let mut seen = std::collections::HashSet::new();
    for (i, d) in req.docs.into_iter().enumerate() {
        let what = format!("docs[{i}]");
        let id = doc_id(&d.id, &what)?;
        if !seen.insert(id.clone()) {
            return Err(ApiError::bad(
                "duplicate_id",
                format!("{what}: id {id:?} appears twice in the batch"),
            ));
        }
        let body = Body::from_parts(d.text, d.tokens, limits.max_doc_bytes, &what)?;
        check_metadata(&d.metadata, limits.max_metadata_bytes, &what, &id)?;
        docs.push((id, body, d.metadata));
    }
    let turn = turn(&state).await?;
    // Sketch outside every lock.
    let c2 = c.clone();
    let (records, turn): (Vec<(String, Record)>, Turn) = blocking(move || {
        let live = live(&c2)?.read().unwrap_or_else(|p| p.into_inner());
        let store_text = c2.info.store_text;
        // Sketch the batch on every core (rayon), in order.
        let records = docs
            .into_par_iter()
            .map_init(Scratch::default, |scratch, (id, body, metadata)| {
                let sketch = live.engine().sketch(body.document(), body.len(), scratch);
                let text = store_text.then(|| body.text());
                (id, Record { sketch, metadata, text })
            })
            .collect();
        Ok((records, turn))
    })
    .await?;
    let _writer = c.writer.lock().await;
    check_writable(&c)?;
    let (st, c2) = (state.clone(), c.clone());
    let (inserted, updated) = blocking(move || {
        let _turn = turn;
        let name = c2.info.name.as_str();
        let updated = st.with_db(|db| {
            let err = |e: redb::Error| store_err(&st, name, e);
            let txn = db.begin_write().map_err(|e| err(e.into()))?;
            check_incarnation(&txn, &st, &c2)?;
            let mut updated = 0usize;
            {
                let mut t = txn.open_table(docs_def(&c2.table)).map_err(|e| err(e.into()))?;
                for (id, record) in &records {
                    let old = t
                        .insert(id.as_str(), record.encode(id).as_slice())
                        .map_err(|e| err(e.into()))?;
                    updated += usize::from(old.is_some());
                }
            }
            txn.commit().map_err(|e| err(e.into()))?;
            Ok(updated)
        })?;
        // Durable: now visible to searches.
        let mut live = live(&c2)?.write().unwrap_or_else(|p| p.into_inner());
        let n = records.len();
        for (id, record) in records {
            live.insert_with_text(&id, record.sketch, record.text);
        }
        Ok((n - updated, updated))
    })
    .await?;
    ok(StatusCode::OK, json!({"inserted": inserted, "updated": updated}))
}

async fn get_doc(
    State(state): State<Shared>,
    ApiPath((name, id)): ApiPath<(String, String)>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let (st, c2, key) = (state.clone(), c.clone(), id.clone());
    let record = blocking(move || {
        let name = c2.info.name.as_str();
        st.with_db(|db| {
            let err = |e: redb::Error| store_err(&st, name, e);
            let txn = db.begin_read().map_err(|e| err(e.into()))?;
            let t = txn.open_table(docs_def(&c2.table)).map_err(|e| err(e.into()))?;
            let v = t.get(key.as_str()).map_err(|e| err(e.into()))?;
            v.map(|v| read_record(&st, &c2.info.name, &key, v.value())).transpose()
        })
    })
    .await?;
    let Some(record) = record else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "document_not_found",
            format!("no document {id:?}"),
        ));
    };
    let bits = c.info.spec.simhash_bits.get() as usize;
    let mut fingerprints = serde_json::Map::new();
    if c.info.method != Method::MinHash {
        let v = record.sketch.simhash_value();
        fingerprints.insert("simhash".into(), json!(format!("{v:0width$x}", width = bits / 4)));
    }
    if !record.sketch.band_keys().is_empty() {
        let keys: Vec<String> =
            record.sketch.band_keys().iter().map(|k| format!("{k:016x}")).collect();
        fingerprints.insert("lsh_band_keys".into(), json!(keys));
    }
    ok(
        StatusCode::OK,
        json!({
            "id": id,
            "metadata": record.metadata,
            "text": record.text,
            "empty": record.sketch.empty,
            "fingerprints": fingerprints,
        }),
    )
}

async fn delete_doc(
    State(state): State<Shared>,
    ApiPath((name, id)): ApiPath<(String, String)>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let _writer = c.writer.lock().await;
    check_writable(&c)?;
    let (st, c2, key) = (state.clone(), c.clone(), id.clone());
    let existed = blocking(move || {
        let name = c2.info.name.as_str();
        let existed = st.with_db(|db| {
            let err = |e: redb::Error| store_err(&st, name, e);
            let txn = db.begin_write().map_err(|e| err(e.into()))?;
            check_incarnation(&txn, &st, &c2)?;
            let existed = {
                let mut t = txn.open_table(docs_def(&c2.table)).map_err(|e| err(e.into()))?;
                let old = t.remove(key.as_str()).map_err(|e| err(e.into()))?;
                old.is_some()
            };
            txn.commit().map_err(|e| err(e.into()))?;
            Ok(existed)
        })?;
        live(&c2)?.write().unwrap_or_else(|p| p.into_inner()).remove(&key);
        Ok(existed)
    })
    .await?;
    if !existed {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "document_not_found",
            format!("no document {id:?}"),
        ));
    }
    ok(StatusCode::OK, json!({"deleted": id}))
}

// ---- search and check --------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchRequest {
    text: Option<String>,
    tokens: Option<Vec<String>>,
    top_k: Option<usize>,
    threshold: Option<f64>,
}

/// The `top_k` of a request: 10 unless given (or the limit, if lower); one over the limit is
/// refused, never silently cut to it (a client would take the shorter list for all there is).
fn top_k(given: Option<usize>, limits: &crate::Limits) -> Result<usize, ApiError> {
    match given {
        None => Ok(10.min(limits.max_top_k)),
        Some(k) if k > limits.max_top_k => Err(ApiError::bad(
            "invalid_field",
            format!("top_k {k} is over the limit {} (--max-top-k)", limits.max_top_k),
        )),
        Some(k) => Ok(k),
    }
}

fn check_threshold(t: Option<f64>) -> Result<(), ApiError> {
    match t {
        Some(t) if !(t > 0.0 && t <= 1.0) => {
            Err(ApiError::bad("invalid_field", format!("threshold {t} is not in (0, 1]")))
        }
        _ => Ok(()),
    }
}

async fn search(
    State(state): State<Shared>,
    ApiPath(name): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let req: SearchRequest = parse(body)?;
    check_threshold(req.threshold)?;
    let top_k = top_k(req.top_k, &state.limits)?;
    let body = Body::from_parts(req.text, req.tokens, state.limits.max_doc_bytes, "query")?;
    let turn = turn(&state).await?;
    let st = state.clone();
    blocking(move || {
        let _turn = turn;
        let name = c.info.name.as_str();
        st.with_db(|db| {
            let err = |e: redb::Error| store_err(&st, name, e);
            // The hits and the snapshot that gives their metadata are taken together, under
            // the index's read lock: a hit whose delete committed since (and whose removal from
            // the index waits for that lock) is left out, as the delete is then the earlier.
            let (hits, txn) = {
                let live = live(&c)?.read().unwrap_or_else(|p| p.into_inner());
                let mut scratch = Scratch::default();
                let q = live.engine().sketch(body.document(), body.len(), &mut scratch);
                let hits = live.search(&q, req.threshold, top_k, None);
                (hits, db.begin_read().map_err(|e| err(e.into()))?)
            };
            let t = txn.open_table(docs_def(&c.table)).map_err(|e| err(e.into()))?;
            let mut out = Vec::with_capacity(hits.len());
            for (id, similarity) in hits {
                let Some(v) = t.get(id.as_str()).map_err(|e| err(e.into()))? else { continue };
                let metadata = read_record(&state, &c.info.name, &id, v.value())?.metadata;
                out.push(json!({"id": id, "similarity": similarity, "metadata": metadata}));
            }
            ok(StatusCode::OK, json!({ "hits": out }))
        })
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckRequest {
    id: Box<RawValue>,
    text: Option<String>,
    tokens: Option<Vec<String>>,
    #[serde(default)]
    metadata: Value,
    #[serde(default = "yes")]
    insert: bool,
    threshold: Option<f64>,
    top_k: Option<usize>,
}

fn yes() -> bool {
    true
}

/// One `check` waiting for its group commit.
#[derive(Debug)]
pub(crate) struct PendingCheck {
    id: String,
    sketch: neardup::DocSketch,
    text: Option<String>,
    metadata: Value,
    insert: bool,
    threshold: Option<f64>,
    top_k: usize,
    reply: tokio::sync::oneshot::Sender<Result<Value, ApiError>>,
}

/// "Is this a near-duplicate of anything stored? If not, store it", atomically, with group
/// commit. The document is sketched outside every lock and queued on its collection; whoever
/// then holds the collection's writer lock takes the whole queue and decides each check in
/// queue order, as if they ran one after another: each is searched against the stored documents
/// and against those accepted before it in the same group. The accepted documents are written
/// in one transaction, one durable commit, and only then made visible to searches and
/// acknowledged: no reply says "inserted" before its commit. While one group commits, the next
/// gathers. The leader's work runs in a task of its own, so a client that disconnects cannot
/// leave a queued check half done.
async fn check(
    State(state): State<Shared>,
    ApiPath(name): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let req: CheckRequest = parse(body)?;
    check_threshold(req.threshold)?;
    let id = doc_id(&req.id, "id")?;
    let top_k = top_k(req.top_k, &state.limits)?;
    let body = Body::from_parts(req.text, req.tokens, state.limits.max_doc_bytes, "document")?;
    check_metadata(&req.metadata, state.limits.max_metadata_bytes, "document", &id)?;
    // The turn covers the sketch only: waiting for the group commit is cheap, and holding it
    // there would shrink the groups that share one durable commit.
    let turn = turn(&state).await?;
    let c2 = c.clone();
    let (sketch, text) = blocking(move || {
        let _turn = turn;
        let live = live(&c2)?.read().unwrap_or_else(|p| p.into_inner());
        let sketch = live.engine().sketch(body.document(), body.len(), &mut Scratch::default());
        Ok((sketch, c2.info.store_text.then(|| body.text())))
    })
    .await?;
    let (reply, answer) = tokio::sync::oneshot::channel();
    let (metadata, insert, threshold) = (req.metadata, req.insert, req.threshold);
    let pending = PendingCheck { id, sketch, text, metadata, insert, threshold, top_k, reply };
    c.checks.lock().unwrap_or_else(|p| p.into_inner()).push(pending);
    tokio::spawn(async move {
        let _writer = c.writer.lock().await;
        let group = std::mem::take(&mut *c.checks.lock().unwrap_or_else(|p| p.into_inner()));
        if group.is_empty() {
            return; // an earlier leader took this check into its group
        }
        if let Err(e) = check_writable(&c) {
            group.into_iter().for_each(|p| drop(p.reply.send(Err(e.clone()))));
            return;
        }
        // A panic in the group drops its replies: each waiting request answers 500.
        let c2 = c.clone();
        let _ = tokio::task::spawn_blocking(move || commit_checks(&state, &c2, group)).await;
    });
    match answer.await {
        Ok(result) => ok(StatusCode::OK, result?),
        Err(_) => Err(ApiError::internal("the check's group failed")),
    }
}

/// Decides a group of checks in order, commits the accepted documents at once, then replies.
fn commit_checks(state: &AppState, c: &Collection, group: Vec<PendingCheck>) {
    let live_lock = match live(c) {
        Ok(l) => l,
        Err(e) => return group.into_iter().for_each(|p| drop(p.reply.send(Err(e.clone())))),
    };
    // Decisions, in queue order, as one-at-a-time checks would make them (the library's rule).
    let (mut answers, accepted): (Vec<Value>, Vec<usize>) = {
        let live = live_lock.read().unwrap_or_else(|p| p.into_inner());
        let checks: Vec<neardup::Check<'_>> = group
            .iter()
            .map(|p| neardup::Check {
                id: &p.id,
                sketch: &p.sketch,
                insert: p.insert,
                threshold: p.threshold,
                top_k: p.top_k,
            })
            .collect();
        let decided = live.decide_checks(&checks);
        let accepted = decided.iter().enumerate().filter(|(_, a)| a.inserted).map(|(i, _)| i);
        let accepted = accepted.collect();
        let answers = decided
            .into_iter()
            .map(|a| {
                let matches: Vec<Value> = a
                    .matches
                    .into_iter()
                    .map(|(id, s)| json!({"id": id, "similarity": s}))
                    .collect();
                // `replaced` is settled by the commit, which sees whether the id was stored.
                json!({
                    "duplicate": a.duplicate, "matches": matches, "inserted": a.inserted,
                    "replaced": false,
                })
            })
            .collect();
        (answers, accepted)
    };
    // One transaction, one durable commit for the whole group.
    if !accepted.is_empty() {
        let name = c.info.name.as_str();
        let committed = state.with_db(|db| {
            let err = |e: redb::Error| store_err(state, name, e);
            let txn = db.begin_write().map_err(|e| err(e.into()))?;
            check_incarnation(&txn, state, c)?;
            {
                let mut t = txn.open_table(docs_def(&c.table)).map_err(|e| err(e.into()))?;
                for &i in &accepted {
                    let p = &group[i];
                    let record = encode_record(&p.id, &p.sketch, &p.metadata, p.text.as_deref());
                    let old =
                        t.insert(p.id.as_str(), record.as_slice()).map_err(|e| err(e.into()))?;
                    // An upsert of a stored id (or of one accepted earlier in the group)
                    // replaced that document: say so, `inserted` alone read as a new one.
                    if old.is_some() {
                        answers[i]["replaced"] = json!(true);
                    }
                }
            }
            txn.commit().map_err(|e| err(e.into()))
        });
        if let Err(e) = committed {
            // Nothing of the group was stored; decisions that counted on it are void too.
            return group.into_iter().for_each(|p| drop(p.reply.send(Err(e.clone()))));
        }
        // Durable: now visible to searches.
        let mut live = live_lock.write().unwrap_or_else(|p| p.into_inner());
        let mut group: Vec<Option<PendingCheck>> = group.into_iter().map(Some).collect();
        for &i in &accepted {
            let p = group[i].as_mut().expect("each accepted once");
            live.insert_with_text(&p.id, std::mem::take(&mut p.sketch), p.text.take());
        }
        drop(live);
        for (p, answer) in group.into_iter().flatten().zip(answers) {
            let _ = p.reply.send(Ok(answer));
        }
        return;
    }
    for (p, answer) in group.into_iter().zip(answers) {
        let _ = p.reply.send(Ok(answer));
    }
}

// ---- the passage check ---------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverlapRequest {
    text: Option<String>,
    tokens: Option<Vec<String>>,
    /// The query's own id: a stored document of this id (its earlier version) is never its
    /// source.
    id: Option<Box<RawValue>>,
    /// Documents never counted as sources (the author's own earlier work).
    #[serde(default)]
    exclude_source: Vec<Box<RawValue>>,
}

/// Which passages of a text are copied from which stored documents, and how much of the text
/// that is: the passage check of `neardup overlap` against a collection that keeps passages.
async fn overlap(
    State(state): State<Shared>,
    ApiPath(name): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    if c.info.passages.is_none() {
        return Err(ApiError::bad(
            "no_passages",
            format!(
                "collection {name:?} keeps no passages: create a collection with \"passages\": \
                 true to check texts against it"
            ),
        ));
    }
    let req: OverlapRequest = parse(body)?;
    let body = Body::from_parts(req.text, req.tokens, state.limits.max_doc_bytes, "query")?;
    let own = req.id.as_deref().map(|r| doc_id(r, "id")).transpose()?;
    if req.exclude_source.len() > state.limits.max_batch_docs {
        return Err(ApiError::bad(
            "invalid_field",
            format!(
                "exclude_source: {} ids, the limit is {} (--max-batch-docs)",
                req.exclude_source.len(),
                state.limits.max_batch_docs
            ),
        ));
    }
    let exclude: Vec<String> = req
        .exclude_source
        .iter()
        .enumerate()
        .map(|(i, r)| doc_id(r, &format!("exclude_source[{i}]")))
        .collect::<Result<_, _>>()?;
    let turn = turn(&state).await?;
    blocking(move || {
        let _turn = turn;
        let live = live(&c)?.read().unwrap_or_else(|p| p.into_inner());
        let index = live.passages().ok_or_else(|| ApiError::internal("no passage index"))?;
        let exclude: Vec<u32> = exclude
            .iter()
            .map(|id| {
                index.find(id).ok_or_else(|| {
                    ApiError::bad(
                        "invalid_field",
                        format!("exclude_source: no document {id:?} in collection {name:?}"),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let text = body.text();
        let found = index
            .check(own.as_deref(), &text, &exclude)
            .map_err(|e| ApiError::bad("invalid_field", e.to_string()))?;
        ok(StatusCode::OK, overlap_json(&found, index))
    })
    .await
}

/// The answer of the passage check: the summary of `neardup overlap --summary`, the passages
/// of `--passages` (each with its source's text over the passage) and the excluded ones.
fn overlap_json(o: &Overlap, index: &PassageIndex) -> Value {
    let share = |part: u64| o.share(part);
    let passage = |p: &Passage| {
        let source = index.text(p.source);
        let mut v = json!({
            "start": p.start, "end": p.end, "source": index.id(p.source),
            "source_start": p.source_start, "source_end": p.source_end,
            "similarity": p.similarity,
            "start_byte": p.start_byte, "end_byte": p.end_byte,
            "source_start_byte": p.source_start_byte, "source_end_byte": p.source_end_byte,
            "also": p.also.iter().map(|&a| index.id(a)).collect::<Vec<_>>(),
            "source_text": source.get(p.source_start_byte as usize..p.source_end_byte as usize),
        });
        if let Some(why) = p.exclusion {
            v["exclusion"] = json!(why.as_str());
        }
        v
    };
    json!({
        "chars": o.chars,
        "copied_chars": o.copied_chars,
        "copied": share(o.copied_chars),
        "excluded_chars": o.excluded_chars,
        "sources": o.sources.iter().map(|s| json!({
            "id": index.id(s.source), "chars": s.chars, "copied": share(s.chars)
        })).collect::<Vec<_>>(),
        "passages": o.passages.iter().map(passage).collect::<Vec<_>>(),
        "excluded": o.excluded.iter().map(passage).collect::<Vec<_>>(),
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareRequest {
    a: String,
    b: String,
    preset: Option<String>,
    spec: Option<Value>,
}

async fn compare(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let req: CompareRequest = parse(body)?;
    for (what, t) in [("a", &req.a), ("b", &req.b)] {
        if t.len() > state.limits.max_doc_bytes {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "document_too_large",
                format!("{what}: {} bytes, the limit is {}", t.len(), state.limits.max_doc_bytes),
            ));
        }
    }
    let spec = resolve_spec(req.preset, req.spec)?;
    let turn = turn(&state).await?;
    blocking(move || {
        let _turn = turn;
        let pipeline =
            Pipeline::new(spec).map_err(|e| ApiError::bad("invalid_field", e.to_string()))?;
        let c = neardup::compare(&pipeline, Document::Text(&req.a), Document::Text(&req.b))
            .map_err(ApiError::internal)?;
        ok(StatusCode::OK, serde_json::to_value(c).map_err(ApiError::internal)?)
    })
    .await
}

// ---- health, metrics, OpenAPI -------------------------------------------------------------------

async fn health(State(state): State<Shared>) -> Response {
    let version = env!("CARGO_PKG_VERSION");
    let damage = state.damage();
    match state.unhealthy() {
        None if damage.records > 0 => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "damaged",
                "reason": format!(
                    "{} stored records fail their checksum (the store is damaged; they are not \
                     served): restore the store from a backup, or insert those documents again",
                    damage.records
                ),
                "damaged_records": damage.records,
                "examples": damage.examples,
                "version": version,
            })),
        )
            .into_response(),
        None => (StatusCode::OK, Json(json!({"status": "ok", "version": version}))).into_response(),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unhealthy", "reason": reason, "version": version})),
        )
            .into_response(),
    }
}

/// `(method, route, status)`: every part from a fixed set, never a string the client chose
/// (4,000 requests with random method names used to make 4,000 series and 245 MB of metrics).
type RouteKey = (&'static str, &'static str, u16);

/// Request counts and latency sums by route and status, for Prometheus.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<RouteKey, (u64, f64)>>,
}

/// The metrics label of a method: the standard methods by name, any other as `other`.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method as M;
    match *method {
        M::GET => "GET",
        M::POST => "POST",
        M::PUT => "PUT",
        M::DELETE => "DELETE",
        M::HEAD => "HEAD",
        M::OPTIONS => "OPTIONS",
        M::PATCH => "PATCH",
        M::TRACE => "TRACE",
        M::CONNECT => "CONNECT",
        _ => "other",
    }
}

/// The route template a request matched (one of the router's own strings), for its metrics
/// label; set on the response by [`route_label`].
#[derive(Debug, Clone, Copy)]
struct RouteLabel(&'static str);

/// The routes, each once: the router is built from them and the metrics labels come from them.
mod routes {
    pub const PAGE: &str = "/";
    pub const COLLECTIONS: &str = "/v1/collections";
    pub const COLLECTION: &str = "/v1/collections/{name}";
    pub const DOCS: &str = "/v1/collections/{name}/docs";
    pub const DOC: &str = "/v1/collections/{name}/docs/{id}";
    pub const SEARCH: &str = "/v1/collections/{name}/search";
    pub const CHECK: &str = "/v1/collections/{name}/check";
    pub const OVERLAP: &str = "/v1/collections/{name}/overlap";
    pub const COMPARE: &str = "/v1/compare";
    pub const HEALTH: &str = "/v1/health";
    pub const METRICS: &str = "/metrics";
    pub const OPENAPI: &str = "/v1/openapi.json";
    pub const ALL: [&str; 12] = [
        PAGE,
        COLLECTIONS,
        COLLECTION,
        DOCS,
        DOC,
        SEARCH,
        CHECK,
        OVERLAP,
        COMPARE,
        HEALTH,
        METRICS,
        OPENAPI,
    ];
}

async fn metrics(State(state): State<Shared>) -> Response {
    let mut out = String::new();
    out.push_str(
        "# HELP neardup_requests_total HTTP requests by method, route and status (method \
         \"other\" for a non-standard one, route \"unmatched\" for a path of no route or a \
         request refused before routing).\n",
    );
    out.push_str("# TYPE neardup_requests_total counter\n");
    let requests = state.metrics.requests.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for ((method, route, status), (n, _)) in &requests {
        out.push_str(&format!(
            "neardup_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}\n"
        ));
    }
    out.push_str("# HELP neardup_request_seconds_sum Total time spent answering, by route.\n");
    out.push_str("# TYPE neardup_request_seconds_sum counter\n");
    for ((method, route, status), (_, secs)) in &requests {
        out.push_str(&format!(
            "neardup_request_seconds_sum{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {secs}\n"
        ));
    }
    out.push_str("# HELP neardup_healthy 1 when the store is usable, 0 after an I/O error.\n");
    out.push_str("# TYPE neardup_healthy gauge\n");
    out.push_str(&format!("neardup_healthy {}\n", u8::from(state.unhealthy().is_none())));
    out.push_str("# HELP neardup_documents Documents stored per collection.\n");
    out.push_str("# TYPE neardup_documents gauge\n");
    for (name, c) in state.collections.read().unwrap_or_else(|p| p.into_inner()).iter() {
        if let Ok(live) = &c.live {
            let n = live.read().unwrap_or_else(|p| p.into_inner()).len();
            out.push_str(&format!("neardup_documents{{collection=\"{name}\"}} {n}\n"));
        }
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

/// Marks the response with the route template the request matched (runs inside routing).
async fn route_label(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|p| routes::ALL.iter().find(|r| **r == p.as_str()).copied());
    let mut response = next.run(req).await;
    if let Some(route) = route {
        response.extensions_mut().insert(RouteLabel(route));
    }
    response
}

/// Counts every request (those refused before routing and those of no route included) by
/// method, route and status; a path that matched no route is `unmatched`, one method among
/// the many a client may make up is `other`.
async fn track(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    let response = next.run(req).await;
    let route = response.extensions().get::<RouteLabel>().map_or("unmatched", |r| r.0);
    let key = (method, route, response.status().as_u16());
    let mut m = state.metrics.requests.lock().unwrap_or_else(|p| p.into_inner());
    let e = m.entry(key).or_insert((0, 0.0));
    e.0 += 1;
    e.1 += started.elapsed().as_secs_f64();
    response
}

/// The token of an `Authorization` header: the scheme `Bearer` in any case, one or more spaces,
/// the token (RFC 9110: schemes are case-insensitive).
fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// A client-supplied string for a message: quoted, and cut at 100 characters.
fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(100) {
        Some((at, _)) => format!("{:?}...", &text[..at]),
        None => format!("{text:?}"),
    }
}

/// A `host[:port]` authority split into its lowercase host (brackets kept on IPv6) and port.
fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = match authority.rfind(':') {
        // A colon inside brackets belongs to an IPv6 address, not to a port.
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        _ => (authority, None),
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// The `Host` of a request: its header, or the authority of an absolute-form URI.
fn request_host(req: &Request) -> Option<Result<&str, Vec<u8>>> {
    match req.headers().get(header::HOST) {
        Some(v) => Some(v.to_str().map_err(|_| v.as_bytes().to_vec())),
        None => req.uri().authority().map(|a| Ok(a.as_str())),
    }
}

/// On loopback, a request must name this server: `localhost`, `127.0.0.1`, `[::1]` or the
/// address it listens on, with its port. A browser sends the name it resolved, so a page of
/// another site whose name was rebound to 127.0.0.1 (DNS rebinding) is refused here. A request
/// without a Host (HTTP/1.0) is let through: browsers always send one.
fn check_host(state: &AppState, req: &Request) -> Result<(), ApiError> {
    let Some(listening) = state.listening.get() else { return Ok(()) };
    if !listening.ip().is_loopback() {
        return Ok(());
    }
    let refuse = |given: &[u8]| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!(
                "Host {} is not this server: on loopback it answers only to localhost:{port}, \
                 127.0.0.1:{port} or [::1]:{port} (a page of another name resolved to this \
                 machine is refused)",
                preview(given),
                port = listening.port()
            ),
        )
    };
    let own_ip = match listening.ip() {
        std::net::IpAddr::V4(ip) => ip.to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
    };
    let mut hosts = vec![request_host(req)];
    // An absolute-form URI names a host too; both must be this server.
    if req.headers().contains_key(header::HOST) {
        hosts.push(req.uri().authority().map(|a| Ok(a.as_str())));
    }
    for host in hosts.into_iter().flatten() {
        let host = host.map_err(|bytes| refuse(&bytes))?;
        let ok = split_authority(host).is_some_and(|(name, port)| {
            let name_ok =
                matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]") || name == own_ip;
            name_ok && port.unwrap_or(80) == listening.port()
        });
        if !ok {
            return Err(refuse(host.as_bytes()));
        }
    }
    Ok(())
}

/// A request that carries an `Origin` must come from this server's own origin (the page at
/// `/`): same host and port as its `Host`, by `http` or `https` (behind a TLS proxy that
/// keeps `Host`). Browsers send `Origin` on every cross-origin POST, `no-cors` ones included,
/// so a page of another site cannot write here even with a simple request.
fn check_origin(req: &Request) -> Result<(), ApiError> {
    let Some(origin) = req.headers().get(header::ORIGIN) else { return Ok(()) };
    let host = request_host(req).and_then(Result::ok);
    let same = origin.to_str().ok().is_some_and(|origin| {
        let Some((scheme, authority)) = origin.split_once("://") else { return false };
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        let (Some((o_name, o_port)), Some((h_name, h_port))) =
            (split_authority(authority), host.and_then(split_authority))
        else {
            return false;
        };
        o_name == h_name && o_port.unwrap_or(default_port) == h_port.unwrap_or(default_port)
    });
    if same {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden_origin",
        format!(
            "Origin {} is not this server's own origin (http://{}): requests from pages of \
             other sites are refused",
            preview(origin.as_bytes()),
            host.map_or_else(|| "?".to_string(), |h| h.chars().take(100).collect())
        ),
    ))
}

/// A request with a body must say it is JSON: `Content-Type: application/json`, with optional
/// parameters (`; charset=utf-8`). Without this, a page of another site could post a
/// `text/plain` body with `no-cors`, which browsers send without asking (a "simple" request).
fn check_content_type(req: &Request) -> Result<(), ApiError> {
    use axum::body::HttpBody as _;
    if req.body().is_end_stream() {
        return Ok(());
    }
    let given = req.headers().get(header::CONTENT_TYPE);
    let json = given.and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let essence = v.split(';').next().unwrap_or("").trim();
        essence.eq_ignore_ascii_case("application/json")
    });
    if json {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "a request body must be JSON, sent with Content-Type: application/json (this one \
             has {}); other types are refused so that pages of other sites cannot post here",
            given.map_or_else(|| "none".to_string(), |v| preview(v.as_bytes()))
        ),
    ))
}

/// Long URIs are refused with a JSON 414; on loopback the Host must be this server, and any
/// Origin must be this server's own (403: DNS rebinding and cross-site requests); bearer tokens
/// are checked in constant time (`/v1/health` and the page at `/` are open); a body must be
/// JSON by its Content-Type (415).
async fn guard(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let uri_len = req.uri().to_string().len();
    if uri_len > state.limits.max_uri_bytes {
        return ApiError::new(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            format!("the URI has {uri_len} bytes, the limit is {}", state.limits.max_uri_bytes),
        )
        .into_response();
    }
    if let Err(e) = check_host(&state, &req).and_then(|()| check_origin(&req)) {
        return e.into_response();
    }
    if let Some(token) = &state.token {
        let open = matches!(req.uri().path(), "/v1/health" | "/");
        if !open {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(bearer)
                .unwrap_or("");
            // `ct_eq` compares in time independent of where the bytes differ (lengths differ ->
            // unequal; the length of the token is not a secret worth hiding).
            if !bool::from(given.as_bytes().ct_eq(token)) {
                return ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "a valid bearer token is required (Authorization: Bearer TOKEN)",
                )
                .into_response();
            }
        }
    }
    if let Err(e) = check_content_type(&req) {
        return e.into_response();
    }
    next.run(req).await
}

/// The page at `/`: a static document whose script uses the public API of this origin.
async fn page() -> Response {
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, neardup_web::service::content_security_policy()),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-cache"),
    ];
    (StatusCode::OK, headers, neardup_web::service::page()).into_response()
}

async fn openapi(State(state): State<Shared>) -> Response {
    Json(crate::openapi::document(&state.limits)).into_response()
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}

/// The service's routes.
pub fn router(state: Shared) -> Router {
    let limit = state.limits.max_body_bytes;
    Router::new()
        .route(routes::PAGE, get(page))
        .route(routes::COLLECTIONS, get(list_collections))
        .route(
            routes::COLLECTION,
            put(create_collection).get(get_collection).delete(delete_collection),
        )
        .route(routes::DOCS, post(insert_docs))
        .route(routes::DOC, get(get_doc).delete(delete_doc))
        .route(routes::SEARCH, post(search))
        .route(routes::CHECK, post(check))
        .route(routes::OVERLAP, post(overlap))
        .route(routes::COMPARE, post(compare))
        .route(routes::HEALTH, get(health))
        .route(routes::METRICS, get(metrics))
        .route(routes::OPENAPI, get(openapi))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .route_layer(middleware::from_fn(route_label))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .layer(middleware::from_fn_with_state(state.clone(), track))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer abc"), Some("abc"));
        assert_eq!(bearer("BEARER   abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
    }
}
