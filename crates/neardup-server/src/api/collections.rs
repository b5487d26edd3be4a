//! Collections: create (settings by the option table's names), list, describe, delete.

use super::*;

/// A collection's settings as created: the pipeline (`preset` or `spec`), what is stored, and
/// the search options by their names in the library's one table (`threshold`, `method`,
/// `hamming`, `verify`, `bands`, `rows`, `recall`, `lsh_weights`).
#[derive(Debug, Default)]
pub(super) struct CreateRequest {
    pub(super) preset: Option<String>,
    pub(super) spec: Option<Value>,
    pub(super) search: neardup::SearchSpec,
    pub(super) store_text: bool,
    /// `true`, or the passage check's options (`neardup overlap`'s, by their names).
    pub(super) passages: Option<Value>,
}

impl CreateRequest {
    /// The fields of the body's object; an unknown one is refused with the list of names.
    pub(super) fn from_body(
        body: serde_json::Map<String, Value>,
    ) -> Result<CreateRequest, ApiError> {
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
pub(super) fn passage_settings(passages: Option<Value>) -> Result<Option<OverlapSpec>, ApiError> {
    let bad = |m: String| ApiError::bad("invalid_field", format!("passages: {m}"));
    match passages {
        None | Some(Value::Bool(false)) | Some(Value::Null) => Ok(None),
        Some(Value::Bool(true)) => Ok(Some(OverlapSpec::default())),
        Some(v @ Value::Object(_)) => {
            let options = OverlapOptions::from_json(&v).map_err(|e| bad(e.to_string()))?;
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
pub(super) fn resolve_spec(
    preset: Option<String>,
    spec: Option<Value>,
) -> Result<PipelineSpec, ApiError> {
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
pub(super) fn search_settings(req: &CreateRequest) -> Result<neardup::SearchConfig, ApiError> {
    req.search.resolve().map_err(|e| ApiError::bad("invalid_field", e.to_string()))
}

pub(super) async fn create_collection(
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
    // Building the pipeline and the engine validates everything (bounded by the spec's limits).
    let limits = state.limits;
    let indexed = state.with_db(|db| Ok(db.indexes()))?;
    let (info, live) = blocking(move || {
        let pipeline = Pipeline::new(spec.clone())
            .map_err(|e| ApiError::bad("invalid_field", e.to_string()))?;
        let info = CollectionInfo {
            name,
            incarnation: new_incarnation(),
            job: neardup::JobSpec::resolved(spec, &settings, SearchUse::Collection, passages),
            store_text,
            pipeline_id: pipeline.id().to_string(),
        };
        let engine = build_engine(&info).map_err(|e| ApiError::bad("invalid_field", e))?;
        let live = new_live(&info, engine, &limits, indexed)
            .map_err(|e| ApiError::bad("invalid_field", e))?;
        Ok((info, live))
    })
    .await?;
    let _admin = state.admin.lock().await;
    // One created through another server sharing the store counts too.
    let existing = match find_collection(&state, &info.name).await {
        Ok(c) => Some(c),
        Err(e) if e.code == "collection_not_found" => None,
        Err(e) => return Err(e),
    };
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
    let c = Arc::new(Collection::new(info, Ok(std::sync::RwLock::new(live)), indexed));
    let (st, c2) = (state.clone(), c.clone());
    blocking(move || {
        let name = c2.info.name.as_str();
        st.with_db(|db| {
            let err = |e: StoreError| store_err(&st, name, e);
            let txn = db.write().map_err(err)?;
            txn.create_collection(name, &text, &c2.table).map_err(err)?;
            txn.commit().map_err(err)
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

pub(super) fn describe(c: &Collection) -> Value {
    let documents = c.documents();
    let (documents, banding, verification, error) = match &c.live {
        Ok(live) => {
            let live = live.read().unwrap_or_else(|p| p.into_inner());
            (
                documents,
                live.engine().banding().map(|(b, r)| (b, r, live.engine().candidate_probability())),
                Some(live.engine().verification().name()),
                None,
            )
        }
        Err(m) => (None, None, None, Some(m.clone())),
    };
    let search = &c.info.job.search;
    json!({
        "name": c.info.name,
        "documents": documents,
        "method": search.method,
        "threshold": search.threshold,
        // A MinHash collection has no Hamming distance: null, not the default it never uses.
        "hamming": search.hamming,
        "recall": search.recall,
        "store_text": c.info.store_text,
        // The passage options, by the names PUT takes them.
        "passages": c.info.job.passages.as_ref().map(OverlapOptions::of),
        // The body that creates this collection, as PUT takes it: what GET gives, PUT accepts.
        "settings": c.info.settings(),
        "verification": verification,
        "lsh": banding.map(|(b, r, p)| json!({"bands": b, "rows": r, "candidate_probability": p})),
        "pipeline_id": c.info.pipeline_id,
        "spec": c.info.job.pipeline,
        "error": error,
    })
}

pub(super) async fn list_collections(State(state): State<Shared>) -> ApiResult {
    refresh_collections(&state).await?;
    let list: Vec<Value> = state
        .collections
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .map(|c| describe(c))
        .collect();
    ok(StatusCode::OK, json!({ "collections": list }))
}

pub(super) async fn get_collection(
    State(state): State<Shared>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult {
    let c = find_collection(&state, &name).await?;
    let (st, c2) = (state.clone(), c.clone());
    blocking(move || sync(&st, &c2)).await?;
    ok(StatusCode::OK, describe(&c))
}

pub(super) async fn delete_collection(
    State(state): State<Shared>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult {
    let _admin = state.admin.lock().await;
    let c = find_collection(&state, &name).await?;
    let _writer = c.writer.lock().await;
    check_writable(&c)?;
    let (st, c2) = (state.clone(), c.clone());
    blocking(move || {
        let name = c2.info.name.as_str();
        st.with_db(|db| {
            let err = |e: StoreError| store_err(&st, name, e);
            let txn = db.write().map_err(err)?;
            check_incarnation_alone(&*txn, &st, &c2)?;
            txn.delete_collection(name, &c2.table).map_err(err)?;
            txn.commit().map_err(err)
        })
    })
    .await?;
    c.retired.store(DELETED, Ordering::SeqCst);
    state.collections.write().unwrap_or_else(|p| p.into_inner()).remove(&c.info.name);
    state.metrics.forget_collection(&c.info.name);
    ok(StatusCode::OK, json!({"deleted": c.info.name}))
}
