//! The service run in-process for its tests: the library's `open` and `serve` on a runtime of
//! their own, on a loopback port, stopped (gracefully: the store closed) when dropped. Tests of
//! what only the process does (signals, SIGKILL, exit codes, file size limits, what it prints)
//! are the CLI's (`crates/neardup-cli/tests/serve.rs`).

#![allow(dead_code)] // each test binary uses part of this module

pub mod http;
pub mod pg;

use std::path::{Path, PathBuf};

pub use http::{error_code, raw, raw_request, Endpoint, Raw};
use neardup_server::{Config, Limits};

/// A scratch directory removed when the test ends (passing or not).
pub struct TempDir(tempfile::TempDir);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

/// A new, empty [`TempDir`] named after `name`.
pub fn tempdir(name: &str) -> TempDir {
    TempDir(
        tempfile::Builder::new()
            .prefix(&format!("neardup-server-{name}-"))
            .tempdir()
            .expect("temp dir"),
    )
}

/// A service running in this process; stopped when dropped.
pub struct Server {
    base: String,
    pub token: Option<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Endpoint for Server {
    fn base(&self) -> &str {
        &self.base
    }

    fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }
}

impl Server {
    /// The service on the store in `data`, with `limits` (see [`limits`]): the embedded store,
    /// or with `NEARDUP_TEST_STORE=postgres` a database of its own for `data` on the test
    /// process's PostgreSQL cluster ([`pg`]).
    pub fn start(data: &Path, limits: Limits) -> Server {
        let store = pg::on_postgres().then(|| pg::database_for(data));
        Server::with(Config { data_dir: data.to_path_buf(), store, token: None, limits })
    }

    /// The service on the store `url` (a PostgreSQL database), with the default limits.
    pub fn on_store(url: &str) -> Server {
        Server::on_store_with(url, Limits::default())
    }

    /// The service on the store `url` (a PostgreSQL database), with `limits`.
    pub fn on_store_with(url: &str, limits: Limits) -> Server {
        let store = Some(url.to_string());
        Server::with(Config { data_dir: PathBuf::new(), store, token: None, limits })
    }

    fn with(config: Config) -> Server {
        let state = neardup_server::open(config).expect("open the store");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("listen on loopback");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let shutdown = async move {
                let _ = stopped.await;
            };
            let result = runtime.block_on(neardup_server::serve(state, listener, shutdown));
            // The store closes with the last handle on the state, inside `serve`'s tasks.
            runtime.shutdown_timeout(std::time::Duration::from_secs(10));
            result
        });
        Server { base, token: None, stop: Some(stop), thread: Some(thread) }
    }

    /// Stops the service (in-flight requests finish, the store closes) and waits for it.
    pub fn stop(mut self) {
        self.shut().expect("the service stopped cleanly");
    }

    fn shut(&mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(t) => t.join().expect("the service's thread"),
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.shut();
    }
}

/// The default limits with the changes `set` makes.
pub fn limits(set: impl FnOnce(&mut Limits)) -> Limits {
    let mut l = Limits::default();
    set(&mut l);
    l
}

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A copy of the committed store `tests/fixtures/NAME` in a scratch directory.
pub fn store_fixture(name: &str) -> TempDir {
    let dir = tempdir(name);
    let fixture = repo_root().join(format!("tests/fixtures/{name}/neardup.redb.zst"));
    let compressed = std::fs::read(&fixture).expect("fixture");
    let bytes = zstd::decode_all(compressed.as_slice()).expect("zstd");
    std::fs::write(dir.join("neardup.redb"), bytes).expect("write");
    dir
}
