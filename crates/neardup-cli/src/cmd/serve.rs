//! `neardup serve`: the similar-text service.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context};
use clap::Args;
use neardup_server::bounds::{
    MAX_BATCH_DOCS, MAX_BODY_BYTES, MAX_CONCURRENT, MAX_DOC_BYTES, MAX_MEMORY_MB,
    MAX_METADATA_BYTES, MAX_QUEUED, MAX_SCAN_DOCS, MAX_STORE_CACHE_MB, MAX_STORE_CONNECTIONS,
    MAX_TOP_K,
};
use neardup_server::{is_loopback, Config, Limits};

use crate::args::MAX_THREADS;
use crate::Failure;
use neardup_corpus::read::io_message;

/// Options of `neardup serve`.
#[derive(Debug, Args)]
#[command(after_help = "Routes (JSON; errors are {\"error\": {\"code\", \"message\"}}):
  PUT    /v1/collections/NAME          create: {\"preset\" | \"spec\", \"method\": minhash|simhash|both,
                                       \"threshold\": 0.8, \"hamming\": 3, \"store_text\": false,
                                       \"passages\": true | {\"min_units\": 12, ...}}: a passage
                                       collection keeps its texts for /overlap
  GET    /v1/collections[/NAME]        list; describe (size, spec, index parameters)
  DELETE /v1/collections/NAME
  POST   /v1/collections/NAME/docs     {\"docs\": [{\"id\", \"text\" | \"tokens\", \"metadata\"}]}, atomic
  GET    /v1/collections/NAME/docs/ID  metadata, fingerprints, text if stored; DELETE removes
  POST   /v1/collections/NAME/search   {\"text\", \"top_k\", \"threshold\"}
                                       -> {\"hits\": [{\"id\", \"similarity\", \"metadata\"}]}
  POST   /v1/collections/NAME/check    {\"id\", \"text\", \"metadata\", \"insert\": true}
                                       -> {\"duplicate\", \"matches\", \"inserted\", \"replaced\"};
                                       or {\"docs\": [...]}: decided in order, one durable
                                       commit -> {\"results\": [...]}; \"insert\": false only asks
                                       (no id needed)
  POST   /v1/collections/NAME/overlap  {\"text\", \"id\", \"exclude_source\": [...]} -> which passages
                                       of the text are copied from which stored documents, as
                                       `neardup overlap` (a passage collection only)
  POST   /v1/compare                   {\"a\", \"b\", \"preset\"} -> as `neardup compare --json`
  GET    /v1/health, /metrics (Prometheus), /v1/openapi.json

A body must be sent as Content-Type: application/json (415 otherwise); a request from another
site's page (a foreign Origin) is refused (403), and on loopback so is a Host other than
localhost, 127.0.0.1 or [::1] with the server's port (DNS rebinding).

Similarities are exact (Jaccard of feature sets by default), as in `neardup dedup`. A write is
acknowledged after it is durable (redb and fsync, or PostgreSQL's commit with --store). The server listens on loopback unless told
otherwise; listening elsewhere needs a token (--token-file or NEARDUP_TOKEN) or --insecure.
SIGINT or SIGTERM finish in-flight requests (for at most --shutdown-seconds) and close the
store. After a storage I/O error (a full disk) requests answer 503 and /v1/health says why,
while the store is reopened every second until it works again.

Example:
  neardup serve --data-dir ./ndata &      # or: neardup serve --store postgres://app@localhost/db &
  curl -X PUT localhost:7700/v1/collections/news -H 'Content-Type: application/json' \\
    -d '{\"preset\": \"default\"}'
  curl -X POST localhost:7700/v1/collections/news/search -H 'Content-Type: application/json' \\
    -d '{\"text\": \"...\"}'")]
pub struct ServeArgs {
    /// Directory of the embedded store (created if missing). Needed unless --store names
    /// another store.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,

    /// The store, when not the embedded one in --data-dir: a PostgreSQL database,
    /// postgres://USER@HOST[:PORT]/DB (a Unix socket: postgres://USER@%2Frun%2Fpostgresql/DB
    /// or ?host=/run/postgresql). The password comes from the URL, PGPASSWORD or ~/.pgpass,
    /// and is never printed. The environment variable NEARDUP_STORE is used when this is not
    /// given. The server creates (and migrates) its tables (neardup_*), the candidate index
    /// among them, and holds no document in memory; any number of servers may serve one
    /// database, with the same answers (check is exactly once across them).
    #[arg(long, value_name = "URL")]
    store: Option<String>,

    /// Connections to the database the server may hold at once, with --store (at most 1024).
    #[arg(long, default_value_t = 16, value_name = "N",
          value_parser = bounded::<MAX_STORE_CONNECTIONS>)]
    store_connections: usize,

    /// Address to listen on, HOST:PORT (a name such as localhost is resolved; port 0 picks a
    /// free port; the address is printed on stderr).
    #[arg(long, default_value = "127.0.0.1:7700", value_name = "ADDR")]
    listen: String,

    /// A file holding the bearer token that requests must carry (the environment variable
    /// NEARDUP_TOKEN is used when no file is given). An empty or blank token is refused.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,

    /// Allow listening on a non-loopback address without a token.
    #[arg(long)]
    insecure: bool,

    /// Largest request body, in bytes (at most 1 GiB).
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES",
          value_parser = bounded::<MAX_BODY_BYTES>)]
    max_body_bytes: usize,

    /// Largest document, in bytes (at most 256 MiB).
    #[arg(long, default_value_t = 8 << 20, value_name = "BYTES",
          value_parser = bounded::<MAX_DOC_BYTES>)]
    max_doc_bytes: usize,

    /// Most documents per batch (at most 1,000,000).
    #[arg(long, default_value_t = 10_000, value_name = "N",
          value_parser = bounded::<MAX_BATCH_DOCS>)]
    max_batch_docs: usize,

    /// Largest `top_k` of a search or check (at most 100,000); a larger one is refused.
    #[arg(long, default_value_t = 1_000, value_name = "N",
          value_parser = bounded::<MAX_TOP_K>)]
    max_top_k: usize,

    /// Most documents a search or check below its collection's threshold verifies, per request
    /// (at most 10,000,000): the collection's index finds pairs at its threshold and above, so
    /// a lower threshold is answered by verifying every document (once per document of a
    /// batch check), and refused (400) past this rather than answered in part.
    #[arg(long, default_value_t = neardup::DEFAULT_SCAN_LIMIT, value_name = "N",
          value_parser = bounded::<MAX_SCAN_DOCS>)]
    max_scan_docs: usize,

    /// Largest metadata of a document, in bytes of JSON (at most 16 MiB); larger is refused
    /// (413). With --max-top-k it bounds a search answer: their product may be at most 1 GiB.
    #[arg(long, default_value_t = 64 << 10, value_name = "BYTES",
          value_parser = bounded::<MAX_METADATA_BYTES>)]
    max_metadata_bytes: usize,

    /// Search, check, insert and compare requests that run at once (default: four per worker
    /// thread, since each also waits on the store; at most 1024). Each may hold hundreds of
    /// times its text's size while it works.
    #[arg(long, value_name = "N", value_parser = bounded::<MAX_CONCURRENT>)]
    max_concurrent: Option<usize>,

    /// Such requests that may wait for a turn, each for at most 10 s (at most 65,536); past
    /// either, they are answered 503 with Retry-After.
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = bounded::<MAX_QUEUED>)]
    max_queued: usize,

    /// Memory that search, check, insert, overlap and compare requests may hold at once, in MiB
    /// (at most 1,048,576). Each is admitted with what it may need at most, reckoned from its
    /// size (its texts; documents times top_k times the collection's largest metadata; a
    /// passage check's text); one that could need more than all of it is refused (413), one
    /// that finds too little free waits for it as for a turn.
    #[arg(long, default_value_t = 1024, value_name = "MIB",
          value_parser = bounded::<MAX_MEMORY_MB>)]
    max_memory_mb: usize,

    /// Memory for the store's own page cache, in MiB (at most 65,536). The index lives in
    /// memory; the store is read for hits' metadata, stored texts and at start, and the
    /// operating system caches its file besides.
    #[arg(long, default_value_t = 64, value_name = "MIB",
          value_parser = bounded::<MAX_STORE_CACHE_MB>)]
    store_cache_mb: usize,

    /// Seconds to let in-flight requests finish after SIGINT or SIGTERM before exiting anyway
    /// (1 to 3600).
    #[arg(long, default_value_t = 10, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    shutdown_seconds: u64,

    /// Worker threads, 1 to 256 (default: all cores).
    #[arg(long, short = 'j', value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
    threads: Option<u16>,
}

/// A size option between 1 and `MAX`.
fn bounded<const MAX: usize>(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if !(1..=MAX).contains(&n) {
        return Err(format!("must be between 1 and {MAX}"));
    }
    Ok(n)
}

/// The address to listen on: `HOST:PORT`, with the host resolved (an IPv4 address first).
fn listen_address(listen: &str) -> Result<SocketAddr, Failure> {
    let usage = |m: String| Failure::Usage(anyhow!(m));
    let addrs: Vec<SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| usage(format!("--listen {listen}: {} (give HOST:PORT)", io_message(&e))))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| usage(format!("--listen {listen}: the name resolves to no address")))
}

pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let usage = |m: String| Failure::Usage(anyhow!(m));
    let token = match &args.token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                usage(format!("{}: cannot read the token file: {}", path.display(), io_message(&e)))
            })?;
            let token = text.trim().to_string();
            if token.is_empty() {
                return Err(usage(format!(
                    "{}: the token file is empty or blank; put a token in it (authentication \
                     would otherwise be off)",
                    path.display()
                )));
            }
            Some(token)
        }
        None => match std::env::var("NEARDUP_TOKEN") {
            Ok(t) if t.trim().is_empty() => {
                return Err(usage(
                    "NEARDUP_TOKEN is set but empty or blank; set a token or unset it".into(),
                ))
            }
            Ok(t) => Some(t.trim().to_string()),
            Err(_) => None,
        },
    };
    if token.as_ref().is_some_and(|t| t.chars().any(char::is_whitespace)) {
        return Err(usage("the token may not contain whitespace".into()));
    }
    let listen = listen_address(&args.listen)?;
    if !is_loopback(&listen) && token.is_none() && !args.insecure {
        return Err(usage(format!(
            "refusing to listen on {listen} without a token: give --token-file (or \
             NEARDUP_TOKEN), or --insecure"
        )));
    }
    // A write past RLIMIT_FSIZE fails with EFBIG (reported, recovered from): SIGXFSZ is
    // ignored from the start (`output::init`).
    let store = args.store.clone().or_else(|| std::env::var("NEARDUP_STORE").ok());
    let store = store.filter(|s| !s.trim().is_empty());
    let data_dir = match (&args.data_dir, &store) {
        (Some(dir), _) => dir.clone(),
        (None, Some(_)) => PathBuf::new(),
        (None, None) => {
            return Err(usage(
                "give --data-dir DIR (the embedded store) or --store URL (PostgreSQL; or \
                 NEARDUP_STORE)"
                    .into(),
            ))
        }
    };
    let shown_store = match &store {
        Some(url) => neardup_server::shown_store(url),
        None => data_dir.display().to_string(),
    };
    let config = Config {
        data_dir,
        store,
        token,
        limits: Limits {
            max_body_bytes: args.max_body_bytes,
            max_doc_bytes: args.max_doc_bytes,
            max_batch_docs: args.max_batch_docs,
            max_top_k: args.max_top_k,
            store_cache_bytes: args.store_cache_mb << 20,
            max_metadata_bytes: args.max_metadata_bytes,
            max_scan_docs: args.max_scan_docs,
            max_memory_bytes: args.max_memory_mb << 20,
            max_concurrent: args.max_concurrent.unwrap_or_else(|| {
                Limits::concurrent_for(match args.threads {
                    Some(n) => usize::from(n),
                    None => std::thread::available_parallelism().map_or(2, usize::from),
                })
            }),
            max_queued: args.max_queued,
            store_connections: args.store_connections,
            ..Limits::default()
        },
    };
    config.limits.validate().map_err(usage)?;
    limit_malloc_arenas();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Some(n) = args.threads {
        runtime.worker_threads(usize::from(n));
        rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(n))
            .build_global()
            .map_err(anyhow::Error::from)?;
    }
    let runtime = runtime.build().context("starting the async runtime")?;
    let state = neardup_server::open(config).map_err(|e| Failure::Runtime(e.into()))?;
    let grace = Duration::from_secs(args.shutdown_seconds);
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        let addr = listener.local_addr().context("local address")?;
        eprintln!("neardup serve: listening on http://{addr} (data in {shown_store})");
        // The library's serve: the API, and the store reopened after an I/O error.
        neardup_server::serve(state, listener, shutdown_signal(grace)).await.context("serving")?;
        eprintln!("neardup serve: stopped");
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(())
}

/// Resolves on SIGINT or SIGTERM, and from then gives in-flight requests `grace` to finish
/// before the process exits anyway (a write still running then is cut as a crash would cut it:
/// every acknowledged write is already durable, and an unacknowledged one is all or nothing).
async fn shutdown_signal(grace: Duration) {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    eprintln!(
        "neardup serve: shutting down (finishing in-flight requests, at most {} s)",
        grace.as_secs()
    );
    std::thread::spawn(move || {
        std::thread::sleep(grace);
        eprintln!("neardup serve: in-flight requests did not finish in time; exiting");
        std::process::exit(1);
    });
}

/// Caps glibc's malloc arenas at one per core (its default is eight per core). The service's
/// memory is many small long-lived allocations made from the async workers and the blocking
/// and rayon pools: spread over 16 arenas on 2 cores, their freed pages stay scattered and the
/// server held 2.8 GB after loading a million documents; at one arena per core it holds 2.46 GB,
/// at the same throughput (BENCHMARKS.md, "`neardup serve` under load").
#[allow(unsafe_code)] // one FFI call, justified below
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, usize::from).max(2);
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only sets a malloc tunable and is thread-safe in glibc (it takes the
        // main arena's lock); M_ARENA_MAX accepts any positive value and governs arenas created
        // afterwards. It runs before the runtime and the pools start their threads.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}
