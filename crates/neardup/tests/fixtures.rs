//! Every preset's fingerprints of the bundled examples, pinned in
//! `tests/fixtures/fingerprints/<preset>.jsonl`: the SimHash, the MinHash (its first values and
//! an xxh3 of all of them), the feature count and the pipeline id. A change of any output byte
//! (a dependency upgrade of jieba-rs or unicode-normalization, a refactor) fails here; one made
//! on purpose comes with a `FORMAT_VERSION` bump and the files rewritten by
//! `NEARDUP_BLESS=1 cargo test -p neardup --test fixtures`.
#![cfg(feature = "zh")]

use std::path::{Path, PathBuf};

use neardup::{Document, Pipeline, PipelineSpec, Scratch, Sketches, PRESETS};
use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled examples, in path order, as `(name, text)`, and an empty document.
fn examples() -> Vec<(String, String)> {
    let root = repo().join("examples/data");
    let mut files = Vec::new();
    for lang in std::fs::read_dir(&root).expect("examples") {
        let lang = lang.expect("entry").path();
        for f in std::fs::read_dir(&lang).expect("dir") {
            let f = f.expect("entry").path();
            let name = f.strip_prefix(&root).expect("under root").display().to_string();
            files.push((name, std::fs::read_to_string(&f).expect("utf8 example")));
        }
    }
    files.sort();
    files.push(("(empty)".into(), String::new()));
    files
}

fn lines_of(preset: &str, docs: &[(String, String)]) -> Vec<Value> {
    let pipeline = Pipeline::new(PipelineSpec::preset(preset).expect("preset")).expect("valid");
    let mut scratch = Scratch::default();
    docs.iter()
        .map(|(name, text)| {
            let f = pipeline.fingerprint(Document::Text(text), &mut scratch, Sketches::MINHASH);
            let minhash = f.minhash.expect("asked for");
            let bytes: Vec<u8> = minhash.values().iter().flat_map(|v| v.to_le_bytes()).collect();
            json!({
                "preset": preset,
                "doc": name,
                "pipeline_id": pipeline.id(),
                "simhash": f.simhash.to_hex(),
                "features": f.features,
                "minhash_head": &minhash.values()[..4],
                "minhash_xxh3": format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes)),
            })
        })
        .collect()
}

#[test]
fn every_preset_fingerprints_the_examples_as_pinned() {
    let docs = examples();
    let bless = std::env::var_os("NEARDUP_BLESS").is_some();
    let mut failures = Vec::new();
    for preset in PRESETS {
        let path = repo().join(format!("tests/fixtures/fingerprints/{}.jsonl", preset.name));
        let now = lines_of(preset.name, &docs);
        if bless {
            let text: String = now.iter().map(|v| format!("{v}\n")).collect();
            std::fs::write(&path, text).expect("write fixture");
            continue;
        }
        let pinned = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (NEARDUP_BLESS=1 writes it)", path.display()));
        let pinned: Vec<Value> =
            pinned.lines().map(|l| serde_json::from_str(l).expect("fixture line")).collect();
        for (p, n) in pinned.iter().zip(&now).filter(|(p, n)| p != n) {
            failures.push(format!("{}: pinned {p}\n   now {n}", preset.name));
        }
        if pinned.len() != now.len() {
            failures.push(format!(
                "{}: {} lines pinned, {} now",
                preset.name,
                pinned.len(),
                now.len()
            ));
        }
    }
    assert!(failures.is_empty(), "fingerprints changed:\n{}", failures.join("\n"));
}
