//! Documents: batch insert, read, delete.

use super::*;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InsertRequest {
    #[serde(deserialize_with = "objects")]
    pub(super) docs: Vec<InDoc>,
}

pub(super) async fn insert_docs(
    State(state): State<Shared>,
    OnLive { c, req }: OnLive<InsertRequest>,
) -> ApiResult {
    let limits = state.limits;
    check_batch(req.docs.len(), &limits)?;
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
        let body = body_from_parts(d.text, d.tokens, limits.max_doc_bytes, &what)?;
        check_metadata(d.metadata.as_deref(), limits.max_metadata_bytes, &what, &id)?;
        docs.push((id, body, d.metadata));
    }
    c.may_store_metadata(docs.iter().map(|(_, _, m)| m.as_deref()));
    let need = Need::sketching(
        docs.iter().map(|(_, b, m)| b.len() + m.as_ref().map_or(0, |m| m.get().len())),
    );
    let (turn, _memory) =
        admit(&state, Need::new(need, "this batch", "send fewer or shorter documents per request"))
            .await?;
    // Sketch outside every lock.
    let c2 = c.clone();
    type Sketched = Vec<(String, Option<Box<RawValue>>, Record, Option<Vec<u64>>)>;
    let (mut records, turn): (Sketched, Turn) = blocking(move || {
        let live = live(&c2)?.read().unwrap_or_else(|p| p.into_inner());
        let store_text = c2.info.store_text;
        // Sketch the batch on every core (rayon), in order; with the candidate keys when the
        // store keeps the index.
        let records = docs
            .into_par_iter()
            .map_init(Scratch::default, |scratch, (id, body, metadata)| {
                let sketch = live.engine().sketch(body.as_document(), body.len(), scratch);
                let text = store_text.then(|| body.as_document().display_text().into_owned());
                let keys = c2.indexed.then(|| {
                    let passages = c2.info.job.passages.as_ref();
                    crate::stored_keys(live.engine(), passages, &sketch, text.as_deref())
                });
                (id, metadata, Record { sketch, metadata: no_metadata(), text }, keys)
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
            let err = |e: StoreError| store_err(&st, name, e);
            let txn = db.write().map_err(err)?;
            check_incarnation(&*txn, &st, &c2)?;
            // The batch's ids, before their stored metadata is read (other servers' writers
            // of them wait for this commit).
            let ids: Vec<&str> = records.iter().map(|(id, _, _, _)| id.as_str()).collect();
            txn.lock(&c2.table, Some(&[]), &ids).map_err(err)?;
            let updated = {
                let mut t = txn.docs(&c2.table).map_err(err)?;
                // Sent without metadata, a stored document keeps its own (the batch's ids are
                // all different: each is read as stored before the batch).
                let keep: Vec<String> = records
                    .iter()
                    .filter(|(_, m, _, _)| m.is_none())
                    .map(|(id, _, _, _)| id.clone())
                    .collect();
                let asked: Vec<&str> = keep.iter().map(String::as_str).collect();
                let stored = t.get_many(&asked).map_err(err)?;
                let stored: std::collections::HashMap<String, Vec<u8>> =
                    keep.into_iter().zip(stored).filter_map(|(id, v)| Some((id, v?))).collect();
                let mut encoded = Vec::with_capacity(records.len());
                for (id, metadata, record, _) in &mut records {
                    match metadata.take() {
                        Some(m) => record.metadata = m,
                        None => {
                            if let Some(v) = stored.get(id) {
                                record.metadata = read_record(&st, name, id, v)?.metadata;
                            }
                        }
                    }
                    c2.largest_metadata.fetch_max(record.metadata.get().len(), Ordering::Relaxed);
                    encoded.push(record.encode(id));
                }
                let rows: Vec<crate::store::Row<'_>> = records
                    .iter()
                    .zip(&encoded)
                    .map(|((id, _, _, keys), bytes)| crate::store::Row {
                        id,
                        record: bytes,
                        keys: keys.as_deref(),
                    })
                    .collect();
                let replaced = t.put_many(&rows).map_err(err)?;
                replaced.into_iter().filter(|r| *r).count()
            };
            txn.commit().map_err(err)?;
            Ok(updated)
        })?;
        // Durable: now visible to searches.
        let mut live = live(&c2)?.write().unwrap_or_else(|p| p.into_inner());
        let n = records.len();
        c2.counted.fetch_add((n - updated) as u64, Ordering::Relaxed);
        for (id, _, record, _) in records {
            c2.hold(&mut live, &id, record.sketch, record.text);
        }
        Ok((n - updated, updated))
    })
    .await?;
    ok(StatusCode::OK, json!({"inserted": inserted, "updated": updated}))
}

pub(super) async fn get_doc(
    State(state): State<Shared>,
    LiveCollection(c): LiveCollection,
    ApiPath((_, id)): ApiPath<(String, String)>,
) -> ApiResult {
    let (st, c2, key) = (state.clone(), c.clone(), id.clone());
    let record = blocking(move || {
        let name = c2.info.name.as_str();
        st.with_db(|db| {
            let err = |e: StoreError| store_err(&st, name, e);
            let txn = db.read().map_err(err)?;
            let t = txn.docs(&c2.table).map_err(err)?;
            let v = t.get(key.as_str()).map_err(err)?;
            v.map(|v| read_record(&st, &c2.info.name, &key, &v)).transpose()
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
    let bits = c.info.job.pipeline.simhash_bits.get() as usize;
    let mut fingerprints = serde_json::Map::new();
    if c.info.job.search.method() != Method::MinHash {
        let v = record.sketch.simhash_value();
        fingerprints.insert("simhash".into(), json!(format!("{v:0width$x}", width = bits / 4)));
    }
    if !record.sketch.band_keys().is_empty() {
        let keys: Vec<String> =
            record.sketch.band_keys().iter().map(|k| format!("{k:016x}")).collect();
        fingerprints.insert("lsh_band_keys".into(), json!(keys));
    }
    #[derive(serde::Serialize)]
    struct Doc {
        id: String,
        metadata: Box<RawValue>,
        text: Option<String>,
        empty: bool,
        fingerprints: serde_json::Map<String, Value>,
    }
    let empty = record.sketch.empty;
    let doc = Doc { id, metadata: record.metadata, text: record.text, empty, fingerprints };
    ok_raw(StatusCode::OK, &doc)
}

pub(super) async fn delete_doc(
    State(state): State<Shared>,
    LiveCollection(c): LiveCollection,
    ApiPath((_, id)): ApiPath<(String, String)>,
) -> ApiResult {
    let _writer = c.writer.lock().await;
    check_writable(&c)?;
    let (st, c2, key) = (state.clone(), c.clone(), id.clone());
    let existed = blocking(move || {
        let name = c2.info.name.as_str();
        let existed = st.with_db(|db| {
            let err = |e: StoreError| store_err(&st, name, e);
            let txn = db.write().map_err(err)?;
            check_incarnation(&*txn, &st, &c2)?;
            let existed = txn.docs(&c2.table).map_err(err)?.remove(key.as_str()).map_err(err)?;
            txn.commit().map_err(err)?;
            Ok(existed)
        })?;
        if existed {
            let _ = c2
                .counted
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| Some(n.saturating_sub(1)));
        }
        let mut live = live(&c2)?.write().unwrap_or_else(|p| p.into_inner());
        c2.drop_held(&mut live, &key);
        drop(live);
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

impl Shape for InsertRequest {
    const EXPECTING: &'static str = "an object {\"docs\": [...]}";
}
