//! Parquet and Arrow inputs and outputs, as a data engineer holds a corpus: the same clusters as
//! the JSONL of the same rows, columns by name and dotted into structs, a Spark output folder,
//! kept rows written back in the input's schema, and bad columns named.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{StringBuilder, TimestampMicrosecondBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use serde_json::Value;

use super::{run, stderr, stdout};
use crate::common::tempdir;

/// The corpus: some rows near-copies of others, each with a URL and a fetch time in a struct.
fn rows() -> Vec<(i64, String, String, i64)> {
    let base = [
        "the harbour authority said on monday that the new pier would open in spring after two years of building",
        "a quiet village in the hills has voted to keep its only school open despite falling numbers of pupils",
        "researchers found that the river had risen by almost a metre in a week after the heaviest rain on record",
        "港口管理局周一表示，新码头将在春季开放，此前已经建设了两年，费用争议也持续了很久",
    ];
    let mut out = Vec::new();
    for i in 0..40i64 {
        let b = base[(i % 4) as usize];
        // Rows 0-3 are the originals; later rows are copies with a changed tail, or unrelated.
        let text = if i < 4 || i % 3 == 0 {
            format!("{b} and the officials said more would follow")
        } else {
            format!("unrelated story number {i} about a topic of its own with words {}", i * 7)
        };
        let fetched = 1_700_000_000_000_000 + i * 3_600_000_000; // an hour apart, microseconds
        out.push((i, format!("https://example.org/{i}"), text, fetched));
    }
    out
}

/// The rows as a record batch: `id` (int64), `text`, `meta` {`url`, `fetched` (timestamp)}.
fn batch(rows: &[(i64, String, String, i64)]) -> RecordBatch {
    let mut url = StringBuilder::new();
    let mut fetched = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    for (_, u, _, f) in rows {
        url.append_value(u);
        fetched.append_value(*f);
    }
    let meta_fields = Fields::from(vec![
        Field::new("url", DataType::Utf8, true),
        Field::new("fetched", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
    ]);
    let meta = StructArray::new(
        meta_fields.clone(),
        vec![Arc::new(url.finish()) as ArrayRef, Arc::new(fetched.finish()) as ArrayRef],
        None,
    );
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
        Field::new("meta", DataType::Struct(meta_fields), true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2.as_str()))),
            Arc::new(meta),
        ],
    )
    .expect("a batch")
}

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let mut w = parquet::arrow::ArrowWriter::try_new(
        File::create(path).expect("create"),
        batch.schema(),
        None,
    )
    .expect("writer");
    w.write(batch).expect("write");
    w.close().expect("close");
}

fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let file = File::open(path).expect("open");
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a parquet file")
        .build()
        .expect("reader")
        .map(|b| b.expect("batch"))
        .collect()
}

fn ids_of(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("id").expect("id column");
            c.as_primitive::<arrow_array::types::Int64Type>().values().to_vec()
        })
        .collect()
}

fn clusters(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("clusters")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json")["cluster"].clone())
        .collect()
}

#[test]
fn parquet_in_and_out_keeps_its_schema_and_finds_what_jsonl_finds() {
    let dir = tempdir("parquet");
    let rows = rows();
    let input = dir.join("corpus.parquet");
    write_parquet(&input, &batch(&rows));
    let jsonl = dir.join("corpus.jsonl");
    let lines: Vec<String> = rows
        .iter()
        .map(|(id, url, text, _)| {
            serde_json::json!({"id": id, "text": text, "meta": {"url": url}}).to_string()
        })
        .collect();
    std::fs::write(&jsonl, lines.join("\n") + "\n").expect("write");
    let p = |x: &Path| x.display().to_string();

    // The same clusters from the Parquet file as from the JSONL of its rows.
    let (kept, dropped) = (dir.join("kept.parquet"), dir.join("dropped.jsonl"));
    let o = run(&[
        "dedup",
        &p(&input),
        "--threshold",
        "0.6",
        "--keep",
        "max:meta.fetched",
        "-o",
        &p(&kept),
        "--dropped",
        &p(&dropped),
        "--clusters",
        &p(&dir.join("a.jsonl")),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o =
        run(&["dedup", &p(&jsonl), "--threshold", "0.6", "--clusters", &p(&dir.join("b.jsonl"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    let found = clusters(&dir.join("a.jsonl"));
    assert_eq!(found, clusters(&dir.join("b.jsonl")));
    assert_eq!(found.len(), 4, "{found:?}");

    // The kept rows are a Parquet file in the input's schema; the newest fetch of each cluster
    // is kept (the last of each, as fetch times grow with the id).
    let out = read_parquet(&kept);
    assert_eq!(out[0].schema(), batch(&rows).schema());
    let kept_ids = ids_of(&out);
    for c in &found {
        let members: Vec<i64> =
            c.as_array().expect("array").iter().map(|v| v.as_i64().expect("int")).collect();
        let newest = *members.iter().max().expect("members");
        assert!(kept_ids.contains(&newest), "{newest} kept of {members:?}");
        assert!(members.iter().filter(|m| kept_ids.contains(m)).count() == 1);
    }
    // The dropped rows as JSON objects with every column (the struct as an object).
    let dropped: Vec<Value> = std::fs::read_to_string(&dropped)
        .expect("dropped")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(kept_ids.len() + dropped.len(), rows.len());
    assert!(dropped
        .iter()
        .all(|d| d["meta"]["url"].as_str().is_some_and(|u| u.starts_with("https://"))));

    // Ids by a dotted path into the struct column.
    let o = run(&[
        "dedup",
        &p(&input),
        "--threshold",
        "0.6",
        "--id-field",
        "meta.url",
        "--clusters",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("https://example.org/"), "{}", stdout(&o));

    // JSONL in, Parquet out: the columns the records imply.
    let from_jsonl = dir.join("from-jsonl.parquet");
    let o = run(&["dedup", &p(&jsonl), "--threshold", "0.6", "-o", &p(&from_jsonl)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = read_parquet(&from_jsonl);
    let names: Vec<String> = out[0].schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["id", "text", "meta"]);
    let first = dir.join("first.parquet");
    let o = run(&["dedup", &p(&input), "--threshold", "0.6", "-o", &p(&first)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ids_of(&out), ids_of(&read_parquet(&first)), "the first of each cluster");
    assert_ne!(ids_of(&out), kept_ids, "max:meta.fetched keeps others");

    // JSONL whose ids are numbers and strings: a string column in the table.
    let mixed = dir.join("mixed.jsonl");
    std::fs::write(
        &mixed,
        "{\"id\": 7, \"text\": \"one two three\"}\n{\"id\": \"x7\", \"text\": \"four five six\"}\n",
    )
    .expect("write");
    let mixed_out = dir.join("mixed.parquet");
    let o = run(&["dedup", &p(&mixed), "-o", &p(&mixed_out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_parquet(&mixed_out).iter().map(RecordBatch::num_rows).sum::<usize>(), 2);

    // Nothing dropped: the dropped rows are an empty table in the input's schema.
    let unique = dir.join("unique.parquet");
    write_parquet(&unique, &batch(&rows[4..6]));
    let none = dir.join("none.parquet");
    let o = run(&["dedup", &p(&unique), "--dropped", &p(&none)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let file = File::open(&none).expect("open");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet");
    assert_eq!(reader.schema().as_ref(), batch(&rows).schema().as_ref());
    assert_eq!(reader.metadata().file_metadata().num_rows(), 0);

    // Fingerprints of each row.
    let o = run(&["fingerprint", &p(&input)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), rows.len());
}

#[test]
fn a_spark_folder_of_parquet_parts_and_arrow_files() {
    let dir = tempdir("parquet-folder");
    let rows = rows();
    let folder = dir.join("spark-out");
    std::fs::create_dir_all(&folder).expect("mkdir");
    write_parquet(&folder.join("part-00000-abc.snappy.parquet"), &batch(&rows[..20]));
    write_parquet(&folder.join("part-00001-abc.snappy.parquet"), &batch(&rows[20..]));
    std::fs::write(folder.join("_SUCCESS"), b"").expect("write");
    std::fs::write(folder.join(".part-00000-abc.snappy.parquet.crc"), b"crc").expect("write");
    let p = |x: &Path| x.display().to_string();
    let all = dir.join("all.parquet");
    write_parquet(&all, &batch(&rows));
    let summary = |args: &[&str]| {
        let o = run(args);
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let folder_said = summary(&[
        "dedup",
        &p(&folder),
        "--threshold",
        "0.6",
        "--clusters",
        &p(&dir.join("f.jsonl")),
    ]);
    assert!(folder_said.contains("40 documents"), "{folder_said}");
    summary(&["dedup", &p(&all), "--threshold", "0.6", "--clusters", &p(&dir.join("w.jsonl"))]);
    assert_eq!(clusters(&dir.join("f.jsonl")), clusters(&dir.join("w.jsonl")));

    // Arrow IPC, by name and, with a name that says nothing, by its first bytes.
    let arrow = dir.join("corpus.arrow");
    let b = batch(&rows);
    let mut w =
        arrow_ipc::writer::FileWriter::try_new(File::create(&arrow).expect("create"), &b.schema())
            .expect("writer");
    w.write(&b).expect("write");
    w.finish().expect("finish");
    let unnamed = dir.join("corpus.bin");
    std::fs::copy(&arrow, &unnamed).expect("copy");
    for input in [&arrow, &unnamed] {
        summary(&[
            "dedup",
            &p(input),
            "--threshold",
            "0.6",
            "--clusters",
            &p(&dir.join("a.jsonl")),
        ]);
        assert_eq!(clusters(&dir.join("a.jsonl")), clusters(&dir.join("w.jsonl")));
    }
    let arrow_out = dir.join("kept.arrow");
    summary(&["dedup", &p(&all), "--threshold", "0.6", "-o", &p(&arrow_out)]);
    let reader =
        arrow_ipc::reader::FileReader::try_new(File::open(&arrow_out).expect("open"), None)
            .expect("arrow");
    assert_eq!(reader.schema(), b.schema());
}

#[test]
fn bad_columns_are_named() {
    let dir = tempdir("parquet-bad");
    let rows = rows();
    let input = dir.join("corpus.parquet");
    let mut b = batch(&rows);
    // A null text in row 3.
    let text: StringArray =
        rows.iter().enumerate().map(|(i, r)| (i != 2).then_some(r.2.as_str())).collect();
    b = RecordBatch::try_new(
        b.schema(),
        vec![b.column(0).clone(), Arc::new(text), b.column(2).clone()],
    )
    .expect("batch");
    write_parquet(&input, &b);
    let p = input.display().to_string();
    let kept = dir.join("kept.parquet");
    let k = kept.display().to_string();

    let o = run(&["dedup", &p, "--text-field", "body", "-o", &k]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no column \"body\"") && stderr(&o).contains("id, text, meta"),
        "{}",
        stderr(&o)
    );
    assert!(!kept.exists(), "nothing written");
    let o = run(&["dedup", &p, "-o", &k]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("corpus.parquet row 3") && stderr(&o).contains("is null"),
        "{}",
        stderr(&o)
    );
    let o = run(&["dedup", &p, "-o", &k, "--skip-bad"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids = ids_of(&read_parquet(&kept));
    assert!(!ids.contains(&2), "the bad row is neither kept nor dropped");
    let o = run(&["dedup", &p, "--keep", "max:meta.nosuch", "--skip-bad", "-o", &k]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("meta.nosuch"), "{}", stderr(&o));
    let o = run(&["dedup", &p, "--text-field", "id", "-o", &k]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("holds Int64, not strings"), "{}", stderr(&o));
    // A file that says it is Parquet and is not.
    let fake = dir.join("fake.parquet");
    std::fs::write(&fake, "{\"text\": \"hello\"}\n").expect("write");
    let o = run(&["dedup", &fake.display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a readable Parquet file"), "{}", stderr(&o));
}
