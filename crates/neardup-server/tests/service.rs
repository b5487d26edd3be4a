//! The service's HTTP API, run in-process ([`support::Server`]): every route, every error, the
//! limits, the stores of earlier formats, the conformance of its answers. What only the
//! `neardup serve` process does (signals, SIGKILL under load, exit codes, file size limits,
//! what it prints) is tested in `crates/neardup-cli/tests/serve.rs`.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use neardup_server::{Limits, STORE_FORMAT};
use serde_json::{json, Value};
use support::http::{doc_text, store_texts, NEWS_A, NEWS_B};
use support::{
    error_code, limits, raw, raw_request, store_fixture, tempdir, Endpoint, Raw, Server,
};

/// The store format written in a store's `meta` table.
fn store_format(dir: &std::path::Path) -> u32 {
    let db = redb::Database::open(dir.join("neardup.redb")).expect("open the store");
    let txn = db.begin_read().expect("read");
    let meta: redb::TableDefinition<'_, &str, u32> = redb::TableDefinition::new("meta");
    let table = txn.open_table(meta).expect("meta");
    table.get("store_format").expect("get").expect("a format").value()
}

#[test]
fn every_route() {
    let dir = tempdir("routes");
    let s = Server::start(&dir, Limits::default());
    let (st, v) = s.call("GET", "/v1/health", None);
    assert_eq!((st, v["status"].as_str()), (200, Some("ok")));

    let (st, v) =
        s.json("PUT", "/v1/collections/news", json!({"preset": "default", "store_text": true}));
    assert_eq!(st, 201, "{v}");
    assert_eq!((&v["lsh"]["bands"], &v["lsh"]["rows"]), (&json!(16), &json!(6)));
    assert!(v["lsh"]["candidate_probability"].as_f64().expect("p") >= 0.99, "{v}");
    // Creating it again with the same settings is idempotent; other settings conflict.
    assert_eq!(
        s.json("PUT", "/v1/collections/news", json!({"preset": "default", "store_text": true})).0,
        200
    );
    let (st, v) = s.json("PUT", "/v1/collections/news", json!({"threshold": 0.5}));
    assert_eq!((st, error_code(&v)), (409, "collection_exists"));
    let (st, v) =
        s.json("PUT", "/v1/collections/pages", json!({"method": "simhash", "hamming": 4}));
    assert_eq!(st, 201, "{v}");

    let (st, v) = s.json(
        "POST",
        "/v1/collections/news/docs",
        json!({"docs": [
            {"id": "a", "text": NEWS_A, "metadata": {"source": "wire"}},
            {"id": 7, "tokens": ["other", "words", "about", "trains", "and", "stations", "today"]},
        ]}),
    );
    assert_eq!((st, &v), (200, &json!({"inserted": 2, "updated": 0})));
    let (st, v) = s.json(
        "POST",
        "/v1/collections/news/docs",
        json!({"docs": [{"id": "a", "text": NEWS_A, "metadata": {"source": "wire", "v": 2}}]}),
    );
    assert_eq!((st, &v), (200, &json!({"inserted": 0, "updated": 1})));

    let (st, v) = s.call("GET", "/v1/collections/news", None);
    assert_eq!((st, v["documents"].as_u64()), (200, Some(2)));
    let (st, v) = s.call("GET", "/v1/collections", None);
    assert_eq!(st, 200);
    let names: Vec<&str> = v["collections"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, vec!["news", "pages"]);

    let (st, v) = s.call("GET", "/v1/collections/news/docs/a", None);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["metadata"], json!({"source": "wire", "v": 2}));
    assert_eq!(v["text"], NEWS_A);
    assert_eq!(v["fingerprints"]["lsh_band_keys"].as_array().map(Vec::len), Some(16));

    let (st, v) =
        s.json("POST", "/v1/collections/news/search", json!({"text": NEWS_B, "top_k": 5}));
    assert_eq!(st, 200, "{v}");
    let hits = v["hits"].as_array().expect("hits");
    assert_eq!(hits.len(), 1, "{v}");
    assert_eq!(hits[0]["id"], "a");
    let sim = hits[0]["similarity"].as_f64().expect("number");
    assert!((0.8..1.0).contains(&sim), "{sim}");
    assert_eq!(hits[0]["metadata"]["v"], 2);
    // A stricter threshold than the pair's similarity finds nothing.
    let (_, v) =
        s.json("POST", "/v1/collections/news/search", json!({"text": NEWS_B, "threshold": 0.99}));
    assert_eq!(v["hits"], json!([]));

    let (st, v) = s.json("POST", "/v1/collections/news/check", json!({"id": "b", "text": NEWS_B}));
    assert_eq!(st, 200, "{v}");
    assert_eq!((v["duplicate"].as_bool(), v["inserted"].as_bool()), (Some(true), Some(false)));
    assert_eq!(v["matches"][0]["id"], "a");
    let (_, v) = s.json(
        "POST",
        "/v1/collections/news/check",
        json!({"id": "c", "text": "completely unrelated words on some new topic entirely"}),
    );
    assert_eq!((v["duplicate"].as_bool(), v["inserted"].as_bool()), (Some(false), Some(true)));
    assert_eq!(s.call("GET", "/v1/collections/news/docs/c", None).0, 200);
    let (_, v) = s.json(
        "POST",
        "/v1/collections/news/check",
        json!({"id": "d", "text": "another unrelated text here", "insert": false}),
    );
    assert_eq!((v["duplicate"].as_bool(), v["inserted"].as_bool()), (Some(false), Some(false)));
    assert_eq!(s.call("GET", "/v1/collections/news/docs/d", None).0, 404);

    // SimHash collection: fingerprints include the SimHash.
    s.json("POST", "/v1/collections/pages/docs", json!({"docs": [{"id": "p", "text": NEWS_A}]}));
    let (_, v) = s.call("GET", "/v1/collections/pages/docs/p", None);
    assert_eq!(v["fingerprints"]["simhash"].as_str().map(str::len), Some(16), "{v}");
    let (_, v) = s.json("POST", "/v1/collections/pages/search", json!({"text": NEWS_A}));
    assert_eq!(v["hits"][0]["similarity"], 1.0);

    let (st, v) =
        s.json("POST", "/v1/compare", json!({"a": NEWS_A, "b": NEWS_B, "preset": "zh-news"}));
    assert_eq!(st, 200, "{v}");
    assert!(v["jaccard_exact"].as_f64().expect("number") > 0.8, "{v}");
    assert!(v["simhash"]["hamming"].is_u64(), "{v}");

    assert_eq!(s.call("DELETE", "/v1/collections/news/docs/c", None).0, 200);
    let (st, v) = s.call("DELETE", "/v1/collections/news/docs/c", None);
    assert_eq!((st, error_code(&v)), (404, "document_not_found"));

    let (st, v) = s.call("GET", "/metrics", None);
    assert_eq!(st, 200);
    let text = v.as_str().expect("text");
    assert!(text.contains("neardup_requests_total{method=\"POST\",route=\"/v1/collections/{name}/search\",status=\"200\"} 3"), "{text}");
    assert!(text.contains("neardup_documents{collection=\"news\"} 2"), "{text}");
    let (st, v) = s.call("GET", "/v1/openapi.json", None);
    assert_eq!((st, v["openapi"].as_str()), (200, Some("3.0.3")));
    assert!(v["paths"]["/v1/collections/{name}/check"]["post"].is_object());

    assert_eq!(s.call("DELETE", "/v1/collections/pages", None).0, 200);
    let (st, v) = s.call("GET", "/v1/collections/pages", None);
    assert_eq!((st, error_code(&v)), (404, "collection_not_found"));
}

#[test]
fn every_error_is_json_with_its_status() {
    let dir = tempdir("errors");
    let s = Server::start(
        &dir,
        limits(|l| {
            l.max_body_bytes = 4096;
            l.max_doc_bytes = 512;
            l.max_batch_docs = 3;
        }),
    );
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let cases: Vec<(&str, &str, Vec<u8>, u16, &str)> = vec![
        ("POST", "/v1/collections/c/search", b"{\"text\": ".to_vec(), 400, "malformed_json"),
        ("POST", "/v1/collections/c/search", b"{\"text\": 5}".to_vec(), 400, "invalid_field"),
        ("POST", "/v1/collections/c/search", b"{\"txt\": \"a\"}".to_vec(), 400, "invalid_field"),
        ("POST", "/v1/collections/c/search", b"{\"text\": \"a\xff\"}".to_vec(), 400, "invalid_utf8"),
        ("POST", "/v1/collections/c/search", b"{\"text\": \"a\", \"threshold\": 1.5}".to_vec(), 400, "invalid_field"),
        ("POST", "/v1/collections/c/search", b"{}".to_vec(), 400, "invalid_field"),
        ("POST", "/v1/collections/nope/search", b"{\"text\": \"a\"}".to_vec(), 404, "collection_not_found"),
        ("GET", "/v1/collections/c/docs/nope", vec![], 404, "document_not_found"),
        ("PUT", "/v1/collections/..%2Fetc", b"{}".to_vec(), 400, "invalid_name"),
        ("PUT", "/v1/collections/c2", b"{\"spec\": {\"idf\": {\"kind\": \"file\", \"path\": \"/etc/passwd\"}}}".to_vec(), 400, "invalid_field"),
        ("PUT", "/v1/collections/c3", b"{\"preset\": \"fr-news\"}".to_vec(), 400, "invalid_field"),
        ("POST", "/v1/collections/c/docs", format!("{{\"docs\": [{{\"id\": \"x\", \"text\": \"{}\"}}]}}", "a".repeat(600)).into_bytes(), 413, "document_too_large"),
        ("POST", "/v1/collections/c/docs", format!("{{\"docs\": [{{\"id\": \"x\", \"text\": \"{}\"}}]}}", "a".repeat(5000)).into_bytes(), 413, "payload_too_large"),
        ("POST", "/v1/collections/c/docs", b"{\"docs\": [{\"id\":1,\"text\":\"a\"},{\"id\":2,\"text\":\"a\"},{\"id\":3,\"text\":\"a\"},{\"id\":4,\"text\":\"a\"}]}".to_vec(), 413, "batch_too_large"),
        ("POST", "/v1/collections/c/docs", b"{\"docs\": [{\"id\":1,\"text\":\"a\"},{\"id\":1,\"text\":\"b\"}]}".to_vec(), 400, "duplicate_id"),
        ("POST", "/v1/collections/c/docs", b"{\"docs\": [{\"id\":\"\",\"text\":\"a\"}]}".to_vec(), 400, "invalid_id"),
        ("POST", "/v1/collections/c/docs", b"{\"docs\": [{\"id\":\"x\",\"text\":\"a\",\"tokens\":[\"a\"]}]}".to_vec(), 400, "invalid_field"),
        ("GET", "/v1/nothing-here", vec![], 404, "not_found"),
        ("PATCH", "/v1/collections/c", vec![], 405, "method_not_allowed"),
    ];
    for (method, path, body, status, code) in cases {
        let body = (!body.is_empty()).then_some(body.as_slice());
        let (st, v) = s.call(method, path, body);
        assert_eq!((st, error_code(&v)), (status, code), "{method} {path}: {v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    }
    // A failed batch stored nothing.
    assert_eq!(s.call("GET", "/v1/collections/c", None).1["documents"], 0);
}

/// A stored spec whose pipeline id no longer matches this build is listed but refuses
/// requests with 409 spec_mismatch.
#[test]
fn spec_mismatch_is_refused() {
    let dir = tempdir("mismatch");
    {
        let s = Server::start(&dir, Limits::default());
        assert_eq!(s.json("PUT", "/v1/collections/old", json!({})).0, 201);
    }
    // Rewrite the stored pipeline id, as a build with another fingerprint format would have.
    if support::pg::on_postgres() {
        let db = support::pg::database_name(&dir);
        let sql = "UPDATE neardup_collections SET settings = \
                   jsonb_set(settings::jsonb, '{pipeline_id}', '\"0000000000000000\"')::text \
                   WHERE name = 'old' RETURNING name";
        assert_eq!(support::pg::cluster().sql(&db, sql).trim(), "old");
    } else {
        let db = redb::Database::create(dir.join("neardup.redb")).expect("open store");
        use redb::ReadableTable;
        let def: redb::TableDefinition<'_, &str, &str> = redb::TableDefinition::new("collections");
        let txn = db.begin_write().expect("txn");
        {
            let mut t = txn.open_table(def).expect("table");
            let mut info: Value = {
                let v = t.get("old").expect("get").expect("stored");
                serde_json::from_str(v.value()).expect("json")
            };
            info["pipeline_id"] = json!("0000000000000000");
            t.insert("old", info.to_string().as_str()).expect("insert");
        }
        txn.commit().expect("commit");
    }
    let s = Server::start(&dir, Limits::default());
    let (st, v) = s.json("POST", "/v1/collections/old/search", json!({"text": "a"}));
    assert_eq!((st, error_code(&v)), (409, "spec_mismatch"));
    assert!(v["error"]["message"].as_str().expect("msg").contains("pipeline id"));
    let (_, v) = s.call("GET", "/v1/collections/old", None);
    assert!(v["error"].is_string(), "{v}");
}

#[test]
fn paths_uris_and_specs_over_the_limits_answer_json() {
    let dir = tempdir("json-errors");
    let s = Server::start(&dir, Limits::default());
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let long = format!("/v1/collections/c/docs/{}", "x".repeat(20_000));
    let (st, v) = s.call("GET", &long, None);
    assert_eq!((st, error_code(&v)), (414, "uri_too_long"));
    let (st, v) = s.call("GET", "/v1/collections/c/docs/%FF%FE", None);
    assert_eq!((st, error_code(&v)), (400, "invalid_path"));
    let started = std::time::Instant::now();
    let (st, v) =
        s.json("PUT", "/v1/collections/huge", json!({"spec": {"minhash": {"num_perm": 20000}}}));
    assert_eq!((st, error_code(&v)), (400, "invalid_field"));
    assert!(v["error"]["message"].as_str().expect("m").contains("1024"), "{v}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let (st, v) = s.json("PUT", "/v1/collections/r", json!({"recall": 1.5}));
    assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{v}");
    let (st, v) = s.json("PUT", "/v1/collections/r", json!({"recall": 0.999}));
    assert_eq!(st, 201, "{v}");
    assert!(v["lsh"]["candidate_probability"].as_f64().expect("p") >= 0.999);
    // The OpenAPI document declares every path parameter it uses, and health is public.
    let (_, doc) = s.call("GET", "/v1/openapi.json", None);
    for (path, item) in doc["paths"].as_object().expect("paths") {
        let declared: Vec<&str> = item["parameters"]
            .as_array()
            .map(|p| p.iter().filter_map(|x| x["name"].as_str()).collect())
            .unwrap_or_default();
        for part in path.split('/').filter(|p| p.starts_with('{')) {
            assert!(declared.contains(&part.trim_matches(['{', '}'])), "{path}: {declared:?}");
        }
    }
    assert_eq!(doc["paths"]["/v1/health"]["get"]["security"], json!([]));
    assert!(doc["paths"]["/v1/collections/{name}"]["put"]["responses"]["201"].is_object());
    assert!(doc["paths"]["/v1/collections/{name}/docs"]["post"]["requestBody"].is_object());
}

/// A store with a collection that keeps texts, and its file, after the server stopped.
fn stored(dir: &Path, texts: &[(&str, &str)]) -> PathBuf {
    let s = Server::start(dir, Limits::default());
    store_texts(&s, texts);
    s.stop();
    dir.join("neardup.redb")
}

/// Regression: one flipped bit in a stored text was served as the document's text, with
/// `/v1/health` ok. Every record now carries a checksum, checked at start and on every read.
#[test]
fn a_flipped_bit_in_a_record_is_never_served_and_health_says_so() {
    let dir = tempdir("flipped-bit");
    let marker = "zqxjkvwpyfgh unique stored text of the damaged document";
    let file = stored(&dir, &[("bad", marker), ("good", "an intact document about rivers")]);
    if support::pg::on_postgres() {
        // The same bit of the record, flipped in the database.
        let db = support::pg::database_name(&dir);
        let sql = format!(
            "UPDATE neardup_docs SET record = set_byte(record, p + 2, get_byte(record, p + 2) # 1) \
             FROM (SELECT position(convert_to('{marker}', 'UTF8') IN record) AS p \
                   FROM neardup_docs WHERE id = convert_to('bad', 'UTF8')) AS found \
             WHERE id = convert_to('bad', 'UTF8') AND p > 0 RETURNING 1"
        );
        assert_eq!(support::pg::cluster().sql(&db, &sql).trim(), "1", "the text is in the record");
    } else {
        let mut bytes = std::fs::read(&file).expect("read");
        let mut flipped = 0;
        let needle = marker.as_bytes();
        for at in 0..bytes.len().saturating_sub(needle.len()) {
            if &bytes[at..at + needle.len()] == needle {
                bytes[at + 3] ^= 0x01; // 'x' -> 'y': still valid UTF-8, still a plausible text
                flipped += 1;
            }
        }
        assert!(flipped > 0, "the text is in the file");
        std::fs::write(&file, &bytes).expect("write");
    }

    let s = Server::start(&dir, Limits::default());
    let (status, body) = s.call("GET", "/v1/collections/c/docs/bad", None);
    assert_eq!(status, 500, "{body}");
    assert_eq!(error_code(&body), "damaged_record");
    assert!(!body.to_string().contains("zqyjk"), "the damaged text is not served: {body}");
    let (status, health) = s.call("GET", "/v1/health", None);
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["status"], "damaged");
    assert_eq!(health["damaged_records"], 1);
    assert!(health["examples"][0].as_str().expect("example").starts_with("c/bad"), "{health}");
    let (status, body) = s.call("GET", "/v1/collections/c/docs/good", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["text"], "an intact document about rivers");
    // A search or a check that meets the damaged record answers from the others, on both
    // stores: the embedded store left it out of its index at start, PostgreSQL's candidates
    // skip it. Regression: on PostgreSQL the whole search was a 500.
    let (status, body) = s.json("POST", "/v1/collections/c/search", json!({"text": marker}));
    assert_eq!((status, &body["hits"]), (200, &json!([])), "{body}");
    let good = json!({"text": "an intact document about rivers"});
    let (status, body) = s.json("POST", "/v1/collections/c/search", good);
    assert_eq!((status, &body["hits"][0]["id"]), (200, &json!("good")), "{body}");
    let (status, body) =
        s.json("POST", "/v1/collections/c/check", json!({"id": "again", "text": marker}));
    assert_eq!((status, &body["inserted"]), (200, &json!(true)), "{body}");
    let (_, health) = s.call("GET", "/v1/health", None);
    assert_eq!(health["damaged_records"], 1, "counted once: {health}");
}

/// The committed store of format 2 (tests/fixtures/store_v2) opens, is upgraded to the current
/// format, and answers as it did when it was written.
#[test]
fn a_format_2_store_is_upgraded_and_answers_as_before() {
    if support::pg::on_postgres() {
        return; // the committed stores are files of the embedded store
    }
    let dir = store_fixture("store_v2");
    for round in 0..2 {
        let before = store_format(&dir);
        assert_eq!(
            before,
            if round == 0 { 2 } else { STORE_FORMAT },
            "upgraded once, at the first start"
        );
        let s = Server::start(&dir, Limits::default());
        answers_as_the_committed_stores_were_written(&s);
        s.stop();
        assert_eq!(store_format(&dir), STORE_FORMAT);
    }
}

/// The committed stores of formats 3 and 4 (tests/fixtures/store_v3: record checksums, a
/// passage collection, metadata with `1.10` and a 30-digit integer; store_v4: the same
/// collections with their settings as jobs) open and answer as they did when they were
/// written: searches, the passages of a query, the metadata byte for byte.
#[test]
fn the_format_3_and_4_stores_answer_as_when_they_were_written() {
    if support::pg::on_postgres() {
        return; // the committed stores are files of the embedded store
    }
    for version in ["store_v3", "store_v4"] {
        committed_store_answers_as_written(version);
    }
}

fn committed_store_answers_as_written(version: &str) {
    let dir = store_fixture(version);
    let s = Server::start(&dir, Limits::default());
    answers_as_the_committed_stores_were_written(&s);
    let q = "In short, public libraries in the county will extend their opening hours from next \
             month; the council said the change follows a survey in which most residents asked \
             for evening and weekend access. 近年來，隨著網際網路的快速發展，網路文本的數量急劇增加，\
             重複內容的檢測成為資訊檢索領域的重要課題。";
    let (status, v) = s.json("POST", "/v1/collections/papers/overlap", json!({"text": q}));
    assert_eq!(status, 200, "{v}");
    let spans: Vec<Value> = v["passages"]
        .as_array()
        .expect("passages")
        .iter()
        .map(|p| json!([p["start"], p["end"], p["source"], p["source_start"], p["source_end"]]))
        .collect();
    assert_eq!(spans, [json!([10, 196, "7", 0, 186]), json!([197, 246, "zh", 0, 48])], "{v}");
    assert_eq!(v["copied_chars"], json!(235), "{v}");
    let (status, raw) = s.text("GET", "/v1/collections/papers/docs/7", "");
    assert_eq!(status, 200, "{raw}");
    assert!(raw.contains(r#"{"score": 1.10, "big": 123456789012345678901234567890}"#), "{raw}");
}

/// What both committed stores answered when they were written: health, the search of `texts`
/// for its first text, the Chinese text stored, the documents of `sketches`.
fn answers_as_the_committed_stores_were_written(s: &Server) {
    let (status, health) = s.call("GET", "/v1/health", None);
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")), "{health}");
    let query = "the quick brown fox jumps over the lazy dog near the river bank";
    let (status, body) = s.json("POST", "/v1/collections/texts/search", json!({"text": query}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["hits"],
        json!([
            {"id": "d0", "similarity": 1.0, "metadata": {"n": 0}},
            {"id": "d1", "similarity": 0.9, "metadata": {"n": 1}},
        ])
    );
    let (status, body) = s.call("GET", "/v1/collections/texts/docs/d2", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["text"], "一个关于机器学习和自然语言处理的长句子，用于测试中文文本");
    let (status, body) = s.call("GET", "/v1/collections/sketches", None);
    assert_eq!((status, body["documents"].as_u64()), (200, Some(4)), "{body}");
}

/// do not apply to the chosen method are refused naming them, as `neardup dedup` refuses them.
#[test]
fn settings_that_do_not_apply_to_the_method_are_refused() {
    let dir = tempdir("contradictions");
    let s = Server::start(&dir, Limits::default());
    for (body, named) in [
        (json!({"method": "simhash", "recall": 0.9}), "recall"),
        (json!({"method": "simhash", "recall": 0.99, "hamming": 4}), "recall"),
        (json!({"method": "minhash", "hamming": 4}), "hamming"),
        (json!({"method": "minhash", "hamming": 3, "recall": 0.9}), "hamming"),
        (json!({"hamming": 2, "recall": 0.9}), "recall"),
    ] {
        let (st, v) = s.json("PUT", "/v1/collections/x", body.clone());
        assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{body}: {v}");
        let m = v["error"]["message"].as_str().expect("message");
        assert!(m.contains(named), "{body}: {m}");
        assert_eq!(s.call("GET", "/v1/collections/x", None).0, 404, "{body}: nothing created");
    }
    // As in `neardup dedup`: --hamming alone means simhash; both takes either setting.
    let (st, v) = s.json("PUT", "/v1/collections/h", json!({"hamming": 5}));
    assert_eq!((st, v["method"].as_str(), v["hamming"].as_u64()), (201, Some("simhash"), Some(5)));
    let (st, v) =
        s.json("PUT", "/v1/collections/b", json!({"method": "both", "hamming": 2, "recall": 0.9}));
    assert_eq!(st, 201, "{v}");
    let (st, v) = s.json("PUT", "/v1/collections/m", json!({"method": "minhash", "recall": 0.9}));
    assert_eq!(st, 201, "{v}");
}

/// Regression (issue 22): a check on a stored id with an unrelated text overwrote the document
/// and answered only `inserted: true`; it now says it replaced the stored document.
#[test]
fn a_check_that_overwrites_a_stored_id_says_it_replaced_it() {
    let dir = tempdir("check-replaces");
    let s = Server::start(&dir, Limits::default());
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"store_text": true})).0, 201);
    let docs = json!({"docs": [{"id": "a", "text": NEWS_A}, {"id": 7, "text": doc_text("seven")}]});
    assert_eq!(s.json("POST", "/v1/collections/c/docs", docs).0, 200);
    let other = "completely unrelated words on some new topic entirely";
    for (id, text) in [(json!("a"), other), (json!(7), "trains stations and timetables")] {
        let (st, v) = s.json("POST", "/v1/collections/c/check", json!({"id": id, "text": text}));
        assert_eq!(st, 200, "{v}");
        assert_eq!(
            (&v["duplicate"], &v["inserted"], &v["replaced"]),
            (&json!(false), &json!(true), &json!(true)),
            "{id}: {v}"
        );
    }
    let (_, v) = s.call("GET", "/v1/collections/c/docs/a", None);
    assert_eq!(v["text"], other);
    // A new id replaces nothing; a check that does not insert replaces nothing either.
    let (_, v) = s.json("POST", "/v1/collections/c/check", json!({"id": "n", "text": NEWS_B}));
    assert_eq!((&v["inserted"], &v["replaced"]), (&json!(true), &json!(false)), "{v}");
    let (_, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"id": "a", "text": "yet another text", "insert": false}),
    );
    assert_eq!((&v["inserted"], &v["replaced"]), (&json!(false), &json!(false)), "{v}");
    // Concurrent checks of one new id: the first inserts it, each later one replaces it.
    let s = Arc::new(s);
    let answers: Vec<Value> = (0..6)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || {
                let text = format!("{} {i}", doc_text(&format!("same-id-{i}")));
                s.json("POST", "/v1/collections/c/check", json!({"id": "same", "text": text})).1
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("client"))
        .collect();
    let inserted = answers.iter().filter(|v| v["inserted"] == json!(true)).count();
    let replaced = answers.iter().filter(|v| v["replaced"] == json!(true)).count();
    assert_eq!((inserted, replaced), (6, 5), "{answers:?}");
    // The OpenAPI document describes the field.
    let (_, doc) = s.call("GET", "/v1/openapi.json", None);
    let check = &doc["paths"]["/v1/collections/{name}/check"]["post"]["responses"]["200"];
    // One check's answer, or a batch's results of such answers.
    let one = &check["content"]["application/json"]["schema"]["oneOf"][0];
    assert!(one["properties"]["replaced"].is_object(), "{check}");
    let batch = &check["content"]["application/json"]["schema"]["oneOf"][1];
    assert_eq!(batch["properties"]["results"]["items"], *one, "{check}");
}

/// Regression (issue 22): every distinct method string sent to an open path became a
/// `/metrics` series of its own (4,000 random methods: 10 MB to 245 MB). Unknown methods and
/// unknown paths now share one label each.
#[test]
fn metrics_labels_stay_bounded_whatever_the_requests() {
    let dir = tempdir("metrics-labels");
    let s = Server::start(&dir, Limits::default());
    let host = s.authority();
    for i in 0..60 {
        let method = format!("M{i}X");
        for (method, path, status) in [
            (method.as_str(), "/v1/health".to_string(), 405),
            ("GET", format!("/nowhere/{i}"), 404),
            (method.as_str(), format!("/nowhere-{i}"), 404),
        ] {
            let request =
                format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
            let r = raw(&s, request.as_bytes());
            assert_eq!(r.status, status, "{method} {path}: {}", r.body);
            assert_eq!(r.header("content-type"), Some("application/json"));
            assert!(r.json()["error"]["code"].is_string());
        }
    }
    let (st, v) = s.call("GET", "/metrics", None);
    assert_eq!(st, 200);
    let text = v.as_str().expect("text");
    let series: Vec<&str> =
        text.lines().filter(|l| l.starts_with("neardup_requests_total{")).collect();
    assert!(series.len() <= 6, "{} series: {:?}", series.len(), &series[..series.len().min(10)]);
    assert!(!text.contains("M7X") && !text.contains("nowhere"), "no client string is a label");
    assert!(
        text.contains(
            "neardup_requests_total{method=\"other\",route=\"/v1/health\",status=\"405\"} 60"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "neardup_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"} 60"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "neardup_requests_total{method=\"other\",route=\"unmatched\",status=\"404\"} 60"
        ),
        "{text}"
    );
}

/// Regression (issue 22): a cross-origin page's `no-cors` `text/plain` POST inserted a document
/// into the loopback server, and nothing stopped DNS rebinding. A body must be JSON by its
/// Content-Type (415), a foreign Origin is refused (403), and on loopback so is a Host that is
/// not a loopback name with the server's port (403 naming it). The page at `/` still works.
#[test]
fn cross_origin_requests_and_foreign_hosts_are_refused() {
    let dir = tempdir("origin");
    let s = Server::start(&dir, Limits::default());
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let port = s.base().rsplit(':').next().expect("port").to_string();
    let doc = r#"{"docs": [{"id": "csrf", "text": "planted by another site"}]}"#;
    let path = "/v1/collections/c/docs";
    for content_type in [
        None,
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonp"),
        Some("application/json-patch+json"),
    ] {
        let extra = content_type.map(|t| format!("Content-Type: {t}\r\n")).unwrap_or_default();
        let r = raw(&s, &raw_request(&s, "POST", path, &extra, doc));
        assert_eq!(r.status, 415, "{content_type:?}: {}", r.body);
        assert_eq!(error_code(&r.json()), "unsupported_media_type");
    }
    for content_type in
        ["application/json", "Application/JSON; charset=utf-8", "application/json ;charset=UTF-8"]
    {
        let r = raw(
            &s,
            &raw_request(
                &s,
                "POST",
                "/v1/collections/c/search",
                &format!("Content-Type: {content_type}\r\n"),
                r#"{"text": "a"}"#,
            ),
        );
        assert_eq!(r.status, 200, "{content_type}: {}", r.body);
    }
    // A foreign Origin, whatever the Content-Type; the server's own origin is fine.
    let json_type = "Content-Type: application/json\r\n";
    for origin in [
        "http://evil.example",
        "null",
        &format!("http://evil.example:{port}"),
        &format!("https://127.0.0.1.evil.example:{port}"),
        &format!("http://127.0.0.1:{}", port.parse::<u32>().expect("port") + 1),
    ] {
        let r = raw(
            &s,
            &raw_request(&s, "POST", path, &format!("{json_type}Origin: {origin}\r\n"), doc),
        );
        assert_eq!(r.status, 403, "{origin}: {}", r.body);
        assert_eq!(error_code(&r.json()), "forbidden_origin", "{origin}");
    }
    let own = format!("Origin: http://127.0.0.1:{port}\r\n");
    let r = raw(
        &s,
        &raw_request(
            &s,
            "POST",
            "/v1/collections/c/search",
            &format!("{json_type}{own}"),
            r#"{"text": "a"}"#,
        ),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // DNS rebinding: a page of another name that now resolves to 127.0.0.1.
    for host in [
        format!("evil.example:{port}"),
        "evil.example".into(),
        format!("localhost.evil.example:{port}"),
        "127.0.0.1".into(),
        format!("127.0.0.1:{}", port.parse::<u32>().expect("port") + 1),
    ] {
        for request in [
            format!("GET /v1/collections HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        ] {
            let r = raw(&s, request.as_bytes());
            assert_eq!(r.status, 403, "{host}: {}", r.body);
            let v = r.json();
            assert_eq!(error_code(&v), "forbidden_host", "{host}");
            assert!(v["error"]["message"].as_str().expect("m").contains(&host), "{v}");
        }
    }
    for host in [
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        let r = raw(
            &s,
            format!("GET /v1/collections HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(r.status, 200, "{host}: {}", r.body);
    }
    // Nothing was planted; the page and its same-origin calls still work as a browser makes them.
    assert_eq!(s.call("GET", "/v1/collections/c/docs/csrf", None).0, 404);
    let r = raw(
        &s,
        format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let r = raw(
        &s,
        &raw_request(
            &s,
            "PUT",
            "/v1/collections/page",
            &format!("{json_type}{own}Accept: application/json\r\n"),
            "{}",
        ),
    );
    assert_eq!(r.status, 201, "{}", r.body);
}

/// Regression (issue 22): errors raised below the router (a bad request line, conflicting
/// Content-Length, a NUL in a header, a 100 KB URI, too many headers) came back with an empty
/// body. Every one is now JSON with its status, on a fresh connection or after a good request.
#[test]
fn errors_below_the_router_are_json() {
    let dir = tempdir("below-router");
    let s = Server::start(&dir, Limits::default());
    let host = s.authority();
    let many_headers: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("bad request line", b"GARBAGE\r\n\r\n".to_vec(), 400),
        ("bad method", format!("G(T / HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes(), 400),
        ("bad version", format!("GET / HTTP/9.9\r\nHost: {host}\r\n\r\n").into_bytes(), 400),
        (
            "conflicting Content-Length",
            format!("POST /v1/compare HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{{}}").into_bytes(),
            400,
        ),
        (
            "Content-Length not a number",
            format!("POST /v1/compare HTTP/1.1\r\nHost: {host}\r\nContent-Length: five\r\n\r\n").into_bytes(),
            400,
        ),
        ("NUL in a header", format!("GET /v1/health HTTP/1.1\r\nHost: {host}\r\nX-A: a\0b\r\n\r\n").into_bytes(), 400),
        ("bad header name", format!("GET /v1/health HTTP/1.1\r\nHost: {host}\r\nX A: b\r\n\r\n").into_bytes(), 400),
        ("100 KB URI", format!("GET /{} HTTP/1.1\r\nHost: {host}\r\n\r\n", "u".repeat(100_000)).into_bytes(), 414),
        ("150 headers", format!("GET /v1/health HTTP/1.1\r\nHost: {host}\r\n{many_headers}\r\n").into_bytes(), 431),
        ("a 600 KB header", format!("GET /v1/health HTTP/1.1\r\nHost: {host}\r\nX-Big: {}\r\n\r\n", "b".repeat(600_000)).into_bytes(), 431),
    ];
    for (what, request, status) in &cases {
        let r = raw(&s, request);
        assert_eq!(r.status, *status, "{what}: {}", r.body);
        assert_eq!(r.header("content-type"), Some("application/json"), "{what}");
        let v = r.json();
        let message = v["error"]["message"].as_str().unwrap_or_else(|| panic!("{what}: {v}"));
        assert!(!message.is_empty() && message.len() < 500, "{what}: {message}");
        // The same error after a good request on a kept-alive connection.
        let mut conn = Raw::connect(&s);
        conn.send(format!("GET /v1/health HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes());
        assert_eq!(conn.response().status, 200);
        let r = conn.send(request).response();
        assert_eq!((r.status, r.json()["error"]["code"].is_string()), (*status, true), "{what}");
    }
    // The message says what is wrong.
    let message = |i: usize| {
        raw(&s, &cases[i].1).json()["error"]["message"]
            .as_str()
            .map(str::to_string)
            .expect("message")
    };
    assert!(message(3).contains("Content-Length"), "{}", message(3));
    assert!(message(5).contains("header"), "{}", message(5));
    assert!(message(7).contains("URI"), "{}", message(7));
    assert!(message(8).contains("header"), "{}", message(8));
    // The server still answers.
    assert_eq!(s.call("GET", "/v1/health", None).0, 200);
}

/// Regression (issue 22): a 409 on creating a collection again with other settings did not say
/// which setting differed; it now names each, with the stored and the requested value.
#[test]
fn a_conflicting_create_names_each_differing_setting() {
    let dir = tempdir("conflict");
    let s = Server::start(&dir, Limits::default());
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"threshold": 0.8})).0, 201);
    let (st, v) = s.json("PUT", "/v1/collections/c", json!({"threshold": 0.5, "store_text": true}));
    assert_eq!((st, error_code(&v)), (409, "collection_exists"), "{v}");
    let m = v["error"]["message"].as_str().expect("m");
    assert!(m.contains("threshold: stored 0.8, requested 0.5"), "{m}");
    assert!(m.contains("store_text: stored false, requested true"), "{m}");
    assert!(!m.contains("method") && !m.contains("incarnation"), "only what differs: {m}");
    let (st, v) = s.json(
        "PUT",
        "/v1/collections/c",
        json!({"spec": {"minhash": {"num_perm": 64}}, "method": "both"}),
    );
    assert_eq!(st, 409, "{v}");
    let m = v["error"]["message"].as_str().expect("m");
    assert!(m.contains("spec.minhash.num_perm: stored 128, requested 64"), "{m}");
    assert!(m.contains("method: stored \"minhash\", requested \"both\""), "{m}");
    assert!(!m.contains("pipeline_id"), "{m}");
}

/// A collection takes every search option of the library's table by its name (the service
/// had no `verify`, bands and rows or LSH weights), keeps them across a restart, and refuses
/// `keep` (a batch run's option) and unknown names with the list of names.
#[test]
fn a_collection_takes_the_search_options_of_the_table() {
    let dir = tempdir("search-options");
    let s = Server::start(&dir, Limits::default());
    let (st, v) = s.json(
        "PUT",
        "/v1/collections/banded",
        json!({"threshold": 0.6, "bands": 16, "rows": 8, "verify": "estimate"}),
    );
    assert_eq!(st, 201, "{v}");
    let (st, v) = s.json("PUT", "/v1/collections/weighted", json!({"lsh_weights": [0.2, 0.8]}));
    assert_eq!(st, 201, "{v}");
    for (body, needle) in [
        (json!({"keep": "longest"}), "keep: chooses which document"),
        (json!({"thresold": 0.5}), "unknown field \"thresold\": expected one of preset, spec"),
        (json!({"verify": "exact"}), "verify: expected jaccard | cosine | hamming | estimate"),
        (json!({"bands": 16}), "bands: bands and rows are given together"),
        (json!({"lsh_weights": [0.5, 0.5], "recall": 0.9}), "lsh_weights"),
    ] {
        let (st, v) = s.json("PUT", "/v1/collections/bad", body.clone());
        assert_eq!(st, 400, "{body}: {v}");
        assert!(v["error"]["message"].as_str().expect("message").contains(needle), "{body}: {v}");
    }
    let docs = json!({"docs": [{"id": "a", "text": NEWS_A}, {"id": "b", "text": NEWS_B}]});
    assert_eq!(s.json("POST", "/v1/collections/banded/docs", docs).0, 200);
    let (_, before) = s.json("POST", "/v1/collections/banded/search", json!({"text": NEWS_A}));
    let (_, info) = s.call("GET", "/v1/collections/banded", None);
    s.stop();
    let s = Server::start(&dir, Limits::default());
    let (_, after) = s.json("POST", "/v1/collections/banded/search", json!({"text": NEWS_A}));
    assert_eq!(before, after);
    let (_, again) = s.call("GET", "/v1/collections/banded", None);
    assert_eq!(info, again);
    // The stored settings answer: the copy is found.
    assert_eq!(before["hits"][0]["id"], "a", "{before}");
}

/// Issue 20: a search below the collection's threshold found 1 of 6 stored pairs at Jaccard
/// 0.5-0.6, silently. It now scans (said: `"scanned": true`) and finds every one, or, on a
/// collection larger than --max-scan-docs, is refused naming both thresholds; a check too.
#[test]
fn a_search_below_the_collections_threshold_is_exact_or_refused() {
    let dir = tempdir("below-threshold");
    let s = Server::start(
        &dir,
        limits(|l| {
            l.max_scan_docs = 20;
        }),
    );
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"preset": "shingles"})).0, 201);
    let base: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
    // Copies of the base with k of its 60 words replaced: Jaccard of 5-shingles from 1 down.
    let docs: Vec<Value> = (0..16)
        .map(|k| {
            let mut w = base.clone();
            for (j, word) in w.iter_mut().enumerate().take(k) {
                *word = format!("x{k}y{j}");
            }
            json!({"id": format!("k{k}"), "text": w.join(" ")})
        })
        .collect();
    let (st, v) = s.json("POST", "/v1/collections/c/docs", json!({ "docs": docs }));
    assert_eq!(st, 200, "{v}");
    let query = base.join(" ");
    let (st, at) = s.json("POST", "/v1/collections/c/search", json!({"text": query, "top_k": 100}));
    assert_eq!((st, &at["scanned"]), (200, &json!(false)), "{at}");
    let (st, below) = s.json(
        "POST",
        "/v1/collections/c/search",
        json!({"text": query, "top_k": 100, "threshold": 0.3}),
    );
    assert_eq!((st, &below["scanned"]), (200, &json!(true)), "{below}");
    let sims: Vec<f64> = below["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["similarity"].as_f64().expect("similarity"))
        .collect();
    assert!(sims.iter().all(|&x| x >= 0.3), "{below}");
    let between = sims.iter().filter(|&&x| (0.3..0.8).contains(&x)).count();
    assert!(between >= 4, "the pairs between the two thresholds are found: {below}");
    assert!(sims.len() > at["hits"].as_array().expect("hits").len());

    // Past --max-scan-docs: refused by name, never answered from the index in part.
    let more: Vec<Value> = (0..10)
        .map(|i| json!({"id": format!("o{i}"), "text": format!("other page {i} about trains and timetables")}))
        .collect();
    assert_eq!(s.json("POST", "/v1/collections/c/docs", json!({ "docs": more })).0, 200);
    for (route, body) in [
        ("search", json!({"text": query, "threshold": 0.5})),
        ("check", json!({"id": "q", "text": query, "threshold": 0.5})),
    ] {
        let (st, v) = s.json("POST", &format!("/v1/collections/c/{route}"), body);
        assert_eq!((st, error_code(&v)), (400, "threshold_below_collection"), "{route}: {v}");
        let m = v["error"]["message"].as_str().expect("message");
        assert!(m.contains("threshold 0.5 is below this index's threshold 0.8"), "{m}");
        assert!(m.contains("(this index holds 26)"), "{m}");
    }
    assert_eq!(
        s.call("GET", "/v1/collections/c/docs/q", None).0,
        404,
        "the refused check stored nothing"
    );
}

/// Issue 20, the crawler's API: a batch of checks is decided in order (a page near an earlier
/// one of the same batch is its duplicate) and answered in order; a re-check or re-insert sent
/// without metadata keeps the stored metadata; matches carry their metadata; `/metrics` has
/// latency histograms by route and counts the duplicates found.
#[test]
fn batch_checks_keep_metadata_and_are_counted() {
    let dir = tempdir("crawler-api");
    let s = Server::start(
        &dir,
        limits(|l| {
            l.max_batch_docs = 5;
        }),
    );
    assert_eq!(s.json("PUT", "/v1/collections/crawl", json!({"preset": "shingles"})).0, 201);
    let page = |n: usize, tweak: &str| {
        let words: Vec<String> = (0..40).map(|i| format!("p{n}w{i}")).collect();
        format!("{} {tweak}", words.join(" "))
    };
    let (st, v) = s.json(
        "POST",
        "/v1/collections/crawl/docs",
        json!({"docs": [{"id": "stored", "text": page(1, ""), "metadata": {"url": "https://a/1", "fetched": 1}}]}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, v) = s.json(
        "POST",
        "/v1/collections/crawl/check",
        json!({"docs": [
            {"id": "n1", "text": page(2, ""), "metadata": {"url": "https://b/2"}},
            {"id": "n2", "text": page(1, "again"), "metadata": {"url": "https://a/1?ref=x"}},
            {"id": "n3", "text": page(2, "copy"), "metadata": {"url": "https://b/2#top"}},
            {"id": "n4", "text": page(3, ""), "insert": false},
        ]}),
    );
    assert_eq!(st, 200, "{v}");
    let results = v["results"].as_array().expect("results in order");
    let decided: Vec<(bool, bool)> = results
        .iter()
        .map(|r| (r["duplicate"].as_bool().expect("b"), r["inserted"].as_bool().expect("b")))
        .collect();
    assert_eq!(decided, [(false, true), (true, false), (true, false), (false, false)], "{v}");
    // Matches carry metadata: a stored document's, and one accepted earlier in the batch.
    assert_eq!(results[1]["matches"][0]["id"], "stored");
    assert_eq!(results[1]["matches"][0]["metadata"], json!({"url": "https://a/1", "fetched": 1}));
    assert_eq!(results[2]["matches"][0]["id"], "n1");
    assert_eq!(results[2]["matches"][0]["metadata"], json!({"url": "https://b/2"}));
    assert_eq!(s.call("GET", "/v1/collections/crawl/docs/n4", None).0, 404);

    // Re-checked and re-inserted without metadata: the stored metadata stays.
    let (st, v) = s.json(
        "POST",
        "/v1/collections/crawl/check",
        json!({"id": "n1", "text": page(9, "changed page")}),
    );
    assert_eq!((st, &v["inserted"], &v["replaced"]), (200, &json!(true), &json!(true)), "{v}");
    let (_, doc) = s.call("GET", "/v1/collections/crawl/docs/n1", None);
    assert_eq!(doc["metadata"], json!({"url": "https://b/2"}), "{doc}");
    let docs = json!({"docs": [{"id": "stored", "text": page(1, "refetched")}]});
    assert_eq!(s.json("POST", "/v1/collections/crawl/docs", docs).0, 200);
    let (_, doc) = s.call("GET", "/v1/collections/crawl/docs/stored", None);
    assert_eq!(doc["metadata"], json!({"url": "https://a/1", "fetched": 1}), "{doc}");
    // Metadata given replaces it.
    let docs = json!({"docs": [{"id": "stored", "text": page(1, ""), "metadata": {"fetched": 2}}]});
    assert_eq!(s.json("POST", "/v1/collections/crawl/docs", docs).0, 200);
    let (_, doc) = s.call("GET", "/v1/collections/crawl/docs/stored", None);
    assert_eq!(doc["metadata"], json!({"fetched": 2}));

    // A batch over --max-batch-docs is refused whole.
    let big: Vec<Value> =
        (0..6).map(|i| json!({"id": format!("b{i}"), "text": page(20 + i, "")})).collect();
    let (st, v) = s.json("POST", "/v1/collections/crawl/check", json!({ "docs": big }));
    assert_eq!((st, error_code(&v)), (413, "batch_too_large"), "{v}");

    let (_, m) = s.call("GET", "/metrics", None);
    let text = m.as_str().expect("text");
    for line in [
        "neardup_checks_total{collection=\"crawl\",outcome=\"duplicate\"} 2",
        "neardup_checks_total{collection=\"crawl\",outcome=\"inserted\"} 2",
        "neardup_checks_total{collection=\"crawl\",outcome=\"new\"} 1",
        "neardup_request_duration_seconds_count{method=\"POST\",route=\"/v1/collections/{name}/check\"} 3",
        "neardup_request_duration_seconds_bucket{method=\"POST\",route=\"/v1/collections/{name}/check\",le=\"+Inf\"} 3",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

/// Regression (sweep 3): 200 stored copies with 65 KB of metadata, then one batch check of 250
/// documents with `top_k` 200 asked for an answer of 3 GB and aborted the server. Now a request
/// is admitted by what it may need, reckoned from its size, within `--max-memory-mb`.
#[test]
fn a_check_whose_answer_could_exceed_the_memory_budget_is_refused_and_the_server_lives() {
    let dir = tempdir("memory-budget");
    let s = Server::start(
        &dir,
        limits(|l| {
            l.max_memory_bytes = 32 << 20;
            l.max_metadata_bytes = 70000;
        }),
    );
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"preset": "default"})).0, 201);
    let meta = json!({"blob": "m".repeat(60_000)});
    let docs: Vec<Value> = (0..30)
        .map(|i| json!({"id": i, "text": format!("{NEWS_A} {i}"), "metadata": meta}))
        .collect();
    assert_eq!(s.json("POST", "/v1/collections/c/docs", json!({ "docs": docs })).0, 200);
    let batch = |n: usize| -> Vec<Value> {
        (0..n).map(|i| json!({"id": format!("q{i}"), "text": NEWS_B})).collect()
    };
    // 60 documents x top_k 50 x 60 KB: 180 MB may be needed, over the 32 MiB budget.
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"docs": batch(60), "insert": false, "top_k": 50}),
    );
    assert_eq!((st, error_code(&v)), (413, "request_too_large"), "{v}");
    let m = v["error"]["message"].as_str().expect("message");
    assert!(m.contains("--max-memory-mb") && m.contains("32 MiB"), "{m}");
    // What fits is answered, matches with their metadata.
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"docs": batch(4), "insert": false, "top_k": 5}),
    );
    assert_eq!(st, 200);
    assert_eq!(v["results"][0]["matches"].as_array().map(Vec::len), Some(5));
    assert!(v["results"][0]["matches"][0]["metadata"] == meta);
    // A search is admitted the same way: 1,000 matches of 60 KB, 60 MB.
    let (st, v) =
        s.json("POST", "/v1/collections/c/search", json!({"text": NEWS_B, "top_k": 1000}));
    assert_eq!(st, 413);
    assert_eq!(error_code(&v), "request_too_large");
    assert_eq!(s.call("GET", "/v1/health", None).0, 200);
}

/// What GET gives, PUT accepts (issue 34): a collection's `settings` are its creation body in
/// the option table's words, and sent back they find it created with them (200, not 409);
/// `passages` is described by the options PUT takes (`seed_units`, `keep_quotes`), not the
/// stored spec's fields (`seed`, `exclude_quotes`), which PUT refused.
#[test]
fn a_collections_settings_from_get_are_accepted_by_put() {
    let dir = tempdir("get-put");
    let s = Server::start(&dir, Limits::default());
    let bodies = [
        json!({}),
        json!({"preset": "zh-news", "threshold": 0.7, "recall": 0.95}),
        json!({"hamming": 4}),
        json!({"method": "both", "hamming": 5, "bands": 8, "rows": 16, "verify": "cosine"}),
        json!({"lsh_weights": [0.3, 0.7], "store_text": true}),
        json!({"passages": {"min_units": 20, "seed_units": 4, "keep_quotes": true}}),
    ];
    for (i, body) in bodies.iter().enumerate() {
        let path = format!("/v1/collections/c{i}");
        assert_eq!(s.json("PUT", &path, body.clone()).0, 201, "{body}");
        let (_, got) = s.call("GET", &path, None);
        let settings = got["settings"].clone();
        assert!(settings.is_object(), "{got}");
        let (st, again) = s.json("PUT", &path, settings.clone());
        assert_eq!(st, 200, "{body} gave {settings}, and PUT said {again}");
        // Under another name it creates the same collection.
        let (st, copy) = s.json("PUT", &format!("/v1/collections/copy{i}"), settings.clone());
        assert_eq!(st, 201, "{copy}");
        assert_eq!(copy["settings"], settings);
        assert_eq!(copy["pipeline_id"], got["pipeline_id"]);
    }
    let (_, got) = s.call("GET", "/v1/collections/c5", None);
    let p = &got["passages"];
    assert_eq!(
        (&p["min_units"], &p["seed_units"], &p["keep_quotes"]),
        (&json!(20), &json!(4), &json!(true))
    );
    assert!(p.get("seed").is_none() && p.get("exclude_quotes").is_none(), "{p}");
}

/// Each value of a search or check is checked by the library: a threshold outside (0, 1] is
/// refused naming it, whichever route sends it.
#[test]
fn a_query_threshold_outside_0_1_is_refused_by_name() {
    let dir = tempdir("query-threshold");
    let s = Server::start(&dir, Limits::default());
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    for (route, body) in [
        ("search", json!({"text": NEWS_A, "threshold": 1.5})),
        ("check", json!({"id": "a", "text": NEWS_A, "threshold": 0})),
        ("check", json!({"docs": [{"id": "a", "text": NEWS_A}], "threshold": -0.2})),
    ] {
        let (st, v) = s.json("POST", &format!("/v1/collections/c/{route}"), body);
        assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{v}");
        let m = v["error"]["message"].as_str().expect("message");
        assert!(m.starts_with("threshold: expected a number in (0, 1]"), "{m}");
    }
}

/// Regression (sweep 3, a variant): the answer was reckoned with the largest metadata already
/// stored, so one batch into an empty collection that stores large metadata and matches it
/// many times was admitted for a fraction of its answer (1,000 documents of 64 KB and 600
/// copies with `top_k` 600: 620 MB reckoned, 23 GB answered). What a request brings to store
/// counts from before it is admitted.
#[test]
fn a_batch_that_stores_large_metadata_and_matches_it_is_admitted_for_its_whole_answer() {
    let dir = tempdir("memory-own-metadata");
    let s = Server::start(
        &dir,
        limits(|l| {
            l.max_memory_bytes = 32 << 20;
            l.max_metadata_bytes = 70000;
        }),
    );
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"preset": "default"})).0, 201);
    let meta = json!({"blob": "m".repeat(60_000)});
    // 30 documents stored with 60 KB each, then 30 copies of them with top_k 50: 60 answers
    // of up to 50 matches of 60 KB, 180 MB, over the 32 MiB budget (the collection held
    // metadata of 4 bytes when the request came).
    let docs: Vec<Value> = (0..60)
        .map(|i| {
            let text = if i < 30 { format!("{NEWS_A} {i}") } else { NEWS_B.to_string() };
            json!({"id": i, "text": text, "metadata": meta})
        })
        .collect();
    let (st, v) = s.json("POST", "/v1/collections/c/check", json!({"docs": docs, "top_k": 50}));
    assert_eq!((st, error_code(&v)), (413, "request_too_large"), "{v}");
    // Nothing of the refused batch was stored; a batch that fits is answered with its matches'
    // metadata.
    let (_, v) = s.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(0), "{v}");
    let docs: Vec<Value> = (0..4)
        .map(|i| json!({"id": i, "text": format!("{NEWS_A} {i}"), "metadata": meta}))
        .collect();
    let (st, v) = s.json("POST", "/v1/collections/c/check", json!({"docs": docs, "top_k": 3}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["results"][3]["matches"][0]["metadata"], meta, "{v}");
    assert_eq!(s.call("GET", "/v1/health", None).0, 200);
}

/// The passage check is admitted by the length of its text (the library's alignment memory
/// grows with it): too long for the whole budget is 413 at once, naming the budget and the way
/// out; while another check holds the memory and the queue is full, 503 with `Retry-After`.
#[test]
fn a_passage_check_is_admitted_by_the_memory_its_text_may_take() {
    let dir = tempdir("memory-overlap");
    let s = Arc::new(Server::start(
        &dir,
        limits(|l| {
            l.max_memory_bytes = 24 << 20;
            l.max_queued = 1;
            l.max_doc_bytes = 4000000;
        }),
    ));
    assert_eq!(s.json("PUT", "/v1/collections/lib", json!({"passages": true})).0, 201);
    let mut seed = 11u64;
    let mut words = |n: usize| -> String {
        (0..n)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                format!("w{}x", (seed >> 33) % 50)
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let docs: Vec<Value> = (0..40).map(|i| json!({"id": i, "text": words(20_000)})).collect();
    assert_eq!(s.json("POST", "/v1/collections/lib/docs", json!({ "docs": docs })).0, 200);
    // 36 bytes a byte: a 1 MB text may take 36 MB, over the whole 24 MiB.
    let (st, v) = s.json("POST", "/v1/collections/lib/overlap", json!({"text": words(200_000)}));
    assert_eq!((st, error_code(&v)), (413, "request_too_large"), "{v}");
    let m = v["error"]["message"].as_str().expect("message");
    assert!(m.contains("--max-memory-mb") && m.contains("send a shorter text"), "{m}");
    // A 400 KB check (about 15 MB) takes most of the budget while it runs: of five sent at
    // once, one runs, one waits in the queue of one, and the others are refused, to retry.
    let long = Arc::new(words(80_000));
    let sent: Vec<_> = (0..5)
        .map(|i| {
            let (s, text) = (s.clone(), long.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30 * i));
                s.json("POST", "/v1/collections/lib/overlap", json!({ "text": *text }))
            })
        })
        .collect();
    let answers: Vec<(u16, Value)> = sent.into_iter().map(|t| t.join().expect("thread")).collect();
    let statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert!(statuses.iter().all(|&st| st == 200 || st == 503), "{statuses:?}");
    assert!(statuses.iter().filter(|&&st| st == 200).count() >= 2, "{statuses:?}");
    let (_, v) = answers.iter().find(|a| a.0 == 503).expect("some were refused");
    assert_eq!(error_code(v), "busy", "{v}");
    let m = v["error"]["message"].as_str().expect("message");
    assert!(m.contains("--max-memory-mb") && m.contains("retry later"), "{m}");
}

/// Regression (sweep 3): metadata came back re-serialized (`1.10` as `1.1`, a 30-digit integer
/// as `1.2345678901234568e+29`). What a client stores is what it gets back, byte for byte.
#[test]
fn metadata_comes_back_byte_for_byte() {
    let dir = tempdir("raw-metadata");
    let s = Server::start(&dir, Limits::default());
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"preset": "default"})).0, 201);
    let meta = r#"{"price": 1.10, "n": 123456789012345678901234567890, "z": 1e5, "a": [ 1 ]}"#;
    let body = format!(
        r#"{{"docs": [{{"id": "a", "text": {}, "metadata": {meta}}}]}}"#,
        serde_json::to_string(NEWS_A).expect("json")
    );
    assert_eq!(s.text("POST", "/v1/collections/c/docs", &body).0, 200);
    let (st, got) = s.text("GET", "/v1/collections/c/docs/a", "");
    assert!(st == 200 && got.contains(meta), "{got}");
    let q = json!({"text": NEWS_B}).to_string();
    let (st, got) = s.text("POST", "/v1/collections/c/search", &q);
    assert!(st == 200 && got.contains(meta), "{got}");
    let q = json!({"id": "b", "text": NEWS_B, "insert": false}).to_string();
    let (st, got) = s.text("POST", "/v1/collections/c/check", &q);
    assert!(st == 200 && got.contains(meta), "{got}");
    // Checked in and stored by a check, too.
    let body = format!(
        r#"{{"id": "c", "text": "something else entirely, about trains", "metadata": {meta}}}"#
    );
    assert_eq!(s.text("POST", "/v1/collections/c/check", &body).0, 200);
    let (_, got) = s.text("GET", "/v1/collections/c/docs/c", "");
    assert!(got.contains(meta), "{got}");
}

/// Regression (sweep 3): a batch check below the collection's threshold verified the whole
/// collection once per document under the writer lock (200 x 50,000 took 21-34 s, an insert
/// waiting throughout); `--max-scan-docs` is now the budget of a request.
#[test]
fn a_batch_check_below_the_threshold_has_one_scan_budget() {
    let dir = tempdir("scan-budget");
    let s = Server::start(
        &dir,
        limits(|l| {
            l.max_scan_docs = 100;
        }),
    );
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"preset": "default"})).0, 201);
    let docs: Vec<Value> =
        (0..20).map(|i| json!({"id": i, "text": format!("{NEWS_A} {i}")})).collect();
    assert_eq!(s.json("POST", "/v1/collections/c/docs", json!({ "docs": docs })).0, 200);
    let batch = |n: usize| -> Vec<Value> {
        (0..n).map(|i| json!({"id": format!("q{i}"), "text": NEWS_B})).collect()
    };
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"docs": batch(6), "insert": false, "threshold": 0.3}),
    );
    assert_eq!((st, error_code(&v)), (400, "threshold_below_collection"), "{v}");
    let m = v["error"]["message"].as_str().expect("message");
    assert!(m.contains("120 verifications") && m.contains("--max-scan-docs"), "{m}");
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"docs": batch(5), "insert": false, "threshold": 0.3}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["results"][4]["duplicate"], json!(true), "{v}");
}

/// Regression (sweep 3): a slow passage check held the collection's read lock, and a write
/// waited behind it (8.6 s behind one 10 s check). The check now runs on a snapshot.
#[test]
fn writes_do_not_wait_for_a_long_passage_check() {
    let dir = tempdir("overlap-snapshot");
    let s = Arc::new(Server::start(&dir, Limits::default()));
    assert_eq!(s.json("PUT", "/v1/collections/lib", json!({"passages": true})).0, 201);
    // Texts over a 50-word vocabulary: every k-gram is everywhere, the slowest kind to check.
    let mut seed = 7u64;
    let mut words = |n: usize| -> String {
        (0..n)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                format!("w{}x", (seed >> 33) % 50)
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let docs: Vec<Value> = (0..40).map(|i| json!({"id": i, "text": words(20_000)})).collect();
    assert_eq!(s.json("POST", "/v1/collections/lib/docs", json!({ "docs": docs })).0, 200);
    let long = words(1_200_000);
    let finished = Arc::new(Mutex::new(Vec::new()));
    let (s2, f2) = (s.clone(), finished.clone());
    let check = std::thread::spawn(move || {
        let (st, v) = s2.json("POST", "/v1/collections/lib/overlap", json!({ "text": long }));
        f2.lock().expect("lock").push("overlap");
        (st, v)
    });
    std::thread::sleep(Duration::from_millis(500));
    let (st, v) = s.json(
        "POST",
        "/v1/collections/lib/docs",
        json!({"docs": [{"id": "new", "text": "a new document about trains and stations"}]}),
    );
    finished.lock().expect("lock").push("insert");
    assert_eq!(st, 200, "{v}");
    let (st, v) = check.join().expect("thread");
    assert_eq!(st, 200, "{v}");
    assert_eq!(*finished.lock().expect("lock"), ["insert", "overlap"], "the insert waited");
}

/// Regression (sweep 3): `/metrics` kept the series of deleted collections (1,000 cycles:
/// 3,000 series, growing).
#[test]
fn metrics_forget_deleted_collections() {
    let dir = tempdir("metrics-forget");
    let s = Server::start(&dir, Limits::default());
    for i in 0..5 {
        let name = format!("/v1/collections/tmp{i}");
        assert_eq!(s.json("PUT", &name, json!({"preset": "default"})).0, 201);
        let check = json!({"id": "a", "text": NEWS_A});
        assert_eq!(s.json("POST", &format!("{name}/check"), check).0, 200);
        assert_eq!(s.call("DELETE", &name, None).0, 200);
    }
    assert_eq!(s.json("PUT", "/v1/collections/kept", json!({"preset": "default"})).0, 201);
    assert_eq!(
        s.json("POST", "/v1/collections/kept/check", json!({"id": 1, "text": NEWS_A})).0,
        200
    );
    let (_, m) = s.text("GET", "/metrics", "");
    assert!(!m.contains("collection=\"tmp"), "{m}");
    assert!(m.contains("neardup_checks_total{collection=\"kept\",outcome=\"inserted\"} 1"), "{m}");
}

#[test]
fn the_service_credits_a_copy_converted_to_traditional_script() {
    let dir = tempdir("overlap-zh-script");
    let s = Server::start(&dir, Limits::default());
    let source = "开源软件的发展离不开社区的贡献。他们打包、测试并发布数以万计的软件包。\
                  每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。";
    let copied = "他們打包、測試並發佈數以萬計的軟件包。每個軟件包都有維護者負責跟進上游版本、\
                  修復缺陷並回應用戶的報告。";
    for (name, passages) in [("folded", json!(true)), ("kept", json!({"zh_script": "keep"}))] {
        let (st, v) =
            s.json("PUT", &format!("/v1/collections/{name}"), json!({"passages": passages}));
        assert_eq!(st, 201, "{v}");
        let (st, v) = s.json(
            "POST",
            &format!("/v1/collections/{name}/docs"),
            json!({"docs": [{"id": "src", "text": source}]}),
        );
        assert_eq!(st, 200, "{v}");
    }
    let query = format!("本文先说自己的想法。{copied}以上是我的总结。");
    let copied_chars = |name: &str| {
        let (st, v) =
            s.json("POST", &format!("/v1/collections/{name}/overlap"), json!({"text": query}));
        assert_eq!(st, 200, "{v}");
        v["copied_chars"].as_u64().expect("copied_chars") as f64
    };
    let n = copied.chars().count() as f64;
    assert!(copied_chars("folded") >= 0.9 * n);
    assert!(copied_chars("kept") < 0.9 * n);
}

/// A body of the wrong shape is answered in the client's words: what to send, never the name
/// of a Rust type (serde's `expecting` on each request, no rewriting of its messages).
#[test]
fn a_body_of_the_wrong_shape_says_what_to_send() {
    let dir = tempdir("wrong-shape");
    let s = Server::start(&dir, Limits::default());
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"store_text": true})).0, 201);
    assert_eq!(s.json("PUT", "/v1/collections/p", json!({"passages": true})).0, 201);
    for (path, body, says) in [
        ("/v1/collections/c/docs", json!("x"), "expected an object {\"docs\": [...]}"),
        ("/v1/collections/c/docs", json!({"docs": [5]}), "expected a document object"),
        ("/v1/collections/c/search", json!([1]), "expected an object"),
        ("/v1/collections/c/check", json!(true), "expected an object"),
        ("/v1/collections/c/check", json!({"docs": [[1]]}), "expected a document object"),
        // serde reads a struct from an array, field by field: an array is refused, not read so.
        ("/v1/collections/c/search", json!(["some text", 5]), "expected an object"),
        ("/v1/collections/c/docs", json!({"docs": [["7", "text"]]}), "expected a document object"),
        ("/v1/collections/p/overlap", json!("x"), "expected an object {\"text\"}"),
        ("/v1/compare", json!([]), "expected an object {\"a\", \"b\"}"),
    ] {
        let (status, v) = s.json("POST", path, body.clone());
        assert_eq!(status, 400, "{path} {body}: {v}");
        let message = v["error"]["message"].as_str().expect("a message");
        assert!(message.contains(says), "{path} {body}: {message}");
        assert!(!message.contains("struct"), "{path} {body}: {message}");
    }
}

/// Two servers on one PostgreSQL database answer as one: a collection created through one is
/// found through the other, a document written through one is found through the other at once
/// (read-your-write), a delete through one holds for both, and a collection deleted through one
/// is gone from both.
#[test]
fn two_servers_on_one_database_answer_as_one() {
    let url = support::pg::cluster().database("two_servers_answer_as_one");
    let (a, b) = (Server::on_store(&url), Server::on_store(&url));
    assert_eq!(a.json("PUT", "/v1/collections/c", json!({"store_text": true})).0, 201);
    let (st, v) = b.call("GET", "/v1/collections/c", None);
    assert_eq!((st, &v["documents"]), (200, &json!(0)), "{v}");
    // The same settings through the other server: found, not created again.
    assert_eq!(b.json("PUT", "/v1/collections/c", json!({"store_text": true})).0, 200);
    for i in 0..20 {
        let (s, t) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let id = format!("d{i}");
        let text = doc_text(&id);
        let (st, v) =
            s.json("POST", "/v1/collections/c/docs", json!({"docs": [{"id": id, "text": text}]}));
        assert_eq!(st, 200, "{v}");
        // At once through the other server: by search, by id, and as the match of a check.
        let (st, v) = t.json("POST", "/v1/collections/c/search", json!({"text": text}));
        assert_eq!((st, &v["hits"][0]["id"]), (200, &json!(id)), "{v}");
        assert_eq!(t.call("GET", &format!("/v1/collections/c/docs/{id}"), None).0, 200);
        let (_, v) =
            t.json("POST", "/v1/collections/c/check", json!({"text": text, "insert": false}));
        assert_eq!((&v["duplicate"], &v["matches"][0]["id"]), (&json!(true), &json!(id)), "{v}");
    }
    let (_, v) = a.call("GET", "/v1/collections", None);
    assert_eq!(v["collections"][0]["documents"], json!(20), "{v}");
    let (_, v) = b.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(20), "{v}");
    // A delete through one holds for both.
    assert_eq!(b.call("DELETE", "/v1/collections/c/docs/d0", None).0, 200);
    let (_, v) = a.json("POST", "/v1/collections/c/search", json!({"text": doc_text("d0")}));
    assert_eq!(v["hits"], json!([]), "{v}");
    assert_eq!(a.call("GET", "/v1/collections/c/docs/d0", None).0, 404);
    // The passage check and the count see the other server's writes too.
    let (_, v) = a.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(19), "{v}");
    // A collection deleted through one is gone from both.
    assert_eq!(a.call("DELETE", "/v1/collections/c", None).0, 200);
    let (st, v) = b.json("POST", "/v1/collections/c/search", json!({"text": doc_text("d1")}));
    assert_eq!((st, error_code(&v)), (404, "collection_not_found"), "{v}");
    let (_, v) = b.call("GET", "/v1/collections", None);
    assert_eq!(v["collections"], json!([]), "{v}");
    // And made again through the other, it is a new collection for both.
    assert_eq!(b.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let (st, v) = a.call("GET", "/v1/collections/c", None);
    assert_eq!((st, &v["documents"]), (200, &json!(0)), "{v}");
    let (st, v) = a.json(
        "POST",
        "/v1/collections/c/docs",
        json!({"docs": [{"id": "x", "text": "a b c d e f"}]}),
    );
    assert_eq!(st, 200, "{v}");
    // The same collection created through both at once: one creates it, the other finds it
    // (200) or is told it was created meanwhile (409); never an error of the server.
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    for i in 0..10 {
        let path = format!("/v1/collections/race{i}");
        let (a2, p2) = (a.clone(), path.clone());
        let first = std::thread::spawn(move || a2.json("PUT", &p2, json!({})).0);
        let second = b.json("PUT", &path, json!({})).0;
        let mut both = [first.join().expect("client"), second];
        both.sort_unstable();
        assert!(both == [200, 201] || both == [201, 409], "{path}: {both:?}");
    }
}

/// The tables' versions: a database of schema 1 (no candidate index in it) is migrated when a
/// server opens it, its documents indexed in the database and found as before; one of a newer
/// schema is refused by name. A server on PostgreSQL holds no document in memory, so what it
/// finds comes from the database's index.
#[test]
fn a_schema_1_database_is_migrated_and_a_newer_one_refused() {
    let db = "schema_1_migrated";
    let cluster = support::pg::cluster();
    let url = cluster.database(db);
    let ids: Vec<String> = (0..60).map(|i| format!("m{i}")).collect();
    let s = Server::on_store(&url);
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let docs: Vec<Value> = ids.iter().map(|id| json!({"id": id, "text": doc_text(id)})).collect();
    assert_eq!(s.json("POST", "/v1/collections/c/docs", json!({ "docs": docs })).0, 200);
    s.stop();
    let bands: u64 =
        cluster.sql(db, "SELECT count(*) FROM neardup_bands").trim().parse().expect("a count");
    assert_eq!(bands, 60 * 16, "16 band rows per document (the default banding)");
    // Back to schema 1's tables, as a build of that schema left them: versions, no index, no
    // counts.
    cluster.sql(
        db,
        "DROP TABLE neardup_bands;
         DROP TABLE neardup_counts;
         ALTER TABLE neardup_docs DROP COLUMN seq, DROP COLUMN keys,
             ADD COLUMN version bigint NOT NULL DEFAULT 1;
         ALTER TABLE neardup_collections ADD COLUMN version bigint NOT NULL DEFAULT 1;
         CREATE TABLE neardup_removed (docs text NOT NULL, id bytea NOT NULL,
             version bigint NOT NULL, PRIMARY KEY (docs, id));
         DROP SEQUENCE neardup_seq;
         UPDATE neardup_meta SET value = 1 WHERE key = 'schema';",
    );
    let s = Server::on_store(&url);
    for id in &ids {
        let (st, v) = s.json("POST", "/v1/collections/c/search", json!({"text": doc_text(id)}));
        assert_eq!((st, &v["hits"][0]["id"]), (200, &json!(id)), "{v}");
    }
    let (_, v) = s.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(60), "{v}");
    s.stop();
    let schema = cluster.sql(db, "SELECT value FROM neardup_meta WHERE key = 'schema'");
    assert_eq!(schema.trim(), "4");
    let left = cluster.sql(db, "SELECT count(*) FROM neardup_docs WHERE keys IS NULL");
    assert_eq!(left.trim(), "0", "every document indexed");
    let bands_now = cluster.sql(db, "SELECT count(*) FROM neardup_bands");
    assert_eq!(bands_now.trim(), bands.to_string());
    // A newer schema: refused, naming it.
    cluster.sql(db, "UPDATE neardup_meta SET value = 99 WHERE key = 'schema'");
    let config = neardup_server::Config {
        data_dir: std::path::PathBuf::new(),
        store: Some(url.clone()),
        token: None,
        limits: neardup_server::Limits::default(),
    };
    let e = neardup_server::open(config).expect_err("a newer schema is refused");
    let m = e.to_string();
    assert!(m.contains("schema is version 99, made by a newer neardup"), "{m}");
}

/// The candidate index in the database follows the documents: an upsert with another text is
/// found by its new text and no longer by its old one, a removed document by neither, and the
/// band rows are exactly those of the documents stored (16 each), none left by a deleted
/// collection. Two collections holding the same texts never find each other's documents.
#[test]
fn the_band_rows_in_the_database_follow_the_documents() {
    let db = "band_rows_follow";
    let cluster = support::pg::cluster();
    let s = Server::on_store(&cluster.database(db));
    for c in ["c", "twin"] {
        assert_eq!(s.json("PUT", &format!("/v1/collections/{c}"), json!({})).0, 201);
        let docs: Vec<Value> = (0..10)
            .map(|i| json!({"id": format!("d{i}"), "text": doc_text(&format!("d{i}"))}))
            .collect();
        let path = format!("/v1/collections/{c}/docs");
        assert_eq!(s.json("POST", &path, json!({ "docs": docs })).0, 200);
    }
    let rows = || -> u64 {
        cluster.sql(db, "SELECT count(*) FROM neardup_bands").trim().parse().expect("a count")
    };
    assert_eq!(rows(), 2 * 10 * 16);
    // d0..d4 take the texts of e0..e4 (upserts, one by a check); d8, d9 are removed.
    let moved: Vec<Value> = (0..4)
        .map(|i| json!({"id": format!("d{i}"), "text": doc_text(&format!("e{i}"))}))
        .collect();
    assert_eq!(s.json("POST", "/v1/collections/c/docs", json!({ "docs": moved })).0, 200);
    let (_, v) =
        s.json("POST", "/v1/collections/c/check", json!({"id": "d4", "text": doc_text("e4")}));
    assert_eq!((&v["inserted"], &v["replaced"]), (&json!(true), &json!(true)), "{v}");
    for id in ["d8", "d9"] {
        assert_eq!(s.call("DELETE", &format!("/v1/collections/c/docs/{id}"), None).0, 200);
    }
    for i in 0..10 {
        let (_, old) =
            s.json("POST", "/v1/collections/c/search", json!({"text": doc_text(&format!("d{i}"))}));
        let want = if (5..8).contains(&i) { json!([format!("d{i}")]) } else { json!([]) };
        let got: Vec<&Value> =
            old["hits"].as_array().expect("hits").iter().map(|h| &h["id"]).collect();
        assert_eq!(json!(got), want, "d{i}'s old text: {old}");
    }
    for i in 0..5 {
        let (_, new) =
            s.json("POST", "/v1/collections/c/search", json!({"text": doc_text(&format!("e{i}"))}));
        assert_eq!(new["hits"][0]["id"], json!(format!("d{i}")), "{new}");
    }
    let (_, v) = s.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(8), "{v}");
    assert_eq!(rows(), (8 + 10) * 16);
    assert_eq!(s.call("DELETE", "/v1/collections/c", None).0, 200);
    assert_eq!(rows(), 10 * 16, "the deleted collection's rows are gone, its twin's kept");
    let (_, v) = s.json("POST", "/v1/collections/twin/search", json!({"text": doc_text("d9")}));
    assert_eq!(v["hits"][0]["id"], json!("d9"), "{v}");
}

/// A scan below the threshold is admitted by the database's count of the collection, not by
/// what this server counted when it last looked: documents another server wrote since count.
#[test]
fn a_scan_is_admitted_by_the_databases_count_not_an_old_one() {
    let url = support::pg::cluster().database("scan_by_database_count");
    let a = Server::on_store(&url);
    let b = Server::on_store_with(&url, limits(|l| l.max_scan_docs = 20));
    assert_eq!(a.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let (_, v) = b.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(0), "{v}");
    let docs: Vec<Value> = (0..30)
        .map(|i| json!({"id": format!("d{i}"), "text": doc_text(&format!("d{i}"))}))
        .collect();
    assert_eq!(a.json("POST", "/v1/collections/c/docs", json!({ "docs": docs })).0, 200);
    for (route, body) in [
        ("search", json!({"text": doc_text("d1"), "threshold": 0.5})),
        ("check", json!({"id": "q", "text": doc_text("d1"), "threshold": 0.5})),
    ] {
        let (st, v) = b.json("POST", &format!("/v1/collections/c/{route}"), body);
        assert_eq!((st, error_code(&v)), (400, "threshold_below_collection"), "{route}: {v}");
    }
}

/// Exactly once across servers: 200 pairs of near-copies, the two copies of each pair checked
/// at the same moment, one through each of two servers on one database. Of each pair exactly
/// one is inserted and the other is answered as its duplicate; the database holds one of each.
#[test]
fn near_copies_checked_at_once_through_two_servers_are_inserted_once() {
    let url = support::pg::cluster().database("two_servers_check_once");
    let servers = std::sync::Arc::new([Server::on_store(&url), Server::on_store(&url)]);
    // Every time: rounds on new collections, made through either server.
    for round in 0..3 {
        let collection = format!("c{round}");
        let made =
            servers[round % 2].json("PUT", &format!("/v1/collections/{collection}"), json!({}));
        assert_eq!(made.0, 201);
        checked_once_through_both(&servers, &collection);
    }
    let sql = "SELECT count(*) FROM neardup_docs";
    assert_eq!(support::pg::cluster().sql("two_servers_check_once", sql).trim(), "600");
}

/// One round of [`near_copies_checked_at_once_through_two_servers_are_inserted_once`].
fn checked_once_through_both(servers: &std::sync::Arc<[Server; 2]>, collection: &str) {
    const PAIRS: usize = 200;
    const CLIENTS: usize = 4; // per server
    let text = |pair: usize, copy: usize| {
        let base = doc_text(&format!("pair {pair} of the crawl"));
        if copy == 0 {
            base
        } else {
            format!("{base} again")
        }
    };
    let route = format!("/v1/collections/{collection}/check");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2 * CLIENTS));
    let threads: Vec<_> = (0..2 * CLIENTS)
        .map(|t| {
            let (servers, barrier, route) = (servers.clone(), barrier.clone(), route.clone());
            std::thread::spawn(move || {
                let (copy, client) = (t % 2, t / 2);
                let s = &servers[copy];
                barrier.wait();
                (0..PAIRS)
                    .filter(|pair| pair % CLIENTS == client)
                    .map(|pair| {
                        let id = format!("p{pair}-c{copy}");
                        let (st, v) =
                            s.json("POST", &route, json!({"id": id, "text": text(pair, copy)}));
                        assert_eq!(st, 200, "{v}");
                        (pair, id, v)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let answers: Vec<(usize, String, Value)> =
        threads.into_iter().flat_map(|t| t.join().expect("client")).collect();
    for pair in 0..PAIRS {
        let of_pair: Vec<&(usize, String, Value)> =
            answers.iter().filter(|(p, _, _)| *p == pair).collect();
        assert_eq!(of_pair.len(), 2);
        let ins: Vec<&String> =
            of_pair.iter().filter(|(_, _, v)| v["inserted"] == json!(true)).map(|a| &a.1).collect();
        assert_eq!(ins.len(), 1, "{collection}, pair {pair}: {of_pair:?}");
        for (_, id, v) in &of_pair {
            if id != ins[0] {
                assert_eq!(v["duplicate"], json!(true), "{id}: {v}");
                assert_eq!(v["matches"][0]["id"], json!(ins[0]), "{id}: {v}");
            }
        }
    }
    for s in servers.iter() {
        let (_, v) = s.call("GET", &format!("/v1/collections/{collection}"), None);
        assert_eq!(v["documents"], json!(PAIRS), "{v}");
    }
}

/// Upserts of the same ids through two servers at once, each giving them other texts: writers
/// of one id take their turns (their ids' locks), so the database ends with exactly the band
/// rows of what it holds (16 per document), each document found by its stored text and by no
/// text it held before, and the count right.
#[test]
fn upserts_of_the_same_ids_through_two_servers_leave_the_index_exact() {
    let db = "two_servers_same_ids";
    let cluster = support::pg::cluster();
    let url = cluster.database(db);
    let servers = std::sync::Arc::new([Server::on_store(&url), Server::on_store(&url)]);
    assert_eq!(servers[0].json("PUT", "/v1/collections/c", json!({})).0, 201);
    const IDS: usize = 20;
    const ROUNDS: usize = 15;
    let text =
        |server: usize, round: usize, id: usize| doc_text(&format!("s{server} r{round} {id}"));
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = (0..2)
        .map(|server| {
            let (servers, barrier) = (servers.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for round in 0..ROUNDS {
                    // Half the ids in a batch, in an order of the round's; the other half by
                    // checks, one at a time.
                    let mut ids: Vec<usize> = (0..IDS).collect();
                    ids.rotate_left((round * 7 + server * 3) % IDS);
                    let docs: Vec<Value> = ids[..IDS / 2]
                        .iter()
                        .map(|&i| json!({"id": format!("d{i}"), "text": text(server, round, i)}))
                        .collect();
                    let s = &servers[server];
                    let (st, v) = s.json("POST", "/v1/collections/c/docs", json!({ "docs": docs }));
                    assert_eq!(st, 200, "{v}");
                    for &i in &ids[IDS / 2..] {
                        let body = json!({"id": format!("d{i}"), "text": text(server, round, i)});
                        let (st, v) = s.json("POST", "/v1/collections/c/check", body);
                        assert_eq!(st, 200, "{v}");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer");
    }
    let rows = cluster.sql(db, "SELECT count(*) FROM neardup_bands").trim().to_string();
    assert_eq!(rows, (IDS * 16).to_string(), "band rows of the stored documents only");
    let s = &servers[1];
    let (_, v) = s.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(IDS), "{v}");
    for i in 0..IDS {
        let id = format!("d{i}");
        let (_, got) = s.call("GET", &format!("/v1/collections/c/docs/{id}"), None);
        let stored = got["text"].as_str().map(str::to_string);
        // The texts it held: every round's of both servers. Only the stored one finds it.
        for server in 0..2 {
            for round in 0..ROUNDS {
                let t = text(server, round, i);
                let (_, v) = s.json("POST", "/v1/collections/c/search", json!({ "text": t }));
                let found = v["hits"].as_array().expect("hits").iter().any(|h| h["id"] == id);
                if stored.as_deref() == Some(t.as_str()) {
                    assert!(found, "{id} not found by its stored text: {v}");
                } else if stored.is_some() {
                    assert!(!found, "{id} found by a text it no longer holds: {v}");
                }
            }
        }
    }
}

/// A delete of a collection through one server while another writes to it and deletes it too:
/// each answer is 200 or 404 (the deletes wait for the writers and each other, never a
/// deadlock's 503), and nothing of the deleted collection is left in the database.
#[test]
fn deletes_racing_writes_through_two_servers_leave_nothing() {
    let db = "deletes_racing_writes";
    let cluster = support::pg::cluster();
    let url = cluster.database(db);
    let servers = std::sync::Arc::new([Server::on_store(&url), Server::on_store(&url)]);
    for round in 0..4 {
        let path = format!("/v1/collections/r{round}");
        assert_eq!(servers[0].json("PUT", &path, json!({})).0, 201);
        let writer = {
            let (servers, path) = (servers.clone(), path.clone());
            std::thread::spawn(move || {
                for i in 0..30 {
                    let id = format!("d{i}");
                    let docs = json!({"docs": [{"id": id, "text": doc_text(&id)}]});
                    let (st, v) = servers[0].json("POST", &format!("{path}/docs"), docs);
                    assert!(st == 200 || st == 404, "insert: {st} {v}");
                    let body = json!({"id": format!("c{i}"), "text": doc_text(&format!("c{i}"))});
                    let (st, v) = servers[1].json("POST", &format!("{path}/check"), body);
                    assert!(st == 200 || st == 404, "check: {st} {v}");
                    if st == 404 {
                        return;
                    }
                }
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(30 * round as u64));
        let other = {
            let (servers, path) = (servers.clone(), path.clone());
            std::thread::spawn(move || servers[0].call("DELETE", &path, None).0)
        };
        let here = servers[1].call("DELETE", &path, None).0;
        let mut both = [here, other.join().expect("delete")];
        both.sort_unstable();
        assert_eq!(both, [200, 404], "round {round}");
        writer.join().expect("writer");
    }
    for table in ["neardup_docs", "neardup_bands", "neardup_counts", "neardup_collections"] {
        let left = cluster.sql(db, &format!("SELECT count(*) FROM {table}"));
        assert_eq!(left.trim(), "0", "{table}");
    }
}

/// A writer of a collection does not wait for another writer's transaction that holds the
/// collection (every writer does, to its commit, against a delete) without touching the same
/// documents: a batch, a check and a delete through a server answer while such a transaction
/// stays open.
#[test]
fn writers_of_other_documents_do_not_wait_for_each_other() {
    let db = "writers_side_by_side";
    let cluster = support::pg::cluster();
    let s = Server::on_store(&cluster.database(db));
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let docs = json!({"docs": [{"id": "a", "text": doc_text("a")}]});
    assert_eq!(s.json("POST", "/v1/collections/c/docs", docs).0, 200);
    // Another writer's transaction, held open for 20 s (ended early when the test is done).
    let holder = {
        let cluster_sql = move || {
            support::pg::cluster().sql(
                "writers_side_by_side",
                "BEGIN; SELECT 1 FROM neardup_collections WHERE name = 'c' FOR SHARE; \
                 SELECT pg_sleep(20); COMMIT;",
            )
        };
        std::thread::spawn(cluster_sql)
    };
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(20)%' \
                   AND state = 'active' AND pid <> pg_backend_pid()";
    let started = std::time::Instant::now();
    while cluster.sql(db, waiting).trim() != "1" {
        assert!(started.elapsed().as_secs() < 10, "the other transaction did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300)); // past its `FOR SHARE`
    let docs = json!({"docs": [{"id": "b", "text": doc_text("b")}]});
    assert_eq!(s.json("POST", "/v1/collections/c/docs", docs).0, 200);
    let (st, v) =
        s.json("POST", "/v1/collections/c/check", json!({"id": "c", "text": doc_text("c")}));
    assert_eq!((st, &v["inserted"]), (200, &json!(true)), "{v}");
    assert_eq!(s.call("DELETE", "/v1/collections/c/docs/a", None).0, 200);
    assert!(!holder.is_finished(), "the writes waited for the other transaction");
    let cancel = "SELECT pg_cancel_backend(pid) FROM pg_stat_activity \
                  WHERE query LIKE '%pg_sleep(20)%' AND pid <> pg_backend_pid()";
    cluster.sql(db, cancel);
    let _ = holder.join();
    let (_, v) = s.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(2), "{v}");
}

/// A passage collection on PostgreSQL is read from the database: the postings of a query's
/// keys and the sources' texts come from it, so a document written through one server is a
/// source through another at once, a removed one is no longer, and a database of schema 2
/// (passage collections without passage keys) is indexed again when a server opens it.
#[test]
fn a_passage_collection_on_postgres_is_read_from_the_database() {
    let db = "passages_from_the_database";
    let cluster = support::pg::cluster();
    let url = cluster.database(db);
    let (a, b) = (Server::on_store(&url), Server::on_store(&url));
    assert_eq!(a.json("PUT", "/v1/collections/lib", json!({"passages": true})).0, 201);
    // Ten documents of words of their own (`d3` says `w3k0 w3k7 ...`), written through `a`.
    let text = |d: usize| -> String {
        (0..80).map(|i| format!("w{d}k{}", (i * 7) % 61)).collect::<Vec<_>>().join(" ")
    };
    let docs: Vec<Value> =
        (0..10).map(|d| json!({"id": format!("d{d}"), "text": text(d)})).collect();
    assert_eq!(a.json("POST", "/v1/collections/lib/docs", json!({ "docs": docs })).0, 200);
    let copied: String = text(3).split(' ').skip(10).take(40).collect::<Vec<_>>().join(" ");
    let query = format!("my own opening words here {copied} and my own closing words");
    let check = |s: &Server, body: Value| -> Value {
        let (st, v) = s.json("POST", "/v1/collections/lib/overlap", body);
        assert_eq!(st, 200, "{v}");
        v
    };
    let v = check(&b, json!({"text": query}));
    let p = &v["passages"][0];
    assert_eq!(p["source"], json!("d3"), "{v}");
    assert_eq!(p["source_text"], json!(copied), "{v}");
    assert_eq!(v["passages"].as_array().map(Vec::len), Some(1), "{v}");
    // The same answer through the server that wrote the documents.
    assert_eq!(check(&a, json!({"text": query})), v);
    // Excluded by id, or the query's own id: no source. An unknown id is named.
    let none = check(&b, json!({"text": query, "exclude_source": ["d3"]}));
    assert_eq!(none["passages"], json!([]), "{none}");
    let own = check(&b, json!({"text": query, "id": "d3"}));
    assert_eq!(own["passages"], json!([]), "{own}");
    let (st, e) = b.json(
        "POST",
        "/v1/collections/lib/overlap",
        json!({"text": query, "exclude_source": ["nope"]}),
    );
    assert_eq!((st, error_code(&e)), (400, "invalid_field"), "{e}");
    assert!(e.to_string().contains("nope"), "{e}");
    // Removed through `a`: no longer a source through `b`.
    assert_eq!(a.call("DELETE", "/v1/collections/lib/docs/d3", None).0, 200);
    assert_eq!(check(&b, json!({"text": query}))["passages"], json!([]));
    // Back, then the database taken back to schema 2: its passage collections had no passage
    // keys, so the band rows are dropped here; a server opening it indexes them again. (Schema
    // 2's versions and counts, which schema 4 dropped, are put back.)
    let d3 = json!({"docs": [{"id": "d3", "text": text(3)}]});
    assert_eq!(b.json("POST", "/v1/collections/lib/docs", d3).0, 200);
    let want = check(&a, json!({"text": query}));
    assert_eq!(want["passages"][0]["source"], json!("d3"), "{want}");
    a.stop();
    b.stop();
    cluster.sql(
        db,
        "DELETE FROM neardup_bands;
         ALTER TABLE neardup_docs ADD COLUMN version bigint NOT NULL DEFAULT 1;
         ALTER TABLE neardup_collections ADD COLUMN version bigint NOT NULL DEFAULT 1,
             ADD COLUMN count bigint NOT NULL DEFAULT 10;
         DROP TABLE neardup_counts;
         CREATE TABLE neardup_removed (docs text NOT NULL, id bytea NOT NULL,
             version bigint NOT NULL, PRIMARY KEY (docs, id));
         UPDATE neardup_meta SET value = 2 WHERE key = 'schema';",
    );
    let s = Server::on_store(&url);
    assert_eq!(check(&s, json!({"text": query})), want);
    let (_, v) = s.call("GET", "/v1/collections/lib", None);
    assert_eq!(v["documents"], json!(10), "the count kept through the migration: {v}");
    let left = cluster.sql(db, "SELECT count(*) FROM neardup_docs WHERE keys IS NULL");
    assert_eq!(left.trim(), "0", "every document indexed");
    // A bit of d3's stored text flipped: it is the source of nothing, and health says so.
    let flipped = cluster.sql(
        db,
        "UPDATE neardup_docs SET record = set_byte(record, p + 2, get_byte(record, p + 2) # 1) \
         FROM (SELECT position(convert_to('w3k', 'UTF8') IN record) AS p FROM neardup_docs \
               WHERE id = convert_to('d3', 'UTF8')) AS found \
         WHERE id = convert_to('d3', 'UTF8') AND p > 0 RETURNING 1",
    );
    assert_eq!(flipped.trim(), "1", "the text is in the record");
    assert_eq!(check(&s, json!({"text": query}))["passages"], json!([]));
    let (status, health) = s.call("GET", "/v1/health", None);
    assert_eq!((status, &health["damaged_records"]), (503, &json!(1)), "{health}");
}
