"""The conformance table (tests/conformance/table.json; the library is the oracle, in
crates/neardup/tests/conformance.rs) through Python: the dedup rows through ``neardup.dedup``,
the check rows through ``Index.check``. The CLI, the service and Spark run the same rows."""

import json

import pytest

import neardup
from pyhelpers import ROOT, run_cli

TABLE = json.loads((ROOT / "tests" / "conformance" / "table.json").read_text(encoding="utf-8"))
DOCS = TABLE["corpus"]


def id_text(i) -> str:
    """The library's id rule: a string's value, a number as written."""
    return i if isinstance(i, str) else json.dumps(i)


@pytest.mark.parametrize("row", TABLE["dedup"], ids=lambda r: r["name"])
def test_dedup_rows(row):
    ids = [d["id"] for d in DOCS]
    # The corpus holds "7" and 7, one id: two documents, and said (as neardup dedup says it).
    with pytest.warns(neardup.RepeatedIdWarning, match=r"1 duplicate id .*, e\.g\. 7$"):
        result = neardup.dedup([d["text"] for d in DOCS], ids=ids,
                               pipeline=neardup.Pipeline(row["preset"], **row.get("pipeline", {})),
                               **row["search"])
    clusters = sorted(sorted(id_text(m) for m in c.members) for c in result.clusters)
    kept = sorted(id_text(i) for i in result.kept_ids())
    assert {"clusters": clusters, "kept": kept} == row["expect"]


@pytest.mark.parametrize("row", TABLE["checks"], ids=lambda r: r["name"])
def test_check_rows(row):
    idx = neardup.Index(neardup.Pipeline(row["preset"]), **row["search"])
    for i, at in enumerate(row["sequence"]):
        d = DOCS[at]
        a = idx.check(d["id"], d["text"])
        got = {"duplicate": a["duplicate"], "matches": [m[0] for m in a["matches"]],
               "inserted": a["inserted"]}
        assert got == row["expect"][i], (row["name"], i)
    assert idx.ids() == row["ids"]


def test_one_summary_in_every_surface(binary, tmp_path):
    """The library's summary: the CLI prints it, Python returns and prints it, Spark prints it
    through the same formatter (test_spark)."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    out = run_cli(binary, "dedup", str(corpus), "--threshold", "0.5", "-o", "/dev/null")
    assert out.returncode == 0, out.stderr
    cli = out.stderr.decode().removeprefix("neardup dedup: ").splitlines()
    result = neardup.dedup([d["text"] for d in DOCS], threshold=0.5)
    lines = result.summary_text().splitlines()
    assert len(lines) == 3 and lines[1].startswith("  removed ")
    assert lines == cli[:3]
    s = result.summary()
    assert (s["documents"], s["clusters"], s["threshold"], s["method"]) == (len(DOCS), 2, 0.5, "minhash")
    assert s["bytes"] == sum(len(d["text"].encode()) for d in DOCS)
    assert neardup._neardup.format_summary(json.dumps(
        {k: v for k, v in s.items() if k not in ("pairs", "banding")})) == result.summary_text()
    with pytest.raises(neardup.InputError, match="unknown field `pairs`"):
        neardup._neardup.format_summary(json.dumps(s))
    # Spark's summary holds its own fields beside the library's; the library picks its own.
    spark = {**s, "stage_seconds": {"sketch": 0.5}, "shuffle_partitions": 8, "bands": s.get("bands") or 0}
    assert neardup._neardup.format_summary(json.dumps(spark), runner=True) == result.summary_text()


OVERLAP = TABLE["overlap"]


def as_mapping(docs: list) -> dict:
    return {d["id"]: d["text"] for d in docs}


@pytest.mark.parametrize("row", OVERLAP["rows"], ids=lambda r: r["name"])
def test_overlap_rows(row):
    """The overlap rows through ``neardup.overlap``: the queries against the collection, or
    both as one input; the passages in the CLI's order (``as_table``), ids as text."""
    if row["mode"] == "against":
        queries, against = as_mapping(OVERLAP["queries"]), as_mapping(OVERLAP["collection"])
    else:
        queries, against = as_mapping(OVERLAP["collection"] + OVERLAP["queries"]), None
    passages, summary = neardup.overlap(queries, against, exclude_source=row["exclude_source"],
                                        as_table=True, **row["options"])
    keys = ("start", "end", "source_start", "source_end", "exclusion")
    got = {
        "passages": [{"query": id_text(p["query"]), "source": id_text(p["source"]), **{k: p[k] for k in keys}}
                     for p in passages.to_pylist()],
        "copied_chars": {id_text(s["query"]): s["copied_chars"] for s in summary.to_pylist()},
    }
    if against is None:
        # Within one input: each text without its repeats, as `neardup overlap -o` writes it.
        found = neardup.overlap(queries, exclude_source=row["exclude_source"], remove=True, **row["options"])
        got["without_repeats"] = {id_text(q["query"]): q["without_repeats"] for q in found}
    want = [{k: p[k] for k in ("query", "source", *keys)} for p in row["expect"]["passages"]]
    assert got == dict(row["expect"], passages=want)


@pytest.mark.parametrize("row", TABLE["errors"]["rows"], ids=lambda r: json.dumps(r["options"]))
def test_error_rows(row):
    """The error rows through Python: an OptionError naming the option."""
    calls = {
        "search": lambda o: neardup.dedup(["a short text of a few words"], **o),
        "pipeline": lambda o: neardup.Pipeline(**o),
        "passages": lambda o: neardup.overlap("a short text of a few words", ["another text"], **o),
    }
    with pytest.raises(neardup.OptionError) as e:
        calls[row["group"]](row["options"])
    assert row["names"] in str(e.value).lower() or row["names"] in str(e.value), str(e.value)
