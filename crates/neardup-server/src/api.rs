//! Routes, request parsing, errors, authentication and metrics.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, MatchedPath, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use neardup::{Document, Method, Pipeline, PipelineSpec, Scratch};
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

use crate::store::{docs_def, docs_table, CollectionInfo, Record, COLLECTIONS};
use crate::{build_engine, Collection, Live, State as AppState};

type Shared = Arc<AppState>;

/// An error reply: `{"error": {"code", "message"}}` with its status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into() }
    }
    fn bad(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }
    fn internal(message: impl std::fmt::Display) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}

type ApiResult = Result<Response, ApiError>;

fn ok(status: StatusCode, body: Value) -> ApiResult {
    Ok((status, Json(body)).into_response())
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
        ApiError::bad(code, format!("{e}"))
    })
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
    state.collections.read().expect("collections lock").get(name).cloned().ok_or_else(|| {
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

/// Runs blocking store work off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(ApiError::internal)?
}

// ---- documents in requests ---------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DocId {
    Text(String),
    Number(serde_json::Number),
}

impl DocId {
    fn into_string(self) -> String {
        match self {
            DocId::Text(s) => s,
            DocId::Number(n) => n.to_string(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InDoc {
    id: DocId,
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

fn check_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > 512 {
        return Err(ApiError::bad("invalid_id", "document ids must be 1-512 bytes"));
    }
    Ok(())
}

// ---- collections -------------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    preset: Option<String>,
    spec: Option<Value>,
    method: Option<Method>,
    threshold: Option<f64>,
    hamming: Option<u32>,
    #[serde(default)]
    store_text: bool,
}

/// The pipeline spec of a request: a preset name or a spec object (never both). A spec may name
/// files (stop words, idf); over HTTP that would read outside the data directory, so such a spec
/// is refused.
fn resolve_spec(preset: Option<String>, spec: Option<Value>) -> Result<PipelineSpec, ApiError> {
    let spec = match (preset, spec) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad("invalid_field", "give preset or spec, not both"))
        }
        (_, Some(spec)) => serde_json::from_value::<PipelineSpec>(spec)
            .map_err(|e| ApiError::bad("invalid_field", format!("spec: {e}")))?,
        (preset, None) => PipelineSpec::preset(preset.as_deref().unwrap_or("default"))
            .map_err(|e| ApiError::bad("invalid_field", e.to_string()))?,
    };
    if spec.stop_words.file.is_some() || matches!(spec.idf, neardup::IdfSource::File { .. }) {
        return Err(ApiError::bad(
            "invalid_field",
            "spec: files (stop_words.file, idf) cannot be named over HTTP",
        ));
    }
    Ok(spec)
}

async fn create_collection(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    check_name(&name)?;
    let req: CreateRequest = parse(body)?;
    let spec = resolve_spec(req.preset, req.spec)?;
    let pipeline =
        Pipeline::new(spec.clone()).map_err(|e| ApiError::bad("invalid_field", e.to_string()))?;
    let info = CollectionInfo {
        name: name.clone(),
        spec,
        method: req.method.unwrap_or(Method::MinHash),
        threshold: req.threshold.unwrap_or(0.8),
        hamming: req.hamming.unwrap_or(3),
        store_text: req.store_text,
        pipeline_id: pipeline.id().to_string(),
    };
    let engine = build_engine(&info).map_err(|e| ApiError::bad("invalid_field", e))?;
    let _admin = state.admin.lock().await;
    if let Some(existing) = state.collections.read().expect("lock").get(&name) {
        let same = serde_json::to_value(&existing.info).ok() == serde_json::to_value(&info).ok();
        return if same {
            ok(StatusCode::OK, describe(existing))
        } else {
            Err(ApiError::new(
                StatusCode::CONFLICT,
                "collection_exists",
                format!("collection {name:?} exists with other settings"),
            ))
        };
    }
    let text = serde_json::to_string(&info).map_err(ApiError::internal)?;
    let st = state.clone();
    let key = name.clone();
    blocking(move || {
        let txn = st.db.begin_write().map_err(ApiError::internal)?;
        {
            let mut t = txn.open_table(COLLECTIONS).map_err(ApiError::internal)?;
            t.insert(key.as_str(), text.as_str()).map_err(ApiError::internal)?;
            txn.open_table(docs_def(&docs_table(&key))).map_err(ApiError::internal)?;
        }
        txn.commit().map_err(ApiError::internal)
    })
    .await?;
    let live = Live { engine, key_of: Default::default(), id_of: Default::default(), next_key: 0 };
    let c = Arc::new(Collection {
        table: docs_table(&name),
        info,
        live: Ok(std::sync::RwLock::new(live)),
        writer: tokio::sync::Mutex::new(()),
    });
    state.collections.write().expect("lock").insert(name, c.clone());
    ok(StatusCode::CREATED, describe(&c))
}

fn describe(c: &Collection) -> Value {
    let (documents, banding, verification, error) = match &c.live {
        Ok(live) => {
            let live = live.read().expect("live lock");
            (
                Some(live.engine.len()),
                live.engine.banding(),
                Some(format!("{:?}", live.engine.verification()).to_lowercase()),
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
        "store_text": c.info.store_text,
        "verification": verification,
        "lsh": banding.map(|(b, r)| json!({"bands": b, "rows": r})),
        "pipeline_id": c.info.pipeline_id,
        "spec": c.info.spec,
        "error": error,
    })
}

async fn list_collections(State(state): State<Shared>) -> ApiResult {
    let list: Vec<Value> =
        state.collections.read().expect("lock").values().map(|c| describe(c)).collect();
    ok(StatusCode::OK, json!({ "collections": list }))
}

async fn get_collection(State(state): State<Shared>, Path(name): Path<String>) -> ApiResult {
    let c = collection(&state, &name)?;
    ok(StatusCode::OK, describe(&c))
}

async fn delete_collection(State(state): State<Shared>, Path(name): Path<String>) -> ApiResult {
    let c = collection(&state, &name)?;
    let _admin = state.admin.lock().await;
    let _writer = c.writer.lock().await;
    let st = state.clone();
    let table = c.table.clone();
    blocking(move || {
        let txn = st.db.begin_write().map_err(ApiError::internal)?;
        {
            let mut t = txn.open_table(COLLECTIONS).map_err(ApiError::internal)?;
            t.remove(name.as_str()).map_err(ApiError::internal)?;
        }
        txn.delete_table(docs_def(&table)).map_err(ApiError::internal)?;
        txn.commit().map_err(ApiError::internal)
    })
    .await?;
    state.collections.write().expect("lock").remove(&c.info.name);
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
    Path(name): Path<String>,
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
        let id = d.id.into_string();
        check_id(&id)?;
        if !seen.insert(id.clone()) {
            return Err(ApiError::bad(
                "duplicate_id",
                format!("docs[{i}]: id {id:?} appears twice in the batch"),
            ));
        }
        let body = Body::from_parts(d.text, d.tokens, limits.max_doc_bytes, &format!("docs[{i}]"))?;
        docs.push((id, body, d.metadata));
    }
    // Sketch outside every lock.
    let c2 = c.clone();
    let records: Vec<(String, Record)> = blocking(move || {
        let live = live(&c2)?.read().expect("live lock");
        let store_text = c2.info.store_text;
        // Sketch the batch on every core (rayon), in order.
        Ok(docs
            .into_par_iter()
            .map_init(Scratch::default, |scratch, (id, body, metadata)| {
                let sketch = live.engine.sketch(body.document(), body.len(), scratch);
                let text = store_text.then(|| body.text());
                (id, Record { sketch, metadata, text })
            })
            .collect())
    })
    .await?;
    let _writer = c.writer.lock().await;
    let (st, c2) = (state.clone(), c.clone());
    let (inserted, updated) = blocking(move || {
        let txn = st.db.begin_write().map_err(ApiError::internal)?;
        let mut updated = 0usize;
        {
            let mut t = txn.open_table(docs_def(&c2.table)).map_err(ApiError::internal)?;
            for (id, record) in &records {
                let old = t
                    .insert(id.as_str(), record.encode().as_slice())
                    .map_err(ApiError::internal)?;
                updated += usize::from(old.is_some());
            }
        }
        txn.commit().map_err(ApiError::internal)?;
        // Durable: now visible to searches.
        let mut live = live(&c2)?.write().expect("live lock");
        let n = records.len();
        for (id, record) in records {
            let key = live.key_for(&id);
            live.engine.insert(key, record.sketch);
        }
        Ok((n - updated, updated))
    })
    .await?;
    ok(StatusCode::OK, json!({"inserted": inserted, "updated": updated}))
}

async fn get_doc(
    State(state): State<Shared>,
    Path((name, id)): Path<(String, String)>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let st = state.clone();
    let table = c.table.clone();
    let key = id.clone();
    let record = blocking(move || {
        let txn = st.db.begin_read().map_err(ApiError::internal)?;
        let t = txn.open_table(docs_def(&table)).map_err(ApiError::internal)?;
        let v = t.get(key.as_str()).map_err(ApiError::internal)?;
        v.map(|v| Record::decode(v.value()).map_err(ApiError::internal)).transpose()
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
    Path((name, id)): Path<(String, String)>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let _writer = c.writer.lock().await;
    let (st, c2, key) = (state.clone(), c.clone(), id.clone());
    let existed = blocking(move || {
        let txn = st.db.begin_write().map_err(ApiError::internal)?;
        let existed = {
            let mut t = txn.open_table(docs_def(&c2.table)).map_err(ApiError::internal)?;
            let old = t.remove(key.as_str()).map_err(ApiError::internal)?;
            old.is_some()
        };
        txn.commit().map_err(ApiError::internal)?;
        live(&c2)?.write().expect("live lock").forget(&key);
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

fn check_threshold(t: Option<f64>) -> Result<(), ApiError> {
    match t {
        Some(t) if !(t > 0.0 && t <= 1.0) => {
            Err(ApiError::bad("invalid_field", format!("threshold {t} is not in (0, 1]")))
        }
        _ => Ok(()),
    }
}

/// Metadata of hits, read in one transaction.
fn metadata_of(state: &AppState, table: &str, ids: &[String]) -> Result<Vec<Value>, ApiError> {
    let txn = state.db.begin_read().map_err(ApiError::internal)?;
    let t = txn.open_table(docs_def(table)).map_err(ApiError::internal)?;
    ids.iter()
        .map(|id| {
            let v = t.get(id.as_str()).map_err(ApiError::internal)?;
            Ok(match v {
                Some(v) => Record::decode(v.value()).map_err(ApiError::internal)?.metadata,
                None => Value::Null,
            })
        })
        .collect()
}

async fn search(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let req: SearchRequest = parse(body)?;
    check_threshold(req.threshold)?;
    let top_k = req.top_k.unwrap_or(10).min(state.limits.max_top_k);
    let body = Body::from_parts(req.text, req.tokens, state.limits.max_doc_bytes, "query")?;
    let st = state.clone();
    blocking(move || {
        let (ids, sims) = {
            let live = live(&c)?.read().expect("live lock");
            let mut scratch = Scratch::default();
            let q = live.engine.sketch(body.document(), body.len(), &mut scratch);
            let hits = live.engine.search(&q, req.threshold, top_k);
            let ids: Vec<String> = hits.iter().map(|h| live.id_of[&h.key].clone()).collect();
            let sims: Vec<f64> = hits.iter().map(|h| h.similarity).collect();
            (ids, sims)
        };
        let metas = metadata_of(&st, &c.table, &ids)?;
        let hits: Vec<Value> = ids
            .into_iter()
            .zip(sims)
            .zip(metas)
            .map(|((id, s), m)| json!({"id": id, "similarity": s, "metadata": m}))
            .collect();
        ok(StatusCode::OK, json!({ "hits": hits }))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckRequest {
    id: DocId,
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

/// "Is this a near-duplicate of anything stored? If not, store it", atomically: the writer lock
/// is held from the search to the commit.
async fn check(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let c = collection(&state, &name)?;
    live(&c)?;
    let req: CheckRequest = parse(body)?;
    check_threshold(req.threshold)?;
    let id = req.id.into_string();
    check_id(&id)?;
    let top_k = req.top_k.unwrap_or(10).min(state.limits.max_top_k);
    let body = Body::from_parts(req.text, req.tokens, state.limits.max_doc_bytes, "document")?;
    let _writer = c.writer.lock().await;
    let st = state.clone();
    let c2 = c.clone();
    let (metadata, insert, threshold) = (req.metadata, req.insert, req.threshold);
    blocking(move || {
        let (sketch, matches) = {
            let live = live(&c2)?.read().expect("live lock");
            let mut scratch = Scratch::default();
            let q = live.engine.sketch(body.document(), body.len(), &mut scratch);
            // The document itself (an upsert of the same id) is not its own duplicate.
            let own = live.key_of.get(&id).copied();
            let hits: Vec<(String, f64)> = live
                .engine
                .search(&q, threshold, top_k.saturating_add(1))
                .into_iter()
                .filter(|h| Some(h.key) != own)
                .take(top_k)
                .map(|h| (live.id_of[&h.key].clone(), h.similarity))
                .collect();
            (q, hits)
        };
        let duplicate = !matches.is_empty();
        let mut inserted = false;
        if !duplicate && insert {
            let text = c2.info.store_text.then(|| body.text());
            let record = Record { sketch, metadata, text };
            let txn = st.db.begin_write().map_err(ApiError::internal)?;
            {
                let mut t = txn.open_table(docs_def(&c2.table)).map_err(ApiError::internal)?;
                t.insert(id.as_str(), record.encode().as_slice()).map_err(ApiError::internal)?;
            }
            txn.commit().map_err(ApiError::internal)?;
            let mut live = live(&c2)?.write().expect("live lock");
            let key = live.key_for(&id);
            live.engine.insert(key, record.sketch);
            inserted = true;
        }
        let matches: Vec<Value> =
            matches.into_iter().map(|(id, s)| json!({"id": id, "similarity": s})).collect();
        ok(
            StatusCode::OK,
            json!({"duplicate": duplicate, "matches": matches, "inserted": inserted}),
        )
    })
    .await
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
                format!("{what} is too large"),
            ));
        }
    }
    let spec = resolve_spec(req.preset, req.spec)?;
    blocking(move || {
        let pipeline =
            Pipeline::new(spec).map_err(|e| ApiError::bad("invalid_field", e.to_string()))?;
        let c = neardup::compare(&pipeline, Document::Text(&req.a), Document::Text(&req.b))
            .map_err(ApiError::internal)?;
        ok(StatusCode::OK, serde_json::to_value(c).map_err(ApiError::internal)?)
    })
    .await
}

// ---- health, metrics, OpenAPI -------------------------------------------------------------------

async fn health() -> ApiResult {
    ok(StatusCode::OK, json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}

/// `(method, route, status)`.
type RouteKey = (String, String, u16);

/// Request counts and latency sums by route and status, for Prometheus.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<RouteKey, (u64, f64)>>,
}

async fn metrics(State(state): State<Shared>) -> Response {
    let mut out = String::new();
    out.push_str("# HELP neardup_requests_total HTTP requests by route and status.\n");
    out.push_str("# TYPE neardup_requests_total counter\n");
    let requests = state.metrics.requests.lock().expect("metrics lock").clone();
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
    out.push_str("# HELP neardup_documents Documents stored per collection.\n");
    out.push_str("# TYPE neardup_documents gauge\n");
    for (name, c) in state.collections.read().expect("lock").iter() {
        if let Ok(live) = &c.live {
            let n = live.read().expect("live lock").engine.len();
            out.push_str(&format!("neardup_documents{{collection=\"{name}\"}} {n}\n"));
        }
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

async fn track(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let response = next.run(req).await;
    let key = (method, route, response.status().as_u16());
    let mut m = state.metrics.requests.lock().expect("metrics lock");
    let e = m.entry(key).or_insert((0, 0.0));
    e.0 += 1;
    e.1 += started.elapsed().as_secs_f64();
    response
}

/// Bearer-token check in constant time; `/v1/health` is open.
async fn authenticate(State(state): State<Shared>, req: Request, next: Next) -> Response {
    if let Some(token) = &state.token {
        if req.uri().path() != "/v1/health" {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            // `ct_eq` compares in time independent of where the bytes differ (lengths differ ->
            // unequal; the length of the token is not a secret worth hiding).
            if !bool::from(given.as_bytes().ct_eq(token)) {
                return ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "a valid bearer token is required",
                )
                .into_response();
            }
        }
    }
    next.run(req).await
}

async fn openapi() -> Response {
    Json(openapi_document()).into_response()
}

fn openapi_document() -> Value {
    let error = json!({"$ref": "#/components/schemas/Error"});
    let errors = json!({
        "400": {"description": "malformed JSON, wrong types, invalid UTF-8, invalid name", "content": {"application/json": {"schema": error}}},
        "401": {"description": "missing or wrong bearer token"},
        "404": {"description": "unknown collection or document"},
        "409": {"description": "spec mismatch or conflicting collection"},
        "413": {"description": "body, document or batch over the limit"}
    });
    let op =
        |summary: &str| json!({"summary": summary, "responses": {"200": {"description": "OK"}}});
    let mut paths = serde_json::Map::new();
    paths.insert("/v1/collections".into(), json!({"get": op("List collections")}));
    paths.insert(
        "/v1/collections/{name}".into(),
        json!({
            "put": op("Create a collection: {preset | spec, method: minhash|simhash|both, threshold, hamming, store_text}"),
            "get": op("Describe a collection (size, spec, index parameters)"),
            "delete": op("Delete a collection"),
        }),
    );
    paths.insert(
        "/v1/collections/{name}/docs".into(),
        json!({"post": op("Insert or replace documents, atomically: {docs: [{id, text | tokens, metadata}]}")}),
    );
    paths.insert(
        "/v1/collections/{name}/docs/{id}".into(),
        json!({"get": op("A document: metadata, fingerprints, text if stored"), "delete": op("Delete a document")}),
    );
    paths.insert(
        "/v1/collections/{name}/search".into(),
        json!({"post": op("Similar documents: {text | tokens, top_k, threshold} -> {hits: [{id, similarity, metadata}]}")}),
    );
    paths.insert(
        "/v1/collections/{name}/check".into(),
        json!({"post": op("Near-duplicate of anything stored? If not, insert: {id, text | tokens, metadata, insert} -> {duplicate, matches, inserted}")}),
    );
    paths.insert(
        "/v1/compare".into(),
        json!({"post": op("Compare two texts: {a, b, preset | spec}")}),
    );
    paths.insert("/v1/health".into(), json!({"get": op("Liveness")}));
    paths.insert("/metrics".into(), json!({"get": op("Prometheus metrics")}));
    paths.insert("/v1/openapi.json".into(), json!({"get": op("This document")}));
    for item in paths.values_mut() {
        for op in item.as_object_mut().into_iter().flat_map(|o| o.values_mut()) {
            if let Some(r) = op.get_mut("responses").and_then(Value::as_object_mut) {
                for (k, v) in errors.as_object().into_iter().flatten() {
                    r.insert(k.clone(), v.clone());
                }
            }
        }
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": "neardup", "version": env!("CARGO_PKG_VERSION")},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {"type": "object", "properties": {"error": {"type": "object", "properties": {
                "code": {"type": "string"}, "message": {"type": "string"}}}}}}
        },
        "security": [{"bearer": []}],
        "paths": paths,
    })
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
        .route("/v1/collections", get(list_collections))
        .route(
            "/v1/collections/{name}",
            put(create_collection).get(get_collection).delete(delete_collection),
        )
        .route("/v1/collections/{name}/docs", post(insert_docs))
        .route("/v1/collections/{name}/docs/{id}", get(get_doc).delete(delete_doc))
        .route("/v1/collections/{name}/search", post(search))
        .route("/v1/collections/{name}/check", post(check))
        .route("/v1/compare", post(compare))
        .route("/v1/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/openapi.json", get(openapi))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .route_layer(middleware::from_fn_with_state(state.clone(), track))
        .with_state(state)
}
