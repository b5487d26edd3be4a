"""`neardup.overlap` and `Index(..., passages=True).overlap`: the passage check from Python gives
what `neardup overlap` gives on the same input (the labelled sample sets, both modes), an index
grown in Python is read by the command line and back, and bad input is refused by name."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pytest

import neardup
from pyhelpers import ROOT, run_cli

SETS = ROOT / "tests" / "fixtures" / "passages"

SOURCE = (
    "开源软件的发展离不开社区的贡献。Debian 项目由来自世界各地的志愿者维护，"
    "他们打包、测试并发布数以万计的软件包。每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。"
)
QUERY = "我们认为，Debian 项目由来自世界各地的志愿者维护，他们打包、测试并发布数以万计的软件包。这是结论。"
COPIED = "Debian 项目由来自世界各地的志愿者维护，他们打包、测试并发布数以万计的软件包。"


def read_set(name: str, part: str) -> dict:
    """A sample set's documents as {id: text}, read from its zstd JSONL (pyarrow's codec)."""
    with pa.input_stream(str(SETS / name / f"{part}.jsonl.zst"), compression="zstd") as f:
        lines = f.read().decode("utf-8").splitlines()
    return {r["id"]: r["text"] for r in map(json.loads, lines) if r}


def sources(found: dict) -> set:
    return {s["id"] for s in found["sources"]}


def cli_lines(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def as_cli_passages(found: list[dict]) -> list[dict]:
    """Python's answers as `--passages` writes them: the same records, counted and quoted
    passages in query order (no key added or left out: one record, issue 34)."""
    return [
        p for q in found for p in sorted(q["passages"] + q["excluded"], key=lambda p: (p["start"], p["end"]))
    ]


@pytest.mark.parametrize("name", ["sample-zh", "sample-en"])
def test_python_finds_what_the_cli_finds_on_the_sample_sets(binary, tmp_path, name):
    queries, collection = read_set(name, "queries"), read_set(name, "collection")
    found = neardup.overlap(queries, collection)

    passages, summary = tmp_path / "p.jsonl", tmp_path / "s.jsonl"
    r = run_cli(
        binary,
        "overlap",
        str(SETS / name / "queries.jsonl.zst"),
        "--against",
        str(SETS / name / "collection.jsonl.zst"),
        "--passages",
        str(passages),
        "--summary",
        str(summary),
        "-q",
    )
    assert r.returncode == 0, r.stderr.decode()
    assert as_cli_passages(found) == cli_lines(passages)
    # The summary record is the CLI's, key for key; `passages` and `excluded` come besides.
    assert [{k: v for k, v in q.items() if k not in ("passages", "excluded")} for q in found] == (
        cli_lines(summary)
    )
    assert sum(len(q["passages"]) for q in found) > 100

    # The same as two Arrow tables, with the files' columns.
    table, sums = neardup.overlap(queries, collection, as_table=True)
    assert table.to_pylist() == cli_lines(passages)
    assert sums.to_pylist() == cli_lines(summary)


def test_within_a_batch_python_finds_what_the_cli_finds(binary, tmp_path):
    docs = dict(list(read_set("sample-zh", "collection").items())[:400])
    docs.update(read_set("sample-zh", "queries"))
    src = tmp_path / "docs.jsonl"
    src.write_text(
        "".join(json.dumps({"id": k, "text": v}, ensure_ascii=False) + "\n" for k, v in docs.items()),
        encoding="utf-8",
    )
    out, kept = tmp_path / "p.jsonl", tmp_path / "kept.jsonl"
    r = run_cli(binary, "overlap", str(src), "--passages", str(out), "-o", str(kept), "-q")
    assert r.returncode == 0, r.stderr.decode()
    found = neardup.overlap(docs, remove=True)
    assert as_cli_passages(found) == cli_lines(out)
    assert any(p["also"] for q in found for p in q["passages"]) or len(cli_lines(out)) > 50
    # Substring dedup: each text without what it repeats, as `-o` writes the records.
    records = [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]
    assert [(r["id"], r["text"]) for r in records] == [(q["query"], q["without_repeats"]) for q in found]
    assert sum(q["removed_chars"] for q in found) > 0
    with pytest.raises(neardup.InputError, match="without against"):
        neardup.overlap(docs, docs, remove=True)


def test_one_text_returns_its_passages_with_offsets_into_both_texts():
    found = neardup.overlap(QUERY, {"src": SOURCE})
    assert "query" not in found
    (p,) = found["passages"]
    assert QUERY[p["start"]:p["end"]] == COPIED
    assert SOURCE[p["source_start"]:p["source_end"]] == COPIED
    assert QUERY.encode()[p["start_byte"]:p["end_byte"]].decode() == COPIED
    assert found["copied_chars"] == len(COPIED)
    assert found["copied"] == round(len(COPIED) / len(QUERY), 4)
    assert found["sources"] == [
        {"id": "src", "chars": len(COPIED), "copied": found["copied"], "quoted_chars": 0}
    ]

    # Positions are the ids of a list; the author's own work is never a source.
    assert neardup.overlap(QUERY, [SOURCE])["sources"][0]["id"] == 0
    assert neardup.overlap(QUERY, [SOURCE], exclude_source=[0])["passages"] == []
    # Quotations are set apart unless kept.
    quoted = f"他写道：“{COPIED}”这是引文。"
    left_out = neardup.overlap(quoted, [SOURCE])
    assert left_out["copied_chars"] == 0 and left_out["excluded"][0]["exclusion"] == "quote"
    assert neardup.overlap(quoted, [SOURCE], keep_quotes=True)["copied_chars"] >= len(COPIED)


def test_a_copy_converted_to_traditional_script_is_credited_to_its_source():
    source = "开源软件的发展离不开社区的贡献。他们打包、测试并发布数以万计的软件包。每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。"
    copied = "他們打包、測試並發佈數以萬計的軟件包。每個軟件包都有維護者負責跟進上游版本、修復缺陷並回應用戶的報告。"
    query = f"本文先说自己的想法，再讨论问题。{copied}以上是我的总结。"
    folded = neardup.overlap(query, {"src": source})
    assert folded["copied_chars"] >= 0.9 * len(copied), folded
    assert neardup.overlap(query, {"src": source}, zh_script="keep")["copied_chars"] < 0.9 * len(copied)
    with pytest.raises(neardup.OptionError, match="zh_script"):
        neardup.overlap(query, {"src": source}, zh_script="klingon")
    index = neardup.Index(passages={"zh_script": "simplified"})
    index.insert("src", source)
    assert index.overlap(query)["copied_chars"] >= 0.9 * len(copied)


def test_a_saved_index_is_reused_and_grows(tmp_path):
    saved = tmp_path / "lib"
    neardup.overlap({"thesis-1": QUERY}, {"src": SOURCE}, save_index=saved, add=True)
    # The saved index holds the collection and the query checked against it (add=True).
    [again] = neardup.overlap({"thesis-2": QUERY + "另一段。"}, saved)
    assert again["query"] == "thesis-2"
    assert sources(again) == {"thesis-1"} and again["copied_chars"] == len(QUERY)
    assert "src" in again["passages"][0]["also"]
    with pytest.raises(ValueError, match="seed_units 3"):
        neardup.overlap(QUERY, saved, seed_units=5, min_units=20)


def test_an_index_with_passages_answers_as_the_batch_check(binary, tmp_path):
    docs = dict(list(read_set("sample-en", "collection").items())[:2000])
    queries = dict(list(read_set("sample-en", "queries").items())[:40])
    index = neardup.Index(passages=True)
    assert index.passages and not neardup.Index().passages
    ids = list(docs)
    index.insert_many(ids[:1000], [docs[i] for i in ids[:1000]])
    for i in ids[1000:]:
        index.insert(i, docs[i])
    batch = neardup.overlap(queries, docs)
    for q in batch:
        one = index.overlap(queries[q["query"]])
        # The same records; a query given without an id has none.
        assert one["passages"] == [dict(p, query=None) for p in q["passages"]], q["query"]
        assert one["sources"] == q["sources"]

    # Removing a source takes its passages away; a check stores its text too.
    top = next(q for q in batch if q["sources"])
    gone = top["sources"][0]["id"]
    assert index.remove(gone)
    assert gone not in sources(index.overlap(queries[top["query"]]))
    index.check("again", docs[gone])
    assert "again" in sources(index.overlap(queries[top["query"]]))
    # The query's own id and excluded sources are never sources.
    assert ids[0] in sources(index.overlap(docs[ids[0]]))
    assert ids[0] not in sources(index.overlap(docs[ids[0]], id=ids[0]))
    assert ids[0] not in sources(index.overlap(docs[ids[0]], exclude_source=[ids[0]]))

    # Saved, it is read by `neardup overlap --against` and by Index.load, with the same answer.
    saved = tmp_path / "ix"
    index.save(saved)
    qfile = tmp_path / "q.jsonl"
    qid, qtext = top["query"], queries[top["query"]]
    qfile.write_text(json.dumps({"id": qid, "text": qtext}) + "\n", encoding="utf-8")
    out = tmp_path / "p.jsonl"
    r = run_cli(binary, "overlap", str(qfile), "--against", str(saved), "--passages", str(out))
    assert r.returncode == 0, r.stderr.decode()
    expected = index.overlap(qtext)
    assert [(p["start"], p["end"], p["source"]) for p in cli_lines(out)] == [
        (p["start"], p["end"], p["source"]) for p in expected["passages"]
    ]
    loaded = neardup.Index.load(saved)
    assert loaded.passages and len(loaded) == len(index)
    assert loaded.overlap(qtext) == expected


def test_a_saved_index_read_in_place_answers_as_its_collection(tmp_path):
    """Checked against a saved index alone, the index is read in place (what each query needs of
    it), with the answers of the same collection given as texts: the same passages and sources,
    excluded sources and a query's own id left out."""
    docs = dict(list(read_set("sample-en", "collection").items())[:1500])
    queries = dict(list(read_set("sample-en", "queries").items())[:30])
    saved = tmp_path / "lib"
    neardup.overlap({"probe": "nothing copied"}, docs, save_index=saved)
    assert neardup.overlap(queries, saved) == neardup.overlap(queries, docs)
    top = next(q for q in neardup.overlap(queries, saved) if q["sources"])
    gone = top["sources"][0]["id"]
    [without] = neardup.overlap({top["query"]: queries[top["query"]]}, saved, exclude_source=[gone])
    assert gone not in sources(without)
    with pytest.raises(ValueError, match="exclude_source.*nobody"):
        neardup.overlap(queries, saved, exclude_source=["nobody"])
    [own] = neardup.overlap({gone: docs[gone]}, saved)
    assert gone not in sources(own)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="min_units"):
        neardup.overlap(QUERY, [SOURCE], min_units=0)
    with pytest.raises(ValueError, match="min_similarity"):
        neardup.overlap(QUERY, [SOURCE], min_similarity=1.5)
    with pytest.raises(TypeError, match="ambiguous"):
        neardup.overlap(QUERY, SOURCE)
    with pytest.raises(ValueError, match="exclude_source.*nobody"):
        neardup.overlap(QUERY, {"a": SOURCE}, exclude_source=["nobody"])
    with pytest.raises(TypeError, match="document 'b' is int"):
        neardup.overlap({"a": QUERY, "b": 7}, [SOURCE])
    with pytest.raises(ValueError, match="holds no passage index|does not exist"):
        neardup.overlap(QUERY, pathlib.Path("/nonexistent/neardup-index"))
    with pytest.raises(TypeError, match="unknown passage option"):
        neardup.Index(passages={"min_unit": 5})
    with pytest.raises(ValueError, match="seed_units"):
        neardup.Index(passages={"seed_units": 0})
    with pytest.raises(ValueError, match="keeps no passages"):
        neardup.Index().overlap(QUERY)
    # An empty query has nothing copied; an empty collection holds nothing.
    assert neardup.overlap("", [SOURCE])["chars"] == 0
    assert neardup.overlap(QUERY, [])["passages"] == []


def paragraph(tag: str, n: int = 80) -> str:
    """A text of `n` words no other paragraph shares."""
    return " ".join(f"{tag}{i}w{(i * 7919) % 1000}" for i in range(n)) + "."


def test_save_index_beside_a_cli_run_keeps_both_documents(binary, tmp_path):
    """`neardup.overlap(..., save_index=D)` beside `neardup overlap ... --save-index D`: each
    loads D, adds its document and saves, so without the lock on D held from the load to the
    save, the later save lost the earlier one's document (a lost update). Here the test holds
    D's lock (flock, as the library takes it) while both start, so both wait for it; once it is
    released they take turns, each adding to what the other saved."""
    import fcntl
    import subprocess
    import threading
    import time

    saved = tmp_path / "lib"
    neardup.overlap({"src": paragraph("src")}, save_index=saved)
    query = tmp_path / "cli.jsonl"
    query.write_text(json.dumps({"id": "cli", "text": paragraph("cli")}) + "\n", encoding="utf-8")
    outcome: dict = {}

    def python_run():
        try:
            outcome["found"] = neardup.overlap(
                {"py": paragraph("py")}, saved, save_index=saved, add=True
            )
        except BaseException as e:  # noqa: BLE001 - reported by the assertions below
            outcome["error"] = e

    thread = threading.Thread(target=python_run, daemon=True)
    held = open(saved / "lock", "a")
    cli = None
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        cli = subprocess.Popen(
            [str(binary), "overlap", str(query), "--against", str(saved), "--save-index",
             str(saved), "--add", "--summary", str(tmp_path / "s.jsonl")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        thread.start()
        time.sleep(1.5)
        assert thread.is_alive() and not outcome, f"the Python call did not wait: {outcome}"
        assert cli.poll() is None, f"the CLI did not wait: {cli.stderr.read()}"
        fcntl.flock(held, fcntl.LOCK_UN)
        _, err = cli.communicate(timeout=60)
        assert cli.returncode == 0, err.decode()
        assert "waiting for another run" in err.decode(), err.decode()
        thread.join(60)
        assert not thread.is_alive() and "error" not in outcome, outcome
    finally:
        held.close()
        if cli is not None and cli.poll() is None:
            cli.kill()
            cli.wait()

    found = neardup.overlap({f"probe-{k}": paragraph(k) for k in ("src", "cli", "py")}, saved)
    assert [sorted(sources(q)) for q in found] == [["src"], ["cli"], ["py"]]


def test_the_passage_record_is_the_cli_one_and_a_quoted_copy_keeps_its_source(binary, tmp_path):
    """Issue 33 item 3: a 900-character copy inside quotation marks is reported with its source
    (counted past the quotation bound, `quotation` true within a raised one), a copy after an
    unclosed mark counts as copied, and the records have the CLI's keys, value for value."""
    import subprocess

    source = paragraph("src", 200)
    copy = source[:900]
    queries = {
        "quoted": f"{paragraph('a', 30)} \u201c{copy}\u201d {paragraph('b', 30)}",
        "unclosed": f"{paragraph('c', 30)} \u201c{copy} {paragraph('d', 30)}",
    }
    found = neardup.overlap(queries, {7: source}, max_quote_chars=1000)
    quoted, unclosed = found
    assert quoted["copied"] < 0.05 and quoted["copied_with_quotations"] > 0.5
    assert [p["source"] for p in quoted["excluded"]] == [7]
    assert quoted["excluded"][0]["quotation"] is True
    assert quoted["excluded"][0]["exclusion"] == "quote"
    assert quoted["sources"][0]["id"] == 7 and quoted["sources"][0]["quoted_chars"] >= 850
    assert unclosed["copied"] > 0.5 and not any(p["quotation"] for p in unclosed["passages"])
    # The CLI's records of the same check, key for key.
    qpath, cpath = tmp_path / "q.jsonl", tmp_path / "c.jsonl"
    qpath.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in queries.items()))
    cpath.write_text(json.dumps({"id": 7, "text": source}) + "\n")
    cli = subprocess.run(
        [str(binary), "overlap", str(qpath), "--against", str(cpath), "--max-quote-chars", "1000",
         "--passages", "-", "-q"],
        check=True, capture_output=True, text=True,
    )
    cli_records = [json.loads(line) for line in cli.stdout.splitlines()]
    ours = [
        p for q in found for p in sorted(q["passages"] + q["excluded"], key=lambda p: p["start"])
    ]
    assert ours == cli_records
    passages, _ = neardup.overlap(queries, {7: source}, max_quote_chars=1000, as_table=True)
    assert passages.column_names == list(cli_records[0].keys())
    assert passages.num_rows == len(cli_records)


def test_ids_are_text_and_queries_join_a_saved_index_only_with_add(tmp_path):
    """Issue 33 item 7: `7` and `"7"` are one id; a check against a saved index leaves it as it
    was unless add=True."""
    a, b = paragraph("a"), paragraph("b")
    query = f"{a} {b}"
    assert sources(neardup.overlap({"q": query}, {"7": a, 8: b})[0]) == {"7", 8}
    for given in (7, "7"):
        [only] = neardup.overlap({"q": query}, {"7": a, 8: b}, exclude_source=[given])
        assert sources(only) == {8}
    saved = tmp_path / "lib"
    neardup.overlap({"t1": query}, {"7": a}, save_index=saved)
    [later] = neardup.overlap({"t2": "x " + query}, saved)
    assert sources(later) == {"7"}
    neardup.overlap({"t1": query}, saved, save_index=saved, add=True)
    [later] = neardup.overlap({"t2": "x " + query}, saved)
    assert "t1" in sources(later) | {a for p in later["passages"] for a in p["also"]}
    with pytest.raises(ValueError, match="add"):
        neardup.overlap({"t1": query}, save_index=saved, add=True)


def han(start: int, n: int) -> str:
    """Han characters start..start + n, each once: texts that share only what a test puts in."""
    return "".join(chr(0x4E00 + c) for c in range(start, start + n))


def test_a_short_loose_passage_needs_a_verbatim_anchor_unless_min_anchor_chars_is_0():
    """Twenty characters of a source with an edit every seven (no 13 in a row) are not a passage
    at the defaults, and are with ``min_anchor_chars=0``: the option reaches the engine."""
    source = han(0, 40) + han(100, 40) + han(200, 40)
    loose = han(100, 6) + han(500, 1) + han(107, 6) + han(501, 1) + han(114, 6)
    query = han(600, 30) + loose + han(700, 30)
    assert neardup.overlap(query, {"s": source})["passages"] == []
    found = neardup.overlap(query, {"s": source}, min_anchor_chars=0)
    assert [(p["start"], p["end"], p["source"]) for p in found["passages"]] == [(30, 50, "s")]
    with pytest.raises(neardup.OptionError, match="min_anchor_chars"):
        neardup.overlap(query, {"s": source}, min_anchor_chars=5000)
