//! The two-pass dedup driver as a Rust caller uses it: no CLI involved.

use neardup::{Dedup, Pipeline, PipelineSpec, SearchConfig};
use neardup_corpus::dedup::{copy_records, sketch_sources, Ids, Silent};
use neardup_corpus::read::{expand_inputs, Format, ReadOptions, Source};
use neardup_corpus::CorpusError;

const TEXT: &str =
    "the quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun \
                    and the birds sing in the tall green trees by the quiet river bank";

fn corpus() -> String {
    [
        format!("{{\"id\": 1, \"text\": \"{TEXT}\"}}\n"),
        "{\"id\": \"two\", \"text\": \"something else entirely, about databases and indexes\"}\n"
            .to_string(),
        // The same text with an extra field and spacing: a copy, kept byte for byte if kept.
        format!("{{\"text\": \"{TEXT}\",   \"id\": 3, \"lang\": \"en\"}}\n"),
        "\n".to_string(),
        "{\"id\": 4, \"text\": \"a fourth document that has nothing in common\"}".to_string(),
    ]
    .concat()
}

fn dedup_file(path: &std::path::Path) -> Result<(Vec<String>, Vec<String>), CorpusError> {
    let pipeline = Pipeline::new(PipelineSpec::preset("default").expect("preset")).expect("builds");
    let mut dedup = Dedup::new(&pipeline, SearchConfig::default()).expect("config");
    let opts = ReadOptions { format: Some(Format::Jsonl), ..ReadOptions::default() };
    let sources = expand_inputs(&[path.to_path_buf()], &opts, |_| {})?;
    let mut ids = Ids::default();
    let read = sketch_sources(&mut dedup, &sources, &opts, &mut ids, &mut Silent)?;
    assert_eq!(read.places.len(), 4, "the blank line is not a record");
    let outcome = dedup.run().map_err(CorpusError::Dedup)?;
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    let mut sink = |keep: bool, record: &[u8]| {
        let line = String::from_utf8(record.to_vec()).expect("utf-8");
        if keep {
            kept.push(line);
        } else {
            dropped.push(line);
        }
        Ok::<(), CorpusError>(())
    };
    copy_records(&sources, &opts, &read.digests, &read.places, &outcome.kept, &mut sink)?;
    assert_eq!(ids.len(), 4);
    Ok((kept, dropped))
}

#[test]
fn kept_and_dropped_records_come_back_byte_for_byte_in_input_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("corpus.jsonl");
    std::fs::write(&path, corpus()).expect("write");
    let (kept, dropped) = dedup_file(&path).expect("dedup");
    let text = corpus();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        kept,
        vec![format!("{}\n", lines[0]), format!("{}\n", lines[1]), lines[4].to_string()]
    );
    assert_eq!(dropped, vec![format!("{}\n", lines[2])]);
}

#[test]
fn an_input_that_changes_between_the_passes_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("corpus.jsonl");
    std::fs::write(&path, corpus()).expect("write");
    // The sink is never reached for a changed source: the digest is checked at its end, and
    // the caller commits nothing.
    let pipeline = Pipeline::new(PipelineSpec::preset("default").expect("preset")).expect("builds");
    let mut dedup = Dedup::new(&pipeline, SearchConfig::default()).expect("config");
    let sources = vec![Source::File(path.clone())];
    let opts = ReadOptions { format: Some(Format::Jsonl), ..ReadOptions::default() };
    let mut ids = Ids::default();
    let read = sketch_sources(&mut dedup, &sources, &opts, &mut ids, &mut Silent).expect("reads");
    let outcome = dedup.run().expect("runs");
    std::fs::write(&path, corpus().replace("quick", "quack")).expect("rewrite");
    let mut sink = |_: bool, _: &[u8]| Ok::<(), CorpusError>(());
    let err = copy_records(&sources, &opts, &read.digests, &read.places, &outcome.kept, &mut sink)
        .expect_err("changed input");
    assert!(matches!(err, CorpusError::Runtime(_)), "{err:?}");
    assert!(
        err.to_string().contains("corpus.jsonl: the input changed between the two passes"),
        "{err}"
    );
}

#[test]
fn bad_records_stop_the_first_pass_with_their_place_or_are_skipped_and_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.jsonl");
    std::fs::write(
        &path,
        "{\"id\": 1, \"text\": \"fine\"}\n{\"id\": 2, \"txt\": \"no text\"}\n{oops\n",
    )
    .expect("write");
    let pipeline = Pipeline::new(PipelineSpec::preset("default").expect("preset")).expect("builds");
    let sources = vec![Source::File(path.clone())];
    let mut dedup = Dedup::new(&pipeline, SearchConfig::default()).expect("config");
    let opts = ReadOptions { format: Some(Format::Jsonl), ..ReadOptions::default() };
    let err = sketch_sources(&mut dedup, &sources, &opts, &mut Ids::default(), &mut Silent)
        .expect_err("bad record");
    match err {
        CorpusError::Input(e) => {
            assert_eq!(e.place, format!("{}:2", path.display()));
            assert!(e.message.contains("no \"text\" field"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }

    let mut dedup = Dedup::new(&pipeline, SearchConfig::default()).expect("config");
    let opts =
        ReadOptions { format: Some(Format::Jsonl), skip_bad: true, ..ReadOptions::default() };
    let mut ids = Ids::default();
    let read = sketch_sources(&mut dedup, &sources, &opts, &mut ids, &mut Silent).expect("skips");
    assert_eq!((read.skipped, ids.len()), (2, 1));
    assert_eq!(ids.get(0), "1");
}

#[test]
fn a_missing_path_is_the_callers_mistake() {
    let err = expand_inputs(&["/no/such/corpus.jsonl".into()], &ReadOptions::default(), |_| {})
        .expect_err("missing");
    assert!(matches!(err, CorpusError::Usage(_)), "{err:?}");
    assert!(err.to_string().starts_with("/no/such/corpus.jsonl: "), "{err}");
}
