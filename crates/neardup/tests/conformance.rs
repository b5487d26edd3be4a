//! The conformance table (`tests/conformance/table.json`) through the library, the oracle: every
//! surface (the CLI, Python, Spark, the service) runs the same rows and must give these answers.
//!
//! Dedup rows: a preset and search options by the table's names, run over the corpus; the
//! clusters and kept ids (as text: `"7"` and `7` are one id, and two records with it stay two
//! documents). Check rows: the corpus documents checked in a given order against a collection,
//! one at a time and as one group (as the service's group commit decides them).

use std::sync::Arc;

use neardup::{
    id_from_json, Check, Dedup, Document, Engine, NamedEngine, Pipeline, PipelineSpec, Scratch,
    SearchSpec, SearchUse,
};
use serde_json::Value;

fn table() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/conformance/table.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the table")).expect("JSON")
}

fn id_text(id: &Value) -> String {
    id_from_json(&id.to_string()).expect("an id").into_owned()
}

fn search(row: &Value, usage: SearchUse) -> SearchSpec {
    let mut spec = SearchSpec::default();
    for (name, value) in row["search"].as_object().expect("search") {
        spec.set(name, value, usage).expect("a valid option");
    }
    spec
}

/// The row's preset with its pipeline options (by the table's names) applied.
fn pipeline(row: &Value) -> Pipeline {
    let mut options = neardup::PipelineOptions::default();
    for (name, value) in row["pipeline"].as_object().into_iter().flatten() {
        options.set(name, value).expect("a pipeline option");
    }
    let preset = PipelineSpec::preset(row["preset"].as_str().expect("preset")).expect("preset");
    Pipeline::new(options.apply(preset).expect("options apply")).expect("pipeline")
}

fn text(doc: &Value) -> &str {
    doc["text"].as_str().expect("text")
}

#[test]
fn dedup_rows() {
    let table = table();
    let docs = table["corpus"].as_array().expect("corpus");
    let rows = table["dedup"].as_array().expect("rows");
    assert!(rows.len() >= 10);
    for row in rows {
        let name = row["name"].as_str().expect("name");
        let pipeline = pipeline(row);
        let config = search(row, SearchUse::Batch).resolve().expect("resolves");
        let mut dedup = Dedup::new(&pipeline, config).expect("config");
        let mut scratch = Scratch::default();
        for d in docs {
            let t = text(d);
            let sketch = dedup.sketch(Document::Text(t), t.len(), &mut scratch);
            dedup.push(sketch).expect("push");
        }
        let outcome = dedup.run().expect("run");
        let ids: Vec<String> = docs.iter().map(|d| id_text(&d["id"])).collect();
        let mut clusters: Vec<Vec<String>> = outcome
            .clusters
            .iter()
            .map(|c| {
                let mut m: Vec<String> =
                    c.members.iter().map(|&p| ids[p as usize].clone()).collect();
                m.sort();
                m
            })
            .collect();
        clusters.sort();
        let mut kept: Vec<String> =
            ids.iter().zip(&outcome.kept).filter(|(_, &k)| k).map(|(i, _)| i.clone()).collect();
        kept.sort();
        let expect: (Vec<Vec<String>>, Vec<String>) = (
            serde_json::from_value(row["expect"]["clusters"].clone()).expect("clusters"),
            serde_json::from_value(row["expect"]["kept"].clone()).expect("kept"),
        );
        assert_eq!((clusters, kept), expect, "row {name:?}");
    }
}

#[test]
fn check_rows_one_at_a_time_and_grouped() {
    let table = table();
    let docs = table["corpus"].as_array().expect("corpus");
    for row in table["checks"].as_array().expect("rows") {
        let name = row["name"].as_str().expect("name");
        let config = search(row, SearchUse::Collection).resolve().expect("resolves");
        let engine = Engine::new(Arc::new(pipeline(row)), config).expect("engine");
        let order: Vec<&Value> = row["sequence"]
            .as_array()
            .expect("sequence")
            .iter()
            .map(|i| &docs[i.as_u64().expect("index") as usize])
            .collect();
        let ids: Vec<String> = order.iter().map(|d| id_text(&d["id"])).collect();
        let sketches: Vec<_> = order
            .iter()
            .map(|d| engine.sketch(Document::Text(text(d)), text(d).len(), &mut Scratch::default()))
            .collect();
        let expect = row["expect"].as_array().expect("expect");
        let answer = |a: &neardup::CheckAnswer| {
            let matches: Vec<&str> = a.matches.iter().map(|(id, _)| id.as_str()).collect();
            serde_json::json!({"duplicate": a.duplicate, "matches": matches, "inserted": a.inserted})
        };

        // One at a time.
        let mut one = NamedEngine::new(engine.empty_like());
        for (i, (id, sketch)) in ids.iter().zip(&sketches).enumerate() {
            let check = Check { id, sketch, insert: true, threshold: None, top_k: 10 };
            let a = one.decide_checks(&[check]).remove(0);
            assert_eq!(answer(&a), expect[i], "row {name:?}, check {i}");
            if a.inserted {
                one.insert(id, sketch.clone());
            }
        }
        let stored: Vec<&str> = one.ids();
        assert_eq!(serde_json::json!(stored), row["ids"], "row {name:?}");

        // As one group: the same answers.
        let mut grouped = NamedEngine::new(engine.empty_like());
        let checks: Vec<Check<'_>> = ids
            .iter()
            .zip(&sketches)
            .map(|(id, sketch)| Check { id, sketch, insert: true, threshold: None, top_k: 10 })
            .collect();
        let answers = grouped.decide_checks(&checks);
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(answer(a), expect[i], "row {name:?}, grouped check {i}");
            if a.inserted {
                grouped.insert(&ids[i], sketches[i].clone());
            }
        }
        assert_eq!(grouped.ids(), one.ids(), "row {name:?}");
    }
}

/// The overlap rows: the library's passage check, the oracle of `neardup overlap`, Python's
/// `neardup.overlap` and the service's `POST .../overlap`. Ids are text (the one id rule); the
/// queries against the collection, or everything as one input in the table's order.
#[test]
fn overlap_rows() {
    use neardup::overlap::{Batch, OverlapOptions, PassageIndex};
    let table = table();
    let o = &table["overlap"];
    let docs = |key: &str| -> Vec<(String, String)> {
        o[key]
            .as_array()
            .expect("documents")
            .iter()
            .map(|d| (id_text(&d["id"]), text(d).to_string()))
            .collect()
    };
    let (collection, queries) = (docs("collection"), docs("queries"));
    let rows = o["rows"].as_array().expect("rows");
    assert!(rows.len() >= 5);
    for row in rows {
        let name = row["name"].as_str().expect("name");
        let options: OverlapOptions =
            serde_json::from_value(row["options"].clone()).expect("options by the table's names");
        let mut index = PassageIndex::new(options.to_spec().expect("valid")).expect("index");
        let (batch, mode) = match row["mode"].as_str().expect("mode") {
            "against" => {
                index
                    .add_documents(collection.clone(), neardup::overlap::OnExistingId::Refuse)
                    .expect("collection");
                (queries.clone(), Batch::Against)
            }
            _ => ([collection.clone(), queries.clone()].concat(), Batch::Within),
        };
        let exclude: Vec<String> =
            serde_json::from_value(row["exclude_source"].clone()).expect("ids");
        let exclude = index.numbers_of(&exclude).expect("held");
        let ids: Vec<String> = batch.iter().map(|(id, _)| id.clone()).collect();
        let batch_texts: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
        let found = index.check_batch(batch, mode, &exclude).expect("check");
        let texts: Vec<String> = batch_texts.clone();
        let mut passages = Vec::new();
        let mut copied = serde_json::Map::new();
        // Within one input: each document without the passages it repeats from earlier ones
        // (what `neardup overlap -o` writes, Python's `remove=True`, Spark's `--remove`).
        let mut kept = serde_json::Map::new();
        for (n, (id, answer)) in ids.iter().zip(&found).enumerate() {
            if mode == Batch::Within {
                kept.insert(id.clone(), answer.without_repeats(&texts[n], n as u32).0.into());
            }
            for p in answer.all_passages() {
                passages.push(serde_json::json!({
                    "query": id,
                    "start": p.start,
                    "end": p.end,
                    "source": index.id(p.source),
                    "source_start": p.source_start,
                    "source_end": p.source_end,
                    "exclusion": p.exclusion.map(|e| e.as_str()),
                }));
            }
            copied.insert(id.clone(), answer.copied_chars.into());
        }
        let mut got = serde_json::json!({"passages": passages, "copied_chars": copied});
        if mode == Batch::Within {
            got["without_repeats"] = kept.into();
        }
        if std::env::var_os("NEARDUP_PRINT_ROWS").is_some() {
            println!("{name}\t{got}");
        }
        assert_eq!(got, row["expect"], "row {name:?}");
    }
}

/// True when `message` names the option `name` (as the table spells it, or as its flag).
fn names(message: &str, name: &str) -> bool {
    let m = message.to_lowercase();
    m.contains(name) || m.contains(&name.replace('_', "-"))
}

/// The error rows: each value is refused by the library, naming its option.
#[test]
fn error_rows() {
    use neardup::overlap::OverlapOptions;
    let table = table();
    let rows = table["errors"]["rows"].as_array().expect("rows");
    assert!(rows.len() >= 8);
    for row in rows {
        let name = row["names"].as_str().expect("names");
        let options = row["options"].as_object().expect("options");
        let message = match row["group"].as_str().expect("group") {
            "search" => {
                // The whole job: the settings resolved, then checked against the pipeline.
                let mut job = neardup::JobSpec::preset("default").expect("preset");
                let set: Result<(), String> = options.iter().try_for_each(|(k, v)| {
                    job.search.set(k, v, SearchUse::Batch).map_err(|e| e.to_string())
                });
                set.and_then(|()| job.compile().map(drop).map_err(|e| e.to_string()))
            }
            "pipeline" => {
                let mut o = neardup::PipelineOptions::default();
                let set: Result<(), String> =
                    options.iter().try_for_each(|(k, v)| o.set(k, v).map_err(|e| e.to_string()));
                set.and_then(|()| o.to_spec("default").map(drop).map_err(|e| e.to_string()))
            }
            _ => OverlapOptions::from_json(&row["options"])
                .map_err(|e| e.to_string())
                .and_then(|o| o.to_spec().map(drop).map_err(|e| e.to_string())),
        }
        .expect_err(&format!("{row} is refused"));
        assert!(names(&message, name), "{row}: {message}");
    }
}
