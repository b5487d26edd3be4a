//! Search and check (the group commit of checks, decided by the library).

use super::*;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchRequest {
    pub(super) text: Option<String>,
    pub(super) tokens: Option<Vec<String>>,
    pub(super) top_k: Option<usize>,
    pub(super) threshold: Option<f64>,
}

/// The `top_k` of a request: 10 unless given (or the limit, if lower); one over the limit is
/// refused, never silently cut to it (a client would take the shorter list for all there is).
pub(super) fn top_k(given: Option<usize>, limits: &crate::Limits) -> Result<usize, ApiError> {
    match given {
        None => Ok(10.min(limits.max_top_k)),
        Some(k) if k > limits.max_top_k => Err(ApiError::bad(
            "invalid_field",
            format!("top_k {k} is over the limit {} (--max-top-k)", limits.max_top_k),
        )),
        Some(k) => Ok(k),
    }
}

/// A search or check the library refuses before any work: a threshold outside (0, 1]
/// (`invalid_field`), or below the collection's with more documents than a scan may read
/// (`threshold_below_collection`).
fn refused(collection: &str, e: neardup::QueryError) -> ApiError {
    match e {
        neardup::QueryError::BelowThreshold(_) => {
            ApiError::bad("threshold_below_collection", format!("collection {collection:?}: {e}"))
        }
        _ => ApiError::bad("invalid_field", e.to_string()),
    }
}

/// How a search at `threshold` on collection `c` finds its candidates: a threshold below the
/// collection's is answered by a scan of every document while they are few enough, else
/// refused with both thresholds named, never answered in part.
///
/// In a store that keeps the index, by the documents it counted when last asked
/// ([`fresh_count`] asks it again when a scan is in question; the search plans again by its
/// count in the transaction that answers).
fn search_plan(c: &Collection, threshold: Option<f64>) -> Result<neardup::SearchPlan, ApiError> {
    let documents = c.documents().unwrap_or(0);
    let live = live(c)?.read().unwrap_or_else(|p| p.into_inner());
    live.engine().plan_search_over(threshold, documents).map_err(|e| refused(&c.info.name, e))
}

/// When a request at `threshold` may scan a collection whose store keeps the index, the
/// store's count of its documents now (other servers may have written many since this one
/// last asked): a scan is admitted by it, never by an old count.
async fn fresh_count(
    state: &Shared,
    c: &Arc<Collection>,
    threshold: Option<f64>,
) -> Result<(), ApiError> {
    if !c.indexed {
        return Ok(());
    }
    // Whether a scan is in question at all, whatever the count.
    let scan =
        live(c)?.read().unwrap_or_else(|p| p.into_inner()).engine().plan_search_over(threshold, 0);
    if !matches!(scan, Ok(neardup::SearchPlan::Scan)) {
        return Ok(());
    }
    let (st, c2) = (state.clone(), c.clone());
    blocking(move || {
        st.with_db(|db| {
            let txn = db.read().map_err(|e| store_err(&st, &c2.info.name, e))?;
            count(&st, &c2, &*txn)
        })
    })
    .await
}

pub(super) async fn search(
    State(state): State<Shared>,
    OnLive { c, req }: OnLive<SearchRequest>,
) -> ApiResult {
    fresh_count(&state, &c, req.threshold).await?;
    search_plan(&c, req.threshold)?;
    let top_k = top_k(req.top_k, &state.limits)?;
    let body = body_from_parts(req.text, req.tokens, state.limits.max_doc_bytes, "query")?;
    let need = Need::sketching([body.len()]) + Need::matches(&c, 1, top_k);
    let (turn, memory) =
        admit(&state, Need::new(need, "this search", "ask for a lower top_k")).await?;
    let st = state.clone();
    let answer = blocking(move || {
        let _turn = turn;
        let name = c.info.name.as_str();
        st.with_db(|db| {
            let err = |e: StoreError| store_err(&st, name, e);
            // The hits and the snapshot that gives their metadata are taken together, under
            // the index's read lock: a hit whose delete committed since (and whose removal from
            // the index waits for that lock) is left out, as the delete is then the earlier.
            // Verification reads the candidates' sketches from the same snapshot.
            // In a store other servers share, the snapshot comes first (what they wrote is
            // found here at once: the store's index answers).
            let early = if db.shared() { Some(db.read().map_err(err)?) } else { None };
            let txn;
            let (hits, plan, stored) = {
                let live = live(&c)?.read().unwrap_or_else(|p| p.into_inner());
                txn = match early {
                    Some(txn) => txn,
                    None => db.read().map_err(err)?,
                };
                let stored = StoredSketches::open(&st, &c, &*txn)?;
                let mut scratch = Scratch::default();
                let q = live.engine().sketch(body.as_document(), body.len(), &mut scratch);
                // Planned again under the read lock: the collection may have grown since.
                let below = |e| refused(name, e);
                let (plan, hits) = stored
                    .with(|s| {
                        let plan = match live.plan_search_in(req.threshold, s)? {
                            Ok(plan) => plan,
                            Err(e) => return Ok(Err(e)),
                        };
                        let hits = live.search_planned(plan, &q, req.threshold, top_k, None, s)?;
                        Ok(Ok((plan, hits)))
                    })
                    .map_err(|e| stored.error(e))?
                    .map_err(below)?;
                (hits, plan, stored)
            };
            let mut out = Vec::with_capacity(hits.len());
            // The hits' records in one go (one round trip on a database; none when the
            // candidates brought them).
            let ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
            let records = stored.records_of(&ids).map_err(err)?;
            for ((id, similarity), record) in hits.iter().zip(records) {
                let Some(v) = record else { continue };
                let metadata = read_record(&state, &c.info.name, id, &v)?.metadata;
                c.largest_metadata.fetch_max(metadata.get().len(), Ordering::Relaxed);
                out.push(Match { id: id.clone(), similarity: *similarity, metadata });
            }
            #[derive(serde::Serialize)]
            struct Answer {
                hits: Vec<Match>,
                scanned: bool,
            }
            let scanned = plan == neardup::SearchPlan::Scan;
            ok_raw(StatusCode::OK, &Answer { hits: out, scanned })
        })
    })
    .await;
    memory.until_sent(answer)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckRequest {
    /// Needed to store the document; a check that only asks (`"insert": false`) may leave it
    /// out.
    pub(super) id: Option<Box<RawValue>>,
    pub(super) text: Option<String>,
    pub(super) tokens: Option<Vec<String>>,
    #[serde(default)]
    pub(super) metadata: Option<Box<RawValue>>,
    #[serde(default = "yes")]
    pub(super) insert: bool,
    pub(super) threshold: Option<f64>,
    pub(super) top_k: Option<usize>,
}

pub(super) fn yes() -> bool {
    true
}

/// `POST .../check` with `docs`: a batch, decided in order and committed at once.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BatchCheckRequest {
    #[serde(deserialize_with = "objects")]
    pub(super) docs: Vec<BatchCheckDoc>,
    #[serde(default = "yes")]
    pub(super) insert: bool,
    pub(super) threshold: Option<f64>,
    pub(super) top_k: Option<usize>,
}

/// One document of a batch check (`insert` defaults to the batch's).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BatchCheckDoc {
    pub(super) id: Option<Box<RawValue>>,
    pub(super) text: Option<String>,
    pub(super) tokens: Option<Vec<String>>,
    #[serde(default)]
    pub(super) metadata: Option<Box<RawValue>>,
    pub(super) insert: Option<bool>,
}

/// Whether a body is a batch: it has a `docs` field (other fields are left for the parse).
#[derive(Deserialize)]
struct BatchProbe {
    docs: Option<serde::de::IgnoredAny>,
}

/// One `check` waiting for its group commit.
#[derive(Debug)]
pub(crate) struct PendingCheck {
    id: String,
    sketch: neardup::DocSketch,
    text: Option<String>,
    /// `None`: keep the stored document's metadata (absent in the request).
    metadata: Option<Box<RawValue>>,
    insert: bool,
    threshold: Option<f64>,
    top_k: usize,
    /// The bytes its answer was admitted for; more is taken from the budget when the answer
    /// is built, or the check is answered 503 (see [`commit_checks`]).
    allowance: usize,
    reply: tokio::sync::oneshot::Sender<Result<Answered, ApiError>>,
}

/// A check's answer as JSON text, with the memory taken for it past its request's
/// reservation, held until it is written.
#[derive(Debug)]
pub(crate) struct Answered {
    json: Box<RawValue>,
    more: Option<Reserved>,
}

/// A check's document before it is sketched.
struct CheckDoc {
    id: String,
    body: Body,
    metadata: Option<Box<RawValue>>,
    insert: bool,
}

/// A check's id: needed to store the document; one that only asks may leave it out (it is then
/// an id no stored document has, so nothing is left out of its matches).
fn check_id(id: Option<&RawValue>, insert: bool, what: &str) -> Result<String, ApiError> {
    match id {
        Some(raw) => doc_id(raw, what),
        None if !insert => Ok(String::new()),
        None => Err(ApiError::bad(
            "invalid_field",
            format!("{what}: an id is needed to store the document (or send \"insert\": false)"),
        )),
    }
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
///
/// A body with `docs` is a batch (a crawler's page of fetches): its documents are queued
/// together, so they are decided in order, in one group, committed at once, and answered in
/// order as `{"results": [...]}`.
pub(super) async fn check(
    State(state): State<Shared>,
    LiveCollection(c): LiveCollection,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let limits = state.limits;
    let batch = match &body {
        Ok(bytes) => serde_json::from_slice::<BatchProbe>(bytes).is_ok_and(|p| p.docs.is_some()),
        Err(_) => false,
    };
    let (docs, threshold, asked_top_k) = if batch {
        let req: BatchCheckRequest = parse(body)?;
        check_batch(req.docs.len(), &limits)?;
        let mut docs = Vec::with_capacity(req.docs.len());
        for (i, d) in req.docs.into_iter().enumerate() {
            let what = format!("docs[{i}]");
            let insert = d.insert.unwrap_or(req.insert);
            let id = check_id(d.id.as_deref(), insert, &format!("{what}.id"))?;
            let body = body_from_parts(d.text, d.tokens, limits.max_doc_bytes, &what)?;
            check_metadata(d.metadata.as_deref(), limits.max_metadata_bytes, &what, &id)?;
            docs.push(CheckDoc { id, body, metadata: d.metadata, insert });
        }
        (docs, req.threshold, req.top_k)
    } else {
        let req: CheckRequest = parse(body)?;
        let id = check_id(req.id.as_deref(), req.insert, "id")?;
        let body = body_from_parts(req.text, req.tokens, limits.max_doc_bytes, "document")?;
        check_metadata(req.metadata.as_deref(), limits.max_metadata_bytes, "document", &id)?;
        (
            vec![CheckDoc { id, body, metadata: req.metadata, insert: req.insert }],
            req.threshold,
            req.top_k,
        )
    };
    fresh_count(&state, &c, threshold).await?;
    let plan = search_plan(&c, threshold)?;
    let top_k = top_k(asked_top_k, &limits)?;
    if plan == neardup::SearchPlan::Scan {
        scan_budget(&c, docs.len(), &limits)?;
    }
    // What the check may hold: its documents while they are sketched, and its answer (each
    // document's matches with their metadata, the metadata this request stores counted too),
    // reserved until the answer is sent.
    c.may_store_metadata(docs.iter().filter(|d| d.insert).map(|d| d.metadata.as_deref()));
    let allowance = Need::matches(&c, 1, top_k);
    let need =
        Need::sketching(docs.iter().map(|d| d.body.len())) + allowance.saturating_mul(docs.len());
    let advice = "send fewer documents per request, or ask for a lower top_k";
    let (turn, memory) = admit(&state, Need::new(need, "this check", advice)).await?;
    // The turn covers the sketches only: waiting for the group commit is cheap, and holding it
    // there would shrink the groups that share one durable commit.
    let c2 = c.clone();
    let sketched: Vec<(CheckDoc, neardup::DocSketch, Option<String>)> = blocking(move || {
        let _turn = turn;
        let live = live(&c2)?.read().unwrap_or_else(|p| p.into_inner());
        let store_text = c2.info.store_text;
        Ok(docs
            .into_par_iter()
            .map_init(Scratch::default, |scratch, d| {
                let sketch = live.engine().sketch(d.body.as_document(), d.body.len(), scratch);
                let text = store_text.then(|| d.body.as_document().display_text().into_owned());
                (d, sketch, text)
            })
            .collect())
    })
    .await?;
    let mut answers = Vec::with_capacity(sketched.len());
    {
        // Queued together: a batch is decided in order, within one group.
        let mut queue = c.checks.lock().unwrap_or_else(|p| p.into_inner());
        for (d, sketch, text) in sketched {
            let (reply, answer) = tokio::sync::oneshot::channel();
            let (id, metadata, insert) = (d.id, d.metadata, d.insert);
            queue.push(PendingCheck {
                id,
                sketch,
                text,
                metadata,
                insert,
                threshold,
                top_k,
                allowance,
                reply,
            });
            answers.push(answer);
        }
    }
    tokio::spawn(async move {
        let _writer = c.writer.lock().await;
        let group = std::mem::take(&mut *c.checks.lock().unwrap_or_else(|p| p.into_inner()));
        if group.is_empty() {
            return; // an earlier leader took these checks into its group
        }
        if let Err(e) = check_writable(&c) {
            group.into_iter().for_each(|p| drop(p.reply.send(Err(e.clone()))));
            return;
        }
        // A panic in the group drops its replies: each waiting request answers 500.
        let c2 = c.clone();
        let _ = tokio::task::spawn_blocking(move || commit_checks(&state, &c2, group)).await;
    });
    let mut results = Vec::with_capacity(answers.len());
    let mut more = Vec::new();
    for answer in answers {
        match answer.await {
            Ok(result) => {
                let Answered { json, more: m } = result?;
                results.push(json);
                more.extend(m);
            }
            Err(_) => return Err(ApiError::internal("the check's group failed")),
        }
    }
    let json = [(header::CONTENT_TYPE, "application/json")];
    let answer = if batch {
        // `{"results": [...]}` streamed from the answers as they are: the reply never copies
        // them (they may be most of the request's memory, and a copy would hold them twice).
        let head = std::iter::once(Bytes::from_static(b"{\"results\":["));
        let parts = results.into_iter().enumerate().flat_map(|(i, r)| {
            let answer: Box<str> = r.into();
            let sep = Bytes::from_static(if i == 0 { b"" } else { b"," });
            [sep, Bytes::from(answer.into_string())]
        });
        let tail = std::iter::once(Bytes::from_static(b"]}"));
        let chunks: Vec<Result<Bytes, std::convert::Infallible>> =
            head.chain(parts).chain(tail).map(Ok).collect();
        let chunks = futures_util::stream::iter(chunks);
        Ok((StatusCode::OK, json, axum::body::Body::from_stream(chunks)).into_response())
    } else {
        let answer: Box<str> = results.pop().expect("one check, one answer").into();
        Ok((StatusCode::OK, json, answer.into_string()).into_response())
    };
    // The reservation, and what the answers took past it, are held until the answer is sent.
    hold_until_sent(answer, (memory, more))
}

/// A check below its collection's threshold verifies every stored document, once per document
/// of the request: at most `--max-scan-docs` verifications per request (400 otherwise), so one
/// request cannot hold the collection's writers for long.
fn scan_budget(c: &Collection, docs: usize, limits: &crate::Limits) -> Result<(), ApiError> {
    live(c)?;
    let stored = c.documents().unwrap_or(0);
    let scans = docs.saturating_mul(stored);
    if scans > limits.max_scan_docs {
        return Err(ApiError::bad(
            "threshold_below_collection",
            format!(
                "collection {:?}: a check below its threshold verifies every one of its {stored} \
                 documents for each of the {docs} sent, {scans} verifications, over the limit \
                 of {} per request (--max-scan-docs): send fewer documents per request, or \
                 check at the collection's threshold",
                c.info.name, limits.max_scan_docs
            ),
        ));
    }
    Ok(())
}

/// What a group of checks reads of a store's index, to lock before it is decided
/// ([`crate::store::WriteTxn::lock`]): the candidate keys of each check, or `None` (the whole
/// collection) when one of them would scan it (a threshold below the index's).
fn check_locks(engine: &neardup::Engine, group: &[PendingCheck]) -> Option<Vec<u64>> {
    let mut keys = Vec::new();
    for p in group {
        match engine.plan_search_over(p.threshold, 0) {
            Ok(neardup::SearchPlan::Index) => keys.extend(engine.candidate_keys(&p.sketch)),
            _ => return None,
        }
    }
    Some(keys)
}

/// Decides a group of checks in order, commits the accepted documents at once, then replies.
/// Each match carries its document's metadata (read in the commit's transaction, so a match
/// accepted earlier in the group has its own); an accepted document sent without metadata keeps
/// the stored one's.
///
/// In a store other servers share, the group is decided inside its write transaction, after
/// locking there the candidate keys its checks look up and the ids they may write
/// ([`check_locks`]): of two near-copies checked at once through two servers, the second
/// decided waits for the first and sees it.
pub(super) fn commit_checks(state: &AppState, c: &Collection, group: Vec<PendingCheck>) {
    let live_lock = match live(c) {
        Ok(l) => l,
        Err(e) => return group.into_iter().for_each(|p| drop(p.reply.send(Err(e.clone())))),
    };
    let name = c.info.name.as_str();
    let allowances = group.iter().map(|p| p.allowance);
    let outcome = state.with_db(|db| {
        let err = |e: StoreError| store_err(state, name, e);
        if db.shared() {
            let txn = db.write().map_err(err)?;
            check_incarnation(&*txn, state, c)?;
            let keys =
                check_locks(live_lock.read().unwrap_or_else(|p| p.into_inner()).engine(), &group);
            let ids: Vec<&str> = group.iter().filter(|p| p.insert).map(|p| p.id.as_str()).collect();
            txn.lock(&c.table, keys.as_deref(), &ids).map_err(err)?;
            let stored = StoredSketches::over(state, c, txn.docs(&c.table).map_err(err)?);
            let decided = {
                let live = live_lock.read().unwrap_or_else(|p| p.into_inner());
                decide(&live, &group, &stored)?
            };
            let (answers, replaced) = {
                let mut t = txn.docs(&c.table).map_err(err)?;
                let replaced = write_accepted(state, c, &mut *t, &group, &decided)?;
                // The matches' records: those the candidate search read (in this transaction,
                // under the lock) unless the group wrote them since, the others as written.
                for (p, a) in group.iter().zip(&decided) {
                    if a.inserted {
                        stored.records.borrow_mut().remove(&p.id);
                    }
                }
                let read = |id: &str| match stored.records.borrow().get(id) {
                    Some(record) => Ok(Some(record.clone())),
                    None => t.get(id).map(|v| v.map(|v| v.to_vec())),
                };
                (answers_of(state, name, &read, &decided, &replaced, allowances)?, replaced)
            };
            drop(stored);
            if decided.iter().any(|a| a.inserted) {
                txn.commit().map_err(err)?;
            }
            return Ok((decided, answers, replaced));
        }
        // Decisions, in queue order, as one-at-a-time checks would make them (the library's
        // rule), from a snapshot taken under the index's read lock.
        let decided = {
            let live = live_lock.read().unwrap_or_else(|p| p.into_inner());
            let txn = db.read().map_err(err)?;
            let stored = StoredSketches::open(state, c, &*txn)?;
            decide(&live, &group, &stored)?
        };
        // One transaction, one durable commit for the whole group; a group that stores
        // nothing reads its matches' metadata in a read transaction.
        if !decided.iter().any(|a| a.inserted) {
            let txn = db.read().map_err(err)?;
            let t = txn.docs(&c.table).map_err(err)?;
            let replaced = vec![false; group.len()];
            let read = |id: &str| t.get(id).map(|v| v.map(|v| v.to_vec()));
            let answers = answers_of(state, name, &read, &decided, &replaced, allowances)?;
            return Ok((decided, answers, replaced));
        }
        let txn = db.write().map_err(err)?;
        check_incarnation(&*txn, state, c)?;
        let (answers, replaced) = {
            let mut t = txn.docs(&c.table).map_err(err)?;
            let replaced = write_accepted(state, c, &mut *t, &group, &decided)?;
            let read = |id: &str| t.get(id).map(|v| v.map(|v| v.to_vec()));
            (answers_of(state, name, &read, &decided, &replaced, allowances)?, replaced)
        };
        txn.commit().map_err(err)?;
        Ok((decided, answers, replaced))
    });
    let (decided, answers, replaced) = match outcome {
        Ok(done) => done,
        // Nothing of the group was stored; decisions that counted on it are void too.
        Err(e) => return group.into_iter().for_each(|p| drop(p.reply.send(Err(e.clone())))),
    };
    state.metrics.count_checks(
        name,
        decided.iter().map(|a| match (a.duplicate, a.inserted) {
            (true, _) => CheckOutcome::Duplicate,
            (false, true) => CheckOutcome::Inserted,
            (false, false) => CheckOutcome::New,
        }),
    );
    if decided.iter().any(|a| a.inserted) {
        let new = decided.iter().zip(&replaced).filter(|(a, r)| a.inserted && !**r).count();
        c.counted.fetch_add(new as u64, Ordering::Relaxed);
        // Durable: now visible to searches.
        let mut live = live_lock.write().unwrap_or_else(|p| p.into_inner());
        let mut group: Vec<Option<PendingCheck>> = group.into_iter().map(Some).collect();
        for (i, a) in decided.iter().enumerate() {
            if a.inserted {
                let p = group[i].as_mut().expect("each accepted once");
                c.hold(&mut live, &p.id, std::mem::take(&mut p.sketch), p.text.take());
            }
        }
        drop(live);
        for (p, answer) in group.into_iter().flatten().zip(answers) {
            let _ = p.reply.send(answer);
        }
        return;
    }
    for (p, answer) in group.into_iter().zip(answers) {
        let _ = p.reply.send(answer);
    }
}

/// The decisions of a group of checks, in queue order, against the index and the stored
/// sketches.
fn decide(
    live: &Live,
    group: &[PendingCheck],
    stored: &StoredSketches<'_>,
) -> Result<Vec<neardup::CheckAnswer>, ApiError> {
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
    stored.with(|s| live.decide_checks_in(&checks, s)).map_err(|e| stored.error(e))
}

/// Writes the accepted documents of a decided group into `t`; for each check, whether it
/// replaced a stored document (an upsert of a stored id, or of one accepted earlier in the
/// group: `inserted` alone read as a new one). Sent without metadata, a document keeps the
/// stored one's.
fn write_accepted(
    state: &AppState,
    c: &Collection,
    t: &mut dyn crate::store::DocsMut,
    group: &[PendingCheck],
    decided: &[neardup::CheckAnswer],
) -> Result<Vec<bool>, ApiError> {
    let name = c.info.name.as_str();
    let err = |e: StoreError| store_err(state, name, e);
    let mut replaced = vec![false; group.len()];
    // The candidate keys, for a store that keeps the index.
    let engine = match c.indexed {
        true => Some(live(c)?.read().unwrap_or_else(|p| p.into_inner())),
        false => None,
    };
    for (i, p) in group.iter().enumerate().filter(|(i, _)| decided[*i].inserted) {
        let (was_stored, metadata) = match t.get(p.id.as_str()).map_err(err)? {
            Some(v) if p.metadata.is_none() => {
                (true, read_record(state, name, &p.id, &v)?.metadata)
            }
            stored => (stored.is_some(), p.metadata.clone().unwrap_or_else(no_metadata)),
        };
        replaced[i] = was_stored;
        c.largest_metadata.fetch_max(metadata.get().len(), Ordering::Relaxed);
        let record = encode_record(&p.id, &p.sketch, &metadata, p.text.as_deref());
        let keys = engine.as_ref().map(|l| {
            let passages = c.info.job.passages.as_ref();
            crate::stored_keys(l.engine(), passages, &p.sketch, p.text.as_deref())
        });
        let row = crate::store::Row { id: &p.id, record: &record, keys: keys.as_deref() };
        t.put(row).map_err(err)?;
    }
    Ok(replaced)
}

/// Reads a stored record by id (`None`: not stored).
type ReadRecord<'a> = dyn Fn(&str) -> Result<Option<Vec<u8>>, StoreError> + 'a;

/// The answers of decided checks, each match with its stored metadata (`read` gives the
/// records as written),
/// as JSON text: an answer takes its size in memory, not a tree of values several times it.
///
/// An answer larger than its check's allowance (documents with larger metadata were stored
/// while it waited for its group) takes the rest from the memory budget if it is free, else
/// that check alone is answered 503 (its decision stands; asking again gives the same
/// answer): the memory of answers never grows past the budget by more than one answer, itself
/// bounded by `--max-top-k` matches of `--max-metadata-bytes`.
fn answers_of(
    state: &AppState,
    collection: &str,
    read: &ReadRecord<'_>,
    decided: &[neardup::CheckAnswer],
    replaced: &[bool],
    allowances: impl Iterator<Item = usize>,
) -> Result<Vec<Result<Answered, ApiError>>, ApiError> {
    #[derive(serde::Serialize)]
    struct Answer {
        duplicate: bool,
        matches: Vec<Match>,
        inserted: bool,
        replaced: bool,
    }
    let err = |e: StoreError| store_err(state, collection, e);
    decided
        .iter()
        .zip(replaced)
        .zip(allowances)
        .map(|((a, &replaced), allowance)| {
            let mut matches = Vec::with_capacity(a.matches.len());
            for (id, similarity) in &a.matches {
                let metadata = match read(id.as_str()).map_err(err)? {
                    Some(v) => read_record(state, collection, id, &v)?.metadata,
                    None => no_metadata(),
                };
                matches.push(Match { id: id.clone(), similarity: *similarity, metadata });
            }
            let answer = Answer { duplicate: a.duplicate, matches, inserted: a.inserted, replaced };
            let json = to_raw(&answer)?;
            let over = json.get().len().saturating_sub(allowance);
            if over == 0 {
                return Ok(Ok(Answered { json, more: None }));
            }
            Ok(match Reserved::more(state, over) {
                Some(more) => Ok(Answered { json, more: Some(more) }),
                None => Err(ApiError {
                    retry_after: Some(1),
                    ..ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "busy",
                        format!(
                            "the answer of this check grew to {} MiB while it waited (documents \
                             with larger metadata were stored meanwhile), past what it was \
                             admitted for, and the memory for requests (--max-memory-mb {}) is \
                             in use; its decision stands (inserted: {}): ask again, with a \
                             lower top_k",
                            json.get().len().div_ceil(1 << 20),
                            state.limits.max_memory_bytes >> 20,
                            a.inserted
                        ),
                    )
                }),
            })
        })
        .collect()
}

impl Shape for SearchRequest {
    const EXPECTING: &'static str = "an object";
}

impl Shape for CheckRequest {
    const EXPECTING: &'static str = "an object";
}

impl Shape for BatchCheckRequest {
    const EXPECTING: &'static str = "an object {\"docs\": [...]}";
}

impl Shape for BatchCheckDoc {
    const EXPECTING: &'static str = "a document object {\"id\", \"text\" | \"tokens\"}";
}
