//! Runs the real `neardup serve` process on an ephemeral port for what only the process does:
//! its flags and exit codes, authentication by token file, shutdown on SIGTERM, crash recovery
//! (SIGKILL mid-stream, 20 times), file size limits, what it prints, and answers compared with
//! the CLI's. The HTTP API itself (every route and error, the limits, stores of earlier
//! formats) is tested in-process in `crates/neardup-server/tests/service.rs`.

use std::io::{BufRead, BufReader};
use std::path::Path;
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
#[path = "../../neardup-server/tests/support/http.rs"]
mod http;
#[path = "../../neardup-server/tests/support/pg.rs"]
mod pg;
use http::{doc_text, error_code, store_texts, Endpoint, NEWS_A, NEWS_B};

/// A running server; killed when dropped.
struct Server {
    child: Child,
    base: String,
    stderr: Arc<Mutex<Vec<String>>>,
    token: Option<String>,
}

impl Server {
    /// The server on the embedded store in `data`, or with `NEARDUP_TEST_STORE=postgres` on a
    /// database of its own for `data` on the test process's PostgreSQL cluster.
    fn start(data: &Path, extra: &[&str]) -> Server {
        let mut serve = bin();
        serve.arg("serve");
        if pg::on_postgres() {
            serve.args(["--store", &pg::database_for(data)]);
        } else {
            serve.arg("--data-dir").arg(data);
        }
        Server::spawn(serve, extra)
    }

    /// The server on the store `url`.
    fn on_store(url: &str, extra: &[&str]) -> Server {
        let mut serve = bin();
        serve.args(["serve", "--store", url]);
        Server::spawn(serve, extra)
    }

    fn spawn(mut serve: Command, extra: &[&str]) -> Server {
        let mut child = serve
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

impl Endpoint for Server {
    fn base(&self) -> &str {
        &self.base
    }

    fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
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
    if pg::on_postgres() {
        return; // the I/O error is the embedded store's file size limit; on PostgreSQL a database restart is the fault (the_postgres_store_outlives_servers_and_database_restarts)
    }
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

/// Regression: an empty store file was served as a new, empty, healthy store; a truncated one,
/// one with a page zeroed or with bytes appended made `serve` panic with a backtrace.
#[test]
fn a_damaged_store_file_is_refused_by_name() {
    if pg::on_postgres() {
        return; // the damage is to the embedded store's file
    }
    let dir = tempdir("damaged-store");
    let texts: Vec<(String, String)> = (0..300)
        .map(|i| (format!("d{i}"), format!("document number {i} with words {i}")))
        .collect();
    let texts: Vec<(&str, &str)> = texts.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let file = {
        let s = Server::start(&dir, &[]);
        store_texts(&s, &texts);
        s.stop();
        dir.join("neardup.redb")
    };
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

// ---- issue 22: an adversarial sweep of the service ---------------------------------------------

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

/// The server's commit failed at every write step (a file size limit swept over the store's
/// growth, page by page), then the server killed and restarted: each batch is in the store
/// whole or not at all, an acknowledged batch (200) always, and the documents before it are
/// all there.
#[test]
fn a_commit_failed_at_any_write_step_keeps_batches_whole() {
    if pg::on_postgres() {
        return; // the faults are of the embedded store's file (its size limit)
    }
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

// ---- the PostgreSQL store -----------------------------------------------------------------------

/// `neardup serve --store postgres://...`, as an operator runs it: the collections outlive the
/// server; a second server on the same database answers as the first; a database that does not
/// exist is refused at start; the password never appears in what the servers print; the
/// database restarted under the server: requests answer 503 with `Retry-After` while it is
/// away, and the server recovers by itself, with everything acknowledged before.
#[test]
fn the_postgres_store_outlives_servers_and_database_restarts() {
    let cluster = pg::Cluster::new();
    let url = cluster.database("served");
    // Trust authentication ignores the password: it is here to be hidden.
    let secret = "pw-s3cret-never-shown";
    let with_password = url.replacen("neardup@", &format!("neardup:{secret}@"), 1);
    let s = Server::on_store(&with_password, &[]);
    assert_eq!(s.json("PUT", "/v1/collections/news", json!({"store_text": true})).0, 201);
    // Metadata as the client wrote it: `1.10` and a 30-digit integer come back byte for byte.
    let docs = format!(
        r#"{{"docs": [{{"id": "a", "text": {a}, "metadata": {{"n":1.10,"big":123456789012345678901234567890}}}},
                      {{"id": "b", "text": {b}}}]}}"#,
        a = json!(NEWS_A),
        b = json!(NEWS_B)
    );
    let r = ureq::post(&format!("{}/v1/collections/news/docs", s.base))
        .set("Content-Type", "application/json")
        .send_string(&docs)
        .expect("insert");
    assert_eq!(r.status(), 200);
    // A second server on the same database answers as the first, at once.
    let second = Server::on_store(&with_password, &[]);
    let (st, v) = second.json("POST", "/v1/collections/news/search", json!({"text": NEWS_A}));
    assert_eq!((st, &v["hits"][0]["id"]), (200, &json!("a")), "{v}");
    let printed = second.stderr.lock().expect("lock").join("\n");
    assert!(printed.contains("***") && !printed.contains(secret), "{printed}");
    second.stop();
    // A URL that names no database is refused at start, naming it without the password.
    let out = bin()
        .args(["serve", "--listen", "127.0.0.1:0", "--store"])
        .arg(with_password.replace("/served", "/missing"))
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("missing") && stderr.contains("***"), "{stderr}");
    assert!(!stderr.contains(secret), "{stderr}");

    // The database restarted under load: a client streams checks of new pages throughout,
    // each acknowledged one recorded.
    let stop = Arc::new(AtomicBool::new(false));
    let (base, stop2) = (s.base.clone(), stop.clone());
    let loader = std::thread::spawn(move || {
        let (mut acked, mut refused) = (Vec::new(), 0usize);
        for i in 0.. {
            if stop2.load(Ordering::Relaxed) {
                break;
            }
            let id = format!("load{i}");
            let r = ureq::post(&format!("{base}/v1/collections/news/check"))
                .timeout(Duration::from_secs(20))
                .send_json(json!({"id": id, "text": doc_text(&id)}));
            match r {
                Ok(resp) => {
                    let v: Value = resp.into_json().expect("json");
                    assert_eq!(v["inserted"], json!(true), "{id}: {v}");
                    acked.push(id);
                }
                Err(ureq::Error::Status(503, resp)) => {
                    assert_eq!(resp.header("Retry-After"), Some("1"));
                    refused += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("{id}: {e}"),
            }
        }
        (acked, refused)
    });
    std::thread::sleep(Duration::from_millis(300));
    cluster.pause();
    let r = ureq::post(&format!("{}/v1/collections/news/search", s.base))
        .send_json(json!({"text": NEWS_A}));
    match r {
        Err(ureq::Error::Status(503, resp)) => {
            assert_eq!(resp.header("Retry-After"), Some("1"));
            let v: Value = resp.into_json().expect("json");
            assert_eq!(error_code(&v), "storage_unavailable", "{v}");
            assert!(!v.to_string().contains(secret), "{v}");
        }
        other => panic!("with the database away: {other:?}"),
    }
    assert_eq!(s.call("GET", "/v1/health", None).0, 503);
    cluster.resume();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while s.call("GET", "/v1/health", None).0 != 200 {
        assert!(std::time::Instant::now() < deadline, "never recovered");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (st, v) = s.json("POST", "/v1/collections/news/search", json!({"text": NEWS_A}));
    assert_eq!((st, &v["hits"][0]["id"]), (200, &json!("a")), "{v}");
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (acked, refused) = loader.join().expect("the loader");
    assert!(refused > 0 && acked.len() > 10, "{} acknowledged, {refused} refused", acked.len());
    for id in &acked {
        let (st, v) = s.call("GET", &format!("/v1/collections/news/docs/{id}"), None);
        assert_eq!(st, 200, "acknowledged {id} lost: {v}");
    }
    let (st, v) = s.json("POST", "/v1/collections/news/check", json!({"id": "c", "text": "a new text about something else entirely, with enough words to sketch"}));
    assert_eq!((st, &v["inserted"]), (200, &json!(true)), "{v}");
    let expected = acked.len() + 3;
    let printed = s.stderr.lock().expect("lock").join("\n");
    assert!(!printed.contains(secret), "{printed}");
    s.stop();

    // A new server finds everything, metadata byte for byte.
    let s = Server::on_store(&url, &[]);
    let (_, v) = s.call("GET", "/v1/collections/news", None);
    assert_eq!(v["documents"], json!(expected), "{v}");
    let body = ureq::get(&format!("{}/v1/collections/news/docs/a", s.base))
        .call()
        .expect("get")
        .into_string()
        .expect("body");
    assert!(
        body.contains(r#""metadata":{"n":1.10,"big":123456789012345678901234567890}"#),
        "{body}"
    );
    assert_eq!(
        cluster.sql("served", "SELECT count(*) FROM neardup_docs").trim(),
        expected.to_string()
    );
}

/// `neardup store copy`: an embedded store into PostgreSQL and back again, every collection
/// with its documents byte for byte (the checksums of all three agree), each served with the
/// same answers; a second copy onto a collection the target has is refused, writing nothing.
#[test]
fn a_store_is_copied_into_postgres_and_back_and_answers_the_same() {
    if pg::on_postgres() {
        return; // it serves the embedded store and PostgreSQL by name (run in the default pass)
    }
    let dir = tempdir("store-copy");
    let (first, back) = (dir.join("first"), dir.join("back"));
    let cluster = pg::Cluster::new();
    let url = cluster.database("copied");
    {
        let s = Server::start(&first, &[]);
        assert_eq!(s.json("PUT", "/v1/collections/pages", json!({"method": "simhash"})).0, 201);
        store_texts(&s, &[("a", NEWS_A), ("b", NEWS_B)]); // collection "c", with its texts
        let docs: Vec<Value> = (0..300)
            .map(|i| {
                json!({"id": format!("p{i}"), "text": doc_text(&format!("page {i}")),
                            "metadata": {"i": i}})
            })
            .collect();
        let (st, v) = s.json("POST", "/v1/collections/pages/docs", json!({"docs": docs}));
        assert_eq!(st, 200, "{v}");
        // More than one batch of the copy (10,000 documents a transaction).
        assert_eq!(s.json("PUT", "/v1/collections/many", json!({})).0, 201);
        let many: Vec<Value> = (0..10_500)
            .map(|i| json!({"id": format!("m{i}"), "text": format!("short {i}")}))
            .collect();
        for part in many.chunks(5_000) {
            let (st, v) = s.json("POST", "/v1/collections/many/docs", json!({"docs": part}));
            assert_eq!(st, 200, "{v}");
        }
        s.stop();
    }
    let copy = |from: &Path, to: &str| {
        bin().args(["store", "copy", "--from"]).arg(from).args(["--to", to]).output().expect("run")
    };
    let out = copy(&first, &url);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let counts: Vec<(&str, u64)> = lines
        .iter()
        .map(|l| (l["collection"].as_str().expect("name"), l["documents"].as_u64().expect("n")))
        .collect();
    let stored = |c: &str| counts.iter().find(|(n, _)| *n == c).map(|(_, n)| *n);
    assert_eq!((stored("c"), stored("pages")), (Some(2), Some(300)), "{lines:?}");
    assert_eq!(stored("many"), Some(10_500), "{lines:?}");

    // Onto a collection the target has: refused, naming it.
    let again = copy(&first, &url);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("already has a collection"), "{stderr}");
    assert_eq!(cluster.sql("copied", "SELECT count(*) FROM neardup_docs").trim(), "10802");

    // And back into a new data directory.
    let out =
        bin().args(["store", "copy", "--from", &url, "--to"]).arg(&back).output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let back_lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(back_lines, lines, "the same documents and checksums both ways");
    // And from one database to another (each row of the source visited outside its store's
    // runtime, while the target writes).
    let other = cluster.database("copied_again");
    let out = bin().args(["store", "copy", "--from", &url, "--to", &other]).output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(again, lines, "the same documents and checksums");

    // Each store serves the same answers.
    let answers = |s: &Server| {
        let mut out = Vec::new();
        for (c, id) in [("c", "a"), ("c", "b"), ("pages", "p7"), ("pages", "p299")] {
            out.push(s.call("GET", &format!("/v1/collections/{c}/docs/{id}"), None).1);
        }
        for (c, text) in [("c", NEWS_A.to_string()), ("pages", doc_text("page 42"))] {
            out.push(
                s.json("POST", &format!("/v1/collections/{c}/search"), json!({"text": text})).1,
            );
        }
        out.push(s.call("GET", "/v1/collections", None).1);
        out
    };
    let want = answers(&Server::start(&first, &[]));
    assert_eq!(want[4]["hits"][0]["id"], json!("a"), "{}", want[4]);
    assert_eq!(answers(&Server::on_store(&url, &[])), want);
    assert_eq!(answers(&Server::start(&back, &[])), want);
}
