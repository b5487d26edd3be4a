//! The HTTP API: the error type, request parsing and the shared helpers here, the routes in one
//! file each (`collections`, `docs`, `queries`, `passages`), `access` (token, Host, Origin,
//! content types) and `ops` (health, metrics).

mod access;
mod admit;
mod body;
mod collections;
mod docs;
mod ops;
mod passages;
mod queries;

use access::*;
use admit::*;
use body::*;
use collections::*;
use docs::*;
pub use ops::Metrics;
use ops::*;
use passages::*;
pub(crate) use queries::PendingCheck;
use queries::*;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{
    DefaultBodyLimit, FromRequest, FromRequestParts, MatchedPath, Path, Request, State,
};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use neardup::overlap::{Overlap, OverlapOptions, OverlapSpec, Passage, PassageRecord};
use neardup::{Document, Method, Pipeline, PipelineSpec, Scratch, SearchUse};
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

use crate::store::{
    encode_record, new_incarnation, no_metadata, CollectionInfo, Docs, Record, Store, StoreError,
    WriteTxn,
};
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
        ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "storage_unavailable",
                format!("{reason}; the store is being reopened, retry later"),
            )
        }
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

/// Refuses metadata over `--max-metadata-bytes` (measured as the JSON it is stored as): with
/// `--max-top-k` it bounds what one search answer carries.
fn check_metadata(
    metadata: Option<&RawValue>,
    limit: usize,
    what: &str,
    id: &str,
) -> Result<(), ApiError> {
    let size = metadata.map_or(0, |m| m.get().len());
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

/// A reply serialized straight to bytes, raw values (metadata as the client sent it) spliced
/// in as written.
fn ok_raw(status: StatusCode, body: &impl serde::Serialize) -> ApiResult {
    let bytes = serde_json::to_vec(body).map_err(ApiError::internal)?;
    Ok((status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response())
}

/// Raw JSON text of a serializable value (an answer built once, replied later).
fn to_raw(body: &impl serde::Serialize) -> Result<Box<RawValue>, ApiError> {
    serde_json::value::to_raw_value(body).map_err(ApiError::internal)
}

/// Maps a store error: one that makes the store unavailable makes the service unhealthy (503
/// until the store is reopened); a table that no longer exists means the collection was
/// deleted (404).
fn store_err(state: &AppState, name: &str, e: StoreError) -> ApiError {
    match e {
        StoreError::Unavailable(reason) => {
            state.set_unhealthy(reason.clone());
            ApiError::unavailable(reason)
        }
        StoreError::Gone => ApiError::collection_gone(name),
        StoreError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "collection_exists", m),
        StoreError::Busy(m) => ApiError {
            retry_after: Some(1),
            ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", format!("{m}; retry"))
        },
        StoreError::Other(m) => ApiError::internal(m),
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

/// The stored sketches of a collection, read from a transaction for verification: a
/// collection's index keeps none in memory ([`neardup::Engine::with_external_sketches`]), and
/// in a store that keeps the candidate index ([`crate::store::Store::indexes`]) the candidates
/// themselves come from it ([`neardup::StoredIndex`]). The first error is kept whole for the
/// reply (the library only passes it through).
struct StoredSketches<'a> {
    state: &'a AppState,
    collection: &'a str,
    /// The store keeps the candidate index.
    indexed: bool,
    table: Box<dyn Docs + 'a>,
    failed: std::cell::RefCell<Option<ApiError>>,
    /// The records of the candidates read from the store's index, by id: a search's hits
    /// take their metadata from here without reading them again.
    records: std::cell::RefCell<std::collections::HashMap<String, Vec<u8>>>,
}

impl<'a> StoredSketches<'a> {
    fn open(
        state: &'a AppState,
        c: &'a Collection,
        txn: &'a dyn crate::store::ReadTxn,
    ) -> Result<StoredSketches<'a>, ApiError> {
        let name = c.info.name.as_str();
        let table = txn.docs(&c.table).map_err(|e| store_err(state, name, e))?;
        Ok(StoredSketches::over(state, c, table))
    }

    /// The same over a table of documents already open (a write transaction's).
    fn over(
        state: &'a AppState,
        c: &'a Collection,
        table: Box<dyn Docs + 'a>,
    ) -> StoredSketches<'a> {
        StoredSketches {
            state,
            collection: &c.info.name,
            indexed: c.indexed,
            table,
            failed: Default::default(),
            records: Default::default(),
        }
    }

    /// Keeps the first error for the reply; the library gets its message.
    fn fail(&self, e: ApiError) -> neardup::SourceError {
        let message = e.message.clone();
        self.failed.borrow_mut().get_or_insert(e);
        message.into()
    }

    fn damaged(&self, id: &str, what: &str) -> neardup::SourceError {
        self.state.record_damage(self.collection, id, what);
        self.fail(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "damaged_record",
            format!("collection {:?}, document {id:?}: {what}", self.collection),
        ))
    }

    fn get(&self, id: &str) -> Result<Option<neardup::DocSketch>, neardup::SourceError> {
        let Some(v) =
            self.table.get(id).map_err(|e| self.fail(store_err(self.state, self.collection, e)))?
        else {
            return Ok(None);
        };
        match Record::decode_sketch(id, &v) {
            Ok(sketch) => Ok(Some(sketch)),
            Err(what) => Err(self.damaged(id, &what)),
        }
    }

    /// Runs `f` with where the library finds the collection's documents: the store's index,
    /// or the engine's with the sketches read from the store.
    fn with<R>(&self, f: impl FnOnce(neardup::Stored<'_>) -> R) -> R {
        if self.indexed {
            f(neardup::Stored::Index(self))
        } else {
            f(neardup::Stored::Sketches(&|id| self.get(id)))
        }
    }

    /// The records of `ids`, in their order: those read as candidates from memory, the rest
    /// in one go from the store.
    fn records_of(&self, ids: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let mut held = self.records.borrow_mut();
        let mut out: Vec<Option<Vec<u8>>> = ids.iter().map(|id| held.remove(*id)).collect();
        let missing: Vec<&str> =
            ids.iter().zip(&out).filter(|(_, r)| r.is_none()).map(|(id, _)| *id).collect();
        if !missing.is_empty() {
            let mut read = self.table.get_many(&missing)?.into_iter();
            for slot in out.iter_mut().filter(|r| r.is_none()) {
                *slot = read.next().flatten();
            }
        }
        Ok(out)
    }

    /// The reply for a source error the library returned.
    fn error(&self, e: neardup::SourceError) -> ApiError {
        self.failed.borrow_mut().take().unwrap_or_else(|| ApiError::internal(e))
    }
}

impl neardup::StoredIndex for StoredSketches<'_> {
    fn documents(&self) -> Result<usize, neardup::SourceError> {
        match self.table.count() {
            Ok(n) => Ok(n.unwrap_or(0) as usize),
            Err(e) => Err(self.fail(store_err(self.state, self.collection, e))),
        }
    }

    fn candidates(
        &self,
        keys: Option<&[u64]>,
    ) -> Result<Vec<neardup::StoredDoc>, neardup::SourceError> {
        let found = self
            .table
            .candidates(keys)
            .map_err(|e| self.fail(store_err(self.state, self.collection, e)))?;
        let mut out = Vec::with_capacity(found.len());
        let mut held = self.records.borrow_mut();
        for c in found {
            // A damaged record is no candidate: it is counted as damage (`/v1/health`) and the
            // answer comes from the others, as the embedded store leaves such a record out of
            // its index at start (one bad record made every search that met it a 500).
            let sketch = match Record::decode_sketch(&c.id, &c.record) {
                Ok(sketch) => sketch,
                Err(what) => {
                    self.state.record_damage(self.collection, &c.id, &what);
                    continue;
                }
            };
            // Kept for the hits' metadata (not a scan's every record).
            if keys.is_some() {
                held.insert(c.id.clone(), c.record);
            }
            out.push(neardup::StoredDoc { id: c.id, order: c.order, sketch });
        }
        Ok(out)
    }
}

impl AppState {
    /// Runs `f` on the store, unless the service is unhealthy (503).
    fn with_db<T>(&self, f: impl FnOnce(&dyn Store) -> Result<T, ApiError>) -> Result<T, ApiError> {
        if let Some(reason) = self.unhealthy() {
            return Err(ApiError::unavailable(reason));
        }
        let guard = self.db.read().unwrap_or_else(|p| p.into_inner());
        match guard.as_deref() {
            Some(db) => f(db),
            None => Err(ApiError::unavailable("the store is closed")),
        }
    }
}

/// Parses a JSON body, saying what is wrong and where.
fn parse<T: Shape>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
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
    // The path of the value at fault leads the message (`docs[50].text: invalid type ...`): a
    // line and column of a one-line body say little.
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    let parsed = serde_path_to_error::deserialize(&mut de)
        .map(|Object(v)| v)
        .map_err(|e| (e.path().to_string(), e.into_inner()))
        .and_then(|v| de.end().map(|()| v).map_err(|e| (".".to_string(), e)));
    parsed.map_err(|(path, e)| {
        let code = match e.classify() {
            serde_json::error::Category::Data => "invalid_field",
            _ => "malformed_json",
        };
        let message = e.to_string();
        if path == "." || code == "malformed_json" {
            ApiError::bad(code, message)
        } else {
            ApiError::bad(code, format!("{path}: {message}"))
        }
    })
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

/// The collection a route's `{name}` names, found and answering (not one whose stored pipeline
/// this build cannot run): the preamble of every route on a collection's documents.
struct LiveCollection(Arc<Collection>);

impl FromRequestParts<Shared> for LiveCollection {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, ApiError> {
        let ApiPath(params) =
            ApiPath::<BTreeMap<String, String>>::from_request_parts(parts, state).await?;
        let name =
            params.get("name").ok_or_else(|| ApiError::internal("a route without {name}"))?;
        let c = find_collection(state, name).await?;
        live(&c)?;
        Ok(LiveCollection(c))
    }
}

/// A request to a live collection ([`LiveCollection`]) and its JSON body, parsed (errors in the
/// order a client fixes them: the collection first, then the body).
struct OnLive<T> {
    c: Arc<Collection>,
    req: T,
}

impl<T: Shape> FromRequest<Shared> for OnLive<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Shared) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let LiveCollection(c) = LiveCollection::from_request_parts(&mut parts, state).await?;
        let bytes = Bytes::from_request(Request::from_parts(parts, body), state).await;
        Ok(OnLive { c, req: parse(bytes)? })
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
fn check_incarnation(txn: &dyn WriteTxn, state: &AppState, c: &Collection) -> Result<(), ApiError> {
    let stored = txn.settings(&c.info.name);
    incarnation_is(stored, state, c)
}

/// [`check_incarnation`] for a delete of the collection: its row taken alone
/// ([`WriteTxn::settings_alone`]).
fn check_incarnation_alone(
    txn: &dyn WriteTxn,
    state: &AppState,
    c: &Collection,
) -> Result<(), ApiError> {
    let stored = txn.settings_alone(&c.info.name);
    incarnation_is(stored, state, c)
}

fn incarnation_is(
    stored: Result<Option<String>, StoreError>,
    state: &AppState,
    c: &Collection,
) -> Result<(), ApiError> {
    let stored = stored.map_err(|e| store_err(state, &c.info.name, e))?;
    let same = stored.is_some_and(|v| {
        serde_json::from_str::<CollectionInfo>(&v)
            .is_ok_and(|i| i.incarnation == c.info.incarnation)
    });
    if same {
        Ok(())
    } else {
        // Deleted (or made again) through another server: this server's object of it is done.
        forget(state, c);
        Err(ApiError::collection_gone(&c.info.name))
    }
}

/// The collection's count read again, when the store is shared (other servers change it; a
/// collection deleted through another is forgotten here and answered 404).
fn sync(state: &AppState, c: &Collection) -> Result<(), ApiError> {
    state.with_db(|db| {
        if !db.shared() {
            return Ok(());
        }
        let txn = db.read().map_err(|e| store_err(state, &c.info.name, e))?;
        count(state, c, &*txn)
    })
}

/// Reads how many documents the store holds of `c` (a store that keeps the index counts them)
/// into what its description shows.
fn count(
    state: &AppState,
    c: &Collection,
    txn: &dyn crate::store::ReadTxn,
) -> Result<(), ApiError> {
    let counted = match txn.docs(&c.table).and_then(|d| d.count()) {
        Ok(n) => n,
        Err(StoreError::Gone) => {
            forget(state, c);
            return Err(ApiError::collection_gone(&c.info.name));
        }
        Err(e) => return Err(store_err(state, &c.info.name, e)),
    };
    if let Some(n) = counted {
        c.counted.store(n, Ordering::Relaxed);
    }
    Ok(())
}

/// In a store other servers share: this server's map of collections made the store's (those
/// created elsewhere loaded, those deleted elsewhere dropped), each brought up to date.
async fn refresh_collections(state: &Shared) -> Result<(), ApiError> {
    let shared = state.db.read().unwrap_or_else(|p| p.into_inner()).as_ref().map(|d| d.shared());
    if shared != Some(true) {
        return Ok(()); // the map is the store's (and answers while the store is reopened)
    }
    let st = state.clone();
    let names = blocking(move || {
        st.with_db(|db| {
            if !db.shared() {
                return Ok(None);
            }
            let read = db.read().map_err(|e| store_err(&st, "", e))?;
            let list = read.collections().map_err(|e| store_err(&st, "", e))?;
            Ok(Some(list.into_iter().map(|(name, _)| name).collect::<Vec<_>>()))
        })
    })
    .await?;
    let Some(names) = names else { return Ok(()) };
    let known: Vec<Arc<Collection>> =
        state.collections.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
    for c in known {
        let st = state.clone();
        // Brought up to date; one deleted elsewhere is forgotten here.
        let _ = blocking(move || sync(&st, &c)).await;
    }
    for name in names {
        match find_collection(state, &name).await {
            Ok(_) => {}
            Err(e) if e.code == "collection_not_found" => {} // deleted since the list was read
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Drops a collection another server deleted from this server's map (if the map still holds
/// this incarnation of it).
fn forget(state: &AppState, c: &Collection) {
    c.retired.store(DELETED, Ordering::SeqCst);
    let mut map = state.collections.write().unwrap_or_else(|p| p.into_inner());
    if map.get(&c.info.name).is_some_and(|m| m.info.incarnation == c.info.incarnation) {
        map.remove(&c.info.name);
    }
}

/// The collection `name`: in this server's map, or, in a store other servers share, as stored
/// (created through another server: loaded now, and kept).
async fn find_collection(state: &Shared, name: &str) -> Result<Arc<Collection>, ApiError> {
    match collection(state, name) {
        Ok(c) => Ok(c),
        Err(e) if e.code == "collection_not_found" => {
            let st = state.clone();
            let name = name.to_string();
            blocking(move || {
                let found = st.with_db(|db| {
                    if !db.shared() {
                        return Ok(None);
                    }
                    let read = db.read().map_err(|e| store_err(&st, &name, e))?;
                    let Some(settings) =
                        read.collection(&name).map_err(|e| store_err(&st, &name, e))?
                    else {
                        return Ok(None);
                    };
                    let info: CollectionInfo =
                        serde_json::from_str(&settings).map_err(ApiError::internal)?;
                    let mut damage = crate::Damage::default();
                    let c =
                        crate::load_collection(&*read, info, &mut damage, &st.limits, db.indexes())
                            .map_err(ApiError::internal)?;
                    for example in &damage.examples {
                        eprintln!("neardup serve: damaged record {example}");
                    }
                    Ok(Some(c))
                })?;
                let Some(c) = found else { return Err(e) };
                let mut map = st.collections.write().unwrap_or_else(|p| p.into_inner());
                Ok(map.entry(c.info.name.clone()).or_insert_with(|| Arc::new(c)).clone())
            })
            .await
        }
        Err(e) => Err(e),
    }
}

/// Runs blocking store work off the async workers. A panic in it is an internal error, never
/// a dropped connection.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(ApiError::internal)?
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
