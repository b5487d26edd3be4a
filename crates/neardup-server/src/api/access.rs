//! Who may ask what: the bearer token, Host and Origin checks, content types.

use super::*;
/// The token of an `Authorization` header: the scheme `Bearer` in any case, one or more spaces,
/// the token (RFC 9110: schemes are case-insensitive).
pub(super) fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// A client-supplied string for a message: quoted, and cut at 100 characters.
pub(super) fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(100) {
        Some((at, _)) => format!("{:?}...", &text[..at]),
        None => format!("{text:?}"),
    }
}

/// A `host[:port]` authority split into its lowercase host (brackets kept on IPv6) and port.
pub(super) fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = match authority.rfind(':') {
        // A colon inside brackets belongs to an IPv6 address, not to a port.
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        _ => (authority, None),
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// The `Host` of a request: its header, or the authority of an absolute-form URI.
pub(super) fn request_host(req: &Request) -> Option<Result<&str, Vec<u8>>> {
    match req.headers().get(header::HOST) {
        Some(v) => Some(v.to_str().map_err(|_| v.as_bytes().to_vec())),
        None => req.uri().authority().map(|a| Ok(a.as_str())),
    }
}

/// On loopback, a request must name this server: `localhost`, `127.0.0.1`, `[::1]` or the
/// address it listens on, with its port. A browser sends the name it resolved, so a page of
/// another site whose name was rebound to 127.0.0.1 (DNS rebinding) is refused here. A request
/// without a Host (HTTP/1.0) is let through: browsers always send one.
pub(super) fn check_host(state: &AppState, req: &Request) -> Result<(), ApiError> {
    let Some(listening) = state.listening.get() else { return Ok(()) };
    if !listening.ip().is_loopback() {
        return Ok(());
    }
    let refuse = |given: &[u8]| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!(
                "Host {} is not this server: on loopback it answers only to localhost:{port}, \
                 127.0.0.1:{port} or [::1]:{port} (a page of another name resolved to this \
                 machine is refused)",
                preview(given),
                port = listening.port()
            ),
        )
    };
    let own_ip = match listening.ip() {
        std::net::IpAddr::V4(ip) => ip.to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
    };
    let mut hosts = vec![request_host(req)];
    // An absolute-form URI names a host too; both must be this server.
    if req.headers().contains_key(header::HOST) {
        hosts.push(req.uri().authority().map(|a| Ok(a.as_str())));
    }
    for host in hosts.into_iter().flatten() {
        let host = host.map_err(|bytes| refuse(&bytes))?;
        let ok = split_authority(host).is_some_and(|(name, port)| {
            let name_ok =
                matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]") || name == own_ip;
            name_ok && port.unwrap_or(80) == listening.port()
        });
        if !ok {
            return Err(refuse(host.as_bytes()));
        }
    }
    Ok(())
}

/// A request that carries an `Origin` must come from this server's own origin (the page at
/// `/`): same host and port as its `Host`, by `http` or `https` (behind a TLS proxy that
/// keeps `Host`). Browsers send `Origin` on every cross-origin POST, `no-cors` ones included,
/// so a page of another site cannot write here even with a simple request.
pub(super) fn check_origin(req: &Request) -> Result<(), ApiError> {
    let Some(origin) = req.headers().get(header::ORIGIN) else { return Ok(()) };
    let host = request_host(req).and_then(Result::ok);
    let same = origin.to_str().ok().is_some_and(|origin| {
        let Some((scheme, authority)) = origin.split_once("://") else { return false };
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        let (Some((o_name, o_port)), Some((h_name, h_port))) =
            (split_authority(authority), host.and_then(split_authority))
        else {
            return false;
        };
        o_name == h_name && o_port.unwrap_or(default_port) == h_port.unwrap_or(default_port)
    });
    if same {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden_origin",
        format!(
            "Origin {} is not this server's own origin (http://{}): requests from pages of \
             other sites are refused",
            preview(origin.as_bytes()),
            host.map_or_else(|| "?".to_string(), |h| h.chars().take(100).collect())
        ),
    ))
}

/// A request with a body must say it is JSON: `Content-Type: application/json`, with optional
/// parameters (`; charset=utf-8`). Without this, a page of another site could post a
/// `text/plain` body with `no-cors`, which browsers send without asking (a "simple" request).
pub(super) fn check_content_type(req: &Request) -> Result<(), ApiError> {
    use axum::body::HttpBody as _;
    if req.body().is_end_stream() {
        return Ok(());
    }
    let given = req.headers().get(header::CONTENT_TYPE);
    let json = given.and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let essence = v.split(';').next().unwrap_or("").trim();
        essence.eq_ignore_ascii_case("application/json")
    });
    if json {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "a request body must be JSON, sent with Content-Type: application/json (this one \
             has {}); other types are refused so that pages of other sites cannot post here",
            given.map_or_else(|| "none".to_string(), |v| preview(v.as_bytes()))
        ),
    ))
}

/// Long URIs are refused with a JSON 414; on loopback the Host must be this server, and any
/// Origin must be this server's own (403: DNS rebinding and cross-site requests); bearer tokens
/// are checked in constant time (`/v1/health` and the page at `/` are open); a body must be
/// JSON by its Content-Type (415).
pub(super) async fn guard(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let uri_len = req.uri().to_string().len();
    if uri_len > state.limits.max_uri_bytes {
        return ApiError::new(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            format!("the URI has {uri_len} bytes, the limit is {}", state.limits.max_uri_bytes),
        )
        .into_response();
    }
    if let Err(e) = check_host(&state, &req).and_then(|()| check_origin(&req)) {
        return e.into_response();
    }
    if let Some(token) = &state.token {
        let open = matches!(req.uri().path(), "/v1/health" | "/");
        if !open {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(bearer)
                .unwrap_or("");
            // `ct_eq` compares in time independent of where the bytes differ (lengths differ ->
            // unequal; the length of the token is not a secret worth hiding).
            if !bool::from(given.as_bytes().ct_eq(token)) {
                return ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "a valid bearer token is required (Authorization: Bearer TOKEN)",
                )
                .into_response();
            }
        }
    }
    if let Err(e) = check_content_type(&req) {
        return e.into_response();
    }
    next.run(req).await
}
