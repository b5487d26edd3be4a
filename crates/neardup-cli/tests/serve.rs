//! Runs the real `neardup serve` on an ephemeral port and exercises every route, every error
//! case, authentication, shutdown, and crash recovery (SIGKILL mid-stream, 20 times).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
}

mod common;
use common::tempdir;

/// A running server; killed when dropped.
struct Server {
    child: Child,
    base: String,
    stderr: Arc<Mutex<Vec<String>>>,
    token: Option<String>,
}

impl Server {
    fn start(data: &Path, extra: &[&str]) -> Server {
        let mut child = bin()
            .args(["serve", "--data-dir"])
            .arg(data)
            .args(["--listen", "127.0.0.1:0", "-j", "2"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn server");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.split("listening on ").nth(1) {
                    let _ = tx.send(addr.split_whitespace().next().unwrap_or("").to_string());
                }
                sink.lock().expect("lock").push(line);
            }
        });
        let base = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("server did not start: {:?}", lines.lock().expect("lock")));
        Server { child, base, stderr: lines, token: None }
    }

    fn call(&self, method: &str, path: &str, body: Option<&[u8]>) -> (u16, Value) {
        let mut req =
            ureq::request(method, &format!("{}{path}", self.base)).timeout(Duration::from_secs(30));
        if let Some(t) = &self.token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let result = match body {
            Some(b) => req.set("Content-Type", "application/json").send_bytes(b),
            None => req.call(),
        };
        let (status, text) = match result {
            Ok(r) => (r.status(), r.into_string().expect("body")),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().expect("body")),
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    fn json(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        self.call(method, path, Some(body.to_string().as_bytes()))
    }

    /// Stops the server with SIGTERM (a clean close of the store) and waits for it.
    fn stop(mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "the server stopped cleanly: {status}");
    }

    fn kill(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("not an error body: {v}"))
}

const NEWS_A: &str = "本市今天上午召开新闻发布会，介绍今年夏季防汛工作的总体安排。市水务局负责人表示，今年入汛以来全市平均降雨量比常年同期偏多两成，部分河道水位持续偏高。";
const NEWS_B: &str = "本市今天上午召开新闻发布会，介绍今年夏季防汛工作的总体安排。市水务局负责人说，今年入汛以来全市平均降雨量比常年同期偏多两成，部分河道水位持续偏高。";

#[test]
fn every_route() {
    let dir = tempdir("routes");
    let s = Server::start(&dir, &[]);
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
        &["--max-body-bytes", "4096", "--max-doc-bytes", "512", "--max-batch-docs", "3"],
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

#[test]
fn token_loopback_and_shutdown() {
    let dir = tempdir("token");
    let token_file = dir.join("token");
    std::fs::write(&token_file, "s3cret-token\n").expect("write");
    let mut s =
        Server::start(&dir.join("data"), &["--token-file", token_file.to_str().expect("utf8")]);
    assert_eq!(s.call("GET", "/v1/health", None).0, 200, "health is open");
    // The page is open too (it asks for the token itself), with its policy.
    let page = ureq::get(&format!("{}/", s.base)).call().expect("page");
    assert_eq!(page.header("Content-Type"), Some("text/html; charset=utf-8"));
    let policy = page.header("Content-Security-Policy").expect("policy").to_string();
    assert!(policy.contains("connect-src 'self'") && !policy.contains("unsafe"), "{policy}");
    assert!(page.into_string().expect("body").contains("id=\"token-form\""));
    let (st, v) = s.call("GET", "/v1/collections", None);
    assert_eq!((st, error_code(&v)), (401, "unauthorized"));
    s.token = Some("wrong".into());
    assert_eq!(s.call("GET", "/v1/collections", None).0, 401);
    s.token = Some("s3cret-token".into());
    assert_eq!(s.call("GET", "/v1/collections", None).0, 200);

    // SIGTERM: a clean stop, exit code 0.
    let pid = s.child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
    assert!(status.success());
    let code = s.child.wait().expect("wait");
    assert!(code.success(), "{code:?}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(s.stderr.lock().expect("lock").iter().any(|l| l.contains("stopped")));

    // A public address without a token is refused before anything is opened.
    let out = bin()
        .args(["serve", "--data-dir"])
        .arg(dir.join("public"))
        .args(["--listen", "0.0.0.0:0"])
        .env_remove("NEARDUP_TOKEN")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--insecure"));
    assert!(!dir.join("public").exists());
}

/// A stored spec whose pipeline id no longer matches this build is listed but refuses
/// requests with 409 spec_mismatch.
#[test]
fn spec_mismatch_is_refused() {
    let dir = tempdir("mismatch");
    {
        let s = Server::start(&dir, &[]);
        assert_eq!(s.json("PUT", "/v1/collections/old", json!({})).0, 201);
    }
    // Rewrite the stored pipeline id, as a build with another fingerprint format would have.
    {
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
    let s = Server::start(&dir, &[]);
    let (st, v) = s.json("POST", "/v1/collections/old/search", json!({"text": "a"}));
    assert_eq!((st, error_code(&v)), (409, "spec_mismatch"));
    assert!(v["error"]["message"].as_str().expect("msg").contains("pipeline id"));
    let (_, v) = s.call("GET", "/v1/collections/old", None);
    assert!(v["error"].is_string(), "{v}");
}

/// Streams inserts, kills the server with SIGKILL at a random moment, restarts it: every
/// acknowledged document is there and found by search, and the store opens cleanly. 20 rounds
/// (`NEARDUP_CRASH_ROUNDS` sets another number: `bench/crash_serve.sh` runs 200).
#[test]
fn crash_recovery_keeps_every_acknowledged_write() {
    let dir = tempdir("crash");
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    {
        let s = Server::start(&dir, &[]);
        assert_eq!(s.json("PUT", "/v1/collections/crawl", json!({})).0, 201);
    }
    let mut acknowledged: Vec<(String, String)> = Vec::new();
    let rounds: usize =
        std::env::var("NEARDUP_CRASH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    for round in 0..rounds {
        let mut s = Server::start(&dir, &[]);
        let base = s.base.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let (stop2, acked2) = (stop.clone(), acked.clone());
        let writer = std::thread::spawn(move || {
            for i in 0.. {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let id = format!("r{round}-d{i}");
                let text = format!(
                    "document {id} about topic {} with words {} and {}",
                    i * 7,
                    i * 13,
                    round
                );
                let body = json!({"docs": [{"id": id, "text": text}]});
                let r = ureq::post(&format!("{base}/v1/collections/crawl/docs"))
                    .timeout(Duration::from_secs(5))
                    .send_json(body);
                match r {
                    Ok(resp) if resp.status() == 200 => {
                        acked2.lock().expect("lock").push((id, text))
                    }
                    _ => break, // the server is gone
                }
            }
        });
        std::thread::sleep(Duration::from_millis(30 + next() % 200));
        s.kill();
        stop.store(true, Ordering::Relaxed);
        writer.join().expect("writer");
        acknowledged.extend(acked.lock().expect("lock").drain(..));
    }
    assert!(acknowledged.len() > 20, "too few writes to test: {}", acknowledged.len());
    let s = Server::start(&dir, &[]);
    let (_, v) = s.call("GET", "/v1/collections/crawl", None);
    let stored = v["documents"].as_u64().expect("count") as usize;
    assert!(stored >= acknowledged.len(), "{stored} stored < {} acknowledged", acknowledged.len());
    for (id, _) in &acknowledged {
        let (st, _) = s.call("GET", &format!("/v1/collections/crawl/docs/{id}"), None);
        assert_eq!(st, 200, "acknowledged {id} lost");
    }
    eprintln!(
        "{rounds} SIGKILL rounds: {} acknowledged writes, all present after restart",
        acknowledged.len()
    );
    // Every tenth one is also found by search, with similarity 1.
    for (id, text) in acknowledged.iter().step_by(10) {
        let (_, v) =
            s.json("POST", "/v1/collections/crawl/search", json!({"text": text, "top_k": 3}));
        assert_eq!(v["hits"][0]["id"], json!(id), "{v}");
        assert_eq!(v["hits"][0]["similarity"], 1.0);
    }
}

// ---- hostile input and faults -------------------------------------------------------------------

/// What a client asked, when (a global event counter, so that intervals compare exactly), and
/// whether the server acknowledged it.
#[derive(Debug, Clone)]
struct Op {
    client: usize,
    collection: usize,
    kind: OpKind,
    start: u64,
    /// The event at the reply, or at the kill that cut the request short.
    end: u64,
    acked: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum OpKind {
    Insert(Vec<String>),
    Remove(String),
    /// A check that may have inserted its document (`inserted` from the reply when acked).
    Check(String, bool),
    Create,
    Delete,
}

fn doc_text(id: &str) -> String {
    let h =
        |k: u64| (id.bytes().fold(k, |a, b| a.wrapping_mul(31).wrapping_add(u64::from(b)))) % 997;
    format!(
        "document {id} speaks of {} rivers {} mountains {} cities {} trains {} and {} stations",
        h(1),
        h(2),
        h(3),
        h(4),
        h(5),
        h(6)
    )
}

/// One round's clients: four writers on their own ids and an admin that creates and deletes
/// the collections, all at once, until the server goes away.
fn model_round(
    base: &str,
    clock: &Arc<std::sync::atomic::AtomicU64>,
    seed: u64,
    stop: &Arc<AtomicBool>,
) -> Vec<Op> {
    let mut handles = Vec::new();
    for client in 0..5usize {
        let (base, clock, stop) = (base.to_string(), clock.clone(), stop.clone());
        handles.push(std::thread::spawn(move || {
            let mut rng = seed ^ (client as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build();
            let mut ops = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let collection = (next() % 2) as usize;
                let path = format!("{base}/v1/collections/c{collection}");
                let id = |n: u64| format!("k{client}-{}", n % 12);
                let kind = if client == 4 {
                    // The admin acts now and then, so that writes have windows between deletes.
                    std::thread::sleep(Duration::from_millis(20 + next() % 40));
                    if next() % 4 == 0 {
                        OpKind::Delete
                    } else {
                        OpKind::Create
                    }
                } else {
                    match next() % 6 {
                        0 | 1 => OpKind::Insert(
                            (0..1 + next() % 3)
                                .map(|_| id(next()))
                                .collect::<std::collections::BTreeSet<_>>()
                                .into_iter()
                                .collect(),
                        ),
                        2 => OpKind::Remove(id(next())),
                        3 => OpKind::Check(id(next()), false),
                        _ => OpKind::Insert(vec![id(next())]),
                    }
                };
                let start = clock.fetch_add(1, Ordering::SeqCst);
                let result = match &kind {
                    OpKind::Create => agent.put(&path).send_json(json!({})),
                    OpKind::Delete => agent.delete(&path).call(),
                    OpKind::Insert(ids) => {
                        let docs: Vec<Value> =
                            ids.iter().map(|i| json!({"id": i, "text": doc_text(i)})).collect();
                        agent.post(&format!("{path}/docs")).send_json(json!({"docs": docs}))
                    }
                    OpKind::Remove(i) => agent.delete(&format!("{path}/docs/{i}")).call(),
                    OpKind::Check(i, _) => agent
                        .post(&format!("{path}/check"))
                        .send_json(json!({"id": i, "text": doc_text(i)})),
                };
                let (status, body) = match result {
                    Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
                    Err(ureq::Error::Status(code, r)) => {
                        (code, r.into_string().unwrap_or_default())
                    }
                    Err(_) => {
                        // The server is gone: the request may or may not have taken effect.
                        ops.push(Op {
                            client,
                            collection,
                            kind,
                            start,
                            end: u64::MAX,
                            acked: false,
                        });
                        break;
                    }
                };
                let end = clock.fetch_add(1, Ordering::SeqCst);
                assert!(status != 500, "500 for {kind:?}: {body}");
                let value: Value =
                    serde_json::from_str(&body).unwrap_or_else(|_| panic!("not JSON: {body}"));
                let acked = matches!(status, 200 | 201);
                let kind = match kind {
                    OpKind::Check(i, _) if acked => {
                        let inserted = value["inserted"].as_bool().expect("inserted");
                        OpKind::Check(i, inserted)
                    }
                    other => other,
                };
                if !acked {
                    assert!(matches!(status, 404 | 409), "{kind:?}: {status} {body}");
                }
                // A removal just acknowledged is seen by the next read of the same client.
                if let (OpKind::Remove(i), true) = (&kind, acked) {
                    let r = agent.get(&format!("{path}/docs/{i}")).call();
                    match r {
                        Err(ureq::Error::Status(404, _)) => {}
                        Err(ureq::Error::Status(code, _)) => panic!("GET after delete: {code}"),
                        Ok(_) => panic!("{i} came back after its delete"),
                        Err(_) => {}
                    }
                    if let Ok(r) = agent
                        .post(&format!("{path}/search"))
                        .send_json(json!({"text": doc_text(i)}))
                    {
                        let v: Value = r.into_json().expect("json");
                        let hits = v["hits"].as_array().expect("hits");
                        assert!(
                            hits.iter().all(|h| h["id"] != json!(i)),
                            "search returned deleted {i}"
                        );
                    }
                }
                ops.push(Op { client, collection, kind, start, end, acked });
            }
            ops
        }));
    }
    handles.into_iter().flat_map(|h| h.join().expect("client")).collect()
}

/// Whether `id` in collection `c` must be present (Some(true)), must be absent (Some(false)),
/// or may be either, given every operation (each client issues its own in order).
fn expected_presence(ops: &[Op], c: usize, id: &str) -> Option<bool> {
    let writes: Vec<&Op> = ops
        .iter()
        .filter(|o| o.collection == c)
        .filter(|o| match &o.kind {
            OpKind::Insert(ids) => ids.iter().any(|i| i == id),
            OpKind::Remove(i) => i == id,
            OpKind::Check(i, inserted) => i == id && (*inserted || !o.acked),
            _ => false,
        })
        .collect();
    let deletes: Vec<&Op> =
        ops.iter().filter(|o| o.collection == c && o.kind == OpKind::Delete).collect();
    let Some(last) = writes.iter().max_by_key(|o| o.start) else { return Some(false) };
    // A delete that surely came after every write of this id.
    if deletes.iter().any(|d| d.acked && d.start > last.end) {
        return Some(false);
    }
    if !last.acked {
        return None;
    }
    match &last.kind {
        OpKind::Remove(_) => Some(false),
        _ if deletes.iter().all(|d| d.end < last.start) => Some(true),
        _ => None,
    }
}

/// Clients create, delete, insert, upsert, remove, check and search on shared collections at
/// once while the server is killed with SIGKILL at random moments and restarted: afterwards
/// every acknowledged operation is reflected exactly, nothing deleted comes back (in memory or
/// after a restart), and no request answers 500. 20 rounds (`NEARDUP_MODEL_ROUNDS`;
/// `bench/crash_serve.sh` runs 200).
#[test]
fn concurrent_operations_under_sigkill_match_the_model() {
    let dir = tempdir("model");
    let rounds: usize =
        std::env::var("NEARDUP_MODEL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let seed0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7);
    eprintln!("model test seed {seed0}");
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut ops: Vec<Op> = Vec::new();
    for round in 0..rounds {
        let mut s = Server::start(&dir, &[]);
        let stop = Arc::new(AtomicBool::new(false));
        let (base, clock2, stop2) = (s.base.clone(), clock.clone(), stop.clone());
        let seed = seed0.wrapping_add(round as u64 * 7919);
        let clients = std::thread::spawn(move || model_round(&base, &clock2, seed, &stop2));
        std::thread::sleep(Duration::from_millis(150 + seed % 350));
        stop.store(true, Ordering::Relaxed);
        if round % 2 == 0 {
            s.kill(); // SIGKILL mid-stream
        }
        let killed_at = clock.fetch_add(1, Ordering::SeqCst);
        let mut round_ops = clients.join().expect("clients");
        s.kill();
        for op in &mut round_ops {
            if op.end == u64::MAX {
                op.end = killed_at;
            }
        }
        ops.extend(round_ops);
    }
    let s = Server::start(&dir, &[]);
    let mut checked = (0, 0, 0);
    for c in 0..2 {
        let (st, v) = s.call("GET", &format!("/v1/collections/c{c}"), None);
        let mut present = 0;
        for client in 0..4 {
            for n in 0..12 {
                let id = format!("k{client}-{n}");
                let (code, _) = s.call("GET", &format!("/v1/collections/c{c}/docs/{id}"), None);
                assert!(code == 200 || code == 404, "GET {id}: {code}");
                let is = code == 200;
                present += usize::from(is);
                match expected_presence(&ops, c, &id) {
                    Some(want) => {
                        assert_eq!(
                            is,
                            want,
                            "c{c}/{id}: {:?}",
                            ops.iter()
                                .filter(
                                    |o| o.collection == c && (o.client == client || o.client == 4)
                                )
                                .collect::<Vec<_>>()
                        );
                        if want {
                            checked.0 += 1
                        } else {
                            checked.1 += 1
                        }
                    }
                    None => checked.2 += 1,
                }
            }
        }
        if st == 200 {
            assert_eq!(v["documents"], json!(present), "the count agrees with the documents");
        } else {
            assert_eq!(present, 0, "a deleted collection holds nothing");
        }
    }
    let acked = ops.iter().filter(|o| o.acked).count();
    eprintln!(
        "{rounds} rounds, {} operations ({acked} acknowledged): {} must-be-present and {} \
         must-be-absent documents checked, {} undetermined",
        ops.len(),
        checked.0,
        checked.1,
        checked.2
    );
    assert!(acked > 100, "too few operations to test: {acked}");
}

#[test]
fn empty_tokens_are_refused_and_the_scheme_is_case_insensitive() {
    let dir = tempdir("tokens");
    for content in ["", "  \n\t"] {
        let file = dir.join("token");
        std::fs::write(&file, content).expect("write");
        let out = bin()
            .args(["serve", "--data-dir"])
            .arg(dir.join("d"))
            .arg("--token-file")
            .arg(&file)
            .env_remove("NEARDUP_TOKEN")
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{content:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("empty or blank"));
    }
    let out = bin()
        .args(["serve", "--data-dir"])
        .arg(dir.join("d"))
        .env("NEARDUP_TOKEN", " ")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NEARDUP_TOKEN"));

    let file = dir.join("token");
    std::fs::write(&file, "abc123\n").expect("write");
    let mut s = Server::start(&dir.join("d"), &["--token-file", file.to_str().expect("p")]);
    for header in ["bearer abc123", "BEARER abc123", "Bearer   abc123"] {
        let r =
            ureq::get(&format!("{}/v1/collections", s.base)).set("Authorization", header).call();
        assert_eq!(r.map(|r| r.status()).unwrap_or(0), 200, "{header}");
    }
    s.token = None;
    let (st, v) = s.call("GET", "/v1/openapi.json", None);
    assert_eq!((st, error_code(&v)), (401, "unauthorized"));
}

#[test]
fn localhost_listens_on_loopback() {
    let dir = tempdir("localhost");
    let mut child = bin()
        .args(["serve", "--data-dir"])
        .arg(&dir)
        .args(["--listen", "localhost:0"])
        .env_remove("NEARDUP_TOKEN")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let line = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("listening on"))
        .expect("listening");
    assert!(line.contains("127.0.0.1") || line.contains("[::1]"), "{line}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn paths_uris_and_specs_over_the_limits_answer_json() {
    let dir = tempdir("json-errors");
    let s = Server::start(&dir, &[]);
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

/// SIGTERM stops the server within its grace period even while a request hangs.
#[test]
fn sigterm_stops_the_server_whatever_it_is_doing() {
    use std::io::Write as _;
    let dir = tempdir("sigterm");
    let mut s = Server::start(&dir, &["--shutdown-seconds", "2"]);
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    // A request whose body never finishes arriving.
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut stream = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        stream,
        "POST /v1/collections/c/docs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{\"docs\": ["
    )
    .expect("write");
    stream.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(200));
    let started = std::time::Instant::now();
    let pid = s.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        if s.child.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    drop(stream);
}

/// A storage I/O error (the file may not grow: RLIMIT_FSIZE, as a full disk) answers 503 and
/// makes /v1/health say why; once the file may grow again the store is reopened and every
/// acknowledged document is there.
#[test]
fn a_storage_io_error_is_reported_and_recovered_from() {
    let dir = tempdir("enospc");
    let s = Server::start(&dir, &[]);
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let doc = |i: usize| json!({"id": format!("d{i}"), "text": doc_text(&format!("d{i}"))});
    assert_eq!(s.json("POST", "/v1/collections/c/docs", json!({"docs": [doc(0)]})).0, 200);
    let pid = rustix::process::Pid::from_raw(s.child.id() as i32).expect("pid");
    let limit = |soft: u64| {
        rustix::process::prlimit(
            Some(pid),
            rustix::process::Resource::Fsize,
            rustix::process::Rlimit { current: Some(soft), maximum: None },
        )
        .expect("prlimit");
    };
    // Every write past the first page fails with EFBIG, as on a full disk.
    limit(4096);
    let big: Vec<Value> = (1..400).map(|i| {
        json!({"id": format!("b{i}"), "text": format!("{} {}", doc_text(&format!("b{i}")), "pad ".repeat(500))})
    }).collect();
    let (st, v) = s.json("POST", "/v1/collections/c/docs", json!({"docs": big}));
    assert_eq!((st, error_code(&v)), (503, "storage_unavailable"), "{v}");
    let (st, h) = s.call("GET", "/v1/health", None);
    assert_eq!(st, 503, "{h}");
    assert!(h["reason"].as_str().expect("reason").contains("I/O"), "{h}");
    let (st, v) = s.json("POST", "/v1/collections/c/search", json!({"text": "x y z"}));
    assert_eq!((st, error_code(&v)), (503, "storage_unavailable"), "{v}");
    limit(u64::MAX);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while s.call("GET", "/v1/health", None).0 != 200 {
        assert!(std::time::Instant::now() < deadline, "never recovered");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(s.call("GET", "/v1/collections/c/docs/d0", None).0, 200);
    assert_eq!(s.json("POST", "/v1/collections/c/docs", json!({"docs": [doc(1)]})).0, 200);
    let (_, v) = s.call("GET", "/v1/collections/c", None);
    let n = v["documents"].as_u64().expect("n");
    assert!(n == 2 || n == 401, "the failed batch is all or nothing: {n}");
}

/// Group commit: many concurrent checks of the same few new texts (distinct ids) are decided as
/// one-at-a-time checks would be. Of each group of copies exactly one is inserted and every
/// other copy names an earlier one as its match, whatever group commit they shared; every
/// inserted document is stored, every refused one is not.
#[test]
fn concurrent_checks_are_decided_one_at_a_time() {
    let data = tempdir("group-commit");
    let s = Arc::new(Server::start(&data, &[]));
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    const TEXTS: usize = 4;
    const COPIES: usize = 24;
    let text = |t: usize| format!("text number {t} {}", doc_text(&format!("group-{t}")));
    let threads: Vec<_> = (0..COPIES)
        .map(|copy| {
            let s = s.clone();
            std::thread::spawn(move || {
                (0..TEXTS)
                    .map(|t| {
                        let id = format!("t{t}-copy{copy}");
                        let (st, v) = s.json(
                            "POST",
                            "/v1/collections/c/check",
                            json!({"id": id, "text": text((t + copy) % TEXTS)}),
                        );
                        assert_eq!(st, 200, "{v}");
                        (id, (t + copy) % TEXTS, v)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let answers: Vec<(String, usize, Value)> =
        threads.into_iter().flat_map(|t| t.join().expect("client")).collect();
    for t in 0..TEXTS {
        let of_text: Vec<&(String, usize, Value)> =
            answers.iter().filter(|(_, which, _)| *which == t).collect();
        let inserted: Vec<&String> = of_text
            .iter()
            .filter(|(_, _, v)| v["inserted"] == json!(true))
            .map(|(id, _, _)| id)
            .collect();
        assert_eq!(inserted.len(), 1, "text {t}: inserted {inserted:?}");
        for (id, _, v) in &of_text {
            let stored = s.call("GET", &format!("/v1/collections/c/docs/{id}"), None).0 == 200;
            if v["inserted"] == json!(true) {
                assert!(stored, "{id} acknowledged but not stored");
                assert_eq!(v["duplicate"], json!(false));
            } else {
                assert!(!stored, "{id} refused but stored");
                assert_eq!(v["duplicate"], json!(true), "{id}: {v}");
                assert_eq!(v["matches"][0]["id"], json!(inserted[0]), "{id}: {v}");
            }
        }
    }
    let (_, v) = s.call("GET", "/v1/collections/c", None);
    assert_eq!(v["documents"], json!(TEXTS));
}

/// Runs `serve` on `data`, expecting it to refuse to start; returns its exit code and stderr.
fn refused_start(data: &Path) -> (Option<i32>, String) {
    let o = bin()
        .args(["serve", "--data-dir"])
        .arg(data)
        .args(["--listen", "127.0.0.1:0", "-j", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server")
        .wait_with_output()
        .expect("wait");
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// A store with a collection that keeps texts, and its file, after the server stopped.
fn stored(dir: &Path, texts: &[(&str, &str)]) -> PathBuf {
    let s = Server::start(dir, &[]);
    let (status, _) = s.json("PUT", "/v1/collections/c", json!({"store_text": true}));
    assert_eq!(status, 201);
    let docs: Vec<Value> = texts
        .iter()
        .map(|(id, text)| json!({"id": id, "text": text, "metadata": {"id": id}}))
        .collect();
    let (status, body) = s.json("POST", "/v1/collections/c/docs", json!({ "docs": docs }));
    assert_eq!(status, 200, "{body}");
    s.stop();
    dir.join("neardup.redb")
}

/// Regression: an empty store file was served as a new, empty, healthy store; a truncated one,
/// one with a page zeroed or with bytes appended made `serve` panic with a backtrace.
#[test]
fn a_damaged_store_file_is_refused_by_name() {
    let dir = tempdir("damaged-store");
    let texts: Vec<(String, String)> = (0..300)
        .map(|i| (format!("d{i}"), format!("document number {i} with words {i}")))
        .collect();
    let texts: Vec<(&str, &str)> = texts.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let file = stored(&dir, &texts);
    let good = std::fs::read(&file).expect("read");
    let half = good.len() / 2;
    let damages: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("truncated", good[..half].to_vec()),
        ("appended to", [good.clone(), vec![0x5a; 5000]].concat()),
        ("header zeroed", [vec![0; 4096], good[4096..].to_vec()].concat()),
        ("a page zeroed", {
            let mut b = good.clone();
            b[4096..8192].fill(0);
            b
        }),
    ];
    for (what, bytes) in damages {
        std::fs::write(&file, &bytes).expect("write");
        let (code, stderr) = refused_start(&dir);
        assert_eq!(code, Some(1), "{what}: {stderr}");
        assert!(stderr.contains("neardup.redb"), "{what}: names the file: {stderr}");
        assert!(
            stderr.contains("damaged") || stderr.contains("not a neardup store"),
            "{what}: {stderr}"
        );
        assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{what}: {stderr}");
        // redb may mend parts of a damaged file while it checks it; it is never replaced by a
        // new, empty store.
        let now = std::fs::metadata(&file).expect("the file is still there").len();
        assert!(now > 0 || bytes.is_empty(), "{what}: {now} bytes left");
    }
}

/// Regression: one flipped bit in a stored text was served as the document's text, with
/// `/v1/health` ok. Every record now carries a checksum, checked at start and on every read.
#[test]
fn a_flipped_bit_in_a_record_is_never_served_and_health_says_so() {
    let dir = tempdir("flipped-bit");
    let marker = "zqxjkvwpyfgh unique stored text of the damaged document";
    let file = stored(&dir, &[("bad", marker), ("good", "an intact document about rivers")]);
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

    let s = Server::start(&dir, &[]);
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
}

/// The committed store of format 2 (tests/fixtures/store_v2) opens, is upgraded to the current
/// format, and answers as it did when it was written.
#[test]
fn a_format_2_store_is_upgraded_and_answers_as_before() {
    let dir = store_fixture("store_v2");
    for round in 0..2 {
        let s = Server::start(&dir, &[]);
        let upgraded = s.stderr.lock().expect("lock").iter().any(|l| l.contains("upgraded"));
        assert_eq!(upgraded, round == 0, "upgraded once, at the first start");
        answers_as_the_committed_stores_were_written(&s);
    }
}

/// The committed stores of formats 3 and 4 (tests/fixtures/store_v3: record checksums, a
/// passage collection, metadata with `1.10` and a 30-digit integer; store_v4: the same
/// collections with their settings as jobs) open and answer as they did when they were
/// written: searches, the passages of a query, the metadata byte for byte.
#[test]
fn the_format_3_and_4_stores_answer_as_when_they_were_written() {
    for version in ["store_v3", "store_v4"] {
        committed_store_answers_as_written(version);
    }
}

fn committed_store_answers_as_written(version: &str) {
    let dir = store_fixture(version);
    let s = Server::start(&dir, &[]);
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

/// A temporary data directory holding the committed store `tests/fixtures/NAME` (decompressed).
fn store_fixture(name: &str) -> common::TempDir {
    let dir = tempdir(name);
    let fixture = repo_root().join(format!("tests/fixtures/{name}/neardup.redb.zst"));
    let compressed = std::fs::read(&fixture).expect("fixture");
    let bytes = zstd::decode_all(compressed.as_slice()).expect("zstd");
    std::fs::write(dir.join("neardup.redb"), bytes).expect("write");
    dir
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

// ---- issue 22: an adversarial sweep of the service ---------------------------------------------

/// A response read off a raw connection.
#[derive(Debug)]
struct RawResponse {
    status: u16,
    /// Header names in lowercase, with their values.
    headers: Vec<(String, String)>,
    body: String,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON; a panic naming the status and a short preview otherwise.
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| {
            let preview: String = self.body.chars().take(200).collect();
            panic!("{}: not a JSON body: {preview:?}", self.status)
        })
    }
}

/// A raw connection to the server, for requests no HTTP client would send.
struct Raw {
    stream: std::net::TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    fn connect(s: &Server) -> Raw {
        let stream =
            std::net::TcpStream::connect(s.base.trim_start_matches("http://")).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        Raw { stream, buf: Vec::new() }
    }

    fn send(&mut self, bytes: &[u8]) -> &mut Raw {
        use std::io::Write as _;
        // The server may answer and close before it has read everything (a refused head).
        let _ = self.stream.write_all(bytes);
        self
    }

    /// Reads one response (head, then a body of Content-Length bytes).
    fn response(&mut self) -> RawResponse {
        use std::io::Read as _;
        let mut chunk = [0u8; 16 << 10];
        let head_end = loop {
            if let Some(at) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let n = self.stream.read(&mut chunk).expect("read");
            assert!(n > 0, "the connection closed without a response: {:?}", self.buf);
            self.buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().expect("status line");
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while self.buf.len() < head_end + length {
            let n = self.stream.read(&mut chunk).expect("read");
            assert!(n > 0, "the connection closed mid-body");
            self.buf.extend_from_slice(&chunk[..n]);
        }
        let body = String::from_utf8_lossy(&self.buf[head_end..head_end + length]).into_owned();
        self.buf.drain(..head_end + length);
        RawResponse { status, headers, body }
    }
}

/// One request on a connection of its own.
fn raw(s: &Server, request: &[u8]) -> RawResponse {
    Raw::connect(s).send(request).response()
}

/// The `host:port` of a server.
fn authority(s: &Server) -> String {
    s.base.trim_start_matches("http://").to_string()
}

/// A request with a JSON body, `Connection: close`, and the extra header lines given.
fn raw_request(s: &Server, method: &str, path: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        authority(s),
        body.len()
    )
    .into_bytes()
}

/// Regression (issue 22): a `top_k` over the limit was silently cut to it; now it is refused,
/// naming the field, the value and the limit, on every route that takes one.
#[test]
fn a_top_k_over_the_limit_is_refused_naming_it() {
    let dir = tempdir("top-k");
    let s = Server::start(&dir, &[]);
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    for (route, body) in [
        ("search", json!({"text": "a b c", "top_k": 1001})),
        ("search", json!({"text": "a b c", "top_k": 1_000_000_000_u64})),
        ("check", json!({"id": "x", "text": "a b c", "top_k": 5000})),
    ] {
        let (st, v) = s.json("POST", &format!("/v1/collections/c/{route}"), body.clone());
        assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{route} {body}: {v}");
        let m = v["error"]["message"].as_str().expect("message");
        let given = body["top_k"].to_string();
        assert!(m.contains("top_k") && m.contains(&given) && m.contains("1000"), "{m}");
    }
    // At the limit is fine, and the check above stored nothing.
    let (st, v) = s.json("POST", "/v1/collections/c/search", json!({"text": "a", "top_k": 1000}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(s.call("GET", "/v1/collections/c/docs/x", None).0, 404);
    drop(s);

    // --max-top-k sets the limit, within its own bound.
    let s = Server::start(&dir, &["--max-top-k", "20"]);
    let (st, v) = s.json("POST", "/v1/collections/c/search", json!({"text": "a", "top_k": 21}));
    assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{v}");
    assert!(v["error"]["message"].as_str().expect("m").contains("--max-top-k"), "{v}");
    assert_eq!(
        s.json("POST", "/v1/collections/c/search", json!({"text": "a", "top_k": 20})).0,
        200
    );
    drop(s);
    for bad in ["0", "100001"] {
        let out = bin()
            .args(["serve", "--data-dir"])
            .arg(&dir)
            .args(["--listen", "127.0.0.1:0", "--max-top-k", bad])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "--max-top-k {bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("100000"), "--max-top-k {bad}");
    }
}
/// do not apply to the chosen method are refused naming them, as `neardup dedup` refuses them.
#[test]
fn settings_that_do_not_apply_to_the_method_are_refused() {
    let dir = tempdir("contradictions");
    let s = Server::start(&dir, &[]);
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
    let s = Server::start(&dir, &[]);
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
    let s = Server::start(&dir, &[]);
    let host = authority(&s);
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
    let s = Server::start(&dir, &[]);
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    let port = s.base.rsplit(':').next().expect("port").to_string();
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

/// Regression (issue 22): nothing bounded concurrent heavy requests (24 concurrent compares of
/// 8 MB texts: 5 GB) nor metadata (a search of 1,000 hits with large metadata: 8.8 GB, a 3 GB
/// answer). Heavy routes take turns (503 with Retry-After when the queue is full), metadata is
/// bounded per document (413 naming it), and every new option has a bound.
#[test]
fn heavy_requests_take_turns_and_metadata_is_bounded() {
    let dir = tempdir("heavy");
    let s = Arc::new(Server::start(
        &dir,
        &["--max-concurrent", "1", "--max-queued", "1", "--max-metadata-bytes", "1000"],
    ));
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({})).0, 201);
    // Metadata over the bound, in a batch and in a check, is refused naming the document.
    let big = json!({"note": "m".repeat(1000)});
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/docs",
        json!({"docs": [{"id": "ok", "text": "a b"}, {"id": "fat", "text": "c d", "metadata": big}]}),
    );
    assert_eq!((st, error_code(&v)), (413, "metadata_too_large"), "{v}");
    let m = v["error"]["message"].as_str().expect("m");
    assert!(m.contains("docs[1]") && m.contains("fat") && m.contains("1000"), "{m}");
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"id": "fat", "text": "c d", "metadata": big}),
    );
    assert_eq!((st, error_code(&v)), (413, "metadata_too_large"), "{v}");
    assert_eq!(s.call("GET", "/v1/collections/c", None).1["documents"], 0);
    let small = json!({"note": "m".repeat(900)});
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/docs",
        json!({"docs": [{"id": "ok", "text": "a b", "metadata": small}]}),
    );
    assert_eq!(st, 200, "{v}");

    // Eight compares at once with one turn and one place in the queue: some wait, the rest are
    // told to come back, none fails otherwise.
    let text: String = (0..200_000).map(|i| format!("w{} ", i % 5000)).collect();
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let answers: Vec<(u16, Value, Option<String>)> = (0..8)
        .map(|_| {
            let (s, text, barrier) = (s.clone(), text.clone(), barrier.clone());
            std::thread::spawn(move || {
                let body = json!({"a": text, "b": format!("{text} more")}).to_string();
                barrier.wait();
                let r = ureq::post(&format!("{}/v1/compare", s.base))
                    .set("Content-Type", "application/json")
                    .timeout(Duration::from_secs(120))
                    .send_string(&body);
                match r {
                    Ok(r) => (r.status(), Value::Null, None),
                    Err(ureq::Error::Status(code, r)) => {
                        let retry = r.header("Retry-After").map(str::to_string);
                        (code, r.into_json().expect("json"), retry)
                    }
                    Err(e) => panic!("{e}"),
                }
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("client"))
        .collect();
    let busy: Vec<&(u16, Value, Option<String>)> = answers.iter().filter(|a| a.0 == 503).collect();
    assert!(answers.iter().all(|a| a.0 == 200 || a.0 == 503), "{answers:?}");
    assert!(!busy.is_empty() && busy.len() <= 6, "{answers:?}");
    for (_, v, retry) in busy {
        assert_eq!(error_code(v), "busy");
        assert!(retry.as_deref().and_then(|r| r.parse::<u64>().ok()).is_some(), "{retry:?}");
    }
    let s = Arc::into_inner(s).expect("one owner");
    drop(s);

    // Each new option has a bound, and the largest search answer (top_k x metadata) has one.
    for flags in [
        &["--max-metadata-bytes", "0"][..],
        &["--max-metadata-bytes", "16777217"],
        &["--max-concurrent", "0"],
        &["--max-concurrent", "1025"],
        &["--max-queued", "65537"],
        &["--max-top-k", "100000", "--max-metadata-bytes", "1048576"],
    ] {
        let out = bin()
            .args(["serve", "--data-dir"])
            .arg(&dir)
            .args(["--listen", "127.0.0.1:0"])
            .args(flags)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(flags[0]), "{flags:?}: {stderr}");
    }
}

/// Regression (issue 22): errors raised below the router (a bad request line, conflicting
/// Content-Length, a NUL in a header, a 100 KB URI, too many headers) came back with an empty
/// body. Every one is now JSON with its status, on a fresh connection or after a good request.
#[test]
fn errors_below_the_router_are_json() {
    let dir = tempdir("below-router");
    let s = Server::start(&dir, &[]);
    let host = authority(&s);
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
    let s = Server::start(&dir, &[]);
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

/// The server's commit failed at every write step (a file size limit swept over the store's
/// growth, page by page), then the server killed and restarted: each batch is in the store
/// whole or not at all, an acknowledged batch (200) always, and the documents before it are
/// all there.
#[test]
fn a_commit_failed_at_any_write_step_keeps_batches_whole() {
    let dir = tempdir("commit-sweep");
    let doc = |i: usize, tag: &str| json!({"id": format!("{tag}{i}"), "text": format!("{} {}", doc_text(&format!("{tag}{i}")), "pad ".repeat(300))});
    let mut s = Server::start(&dir, &[]);
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"store_text": true})).0, 201);
    let first: Vec<Value> = (0..20).map(|i| doc(i, "base")).collect();
    assert_eq!(s.json("POST", "/v1/collections/c/docs", json!({ "docs": first })).0, 200);
    let store = dir.join("neardup.redb");
    let mut acknowledged = 20u64;
    let mut outcomes = [0usize; 2];
    for step in 0..24u64 {
        let pid = rustix::process::Pid::from_raw(s.child.id() as i32).expect("pid");
        let size = std::fs::metadata(&store).expect("store").len();
        // From no room at all to a few pages more than the batch needs.
        let limit = size + step * 4096;
        rustix::process::prlimit(
            Some(pid),
            rustix::process::Resource::Fsize,
            rustix::process::Rlimit { current: Some(limit), maximum: None },
        )
        .expect("prlimit");
        let batch: Vec<Value> = (0..30).map(|i| doc(i, &format!("s{step}-"))).collect();
        let (status, body) = s.json("POST", "/v1/collections/c/docs", json!({ "docs": batch }));
        assert!(status == 200 || status == 503, "step {step}: {status} {body}");
        outcomes[usize::from(status == 200)] += 1;
        s.kill();
        s = Server::start(&dir, &[]);
        let (_, info) = s.call("GET", "/v1/collections/c", None);
        let n = info["documents"].as_u64().expect("count");
        let present = (0..30)
            .filter(|i| {
                s.call("GET", &format!("/v1/collections/c/docs/s{step}-{i}"), None).0 == 200
            })
            .count();
        assert!(present == 0 || present == 30, "step {step}: {present} of a batch of 30");
        if status == 200 {
            assert_eq!(present, 30, "step {step}: an acknowledged batch is there");
        }
        acknowledged += present as u64;
        assert_eq!(n, acknowledged, "step {step}: nothing before the batch was lost");
        let (st, health) = s.call("GET", "/v1/health", None);
        assert_eq!(st, 200, "step {step}: {health}");
    }
    assert!(
        outcomes[0] > 0 && outcomes[1] > 0,
        "the sweep failed some commits and not others: {outcomes:?}"
    );
}

const THESIS_SOURCE_A: &str = "开源软件的发展离不开社区的贡献。Debian 项目由来自世界各地的志愿者维护，\
    他们打包、测试并发布数以万计的软件包。每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。";
const THESIS_SOURCE_B: &str =
    "城市轨道交通的客流预测是线网规划的基础。本文采用四阶段法对远景年客流进行预测，\
    并结合土地利用规划对各站点的进出站量进行了修正，结果表明修正后的预测精度明显提高。";

/// A thesis copying one sentence from each source, with text of its own around them.
fn thesis() -> String {
    "第一章 绪论。我们认为，Debian 项目由来自世界各地的志愿者维护，他们打包、测试并发布数以万计的软件包。\
     此外，本文采用四阶段法对远景年客流进行预测，并结合土地利用规划对各站点的进出站量进行了修正。全文完。"
        .to_string()
}

#[test]
fn a_collection_with_passages_answers_the_thesis_check_as_the_cli_does() {
    let dir = tempdir("overlap");
    let s = Server::start(&dir, &[]);
    let (st, v) = s.json("PUT", "/v1/collections/lib", json!({"passages": true}));
    assert_eq!(st, 201, "{v}");
    assert_eq!(
        (v["store_text"].as_bool(), v["passages"]["min_units"].as_u64()),
        (Some(true), Some(12))
    );
    let (st, v) = s.json(
        "POST",
        "/v1/collections/lib/docs",
        json!({"docs": [{"id": "a", "text": THESIS_SOURCE_A}, {"id": 7, "text": "无关的文字，什么也没有抄。"}]}),
    );
    assert_eq!(st, 200, "{v}");
    // The second source arrives through a check (stored, as it is new).
    let (st, v) =
        s.json("POST", "/v1/collections/lib/check", json!({"id": "b", "text": THESIS_SOURCE_B}));
    assert_eq!((st, v["inserted"].as_bool()), (200, Some(true)), "{v}");

    let query = thesis();
    let (st, found) = s.json("POST", "/v1/collections/lib/overlap", json!({"text": query}));
    assert_eq!(st, 200, "{found}");
    let passages = found["passages"].as_array().expect("passages");
    assert_eq!(passages.len(), 2, "{found}");
    let chars: Vec<char> = query.chars().collect();
    for (p, source) in passages.iter().zip([THESIS_SOURCE_A, THESIS_SOURCE_B]) {
        let (a, b) = (
            p["start"].as_u64().expect("start") as usize,
            p["end"].as_u64().expect("end") as usize,
        );
        let copied: String = chars[a..b].iter().collect();
        assert!(source.contains(&copied), "{copied} in {source}");
        assert_eq!(p["source_text"].as_str(), Some(copied.as_str()));
    }
    assert_eq!(
        found["sources"]
            .as_array()
            .expect("sources")
            .iter()
            .map(|s| s["id"].clone())
            .collect::<Vec<_>>(),
        [json!("a"), json!("b")]
    );

    // The CLI gives the same passages on the same collection.
    let docs = dir.join("lib.jsonl");
    std::fs::write(
        &docs,
        format!(
            "{}\n{}\n{}\n",
            json!({"id": "a", "text": THESIS_SOURCE_A}),
            json!({"id": "7", "text": "无关的文字，什么也没有抄。"}),
            json!({"id": "b", "text": THESIS_SOURCE_B})
        ),
    )
    .expect("write");
    let q = dir.join("q.jsonl");
    std::fs::write(&q, format!("{}\n", json!({"id": "thesis", "text": query}))).expect("write");
    let out = bin().arg("overlap").arg(&q).arg("--against").arg(&docs).output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let key = |p: &Value| {
        [
            "start",
            "end",
            "source",
            "source_start",
            "source_end",
            "similarity",
            "start_byte",
            "end_byte",
        ]
        // Numbers compared as numbers: the CLI writes a similarity of 1 as `1`.
        .map(|k| p[k].as_f64().map_or(p[k].clone(), |x| json!(x)))
    };
    assert_eq!(
        cli.iter().map(key).collect::<Vec<_>>(),
        passages.iter().map(key).collect::<Vec<_>>()
    );

    // Excluded sources and the query's own id are never sources; unknown ids are named.
    let (_, v) = s.json(
        "POST",
        "/v1/collections/lib/overlap",
        json!({"text": query, "exclude_source": ["a"]}),
    );
    assert_eq!(v["sources"].as_array().map(Vec::len), Some(1), "{v}");
    let (_, v) =
        s.json("POST", "/v1/collections/lib/overlap", json!({"text": THESIS_SOURCE_A, "id": "a"}));
    assert_eq!(v["copied_chars"], json!(0), "{v}");
    let (st, v) = s.json(
        "POST",
        "/v1/collections/lib/overlap",
        json!({"text": query, "exclude_source": ["zz"]}),
    );
    assert_eq!((st, error_code(&v)), (400, "invalid_field"));
    assert!(v["error"]["message"].as_str().expect("message").contains("zz"), "{v}");

    // A deleted document is no longer a source; after a restart the index is built again from
    // the store and answers as before.
    assert_eq!(s.call("DELETE", "/v1/collections/lib/docs/b", None).0, 200);
    let (_, before) = s.json("POST", "/v1/collections/lib/overlap", json!({"text": query}));
    assert_eq!(before["passages"].as_array().map(Vec::len), Some(1), "{before}");
    s.stop();
    let s = Server::start(&dir, &[]);
    let (_, after) = s.json("POST", "/v1/collections/lib/overlap", json!({"text": query}));
    assert_eq!(after, before);

    // Collections without passages, and bad options, are refused by name.
    assert_eq!(s.json("PUT", "/v1/collections/plain", json!({})).0, 201);
    let (st, v) = s.json("POST", "/v1/collections/plain/overlap", json!({"text": query}));
    assert_eq!((st, error_code(&v)), (400, "no_passages"));
    let (st, v) = s.json("PUT", "/v1/collections/bad", json!({"passages": {"min_unit": 5}}));
    assert_eq!((st, error_code(&v)), (400, "invalid_field"));
    assert!(v["error"]["message"].as_str().expect("message").contains("min_unit"), "{v}");
    let (st, v) = s.json("PUT", "/v1/collections/bad", json!({"passages": {"seed_units": 0}}));
    assert_eq!(st, 400, "{v}");
    assert!(v["error"]["message"].as_str().expect("message").contains("seed_units"), "{v}");
    let (st, v) = s.json("POST", "/v1/collections/lib/overlap", json!({"text": query, "top_k": 3}));
    assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{v}");
    let (st, v) = s.json("POST", "/v1/collections/lib/overlap", json!({}));
    assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{v}");
}

/// A collection takes every search option of the library's table by its name (the service
/// had no `verify`, bands and rows or LSH weights), keeps them across a restart, and refuses
/// `keep` (a batch run's option) and unknown names with the list of names.
#[test]
fn a_collection_takes_the_search_options_of_the_table() {
    let dir = tempdir("search-options");
    let s = Server::start(&dir, &[]);
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
    let s = Server::start(&dir, &[]);
    let (_, after) = s.json("POST", "/v1/collections/banded/search", json!({"text": NEWS_A}));
    assert_eq!(before, after);
    let (_, again) = s.call("GET", "/v1/collections/banded", None);
    assert_eq!(info, again);
    // The stored settings answer: the copy is found.
    assert_eq!(before["hits"][0]["id"], "a", "{before}");
}

/// The conformance table's check rows (tests/conformance/table.json; the library is the
/// oracle) through the real service: a collection per row, the documents checked in order.
#[test]
fn the_conformance_table_through_the_service() {
    let table = common::conformance_table();
    let dir = tempdir("conformance-service");
    let s = Server::start(&dir, &[]);
    let docs = table["corpus"].as_array().expect("corpus");
    for (n, row) in table["checks"].as_array().expect("rows").iter().enumerate() {
        let path = format!("/v1/collections/c{n}");
        let mut settings = row["search"].clone();
        settings["preset"] = row["preset"].clone();
        let (st, v) = s.json("PUT", &path, settings);
        assert_eq!(st, 201, "{v}");
        for (i, at) in row["sequence"].as_array().expect("sequence").iter().enumerate() {
            let d = &docs[at.as_u64().expect("index") as usize];
            let (st, v) =
                s.json("POST", &format!("{path}/check"), json!({"id": d["id"], "text": d["text"]}));
            assert_eq!(st, 200, "{v}");
            let matches: Vec<&Value> =
                v["matches"].as_array().expect("matches").iter().map(|m| &m["id"]).collect();
            assert_eq!(
                json!({"duplicate": v["duplicate"], "matches": matches, "inserted": v["inserted"]}),
                row["expect"][i],
                "{}, check {i}: {v}",
                row["name"]
            );
        }
        let (_, v) = s.call("GET", &path, None);
        assert_eq!(v["documents"], json!(row["ids"].as_array().expect("ids").len()), "{v}");
    }
}

/// The conformance table's overlap rows checked against a collection (the service has no
/// within mode) through the real service: a passage collection per row, made with the row's
/// options, the collection stored, each query checked with the sources left out.
#[test]
fn the_conformance_table_overlap_rows_through_the_service() {
    let table = common::conformance_table();
    let o = &table["overlap"];
    let dir = tempdir("conformance-overlap-service");
    let s = Server::start(&dir, &[]);
    let mut ran = 0;
    for (n, row) in o["rows"].as_array().expect("rows").iter().enumerate() {
        if row["mode"] != "against" {
            continue;
        }
        let path = format!("/v1/collections/o{n}");
        let (st, v) = s.json("PUT", &path, json!({"passages": row["options"]}));
        assert_eq!(st, 201, "{v}");
        let (st, v) = s.json("POST", &format!("{path}/docs"), json!({"docs": o["collection"]}));
        assert_eq!(st, 200, "{v}");
        let (mut passages, mut copied) = (Vec::new(), serde_json::Map::new());
        for q in o["queries"].as_array().expect("queries") {
            let body = json!({"text": q["text"], "exclude_source": row["exclude_source"]});
            let (st, v) = s.json("POST", &format!("{path}/overlap"), body);
            assert_eq!(st, 200, "{v}");
            let mut found: Vec<Value> = v["passages"]
                .as_array()
                .expect("passages")
                .iter()
                .chain(v["excluded"].as_array().expect("excluded"))
                .map(|p| {
                    let mut p = p.clone();
                    p["query"] = q["id"].clone();
                    common::conformance_passage(&p)
                })
                .collect();
            found.sort_by_key(|p| (p["start"].as_u64(), p["end"].as_u64()));
            passages.extend(found);
            let id = neardup::id_from_json(&q["id"].to_string()).expect("id").into_owned();
            copied.insert(id, v["copied_chars"].clone());
        }
        assert_eq!(
            json!({"passages": passages, "copied_chars": copied}),
            row["expect"],
            "{}",
            row["name"]
        );
        ran += 1;
    }
    assert!(ran >= 4);
}

/// The conformance table's error rows of the search and passage options (the service takes
/// no pipeline options) through the real service: 400, naming the option.
#[test]
fn the_conformance_table_error_rows_through_the_service() {
    let table = common::conformance_table();
    let dir = tempdir("conformance-errors-service");
    let s = Server::start(&dir, &[]);
    let mut ran = 0;
    for row in table["errors"]["rows"].as_array().expect("rows") {
        let body = match row["group"].as_str() {
            Some("search") => row["options"].clone(),
            Some("passages") => json!({"passages": row["options"]}),
            _ => continue,
        };
        let (st, v) = s.json("PUT", "/v1/collections/e", body);
        assert_eq!(st, 400, "{row}: {v}");
        let name = row["names"].as_str().expect("names");
        let said = v["error"]["message"].as_str().expect("message").to_lowercase();
        assert!(said.contains(name), "{row}: {said}");
        ran += 1;
    }
    assert!(ran >= 6);
}

/// Issue 20: a search below the collection's threshold found 1 of 6 stored pairs at Jaccard
/// 0.5-0.6, silently. It now scans (said: `"scanned": true`) and finds every one, or, on a
/// collection larger than --max-scan-docs, is refused naming both thresholds; a check too.
#[test]
fn a_search_below_the_collections_threshold_is_exact_or_refused() {
    let dir = tempdir("below-threshold");
    let s = Server::start(&dir, &["--max-scan-docs", "20"]);
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
    let s = Server::start(&dir, &["--max-batch-docs", "5"]);
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

impl Server {
    /// A call whose answer is returned as the bytes sent (to see values as written).
    fn text(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let req = ureq::request(method, &format!("{}{path}", self.base))
            .timeout(Duration::from_secs(120))
            .set("Content-Type", "application/json");
        match req.send_string(body) {
            Ok(r) => (r.status(), r.into_string().expect("body")),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().expect("body")),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }
}

/// Regression (sweep 3): 200 stored copies with 65 KB of metadata, then one batch check of 250
/// documents with `top_k` 200 asked for an answer of 3 GB and aborted the server. Now a request
/// is admitted by what it may need, reckoned from its size, within `--max-memory-mb`.
#[test]
fn a_check_whose_answer_could_exceed_the_memory_budget_is_refused_and_the_server_lives() {
    let dir = tempdir("memory-budget");
    let s = Server::start(&dir, &["--max-memory-mb", "32", "--max-metadata-bytes", "70000"]);
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
    let s = Server::start(&dir, &[]);
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
    let s = Server::start(&dir, &[]);
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
    let s = Server::start(&dir, &["--max-memory-mb", "32", "--max-metadata-bytes", "70000"]);
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
        &["--max-memory-mb", "24", "--max-queued", "1", "--max-doc-bytes", "4000000"],
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
    let s = Server::start(&dir, &[]);
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
    let s = Server::start(&dir, &["--max-scan-docs", "100"]);
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
    let s = Arc::new(Server::start(&dir, &[]));
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
    let s = Server::start(&dir, &[]);
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

/// Regression (sweep 3): errors inside a batch named no place (`docs[50].text`); a check that
/// only asks (`"insert": false`) demanded an id; a MinHash collection showed `"hamming": 3`.
#[test]
fn errors_name_the_field_and_asking_needs_no_id() {
    let dir = tempdir("field-paths");
    let s = Server::start(&dir, &[]);
    assert_eq!(s.json("PUT", "/v1/collections/c", json!({"preset": "default"})).0, 201);
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"docs": [{"id": 1, "text": NEWS_A}, {"id": 2, "text": 5}]}),
    );
    assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{v}");
    assert!(v["error"]["message"].as_str().expect("m").starts_with("docs[1].text: "), "{v}");
    let (st, v) =
        s.json("POST", "/v1/collections/c/check", json!({"text": NEWS_A, "insert": false}));
    assert_eq!((st, &v["inserted"]), (200, &json!(false)), "{v}");
    let (st, v) = s.json("POST", "/v1/collections/c/check", json!({"text": NEWS_A}));
    assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{v}");
    assert!(v["error"]["message"].as_str().expect("m").contains("insert\": false"), "{v}");
    // A batch that only asks needs no ids either; one that stores names the document lacking
    // one.
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"docs": [{"text": NEWS_A}, {"text": NEWS_B}], "insert": false}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["results"].as_array().map(Vec::len), Some(2), "{v}");
    let (st, v) = s.json(
        "POST",
        "/v1/collections/c/check",
        json!({"docs": [{"text": NEWS_A, "insert": false}, {"text": NEWS_B}]}),
    );
    assert_eq!((st, error_code(&v)), (400, "invalid_field"), "{v}");
    assert!(v["error"]["message"].as_str().expect("m").starts_with("docs[1].id: "), "{v}");
    let (_, v) = s.call("GET", "/v1/collections/c", None);
    assert_eq!((&v["method"], &v["hamming"]), (&json!("minhash"), &Value::Null), "{v}");
    // `serve --help` says what a passage collection is and where its check is.
    let o = bin().args(["serve", "--help"]).output().expect("help");
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("\"passages\": true") && help.contains("/v1/collections/NAME/overlap"));
}

#[test]
fn the_service_credits_a_copy_converted_to_traditional_script() {
    let dir = tempdir("overlap-zh-script");
    let s = Server::start(&dir, &[]);
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

/// Words no other text shares: `tag` and a number each.
fn words(tag: &str, n: usize) -> String {
    (0..n).map(|i| format!("{tag}{i}w{}", (i * 7919) % 1000)).collect::<Vec<_>>().join(" ")
}

/// Issue 33 items 3 and 7 through the service: a 900-character copy inside quotation marks is
/// reported with its source (a quotation within a raised `max_quote_chars`), a copy after an
/// unclosed mark counts, the passage record is the CLI's key for key, and `7` and `"7"` are one
/// id for `exclude_source`.
#[test]
fn the_service_reports_a_quoted_copy_with_its_source_in_the_cli_record() {
    let dir = tempdir("overlap-quoted");
    let s = Server::start(&dir, &[]);
    let (st, v) =
        s.json("PUT", "/v1/collections/lib", json!({"passages": {"max_quote_chars": 1000}}));
    assert_eq!(st, 201, "{v}");
    let source = words("src", 200);
    let copy: String = source.chars().take(900).collect();
    let other = words("oth", 80);
    let (st, v) = s.json(
        "POST",
        "/v1/collections/lib/docs",
        json!({"docs": [{"id": 7, "text": source}, {"id": "8", "text": other}]}),
    );
    assert_eq!(st, 200, "{v}");
    let quoted = format!("{} \u{201c}{copy}\u{201d} {}", words("a", 30), other);
    let (st, found) =
        s.json("POST", "/v1/collections/lib/overlap", json!({"text": quoted, "id": "q"}));
    assert_eq!(st, 200, "{found}");
    let excluded = found["excluded"].as_array().expect("excluded");
    assert!(!excluded.is_empty(), "{found}");
    for p in excluded {
        assert_eq!(
            (&p["source"], &p["quotation"], &p["exclusion"]),
            (&json!("7"), &json!(true), &json!("quote"))
        );
    }
    assert!(
        found["copied_with_quotations"].as_f64().expect("with")
            > found["copied"].as_f64().expect("copied")
    );
    let seven =
        found["sources"].as_array().expect("sources").iter().find(|s| s["id"] == "7").cloned();
    assert!(seven.is_some_and(|s| s["quoted_chars"].as_u64() >= Some(850)), "{found}");
    // An unclosed mark quotes nothing.
    let unclosed = format!("{} \u{201c}{copy} {}", words("b", 30), words("c", 30));
    let (_, v) = s.json("POST", "/v1/collections/lib/overlap", json!({"text": unclosed}));
    assert!(v["copied"].as_f64().expect("copied") > 0.5, "{v}");
    // One id rule: 7 and "7" exclude the same document.
    for given in [json!(7), json!("7")] {
        let (st, v) = s.json(
            "POST",
            "/v1/collections/lib/overlap",
            json!({"text": quoted, "exclude_source": [given]}),
        );
        assert_eq!(st, 200, "{v}");
        let ids: Vec<Value> =
            v["sources"].as_array().expect("sources").iter().map(|s| s["id"].clone()).collect();
        assert_eq!(ids, [json!("8")], "{v}");
    }
    // The CLI's records of the same check: the same keys and values (the service adds the
    // source's text).
    let docs = dir.join("lib.jsonl");
    std::fs::write(
        &docs,
        format!("{}\n{}\n", json!({"id": "7", "text": source}), json!({"id": "8", "text": other})),
    )
    .expect("write");
    let q = dir.join("q.jsonl");
    std::fs::write(&q, format!("{}\n", json!({"id": "q", "text": quoted}))).expect("write");
    let out = bin()
        .args(["overlap", "--max-quote-chars", "1000"])
        .arg(&q)
        .arg("--against")
        .arg(&docs)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let mut ours: Vec<Value> = found["passages"]
        .as_array()
        .expect("passages")
        .iter()
        .chain(excluded)
        .map(|p| {
            let mut p = p.clone();
            p.as_object_mut().expect("an object").remove("source_text");
            p
        })
        .collect();
    ours.sort_by_key(|p| p["start"].as_u64());
    assert_eq!(ours, cli);
}
