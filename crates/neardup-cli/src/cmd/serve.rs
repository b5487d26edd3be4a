//! `neardup serve`: the similar-text service.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use clap::Args;
use neardup_server::{is_loopback, Config, Limits};

use crate::Failure;

/// Options of `neardup serve`.
#[derive(Debug, Args)]
#[command(after_help = "Routes (JSON; errors are {\"error\": {\"code\", \"message\"}}):
  PUT    /v1/collections/NAME          create: {\"preset\" | \"spec\", \"method\": minhash|simhash|both,
                                       \"threshold\": 0.8, \"hamming\": 3, \"store_text\": false}
  GET    /v1/collections[/NAME]        list; describe (size, spec, index parameters)
  DELETE /v1/collections/NAME
  POST   /v1/collections/NAME/docs     {\"docs\": [{\"id\", \"text\" | \"tokens\", \"metadata\"}]}, atomic
  GET    /v1/collections/NAME/docs/ID  metadata, fingerprints, text if stored; DELETE removes
  POST   /v1/collections/NAME/search   {\"text\", \"top_k\", \"threshold\"}
                                       -> {\"hits\": [{\"id\", \"similarity\", \"metadata\"}]}
  POST   /v1/collections/NAME/check    {\"id\", \"text\", \"insert\": true}
                                       -> {\"duplicate\", \"matches\", \"inserted\"}
  POST   /v1/compare                   {\"a\", \"b\", \"preset\"} -> as `neardup compare --json`
  GET    /v1/health, /metrics (Prometheus), /v1/openapi.json

Similarities are exact (Jaccard of feature sets by default), as in `neardup dedup`. A write is
acknowledged after it is durable (redb, fsync). The server listens on loopback unless told
otherwise; listening elsewhere needs a token (--token-file or NEARDUP_TOKEN) or --insecure.
SIGINT or SIGTERM finish in-flight requests and close the store.

Example:
  neardup serve --data-dir ./ndata &
  curl -X PUT localhost:7700/v1/collections/news -d '{\"preset\": \"default\"}'
  curl -X POST localhost:7700/v1/collections/news/search -d '{\"text\": \"...\"}'")]
pub struct ServeArgs {
    /// Directory of the store (created if missing).
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,

    /// Address to listen on (port 0 picks a free port; the address is printed on stderr).
    #[arg(long, default_value = "127.0.0.1:7700", value_name = "ADDR")]
    listen: SocketAddr,

    /// A file holding the bearer token that requests must carry (the environment variable
    /// NEARDUP_TOKEN is used when no file is given).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,

    /// Allow listening on a non-loopback address without a token.
    #[arg(long)]
    insecure: bool,

    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES")]
    max_body_bytes: usize,

    /// Largest document, in bytes.
    #[arg(long, default_value_t = 8 << 20, value_name = "BYTES")]
    max_doc_bytes: usize,

    /// Most documents per batch.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    max_batch_docs: usize,

    /// Worker threads (default: all cores).
    #[arg(long, short = 'j', value_name = "N")]
    threads: Option<usize>,
}

pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let token = match &args.token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("{}: cannot read the token file", path.display()))?;
            Some(text.trim().to_string())
        }
        None => std::env::var("NEARDUP_TOKEN").ok().map(|t| t.trim().to_string()),
    };
    let token = token.filter(|t| !t.is_empty());
    if !is_loopback(&args.listen) && token.is_none() && !args.insecure {
        return Err(Failure::Usage(anyhow!(
            "refusing to listen on {} without a token: give --token-file (or NEARDUP_TOKEN), \
             or --insecure",
            args.listen
        )));
    }
    let config = Config {
        data_dir: args.data_dir.clone(),
        token,
        limits: Limits {
            max_body_bytes: args.max_body_bytes,
            max_doc_bytes: args.max_doc_bytes,
            max_batch_docs: args.max_batch_docs,
            ..Limits::default()
        },
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Some(n) = args.threads {
        runtime.worker_threads(n.max(1));
    }
    let runtime = runtime.build().context("starting the async runtime")?;
    let state = neardup_server::open(config).map_err(|e| Failure::Runtime(e.into()))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr().context("local address")?;
        eprintln!(
            "neardup serve: listening on http://{addr} (data in {})",
            args.data_dir.display()
        );
        axum::serve(listener, neardup_server::router(state))
            .with_graceful_shutdown(shutdown_signal())
            .await
            .context("serving")?;
        eprintln!("neardup serve: stopped");
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
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
    eprintln!("neardup serve: shutting down (finishing in-flight requests)");
}
