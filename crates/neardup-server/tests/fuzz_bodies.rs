//! Fuzz target for every HTTP body (PROPTEST_CASES sets the count; `bench/fuzz.sh` runs it
//! long): the real router, in process, fed arbitrary bytes and arbitrary JSON on every route
//! that takes a body. Every answer is JSON with `{"error": {"code", "message"}}` or a success,
//! never a 500 and never a panic.

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use neardup_server::{open, router, Config, Limits, State};
use proptest::prelude::*;
use serde_json::{json, Value};
use tower::ServiceExt;

struct Fixture {
    runtime: tokio::runtime::Runtime,
    state: Arc<State>,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let limits =
            Limits { max_body_bytes: 1 << 16, max_doc_bytes: 1 << 12, ..Limits::default() };
        let state =
            open(Config { data_dir: dir.path().to_path_buf(), store: None, token: None, limits })
                .expect("open");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let f = Fixture { runtime, state, _dir: dir };
        for body in [json!({}), json!({"method": "both", "store_text": true})] {
            let name = if body["method"].is_null() { "c" } else { "d" };
            let (status, _) =
                call(&f, "PUT", &format!("/v1/collections/{name}"), body.to_string().into_bytes());
            assert_eq!(status, StatusCode::CREATED);
        }
        f
    })
}

fn call(f: &Fixture, method: &str, path: &str, body: Vec<u8>) -> (StatusCode, Value) {
    f.runtime.block_on(async {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .expect("request");
        let resp = router(f.state.clone()).oneshot(req).await.expect("infallible");
        let status = resp.status();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let value: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            panic!("{method} {path}: not JSON: {:?}", String::from_utf8_lossy(&bytes))
        });
        (status, value)
    })
}

const ROUTES: &[(&str, &str)] = &[
    ("PUT", "/v1/collections/f"),
    ("POST", "/v1/collections/c/docs"),
    ("POST", "/v1/collections/d/docs"),
    ("POST", "/v1/collections/c/search"),
    ("POST", "/v1/collections/d/check"),
    ("POST", "/v1/compare"),
];

fn check(status: StatusCode, value: &Value, what: &str) -> Result<(), TestCaseError> {
    prop_assert!(status != StatusCode::INTERNAL_SERVER_ERROR, "{what}: 500 {value}");
    if !status.is_success() {
        prop_assert!(value["error"]["code"].is_string(), "{what}: {status} {value}");
        prop_assert!(value["error"]["message"].is_string(), "{what}: {status} {value}");
    }
    Ok(())
}

/// JSON shaped like the service's requests, with wrong types and values mixed in.
fn request_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,40}".prop_map(Value::from),
        Just(json!("今天的新闻 today's news, repeated today's news")),
        Just(json!(20000)),
        Just(json!(-1)),
    ];
    let key = prop_oneof![
        Just("docs"),
        Just("id"),
        Just("text"),
        Just("tokens"),
        Just("metadata"),
        Just("top_k"),
        Just("threshold"),
        Just("insert"),
        Just("a"),
        Just("b"),
        Just("preset"),
        Just("spec"),
        Just("method"),
        Just("hamming"),
        Just("recall"),
        Just("store_text"),
        Just("minhash"),
        Just("num_perm"),
        Just("features"),
        Just("kind"),
        Just("n"),
        Just("zzz"),
    ]
    .prop_map(String::from);
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_bytes_on_every_route(route in 0..ROUTES.len(), body in prop::collection::vec(any::<u8>(), 0..300)) {
        let f = fixture();
        let (method, path) = ROUTES[route];
        let (status, value) = call(f, method, path, body);
        check(status, &value, path)?;
    }

    #[test]
    fn arbitrary_json_on_every_route(route in 0..ROUTES.len(), body in request_json()) {
        let f = fixture();
        let (method, path) = ROUTES[route];
        let (status, value) = call(f, method, path, body.to_string().into_bytes());
        check(status, &value, &format!("{path} {body}"))?;
    }

    #[test]
    fn arbitrary_paths(segment in "\\PC{0,20}", id in "[a-z%0-9]{0,12}") {
        let f = fixture();
        let enc: String = segment.bytes().map(|b| format!("%{b:02X}")).collect();
        for path in [format!("/v1/collections/{enc}"), format!("/v1/collections/c/docs/{id}")] {
            let (status, value) = call(f, "GET", &path, Vec::new());
            check(status, &value, &path)?;
        }
    }
}
