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

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neardup-serve-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

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
                let body = json!({"docs": [{"id": id, "text": text}]}).to_string();
                let r = ureq::post(&format!("{base}/v1/collections/crawl/docs"))
                    .timeout(Duration::from_secs(5))
                    .send_string(&body);
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
