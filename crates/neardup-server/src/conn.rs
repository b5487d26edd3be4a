//! The connections the service reads and writes through: hyper's own answers to requests it
//! cannot parse, which it writes before any of our code runs, are turned into JSON errors.
//!
//! hyper (1.x) parses each request head itself. When the head is malformed (a bad request line
//! or method, a header with a NUL or without a name, conflicting or non-numeric
//! `Content-Length`, a bad `Transfer-Encoding`), has a URI over 65,534 bytes, more than 100
//! header fields or is over about 400 KiB, it writes a status line and headers with an empty
//! body (400, 414 or 431) and closes the connection; no hook of hyper's, axum's or tower's runs
//! for it. So the socket is wrapped: a write that ends with such an answer has it replaced by a
//! `{"error": {"code", "message"}}` body with the same status, the message saying what is wrong
//! from the head just read.
//!
//! An answer is taken for hyper's when it is the last thing written, a head alone (status 400,
//! 414 or 431, `content-length: 0`) with no `Content-Type`. The service never writes such a
//! head: every answer of its own is JSON, HTML or text with a `Content-Type`, and no body it
//! writes holds a CR LF (JSON escapes them), so a head cannot be found inside one. Writes are
//! not vectored here (hyper then copies each answer into one buffer), so a head is never split
//! across writes by hyper's own choice. If hyper ever answers differently, the wrapper lets the
//! bytes through as they are: it can fail to help, never corrupt an answer.
//!
//! What remains without a JSON body, because hyper writes nothing at all: a connection closed
//! in the middle of a head (there is no one to answer), an HTTP/2 preface (hyper closes the
//! connection) and I/O errors.

use std::future::Future as _;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// hyper's limits on a request head (its defaults: `DEFAULT_MAX_HEADERS` and
/// `DEFAULT_MAX_BUFFER_SIZE` in `proto/h1`), and the longest URI it takes (`MAX_URI_LEN`).
const HYPER_MAX_HEADERS: usize = 100;
const HYPER_MAX_HEAD_BYTES: usize = 8192 + 4096 * 100;
const HYPER_MAX_URI_BYTES: usize = u16::MAX as usize - 1;

/// How much of what was read since the last answer is kept to say what is wrong with a head.
const KEEP_READ: usize = 64 << 10;

/// After answering a refused head, input is read and dropped for this long (or this many
/// bytes) before the connection closes: closing with unread input makes the kernel send a
/// reset, which can destroy the answer before the client reads it (nginx's lingering close).
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 4 << 20;

/// A TCP listener whose connections answer hyper's refusals in JSON.
#[derive(Debug)]
pub(crate) struct Listener {
    inner: TcpListener,
    max_uri_bytes: usize,
}

impl Listener {
    pub(crate) fn new(inner: TcpListener, max_uri_bytes: usize) -> Listener {
        Listener { inner, max_uri_bytes }
    }
}

impl axum::serve::Listener for Listener {
    type Io = JsonErrors<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // tokio's listener retries (and sleeps on) accept errors such as EMFILE.
        let (io, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        (JsonErrors::new(io, self.max_uri_bytes), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection that replaces hyper's empty-bodied answer to a refused head with JSON.
#[derive(Debug)]
pub(crate) struct JsonErrors<IO> {
    io: IO,
    max_uri_bytes: usize,
    /// Bytes read since the last write (at most [`KEEP_READ`]): the head hyper refuses.
    read: Vec<u8>,
    /// The JSON answer that replaced hyper's, and how much of it is written.
    answer: Vec<u8>,
    written: usize,
    /// Set once the answer is sent and the write side shut: input is then read and dropped.
    linger: Option<Linger>,
}

#[derive(Debug)]
struct Linger {
    until: Pin<Box<tokio::time::Sleep>>,
    dropped: usize,
}

impl<IO> JsonErrors<IO> {
    fn new(io: IO, max_uri_bytes: usize) -> JsonErrors<IO> {
        JsonErrors {
            io,
            max_uri_bytes,
            read: Vec::new(),
            answer: Vec::new(),
            written: 0,
            linger: None,
        }
    }
}

impl<IO> JsonErrors<IO> {
    /// Drops what was read, and the buffer with it if it grew (after a body): an idle
    /// connection keeps no more than a small head's worth.
    fn forget_read(&mut self) {
        if self.read.capacity() > 8 << 10 {
            self.read = Vec::new();
        } else {
            self.read.clear();
        }
    }
}

impl<IO: AsyncWrite + Unpin> JsonErrors<IO> {
    /// Writes what is left of the replacing answer.
    fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.answer.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.answer[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for JsonErrors<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        let new = &buf.filled()[before..];
        let room = KEEP_READ.saturating_sub(this.read.len());
        this.read.extend_from_slice(&new[..new.len().min(room)]);
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for JsonErrors<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_answer(cx))?;
        match hyper_refusal(buf) {
            // Whatever comes before it (the end of an earlier answer) goes out first.
            Some(refusal) if refusal.at > 0 => {
                Pin::new(&mut this.io).poll_write(cx, &buf[..refusal.at])
            }
            Some(refusal) => {
                this.answer = json_answer(&refusal, &this.read, this.max_uri_bytes);
                this.written = 0;
                this.forget_read();
                // hyper's bytes count as written: ours go out in their place, here as far as
                // the socket takes them and the rest when hyper flushes (which it does next).
                // Never `ready!` here: a retried write would build the answer again.
                if let Poll::Ready(Err(e)) = this.poll_answer(cx) {
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(buf.len()))
            }
            None => {
                let n = ready!(Pin::new(&mut this.io).poll_write(cx, buf))?;
                // An answer has begun: what is read next is the next request.
                this.forget_read();
                Poll::Ready(Ok(n))
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_answer(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_answer(cx))?;
        if this.answer.is_empty() {
            return Pin::new(&mut this.io).poll_shutdown(cx);
        }
        if this.linger.is_none() {
            ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            this.linger = Some(Linger { until: Box::pin(tokio::time::sleep(LINGER)), dropped: 0 });
        }
        let Some(linger) = this.linger.as_mut() else { return Poll::Ready(Ok(())) };
        let mut scratch = [0u8; 8192];
        while linger.until.as_mut().poll(cx).is_pending() && linger.dropped < LINGER_BYTES {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.io).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => {
                    linger.dropped += buf.filled().len();
                }
                // The end of the input, or an error: nothing more to wait for.
                Poll::Ready(_) => break,
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// hyper's answer to a head it refused, found at the end of a write.
#[derive(Debug, PartialEq)]
struct Refusal<'a> {
    /// Where its status line starts.
    at: usize,
    status: u16,
    /// Its `date` header's value, kept in ours.
    date: Option<&'a [u8]>,
}

/// hyper's answer to a refused head, if `buf` ends with one: a status line of 400, 414 or 431
/// and headers without `Content-Type`, with `content-length: 0`, ending the write.
fn hyper_refusal(buf: &[u8]) -> Option<Refusal<'_>> {
    if !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    // hyper's head is a status line, content-length and date: well under 256 bytes.
    let from = buf.len().saturating_sub(256);
    let at = from + buf[from..].windows(9).rposition(|w| w == b"HTTP/1.1 ")?;
    let head = &buf[at..buf.len() - 4];
    let mut lines = head.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let status: u16 = std::str::from_utf8(lines.next()?.get(9..12)?).ok()?.parse().ok()?;
    if !matches!(status, 400 | 414 | 431) {
        return None;
    }
    let (mut empty, mut date) = (false, None);
    for line in lines {
        let colon = line.iter().position(|&b| b == b':')?;
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"content-type") {
            return None;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            empty = value == b"0";
        } else if name.eq_ignore_ascii_case(b"date") {
            date = Some(value);
        }
    }
    empty.then_some(Refusal { at, status, date })
}

/// Our answer in place of hyper's: the same status, a JSON error saying what is wrong.
fn json_answer(refusal: &Refusal<'_>, read: &[u8], max_uri_bytes: usize) -> Vec<u8> {
    let (reason, code, message) = match refusal.status {
        414 => ("URI Too Long", "uri_too_long", uri_too_long(read, max_uri_bytes)),
        431 => ("Request Header Fields Too Large", "headers_too_large", headers_too_large(read)),
        _ => ("Bad Request", "bad_request", bad_head(read)),
    };
    let body = json!({"error": {"code": code, "message": message}}).to_string();
    let mut out = format!(
        "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n",
        refusal.status,
        body.len()
    )
    .into_bytes();
    if let Some(date) = refusal.date {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(date);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body.as_bytes());
    out
}

/// A client's bytes for a message: quoted, cut at 60 characters.
fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{:?}...", &text[..at]),
        None => format!("{text:?}"),
    }
}

/// The lines of the head at the start of `read` (without their line ends), up to its blank
/// line or the end of what was kept, and whether the head was complete.
fn head_lines(read: &[u8]) -> (Vec<&[u8]>, bool) {
    let start = read.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(read.len());
    let mut lines = Vec::new();
    for line in read[start..].split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return (lines, true);
        }
        lines.push(line);
    }
    (lines, false)
}

fn uri_too_long(read: &[u8], max_uri_bytes: usize) -> String {
    let (lines, _) = head_lines(read);
    let target = lines.first().and_then(|l| l.split(|&b| b == b' ').nth(1));
    match target {
        // The request line was kept whole only if it ends before what was kept does.
        Some(t) if lines.len() > 1 => {
            format!("the URI has {} bytes, the limit is {max_uri_bytes}", t.len())
        }
        _ => format!("the URI has over {HYPER_MAX_URI_BYTES} bytes, the limit is {max_uri_bytes}"),
    }
}

fn headers_too_large(read: &[u8]) -> String {
    let (lines, complete) = head_lines(read);
    let fields = lines.len().saturating_sub(1);
    if fields > HYPER_MAX_HEADERS {
        let over = if complete { "" } else { "at least " };
        format!(
            "the request has {over}{fields} header fields, at most {HYPER_MAX_HEADERS} are taken"
        )
    } else {
        format!("the request head is over {HYPER_MAX_HEAD_BYTES} bytes (its headers are too long)")
    }
}

/// Says what is wrong with a head hyper refused with 400, checking what hyper checks.
fn bad_head(read: &[u8]) -> String {
    let what = bad_head_detail(read);
    format!("the request cannot be parsed: {what}")
}

fn bad_head_detail(read: &[u8]) -> String {
    let (lines, _) = head_lines(read);
    let Some(request_line) = lines.first() else {
        return "the request line is missing".into();
    };
    let parts: Vec<&[u8]> = request_line.split(|&b| b == b' ').collect();
    let is_token = |s: &[u8]| {
        !s.is_empty()
            && s.iter().all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    match parts.as_slice() {
        [method, target, version] => {
            if !is_token(method) {
                return format!("the method {} is not a token", preview(method));
            }
            if target.is_empty() || !target.iter().all(|&b| b.is_ascii_graphic() || b >= 0x80) {
                return format!("the URI {} holds a byte that is not allowed", preview(target));
            }
            if !matches!(*version, b"HTTP/1.1" | b"HTTP/1.0") {
                return format!("the version {} is not HTTP/1.1 or HTTP/1.0", preview(version));
            }
        }
        _ => {
            return format!("the request line {} is not METHOD URI HTTP/1.1", preview(request_line))
        }
    }
    let http10 = request_line.ends_with(b"HTTP/1.0");
    let mut lengths: Vec<&[u8]> = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(1) {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return format!("header line {i} {} has no colon", preview(line));
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if !is_token(name) {
            return format!("header line {i} has no valid field name: {}", preview(name));
        }
        if let Some(at) = value.iter().position(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return format!(
                "header {} holds the control byte 0x{:02x} at offset {at} of its value",
                preview(name),
                value[at]
            );
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
                return format!("Content-Length {} is not a number", preview(value));
            }
            if let Some(first) = lengths.iter().find(|l| **l != value) {
                return format!(
                    "conflicting Content-Length headers ({} and {})",
                    preview(first),
                    preview(value)
                );
            }
            lengths.push(value);
        }
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if http10 {
                return "Transfer-Encoding is not allowed in HTTP/1.0".into();
            }
            let last = value.rsplit(|&b| b == b',').next().unwrap_or(b"").trim_ascii();
            if !last.eq_ignore_ascii_case(b"chunked") {
                return format!("Transfer-Encoding {} does not end with chunked", preview(value));
            }
        }
    }
    "its head is malformed".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYPER_400: &[u8] = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\
        date: Tue, 24 Nov 2026 00:00:00 GMT\r\n\r\n";

    #[test]
    fn hyper_refusals_are_found_at_the_end_of_a_write_only() {
        let r = hyper_refusal(HYPER_400).expect("found");
        assert_eq!((r.at, r.status), (0, 400));
        assert_eq!(r.date, Some(&b"Tue, 24 Nov 2026 00:00:00 GMT"[..]));
        // After the end of an earlier answer in the same write.
        let mut both = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
        both.extend_from_slice(HYPER_400);
        assert_eq!(hyper_refusal(&both).map(|r| r.at), Some(both.len() - HYPER_400.len()));
        // Our own answers: a Content-Type, a body, another status, a HEAD answer.
        for ours in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
               content-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            // A HEAD answer: a head alone, with the length its body would have.
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
              content-length: 95\r\n\r\n",
        ] {
            assert_eq!(hyper_refusal(ours), None, "{}", String::from_utf8_lossy(ours));
        }
    }

    /// A socket that takes at most 7 bytes a write and is not ready every other time; reads
    /// give the head `input`, then the end.
    #[derive(Debug, Default)]
    struct Trickle {
        input: Vec<u8>,
        out: Vec<u8>,
        busy: bool,
        shut: bool,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let input = std::mem::take(&mut self.input);
            buf.put_slice(&input);
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.busy = !self.busy;
            if self.busy {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let n = buf.len().min(7);
            self.out.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.shut = true;
            Poll::Ready(Ok(()))
        }
    }

    /// Partial and refused writes, as hyper meets them on a busy socket: an earlier answer
    /// goes out as it was, hyper's refusal is replaced by exactly one JSON answer.
    #[tokio::test]
    async fn a_refusal_is_replaced_once_through_partial_writes() {
        use std::future::poll_fn;
        let head = b"GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n".to_vec();
        let mut conn = JsonErrors::new(Trickle { input: head.clone(), ..Trickle::default() }, 8192);
        let mut scratch = [0u8; 64];
        poll_fn(|cx| Pin::new(&mut conn).poll_read(cx, &mut ReadBuf::new(&mut scratch)))
            .await
            .expect("read");
        let earlier = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        let mut hyper_writes = earlier.to_vec();
        hyper_writes.extend_from_slice(HYPER_400);
        let mut written = 0;
        while written < hyper_writes.len() {
            let rest = &hyper_writes[written..];
            written += poll_fn(|cx| Pin::new(&mut conn).poll_write(cx, rest)).await.expect("write");
        }
        poll_fn(|cx| Pin::new(&mut conn).poll_flush(cx)).await.expect("flush");
        poll_fn(|cx| Pin::new(&mut conn).poll_shutdown(cx)).await.expect("shutdown");
        let refusal = hyper_refusal(HYPER_400).expect("found");
        // The end of an earlier answer in the same write is no new answer: the message is
        // about the head read before it (hyper reads a pipelined head before it flushes).
        let mut want = earlier.to_vec();
        want.extend_from_slice(&json_answer(&refusal, &head, 8192));
        assert_eq!(String::from_utf8_lossy(&conn.io.out), String::from_utf8_lossy(&want));
        assert!(conn.io.shut);
    }

    #[test]
    fn the_json_answer_has_the_status_and_says_what_is_wrong() {
        let refusal = hyper_refusal(HYPER_400).expect("found");
        let answer = json_answer(&refusal, b"GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n", 8192);
        let text = String::from_utf8(answer).expect("utf8");
        let (head, body) = text.split_once("\r\n\r\n").expect("head");
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        assert!(head.contains("date: Tue, 24 Nov 2026"), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(v["error"]["code"], "bad_request");
        assert!(v["error"]["message"].as_str().expect("m").contains("0x00"), "{v}");
    }

    #[test]
    fn bad_heads_are_explained() {
        for (head, says) in [
            (&b"GARBAGE\r\n\r\n"[..], "request line"),
            (b"G(T / HTTP/1.1\r\n\r\n", "method"),
            (b"GET / HTTP/9.9\r\n\r\n", "version"),
            (b"GET / HTTP/1.1\r\nX A: b\r\n\r\n", "field name"),
            (b"GET / HTTP/1.1\r\nnocolon\r\n\r\n", "no colon"),
            (b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "conflicting"),
            (b"POST / HTTP/1.1\r\nContent-Length: five\r\n\r\n", "not a number"),
            (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.0"),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "chunked"),
        ] {
            let m = bad_head(head);
            assert!(m.contains(says), "{}: {m}", String::from_utf8_lossy(head));
        }
        let many: String = (0..150).map(|i| format!("X-{i}: v\r\n")).collect();
        let m = headers_too_large(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes());
        assert!(m.contains("150 header fields"), "{m}");
        let m = uri_too_long(
            format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "u".repeat(60_000)).as_bytes(),
            8192,
        );
        assert!(m.contains("60001 bytes") && m.contains("8192"), "{m}");
        // Longer than what is kept: the kept part holds no whole request line.
        let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "u".repeat(100_000));
        let m = uri_too_long(&long.as_bytes()[..KEEP_READ], 8192);
        assert!(m.contains("over 65534 bytes"), "{m}");
    }
}
