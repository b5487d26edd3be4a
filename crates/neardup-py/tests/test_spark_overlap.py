"""`python -m neardup.spark overlap` in local mode (local[2]): the passages `neardup overlap`
writes, byte for byte, against a collection and within one input (with --remove as -o), from
JSON Lines and Parquet; the conformance table's overlap rows; mistakes refused by name."""

from __future__ import annotations

import json
import os
import pathlib
import re
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# Pinned in tests/requirements.txt: a missing pyspark fails the suite, never skips it.
import pyspark  # noqa: E402, F401

from pyhelpers import ROOT, run_cli, unpacked  # noqa: E402

os.environ["PYSPARK_PYTHON"] = sys.executable

TABLE = json.loads((ROOT / "tests" / "conformance" / "table.json").read_text(encoding="utf-8"))


def spark_run(tmp_path: pathlib.Path, inputs: list, *options: str) -> tuple[int, pathlib.Path]:
    """Runs `overlap INPUTS OUTPUT OPTIONS` in this process (the module's session); returns its
    exit code and output directory."""
    from neardup.spark.__main__ import main

    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    return main(["overlap", *map(str, inputs), str(out), *options]), out


def part_lines(folder: pathlib.Path) -> list[str]:
    return [line for p in sorted(folder.glob("part-*")) for line in p.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("name", ["sample-zh", "sample-en"])
def test_the_sample_sets_give_the_cli_passages_against_a_collection(spark, binary, tmp_path, name):
    queries = unpacked(name, "queries", tmp_path)
    collection = unpacked(name, "collection", tmp_path)
    passages, summary = tmp_path / "p.jsonl", tmp_path / "s.jsonl"
    r = run_cli(binary, "overlap", str(queries), "--against", str(collection),
                "--passages", str(passages), "--summary", str(summary), "-q")
    assert r.returncode == 0, r.stderr.decode()
    code, out = spark_run(tmp_path, [queries], "--against", str(collection))
    assert code == 0
    want = passages.read_text(encoding="utf-8").splitlines()
    assert len(want) > 100
    assert part_lines(out / "passages") == want, "every passage record, byte for byte, in order"
    assert part_lines(out / "summary") == summary.read_text(encoding="utf-8").splitlines()


def test_within_one_input_and_remove_give_the_cli_passages_and_records(
        spark, binary, tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    docs = unpacked("sample-zh", "collection", tmp_path, 300).read_text(encoding="utf-8")
    docs += unpacked("sample-zh", "queries", tmp_path, 40).read_text(encoding="utf-8")
    corpus.write_text(docs, encoding="utf-8")
    passages, kept = tmp_path / "p.jsonl", tmp_path / "kept.jsonl"
    r = run_cli(binary, "overlap", str(corpus), "--passages", str(passages), "-o", str(kept),
                "--min-units", "10")
    assert r.returncode == 0, r.stderr.decode()
    said = re.search(r"-o: ([\d,]+) of [\d,]+ characters removed", r.stderr.decode())
    assert said, r.stderr.decode()
    removed = int(said.group(1).replace(",", ""))
    capsys.readouterr()
    code, out = spark_run(tmp_path, [corpus], "--remove", "--min-units", "10")
    assert code == 0
    want = passages.read_text(encoding="utf-8").splitlines()
    assert len(want) > 20
    assert part_lines(out / "passages") == want
    records = part_lines(out / "records")
    assert records == kept.read_text(encoding="utf-8").splitlines()
    said = "".join(capsys.readouterr())
    assert f"{removed} characters removed; 0 records dropped" in said
    assert "4 shuffle partitions (as configured)" in said, said  # the fixture sets 4
    # --min-chars drops the records left short, as -o does, and says how many.
    r = run_cli(binary, "overlap", str(corpus), "--passages", str(passages), "-o", str(kept),
                "--min-units", "10", "--min-chars", "40")
    assert r.returncode == 0, r.stderr.decode()
    said = re.search(r"-o: ([\d,]+) records? left shorter than --min-chars 40 dropped",
                     r.stderr.decode())
    assert said, r.stderr.decode()
    dropped = int(said.group(1).replace(",", ""))
    code, out = spark_run(tmp_path, [corpus], "--remove", "--min-units", "10", "--min-chars", "40")
    assert code == 0
    shorter = part_lines(out / "records")
    assert shorter == kept.read_text(encoding="utf-8").splitlines()
    assert 0 < dropped == len(records) - len(shorter) < len(records)
    assert f"{removed} characters removed; {dropped} records dropped" in "".join(capsys.readouterr())


def test_parquet_in_and_out(spark, binary, tmp_path):
    queries = unpacked("sample-en", "queries", tmp_path, 30)
    collection = unpacked("sample-en", "collection", tmp_path)
    table = pa.Table.from_pylist([json.loads(line) for line in collection.read_text().splitlines()])
    pq.write_table(table, tmp_path / "collection.parquet")
    passages = tmp_path / "p.jsonl"
    r = run_cli(binary, "overlap", str(queries), "--against", str(collection),
                "--passages", str(passages), "-q")
    assert r.returncode == 0, r.stderr.decode()
    code, out = spark_run(tmp_path, [queries], "--against", str(tmp_path / "collection.parquet"),
                          "--output-format", "parquet")
    assert code == 0
    got = pq.read_table(out / "passages").to_pylist()
    want = [json.loads(line) for line in passages.read_text().splitlines()]
    assert len(want) > 5
    # Ids as their JSON text; every other value as the CLI wrote it.
    assert got == [dict(w, query=str(w["query"]), source=str(w["source"]),
                        also=[str(a) for a in w["also"]]) for w in want]


@pytest.mark.parametrize("row", TABLE["overlap"]["rows"], ids=lambda r: r["name"])
def test_the_conformance_rows_on_spark(spark, tmp_path, row):
    """The conformance table's overlap rows through the command: each passage by query, ranges
    in code points, source and exclusion (ids as text), and each query's copied characters."""
    t = TABLE["overlap"]

    def jsonl(name: str, docs: list) -> str:
        path = tmp_path / name
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
        return str(path)

    options = []
    for name, value in row["options"].items():
        flag = "--" + name.replace("_", "-")
        options += [flag] if value is True else [] if value is False else [flag, str(value)]
    for given in row["exclude_source"]:
        options += ["--exclude-source", json.dumps(given)]
    if row["mode"] == "against":
        inputs = [jsonl("q.jsonl", t["queries"])]
        options += ["--against", jsonl("c.jsonl", t["collection"])]
    else:
        inputs = [jsonl("all.jsonl", t["collection"] + t["queries"])]
        options.append("--remove")
    code, out = spark_run(tmp_path, inputs, *options)
    assert code == 0
    keys = ("query", "start", "end", "source", "source_start", "source_end", "exclusion")
    got = [json.loads(line) for line in part_lines(out / "passages")]
    as_text = lambda v: v if v is None or isinstance(v, str) else str(v)  # noqa: E731
    assert [{k: as_text(p[k]) if k in ("query", "source") else p[k] for k in keys} for p in got] == \
        row["expect"]["passages"]
    copied = {str(s["query"]): s["copied_chars"] for s in map(json.loads, part_lines(out / "summary"))}
    assert copied == row["expect"]["copied_chars"]
    if row["mode"] == "within":
        # Each record without its repeats, as `neardup overlap -o` writes it.
        records = [json.loads(line) for line in part_lines(out / "records")]
        assert {str(r["id"]): r["text"] for r in records} == row["expect"]["without_repeats"]


def test_mistakes_are_refused_by_name(spark, tmp_path, capsys):
    docs = tmp_path / "d.jsonl"
    docs.write_text('{"id": 1, "text": "a b c d e f g h i j k l m n o p"}\n'
                    '{"id": "1", "text": "q r s t u v w x y z"}\n')
    assert spark_run(tmp_path, [docs])[0] == 1
    assert 'id 1 is given to 2 documents' in capsys.readouterr().err
    assert spark_run(tmp_path, [docs], "--against", str(docs), "--remove")[0] == 2
    assert "give it without --against" in capsys.readouterr().err
    assert spark_run(tmp_path, [tmp_path / "none.jsonl"])[0] == 1
    assert "none.jsonl: no such file or directory" in capsys.readouterr().err
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"id": 1, "text": "a b c d e f g h i j k l m n o p"}\n')
    assert spark_run(tmp_path, [ok], "--against", str(ok), "--exclude-source", "nope")[0] == 1
    assert "--exclude-source nope: no document" in capsys.readouterr().err
    # --remove rewrites a text field: a record given as tokens has none, refused before the run.
    tokens = tmp_path / "tokens.jsonl"
    tokens.write_text('{"id": "t", "tokens": ["a", "b", "c"]}\n')
    code, out = spark_run(tmp_path, [tokens], "--remove")
    assert code == 1 and not out.exists()
    assert 'document "t" has tokens' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        spark_run(tmp_path, [ok], "--min-units", "many")
    assert spark_run(tmp_path, [ok], "--min-units", "0")[0] == 2
    assert "min_units" in capsys.readouterr().err


def test_bad_lines_are_named_or_skipped_and_a_record_without_id_is_named_by_its_position(
        spark, tmp_path, capsys):
    text = b"the quick brown fox jumps over the lazy dog and runs far into the quiet green woods"
    bad_utf8 = b'{"id": "c", "text": "caf\xe9 ' + text + b'"}'
    docs = tmp_path / "bad.jsonl"
    docs.write_bytes(b"\n".join([
        b'{"id": "a", "text": "' + text + b'"}',
        b"   ",  # blank: not a record, but a position
        b'{"text": "' + text + b'"}',  # no id: named by its position, 2
        bad_utf8,
        b'{"id": "d", "text": 5}',
    ]) + b"\n")
    code, out = spark_run(tmp_path, [docs])
    assert code == 1 and not out.exists()
    err = capsys.readouterr().err
    assert f"invalid UTF-8 at byte offset {bad_utf8.index(bytes([0xe9]))} of the line" in err
    assert "position 3" in err and "--skip-bad" in err
    code, out = spark_run(tmp_path, [docs], "--skip-bad", "--remove")
    assert code == 0
    assert "2 bad lines skipped" in capsys.readouterr().err
    passages = [json.loads(line) for line in part_lines(out / "passages")]
    # Within one input each of the two holds the passage the other repeats.
    assert [(p["query"], p["source"]) for p in passages] == [("a", 2), (2, "a")]
    records = [json.loads(line) for line in part_lines(out / "records")]
    # Every record read is written, the one without an id with its repeat removed.
    assert [r.get("id") for r in records] == ["a", None]
    assert records[0]["text"] == text.decode() and records[1]["text"] == ""


def test_arrow_batches_are_bounded_unless_the_user_set_them(spark):
    # A row of the check is a text or a part of a group's postings: Spark's 10,000 rows per
    # Arrow batch made batches of gigabytes within a corpus of near-copies.
    from neardup.spark import _overlap

    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    spark.conf.unset(key)
    try:
        _overlap._bound_arrow_batches(spark)
        assert spark.conf.get(key) == str(_overlap._ARROW_ROWS)
        spark.conf.set(key, "500")
        _overlap._bound_arrow_batches(spark)
        assert spark.conf.get(key) == "500"
    finally:
        spark.conf.unset(key)
