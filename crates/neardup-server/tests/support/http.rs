//! An HTTP client for the service's tests: JSON calls through `ureq`, and raw connections for
//! requests no HTTP client would send. Shared by the server crate's in-process tests and the
//! CLI's tests of the `neardup serve` process (which include this file by path).

#![allow(dead_code)] // each test binary uses part of this module

use std::time::Duration;

use serde_json::Value;

/// A running service: its base URL (`http://127.0.0.1:PORT`) and the token its calls carry.
pub trait Endpoint {
    fn base(&self) -> &str;

    fn token(&self) -> Option<&str> {
        None
    }

    /// A request; the answer's status and its body as JSON (a string when it is not JSON).
    fn call(&self, method: &str, path: &str, body: Option<&[u8]>) -> (u16, Value) {
        let mut req = ureq::request(method, &format!("{}{path}", self.base()))
            .timeout(Duration::from_secs(30));
        if let Some(t) = self.token() {
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

    /// A call whose answer is returned as the bytes sent (to see values as written).
    fn text(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let req = ureq::request(method, &format!("{}{path}", self.base()))
            .timeout(Duration::from_secs(120))
            .set("Content-Type", "application/json");
        match req.send_string(body) {
            Ok(r) => (r.status(), r.into_string().expect("body")),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().expect("body")),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    /// The `host:port` of the service.
    fn authority(&self) -> String {
        self.base().trim_start_matches("http://").to_string()
    }
}

/// The error code of an error answer (a panic when the body is not one).
pub fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("not an error body: {v}"))
}

/// A response read off a raw connection.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    /// Header names in lowercase, with their values.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON; a panic naming the status and a short preview otherwise.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| {
            let preview: String = self.body.chars().take(200).collect();
            panic!("{}: not a JSON body: {preview:?}", self.status)
        })
    }
}

/// A raw connection to the service, for requests no HTTP client would send.
pub struct Raw {
    pub stream: std::net::TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    pub fn connect(s: &impl Endpoint) -> Raw {
        let stream = std::net::TcpStream::connect(s.authority()).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        Raw { stream, buf: Vec::new() }
    }

    pub fn send(&mut self, bytes: &[u8]) -> &mut Raw {
        use std::io::Write as _;
        // The server may answer and close before it has read everything (a refused head).
        let _ = self.stream.write_all(bytes);
        self
    }

    /// Reads one response (head, then a body of Content-Length bytes).
    pub fn response(&mut self) -> RawResponse {
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
pub fn raw(s: &impl Endpoint, request: &[u8]) -> RawResponse {
    Raw::connect(s).send(request).response()
}

/// A request with a JSON body, `Connection: close`, and the extra header lines given.
pub fn raw_request(
    s: &impl Endpoint,
    method: &str,
    path: &str,
    extra: &str,
    body: &str,
) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        s.authority(),
        body.len()
    )
    .into_bytes()
}

/// A document text of its own for an id: a sentence with numbers drawn from the id.
pub fn doc_text(id: &str) -> String {
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

/// Two near-copies of a Chinese news paragraph (one word changed).
pub const NEWS_A: &str = "本市今天上午召开新闻发布会，介绍今年夏季防汛工作的总体安排。市水务局负责人表示，今年入汛以来全市平均降雨量比常年同期偏多两成，部分河道水位持续偏高。";
pub const NEWS_B: &str = "本市今天上午召开新闻发布会，介绍今年夏季防汛工作的总体安排。市水务局负责人说，今年入汛以来全市平均降雨量比常年同期偏多两成，部分河道水位持续偏高。";

/// Creates collection `c` (texts kept) and stores `texts` in it, each with its id as metadata.
pub fn store_texts(s: &impl Endpoint, texts: &[(&str, &str)]) {
    let (status, _) = s.json("PUT", "/v1/collections/c", serde_json::json!({"store_text": true}));
    assert_eq!(status, 201);
    let docs: Vec<Value> = texts
        .iter()
        .map(|(id, text)| serde_json::json!({"id": id, "text": text, "metadata": {"id": id}}))
        .collect();
    let (status, body) =
        s.json("POST", "/v1/collections/c/docs", serde_json::json!({ "docs": docs }));
    assert_eq!(status, 200, "{body}");
}
