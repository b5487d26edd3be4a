//! Health, Prometheus metrics and per-route tracking.

use super::*;

pub(super) async fn health(State(state): State<Shared>) -> Response {
    let version = env!("CARGO_PKG_VERSION");
    let damage = state.damage();
    match state.unhealthy() {
        None if damage.records > 0 => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "damaged",
                "reason": format!(
                    "{} stored records fail their checksum (the store is damaged; they are not \
                     served): restore the store from a backup, or insert those documents again",
                    damage.records
                ),
                "damaged_records": damage.records,
                "examples": damage.examples,
                "version": version,
            })),
        )
            .into_response(),
        None => (StatusCode::OK, Json(json!({"status": "ok", "version": version}))).into_response(),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unhealthy", "reason": reason, "version": version})),
        )
            .into_response(),
    }
}

/// `(method, route, status)`: every part from a fixed set, never a string the client chose
/// (4,000 requests with random method names used to make 4,000 series and 245 MB of metrics).
pub(super) type RouteKey = (&'static str, &'static str, u16);

/// The upper bounds of the latency histogram's buckets, in seconds.
pub(super) const LATENCY_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Requests of one method and route: how many took at most each bucket's bound (not
/// cumulative here; summed when written), and their count and total seconds.
#[derive(Debug, Clone, Default)]
pub(super) struct Latency {
    buckets: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    seconds: f64,
}

impl Latency {
    fn observe(&mut self, secs: f64) {
        if let Some(i) = LATENCY_BUCKETS.iter().position(|&b| secs <= b) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.seconds += secs;
    }
}

/// What a check decided, for the counters of duplicates found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum CheckOutcome {
    /// A near-duplicate of a stored document.
    Duplicate,
    /// New, and stored.
    Inserted,
    /// New, not stored (`insert: false`).
    New,
}

impl CheckOutcome {
    fn label(self) -> &'static str {
        match self {
            CheckOutcome::Duplicate => "duplicate",
            CheckOutcome::Inserted => "inserted",
            CheckOutcome::New => "new",
        }
    }
}

/// Request counts and latencies by route and status, and checks by collection and outcome,
/// for Prometheus.
#[derive(Debug, Default)]
pub struct Metrics {
    pub(super) requests: Mutex<BTreeMap<RouteKey, (u64, f64)>>,
    pub(super) latency: Mutex<BTreeMap<(&'static str, &'static str), Latency>>,
    pub(super) checks: Mutex<BTreeMap<(String, CheckOutcome), u64>>,
}

impl Metrics {
    /// Counts the checks of collection `name` by what they decided.
    pub(super) fn count_checks(
        &self,
        name: &str,
        outcomes: impl IntoIterator<Item = CheckOutcome>,
    ) {
        let mut checks = self.checks.lock().unwrap_or_else(|p| p.into_inner());
        for outcome in outcomes {
            *checks.entry((name.to_string(), outcome)).or_insert(0) += 1;
        }
    }

    /// Drops the series of a deleted collection (under its writer lock, so no check of it
    /// counts again): `/metrics` would otherwise grow with every collection ever made.
    pub(super) fn forget_collection(&self, name: &str) {
        let mut checks = self.checks.lock().unwrap_or_else(|p| p.into_inner());
        checks.retain(|(n, _), _| n != name);
    }
}

/// The metrics label of a method: the standard methods by name, any other as `other`.
pub(super) fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method as M;
    match *method {
        M::GET => "GET",
        M::POST => "POST",
        M::PUT => "PUT",
        M::DELETE => "DELETE",
        M::HEAD => "HEAD",
        M::OPTIONS => "OPTIONS",
        M::PATCH => "PATCH",
        M::TRACE => "TRACE",
        M::CONNECT => "CONNECT",
        _ => "other",
    }
}

/// The route template a request matched (one of the router's own strings), for its metrics
/// label; set on the response by [`route_label`].
#[derive(Debug, Clone, Copy)]
pub(super) struct RouteLabel(&'static str);

/// The routes, each once: the router is built from them and the metrics labels come from them.
pub(super) mod routes {
    pub const PAGE: &str = "/";
    pub const COLLECTIONS: &str = "/v1/collections";
    pub const COLLECTION: &str = "/v1/collections/{name}";
    pub const DOCS: &str = "/v1/collections/{name}/docs";
    pub const DOC: &str = "/v1/collections/{name}/docs/{id}";
    pub const SEARCH: &str = "/v1/collections/{name}/search";
    pub const CHECK: &str = "/v1/collections/{name}/check";
    pub const OVERLAP: &str = "/v1/collections/{name}/overlap";
    pub const COMPARE: &str = "/v1/compare";
    pub const HEALTH: &str = "/v1/health";
    pub const METRICS: &str = "/metrics";
    pub const OPENAPI: &str = "/v1/openapi.json";
    pub const ALL: [&str; 12] = [
        PAGE,
        COLLECTIONS,
        COLLECTION,
        DOCS,
        DOC,
        SEARCH,
        CHECK,
        OVERLAP,
        COMPARE,
        HEALTH,
        METRICS,
        OPENAPI,
    ];
}

pub(super) async fn metrics(State(state): State<Shared>) -> Response {
    let mut out = String::new();
    out.push_str(
        "# HELP neardup_requests_total HTTP requests by method, route and status (method \
         \"other\" for a non-standard one, route \"unmatched\" for a path of no route or a \
         request refused before routing).\n",
    );
    out.push_str("# TYPE neardup_requests_total counter\n");
    let requests = state.metrics.requests.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for ((method, route, status), (n, _)) in &requests {
        out.push_str(&format!(
            "neardup_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}\n"
        ));
    }
    out.push_str("# HELP neardup_request_seconds_sum Total time spent answering, by route.\n");
    out.push_str("# TYPE neardup_request_seconds_sum counter\n");
    for ((method, route, status), (_, secs)) in &requests {
        out.push_str(&format!(
            "neardup_request_seconds_sum{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {secs}\n"
        ));
    }
    out.push_str(
        "# HELP neardup_request_duration_seconds Time to answer a request, by method and route.\n",
    );
    out.push_str("# TYPE neardup_request_duration_seconds histogram\n");
    let latency = state.metrics.latency.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for ((method, route), l) in &latency {
        let labels = format!("method=\"{method}\",route=\"{route}\"");
        let mut cumulative = 0u64;
        for (bound, n) in LATENCY_BUCKETS.iter().zip(l.buckets) {
            cumulative += n;
            out.push_str(&format!(
                "neardup_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}\n"
            ));
        }
        out.push_str(&format!(
            "neardup_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\n",
            l.count
        ));
        out.push_str(&format!("neardup_request_duration_seconds_sum{{{labels}}} {}\n", l.seconds));
        out.push_str(&format!("neardup_request_duration_seconds_count{{{labels}}} {}\n", l.count));
    }
    out.push_str(
        "# HELP neardup_checks_total Checks decided, by collection and outcome (duplicate: a \
         near-duplicate was found; inserted: new and stored; new: new, not stored).\n",
    );
    out.push_str("# TYPE neardup_checks_total counter\n");
    let checks = state.metrics.checks.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for ((name, outcome), n) in &checks {
        out.push_str(&format!(
            "neardup_checks_total{{collection=\"{name}\",outcome=\"{}\"}} {n}\n",
            outcome.label()
        ));
    }
    out.push_str("# HELP neardup_healthy 1 when the store is usable, 0 after an I/O error.\n");
    out.push_str("# TYPE neardup_healthy gauge\n");
    out.push_str(&format!("neardup_healthy {}\n", u8::from(state.unhealthy().is_none())));
    out.push_str("# HELP neardup_documents Documents stored per collection.\n");
    out.push_str("# TYPE neardup_documents gauge\n");
    for (name, c) in state.collections.read().unwrap_or_else(|p| p.into_inner()).iter() {
        if let Some(n) = c.documents() {
            out.push_str(&format!("neardup_documents{{collection=\"{name}\"}} {n}\n"));
        }
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

/// Marks the response with the route template the request matched (runs inside routing).
pub(super) async fn route_label(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|p| routes::ALL.iter().find(|r| **r == p.as_str()).copied());
    let mut response = next.run(req).await;
    if let Some(route) = route {
        response.extensions_mut().insert(RouteLabel(route));
    }
    response
}

/// Counts every request (those refused before routing and those of no route included) by
/// method, route and status; a path that matched no route is `unmatched`, one method among
/// the many a client may make up is `other`.
pub(super) async fn track(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    let response = next.run(req).await;
    let route = response.extensions().get::<RouteLabel>().map_or("unmatched", |r| r.0);
    let key = (method, route, response.status().as_u16());
    let secs = started.elapsed().as_secs_f64();
    {
        let mut m = state.metrics.requests.lock().unwrap_or_else(|p| p.into_inner());
        let e = m.entry(key).or_insert((0, 0.0));
        e.0 += 1;
        e.1 += secs;
    }
    let mut latency = state.metrics.latency.lock().unwrap_or_else(|p| p.into_inner());
    latency.entry((method, route)).or_default().observe(secs);
    response
}
