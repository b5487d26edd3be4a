//! The passage check of a text against a collection, and the comparison of two texts.

use super::*;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OverlapRequest {
    pub(super) text: Option<String>,
    pub(super) tokens: Option<Vec<String>>,
    /// The query's own id: a stored document of this id (its earlier version) is never its
    /// source.
    pub(super) id: Option<Box<RawValue>>,
    /// Documents never counted as sources (the author's own earlier work).
    #[serde(default)]
    pub(super) exclude_source: Vec<Box<RawValue>>,
}

/// Which passages of a text are copied from which stored documents, and how much of the text
/// that is: the passage check of `neardup overlap` against a collection that keeps passages.
pub(super) async fn overlap(
    State(state): State<Shared>,
    LiveCollection(c): LiveCollection,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    if c.info.job.passages.is_none() {
        return Err(ApiError::bad(
            "no_passages",
            format!(
                "collection {:?} keeps no passages: create a collection with \"passages\": \
                 true to check texts against it",
                c.info.name
            ),
        ));
    }
    let req: OverlapRequest = parse(body)?;
    let body = body_from_parts(req.text, req.tokens, state.limits.max_doc_bytes, "query")?;
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
    let (turn, memory) = admit(
        &state,
        Need::new(Need::overlap(body.len()), "this passage check", "send a shorter text"),
    )
    .await?;
    // A check given up by its client (the connection closed) stops between sources: the flag
    // is set when this handler's future is dropped.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _stop_on_drop = StopOnDrop(stop.clone());
    let st = state.clone();
    let answer = blocking(move || {
        let _turn = turn;
        let text = body.as_document().display_text().into_owned();
        if c.indexed {
            let spec =
                c.info.job.passages.as_ref().ok_or_else(|| ApiError::internal("no passages"))?;
            return stored_overlap(&st, &c, spec, own.as_deref(), &exclude, &text, &stop);
        }
        // What other servers sharing the store wrote, first.
        sync(&st, &c)?;
        // The check runs on a snapshot of the passage index, with no lock held: writers of the
        // collection never wait for it (they change a copy meanwhile).
        let index = live(&c)?
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .passages_snapshot()
            .ok_or_else(|| ApiError::internal("no passage index"))?;
        let exclude: Vec<u32> = exclude
            .iter()
            .map(|id| {
                index.find(id).ok_or_else(|| {
                    ApiError::bad(
                        "invalid_field",
                        format!(
                            "exclude_source: no document {id:?} in collection {:?}",
                            c.info.name
                        ),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let found = index
            .check_until(own.as_deref(), &text, &exclude, Some(&stop))
            .map_err(|e| ApiError::bad("invalid_field", e.to_string()))?;
        let answer = overlap_json(&found, own.as_deref(), &|n| index.id(n), &|n| index.text(n));
        ok(StatusCode::OK, answer)
    })
    .await;
    memory.until_sent(answer)
}

/// The passage check of a collection in a store that keeps the index (PostgreSQL): the
/// postings of the query's keys and the texts of the sources it aligns are read from the
/// store in one snapshot, as the check asks for them ([`neardup::overlap::stored`]); memory
/// holds nothing of the collection. The answer is the one an index of the stored documents
/// gives.
fn stored_overlap(
    state: &AppState,
    c: &Collection,
    spec: &OverlapSpec,
    own: Option<&str>,
    exclude: &[String],
    text: &str,
    stop: &std::sync::atomic::AtomicBool,
) -> ApiResult {
    use neardup::overlap::stored::{self, StoredError};
    let name = c.info.name.as_str();
    state.with_db(|db| {
        let err = |e: StoreError| store_err(state, name, e);
        let txn = db.read().map_err(err)?;
        let docs = match txn.docs(&c.table) {
            Ok(docs) => docs,
            Err(StoreError::Gone) => {
                forget(state, c);
                return Err(ApiError::collection_gone(name));
            }
            Err(e) => return Err(err(e)),
        };
        let ids: Vec<&str> = exclude.iter().map(String::as_str).chain(own).collect();
        let orders = docs.orders(&ids).map_err(err)?;
        let (of_excluded, of_own) = orders.split_at(exclude.len());
        let mut excluded = Vec::with_capacity(exclude.len());
        for (id, order) in exclude.iter().zip(of_excluded) {
            match order {
                Some(o) => excluded.push(*o),
                None => {
                    return Err(ApiError::bad(
                        "invalid_field",
                        format!("exclude_source: no document {id:?} in collection {name:?}"),
                    ))
                }
            }
        }
        let own_order = of_own.first().copied().flatten();
        let source = StoredPassages { state, collection: name, docs };
        let found =
            stored::check(spec, &source, text, own_order, &excluded, Some(stop)).map_err(|e| {
                match e {
                    StoredError::Store(e) => e,
                    StoredError::Overlap(e) => ApiError::bad("invalid_field", e.to_string()),
                }
            })?;
        let answer = overlap_json(&found.overlap, own, &|n| found.id(n), &|n| found.text(n));
        ok(StatusCode::OK, answer)
    })
}

/// A passage collection's documents in a store that keeps the index, as the passage check
/// reads them: its postings are the tagged keys among the documents' candidate keys
/// ([`crate::store::passage_keys`]).
struct StoredPassages<'a> {
    state: &'a AppState,
    collection: &'a str,
    docs: Box<dyn Docs + 'a>,
}

impl neardup::overlap::stored::PassageStore for StoredPassages<'_> {
    type Error = ApiError;

    fn holders(&self, keys: &[u32], cap: usize) -> Result<Vec<(u32, u64)>, ApiError> {
        let tagged: Vec<u64> =
            keys.iter().map(|&k| crate::store::PASSAGE_KEY_TAG | u64::from(k)).collect();
        let pairs = self
            .docs
            .holders(&tagged, cap)
            .map_err(|e| store_err(self.state, self.collection, e))?;
        // The low half is the passage key (the tag above it).
        Ok(pairs.into_iter().map(|(k, order)| (k as u32, order)).collect())
    }

    fn texts(&self, orders: &[u64]) -> Result<Vec<(u64, String, String)>, ApiError> {
        let found =
            self.docs.by_order(orders).map_err(|e| store_err(self.state, self.collection, e))?;
        // A record that fails its checksum is the source of nothing (as the embedded store
        // leaves it out of its index), and counted as damage (`/v1/health` reports it).
        Ok(found
            .into_iter()
            .map(|d| match Record::decode(&d.id, &d.record) {
                Ok(record) => (d.order, d.id, record.text.unwrap_or_default()),
                Err(what) => {
                    self.state.record_damage(self.collection, &d.id, &what);
                    (d.order, d.id, String::new())
                }
            })
            .collect())
    }
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The answer of the passage check: the library's summary record (`neardup overlap
/// --summary`), its `passages` and `excluded` ones (quotations, references) as the library's
/// passage records (`--passages`), each with its source's text over the passage besides
/// (`source_text`). Ids are text, as the collection stores them; `query` is the request's id.
pub(super) fn overlap_json<'a>(
    o: &Overlap,
    query: Option<&str>,
    source_id: &dyn Fn(u32) -> &'a str,
    source_text: &dyn Fn(u32) -> &'a str,
) -> Value {
    let id = |id: &str| {
        serde_json::value::RawValue::from_string(neardup::id_to_json(id)).expect("a JSON string")
    };
    let name = |n: u32| id(source_id(n));
    let query = query.map(id);
    let passage = |p: &Passage| {
        let mut v = serde_json::to_value(PassageRecord::new(query.as_deref(), p, &name))
            .unwrap_or(Value::Null);
        let source = source_text(p.source);
        v["source_text"] =
            json!(source.get(p.source_start_byte as usize..p.source_end_byte as usize));
        v
    };
    let mut answer =
        serde_json::to_value(o.summary_record(query.as_deref(), &name)).unwrap_or(Value::Null);
    answer["passages"] = o.passages.iter().map(passage).collect();
    answer["excluded"] = o.excluded.iter().map(passage).collect();
    answer
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CompareRequest {
    pub(super) a: String,
    pub(super) b: String,
    pub(super) preset: Option<String>,
    pub(super) spec: Option<Value>,
}

pub(super) async fn compare(
    State(state): State<Shared>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
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
    let need = Need::sketching([req.a.len(), req.b.len()]);
    let (turn, _memory) =
        admit(&state, Need::new(need, "this comparison", "compare shorter texts")).await?;
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

impl Shape for OverlapRequest {
    const EXPECTING: &'static str = "an object {\"text\"}";
}

impl Shape for CompareRequest {
    const EXPECTING: &'static str = "an object {\"a\", \"b\"}";
}
