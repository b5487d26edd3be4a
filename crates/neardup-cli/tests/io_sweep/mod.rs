//! The input and output items of the hostile sweep (issue 32), each through the surface where it
//! was found, each test named after what broke.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray,
};
use serde_json::Value;

use super::{json_lines, run, stderr, stdout};
use crate::common::tempdir;

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// Two near-duplicate texts and an unrelated one.
const NEAR: [&str; 3] = [
    "the harbour authority said on monday that the new pier would open in spring after two years of building work",
    "the harbour authority said on monday that the new pier would open in spring after two years of building works",
    "a quiet village in the hills has voted to keep its only school open despite falling numbers of pupils",
];

#[test]
fn named_txt_files_were_parsed_as_json_lines() {
    let dir = tempdir("named-txt");
    let names = ["a.txt", "b.md", "c.rst"];
    for (name, text) in names.iter().zip(NEAR) {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let files: Vec<String> = names.iter().map(|n| p(&dir.join(n))).collect();
    let mut args = vec!["dedup", "--clusters", "-"];
    args.extend(files.iter().map(String::as_str));
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let clusters = json_lines(&o);
    assert_eq!(clusters.len(), 1, "{}", stdout(&o));
    assert_eq!(clusters[0]["cluster"], serde_json::json!([files[0], files[1]]));
    // --help says how a named file's format is decided.
    let help = stdout(&run(&["dedup", "--help"]));
    assert!(help.contains(".txt, .text, .md, .rst") && help.contains("first bytes"), "{help}");
}

#[test]
fn datasketch_profile_defaulted_to_the_pre_2_0_scheme() {
    let text = "the quick brown fox jumps over the lazy dog";
    let minhash = |extra: &[&str]| -> Value {
        let mut args = vec!["fingerprint", "--profile", "datasketch", "--text", text];
        args.extend(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        json_lines(&o)[0]["minhash"].clone()
    };
    let default = minhash(&[]);
    assert_eq!(default, minhash(&["--scheme", "affine32"]), "the default is datasketch 2.0's");
    assert_ne!(default, minhash(&["--scheme", "legacy"]), "the old scheme is there by name");
}

/// Writes `batch` as a Parquet file.
fn write_parquet(path: &Path, batch: &RecordBatch) {
    let file = std::fs::File::create(path).expect("create");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).expect("writer");
    w.write(batch).expect("write");
    w.close().expect("close");
}

/// The ids of the records of a JSON Lines file, as written.
fn ids_in(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json")["id"].to_string())
        .collect()
}

#[test]
fn keep_values_past_2_pow_53_and_1_ns_apart_kept_the_first() {
    let dir = tempdir("keep-exact");
    let text = NEAR[0];
    // Equal as doubles: the first of each pair was kept.
    let cases = [
        ("9007199254740992", "9007199254740993"),
        ("18446744073709551616", "18446744073709551617"),
        ("\"2024-05-01T12:00:00.000000001Z\"", "\"2024-05-01T12:00:00.000000002Z\""),
    ];
    for (i, (small, large)) in cases.iter().enumerate() {
        let corpus = dir.join(format!("{i}.jsonl"));
        std::fs::write(
            &corpus,
            format!(
                "{{\"id\": \"small\", \"v\": {small}, \"text\": \"{text}\"}}\n\
                 {{\"id\": \"large\", \"v\": {large}, \"text\": \"{text}\"}}\n"
            ),
        )
        .expect("write");
        for (rule, kept) in [("max:v", "\"large\""), ("min:v", "\"small\"")] {
            let out = dir.join("kept.jsonl");
            let o = run(&["dedup", &p(&corpus), "--keep", rule, "-o", &p(&out)]);
            assert!(o.status.success(), "{}", stderr(&o));
            assert_eq!(ids_in(&out), [kept], "{rule} of {small} and {large}");
        }
    }
    // A Parquet timestamp column of nanoseconds, and one of integers past 2^53.
    let ids = StringArray::from(vec!["small", "large"]);
    let texts = StringArray::from(vec![text, text]);
    let at =
        TimestampNanosecondArray::from(vec![1_714_564_800_000_000_001, 1_714_564_800_000_000_002]);
    let n = Int64Array::from(vec![9_007_199_254_740_992, 9_007_199_254_740_993]);
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("text", Arc::new(texts) as ArrayRef),
        ("at", Arc::new(at) as ArrayRef),
        ("n", Arc::new(n) as ArrayRef),
    ])
    .expect("batch");
    let table = dir.join("t.parquet");
    write_parquet(&table, &batch);
    for rule in ["max:at", "max:n"] {
        let out = dir.join("kept.jsonl");
        let o = run(&["dedup", &p(&table), "--keep", rule, "-o", &p(&out)]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(ids_in(&out), ["\"large\""], "{rule}");
    }
}

#[test]
fn nan_in_a_float_keep_column_stopped_the_run() {
    let dir = tempdir("keep-nan");
    let ids = StringArray::from(vec!["a", "b", "c"]);
    let texts = StringArray::from(vec![NEAR[0], NEAR[1], NEAR[2]]);
    let score = Float64Array::from(vec![Some(f64::NAN), Some(0.5), None]);
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("text", Arc::new(texts) as ArrayRef),
        ("score", Arc::new(score) as ArrayRef),
    ])
    .expect("batch");
    let table = dir.join("t.parquet");
    write_parquet(&table, &batch);
    for extra in [None, Some("--skip-bad")] {
        let out = dir.join("kept.jsonl");
        let mut args = vec!["dedup", table.to_str().expect("path"), "--keep", "max:score"];
        args.extend(["-o", out.to_str().expect("path")]);
        args.extend(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        // NaN is no value: b (0.5) is kept over a; c is kept alone; nothing is skipped.
        assert_eq!(ids_in(&out), ["\"b\"", "\"c\""]);
        let said = stderr(&o);
        assert!(said.contains("2 documents without a value of the keep rule's field"), "{said}");
        assert!(!said.contains("skipped"), "{said}");
    }
}

#[test]
fn errors_about_a_value_pointed_at_its_key() {
    let dir = tempdir("value-columns");
    let corpus = dir.join("c.jsonl");
    // The text's value starts at column 26; its bad escape is at column 34.
    std::fs::write(&corpus, "{\"id\": 1,        \"text\": \"a\\ud800b\"}\n").expect("write");
    let o = run(&["dedup", &p(&corpus)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("c.jsonl:1: malformed JSON at column 34"), "{}", stderr(&o));
    std::fs::write(&corpus, "{\"id\": 1,        \"text\": 5}\n").expect("write");
    let o = run(&["dedup", &p(&corpus)]);
    assert!(stderr(&o).contains("found a number at column 26"), "{}", stderr(&o));
}

#[test]
fn decisions_with_a_byte_order_mark_were_refused_and_arrays_accepted() {
    let dir = tempdir("decisions");
    let corpus = dir.join("c.jsonl");
    let lines: Vec<String> = NEAR
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": i, "text": t}).to_string())
        .collect();
    std::fs::write(&corpus, lines.join("\n") + "\n").expect("write");
    let decisions = dir.join("d.jsonl");
    std::fs::write(&decisions, "\u{feff}{\"id\": 1, \"decision\": \"not_duplicate\"}\n")
        .expect("write");
    let out = dir.join("kept.jsonl");
    let o = run(&["dedup", &p(&corpus), "--decisions", &p(&decisions), "-o", &p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ids_in(&out), ["0", "1", "2"], "the marked document is kept");
    std::fs::write(&decisions, "[1, \"not_duplicate\"]\n").expect("write");
    let o = run(&["dedup", &p(&corpus), "--decisions", &p(&decisions), "-o", &p(&out)]);
    assert_eq!(o.status.code(), Some(1));
    let said = stderr(&o);
    assert!(
        said.contains("d.jsonl:1") && said.contains("expected a JSON object {\"id\": ID"),
        "{said}"
    );
    assert!(!said.contains("struct"), "{said}");
}

/// Runs the binary with `args`, killing it after `seconds` (a hang fails the test instead of
/// stalling the suite).
fn run_within(seconds: u64, args: &[&str]) -> std::process::Output {
    let child = super::bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if rx.recv_timeout(std::time::Duration::from_secs(seconds)).is_err() {
            // Only this test's own child, by its id.
            let _ = std::process::Command::new("kill").arg(id.to_string()).status();
        }
    });
    let o = child.wait_with_output().expect("wait");
    let _ = tx.send(());
    assert!(o.status.code().is_some(), "killed after {seconds} s: {args:?}");
    o
}

/// Makes a named pipe at `path` and writes `bytes` into it from a thread (the write waits for
/// a reader).
fn fifo_with(path: &Path, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let made = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success());
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = f.write_all(&bytes);
        }
    })
}

#[test]
fn a_named_pipe_input_hung_or_lost_its_first_bytes() {
    let dir = tempdir("fifo");
    let lines: Vec<String> = NEAR
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": i, "text": t}).to_string())
        .collect();
    let jsonl = lines.join("\n") + "\n";
    for extra in [&[][..], &["--skip-bad"][..]] {
        let pipe = dir.join("p");
        let _ = std::fs::remove_file(&pipe);
        let writer = fifo_with(&pipe, jsonl.clone().into_bytes());
        let (kept, clusters) = (dir.join("kept.jsonl"), dir.join("clusters.jsonl"));
        let mut args = vec!["dedup", pipe.to_str().expect("p"), "-o", kept.to_str().expect("p")];
        args.extend(["--clusters", clusters.to_str().expect("p")]);
        args.extend(extra);
        let o = run_within(60, &args);
        writer.join().expect("writer");
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("skipped"), "{}", stderr(&o));
        // Every line read, the first one whole; kept lines byte for byte.
        assert_eq!(
            std::fs::read_to_string(&kept).expect("kept"),
            [&*lines[0], &*lines[2]].join("\n") + "\n"
        );
        assert_eq!(std::fs::read_to_string(&clusters).expect("c").lines().count(), 1);
    }
    // A table through a pipe: its format from its first bytes, read once.
    let ids = StringArray::from(vec!["a", "b", "c"]);
    let texts = StringArray::from(NEAR.to_vec());
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("text", Arc::new(texts) as ArrayRef),
    ])
    .expect("batch");
    let table = dir.join("t.parquet");
    write_parquet(&table, &batch);
    let pipe = dir.join("table");
    let writer = fifo_with(&pipe, std::fs::read(&table).expect("read"));
    let o = run_within(60, &["dedup", pipe.to_str().expect("p"), "--clusters", "-"]);
    writer.join().expect("writer");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_lines(&o)[0]["cluster"], serde_json::json!(["a", "b"]));
    // fingerprint reads a pipe once too.
    let pipe = dir.join("fp");
    let writer = fifo_with(&pipe, jsonl.clone().into_bytes());
    let o = run_within(60, &["fingerprint", "--jsonl", pipe.to_str().expect("p")]);
    writer.join().expect("writer");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_lines(&o).len(), 3, "{}", stdout(&o));
    // overlap reads a pipe once too, as queries and as the collection, every line whole.
    let (queries, library) = (dir.join("q.jsonl"), dir.join("lib.jsonl"));
    let wq = fifo_with(&queries, lines[1..].join("\n").into_bytes());
    let wl = fifo_with(&library, (lines[0].clone() + "\n").into_bytes());
    let args = ["overlap", queries.to_str().expect("p"), "--against"];
    let o =
        run_within(60, &[&args[..], &[library.to_str().expect("p"), "--summary", "-"]].concat());
    wq.join().expect("writer");
    wl.join().expect("writer");
    assert!(o.status.success(), "{}", stderr(&o));
    let summaries = json_lines(&o);
    assert_eq!(summaries.len(), 2, "{}", stdout(&o));
    assert_eq!(summaries[0]["sources"][0]["id"], serde_json::json!(0), "{}", stdout(&o));
}

#[test]
fn an_endless_device_input_was_read_forever() {
    for (command, device) in [("dedup", "/dev/zero"), ("fingerprint", "/dev/urandom")] {
        let o = run_within(60, &[command, device]);
        assert_eq!(o.status.code(), Some(2), "{command} {device}: {}", stderr(&o));
        let said = stderr(&o);
        assert!(
            said.contains(device)
                && said.contains("a character device")
                && said.contains("- for standard input"),
            "{said}"
        );
    }
}

#[test]
fn a_text_file_with_a_byte_order_mark_had_its_offsets_counted_after_the_mark() {
    let dir = tempdir("bom-offsets");
    let library = dir.join("library.jsonl");
    std::fs::write(
        &library,
        "{\"id\": \"src\", \"text\": \"每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。\"}\n",
    )
    .expect("write");
    let thesis = dir.join("thesis.txt");
    let text = "\u{feff}我的论文开头。每个软件包都有维护人负责跟进上游的版本、修复缺陷回应用户的报告。结尾。";
    std::fs::write(&thesis, text).expect("write");
    let o = run(&["overlap", &p(&thesis), "--against", &p(&library), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let passage = &json_lines(&o)[0];
    let field = |k: &str| passage[k].as_u64().expect(k) as usize;
    // As Python reads the file (open(encoding="utf-8").read() keeps the mark) and its bytes.
    let chars: Vec<char> = text.chars().collect();
    let by_chars: String = chars[field("start")..field("end")].iter().collect();
    let bytes = std::fs::read(&thesis).expect("read");
    let by_bytes =
        std::str::from_utf8(&bytes[field("start_byte")..field("end_byte")]).expect("utf8");
    assert_eq!(by_chars, by_bytes);
    assert!(by_chars.starts_with("每个软件包") && by_chars.ends_with("报告。"), "{by_chars}");
}

#[test]
fn a_saved_index_in_the_input_directory_was_read_as_documents() {
    let dir = tempdir("index-in-input");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    for (name, text) in ["a.txt", "b.txt", "c.txt"].iter().zip(NEAR) {
        std::fs::write(data.join(name), text).expect("write");
    }
    let files: Vec<String> = ["a.txt", "b.txt"].iter().map(|n| p(&data.join(n))).collect();
    // A dedup index and a passage index saved into the corpus folder (named files as inputs).
    let o = run(&["dedup", &files[0], &files[1], "--save-index", &p(&data.join("idx"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "overlap",
        &files[0],
        "--against",
        &files[1],
        "--save-index",
        &p(&data.join("pidx")),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(data.join("idx/manifest.json").exists() && data.join("pidx/passages.ndpi").exists());
    let o = run(&["dedup", &p(&data), "--clusters", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stderr(&o);
    assert!(said.contains("3 documents"), "{said}");
    for index in ["idx", "pidx"] {
        let note = format!(
            "{}: holds a saved neardup index; its files are not read as documents",
            p(&data.join(index))
        );
        assert_eq!(said.matches(&note).count(), 1, "{said}");
    }
    assert!(!said.contains("skipped"), "{said}");
    // An index saved into (or inside) an input directory is refused, naming both.
    for target in [data.clone(), data.join("idx"), data.join("new/deeper")] {
        let o = run(&["dedup", &p(&data), "--save-index", &p(&target)]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let said = stderr(&o);
        assert!(
            said.contains(&format!("--save-index {}", p(&target)))
                && said.contains(&format!("the input directory {}", p(&data))),
            "{said}"
        );
    }
    assert!(!data.join("new").exists());
}

/// A committed fixture written by pyarrow (`tests/fixtures/columnar/make.py`).
fn fixture(name: &str) -> String {
    p(&super::repo().join("tests/fixtures/columnar").join(name))
}

#[test]
fn lz4_zstd_arrow_and_brotli_parquet_could_not_be_read() {
    for name in ["lz4.feather", "zstd.arrow", "zstd.arrows", "brotli.parquet"] {
        let o = run(&["dedup", &fixture(name), "--clusters", "-"]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(json_lines(&o)[0]["cluster"], serde_json::json!(["a", "b"]), "{name}");
    }
}

#[test]
fn invalid_utf8_in_a_table_ignored_lossy_and_skip_bad() {
    let dir = tempdir("table-utf8");
    for name in ["bad_utf8.parquet", "bad_utf8.arrow"] {
        let input = fixture(name);
        // One bad record, with its row, column and byte offset.
        let o = run(&["dedup", &input, "--clusters", "-"]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        let said = stderr(&o);
        assert!(
            said.contains(&format!(
                "{name} row 2: invalid UTF-8 in column \"text\" at byte offset 33"
            )) && said.contains("--lossy"),
            "{said}"
        );
        // Skipped: the row of the bad text and, since the rows are written, that of the bad
        // title, from every output.
        let kept = dir.join("kept.jsonl");
        let o = run(&["dedup", &input, "--skip-bad", "-o", &p(&kept)]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("row 3: invalid UTF-8 in column \"title\" at byte offset 7"),
            "{}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("skipped 2 bad records"), "{}", stderr(&o));
        assert_eq!(ids_in(&kept), ["\"a\""]);
        // Replaced and counted.
        let o = run(&["dedup", &input, "--lossy", "-o", &p(&kept)]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains("replaced 2 invalid UTF-8 sequences"), "{}", stderr(&o));
        let rows: Vec<Value> = std::fs::read_to_string(&kept)
            .expect("kept")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[1]["text"].as_str().map(|t| t.contains("mon\u{fffd}day")), Some(true));
        assert_eq!(rows[2]["title"], "school \u{fffd}");
    }
}

/// A batch of `id` (strings), `text` and, when given, an extra column.
fn table_of(ids: &[&str], texts: &[&str], extra: Option<(&str, ArrayRef)>) -> RecordBatch {
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(StringArray::from(ids.to_vec()))),
        ("text", Arc::new(StringArray::from(texts.to_vec()))),
    ];
    columns.extend(extra);
    RecordBatch::try_from_iter(columns).expect("batch")
}

#[test]
fn hive_partition_directories_were_dropped() {
    let dir = tempdir("hive");
    let data = dir.join("data");
    for (lang, part, id, text) in
        [("en", 0, "a", NEAR[0]), ("zh", 1, "b", NEAR[1]), ("en", 2, "c", NEAR[2])]
    {
        let folder = data.join(format!("lang={lang}"));
        std::fs::create_dir_all(&folder).expect("mkdir");
        write_parquet(
            &folder.join(format!("part-{part}.parquet")),
            &table_of(&[id], &[text], None),
        );
    }
    // The partition column is a column: named by the id field, written back to either output.
    let o = run(&["dedup", &p(&data), "--id-field", "lang", "--clusters", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_lines(&o)[0]["cluster"], serde_json::json!(["en", "zh"]));
    let kept = dir.join("kept.jsonl");
    let o = run(&["dedup", &p(&data), "-o", &p(&kept)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<Value> = std::fs::read_to_string(&kept)
        .expect("kept")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(rows[0]["lang"], "en");
    assert_eq!(rows[1]["id"], "c");
    let table = dir.join("kept.parquet");
    let o = run(&["dedup", &p(&data), "-o", &p(&table)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let file = std::fs::File::open(&table).expect("open");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet")
        .build()
        .expect("reader");
    let batch = reader.map(|b| b.expect("batch")).next().expect("a batch");
    let lang = batch.column_by_name("lang").expect("the partition column");
    let lang = lang.as_any().downcast_ref::<StringArray>().expect("strings");
    assert_eq!(lang.iter().collect::<Vec<_>>(), [Some("en"), Some("en")]);

    // JSON Lines in partition folders: the keep rule reads a directory's value, and the kept
    // line gets it appended.
    let crawl = dir.join("crawl");
    for (v, id) in [(1, "old"), (2, "new")] {
        let folder = crawl.join(format!("v={v}"));
        std::fs::create_dir_all(&folder).expect("mkdir");
        let line = serde_json::json!({"id": id, "text": NEAR[0]}).to_string();
        std::fs::write(folder.join("part-0.json"), line + "\n").expect("write");
    }
    let o = run(&["dedup", &p(&crawl), "--keep", "max:v", "-o", &p(&kept)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&kept).expect("kept"),
        format!("{{\"id\":\"new\",\"text\":\"{}\",\"v\":\"2\"}}\n", NEAR[0])
    );
}

#[test]
fn mismatched_part_types_were_said_by_name_only_after_clusters_streamed() {
    let dir = tempdir("part-types");
    let folder = dir.join("parts");
    std::fs::create_dir_all(&folder).expect("mkdir");
    let ints: ArrayRef = Arc::new(Int64Array::from(vec![1]));
    let strings: ArrayRef = Arc::new(StringArray::from(vec!["1"]));
    write_parquet(
        &folder.join("part-0.parquet"),
        &table_of(&["a"], &[NEAR[0]], Some(("score", ints))),
    );
    write_parquet(
        &folder.join("part-1.parquet"),
        &table_of(&["b"], &[NEAR[1]], Some(("score", strings))),
    );
    let kept = dir.join("kept.parquet");
    let o = run(&["dedup", &p(&folder), "--clusters", "-", "-o", &p(&kept)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "nothing streamed: {}", stdout(&o));
    let said = stderr(&o);
    assert!(
        said.contains(&format!(
            "column \"score\" is Int64 in {} and Utf8 in {}",
            p(&folder.join("part-0.parquet")),
            p(&folder.join("part-1.parquet"))
        )),
        "{said}"
    );
    assert!(!kept.exists());
    // JSON records after a table: refused as early.
    std::fs::remove_file(folder.join("part-1.parquet")).expect("rm");
    std::fs::write(folder.join("part-2.json"), "{\"id\": \"c\", \"text\": \"x\"}\n")
        .expect("write");
    let o = run(&["dedup", &p(&folder), "--clusters", "-", "-o", &p(&kept)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert!(stderr(&o).contains("holds JSON records and comes after the table"), "{}", stderr(&o));
}

/// The rows of a Parquet file.
fn read_table(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).expect("open");
    if path.extension().is_some_and(|e| e == "arrow") {
        return arrow_ipc::reader::FileReader::try_new(file, None)
            .expect("arrow file")
            .map(|b| b.expect("batch"))
            .collect();
    }
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet")
        .build()
        .expect("reader")
        .map(|b| b.expect("batch"))
        .collect()
}

/// The string values of a (possibly dotted: `meta.words`) column of `batches`.
fn strings_of(batches: &[RecordBatch], column: &str) -> Vec<String> {
    use arrow_array::cast::AsArray;
    let mut out = Vec::new();
    for b in batches {
        let mut c: ArrayRef =
            b.column_by_name(column.split('.').next().expect("a name")).expect("column").clone();
        for part in column.split('.').skip(1) {
            c = c.as_struct().column_by_name(part).expect("field").clone();
        }
        out.extend(c.as_string::<i32>().iter().map(|v| v.unwrap_or("<null>").to_string()));
    }
    out
}

#[test]
fn jsonl_to_parquet_rewrote_values_and_grew_a_column_per_map_key() {
    let dir = tempdir("jsonl-table");
    let corpus = dir.join("in.jsonl");
    let mut lines = Vec::new();
    let mut maps = Vec::new();
    for i in 0..3000usize {
        let id = match i {
            0 => "1.10".to_string(),
            1 => "123456789012345678901234567890".to_string(),
            _ => i.to_string(),
        };
        let mixed = if i % 2 == 0 { "7".to_string() } else { "\"x7\"".to_string() };
        let big = if i == 1 { "18446744073709551617".to_string() } else { i.to_string() };
        // Eight words of their own per record: 24,000 distinct keys in all.
        let words: Vec<String> = (0..8).map(|k| format!("\"w{}\":  {k}", i * 8 + k)).collect();
        let map = format!("{{{}}}", words.join(", "));
        maps.push(map.clone());
        lines.push(format!(
            "{{\"id\": {id}, \"text\": \"record {i} of the corpus with words {} and {}\", \"score\": 0.5, \"count\": {i}, \"big\": {big}, \"mixed\": {mixed}, \"meta\": {{\"wordcounts\": {map}}}}}",
            i * 7,
            i * 13
        ));
    }
    std::fs::write(&corpus, lines.join("\n") + "\n").expect("write");
    // Parquet and Arrow alike.
    for kept in [dir.join("kept.parquet"), dir.join("kept.arrow")] {
        let started = std::time::Instant::now();
        let o = run_within(300, &["dedup", &p(&corpus), "-o", &p(&kept)]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            started.elapsed().as_secs() < 120,
            "linear, not quadratic: {:?}",
            started.elapsed()
        );
        let said = stderr(&o);
        for field in [
            "\"id\": numbers written as text",
            "\"big\": numbers written as text",
            "\"mixed\": numbers and strings",
            "\"meta.wordcounts\": objects with more than 256",
        ] {
            assert!(said.contains(&format!("--output: field {field}")), "{field}: {said}");
        }
        let batches = read_table(&kept);
        let schema = batches[0].schema();
        let t = |name: &str| schema.field_with_name(name).expect(name).data_type().clone();
        use arrow_schema::DataType;
        assert_eq!(
            (t("id"), t("score"), t("count"), t("big"), t("mixed")),
            (DataType::Utf8, DataType::Float64, DataType::Int64, DataType::Utf8, DataType::Utf8)
        );
        let DataType::Struct(meta) = t("meta") else { panic!("meta: {}", t("meta")) };
        assert_eq!(meta.len(), 1, "the map is one column");
        assert_eq!(meta[0].data_type(), &DataType::Utf8);
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, 3000, "nothing dropped");
        let ids = strings_of(&batches, "id");
        assert_eq!(&ids[..3], ["1.10", "123456789012345678901234567890", "2"]);
        assert_eq!(&strings_of(&batches, "big")[..2], ["0", "18446744073709551617"]);
        assert_eq!(&strings_of(&batches, "mixed")[..2], ["7", "x7"]);
        assert_eq!(strings_of(&batches, "meta.wordcounts")[5], maps[5], "as written");
        // And back to JSON Lines: the numbers and maps as written.
        let back = dir.join("back.jsonl");
        let o = run(&["dedup", &p(&kept), "-o", &p(&back)]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = std::fs::read_to_string(&back).expect("back");
        let mut lines = text.lines();
        let first = lines.next().expect("a line");
        assert!(first.starts_with("{\"id\":1.10,"), "{first}");
        assert!(first.contains(&format!("\"wordcounts\":{}", maps[0])), "{first}");
        let second = lines.next().expect("a line");
        assert!(second.contains("\"big\":18446744073709551617,"), "{second}");
    }
}

#[test]
fn parquet_to_jsonl_dropped_nulls_and_nan_without_a_word() {
    let dir = tempdir("table-jsonl");
    let score: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN, 0.5, f64::INFINITY]));
    let note: ArrayRef = Arc::new(StringArray::from(vec![None, Some("x"), None]));
    let mut batch = table_of(&["a", "b", "c"], &NEAR, Some(("score", score)));
    let mut columns: Vec<(String, ArrayRef)> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .zip(batch.columns().iter().cloned())
        .collect();
    columns.push(("note".into(), note));
    batch = RecordBatch::try_from_iter(columns).expect("batch");
    let table = dir.join("t.parquet");
    write_parquet(&table, &batch);
    let (kept, dropped) = (dir.join("kept.jsonl"), dir.join("dropped.jsonl"));
    let o = run(&["dedup", &p(&table), "-o", &p(&kept), "--dropped", &p(&dropped)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let kept = std::fs::read_to_string(&kept).expect("kept");
    let lines: Vec<&str> = kept.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].ends_with("\"score\":null,\"note\":null}"), "{}", lines[0]);
    assert!(lines[1].ends_with("\"score\":null,\"note\":null}"), "{}", lines[1]);
    assert!(std::fs::read_to_string(&dropped)
        .expect("dropped")
        .contains("\"score\":0.5,\"note\":\"x\""));
    let said = stderr(&o);
    assert!(said.contains("--output: 2 values of column \"score\" (NaN or infinite) have no JSON form: written as null"), "{said}");
}
