"""neardup.spark in local mode (local[2]): the same clusters as `neardup dedup`, the skew guard on
a bucket of 50,000 near-copies, bad rows, the components algorithm, and the spark-submit
command."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

# Pinned in tests/requirements.txt: a missing pyspark fails the suite, never skips it.
import pyspark  # noqa: E402

import neardup  # noqa: E402
from pyhelpers import ROOT, example_texts, run_cli  # noqa: E402
from test_dedup import corpus  # noqa: E402

os.environ["PYSPARK_PYTHON"] = sys.executable


def clusters_of(assignments) -> list[list]:
    groups: dict = {}
    for row in assignments.collect():
        if row.cluster is not None:
            groups.setdefault(row.cluster, []).append(row.id)
    return sorted(sorted(g) for g in groups.values())


def big_corpus() -> list[str]:
    """A few thousand English and Chinese documents with near-copies and exact copies."""
    return corpus(seed=11, n=2500)


@pytest.mark.parametrize("threshold", [0.5, 0.9])
@pytest.mark.parametrize("keep", ["first", "longest"])
def test_same_clusters_as_the_cli(spark, binary, tmp_path, threshold, keep):
    from neardup.spark import dedup

    docs = big_corpus()
    ids = [f"d{i:05d}" for i in range(len(docs))]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, docs)))
    out = run_cli(binary, "dedup", str(path), "--threshold", str(threshold), "--keep", keep,
                  "--clusters", str(tmp_path / "cl.jsonl"), "-o", str(tmp_path / "kept.jsonl"), "-q")
    assert out.returncode == 0, out.stderr
    cli = sorted(sorted(json.loads(l)["cluster"]) for l in open(tmp_path / "cl.jsonl"))
    cli_kept = [json.loads(l)["id"] for l in open(tmp_path / "kept.jsonl")]

    # Three partitions, so that the shuffles really cross partitions.
    df = spark.createDataFrame(list(zip(ids, docs)), "id string, text string", ).coalesce(1)
    df = df.repartitionByRange(3, "id").sortWithinPartitions("id")
    result = dedup(df, threshold=threshold, keep=keep)
    assert clusters_of(result.assignments) == cli
    assert len(cli) > 20
    kept = sorted(r.id for r in result.kept.select("id").collect())
    assert kept == sorted(cli_kept)
    s = result.summary
    assert s["documents"] == len(docs) and s["kept"] == len(cli_kept)
    # `first` keeps each component's first member, which names it: no keep stage of its own.
    stages = {"sketch", "exact copies", "candidates", "verify", "components"}
    assert set(s["stage_seconds"]) == stages | ({"keep"} if keep != "first" else set())


@pytest.mark.parametrize("options", [
    ["--hamming", "3"],
    ["--method", "both", "--hamming", "6"],
    # The skew guard, small enough to bite: the same capped candidates as the CLI.
    ["--hamming", "6", "--max-bucket", "3", "--star-width", "1"],
    ["--threshold", "0.5", "--max-bucket", "2", "--star-width", "1"],
])
def test_simhash_on_spark_gives_the_clusters_of_the_cli(spark, binary, tmp_path, options):
    """SimHash candidates on Spark: each permuted table's key (Manku et al.'s MapReduce plan)
    grouped like a band key, every pair within K bits found, as `neardup dedup --hamming K`; and
    the skew guard, the library's rule in both, capping the same buckets."""
    from neardup.spark import dedup

    docs = big_corpus()
    ids = [f"d{i:05d}" for i in range(len(docs))]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, docs)))
    out = run_cli(binary, "dedup", str(path), *options, "--clusters", str(tmp_path / "cl.jsonl"),
                  "-o", "/dev/null", "-q")
    assert out.returncode == 0, out.stderr
    cli = sorted(sorted(json.loads(l)["cluster"]) for l in open(tmp_path / "cl.jsonl"))
    if "--max-bucket" in options:
        # The cap changes the answer here (else this would not test it).
        full = options[: options.index("--max-bucket")]
        out = run_cli(binary, "dedup", str(path), *full, "--clusters", str(tmp_path / "all.jsonl"),
                      "-o", "/dev/null", "-q")
        assert out.returncode == 0, out.stderr
        uncapped = sorted(sorted(json.loads(l)["cluster"]) for l in open(tmp_path / "all.jsonl"))
        assert uncapped != cli
    kwargs = {options[i].lstrip("-").replace("-", "_"): options[i + 1] for i in range(0, len(options), 2)}
    kwargs = {k: json.loads(v) if v[0].isdigit() else v for k, v in kwargs.items()}
    # Input order (which members of a capped bucket come first) given as a column.
    df = spark.createDataFrame(list(zip(range(len(docs)), ids, docs)),
                               "n long, id string, text string").repartition(3)
    result = dedup(df, order_col="n", **kwargs)
    assert clusters_of(result.assignments) == cli
    assert len(cli) > 20
    s = result.summary
    if "hamming" in kwargs:
        assert s["method"] == kwargs.get("method", "simhash") and s["hamming"] == kwargs["hamming"]
        assert f"simhash, Hamming <= {kwargs['hamming']}" in result.print_summary() or (
            f"and simhash (Hamming <= {kwargs['hamming']})" in result.print_summary())
    if "max_bucket" in kwargs:
        assert s["capped_buckets"] > 0


def test_the_conformance_table_on_spark(spark):
    """The conformance table's dedup rows (tests/conformance/table.json; the library is the
    oracle) through Spark: ids as text, so "7" and 7 are one id and their records two rows."""
    from neardup.spark import dedup

    table = json.loads((ROOT / "tests" / "conformance" / "table.json").read_text(encoding="utf-8"))
    ids = [d["id"] if isinstance(d["id"], str) else json.dumps(d["id"]) for d in table["corpus"]]
    # The input order (the keeper rule's "first") given by a column: the rows are shuffled.
    rows = [(n, i, d["text"]) for n, (i, d) in enumerate(zip(ids, table["corpus"]))]
    df = spark.createDataFrame(rows, "pos long, id string, text string").repartition(2)
    for row in table["dedup"]:
        pipeline = neardup.Pipeline(row["preset"], **row.get("pipeline", {}))
        result = dedup(df, pipeline=pipeline, order_col="pos", **row["search"])
        kept = sorted(r.id for r in result.kept.select("id").collect())
        assert {"clusters": clusters_of(result.assignments), "kept": kept} == row["expect"], row["name"]


def test_pairs_are_every_verified_pair(spark):
    from neardup.spark import dedup

    docs = corpus(seed=4, n=300)
    ids = [f"d{i:04d}" for i in range(len(docs))]
    df = spark.createDataFrame(list(zip(ids, docs)), "id string, text string")
    result = dedup(df, threshold=0.7, pairs=True)
    got = {(r.a, r.b, round(r.similarity, 6)) for r in result.pairs.collect()}
    local = neardup.dedup(docs, threshold=0.7, ids=ids)
    want = {(a, b, round(s, 6)) for a, b, s in local.pairs}
    assert got == want and len(want) > 10


def test_a_bucket_of_50000_near_copies_stays_linear(spark):
    from neardup.spark import dedup

    base = ("the same press release copied by every news site in the country with the same "
            "long body of text about the weather the markets and the games of the weekend and "
            "only a small change at the very end of it ")
    docs = [base + f"edition {i}" for i in range(50_000)]  # 50,000 distinct near-copies
    df = spark.createDataFrame([(i, t) for i, t in enumerate(docs)], "id long, text string")
    result = dedup(df, threshold=0.8, max_bucket=1000, star_width=2)
    s = result.summary
    assert s["capped_buckets"] > 0, s
    assert s["clusters"] == 1 and s["kept"] == 1, s
    # Linear, not quadratic: at most 2 pairs per member per band.
    assert s["candidates"] <= 2 * 50_000 * s["bands"], s


def test_empty_and_null_rows(spark):
    from neardup.spark import dedup

    rows = [("a", "one two three four five six"), ("b", ""), ("c", None), ("d", "one two three four five six")]
    df = spark.createDataFrame(rows, "id string, text string")
    with pytest.raises(ValueError, match="no text"):
        dedup(df)
    result = dedup(df, skip_bad=True)
    assert result.summary["skipped"] == 1 and result.summary["empty"] == 1
    got = {r.id: (r.cluster_size, r.kept) for r in result.assignments.collect()}
    assert got == {"a": (2, True), "b": (1, True), "d": (2, False)}
    with pytest.raises(ValueError, match="no column"):
        dedup(df, text_col="body")


def test_connected_components_equal_union_find(spark):
    from neardup.spark import connected_components

    rng = random.Random(1)
    for n, m in ((200, 150), (500, 600), (50, 0)):
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(m)]
        edges += [(i, i + 1) for i in range(0, 40)]  # a long path: many rounds for label propagation
        parent = list(range(n))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in edges:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        want = {}
        for a, b in edges:
            if a != b:
                for x in (a, b):
                    want[x] = min(y for y in range(n) if find(y) == find(x))
        df = spark.createDataFrame(edges, "a long, b long")
        got = {r.node: r.component for r in connected_components(df).collect()}
        assert got == want


def test_the_spark_submit_command(spark, binary, tmp_path):
    docs = example_texts() + example_texts()[:2]
    path = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": i, "text": t, "extra": [i]}) for i, t in enumerate(docs)]
    path.write_text("\n".join(lines) + "\n{not json}\n")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, "-m", "neardup.spark", "dedup", str(path), str(tmp_path / "out"),
           "--master", "local[2]", "--threshold", "0.8"]
    bad = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert bad.returncode == 1 and "--skip-bad" in bad.stderr, bad.stderr[-2000:]
    ok = subprocess.run(cmd + ["--skip-bad", "--assignments", str(tmp_path / "a")],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert "neardup dedup (spark):" in ok.stderr and "skipped 1 bad record" in ok.stderr
    parts = sorted((tmp_path / "out").glob("part-*"))
    kept_lines = [l for p in parts for l in p.read_text().splitlines()]
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(lines) + "\n")
    cli = run_cli(binary, "dedup", str(good), "-o", "-", "-q")
    assert kept_lines == cli.stdout.decode().splitlines(), "the kept lines byte for byte, in order"


def test_the_readme_spark_submit_line_runs_as_written(binary, tmp_path):
    """The README's spark-submit line, copied from the README and run by a shell in a folder
    holding corpus.jsonl, with the test venv's python and spark-submit first on PATH."""
    readme = (ROOT / "README.md").read_text()
    lines = [l for l in readme.splitlines() if l.startswith("spark-submit --master")]
    assert len(lines) == 1, lines
    docs = example_texts() + example_texts()[:2]
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(docs))
    )
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"],
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    run = subprocess.run(["bash", "-c", lines[0]], cwd=tmp_path, capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    # spark-submit's Python runner sends the job's stderr to stdout.
    said = run.stdout + run.stderr
    assert "neardup dedup (spark):" in said, said[-2000:]
    # Nobody set spark.sql.shuffle.partitions: the job chose it from the input's size.
    assert "2 shuffle partitions (from the input size" in said, said[-2000:]
    kept = [l for p in sorted((tmp_path / "kept").glob("part-*")) for l in p.read_text().splitlines()]
    cli = run_cli(binary, "dedup", str(tmp_path / "corpus.jsonl"), "-o", "-", "-q")
    assert kept == cli.stdout.decode().splitlines()

    # The same line on a folder of Parquet parts that a Spark job wrote (with _SUCCESS), as a
    # new user ran it (sweep 3): read as Parquet, the summary said, and at most the three INFO
    # lines spark-submit prints before the job can set its log level.
    import pyarrow as pa
    import pyarrow.parquet as pq

    crawl = tmp_path / "crawl"
    crawl.mkdir()
    half = len(docs) // 2
    for n, (a, b) in enumerate([(0, half), (half, len(docs))]):
        table = pa.table({"id": [str(i) for i in range(a, b)], "text": docs[a:b]})
        pq.write_table(table, crawl / f"part-0000{n}-9f8e-c000.snappy.parquet")
    (crawl / "_SUCCESS").write_text("")
    line = lines[0].replace("corpus.jsonl kept/", "crawl/ kept-parquet/")
    run = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    said = run.stdout + run.stderr
    assert f"neardup dedup (spark): {len(docs)} documents" in said, said[-2000:]
    assert len([l for l in said.splitlines() if " INFO " in l]) <= 3, said[:3000]
    kept = pq.read_table(tmp_path / "kept-parquet")
    assert kept.num_rows == len(cli.stdout.decode().splitlines())


def test_shuffle_partitions_the_user_set_are_left_alone(spark):
    from neardup.spark import choose_shuffle_partitions

    df = spark.createDataFrame([(1, "a b c")], "id long, text string")
    assert choose_shuffle_partitions(df) is None  # the fixture sets 4
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"


def test_keep_by_a_date_column_keeps_what_the_cli_keeps(spark, binary, tmp_path):
    """keep="max:fetched_at" on Spark: a string column and a timestamp column, and
    `python -m neardup.spark dedup --keep max:meta.fetched_at` on JSONL with the field nested,
    keep what `neardup dedup` keeps."""
    from neardup.spark import dedup
    from pyspark.sql import functions as F
    from test_dedup import crawl_dates

    docs = big_corpus()[:800]
    ids = [f"d{i:05d}" for i in range(len(docs))]
    dates = crawl_dates(len(docs))
    path = tmp_path / "c.jsonl"
    path.write_text("".join(
        json.dumps({"id": i, "text": t, "meta": {"fetched_at": d}}) + "\n"
        for i, t, d in zip(ids, docs, dates)
    ))
    out = run_cli(binary, "dedup", str(path), "--keep", "max:meta.fetched_at",
                  "-o", str(tmp_path / "kept.jsonl"), "-q")
    assert out.returncode == 0, out.stderr
    cli_kept = sorted(json.loads(l)["id"] for l in open(tmp_path / "kept.jsonl"))

    df = spark.createDataFrame(list(zip(ids, docs, dates)), "id string, text string, fetched_at string")
    for frame in (df, df.withColumn("fetched_at", F.to_timestamp("fetched_at"))):
        result = dedup(frame.repartition(3, "id"), keep="max:fetched_at")
        assert sorted(r.id for r in result.kept.select("id").collect()) == cli_kept

    # The command's own main, in this session (another JVM would cost a minute of CI).
    from neardup.spark.__main__ import main

    out_dir = tmp_path / "kept"
    assert main(["dedup", str(path), str(out_dir), "--keep", "max:meta.fetched_at"]) == 0
    lines = [l for p in sorted(out_dir.glob("part-*")) for l in p.read_text().splitlines()]
    assert sorted(json.loads(l)["id"] for l in lines) == cli_kept

    with pytest.raises(neardup.InputError, match="no column 'fetched'"):
        dedup(df, keep="max:fetched")


def test_keep_compares_values_exactly_as_the_cli_does(spark, binary, tmp_path):
    """keep="max:FIELD" on values a double cannot tell apart (integers past 2**53, instants a
    nanosecond apart): Spark compared doubles, so the two tied and the first was kept; the CLI
    keeps the larger. The larger is second in each pair."""
    from neardup.spark import dedup, dedup_jsonl

    # Four texts that share no word.
    texts = [" ".join(f"w{k}x{j}" for j in range(40)) for k in range(4)]
    rows = []
    for i, (lo, hi) in enumerate([(2**53, 2**53 + 1), (2**63 + 10, 2**63 + 11), (-(2**60) - 3, -(2**60) - 2)]):
        rows += [(f"n{i}a", texts[i], lo), (f"n{i}b", texts[i], hi)]
    path = tmp_path / "n.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t, "v": v}) + "\n" for i, t, v in rows))
    out = run_cli(binary, "dedup", str(path), "--keep", "max:v", "-o", str(tmp_path / "kept.jsonl"), "-q")
    assert out.returncode == 0, out.stderr
    cli_kept = sorted(json.loads(l)["id"] for l in open(tmp_path / "kept.jsonl"))
    assert cli_kept == ["n0b", "n1b", "n2b"]
    result = dedup_jsonl(spark.read.text(str(path)), keep="max:v", cache_input=False)
    kept = sorted(json.loads(r.value)["id"] for r in result.kept.collect())
    assert kept == cli_kept
    # A DataFrame of strings (instants a nanosecond apart) and of exact decimals.
    stamps = [("t0a", texts[3], "2024-05-01T12:00:00.000000001Z"), ("t0b", texts[3], "2024-05-01T12:00:00.000000002Z")]
    df = spark.createDataFrame(stamps, "id string, text string, v string")
    assert sorted(r.id for r in dedup(df, keep="max:v").kept.select("id").collect()) == ["t0b"]
    df = spark.createDataFrame([(i, t, str(v)) for i, t, v in rows], "id string, text string, v string")
    assert sorted(r.id for r in dedup(df, keep="min:v").kept.select("id").collect()) == ["n0a", "n1a", "n2a"]


def test_jsonl_lines_are_read_as_the_cli_reads_them(spark, binary, tmp_path, monkeypatch):
    """dedup_jsonl (what `python -m neardup.spark dedup` runs on JSONL) reads each line by the
    library's rule: dotted fields, ids as written (a number's text), escaped and raw Chinese,
    blank lines that are no record, a byte order mark on any line. The clusters, ids and kept lines are the CLI's, with the
    clusters found on the driver and by large-star / small-star alike."""
    import neardup.spark._job as spark_mod
    from neardup.spark import dedup_jsonl

    docs = big_corpus()[:700]
    lines = []
    for i, t in enumerate(docs):
        url = i if i % 3 == 0 else f"https://x.example/{i}"
        lines.append(json.dumps({"meta": {"url": url, "lang": "x"}, "body": t}, ensure_ascii=i % 2 == 0))
        if i == 10:
            lines.append("   \t")  # blank: no record
        if i in (0, 20):
            lines[-1] = "\ufeff" + lines[-1]  # a byte order mark, on the first line and later
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept_path, assign_path = tmp_path / "kept.jsonl", tmp_path / "a.jsonl"
    out = run_cli(binary, "dedup", str(path), "--id-field", "meta.url", "--text-field", "body",
                  "-o", str(kept_path), "--assignments", str(assign_path), "-q")
    assert out.returncode == 0, out.stderr
    cli_rows = [json.loads(l) for l in open(assign_path, encoding="utf-8")]
    cli_groups: dict = {}
    for r in cli_rows:
        if r.get("cluster") is not None:
            cli_groups.setdefault(r["cluster"], []).append(str(r["id"]))
    want = sorted(sorted(g) for g in cli_groups.values())
    assert len(want) > 20

    def run():
        return dedup_jsonl(spark.read.text(str(path)), text_field="body", id_field="meta.url",
                           id_field_named=True, cache_input=False)

    result = run()
    assert clusters_of(result.assignments) == want
    assert sorted(r.id for r in result.assignments.collect()) == sorted(str(r["id"]) for r in cli_rows)
    kept = [r.value for r in result.kept.collect()]
    assert kept == kept_path.read_text(encoding="utf-8").splitlines(), "the kept lines, in order"
    assert result.summary["documents"] == len(docs) and result.summary["skipped"] == 0
    monkeypatch.setattr(spark_mod, "_LOCAL_EDGES", 0)  # large-star / small-star instead
    assert clusters_of(run().assignments) == want


def test_jsonl_bad_lines_invalid_utf8_and_a_misspelt_id_field(spark, tmp_path):
    from neardup.spark import dedup_jsonl

    good = [json.dumps({"id": i, "text": t}) for i, t in enumerate(example_texts())]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        ("\n".join(good[:3]) + "\n").encode()
        + b'{"id": "u", "text": "caf\xe9 au lait"}\n'
        + b'{"id": "m", "text": "no end\n'
        + ("\n".join(good[3:]) + "\n").encode()
    )
    lines = lambda: spark.read.text(str(path))  # noqa: E731
    for cache in (False, True):  # the file is named from the input, not from its cache
        with pytest.raises(neardup.InputError, match=r"2 lines are not records; the first: .*bad\.jsonl: invalid UTF-8 at byte offset 24 of the line \(use lossy=True"):
            dedup_jsonl(lines(), cache_input=cache)
    result = dedup_jsonl(lines(), skip_bad=True, cache_input=False)
    assert result.summary["skipped"] == 2 and result.summary["documents"] == len(good)
    kept = [r.value for r in result.kept.collect()]
    assert all(l.startswith('{"id": ') and "no end" not in l and "caf" not in l for l in kept)
    result = dedup_jsonl(lines(), skip_bad=True, lossy=True, cache_input=False)
    assert result.summary["skipped"] == 1 and result.summary["documents"] == len(good) + 1
    with pytest.raises(neardup.InputError, match="none of the .* records has the field 'nosuch'"):
        dedup_jsonl(lines(), id_field="nosuch", id_field_named=True, skip_bad=True, cache_input=False)
    # Not named by the user: a record without the field is named by its position.
    result = dedup_jsonl(lines(), id_field="nosuch", skip_bad=True, cache_input=False)
    ids = [r.id for r in result.assignments.collect()]
    assert len(set(ids)) == len(good) and all(i.isdigit() for i in ids), ids


def test_a_document_over_max_doc_bytes_is_a_bad_record_as_in_the_cli(spark, binary, tmp_path):
    """max_doc_bytes on every input of Spark (a DataFrame, JSON Lines, the command on Parquet),
    with the CLI's default and bounds; the command skips what `neardup dedup` skips."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from neardup.spark import dedup, dedup_jsonl

    texts = example_texts() + example_texts()[:2]
    limit = max(len(t.encode()) for t in texts)
    big = " ".join(["an overlong document"] * (limit // 10))
    ids = [f"d{i}" for i in range(len(texts))] + ["big"]
    texts = texts[:3] + [big] + texts[3:]
    ids = ids[:3] + ["big"] + ids[3:-1]
    df = spark.createDataFrame(list(zip(ids, texts)), "id string, text string")
    with pytest.raises(neardup.InputError, match=f"1 row is bad, the first with a text over max_doc_bytes {limit}, id 'big'"):
        dedup(df, max_doc_bytes=limit)
    result = dedup(df, max_doc_bytes=limit, skip_bad=True)
    assert result.summary["skipped"] == 1 and result.summary["documents"] == len(texts) - 1
    assert "big" not in {r.id for r in result.kept.collect()}
    assert dedup(df).summary["documents"] == len(texts)  # the default, 32 MiB, takes it
    for bad, error in ((0, neardup.OptionError), (2**31 + 1, neardup.OptionError), ("1", neardup.InputTypeError)):
        with pytest.raises(error, match="max_doc_bytes"):
            dedup(df, max_doc_bytes=bad)
        with pytest.raises(error, match="max_doc_bytes"):
            dedup_jsonl(spark.createDataFrame([("{}",)], "value string"), max_doc_bytes=bad)

    lines = [json.dumps({"id": i, "text": t}) for i, t in zip(ids, texts)]
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    with pytest.raises(neardup.InputError, match=f"document is larger than --max-doc-bytes {limit}"):
        dedup_jsonl(spark.read.text(str(jsonl)), max_doc_bytes=limit, cache_input=False)

    parquet = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ids, "text": texts}), parquet)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, "-m", "neardup.spark", "dedup", str(parquet), str(tmp_path / "out"),
           "--master", "local[2]", "--max-doc-bytes", str(limit), "--skip-bad"]
    ok = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and "skipped 1 bad record" in ok.stderr, ok.stderr[-3000:]
    cli = run_cli(binary, "dedup", str(parquet), "-o", str(tmp_path / "kept.parquet"), "-q",
                  "--max-doc-bytes", str(limit), "--skip-bad")
    assert cli.returncode == 0, cli.stderr
    spark_kept = pq.read_table(tmp_path / "out").column("id").to_pylist()
    assert spark_kept == pq.read_table(tmp_path / "kept.parquet").column("id").to_pylist()
    assert "big" not in spark_kept and len(spark_kept) < len(texts) - 1


def test_a_corpus_without_duplicates_and_negative_order_positions(spark):
    """No edge at all (the driver's components of nothing), and an order column with negative
    values (the positions the extension pairs keep Spark's order)."""
    from neardup.spark import dedup

    docs = [f"document number {i} says something of its own about topic {i * 7919}" for i in range(40)]
    df = spark.createDataFrame([(f"d{i}", t, i - 20) for i, t in enumerate(docs)], "id string, text string, o long")
    result = dedup(df, order_col="o")
    s = result.summary
    assert s["clusters"] == 0 and s["kept"] == 40 and s["verified"] == s["exact_duplicates"] == 0, s
    assert result.kept.count() == 40
    near = docs[:10] + [docs[0] + " and more", docs[3] + " and more"]
    df = spark.createDataFrame([(f"d{i}", t, -1000 + i) for i, t in enumerate(near)], "id string, text string, o long")
    result = dedup(df, order_col="o", threshold=0.7)
    assert clusters_of(result.assignments) == [["d0", "d10"], ["d11", "d3"]]
    assert {r.id for r in result.assignments.collect() if not r.kept} == {"d10", "d11"}


def test_the_command_reads_a_spark_parquet_folder_as_the_cli_and_says_little(binary, tmp_path):
    """`python -m neardup.spark dedup crawl/ out/` on a Spark job's output (Parquet parts, one
    named by its first bytes only, beside _SUCCESS and its hidden .crc): read as Parquet, as `neardup
    dedup crawl/` reads it (it was read as JSON Lines, and failed advising --lossy), with the
    CLI's clusters; stderr holds the summary and no Spark INFO line. A folder mixing the
    formats is one line naming a file of each and the way out."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = big_corpus()[:600]
    ids = [f"d{i:05d}" for i in range(len(docs))]
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    half = len(docs) // 2
    pq.write_table(pa.table({"id": ids[:half], "text": docs[:half]}), crawl / "part-00000-1a2b-c000.snappy.parquet")
    pq.write_table(pa.table({"id": ids[half:], "text": docs[half:]}), crawl / "part-00001-1a2b-c000")
    (crawl / "_SUCCESS").write_text("")
    (crawl / "._SUCCESS.crc").write_bytes(b"crc\x00")

    out = run_cli(binary, "dedup", str(crawl), "--clusters", str(tmp_path / "cl.jsonl"), "-o", "/dev/null", "-q")
    assert out.returncode == 0, out.stderr
    cli = sorted(sorted(json.loads(l)["cluster"]) for l in open(tmp_path / "cl.jsonl"))
    assert len(cli) > 10

    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, "-m", "neardup.spark", "dedup", str(crawl), str(tmp_path / "out"),
           "--master", "local[2]", "--assignments", str(tmp_path / "a")]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "neardup dedup (spark): 600 documents" in run.stderr, run.stderr[-3000:]
    assert not [l for l in run.stderr.splitlines() if " INFO " in l], run.stderr[:3000]
    groups: dict = {}
    for p in sorted((tmp_path / "a").glob("part-*")):
        for row in map(json.loads, p.read_text().splitlines()):
            if row.get("cluster") is not None:
                groups.setdefault(row["cluster"], []).append(row["id"])
    assert sorted(sorted(g) for g in groups.values()) == cli
    # The kept rows, as Parquet (the input's format): one per cluster and every lone document.
    assert pq.read_table(tmp_path / "out").num_rows == len(docs) - sum(len(c) - 1 for c in cli)

    # Mixed formats: one line naming a file of each and the way out, no Java trace.
    (crawl / "notes.jsonl").write_text(json.dumps({"id": "x", "text": "a b c"}) + "\n")
    mixed = subprocess.run(cmd[:5] + [str(tmp_path / "out2"), "--master", "local[2]"],
                           capture_output=True, text=True, env=env, timeout=600)
    assert mixed.returncode == 1, mixed.stderr[-3000:]
    said = [l for l in mixed.stderr.splitlines() if l.startswith("neardup: error:")]
    assert len(said) == 1 and "mixes Parquet" in said[0] and "notes.jsonl" in said[0], mixed.stderr[-3000:]
    assert "--format" in said[0] and "at org.apache" not in mixed.stderr
