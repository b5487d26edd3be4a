//! Helpers shared by the CLI's integration test binaries.

use std::path::{Path, PathBuf};

/// A scratch directory unique to one test, removed when the test ends (passing or not: a
/// failing test unwinds through the drop).
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A new, empty [`TempDir`] named after the test binary, the process and `name`.
pub fn tempdir(name: &str) -> TempDir {
    let binary = env!("CARGO_CRATE_NAME");
    let dir = std::env::temp_dir().join(format!("neardup-{binary}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

/// The conformance table (`tests/conformance/table.json`; the library is its oracle).
#[allow(dead_code)] // each test binary uses part of this module
pub fn conformance_table() -> serde_json::Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/table.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the table")).expect("JSON")
}

/// A passage record (`--passages`, the service's answer) in the conformance table's shape: ids
/// as text (the one id rule), ranges in code points, the exclusion.
pub fn conformance_passage(p: &serde_json::Value) -> serde_json::Value {
    let id =
        |v: &serde_json::Value| neardup::id_from_json(&v.to_string()).expect("id").into_owned();
    serde_json::json!({
        "query": id(&p["query"]),
        "start": p["start"],
        "end": p["end"],
        "source": id(&p["source"]),
        "source_start": p["source_start"],
        "source_end": p["source_end"],
        "exclusion": p["exclusion"],
    })
}
