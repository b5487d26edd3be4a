//! Every preset's fingerprints of the bundled examples, pinned in
//! `tests/fixtures/fingerprints/<preset>.jsonl`: the SimHash, the MinHash (its first values and
//! an xxh3 of all of them), the feature count and the pipeline id. A change of any output byte
//! (a dependency upgrade of jieba-rs or unicode-normalization, a refactor) fails here; one made
//! on purpose comes with a `FORMAT_VERSION` bump and the files rewritten by
//! `NEARDUP_BLESS=1 cargo test -p neardup --test fixtures`.
#![cfg(feature = "zh")]

use std::path::{Path, PathBuf};

use neardup::{Document, Pipeline, PipelineOptions, PipelineSpec, Scratch, Sketches, PRESETS};
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
    lines_with(PipelineSpec::preset(preset).expect("preset"), preset, docs)
}

fn lines_with(spec: PipelineSpec, preset: &str, docs: &[(String, String)]) -> Vec<Value> {
    let pipeline = Pipeline::new(spec).expect("valid");
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

/// Chinese in traditional characters, as Taiwan and Hong Kong write it, and the same texts in
/// simplified characters: the words that differ between Taiwan and the mainland (軟體 / 软件,
/// 網路 / 网络, 資訊 / 信息, 程式 / 程序, 滑鼠 / 鼠标) besides the characters.
const SCRIPT_DOCS: [(&str, &str); 4] = [
    (
        "tw",
        "這套軟體透過網路傳送資訊，使用者只要按下滑鼠，程式就會自動檢查文章是否重複。\
         臺灣的研究生在撰寫論文時，常用這類工具比對參考文獻。",
    ),
    (
        "cn",
        "这套软件通过网络传送信息，用户只要按下鼠标，程序就会自动检查文章是否重复。\
         大陆的研究生在撰写论文时，常用这类工具比对参考文献。",
    ),
    ("hk", "香港的報章雜誌在轉載新聞稿時，往往只改動標題與數字，內文幾乎一字不差。"),
    ("mixed", "傳統的文本比對方法需要逐字比較；传统的文本比对方法需要逐字比较。"),
];

/// The fingerprints of traditional, Taiwan and simplified texts under each `zh_script`, pinned
/// in `tests/fixtures/fingerprints/zh-script.jsonl`: an upgrade of the OpenCC tables
/// (ferrous-opencc) that converts a character or a Taiwan word otherwise fails here, as it
/// changes every user's index of Chinese text.
#[test]
fn chinese_scripts_fingerprint_as_pinned() {
    let docs: Vec<(String, String)> =
        SCRIPT_DOCS.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    let mut now = Vec::new();
    for preset in ["default", "zh-news"] {
        for script in ["keep", "simplified", "traditional", "mainland"] {
            let mut options = PipelineOptions::default();
            options.set("zh_script", &json!(script)).expect("a zh_script");
            let spec =
                options.apply(PipelineSpec::preset(preset).expect("preset")).expect("a spec");
            for mut line in lines_with(spec, preset, &docs) {
                line["zh_script"] = json!(script);
                now.push(line);
            }
        }
    }
    // Converted, the two scripts are one text: the same fingerprints (the Taiwan words are
    // converted to the mainland's by "mainland" only).
    let fp = |preset: &str, script: &str, doc: &str| {
        now.iter()
            .find(|l| l["preset"] == preset && l["zh_script"] == script && l["doc"] == doc)
            .map(|l| (l["simhash"].clone(), l["minhash_xxh3"].clone()))
            .expect("line")
    };
    assert_ne!(fp("default", "keep", "tw"), fp("default", "simplified", "tw"));
    assert_eq!(fp("default", "traditional", "hk"), fp("default", "keep", "hk"));
    // A text written in both scripts is one text twice once converted: fewer features.
    let features = |script: &str| {
        now.iter()
            .find(|l| l["preset"] == "default" && l["zh_script"] == script && l["doc"] == "mixed")
            .and_then(|l| l["features"].as_u64())
            .expect("features")
    };
    assert!(features("simplified") < features("keep"));
    let path = repo().join("tests/fixtures/fingerprints/zh-script.jsonl");
    if std::env::var_os("NEARDUP_BLESS").is_some() {
        let text: String = now.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&path, text).expect("write fixture");
        return;
    }
    let pinned = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (NEARDUP_BLESS=1 writes it)", path.display()));
    let pinned: Vec<Value> =
        pinned.lines().map(|l| serde_json::from_str(l).expect("fixture line")).collect();
    let failures: Vec<String> = pinned
        .iter()
        .zip(&now)
        .filter(|(p, n)| p != n)
        .map(|(p, n)| format!("pinned {p}\n   now {n}"))
        .collect();
    assert!(failures.is_empty(), "fingerprints changed:\n{}", failures.join("\n"));
    assert_eq!(pinned.len(), now.len());
}
