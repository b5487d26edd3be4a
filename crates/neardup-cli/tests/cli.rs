//! Runs the real `neardup` binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(rel: &str) -> String {
    repo().join("examples/data").join(rel).display().to_string()
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf8 stdout")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf8 stderr")
}

fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o).lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect()
}

mod columnar_cli;
mod common;
mod io_sweep;
mod overlap_cli;
use common::tempdir;

#[test]
fn fingerprint_files_in_input_order_with_all_fields() {
    let files =
        ["en/report_a.txt", "zh/news_a.txt", "en/report_b.txt", "zh/news_b.txt"].map(example);
    let mut args = vec!["fingerprint", "--minhash"];
    args.extend(files.iter().map(String::as_str));
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 4);
    for (line, file) in lines.iter().zip(&files) {
        assert_eq!(line["id"], Value::String(file.clone()));
        let hex = line["simhash"].as_str().expect("hex string");
        assert_eq!(hex.len(), 16);
        assert!(hex.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(line["minhash"].as_array().expect("array").len(), 128);
        assert!(line["features"].as_u64().expect("count") > 50);
    }
    // The same input gives the same output, whatever the thread count.
    let mut one = vec!["fingerprint", "--minhash", "-j", "1"];
    one.extend(files.iter().map(String::as_str));
    assert_eq!(stdout(&run(&one)), stdout(&o));
}

#[test]
fn fingerprint_widths_and_hashes() {
    for (bits, digits) in [("32", 8), ("64", 16), ("128", 32)] {
        for hash in ["xxh3", "murmur3", "fnv1a", "md5", "jenkins"] {
            let o = run(&[
                "fingerprint",
                "--bits",
                bits,
                "--hash",
                hash,
                "--text",
                "hello near duplicate world",
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            let line = &json_lines(&o)[0];
            assert_eq!(line["simhash"].as_str().expect("hex").len(), digits, "{bits} {hash}");
        }
    }
}

#[test]
fn near_duplicates_are_closer_than_unrelated_texts() {
    let compare = |a: &str, b: &str| -> Value {
        let o = run(&["compare", "--json", "--preset", "zh-news", &example(a), &example(b)]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(&stdout(&o)).expect("json")
    };
    let near = compare("zh/news_a.txt", "zh/news_b.txt");
    let far = compare("zh/news_a.txt", "zh/other.txt");
    for key in
        ["jaccard_estimate", "jaccard_exact", "weighted_jaccard", "cosine", "edit_similarity"]
    {
        let (n, f) = (near[key].as_f64().expect(key), far[key].as_f64().expect(key));
        assert!(n > f, "{key}: near {n} <= far {f}");
    }
    assert!(near["simhash"]["hamming"].as_u64() <= Some(8), "{near}");
    assert!(far["simhash"]["hamming"].as_u64() >= Some(16), "{far}");
    assert_eq!(near["simhash"]["bits"], 64);
}

#[test]
fn compare_table_and_argument_count() {
    let o = run(&["compare", "--text", "the cat sat on the mat", "--text", "the cat sat on a mat"]);
    assert!(o.status.success());
    let table = stdout(&o);
    for row in [
        "simhash hamming",
        "jaccard estimate",
        "jaccard exact",
        "cosine (tf-idf)",
        "edit similarity",
    ] {
        assert!(table.contains(row), "missing {row}: {table}");
    }
    let o = run(&["compare", "--text", "only one"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exactly two documents"));
}

#[test]
fn empty_and_stop_word_only_documents_have_zero_fingerprints() {
    let o = run(&[
        "fingerprint",
        "--preset",
        "en-web",
        "--minhash",
        "--text",
        "",
        "--text",
        "the and of to",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for line in json_lines(&o) {
        assert_eq!(line["simhash"], "0000000000000000");
        assert_eq!(line["features"], 0);
        let mh = line["minhash"].as_array().expect("array");
        assert!(mh.iter().all(|v| v.as_u64() == Some(u64::from(u32::MAX))), "empty set sentinel");
    }
}

#[test]
fn invalid_utf8_names_file_and_offset_and_other_files_still_run() {
    let dir = tempdir("utf8");
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, b"valid start \xff\xfe then more").expect("write");
    let good = example("en/report_a.txt");
    let o = run(&["fingerprint", bad.to_str().expect("path"), &good]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("bad.txt") && err.contains("byte offset 12"), "{err}");
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["id"], Value::String(good));

    let o = run(&["fingerprint", "--lossy", bad.to_str().expect("path")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("replaced 2 invalid UTF-8"), "{}", stderr(&o));
    assert_eq!(json_lines(&o).len(), 1);
}

#[test]
fn malformed_jsonl_stops_after_writing_earlier_records() {
    let dir = tempdir("jsonl");
    let path = dir.join("in.jsonl");
    std::fs::write(
        &path,
        b"{\"id\": \"a\", \"text\": \"first document here\"}\n\
         \n\
         {\"id\": \"b\", \"text\": \"second\"}\n\
         {\"id\": \"c\", \"text\": \n\
         {\"id\": \"d\", \"text\": \"fourth\"}\n\
         {\"id\": \"e\", \"body\": \"no text field\"}\n\
         {\"id\": 7, \"tokens\": [\"New York\", \"City\"]}\n\
         {\"id\": \"f\", \"text\": \"bad \xff byte\"}\n",
    )
    .expect("write");
    let p = path.to_str().expect("path");
    let o = run(&["fingerprint", "--jsonl", p]);
    assert_eq!(o.status.code(), Some(1));
    let ids: Vec<Value> = json_lines(&o).into_iter().map(|l| l["id"].clone()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert!(stderr(&o).contains("in.jsonl:4: malformed JSON"), "{}", stderr(&o));

    let o = run(&["fingerprint", "--jsonl", "--skip-bad", p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<Value> = json_lines(&o).into_iter().map(|l| l["id"].clone()).collect();
    assert_eq!(ids, [Value::from("a"), "b".into(), "d".into(), 7.into()]);
    let err = stderr(&o);
    assert!(err.contains("in.jsonl:6: no \"text\" field"), "{err}");
    assert!(err.contains("in.jsonl:8: invalid UTF-8 at byte offset"), "{err}");
    assert!(err.contains("skipped 3 bad records"), "{err}");
}

#[test]
fn jsonl_field_names_and_default_ids() {
    let dir = tempdir("fields");
    let path = dir.join("in.jsonl");
    std::fs::write(
        &path,
        "{\"body\": \"alpha beta\"}\n{\"body\": \"gamma\", \"id\": {\"x\": 1}}\n",
    )
    .expect("write");
    let p = path.to_str().expect("path");
    let o = run(&["fingerprint", "--jsonl", "--text-field", "body", "--skip-bad", p]);
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["id"], Value::String(format!("{p}:1")));
    assert!(stderr(&o).contains("must be a string or a number"), "{}", stderr(&o));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["fingerprint", "--no-such-option", "x"][..],
        &["fingerprint", "--preset", "nope", "--text", "x"],
        &["fingerprint", "--bits", "48", "--text", "x"],
        &["fingerprint", "-n", "0", "--text", "x"],
        &["fingerprint"],
        &["frobnicate"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "stdout carries data only");
    }
}

#[test]
fn missing_files_are_runtime_errors() {
    let o = run(&["fingerprint", "/definitely/not/here.txt", "--text", "still runs"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/definitely/not/here.txt"));
    assert_eq!(json_lines(&o).len(), 1);
    let o = run(&["fingerprint", "--stop-words-file", "/no/stop.txt", "--text", "x"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/no/stop.txt"));
}

#[test]
fn oversized_documents_are_rejected_on_purpose() {
    let o = run(&[
        "fingerprint",
        "--max-doc-bytes",
        "10",
        "--text",
        "this text is longer than ten bytes",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--max-doc-bytes 10"), "{}", stderr(&o));
}

#[test]
fn a_100_mb_document_is_fingerprinted() {
    let dir = tempdir("huge");
    let path = dir.join("huge.txt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let mut n = 0u64;
    let mut written = 0usize;
    while written < 100 << 20 {
        n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let line = format!("word{} 文本{} and some more text {}\n", n >> 52, n >> 60, n % 97);
        written += line.len();
        f.write_all(line.as_bytes()).expect("write");
    }
    drop(f);
    // Over the default --max-doc-bytes (32 MiB): refused, saying so.
    let o = run(&["fingerprint", "--minhash", path.to_str().expect("path")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--max-doc-bytes"), "{}", stderr(&o));
    let o = run(&[
        "fingerprint",
        "--minhash",
        "--max-doc-bytes",
        "200000000",
        path.to_str().expect("p"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = &json_lines(&o)[0];
    assert!(line["features"].as_u64().expect("count") > 1000);

    // A JSONL line far over the limit is refused without being held (its length is told).
    let jsonl = dir.join("long-line.jsonl");
    let text = "x".repeat(5 << 20);
    std::fs::write(
        &jsonl,
        format!("{{\"id\": 1, \"text\": \"{text}\"}}\n{{\"id\": 2, \"text\": \"fine\"}}\n"),
    )
    .expect("write");
    let o = run(&[
        "dedup",
        jsonl.to_str().expect("p"),
        "--max-doc-bytes",
        "100000",
        "--skip-bad",
        "--clusters",
        "/dev/null",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(":1: a line of 5242"), "{}", stderr(&o));
    assert!(stderr(&o).contains("dedup: 1 document"), "the next line is read: {}", stderr(&o));
}

#[test]
fn idf_build_then_tfidf_with_it() {
    let dir = tempdir("idf");
    let idf = dir.join("idf.txt");
    let corpus = [example("en/report_a.txt"), example("en/other.txt"), example("zh/news_a.txt")];
    let mut args = vec!["idf", "build", "--features", "words", "-o", idf.to_str().expect("path")];
    args.extend(corpus.iter().map(String::as_str));
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&idf).expect("idf written");
    let the = text.lines().find(|l| l.starts_with("the ")).expect("'the' is in two documents");
    let value: f64 = the.rsplit(' ').next().expect("idf").parse().expect("number");
    assert!((value - (3f64 / 2.0).ln()).abs() < 1e-5, "{the}");
    let o = run(&[
        "fingerprint",
        "--features",
        "words",
        "--weights",
        "tfidf",
        "--idf",
        idf.to_str().expect("path"),
        "--explain",
        &example("en/report_a.txt"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let explain = json_lines(&o)[0]["explain"].as_array().expect("explain").clone();
    // "mayor" and "after" each occur once in report_a; "after" also occurs in other.txt, so its
    // idf is ln(3/2) against ln(3/1).
    let weight = |w: &str| {
        explain.iter().find(|e| e["feature"] == w).and_then(|e| e["weight"].as_f64()).expect(w)
    };
    let ratio = weight("mayor") / weight("after");
    assert!((ratio - 3f64.ln() / 1.5f64.ln()).abs() < 1e-4, "{ratio}");
}

#[test]
fn stdin_and_pretokenized_input() {
    let mut child = bin()
        .args(["fingerprint", "-", "--features", "words"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(b"new york city").expect("write");
    let o = child.wait_with_output().expect("wait");
    assert!(o.status.success());
    let from_stdin = json_lines(&o)[0]["simhash"].clone();
    let o = run(&["fingerprint", "--features", "words", "--text", "New  York CITY"]);
    assert_eq!(json_lines(&o)[0]["simhash"], from_stdin);
}

#[test]
fn explain_prints_keywords_with_weights() {
    let o = run(&[
        "fingerprint",
        "--preset",
        "zh-keywords",
        "--top-n",
        "2",
        "--explain",
        "--text",
        "你妈妈叫你回家吃饭啊",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let explain = json_lines(&o)[0]["explain"].as_array().expect("explain").clone();
    assert_eq!(explain.len(), 2);
    assert!(explain.iter().all(|e| e["weight"].as_f64().expect("weight") > 0.0));
}

#[test]
fn presets_and_spec_round_trip() {
    let o = run(&["presets"]);
    assert!(stdout(&o).contains("zh-news"));
    let o = run(&["spec", "--preset", "zh-news", "--bits", "128"]);
    assert!(o.status.success());
    let dir = tempdir("spec");
    let spec = dir.join("spec.json");
    std::fs::write(&spec, &o.stdout).expect("write");
    let via_spec =
        run(&["fingerprint", "--spec", spec.to_str().expect("path"), "--text", "北京的天气"]);
    let via_flags =
        run(&["fingerprint", "--preset", "zh-news", "--bits", "128", "--text", "北京的天气"]);
    assert_eq!(stdout(&via_spec), stdout(&via_flags));
    assert_eq!(json_lines(&via_spec)[0]["simhash"].as_str().map(str::len), Some(32));
}

#[test]
fn closed_stdout_is_not_an_error() {
    let mut child = bin()
        .args(["fingerprint", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(&b"some text ".repeat(1000));
    drop(stdin);
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

fn golden(name: &str) -> Value {
    let path = repo().join("tests/golden").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).expect("golden file")).expect("json")
}

/// Every Lucene vector with a whitespace tokenizer, through `neardup fingerprint --profile lucene`.
#[test]
fn lucene_profile_reproduces_every_golden_vector_through_the_cli() {
    let d = golden("lucene_minhash.json");
    let mut checked = 0;
    for v in d["vectors"].as_array().expect("vectors") {
        let id = v["id"].as_str().expect("id");
        let e = &v["effective"];
        let args = [
            "--hash-count".to_string(),
            e["hash_count"].to_string(),
            "--bucket-count".to_string(),
            e["bucket_count"].to_string(),
            "--hash-set-size".to_string(),
            e["hash_set_size"].to_string(),
            "--with-rotation".to_string(),
            e["with_rotation"].to_string(),
        ];
        let mut cmd = vec!["fingerprint", "--profile", "elasticsearch", "--utf8"];
        cmd.extend(args.iter().map(String::as_str));
        let shingle = v["shingle_size"].to_string();
        let input_tokens =
            serde_json::to_string(&serde_json::json!({"tokens": v["input_tokens"]})).expect("json");
        let dir = tempdir(&format!("lucene-{checked}"));
        let file = dir.join("in.jsonl");
        if v["tokenizer"] == "whitespace" {
            cmd.extend([
                "--shingle-size",
                shingle.as_str(),
                "--text",
                v["input_text"].as_str().expect("text"),
            ]);
        } else {
            std::fs::write(&file, format!("{input_tokens}\n")).expect("write");
            cmd.extend(["--jsonl", file.to_str().expect("path")]);
        }
        let o = run(&cmd);
        assert!(o.status.success(), "{id}: {}", stderr(&o));
        let line = &json_lines(&o)[0];
        assert_eq!(line["min_hash_tokens"], v["output"]["tokens_utf16_hex"], "{id}");
        assert_eq!(line["min_hash_utf8"], v["output"]["indexed_utf8_hex"], "{id}");
        assert_eq!(line["count"], v["output"]["count"], "{id}");
        checked += 1;
    }
    assert!(checked >= 100, "{checked}");
}

/// Every datasketch hash-value vector, tokens given as a JSONL `tokens` array.
#[test]
fn datasketch_profile_reproduces_every_golden_vector_through_the_cli() {
    let d = golden("datasketch_minhash.json");
    let dir = tempdir("datasketch");
    for (i, v) in d["minhash_vectors"].as_array().expect("vectors").iter().enumerate() {
        let name = format!("{}/{}/{}/{}", v["scheme"], v["num_perm"], v["seed"], v["set"]);
        let file = dir.join(format!("{i}.jsonl"));
        std::fs::write(&file, format!("{}\n", serde_json::json!({"id": i, "tokens": v["tokens"]})))
            .expect("write");
        let (num_perm, seed) = (v["num_perm"].to_string(), v["seed"].to_string());
        let o = run(&[
            "fingerprint",
            "--profile",
            "datasketch",
            "--scheme",
            v["scheme"].as_str().expect("scheme"),
            "--num-perm",
            &num_perm,
            "--seed",
            &seed,
            "--jsonl",
            file.to_str().expect("path"),
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let got: Vec<String> = json_lines(&o)[0]["minhash"]
            .as_array()
            .expect("minhash")
            .iter()
            .map(|x| x.to_string().trim_matches('"').to_string())
            .collect();
        let expected: Vec<String> = v["hashvalues"]
            .as_array()
            .expect("values")
            .iter()
            .map(|x| x.to_string().trim_matches('"').to_string())
            .collect();
        assert_eq!(got, expected, "{name}");
    }
    // Text input: the words of text.split(), unnormalized, as datasketch users feed update();
    // the default scheme is datasketch 2.0's (affine32), legacy is there by name.
    let vector = |scheme: &str| {
        d["minhash_vectors"]
            .as_array()
            .expect("vectors")
            .iter()
            .find(|v| v["set"] == "hello_world" && v["scheme"] == scheme && v["num_perm"] == 128)
            .expect("hello_world vector")["hashvalues"]
            .clone()
    };
    let o = run(&["fingerprint", "--profile", "datasketch", "--text", "hello  world"]);
    assert_eq!(json_lines(&o)[0]["minhash"], vector("affine32"));
    let o = run(&[
        "fingerprint",
        "--profile",
        "datasketch",
        "--scheme",
        "legacy",
        "--text",
        "hello  world",
    ]);
    assert_eq!(json_lines(&o)[0]["minhash"], vector("legacy"));
}

#[test]
fn params_prints_datasketch_choice() {
    let o = run(&[
        "params",
        "--threshold",
        "0.8",
        "--num-perm",
        "256",
        "--weights",
        "0.6,0.4",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!((v["bands"].as_u64(), v["rows"].as_u64()), (Some(15), Some(17)));
    let o = run(&["params", "--threshold", "0.8", "--weights", "0.7,0.7"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The issue's published jiebaR example, through the built binary.
#[test]
fn yanyiwu_profile_reproduces_the_published_jiebar_example() {
    let o = run(&[
        "fingerprint",
        "--profile",
        "yanyiwu",
        "--topn",
        "2",
        "--text",
        "你妈妈叫你回家吃饭啊",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = &json_lines(&o)[0];
    assert_eq!(line["simhash"], "48f024068dec1c16");
    assert_eq!(line["simhash_u64"].as_u64(), Some(5255740375710833686));
    let printed: Vec<(&str, &str)> = line["keywords"]
        .as_array()
        .expect("keywords")
        .iter()
        .map(|k| {
            (k["word"].as_str().expect("word"), k["weight_printed"].as_str().expect("printed"))
        })
        .collect();
    assert_eq!(printed, [("妈妈", "6.55531"), ("吃饭", "6.44422")]);

    let o = run(&[
        "fingerprint",
        "--profile",
        "jiebar",
        "--topn",
        "2",
        "--text",
        "你妈妈喊你回家吃饭,回家喽",
    ]);
    let line = &json_lines(&o)[0];
    assert_eq!(line["simhash_u64"].as_u64(), Some(9184284471008831268));
    assert_eq!(line["keywords"][0]["word"], "回家");
    assert_eq!(line["keywords"][0]["weight_printed"], "12.3845");
    assert_eq!(line["keywords"][1]["weight_printed"], "6.55531");
}

/// Every inline yanyiwu vector through the CLI, with the upstream default topN where it applies.
#[test]
fn yanyiwu_profile_reproduces_every_inline_golden_vector_through_the_cli() {
    let d = golden("yanyiwu_simhash.json");
    let dir = tempdir("yanyiwu");
    for v in d["vectors"].as_array().expect("vectors") {
        let Some(text) = v["text"].as_str() else { continue };
        let expected = &v["results"]["yanyiwu_simhash"];
        let file = dir.join("doc.txt");
        std::fs::write(&file, text).expect("write");
        let topn = v["topn"].to_string();
        let o = run(&[
            "fingerprint",
            "--profile",
            "yanyiwu",
            "--topn",
            &topn,
            file.to_str().expect("path"),
        ]);
        assert!(o.status.success(), "{}: {}", v["id"], stderr(&o));
        let line = &json_lines(&o)[0];
        assert_eq!(
            line["simhash_u64"].to_string(),
            expected["simhash"].as_str().expect("simhash"),
            "{}",
            v["id"]
        );
        let words: Vec<&Value> =
            line["keywords"].as_array().expect("keywords").iter().map(|k| &k["word"]).collect();
        let expected_words: Vec<&Value> =
            expected["keywords"].as_array().expect("keywords").iter().map(|k| &k["word"]).collect();
        assert_eq!(words, expected_words, "{}", v["id"]);
    }
}

// ---- dedup ----------------------------------------------------------------------------------

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("output file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// A small JSONL corpus: two near-duplicate pairs (English and Chinese), one exact copy, an
/// empty document and an unrelated one; lines carry extra fields and odd spacing that must be
/// copied byte for byte.
fn dedup_corpus(dir: &Path) -> (PathBuf, Vec<String>) {
    let en_a = std::fs::read_to_string(example("en/report_a.txt")).expect("example");
    let en_b = std::fs::read_to_string(example("en/report_b.txt")).expect("example");
    let zh_a = std::fs::read_to_string(example("zh/news_a.txt")).expect("example");
    let zh_b = std::fs::read_to_string(example("zh/news_b.txt")).expect("example");
    let other = std::fs::read_to_string(example("en/other.txt")).expect("example");
    let line = |id: &str, text: &str| {
        format!("{{\"id\": \"{id}\",  \"lang\":\"x\", \"text\": {}}}", serde_json::json!(text))
    };
    let lines = vec![
        line("en-a", &en_a),
        line("zh-a", &zh_a),
        line("empty", ""),
        line("en-b", &en_b),
        line("other", &other),
        line("zh-b", &zh_b),
        line("en-a-copy", &en_a),
    ];
    let path = dir.join("corpus.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write corpus");
    (path, lines)
}

#[test]
fn dedup_writes_kept_records_byte_for_byte_and_every_output() {
    let dir = tempdir("dedup-outputs");
    let (corpus, lines) = dedup_corpus(&dir);
    let out = |name: &str| dir.join(name).display().to_string();
    let o = run(&[
        "dedup",
        &corpus.display().to_string(),
        "--output",
        &out("kept.jsonl"),
        "--dropped",
        &out("dropped.jsonl"),
        "--clusters",
        &out("clusters.jsonl"),
        "--pairs",
        &out("pairs.jsonl"),
        "--assignments",
        &out("assign.jsonl"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "stdout must stay empty");
    let kept = std::fs::read_to_string(dir.join("kept.jsonl")).expect("kept");
    let want: Vec<&str> = [0, 1, 2, 4].iter().map(|&i| lines[i].as_str()).collect();
    assert_eq!(kept, want.join("\n") + "\n");
    let dropped = std::fs::read_to_string(dir.join("dropped.jsonl")).expect("dropped");
    assert_eq!(dropped, [lines[3].as_str(), &lines[5], &lines[6]].join("\n") + "\n");

    let clusters = read_lines(&dir.join("clusters.jsonl"));
    assert_eq!(clusters.len(), 2, "{clusters:?}");
    assert_eq!(clusters[0]["cluster"], serde_json::json!(["en-a", "en-b", "en-a-copy"]));
    assert_eq!(clusters[0]["keep"], "en-a");
    assert_eq!(clusters[0]["size"], 3);
    assert_eq!(clusters[1]["cluster"], serde_json::json!(["zh-a", "zh-b"]));
    let s = clusters[1]["similarity"].as_f64().expect("number");
    assert!((0.8..1.0).contains(&s), "{s}");

    let pairs = read_lines(&dir.join("pairs.jsonl"));
    assert!(pairs.iter().all(|p| p["similarity"].as_f64().expect("number") >= 0.8));
    assert!(pairs
        .iter()
        .any(|p| p["a"] == "en-a" && p["b"] == "en-a-copy" && p["similarity"] == 1.0));

    let assign = read_lines(&dir.join("assign.jsonl"));
    assert_eq!(assign.len(), 7);
    assert_eq!(
        assign[2],
        serde_json::json!({"id": "empty", "cluster": null, "size": 1, "kept": true})
    );
    assert_eq!(assign[3]["kept"], false);
    assert_eq!(assign[3]["size"], 3);

    let err = stderr(&o);
    assert!(
        err.contains("7 documents") && err.contains("2 clusters") && err.contains("3 dropped"),
        "{err}"
    );
    assert!(err.contains("1 empty") && err.contains("peak memory"), "{err}");
}

#[test]
fn dedup_keep_rule_simhash_and_compressed_input() {
    let dir = tempdir("dedup-simhash");
    let (corpus, lines) = dedup_corpus(&dir);
    // The same corpus gzip-compressed (the real gzip format, written by flate2's encoder).
    let gz = dir.join("corpus.jsonl.gz");
    {
        let bytes = std::fs::read(&corpus).expect("corpus");
        let file = std::fs::File::create(&gz).expect("create");
        let mut enc = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        enc.write_all(&bytes).expect("compress");
        enc.finish().expect("finish");
    }
    let kept = dir.join("kept.jsonl");
    let o = run(&[
        "dedup",
        &gz.display().to_string(),
        "--hamming",
        "10",
        "--keep",
        "longest",
        "--quiet",
        "--output",
        &kept.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "--quiet: {}", stderr(&o));
    let text = std::fs::read_to_string(&kept).expect("kept");
    // Exact copies have distance 0, so en-a and en-a-copy are together; the longest text of
    // their cluster is kept, ties to the first.
    assert!(text.lines().any(|l| l == lines[4]), "unrelated kept");
    assert!(text.lines().any(|l| l == lines[2]), "empty kept");
    assert!(!text.lines().any(|l| l == lines[6]), "a copy is never kept over its original");
}

#[test]
fn dedup_keeps_the_newest_crawl_by_a_field() {
    let dir = tempdir("dedup-keep-field");
    let text = "the harbour authority said on monday that the new pier would open in spring \
                after two years of building and a long dispute over the cost of the works";
    // Three crawls of one page (nested dates, one with an offset, one without the field) and
    // two of another (a date, a date-time with a space).
    let records = [
        serde_json::json!({"id": "a1", "meta": {"fetched": "2024-03-01T10:00:00Z"}, "text": text}),
        serde_json::json!({"id": "a2", "meta": {"fetched": "2024-03-02T01:00:00+08:00"}, "text": text}),
        serde_json::json!({"id": "a3", "text": text}),
        serde_json::json!({"id": "b1", "meta": {"fetched": "2023-06-01"}, "text": "another page entirely"}),
        serde_json::json!({"id": "b2", "meta": {"fetched": "2023-06-01 08:00"}, "text": "another page entirely"}),
    ];
    let corpus = dir.join("crawl.jsonl");
    let lines: Vec<String> = records.iter().map(|r| r.to_string()).collect();
    std::fs::write(&corpus, lines.join("\n") + "\n").expect("write");
    let c = corpus.display().to_string();
    let kept_ids = |rule: &str| {
        let kept = dir.join("kept.jsonl");
        let o = run(&["dedup", &c, "--keep", rule, "-o", &kept.display().to_string()]);
        assert!(o.status.success(), "{rule}: {}", stderr(&o));
        let ids: Vec<String> = std::fs::read_to_string(&kept)
            .expect("kept")
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json")["id"].to_string())
            .collect();
        ids.join(" ")
    };
    // 2024-03-02T01:00+08:00 is 2024-03-01T17:00Z: a2 is the newest crawl of page a.
    assert_eq!(kept_ids("max:meta.fetched"), r#""a2" "b2""#);
    assert_eq!(kept_ids("min:meta.fetched"), r#""a1" "b1""#);
    assert_eq!(kept_ids("first"), r#""a1" "b1""#);

    // A misspelt field is an error naming it; nothing is written.
    let kept = dir.join("none.jsonl");
    let o = run(&["dedup", &c, "--keep", "max:fetched", "-o", &kept.display().to_string()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("\"fetched\" named by --keep"), "{}", stderr(&o));
    assert!(!kept.exists());

    // A value that is neither a number nor a date, and a field mixing the two, name the line.
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        format!(
            "{}\n{}\n{}\n",
            serde_json::json!({"id": 1, "at": "2024-01-01", "text": text}),
            serde_json::json!({"id": 2, "at": "last tuesday", "text": text}),
            serde_json::json!({"id": 3, "at": 17, "text": text}),
        ),
    )
    .expect("write");
    let b = bad.display().to_string();
    let o = run(&["dedup", &b, "--keep", "max:at", "-o", &kept.display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bad.jsonl:2") && stderr(&o).contains("neither a number nor an ISO"),
        "{}",
        stderr(&o)
    );
    // A field mixing numbers and dates is not skipped (which records were "bad" would depend
    // on which kind came first).
    let o =
        run(&["dedup", &b, "--keep", "max:at", "--skip-bad", "-o", &kept.display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("bad.jsonl:3") && err.contains("holds a number here and a date"), "{err}");
    assert!(!kept.exists());

    // The keep rule may read the id field itself.
    let numbered = dir.join("numbered.jsonl");
    let lines: Vec<String> = [(1, text), (5, text), (3, text), (4, "another page entirely")]
        .iter()
        .map(|(id, t)| serde_json::json!({"id": id, "text": t}).to_string())
        .collect();
    std::fs::write(&numbered, lines.join("\n") + "\n").expect("write");
    let o = run(&["dedup", &numbered.display().to_string(), "--keep", "max:id", "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<String> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json")["id"].to_string())
        .collect();
    assert_eq!(ids.join(" "), "5 4");

    // The rule is checked before anything is read.
    let o = run(&["dedup", &c, "--keep", "max:"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("names no field"), "{}", stderr(&o));
}

#[test]
fn dedup_honours_review_decisions_and_says_what_it_removed() {
    let dir = tempdir("dedup-decisions");
    let (corpus, _) = dedup_corpus(&dir);
    let c = corpus.display().to_string();
    let kept = dir.join("kept.jsonl");
    let k = kept.display().to_string();
    let assignments = dir.join("a.jsonl");
    let a = assignments.display().to_string();
    let o = run(&["dedup", &c, "-o", &k, "--assignments", &a]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("  removed 2.6 KB of text (55.1% of the bytes)"), "{}", stderr(&o));
    let rows: Vec<Value> = std::fs::read_to_string(&assignments)
        .expect("assignments")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let dropped: Vec<&Value> = rows.iter().filter(|r| r["kept"] == false).collect();
    assert!(!dropped.is_empty());
    let before = std::fs::read_to_string(&kept).expect("kept").lines().count();

    // The reviewer says the first dropped document is not a duplicate: it is kept.
    let decisions = dir.join("decisions.jsonl");
    let line =
        serde_json::json!({"id": dropped[0]["id"], "decision": "not_duplicate", "cluster": 0});
    std::fs::write(&decisions, format!("{line}\n")).expect("write");
    let d = decisions.display().to_string();
    let o = run(&["dedup", &c, "-o", &k, "--decisions", &d]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 document kept by review decisions"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&kept).expect("kept").lines().count(), before + 1);
    assert!(!stderr(&o).contains("matched no document"), "{}", stderr(&o));

    // Decisions naming ids this run does not have (made with other --id-field settings) are
    // said, not silently ignored.
    let other = serde_json::json!({"id": "zzz", "decision": "not_duplicate"});
    std::fs::write(&decisions, format!("{line}\n{other}\n")).expect("write");
    let o = run(&["dedup", &c, "-o", &k, "--decisions", &d]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 id of --decisions matched no document of this run, e.g. \"zzz\""),
        "{}",
        stderr(&o)
    );

    // A line that is not a decision is named; the decisions file is never an output.
    std::fs::write(&decisions, format!("{line}\n{{\"id\": 1, \"decision\": \"dup\"}}\n"))
        .expect("write");
    let o = run(&["dedup", &c, "-o", &k, "--decisions", &d]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("decisions.jsonl:2"), "{}", stderr(&o));
    let o = run(&["dedup", &c, "-o", &d, "--decisions", &d]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn dedup_bad_lines_stop_or_are_skipped_and_duplicate_ids_reported() {
    let dir = tempdir("dedup-bad");
    let path = dir.join("bad.jsonl");
    std::fs::write(
        &path,
        "{\"id\": 1, \"text\": \"alpha beta gamma delta epsilon zeta eta\"}\n\
         {\"id\": 2, \"text\": \"alpha beta gamma delta epsilon zeta eta\"\n\
         {\"id\": 1, \"body\": \"no text field\"}\n\
         {\"id\": 1, \"text\": \"something else entirely here and now\"}\n",
    )
    .expect("write");
    let kept = dir.join("kept.jsonl");
    let p = path.display().to_string();
    let k = kept.display().to_string();
    let o = run(&["dedup", &p, "--output", &k]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("bad.jsonl:2") && err.contains("--skip-bad"), "{err}");
    assert!(!kept.exists(), "no partial output");

    let o = run(&["dedup", &p, "--output", &k, "--skip-bad"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("bad.jsonl:2") && err.contains("bad.jsonl:3"), "{err}");
    assert!(err.contains("skipped 2 bad records or files"), "{err}");
    assert!(err.contains("1 duplicate id (") && err.contains("e.g. 1"), "{err}");
    let text = std::fs::read_to_string(&kept).expect("kept");
    assert_eq!(text.lines().count(), 2, "both good records, kept apart: {text}");
}

#[test]
fn dedup_incremental_against_a_saved_index() {
    let dir = tempdir("dedup-incremental");
    let (corpus, lines) = dedup_corpus(&dir);
    let index = dir.join("index");
    let i = index.display().to_string();
    let o = run(&["dedup", &corpus.display().to_string(), "--save-index", &i, "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(index.join("manifest.json")).expect("read"))
            .expect("json");
    let docs = manifest["docs"].as_str().expect("the manifest names its docs file");
    assert!(index.join(docs).is_file());

    // Today's batch on stdin: a copy of a seen page and a new page.
    let batch = format!(
        "{}\n{}\n",
        lines[5].replace("\"zh-b\"", "\"zh-b-again\""),
        "{\"id\": \"new\", \"text\": \"brand new words about trains, stations and timetables\"}"
    );
    let kept = dir.join("kept.jsonl");
    let clusters = dir.join("clusters.jsonl");
    let mut child = bin()
        .args(["dedup", "-", "--against", &i, "--output"])
        .arg(&kept)
        .arg("--clusters")
        .arg(&clusters)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(batch.as_bytes()).expect("write");
    let o = child.wait_with_output().expect("wait");
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&kept).expect("kept");
    assert_eq!(text.lines().collect::<Vec<_>>(), vec![batch.lines().nth(1).expect("line")]);
    let c = read_lines(&clusters);
    assert_eq!(c.len(), 1);
    // The new copy of zh-b matches zh-b and everything zh-b matches (zh-a); the old exact
    // copies en-a / en-a-copy were clustered when the index was built and are not repeated.
    assert_eq!(c[0]["cluster"], serde_json::json!(["zh-a", "zh-b", "zh-b-again"]));
    assert_eq!(c[0]["keep"], "zh-a", "a seen document is the keeper");
    assert!(stderr(&o).contains("against an index of 7 documents"), "{}", stderr(&o));

    // Another pipeline is refused, naming the mismatch.
    let o = run(&["dedup", &corpus.display().to_string(), "--against", &i, "--preset", "en-web"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("pipeline"), "{}", stderr(&o));
}

#[test]
fn dedup_usage_errors_exit_2() {
    for args in [
        vec!["dedup"],
        vec!["dedup", "/nonexistent/corpus.jsonl"],
        vec!["dedup", "x.jsonl", "--keep", "oldest"],
        vec!["dedup", "x.jsonl", "--bands", "4"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    let dir = tempdir("dedup-usage");
    let (corpus, _) = dedup_corpus(&dir);
    let o = run(&["dedup", &corpus.display().to_string(), "--threshold", "1.5"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("threshold"), "{}", stderr(&o));
}

// ---- hostile input: nothing destroyed, nothing hangs, nothing fails silently -------------------

/// A corpus of `n` JSONL records, every tenth a near-copy of the one before.
fn big_corpus(dir: &Path, n: usize) -> PathBuf {
    let mut text = String::new();
    for i in 0..n {
        let base = i - i % 10;
        let words: Vec<String> = (0..40).map(|w| format!("w{}x{}", base, w)).collect();
        let suffix = if i % 10 == 1 { " extra" } else { "" };
        text.push_str(&format!(
            "{{\"id\": {i}, \"text\": \"{}{suffix}\"}}\n",
            if i % 10 <= 1 { words.join(" ") } else { format!("{} {i}", words.join(" ")) }
        ));
    }
    let path = dir.join("big.jsonl");
    std::fs::write(&path, text).expect("write");
    path
}

/// The names in a directory, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn outputs_that_are_inputs_or_each_other_are_refused_before_anything_is_written() {
    let dir = tempdir("conflicts");
    let (corpus, _) = dedup_corpus(&dir);
    let before = std::fs::read(&corpus).expect("read");
    let c = corpus.display().to_string();
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&corpus, &link).expect("symlink");
    let dotted = dir.join(".").join("corpus.jsonl").display().to_string();
    let other = dir.join("o.jsonl").display().to_string();
    for args in [
        vec!["dedup", &c, "-o", &c],
        vec!["dedup", &c, "--clusters", &c],
        vec!["dedup", &c, "--pairs", &dotted],
        vec!["dedup", &c, "--assignments", link.to_str().expect("path")],
        vec!["dedup", &c, "-o", &other, "--dropped", &other],
        vec!["dedup", &c, "-o", "-", "--clusters", "-"],
        vec!["dedup", dir.to_str().expect("dir"), "--dropped", &c],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("refusing")
                || stderr(&o).contains("same file")
                || stderr(&o).contains("both write"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(&corpus).expect("read"), before, "{args:?} touched the input");
    }
    assert!(!dir.join("o.jsonl").exists());
    // idf build -o onto its corpus is refused too.
    let o = run(&["idf", "build", &c, "--jsonl", "-o", &c]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(&corpus).expect("read"), before);
}

#[test]
fn a_failed_run_leaves_old_outputs_as_they_were_and_no_temporary_file() {
    let dir = tempdir("atomic");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("dir");
    let kept = out.join("kept.jsonl");
    let clusters = out.join("clusters.jsonl");
    std::fs::write(&kept, "old kept\n").expect("write");
    std::fs::write(&clusters, "old clusters\n").expect("write");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"id\": 1, \"text\": \"fine\"}\n{not json\n").expect("write");
    let o = run(&[
        "dedup",
        bad.to_str().expect("p"),
        "-o",
        kept.to_str().expect("p"),
        "--clusters",
        clusters.to_str().expect("p"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&kept).expect("read"), "old kept\n");
    assert_eq!(std::fs::read_to_string(&clusters).expect("read"), "old clusters\n");
    assert_eq!(names(&out), ["clusters.jsonl", "kept.jsonl"], "no temporary file is left");

    // A --save-index whose file is a directory is refused, leaving nothing behind (a failure
    // while writing the index is tested in the library: index_file::tests).
    let index = dir.join("index");
    std::fs::create_dir_all(index.join("manifest.json")).expect("a directory where it goes");
    let (corpus, _) = dedup_corpus(&dir);
    let o =
        run(&["dedup", corpus.to_str().expect("p"), "--save-index", index.to_str().expect("p")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(names(&index), ["manifest.json"], "{}", stderr(&o));
}

#[test]
fn an_input_changed_between_the_passes_is_refused() {
    let dir = tempdir("changed");
    let (corpus, lines) = dedup_corpus(&dir);
    let kept = dir.join("kept.jsonl");
    std::fs::write(&kept, "old\n").expect("write");
    for change in ["prepend", "same-size"] {
        std::fs::write(&corpus, lines.join("\n") + "\n").expect("write");
        let marker = dir.join(format!("pause-{change}"));
        let child = bin()
            .args(["dedup", corpus.to_str().expect("p"), "-o", kept.to_str().expect("p")])
            .env("NEARDUP_TEST_PAUSE_BETWEEN_PASSES", &marker)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !marker.exists() {
            assert!(std::time::Instant::now() < deadline, "dedup never reached its second pass");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let mut text = std::fs::read_to_string(&corpus).expect("read");
        if change == "prepend" {
            text.insert_str(0, "{\"id\": \"first\", \"text\": \"a line put in front\"}\n");
        } else {
            // One character changed: the size is the same, the bytes are not.
            text = text.replacen("en-a", "en-z", 1);
        }
        std::fs::write(&corpus, text).expect("write");
        std::fs::remove_file(&marker).expect("resume");
        let o = child.wait_with_output().expect("wait");
        assert_eq!(o.status.code(), Some(1), "{change}: {}", stderr(&o));
        assert!(stderr(&o).contains("changed between the two passes"), "{}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&kept).expect("read"), "old\n", "{change}");
    }
}

#[test]
fn standard_input_is_spooled_without_a_name_and_signals_leave_nothing() {
    let dir = tempdir("spool");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).expect("dir");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("dir");
    let kept = out.join("kept.jsonl");
    std::fs::write(&kept, "old\n").expect("write");
    let mut child = bin()
        .args(["dedup", "-", "-o", kept.to_str().expect("p")])
        .env("TMPDIR", &tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"{\"id\": 1, \"text\": \"half of the input\"}\n").expect("write");
    stdin.flush().expect("flush");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(names(&tmp).is_empty(), "the spool has no name: {:?}", names(&tmp));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let o = child.wait_with_output().expect("wait");
    drop(stdin);
    assert!(!o.status.success());
    assert!(names(&tmp).is_empty(), "{:?}", names(&tmp));
    assert_eq!(names(&out), ["kept.jsonl"], "no temporary output left");
    assert_eq!(std::fs::read_to_string(&kept).expect("read"), "old\n");
}

#[test]
fn every_size_option_has_a_bound_and_fails_fast() {
    let dir = tempdir("bounds");
    let (corpus, _) = dedup_corpus(&dir);
    let c = corpus.display().to_string();
    for args in [
        vec!["dedup", &c, "--num-perm", "18446744073709551615"],
        vec!["dedup", &c, "--num-perm", "5000"],
        vec!["dedup", &c, "-j", "100000"],
        vec!["dedup", &c, "--ngram", "1000000"],
        vec!["dedup", &c, "--max-doc-bytes", "99999999999999"],
        vec!["params", "--threshold", "0.8", "--num-perm", "100000"],
        vec![
            "fingerprint",
            "--text",
            "a b",
            "--profile",
            "lucene",
            "--hash-count",
            "100000",
            "--bucket-count",
            "100000",
        ],
        vec![
            "fingerprint",
            "--text",
            "a b",
            "--profile",
            "lucene",
            "--hash-count",
            "1024",
            "--bucket-count",
            "65536",
        ],
        vec!["fingerprint", "--text", "a b", "--features", "keywords", "--top-n", "99999999"],
        vec!["fingerprint", "--text", "a b", "--profile", "yanyiwu", "--topn", "99999999"],
        vec!["fingerprint", "--text", "a b", "--profile", "datasketch", "--num-perm", "9999"],
        vec!["serve", "--data-dir", "x", "--max-body-bytes", "99999999999999"],
        vec!["serve", "--data-dir", "x", "-j", "0"],
    ] {
        let started = std::time::Instant::now();
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{args:?} was slow");
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
}

/// Runs `args`, closes its standard output after the first line (or at once), and expects a
/// quiet exit 0.
fn closed_pipe(args: &[&str], read_first: bool) {
    let mut child =
        bin().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    if read_first {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("line");
    } else {
        drop(stdout);
    }
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    assert!(!stderr(&o).to_lowercase().contains("broken pipe"), "{args:?}: {}", stderr(&o));
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let dir = tempdir("pipe");
    let corpus = big_corpus(&dir, 20_000);
    let c = corpus.display().to_string();
    let side = dir.join("side.jsonl").display().to_string();
    closed_pipe(&["dedup", &c, "-o", "-", "-q"], true);
    closed_pipe(&["dedup", &c, "--pairs", "-"], true);
    closed_pipe(&["dedup", &c, "--assignments", "-"], true);
    // Another output still gets written in full.
    closed_pipe(&["dedup", &c, "-o", "-", "--clusters", &side], true);
    assert!(std::fs::read_to_string(&side).expect("side").lines().count() > 100);
    closed_pipe(&["fingerprint", "--jsonl", &c], true);
    closed_pipe(&["presets"], false);
    closed_pipe(&["spec"], false);
    closed_pipe(&["params", "--threshold", "0.8"], false);
    closed_pipe(&["compare", "--text", "a b c", "--text", "a b d"], false);
    closed_pipe(&["compare", "--html", "--text", "a b c", "--text", "a b d"], false);
    closed_pipe(&["dedup", &c, "--report", "-", "-q"], true);
    closed_pipe(&["idf", "build", "--jsonl", &c, "-o", "-"], true);
}

#[test]
fn a_corrupt_compressed_stream_is_fatal_even_with_skip_bad() {
    let dir = tempdir("corrupt");
    let corpus = big_corpus(&dir, 20_000);
    let raw = std::fs::read(&corpus).expect("read");
    let mut z = zstd::encode_all(&raw[..], 3).expect("zstd");
    let middle = z.len() / 2;
    for b in &mut z[middle..middle + 64] {
        *b ^= 0x5a;
    }
    let zst = dir.join("broken.jsonl.zst");
    std::fs::write(&zst, &z).expect("write");
    let kept = dir.join("kept.jsonl");
    for skip in [false, true] {
        let mut args = vec!["dedup", zst.to_str().expect("p"), "-o", kept.to_str().expect("p")];
        if skip {
            args.push("--skip-bad");
        }
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "skip {skip}: {}", stderr(&o));
        assert!(stderr(&o).contains("compressed byte offset"), "{}", stderr(&o));
        assert!(!kept.exists(), "nothing is written");
    }
    // fingerprint too, after writing what came before.
    let o = run(&["fingerprint", "--jsonl", "--skip-bad", zst.to_str().expect("p")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("compressed byte offset"), "{}", stderr(&o));
    // A truncated stream likewise.
    let gz = dir.join("short.jsonl.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&raw).expect("gz");
    let bytes = e.finish().expect("gz");
    std::fs::write(&gz, &bytes[..bytes.len() / 2]).expect("write");
    let o = run(&["dedup", gz.to_str().expect("p"), "--skip-bad"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("gzip"), "{}", stderr(&o));
}

#[test]
fn directories_follow_symlinks_detect_loops_and_name_bad_entries() {
    let dir = tempdir("walk");
    let docs = dir.join("docs");
    std::fs::create_dir_all(docs.join("sub")).expect("dir");
    let outside = dir.join("outside.txt");
    let text = std::fs::read_to_string(example("en/report_a.txt")).expect("example");
    std::fs::write(&outside, &text).expect("write");
    std::fs::write(docs.join("a.txt"), &text).expect("write");
    std::os::unix::fs::symlink(&outside, docs.join("sub/linked.txt")).expect("symlink");
    std::os::unix::fs::symlink(&docs, docs.join("sub/loop")).expect("loop");
    std::os::unix::fs::symlink(dir.join("missing.txt"), docs.join("dangling.txt")).expect("link");
    let d = docs.display().to_string();
    // Without --skip-bad the first bad entry stops the run, named by its own path.
    let o = run(&["dedup", &d, "--clusters", "-"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("dangling.txt"), "{}", stderr(&o));
    let o = run(&["dedup", &d, "--clusters", "-", "--skip-bad"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("dangling.txt") && err.contains("loop"), "{err}");
    // The symlinked file is read: it is a copy of a.txt, so they form a cluster.
    let clusters = json_lines(&o);
    assert_eq!(clusters.len(), 1, "{}", stdout(&o));
    let members = clusters[0]["cluster"].to_string();
    assert!(members.contains("a.txt") && members.contains("linked.txt"), "{members}");
}

#[test]
fn a_byte_order_mark_is_accepted_and_ids_are_kept_as_written() {
    let dir = tempdir("bom-ids");
    let text = std::fs::read_to_string(example("en/report_a.txt")).expect("example");
    let line = |id: &str| format!("{{\"id\": {id}, \"text\": {}}}", serde_json::json!(text));
    let corpus = dir.join("c.jsonl");
    // A mark on a later line too: files joined with `cat` keep theirs.
    let body =
        format!("\u{feff}{}\n{}\n\u{feff}{}\n", line("1.10"), line("1e2"), line("\"x\\u0041\""));
    std::fs::write(&corpus, body).expect("write");
    let o = run(&[
        "dedup",
        corpus.to_str().expect("p"),
        "--clusters",
        "-",
        "--pairs",
        dir.join("p.jsonl").to_str().expect("p"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("[1.10,1e2,\"x\\u0041\"]"), "{out}");
    let pairs = std::fs::read_to_string(dir.join("p.jsonl")).expect("pairs");
    assert!(pairs.contains("\"a\":1.10,\"b\":1e2"), "{pairs}");
    // The offset of bad UTF-8 after a mark is the byte's in the file.
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, b"{\"text\": \"ok\"}\n\xEF\xBB\xBF{\"text\": \"caf\xE9\"}\n")
        .expect("write");
    let o = run(&["dedup", bad.to_str().expect("p"), "-o", "-"]);
    assert!(stderr(&o).contains("bad.jsonl:2: invalid UTF-8 at byte offset 31"), "{}", stderr(&o));
    // A plain file with a BOM.
    let plain = dir.join("bom.txt");
    std::fs::write(&plain, format!("\u{feff}{text}")).expect("write");
    let a = run(&["fingerprint", plain.to_str().expect("p")]);
    let b = run(&["fingerprint", &example("en/report_a.txt")]);
    assert_eq!(json_lines(&a)[0]["simhash"], json_lines(&b)[0]["simhash"]);
}

#[test]
fn contradictory_options_are_refused() {
    let dir = tempdir("contradict");
    let (corpus, _) = dedup_corpus(&dir);
    let c = corpus.display().to_string();
    for args in [
        vec!["fingerprint", "--text", "你好", "--profile", "yanyiwu", "--minhash"],
        vec!["fingerprint", "--text", "你好", "--profile", "yanyiwu", "--preset", "zh-news"],
        vec!["fingerprint", "--text", "a b", "--profile", "lucene", "--ngram", "3"],
        vec!["fingerprint", "--text", "a b", "--hash-count", "2"],
        vec!["fingerprint", "--text", "a b", "--profile", "datasketch", "--topn", "3"],
        vec!["fingerprint", "--text", "a b", "--scheme", "affine32"],
        vec!["dedup", &c, "--method", "minhash", "--hamming", "3"],
        vec!["dedup", &c, "--method", "simhash", "--bands", "4", "--rows", "8"],
        vec!["dedup", &c, "--hamming", "3", "--recall", "0.9"],
        vec!["dedup", &c, "--recall", "0.9", "--bands", "4", "--rows", "8"],
        vec!["dedup", &c, "--verify", "hamming"],
        vec!["dedup", &c, "--hamming", "3", "--lsh-weights", "0.5,0.5"],
        // Regression: report read its settings by its own rules and took this one.
        vec!["report", &c, "--clusters", &c, "-o", "-", "--method", "minhash", "--hamming", "3"],
        vec!["report", &c, "--clusters", &c, "-o", "-", "--verify", "hamming"],
        vec!["params", "--threshold", "0.8", "--recall", "0.9", "--weights", "0.5,0.5"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        // Said once, with the flag as written and no stray run of spaces.
        assert!(!stderr(&o).contains("   "), "{args:?}: {}", stderr(&o));
    }
    let o = run(&["dedup", &c, "--method", "minhash", "--hamming", "3"]);
    assert!(stderr(&o).contains("--hamming applies to simhash candidates"), "{}", stderr(&o));
}

#[test]
fn error_messages_say_what_and_where_once() {
    let o = run(&["fingerprint", "--text", "x", "--idf", "/nonexistent/idf.txt"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("/nonexistent/idf.txt"), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
    let dir = tempdir("messages");
    let spec = dir.join("spec.json");
    std::fs::write(&spec, "[1, 2]").expect("write");
    let o = run(&["fingerprint", "--text", "x", "--spec", spec.to_str().expect("p")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains("struct"), "{}", stderr(&o));
}

fn golden_lines(name: &str) -> Vec<Value> {
    read_lines(&repo().join("tests/golden").join(name))
}

/// Every recipe vector through the binary: gojieba + FNV at each topk, and jieba + MD5, with
/// the texts that have no Han word refused by id.
#[test]
fn recipe_profiles_reproduce_every_golden_vector_through_the_cli() {
    let dir = tempdir("recipes");
    let b = golden_lines("recipes/recipe_b.jsonl");
    let mut topks: Vec<u64> = b.iter().map(|v| v["topk"].as_u64().expect("topk")).collect();
    topks.sort_unstable();
    topks.dedup();
    for topk in topks {
        let rows: Vec<&Value> = b.iter().filter(|v| v["topk"] == topk).collect();
        let path = dir.join(format!("b{topk}.jsonl"));
        let text: String = rows
            .iter()
            .map(|v| format!("{}\n", serde_json::json!({"id": v["id"], "text": v["text"]})))
            .collect();
        std::fs::write(&path, text).expect("write");
        let o = run(&[
            "fingerprint",
            "--jsonl",
            "--profile",
            "gojieba",
            "--topn",
            &topk.to_string(),
            path.to_str().expect("p"),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let lines = json_lines(&o);
        assert_eq!(lines.len(), rows.len());
        for (line, v) in lines.iter().zip(&rows) {
            assert_eq!(line["bits"], v["bits"], "gojieba id {} topk {topk}", v["id"]);
            let value = u64::from_str_radix(v["bits"].as_str().expect("bits"), 2).expect("binary");
            assert_eq!(line["simhash_u64"], serde_json::json!(value));
        }
    }
    let a = golden_lines("recipes/recipe_a.jsonl");
    let path = dir.join("a.jsonl");
    let text: String = a
        .iter()
        .map(|v| format!("{}\n", serde_json::json!({"id": v["id"], "text": v["text"]})))
        .collect();
    std::fs::write(&path, text).expect("write");
    let o = run(&["fingerprint", "--jsonl", "--profile", "jieba-md5", path.to_str().expect("p")]);
    let refused = a.iter().filter(|v| v["bits"].is_null()).count();
    assert_eq!(o.status.code(), Some(if refused > 0 { 1 } else { 0 }), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("no word of Han characters").count(), refused, "{}", stderr(&o));
    let lines = json_lines(&o);
    let kept: Vec<&Value> = a.iter().filter(|v| !v["bits"].is_null()).collect();
    assert_eq!(lines.len(), kept.len());
    for (line, v) in lines.iter().zip(&kept) {
        assert_eq!(line["bits"], v["bits_first_occurrence"], "jieba-md5 id {}", v["id"]);
        if v["hash_seed_sensitive"] == false {
            assert_eq!(line["bits"], v["bits"], "jieba-md5 id {}", v["id"]);
        }
    }
    // compare gives the Hamming distance of the article's pair (ids 0 and 1 at topk 22 and 11
    // are not comparable at one topk; ids 3 and 4 of recipe A are 2 bits apart).
    let text_of = |id: u64| {
        a.iter().find(|v| v["id"] == id).expect("id")["text"].as_str().expect("text").to_string()
    };
    let o = run(&[
        "compare",
        "--profile",
        "jieba-md5",
        "--json",
        "--text",
        &text_of(3),
        "--text",
        &text_of(4),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!((v["hamming"].as_u64(), v["bits"].as_u64()), (Some(2), Some(32)));
    for p in
        golden_lines("recipes/pairs_b.jsonl").iter().filter(|p| p["a_topk"] == p["b_topk"]).take(3)
    {
        let t = |id: &Value| {
            b.iter().find(|v| &v["id"] == id).expect("id")["text"].as_str().expect("t").to_string()
        };
        let o = run(&[
            "compare",
            "--profile",
            "gojieba",
            "--topn",
            &p["a_topk"].to_string(),
            "--json",
            "--text",
            &t(&p["a"]),
            "--text",
            &t(&p["b"]),
        ]);
        let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
        assert_eq!(v["hamming"], p["hamming"], "{p}");
    }
    // gojieba needs its topk.
    let o = run(&["fingerprint", "--profile", "gojieba", "--text", "你好"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The data block of a page, as JSON.
fn page_data(html: &str, block: &str) -> Value {
    let open = format!("<script type=\"application/json\" id=\"{block}\">");
    let start = html.find(&open).expect("data block") + open.len();
    let end = start + html[start..].find("</script>").expect("end of block");
    serde_json::from_str(&html[start..end]).expect("JSON")
}

/// A corpus of clusters with markup in one member, and singletons.
fn report_corpus(dir: &Path) -> PathBuf {
    let mut lines = String::new();
    let base: Vec<String> = (0..200).map(|i| format!("w{}", (i * 7919) % 1000)).collect();
    for i in 0..5 {
        let mut w = base.clone();
        if i > 0 {
            w[i * 10] = "changed".into();
        }
        let prefix = if i == 2 { "</script><script>alert(1)</script> " } else { "" };
        lines.push_str(
            &serde_json::json!({"id": format!("c{i}"), "text": format!("{prefix}{}", w.join(" "))})
                .to_string(),
        );
        lines.push('\n');
    }
    for i in 0..30 {
        let words: Vec<String> = (0..40).map(|j| format!("s{i}x{j}")).collect();
        lines.push_str(&serde_json::json!({"id": i, "text": words.join(" ")}).to_string());
        lines.push('\n');
    }
    let path = dir.join("corpus.jsonl");
    std::fs::write(&path, lines).expect("write corpus");
    path
}

#[test]
fn dedup_report_and_report_command_write_the_same_clusters() {
    let dir = tempdir("report");
    let corpus = report_corpus(&dir);
    let (c, html) = (corpus.display().to_string(), dir.join("r.html"));
    let (clusters, pairs) = (dir.join("c.jsonl"), dir.join("p.jsonl"));
    let o = run(&[
        "dedup",
        &c,
        "--report",
        html.to_str().expect("utf8"),
        "--clusters",
        clusters.to_str().expect("utf8"),
        "--pairs",
        pairs.to_str().expect("utf8"),
        "-q",
        "--report-members",
        "3",
        "--report-text-chars",
        "100",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).expect("report");
    assert!(page.starts_with("<!doctype html>"));
    // Nothing from the documents can close the data block or run.
    assert_eq!(page.matches("<script").count(), 2, "only the data block and the code");
    // It loads nothing: no address to fetch anywhere in it.
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http") && !page.contains("url(")
    );
    let data = page_data(&page, "report-data");
    let cluster = &data["clusters"][0];
    assert_eq!(cluster["size"], 5);
    let members = cluster["members"].as_array().expect("members");
    // The kept one and the two least similar; two hidden; texts cut at 100 characters.
    assert_eq!(members.len(), 3);
    assert_eq!(cluster["hidden"], 2);
    assert_eq!(members[0]["kept"], true);
    assert!(members[1]["similarity"].as_f64() <= members[2]["similarity"].as_f64());
    assert!(members.iter().all(|m| m["text"].as_str().expect("text").chars().count() <= 100));
    assert!(members.iter().all(|m| m["cut"] == true));

    let again = dir.join("again.html");
    let o = run(&[
        "report",
        &c,
        "--clusters",
        clusters.to_str().expect("utf8"),
        "--pairs",
        pairs.to_str().expect("utf8"),
        "-o",
        again.to_str().expect("utf8"),
        "-q",
        "--report-members",
        "3",
        "--report-text-chars",
        "100",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let again = std::fs::read_to_string(&again).expect("report");
    assert_eq!(page_data(&again, "report-data"), data);
}

#[test]
fn report_refuses_bad_inputs_with_their_place_and_writes_nothing() {
    let dir = tempdir("report-bad");
    let corpus = report_corpus(&dir);
    let c = corpus.display().to_string();
    let out = dir.join("r.html");
    let o = out.to_str().expect("utf8");

    // A cluster naming a document that is not in the input.
    let clusters = dir.join("c.jsonl");
    std::fs::write(&clusters, "{\"cluster\":[\"c0\",\"c1\"],\"keep\":\"c0\",\"size\":2,\"similarity\":0.9}\n{\"cluster\":[\"c2\",\"nope\"],\"keep\":\"c2\",\"size\":2,\"similarity\":0.9}\n").expect("write");
    let r = run(&["report", &c, "--clusters", clusters.to_str().expect("utf8"), "-o", o]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).contains(":2: the document \"nope\" is not in the input"), "{}", stderr(&r));
    assert!(!out.exists());

    // A malformed line, and a kept document outside its cluster.
    std::fs::write(&clusters, "{\"cluster\":[\"c0\",\"c1\"],\"keep\":\"c0\"}\n{oops\n")
        .expect("write");
    let r = run(&["report", &c, "--clusters", clusters.to_str().expect("utf8"), "-o", o]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).contains("c.jsonl:2: not a cluster line"), "{}", stderr(&r));
    std::fs::write(&clusters, "{\"cluster\":[\"c0\",\"c1\"],\"keep\":\"c3\"}\n").expect("write");
    let r = run(&["report", &c, "--clusters", clusters.to_str().expect("utf8"), "-o", o]);
    assert!(
        stderr(&r).contains("c.jsonl:1: the kept document \"c3\" is not a member"),
        "{}",
        stderr(&r)
    );
    assert!(!out.exists());

    // The report may not overwrite an input; the limits have bounds.
    let r = run(&["report", &c, "--clusters", clusters.to_str().expect("utf8"), "-o", &c]);
    assert_eq!(r.status.code(), Some(2));
    let r = run(&["dedup", &c, "--report", &c]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    for (flag, value) in
        [("--report-members", "1"), ("--report-text-chars", "99"), ("--report-clusters", "100001")]
    {
        let r = run(&["dedup", &c, "--report", o, flag, value]);
        assert_eq!(r.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&r).contains("is not between"), "{}", stderr(&r));
    }
    assert!(!out.exists());
}

#[test]
fn compare_html_is_a_page_with_every_measure() {
    let o = run(&[
        "compare",
        "--html",
        "--text",
        "the cat sat on the mat <b>",
        "--text",
        "the cat sat on a mat",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains("<th>jaccard exact</th>"));
    assert!(page.contains("the cat sat on the mat &lt;b&gt;"));
    assert!(!page.contains("<b>"));
    let data = page_data(&page, "compare-data");
    assert_eq!(data["a"]["text"], "the cat sat on the mat <b>");
    let o = run(&["compare", "--html", "--json", "--text", "a", "--text", "b"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_spill_file_of_feature_hashes_is_bounded_and_its_errors_are_clear() {
    let dir = tempdir("spill");
    let corpus = big_corpus(&dir, 20_000);
    let c = corpus.display().to_string();
    let out = dir.join("kept.jsonl");
    let o = out.to_str().expect("utf8");
    // Spilled or in memory: the same clusters.
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    let spill = dir.join("spill");
    std::fs::create_dir_all(&spill).expect("dir");
    let r = run(&[
        "dedup",
        &c,
        "--clusters",
        a.to_str().expect("utf8"),
        "--spill-dir",
        spill.to_str().expect("utf8"),
        "-q",
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let r = run(&["dedup", &c, "--clusters", b.to_str().expect("utf8"), "--in-memory", "-q"]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(std::fs::read(&a).expect("a"), std::fs::read(&b).expect("b"));
    assert_eq!(std::fs::read_dir(&spill).expect("dir").count(), 0, "no spill file is left");

    // A directory that is not there, and two contradicting options: usage errors.
    let r = run(&["dedup", &c, "--spill-dir", "/no/such/dir", "-o", o]);
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("--spill-dir /no/such/dir: not a directory"), "{}", stderr(&r));
    let r = run(&["dedup", &c, "--spill-dir", spill.to_str().expect("utf8"), "--in-memory"]);
    assert_eq!(r.status.code(), Some(2));

    // No room for the spill file (the file size limit, as a full disk): a clear error, and
    // nothing written.
    let r = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -f 512; exec '{}' dedup '{c}' --spill-dir '{}' -o '{o}'",
            env!("CARGO_BIN_EXE_neardup"),
            spill.display()
        ))
        .output()
        .expect("bash");
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains("the spill file of the feature hashes in"), "{}", stderr(&r));
    assert!(stderr(&r).contains("File too large"), "{}", stderr(&r));
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(&dir)
            .expect("dir")
            .filter(|e| e.as_ref().expect("entry").file_name().to_string_lossy().ends_with(".tmp"))
            .count(),
        0
    );
}

/// JSONL of `n` documents of distinct words, ids `{tag}-{i}`.
fn distinct_docs(tag: &str, n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let words: Vec<String> = (0..12).map(|k| format!("{tag}w{i}x{k}")).collect();
        out.push_str(&format!("{{\"id\": \"{tag}-{i}\", \"text\": \"{}\"}}\n", words.join(" ")));
    }
    out
}

/// The number of documents the index in `dir` holds, read through the binary (so the whole
/// index is read and checked, not just its manifest).
fn index_documents(dir: &Path) -> usize {
    let empty = dir.with_extension("empty.jsonl");
    std::fs::write(&empty, "").expect("write");
    let o = run(&[
        "dedup",
        empty.to_str().expect("p"),
        "--against",
        dir.to_str().expect("p"),
        "--clusters",
        "/dev/null",
    ]);
    assert!(o.status.success(), "the index in {} is whole: {}", dir.display(), stderr(&o));
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest");
    let manifest: Value = serde_json::from_str(&manifest).expect("json");
    manifest["documents"].as_u64().expect("count") as usize
}

/// Regression: outputs were renamed over their targets, so `-o /dev/null` replaced the system's
/// /dev/null with a regular file, a FIFO's reader hung, and a link became a plain file.
#[test]
fn outputs_write_through_links_and_into_fifos_and_devices() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempdir("special-outputs");
    let (corpus, _) = dedup_corpus(&dir);
    let real = dir.join("real-kept.jsonl");
    std::fs::write(&real, "old\n").expect("write");
    let link = dir.join("kept-link.jsonl");
    std::os::unix::fs::symlink("real-kept.jsonl", &link).expect("symlink");
    let report_target = dir.join("report-target.html");
    let report_link = dir.join("report.html");
    std::os::unix::fs::symlink(&report_target, &report_link).expect("symlink");
    let fifo = dir.join("clusters.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).expect("read the fifo"))
    };
    let o = run(&[
        "dedup",
        corpus.to_str().expect("p"),
        "-o",
        link.to_str().expect("p"),
        "--clusters",
        fifo.to_str().expect("p"),
        "--pairs",
        "/dev/null",
        "--dropped",
        "/dev/null",
        "--report",
        report_link.to_str().expect("p"),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let clusters = reader.join().expect("reader");
    assert_eq!(clusters.lines().count(), 2, "{clusters}");
    assert!(std::fs::symlink_metadata(&link).expect("meta").file_type().is_symlink());
    assert!(std::fs::read_to_string(&real).expect("read").contains("\"en-a\""));
    assert!(std::fs::symlink_metadata(&report_link).expect("meta").file_type().is_symlink());
    assert!(std::fs::read_to_string(&report_target).expect("read").contains("<html"));
    assert!(std::fs::symlink_metadata(&fifo).expect("meta").file_type().is_fifo());
    assert!(std::fs::metadata("/dev/null").expect("meta").file_type().is_char_device());
    let left: Vec<String> = names(&dir).into_iter().filter(|n| n.ends_with(".tmp")).collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Regression: four runs adding 300 documents each to one index all exited 0, and 900
/// documents were missing (each saved over the others' work).
#[test]
fn concurrent_save_index_runs_take_turns_and_lose_no_document() {
    let dir = tempdir("concurrent-index");
    let index = dir.join("index");
    let first = dir.join("first.jsonl");
    std::fs::write(&first, distinct_docs("first", 1)).expect("write");
    let o = run(&["dedup", first.to_str().expect("p"), "--save-index", index.to_str().expect("p")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let children: Vec<_> = (0..4)
        .map(|r| {
            let input = dir.join(format!("run{r}.jsonl"));
            std::fs::write(&input, distinct_docs(&format!("r{r}"), 300)).expect("write");
            bin()
                .args(["dedup", input.to_str().expect("p"), "--quiet", "--clusters", "/dev/null"])
                .args(["--against", index.to_str().expect("p")])
                .args(["--save-index", index.to_str().expect("p")])
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let o = child.wait_with_output().expect("wait");
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(index_documents(&index), 1 + 4 * 300);
}

/// A `--against D --save-index D` run that fails (a file size limit, at every size), or is
/// stopped by SIGTERM or SIGKILL at any moment, leaves the old index or the new one, whole; the
/// exit status says which (0: the new one, with every output; anything else: the old one), so
/// a rerun never finds its own documents already indexed.
#[test]
fn a_stopped_or_failed_save_leaves_the_old_index_or_the_new_one() {
    let dir = tempdir("index-faults");
    let base = dir.join("base");
    let old_docs = dir.join("old.jsonl");
    std::fs::write(&old_docs, distinct_docs("old", 50)).expect("write");
    let o =
        run(&["dedup", old_docs.to_str().expect("p"), "--save-index", base.to_str().expect("p")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let new_docs = dir.join("new.jsonl");
    std::fs::write(&new_docs, distinct_docs("new", 400)).expect("write");
    let (index, kept) = (dir.join("index"), dir.join("kept.jsonl"));
    let reset = || {
        let _ = std::fs::remove_dir_all(&index);
        std::fs::create_dir_all(&index).expect("dir");
        for e in std::fs::read_dir(&base).expect("dir") {
            let e = e.expect("entry");
            std::fs::copy(e.path(), index.join(e.file_name())).expect("copy");
        }
        std::fs::write(&kept, "old kept\n").expect("write");
    };
    let args = [
        "dedup",
        new_docs.to_str().expect("p"),
        "--against",
        index.to_str().expect("p"),
        "--save-index",
        index.to_str().expect("p"),
        "-o",
        kept.to_str().expect("p"),
        "--quiet",
    ];
    let check = |status: std::process::ExitStatus, what: &str| {
        let n = index_documents(&index);
        let kept = std::fs::read_to_string(&kept).expect("read");
        assert!(n == 50 || n == 450, "{what}: {n} documents");
        if status.success() {
            assert_eq!(n, 450, "{what}: exit 0 means the new index");
            assert_eq!(kept.lines().count(), 400, "{what}: exit 0 means every output");
        } else if status.code().is_some() {
            assert_eq!(n, 50, "{what}: exit {status} means the old index");
        }
        // A run that ended by itself leaves no temporary file. One ended by a signal may
        // (its handler cannot remove a file the run is creating at that moment); the next save
        // removes those (index_file::tests).
        let left: Vec<String> = names(&index).into_iter().filter(|n| n.ends_with(".tmp")).collect();
        if status.code().is_some_and(|c| c < 128) {
            assert!(left.is_empty(), "{what}: temporary files left: {left:?}");
        }
        n
    };

    // A file size limit (the shell's ulimit, in 1 KiB blocks) at sizes from nothing to enough.
    let mut reached_new = false;
    for blocks in [0u64, 1, 2, 4, 8, 16, 24, 32, 48, 64, 128, 100_000] {
        reset();
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -f {blocks} && exec \"$@\""))
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_neardup"))
            .args(args)
            .output()
            .expect("sh runs");
        let n = check(o.status, &format!("ulimit -f {blocks}"));
        if !o.status.success() {
            assert!(!stderr(&o).is_empty(), "a failure says why");
        }
        reached_new |= n == 450;
    }
    assert!(reached_new, "the largest limit lets the run finish");

    // Signals at moments spread over a run's length.
    let started = std::time::Instant::now();
    reset();
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let length = started.elapsed();
    use rustix::process::{kill_process, Pid, Signal};
    for (signal, name) in [(Signal::TERM, "SIGTERM"), (Signal::KILL, "SIGKILL")] {
        for step in 0..30u32 {
            reset();
            let mut child = bin().args(args).stderr(Stdio::null()).spawn().expect("spawn");
            std::thread::sleep(length * step / 25);
            // Our own child, not yet waited for: the pid is still its own.
            let _ = kill_process(Pid::from_child(&child), signal);
            let status = child.wait().expect("wait");
            check(status, &format!("{name} at {step}/25 of a run"));
        }
    }
}

/// Regression: `report` drew whatever clusters and pairs it was given (a similarity of 7, ids
/// not in the input, one document in two clusters), and `--clusters -` said "No such file".
#[test]
fn report_checks_clusters_and_pairs_against_the_corpus_and_reads_them_from_stdin() {
    let dir = tempdir("report-checks");
    let corpus = report_corpus(&dir);
    let c = corpus.display().to_string();
    let out = dir.join("r.html");
    let o = out.to_str().expect("utf8");
    let clusters = dir.join("c.jsonl");
    let pairs = dir.join("p.jsonl");
    let good = "{\"cluster\":[\"c0\",\"c1\"],\"keep\":\"c0\",\"size\":2,\"similarity\":0.9}\n";
    let cases: [(&str, &str, &str); 6] = [
        ("{\"cluster\":[\"c0\",\"c1\"],\"keep\":\"c0\",\"similarity\":7}\n", "", ":1: similarity 7 is not in [0, 1]"),
        (
            "{\"cluster\":[\"c0\",\"c1\"],\"keep\":\"c0\"}\n{\"cluster\":[\"c2\",\"c1\"],\"keep\":\"c2\"}\n",
            "",
            ":2: the document \"c1\" is also in cluster 1",
        ),
        // Ids are JSON as written: 7 and "7" are two documents, and only 7 is in the input.
        ("{\"cluster\":[7,\"7\"],\"keep\":7}\n", "", ":1: the document \"7\" is not in the input"),
        (good, "{\"a\":\"c0\",\"b\":\"c1\",\"similarity\":-0.5}\n", "p.jsonl:1: similarity -0.5"),
        (good, "{\"a\":\"c0\",\"b\":\"c4\",\"similarity\":0.9}\n", "p.jsonl:1: the document \"c4\" is in no cluster"),
        (good, "{\"a\":\"c0\",\"b\":\"c0\",\"similarity\":1}\n", "p.jsonl:1: a pair of the document \"c0\" with itself"),
    ];
    for (cl, pa, message) in cases {
        std::fs::write(&clusters, cl).expect("write");
        let mut args = vec!["report", &c, "--clusters", clusters.to_str().expect("p"), "-o", o];
        if !pa.is_empty() {
            std::fs::write(&pairs, pa).expect("write");
            args.extend(["--pairs", pairs.to_str().expect("p")]);
        }
        let r = run(&args);
        assert_eq!(r.status.code(), Some(1), "{message}: {}", stderr(&r));
        assert!(stderr(&r).contains(message), "{message}: {}", stderr(&r));
        assert!(!out.exists());
    }
    // The clusters on standard input.
    let mut child = bin()
        .args(["report", &c, "--clusters", "-", "-o", o, "-q"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(good.as_bytes()).expect("write");
    let r = child.wait_with_output().expect("wait");
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(std::fs::read_to_string(&out).expect("report").contains("<!doctype html>"));
    // Standard input for two of them is refused.
    let r = run(&["report", "-", "--clusters", "-", "-o", o]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
}

/// Regression: `compare - -` and `fingerprint --jsonl - -` read standard input once and took
/// the second `-` as an empty document.
#[test]
fn standard_input_named_twice_is_refused() {
    for args in [
        vec!["compare", "-", "-"],
        vec!["fingerprint", "--jsonl", "-", "-"],
        vec!["idf", "build", "-", "-", "-o", "/dev/null"],
    ] {
        let mut child = bin()
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let _ =
            child.stdin.take().expect("stdin").write_all(b"{\"id\":1,\"text\":\"hello world\"}\n");
        let o = child.wait_with_output().expect("wait");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("standard input (-) is given twice"), "{}", stderr(&o));
    }
}

/// Regression: `params --threshold 1` printed a banding (1 band) that datasketch refuses.
#[test]
fn params_refuses_what_datasketch_refuses() {
    let o = run(&["params", "--threshold", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("datasketch's MinHashLSH refuses"), "{}", stderr(&o));
    // dedup's choice (--recall) has no such rule.
    let o = run(&["params", "--threshold", "1", "--recall", "0.99"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Above the sketches' 1024 the optimiser still answers (the datasketch drop-in takes more).
    let o = run(&["params", "--threshold", "0.5", "--num-perm", "2048", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    assert_eq!((v["bands"].as_u64(), v["rows"].as_u64()), (Some(208), Some(8)));
}

/// Regression: a spec written as a JSON array was read field by field in declaration order.
#[test]
fn a_spec_written_as_an_array_is_refused() {
    let dir = tempdir("spec-array");
    let spec = dir.join("spec.json");
    std::fs::write(&spec, "[{\"nfkc\": false}]").expect("write");
    let o = run(&["fingerprint", "--spec", spec.to_str().expect("p"), "--text", "hello"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("array where an object is expected"), "{}", stderr(&o));
}

/// Regression: two empty texts compared at SimHash similarity 1.0 and edit similarity 1.0.
#[test]
fn empty_texts_are_similar_to_nothing_in_compare() {
    let o = run(&["compare", "--json", "--text", "", "--text", ""]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    assert_eq!(v["simhash"]["similarity"], 0.0, "{v}");
    assert_eq!(v["edit_similarity"], 0.0, "{v}");
}

/// Regression: a bad TMPDIR was reported as `--spill-dir /nonexistent`, an option never given;
/// a symbolic link loop was reported as "skipped" and then failed the run; a plain file named
/// `.gz` was reported as a damaged stream at byte 17.
#[test]
fn messages_name_what_the_user_gave() {
    let dir = tempdir("messages");
    let corpus = dir.join("c.jsonl");
    std::fs::write(&corpus, distinct_docs("m", 3)).expect("write");
    let c = corpus.to_str().expect("p");
    let o = bin()
        .args(["dedup", c, "--clusters", "/dev/null"])
        .env("TMPDIR", dir.join("nonexistent"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("TMPDIR=") && err.contains("nonexistent"), "{err}");
    assert!(!err.contains("--spill-dir /"), "{err}");

    let docs = dir.join("docs");
    std::fs::create_dir_all(docs.join("sub")).expect("mkdir");
    std::fs::write(docs.join("sub/a.jsonl"), distinct_docs("a", 2)).expect("write");
    std::os::unix::fs::symlink(&docs, docs.join("sub/back")).expect("loop");
    let o = run(&["dedup", docs.to_str().expect("p"), "--clusters", "/dev/null"]);
    assert!(o.status.success(), "a loop loses nothing: {}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link loop back to"), "{}", stderr(&o));
    // A JSON Lines file in a directory is read as JSON Lines: its two records, read once.
    assert!(stderr(&o).contains("dedup: 2 documents"), "each file read once: {}", stderr(&o));

    for (name, format) in [("plain.gz", "gzip"), ("plain.zst", "zstd")] {
        let path = dir.join(name);
        std::fs::write(&path, "{\"id\": 1, \"text\": \"plain text\"}\n").expect("write");
        let o = run(&["dedup", path.to_str().expect("p"), "--clusters", "/dev/null"]);
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        assert!(err.contains(&format!("not a {format} file")), "{err}");
        assert!(err.contains("byte offset 0"), "{err}");
    }
}

#[test]
fn a_string_id_and_a_number_id_with_one_text_are_one_id() {
    let dir = tempdir("dedup-ids");
    let path = dir.join("ids.jsonl");
    std::fs::write(
        &path,
        "{\"id\": \"7\", \"text\": \"alpha beta gamma delta epsilon zeta eta theta\"}\n\
         {\"id\": 7, \"text\": \"one two three four five six seven eight nine\"}\n\
         {\"id\": 7, \"text\": \"red orange yellow green blue indigo violet\"}\n\
         {\"id\": \"8\", \"text\": \"north south east west up down left right\"}\n\
         {\"id\": 8.0, \"text\": \"spring summer autumn winter rain snow sun wind\"}\n",
    )
    .expect("write");
    let index = dir.join("index");
    let o =
        run(&["dedup", &path.display().to_string(), "--save-index", &index.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    // "7" and 7 are one id (two repeats, named once); "8" and 8.0 are two.
    assert!(err.contains("2 duplicate ids (") && err.contains("e.g. 7\n"), "{err}");
    assert!(err.contains("cannot be loaded as a collection"), "{err}");
}

/// The conformance table's overlap rows (the library is the oracle) through the built binary:
/// the queries against the collection, or both as one input, options as their flags.
#[test]
fn the_conformance_table_overlap_rows_through_the_cli() {
    let table = common::conformance_table();
    let o = &table["overlap"];
    let dir = tempdir("conformance-overlap");
    let write = |name: &str, docs: Vec<&Value>| {
        let path = dir.join(name);
        std::fs::write(&path, docs.iter().map(|d| format!("{d}\n")).collect::<String>())
            .expect("write");
        path.display().to_string()
    };
    let list = |key: &str| o[key].as_array().expect("documents").iter().collect::<Vec<_>>();
    let collection = write("collection.jsonl", list("collection"));
    let queries = write("queries.jsonl", list("queries"));
    let all = write("all.jsonl", [list("collection"), list("queries")].concat());
    let (passages, summary) = (dir.join("p.jsonl"), dir.join("s.jsonl"));
    let kept = dir.join("kept.jsonl");
    for row in o["rows"].as_array().expect("rows") {
        let mut args: Vec<String> = vec!["overlap".into()];
        let within = row["mode"] != "against";
        if within {
            // Within one input, `-o` writes each record without its repeats too.
            args.extend([all.clone(), "-o".into(), kept.display().to_string()]);
        } else {
            args.extend([queries.clone(), "--against".into(), collection.clone()]);
        }
        for (name, value) in row["options"].as_object().expect("options") {
            args.push(format!("--{}", name.replace('_', "-")));
            match value {
                Value::Bool(true) => {}
                Value::String(s) => args.push(s.clone()),
                other => args.push(other.to_string()),
            }
        }
        let exclude = row["exclude_source"].as_array().expect("ids");
        if !exclude.is_empty() {
            args.push("--exclude-source".into());
            args.extend(exclude.iter().map(|i| i.as_str().expect("id").to_string()));
        }
        args.extend([
            "--passages".into(),
            passages.display().to_string(),
            "--summary".into(),
            summary.display().to_string(),
            "-q".into(),
        ]);
        let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(o.status.success(), "{}: {}", row["name"], stderr(&o));
        let lines = |p: &Path| -> Vec<Value> {
            std::fs::read_to_string(p)
                .expect("output")
                .lines()
                .map(|l| serde_json::from_str(l).expect("JSON"))
                .collect()
        };
        let got_passages: Vec<Value> =
            lines(&passages).iter().map(common::conformance_passage).collect();
        let copied: serde_json::Map<String, Value> = lines(&summary)
            .iter()
            .map(|s| {
                let q = neardup::id_from_json(&s["query"].to_string()).expect("id").into_owned();
                (q, s["copied_chars"].clone())
            })
            .collect();
        let mut got = serde_json::json!({"passages": got_passages, "copied_chars": copied});
        if within {
            let texts: serde_json::Map<String, Value> = lines(&kept)
                .iter()
                .map(|r| {
                    let id = neardup::id_from_json(&r["id"].to_string()).expect("id").into_owned();
                    (id, r["text"].clone())
                })
                .collect();
            got["without_repeats"] = texts.into();
        }
        assert_eq!(got, row["expect"], "{}", row["name"]);
    }
}

/// The conformance table's error rows through the built binary: each value is a usage error
/// (exit 2) that names its option, by the table's name or as its flag.
#[test]
fn the_conformance_table_error_rows_through_the_cli() {
    let table = common::conformance_table();
    let dir = tempdir("conformance-errors");
    let input = dir.join("in.jsonl");
    std::fs::write(&input, "{\"id\": \"a\", \"text\": \"a short text of a few words\"}\n")
        .expect("write");
    for row in table["errors"]["rows"].as_array().expect("rows") {
        let command = if row["group"] == "passages" { "overlap" } else { "dedup" };
        let mut args = vec![command.to_string(), input.display().to_string(), "-q".into()];
        for (name, value) in row["options"].as_object().expect("options") {
            args.push(format!("--{}", name.replace('_', "-")));
            args.push(value.as_str().map_or_else(|| value.to_string(), str::to_string));
        }
        let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(2), "{row}: {}", stderr(&o));
        let name = row["names"].as_str().expect("names");
        let said = stderr(&o).to_lowercase();
        assert!(said.contains(name) || said.contains(&name.replace('_', "-")), "{row}: {said}");
    }
}

/// The conformance table's dedup rows (tests/conformance/table.json; the library is the oracle)
/// through the built binary, each option given as its flag.
#[test]
fn the_conformance_table_through_the_cli() {
    let table = common::conformance_table();
    let dir = tempdir("conformance");
    let corpus = dir.join("corpus.jsonl");
    let lines: String =
        table["corpus"].as_array().expect("corpus").iter().map(|d| format!("{d}\n")).collect();
    std::fs::write(&corpus, lines).expect("write");
    let text = |v: &Value| neardup::id_from_json(&v.to_string()).expect("id").into_owned();
    for row in table["dedup"].as_array().expect("rows") {
        let (clusters, kept) = (dir.join("clusters.jsonl"), dir.join("kept.jsonl"));
        let mut args: Vec<String> = vec![
            "dedup".into(),
            corpus.display().to_string(),
            "--preset".into(),
            row["preset"].as_str().expect("preset").into(),
            "--clusters".into(),
            clusters.display().to_string(),
            "-o".into(),
            kept.display().to_string(),
            "-q".into(),
        ];
        let pipeline = row["pipeline"].as_object().into_iter().flatten();
        for (name, value) in pipeline.chain(row["search"].as_object().expect("search")) {
            args.push(format!("--{}", name.replace('_', "-")));
            args.push(match value {
                Value::String(s) => s.clone(),
                Value::Array(items) => {
                    items.iter().map(Value::to_string).collect::<Vec<_>>().join(",")
                }
                other => other.to_string(),
            });
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&args);
        assert!(o.status.success(), "{}: {}", row["name"], stderr(&o));
        let read = |p: &Path| std::fs::read_to_string(p).expect("output");
        let mut got_clusters: Vec<Vec<String>> = read(&clusters)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("cluster");
                let mut m: Vec<String> =
                    v["cluster"].as_array().expect("members").iter().map(text).collect();
                m.sort();
                m
            })
            .collect();
        got_clusters.sort();
        let mut got_kept: Vec<String> = read(&kept)
            .lines()
            .map(|l| text(&serde_json::from_str::<Value>(l).expect("record")["id"]))
            .collect();
        got_kept.sort();
        assert_eq!(
            (serde_json::json!(got_clusters), serde_json::json!(got_kept)),
            (row["expect"]["clusters"].clone(), row["expect"]["kept"].clone()),
            "{}",
            row["name"]
        );
    }
}

/// The saved indexes committed in `tests/fixtures/index_v3` and `index_v4` (formats 3 and 4,
/// written by the builds of their READMEs) are read by this build: `--against` finds the same
/// clusters and assignments, byte for byte. A later format must keep reading them, or refuse
/// them by name.
#[test]
fn the_committed_saved_indexes_are_read_as_written() {
    for version in ["index_v3", "index_v4"] {
        committed_saved_index_is_read_as_written(version);
    }
}

fn committed_saved_index_is_read_as_written(version: &str) {
    let fixture = repo().join("tests/fixtures").join(version);
    let dir = tempdir(version);
    // A copy: a run takes the index's lock file, and the fixture stays untouched.
    let index = dir.join("index");
    std::fs::create_dir(&index).expect("mkdir");
    for entry in std::fs::read_dir(fixture.join("index")).expect("fixture") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), index.join(entry.file_name())).expect("copy");
    }
    // With the settings it was made with given, and with none: then the index's are taken.
    for given in [&["--threshold", "0.5"][..], &[]] {
        let (clusters, assignments) = (dir.join("c.jsonl"), dir.join("a.jsonl"));
        let mut args = vec![
            "dedup".to_string(),
            fixture.join("query.jsonl").display().to_string(),
            "--against".into(),
            index.display().to_string(),
            "--clusters".into(),
            clusters.display().to_string(),
            "--assignments".into(),
            assignments.display().to_string(),
        ];
        args.extend(given.iter().map(|a| a.to_string()));
        let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stderr(&out).contains("against an index of 4 documents"), "{}", stderr(&out));
        for (written, expected) in
            [(clusters, "expected_clusters.jsonl"), (assignments, "expected_assignments.jsonl")]
        {
            let expected = std::fs::read_to_string(fixture.join(expected)).expect("expected");
            assert_eq!(std::fs::read_to_string(written).expect("written"), expected, "{given:?}");
        }
    }
    // Settings the index cannot be searched with are refused by name, not answered: another
    // pipeline, other bands.
    for other in [&["--preset", "zh-news"][..], &["--bands", "16", "--rows", "8"]] {
        let mut args = vec![
            "dedup".to_string(),
            fixture.join("query.jsonl").display().to_string(),
            "--against".into(),
            index.display().to_string(),
        ];
        args.extend(other.iter().map(|a| a.to_string()));
        let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("leave out the options that differ or build a new index"),
            "{other:?}: {}",
            stderr(&out)
        );
    }
}

/// A Spark (or Hadoop) output folder is read as Spark wrote it: its `part-*` files by their
/// format, and nothing of `_SUCCESS`, the hidden `.crc` checksums or other side files.
#[test]
fn a_spark_output_folder_is_its_part_files() {
    let dir = tempdir("spark-folder");
    let out = dir.join("out.json");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(out.join("part-00000-c0ffee.json"), distinct_docs("a", 2)).expect("write");
    std::fs::write(out.join("part-00001-c0ffee.json"), distinct_docs("b", 3)).expect("write");
    std::fs::write(out.join("_SUCCESS"), "").expect("write");
    std::fs::write(out.join(".part-00000-c0ffee.json.crc"), b"crc\x00\x01\x02").expect("write");
    std::fs::write(out.join("part-00000-c0ffee.json.crc"), b"crc\x00\x01\x02").expect("write");
    std::fs::create_dir_all(out.join("_temporary/0")).expect("mkdir");
    std::fs::write(out.join("_temporary/0/part-9.json"), distinct_docs("t", 4)).expect("write");
    let kept = dir.join("kept.jsonl");
    let o = run(&[
        "dedup",
        out.to_str().expect("p"),
        "--assignments",
        "-",
        "-o",
        kept.to_str().expect("p"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<String> =
        json_lines(&o).iter().map(|a| a["id"].as_str().expect("id").to_string()).collect();
    assert_eq!(ids, ["a-0", "a-1", "b-0", "b-1", "b-2"], "{}", stderr(&o));
    // The records, byte for byte, as the part files hold them.
    let written = std::fs::read_to_string(&kept).expect("kept");
    assert_eq!(written, distinct_docs("a", 2) + &distinct_docs("b", 3));
    // Every command reads a folder so: fingerprint and idf too.
    let o = run(&["fingerprint", out.to_str().expect("p")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<Value> = json_lines(&o).iter().map(|f| f["id"].clone()).collect();
    assert_eq!(ids, ["a-0", "a-1", "b-0", "b-1", "b-2"].map(|s| serde_json::json!(s)));
    let idf = dir.join("idf.txt");
    let o = run(&["idf", "build", out.to_str().expect("p"), "-o", idf.to_str().expect("p")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("neardup: 5 documents"), "{}", stderr(&o));
}

/// `--text-field` and `--id-field` reach into objects by a dotted name; a key with the whole
/// name wins; a named id field that no record has is an error naming it, with nothing written.
#[test]
fn nested_fields_by_dotted_names_and_a_misspelt_id_field_is_an_error() {
    let dir = tempdir("nested-fields");
    let corpus = dir.join("crawl.jsonl");
    let text = "the quick brown fox jumps over the lazy dog near the river bank today";
    let lines = [
        format!(r#"{{"meta": {{"url": "https://a.example/1", "lang": "en"}}, "content": {{"body": "{text}"}}}}"#),
        format!(r#"{{"content": {{"title": "t", "body": "{text}"}}, "meta": {{"url": "https://a.example/2"}}}}"#),
        // A key with the whole dotted name is that field.
        r#"{"meta.url": "https://b.example/3", "meta": {"url": "ignored"}, "content": {"body": "another page entirely about trains and timetables"}}"#.to_string(),
    ];
    std::fs::write(&corpus, lines.join("\n") + "\n").expect("write");
    let c = corpus.to_str().expect("p");
    let o = run(&[
        "dedup",
        c,
        "--id-field",
        "meta.url",
        "--text-field",
        "content.body",
        "--clusters",
        "-",
        "--threshold",
        "0.9",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let clusters = json_lines(&o);
    assert_eq!(clusters.len(), 1, "{}", stdout(&o));
    assert_eq!(
        clusters[0]["cluster"],
        serde_json::json!(["https://a.example/1", "https://a.example/2"])
    );
    let o = run(&["fingerprint", c, "--id-field", "meta.url", "--text-field", "content.body"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<Value> = json_lines(&o).iter().map(|f| f["id"].clone()).collect();
    assert_eq!(
        ids,
        [
            serde_json::json!("https://a.example/1"),
            serde_json::json!("https://a.example/2"),
            serde_json::json!("https://b.example/3")
        ]
    );

    let kept = dir.join("kept.jsonl");
    // With --skip-bad too: a mistake in the request, not in the data, is not skipped (its
    // records were read under the wrong name).
    for skip in [None, Some("--skip-bad")] {
        let k = kept.to_str().expect("p");
        let mut args = vec!["dedup", c, "--id-field", "nosuch", "--text-field", "content.body"];
        args.extend(skip);
        args.extend(["-o", k]);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        let said = format!("{c}: none of its 3 records has the field \"nosuch\"");
        assert!(err.contains(&said) && !err.contains("skipped"), "{err}");
        assert!(!kept.exists(), "nothing written");
    }
    // Without --id-field, records without an "id" are named FILE:LINE, as before.
    let o = run(&["dedup", c, "--text-field", "content.body", "--assignments", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_lines(&o)[0]["id"], serde_json::json!(format!("{c}:1")));
}

/// A file's name says its format: `fingerprint corpus.jsonl` reads records without --jsonl,
/// `--format text` reads any file as one document, and a directory mixes both.
#[test]
fn the_format_follows_the_file_name_unless_given() {
    let dir = tempdir("format-by-name");
    let corpus = dir.join("corpus.jsonl");
    std::fs::write(&corpus, distinct_docs("r", 3)).expect("write");
    let c = corpus.to_str().expect("p");
    let o = run(&["fingerprint", c]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_lines(&o).len(), 3);
    let o = run(&["fingerprint", c, "--format", "text"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = json_lines(&o);
    assert_eq!((lines.len(), &lines[0]["id"]), (1, &serde_json::json!(c)));

    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(docs.join("a.txt"), "a plain text page about the weather").expect("write");
    std::fs::write(docs.join("b.jsonl"), distinct_docs("b", 2)).expect("write");
    let o = run(&["dedup", docs.to_str().expect("p"), "--assignments", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<Value> = json_lines(&o).iter().map(|a| a["id"].clone()).collect();
    let a = docs.join("a.txt").display().to_string();
    assert_eq!(ids, [serde_json::json!(a), serde_json::json!("b-0"), serde_json::json!("b-1")]);
    let o = run(&["fingerprint", c, "--format", "text", "--jsonl"]);
    assert_eq!(o.status.code(), Some(2), "contradictory: {}", stderr(&o));
}

/// A Taiwan and a mainland edition of one text differ in vocabulary as well as characters
/// (軟體/软件, 網路/网络, 使用者/用户): `--zh-script mainland` (OpenCC's tw2sp) makes them one
/// text, where `simplified` (characters only) leaves every such word apart.
#[test]
fn taiwan_and_mainland_editions_are_one_text_under_zh_script_mainland() {
    let tw = "使用者可以在網路上免費下載這個軟體，安裝以後用滑鼠開啟檔案，程式會自動連線到伺服器並更新資料庫。";
    let cn = "用户可以在网络上免费下载这个软件，安装以后用鼠标打开文件，程序会自动连接到服务器并更新数据库。";
    let jaccard = |extra: &[&str]| {
        let mut args = vec!["compare", "--json", "--preset", "zh-news", "--text", tw, "--text", cn];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
        v["jaccard_exact"].as_f64().expect("jaccard")
    };
    let chars_only = jaccard(&[]);
    assert!(chars_only < 0.8, "the preset's t2s leaves the vocabulary apart: {chars_only}");
    assert_eq!(jaccard(&["--zh-script", "mainland"]), 1.0);
    let o = run(&["spec", "--preset", "zh-news", "--zh-script", "mainland"]);
    assert!(stdout(&o).contains("\"zh_script\": \"mainland\""), "{}", stdout(&o));
    let o = run(&["compare", "--zh-script", "taiwan", "--text", "a", "--text", "b"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("mainland"), "the valid values are listed: {}", stderr(&o));
}

/// Issue 20: the same sentence in traditional and simplified characters scored Jaccard 0.11.
/// The Chinese presets write traditional as simplified (OpenCC's t2s), any pipeline can with
/// `--zh-script`, and `keep` is the old behaviour (the default preset's).
#[test]
fn traditional_and_simplified_chinese_are_one_text_in_the_chinese_presets() {
    let hk = "香港特別行政區政府今日公佈，今年夏季防汛工作的總體安排已經確定，各部門將加強對低窪地區的巡查，並在暴雨期間開放臨時庇護中心。";
    let cn = "香港特别行政区政府今日公布，今年夏季防汛工作的总体安排已经确定，各部门将加强对低洼地区的巡查，并在暴雨期间开放临时庇护中心。";
    let jaccard = |extra: &[&str]| {
        let mut args = vec!["compare", "--json", "--text", hk, "--text", cn];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
        v["jaccard_exact"].as_f64().expect("jaccard")
    };
    for preset in ["zh-news", "zh-keywords", "zh-han"] {
        assert_eq!(jaccard(&["--preset", preset]), 1.0, "{preset}");
        assert!(jaccard(&["--preset", preset, "--zh-script", "keep"]) < 0.5, "{preset}");
    }
    assert!(jaccard(&[]) < 0.5, "the default preset keeps the characters as written");
    assert_eq!(jaccard(&["--zh-script", "simplified"]), 1.0);
    assert_eq!(jaccard(&["--zh-script", "traditional"]), 1.0);
    // The spec says so, and a spec without it is the one of earlier builds (same pipeline id).
    let o = run(&["spec", "--preset", "zh-news"]);
    assert!(stdout(&o).contains("\"zh_script\": \"simplified\""), "{}", stdout(&o));
    let o = run(&["spec"]);
    assert!(!stdout(&o).contains("zh_script"), "{}", stdout(&o));
}
