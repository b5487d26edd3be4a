//! A throwaway PostgreSQL cluster for the tests: `initdb` and `pg_ctl` of Debian's `postgresql`
//! package (`/usr/lib/postgresql/N/bin`, or `NEARDUP_PG_BIN`), in a temporary directory,
//! listening on a Unix socket in it and on no TCP port, run as `nobody` when the tests run as
//! root (PostgreSQL refuses to run as root). One cluster per test process, started on first
//! use; a watchdog stops it and removes its directory when the process ends, however it ends
//! (a failed test, a panic, a kill): the tests never leave a server behind.

#![allow(dead_code)] // each test binary uses part of this module

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// A running cluster.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    /// `postgres`'s options (the socket's directory, no TCP).
    options: String,
    /// Databases made so far, by name.
    made: Mutex<std::collections::HashSet<String>>,
}

/// The directory of PostgreSQL's programs: `NEARDUP_PG_BIN`, else the newest
/// `/usr/lib/postgresql/N/bin`.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NEARDUP_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect(
            "PostgreSQL is not installed (/usr/lib/postgresql): apt-get install postgresql, or \
             set NEARDUP_PG_BIN to the directory of initdb and pg_ctl",
        )
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, p)| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().expect("no /usr/lib/postgresql/N/bin/initdb").1
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// `program args...` as the cluster's owner (`nobody` when the tests run as root).
fn as_owner(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut c: Command, what: &str) -> String {
    let out = c.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed: {text}");
    text
}

/// The cluster of this test process, started on first use.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(Cluster::new)
}

impl Cluster {
    /// A new cluster of the test's own (a test that stops and starts its database must not
    /// stop the one the other tests share), stopped and removed when the process ends.
    pub fn new() -> Cluster {
        let bin = bin_dir();
        // Not removed on drop (a static is never dropped): the watchdog removes it.
        let dir =
            tempfile::Builder::new().prefix("neardup-pg-").tempdir().expect("temp dir").keep();
        if is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.args(["nobody"]).arg(&dir);
                    c
                },
                "chown",
            );
        }
        let data = dir.join("data");
        let mut initdb = as_owner(&bin.join("initdb"));
        initdb.arg("-D").arg(&data).args(["-A", "trust", "-U", "neardup", "-E", "UTF8"]);
        initdb.args(["--no-sync", "--locale", "C"]);
        run(initdb, "initdb");
        // The watchdog: when this process ends, however it ends, the cluster is stopped and
        // its directory removed.
        let pg_ctl = bin.join("pg_ctl");
        let owner = if is_root() { "runuser -u nobody -- " } else { "" };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
             {owner}'{ctl}' -D '{data}' -m immediate stop >/dev/null 2>&1; rm -rf '{dir}'",
            pid = std::process::id(),
            ctl = pg_ctl.display(),
            data = data.display(),
            dir = dir.display(),
        );
        // Never waited for: it outlives this process, which is its point.
        #[allow(clippy::zombie_processes)]
        let _watchdog = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the cluster's watchdog");
        // No TCP port (nothing to collide with other runs): a socket in the directory. fsync
        // off: the tests kill servers, never the machine.
        let options = format!(
            "-k '{}' -c listen_addresses='' -c fsync=off -c max_connections=300",
            dir.display()
        );
        let cluster = Cluster { dir, bin, options, made: Mutex::new(Default::default()) };
        cluster.resume();
        cluster
    }

    /// Starts the database server (again).
    pub fn resume(&self) {
        let mut start = as_owner(&self.bin.join("pg_ctl"));
        start.arg("-D").arg(self.dir.join("data")).arg("-l").arg(self.dir.join("log"));
        start.args(["-o", &self.options, "-w", "-t", "60", "start"]);
        run(start, "pg_ctl start");
    }

    /// Stops the database server (`pg_ctl stop -m fast`: connections are cut, as in a restart).
    pub fn pause(&self) {
        let mut stop = as_owner(&self.bin.join("pg_ctl"));
        stop.arg("-D").arg(self.dir.join("data")).args(["-m", "fast", "-w", "stop"]);
        run(stop, "pg_ctl stop");
    }

    /// The URL of database `name` on this cluster, created if it does not exist.
    pub fn database(&self, name: &str) -> String {
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if made.insert(name.to_string()) {
            let mut c = Command::new(self.bin.join("psql"));
            c.arg("-h").arg(&self.dir).args(["-U", "neardup", "-d", "postgres", "-qc"]);
            c.arg(format!("CREATE DATABASE \"{name}\""));
            run(c, "CREATE DATABASE");
        }
        self.url(name)
    }

    /// The URL of database `name` (a Unix socket in the cluster's directory).
    pub fn url(&self, name: &str) -> String {
        let socket: String = self
            .dir
            .display()
            .to_string()
            .bytes()
            .map(|b| match b {
                b'/' => "%2F".to_string(),
                b if b.is_ascii_alphanumeric() || b"-_.".contains(&b) => (b as char).to_string(),
                b => format!("%{b:02X}"),
            })
            .collect();
        format!("postgres://neardup@{socket}/{name}")
    }

    /// Runs SQL on database `name`, returning what psql printed (unaligned, tuples only).
    pub fn sql(&self, name: &str, sql: &str) -> String {
        let mut c = Command::new(self.bin.join("psql"));
        c.arg("-h").arg(&self.dir).args(["-U", "neardup", "-d", name, "-Atqc", sql]);
        run(c, "psql")
    }
}

/// The name of the database for a test's data directory: one per directory, so that a server
/// started again on the same directory finds what the last one stored, as the embedded store
/// does.
pub fn database_name(data: &Path) -> String {
    let name: String = data
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
        .collect();
    // A database name is at most 63 bytes: the directory's unique tail is kept.
    format!("t_{}", &name[name.len().saturating_sub(55)..])
}

/// The URL of the database for a test's data directory ([`database_name`]), created if new.
pub fn database_for(data: &Path) -> String {
    cluster().database(&database_name(data))
}

/// True when the tests run the service on PostgreSQL (`NEARDUP_TEST_STORE=postgres`).
pub fn on_postgres() -> bool {
    std::env::var("NEARDUP_TEST_STORE").is_ok_and(|s| s == "postgres")
}
