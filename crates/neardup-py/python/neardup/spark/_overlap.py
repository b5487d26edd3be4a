"""The passage job on Spark (``python -m neardup.spark overlap``): which passages of each query
are copied from which documents of a collection (``--against``), or which passages the
documents of one corpus repeat from earlier ones, with the answers ``neardup overlap`` gives.

The library's engine runs in the executors, in parts (``neardup::overlap::parts``):

1. the collection's documents, numbered in input order, give their winnowed keys (what an index
   posts); shuffled by key, each key keeps its first ``max_postings`` holders;
2. each query's keys (every k-gram's) are joined with those postings;
3. each query is checked with the holders of its keys; a check that lacks the texts of the
   sources it would align next says which, they are joined to it from the collection, and it is
   checked again, until every query is done (most are in two passes). The answer depends only on
   the texts it used, so it is the CLI's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from ..errors import InputError

# The most passes over the unfinished queries: each aligns at least one more round of
# candidates (16 sources), and a check aligns at most max_sources (up to 10^6) of them; a run
# past this is a bug, not a long input.
_MAX_PASSES = 100_000


@dataclass
class SparkOverlapResult:
    """The DataFrames of :func:`overlap` and its summary."""

    passages: Any
    """One row per passage, in query order: ``q`` (the query's position), ``i`` (the passage's
    rank in it) and ``line`` (the record ``neardup overlap --passages`` writes, as JSON)."""
    summaries: Any
    """One row per query, in order: ``q`` and ``line`` (``--summary``'s record, as JSON)."""
    rewritten: Optional[Any]
    """Within a corpus: ``q``, ``text`` (without the passages it repeats from earlier documents)
    and ``removed`` (code points)."""
    summary: dict = field(default_factory=dict)

    def print_summary(self) -> str:
        s = self.summary
        what = "within the input" if s["within"] else f"against {s['collection']} documents"
        lines = [
            f"neardup overlap (spark): {s['queries']} queries checked {what}: "
            f"{s['passages']} passages ({s['quoted']} quoted), {s['with_copies']} queries with "
            f"copies, {s['mean_copied'] * 100:.1f}% copied on average"
        ]
        if s.get("removed") is not None:
            lines.append(f"  {s['removed']} characters removed; {s['dropped']} records dropped")
        lines.append(
            f"  {s['passes']} passes; time "
            + ", ".join(f"{k} {v:.1f} s" for k, v in s["stage_seconds"].items())
        )
        return "\n".join(lines)


def numbered(df: Any) -> Any:
    """``df`` with ``pos``: dense numbers from 0 in the order Spark reads its rows (the numbers
    a passage index gives, below 2**32), persisted so that they stay."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    marked = df.withColumn("__mid", F.monotonically_increasing_id()).persist(
        StorageLevel.MEMORY_AND_DISK_DESER
    )
    counts = sorted(
        (r["part"], r["n"])
        for r in marked.groupBy((F.col("__mid") / F.lit(1 << 33)).cast("long").alias("part"))
        .agg(F.count(F.lit(1)).alias("n"))
        .collect()
    )
    starts, at = {}, 0
    for part, n in counts:
        starts[part] = at
        at += n
    if at >= 2**32 - 1:
        raise InputError(f"{at} documents: a passage collection holds fewer than 4,294,967,295")
    part = (F.col("__mid") / F.lit(1 << 33)).cast("long")
    start = F.lit(0)
    for p, s in starts.items():
        start = F.when(part == p, F.lit(s)).otherwise(start)
    return marked.withColumn("pos", F.col("__mid") - part * F.lit(1 << 33) + start).drop("__mid")


def _keys_stage(spec: str, query: bool):
    """``(pos, text)`` -> ``(pos, key)``: a document's winnowed keys, or a query's every key."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from neardup import _neardup

        for batch in batches:
            if batch.num_rows == 0:
                continue
            pos = batch.column("pos").to_pylist()
            rows, keys = _neardup.passage_keys(spec, batch.column("text").to_pylist(), query)
            yield pa.RecordBatch.from_arrays(
                [pa.array([pos[r] for r in rows], pa.int64()), pa.array(keys, pa.int64())],
                names=["pos", "key"],
            )

    return run


_CHECKED = ("q long, needs array<long>, lines array<string>, summary string, text string, "
            "removed long")


def _check_stage(spec: str, within: bool, exclude: list):
    """A pass of checks: each query from the parts shipped to it."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from neardup import _neardup

        for batch in batches:
            if batch.num_rows == 0:
                continue
            cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
            queries = [
                (
                    qid,
                    text,
                    own,
                    [(h["key"], h["docs"]) for h in (held or [])],
                    [(t["doc"], t["id_json"], t["text"]) for t in (texts or [])],
                )
                for qid, text, own, held, texts in zip(
                    cols["id_json"], cols["text"], cols["own"], cols["held"], cols["texts"]
                )
            ]
            out = _neardup.passage_check(spec, within, exclude, queries)
            yield pa.RecordBatch.from_pylist(
                [
                    {"q": q, "needs": needs, "lines": lines, "summary": summary,
                     "text": rewritten[0] if rewritten else None,
                     "removed": rewritten[1] if rewritten else None}
                    for q, (needs, lines, summary, rewritten) in zip(cols["q"], out)
                ],
                schema=pa.schema([
                    ("q", pa.int64()), ("needs", pa.list_(pa.int64())),
                    ("lines", pa.list_(pa.string())), ("summary", pa.string()),
                    ("text", pa.string()), ("removed", pa.int64()),
                ]),
            )

    return run


def overlap(
    queries: Any,
    collection: Optional[Any],
    spec: str,
    exclude_source: list[str] = (),
) -> SparkOverlapResult:
    """The passage check of ``queries`` against ``collection`` (None: the queries against each
    other, the earliest holder of a passage being its source). Both are DataFrames of ``pos``
    (:func:`numbered`), ``id`` (text, the one id rule), ``id_json`` (as written) and ``text``;
    ``spec`` the library's settings as JSON (``_neardup.passage_spec``)."""
    from pyspark.sql import functions as F

    spark = queries.sparkSession
    sc = spark.sparkContext
    _bound_arrow_batches(spark)
    within = collection is None
    coll = queries if within else collection
    stage_seconds: dict = {}
    max_postings = json.loads(spec)["max_postings"]

    def timed(name: str, df: Any) -> tuple[Any, int]:
        """Computes a stage once, as its own job, named in the Spark UI; records its time. Its
        plan is cut (a local checkpoint): each pass builds on the last, and a plan nesting every
        earlier pass grows with each (Spark describes it whole for every job)."""
        sc.setJobDescription(f"neardup overlap: {name}")
        t = time.perf_counter()
        df = df.localCheckpoint(eager=True)
        n = df.count()
        stage_seconds[name] = stage_seconds.get(name, 0.0) + time.perf_counter() - t
        return df, n

    _refuse_repeated_ids(queries, "the queries" if not within else "the input")
    if not within:
        _refuse_repeated_ids(coll, "--against")
    exclude: list = []
    if exclude_source:
        given = {_id_text(g): g for g in exclude_source}
        found = {r["id"]: r["pos"] for r in coll.where(F.col("id").isin(list(given))).select("id", "pos").collect()}
        for text, g in given.items():
            if text not in found:
                raise InputError(f"--exclude-source {g}: no document of the collection has this id")
        exclude = sorted(found.values())

    # 1. The collection's postings.
    keys = coll.select("pos", "text").mapInArrow(_keys_stage(spec, False), "pos long, key long")
    postings, _ = timed(
        "postings",
        keys.groupBy("key").agg(
            F.slice(F.sort_array(F.collect_list("pos")), 1, max_postings).alias("docs")
        ),
    )
    # 2. The queries' keys joined with them.
    qkeys = queries.select("pos", "text").mapInArrow(_keys_stage(spec, True), "pos long, key long")
    held = (
        qkeys.join(postings, "key")
        .groupBy(F.col("pos").alias("q"))
        .agg(F.collect_list(F.struct("key", "docs")).alias("held"))
    )
    if within:
        own = queries.select(F.col("pos").alias("q"), F.col("pos").alias("own"))
    else:
        own = queries.select(F.col("pos").alias("q"), "id").join(
            coll.select("id", F.col("pos").alias("own")), "id", "left"
        ).select("q", "own")
    pending = (
        queries.select(F.col("pos").alias("q"), "id_json", "text")
        .join(own, "q", "left")
        .join(held, "q", "left")
        .withColumn("texts", F.array().cast("array<struct<doc:long,id_json:string,text:string>>"))
    )
    pending, n_queries = timed("keys", pending)
    sources = coll.select(F.col("pos").alias("doc"), "id_json", "text")

    # 3. Passes of checks, shipping the texts each asks for.
    exclude_l = [int(x) for x in exclude]
    done_parts = []
    passes = 0
    while True:
        passes += 1
        checked, _ = timed("check", pending.mapInArrow(_check_stage(spec, within, exclude_l), _CHECKED))
        done_parts.append(checked.where(F.col("needs").isNull()).drop("needs"))
        needs = checked.where(F.col("needs").isNotNull()).select("q", "needs")
        more = (
            needs.select("q", F.explode("needs").alias("doc"))
            .join(sources, "doc")
            .groupBy("q")
            .agg(F.collect_list(F.struct("doc", "id_json", "text")).alias("more"))
        )
        unfinished = (
            pending.join(more, "q")
            .withColumn("texts", F.concat("texts", "more"))
            .drop("more")
        )
        unfinished, left = timed("ship", unfinished)
        if left != needs.count():
            raise RuntimeError("a query's sources were not found in the collection: a bug, please report it")
        pending = unfinished
        if left == 0:
            break
        if passes >= _MAX_PASSES:
            raise RuntimeError("the passage check did not settle: a bug, please report it")
    done = done_parts[0]
    for d in done_parts[1:]:
        done = done.unionByName(d)
    done, _ = timed("answers", done)

    passages = done.select("q", F.posexplode("lines").alias("i", "line"))
    summaries = done.select("q", F.col("summary").alias("line"))
    rewritten = done.select("q", "text", "removed") if within else None
    counted = done.agg(
        F.sum(F.size("lines")).alias("all"),
        F.sum(F.when(F.get_json_object("summary", "$.copied_chars") > 0, 1).otherwise(0)).alias("with_copies"),
        F.avg(F.get_json_object("summary", "$.copied").cast("double")).alias("mean_copied"),
    ).first()
    quoted = passages.where(F.get_json_object("line", "$.quotation") == "true").count()
    summary = {
        "within": within,
        "queries": n_queries,
        "collection": coll.count(),
        "passages": (counted["all"] or 0) - quoted,
        "quoted": quoted,
        "with_copies": counted["with_copies"] or 0,
        "mean_copied": counted["mean_copied"] or 0.0,
        "passes": passes,
        "stage_seconds": stage_seconds,
    }
    sc.setJobDescription(None)
    return SparkOverlapResult(passages=passages, summaries=summaries, rewritten=rewritten, summary=summary)


# Rows per Arrow batch sent to the checks, unless the user set it: a query's row carries the
# postings of its keys and the texts it asked for (within a corpus of near-copies, hundreds of
# them), and Spark's 10,000 rows made one batch of gigabytes in the JVM's heap.
_ARROW_ROWS = 64


def _bound_arrow_batches(spark: Any) -> None:
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    if spark.sparkContext.getConf().contains(key) or spark.conf.get(key) != "10000":
        return
    spark.conf.set(key, str(_ARROW_ROWS))


def _id_text(given: str) -> str:
    """An id given on the command line as the one id rule reads it: JSON (``"a"``, ``7``), else
    the text as given."""
    try:
        value = json.loads(given)
    except ValueError:
        return given
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return given


def _refuse_repeated_ids(df: Any, what: str) -> None:
    """Refuses two documents of one id (each needs its own, as ``neardup overlap`` says)."""
    from pyspark.sql import functions as F

    twice = df.groupBy("id").agg(F.count(F.lit(1)).alias("n"), F.min("pos").alias("first")) \
        .where(F.col("n") > 1).orderBy("first").first()
    if twice is not None:
        raise InputError(
            f"{what}: id {twice['id']} is given to {twice['n']} documents: each needs its own id "
            "(--id-field chooses the field; 7 and \"7\" are one id)"
        )


_RECORDS = "pos long, status byte, error string, id string, id_json string, text string"


def _records_stage(fields: dict):
    """``(pos, line)`` -> the records of JSON Lines, read by the library's rule for a record."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from neardup import _neardup

        for batch in batches:
            if batch.num_rows == 0:
                continue
            pos = batch.column("pos").to_pylist()
            lines = batch.column("line").cast(pa.binary()).to_pylist()
            out = _neardup.passage_records(lines, **fields)
            cols = list(zip(*out))
            ids = [i if i is not None else str(p) for i, p in zip(cols[2], pos)]
            written = [w if w is not None else str(p) for w, p in zip(cols[3], pos)]
            yield pa.RecordBatch.from_arrays(
                [pa.array(pos, pa.int64()), pa.array(cols[0], pa.int8()), pa.array(cols[1], pa.string()),
                 pa.array(ids, pa.string()), pa.array(written, pa.string()), pa.array(cols[4], pa.string())],
                names=["pos", "status", "error", "id", "id_json", "text"],
            )

    return run


def read_jsonl(spark: Any, paths: list, fields: dict, skip_bad: bool) -> tuple[Any, int]:
    """JSON Lines records as :func:`overlap` takes them (``pos``, ``id``, ``id_json``, ``text``,
    and ``line``, the line as read), each line read as ``neardup overlap`` reads it; a record
    without an id is named by its position (the CLI's FILE:LINE needs a line number, which
    Spark's reader does not give). Returns the records and the bad lines skipped."""
    from pyspark.sql import functions as F

    lines = numbered(spark.read.text(paths, lineSep="\n").where(F.length("value") > 0))
    read = lines.select("pos", F.col("value").alias("line")).mapInArrow(_records_stage(fields), _RECORDS)
    records = read.join(lines.select("pos", F.col("value").alias("line")), "pos")
    bad = records.where(F.col("status") == 2)
    first = bad.orderBy("pos").select("pos", "error").first()
    skipped = 0
    if first is not None:
        if not skip_bad:
            raise InputError(
                f"a line is not a record: {first['error']} (the record at position {first['pos']}; "
                "--skip-bad skips bad records)"
            )
        skipped = bad.count()
    docs = records.where(F.col("status").isin(0, 3)).withColumn("tokens", F.col("status") == 3)
    return docs.drop("status", "error"), skipped


def read_parquet(spark: Any, paths: list, text_field: str, id_field: Optional[str]) -> tuple[Any, Any]:
    """Parquet rows as :func:`overlap` takes them (``pos``, ``id``, ``id_json``, ``text``): the
    text column, the id column (its text, and as written: a string as JSON, a number as its
    digits), else the position as id; and the rows themselves, numbered (``pos``)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    rows = numbered(spark.read.parquet(*paths))
    if text_field not in rows.columns:
        raise InputError(f"no column {text_field!r} (--text-field) in the input; its columns are {rows.columns}")
    name = id_field or "id"
    if id_field is not None and name not in rows.columns:
        raise InputError(f"no column {name!r} (--id-field) in the input; its columns are {rows.columns}")
    position = F.col("pos").cast("string")
    if name in rows.columns:
        idcol = F.col(f"`{name}`")
        if isinstance(rows.schema[name].dataType, T.StringType):
            # A string as JSON: to_json of a one-element array, less its brackets.
            as_json = F.to_json(F.array(idcol))
            written = F.expr("substring(__j, 2, length(__j) - 2)")
            docs = rows.select("pos", idcol.alias("__i"), as_json.alias("__j"), F.col(f"`{text_field}`").alias("text"))
            docs = docs.select("pos", F.coalesce(F.col("__i").cast("string"), position).alias("id"),
                               F.coalesce(F.when(F.col("__i").isNotNull(), written), position).alias("id_json"), "text")
        else:
            docs = rows.select("pos", F.coalesce(idcol.cast("string"), position).alias("id"),
                               F.coalesce(idcol.cast("string"), position).alias("id_json"),
                               F.col(f"`{text_field}`").alias("text"))
    else:
        docs = rows.select("pos", position.alias("id"), position.alias("id_json"),
                           F.col(f"`{text_field}`").alias("text"))
    return docs.where(F.col("text").isNotNull()), rows


# The records as Parquet columns: the keys of `--passages` and `--summary`, ids as their JSON
# text (a string's value, a number's digits).
PASSAGE_SCHEMA = (
    "query string, start long, end long, source string, source_start long, source_end long, "
    "similarity double, evidence double, start_byte long, end_byte long, "
    "source_start_byte long, source_end_byte long, also array<string>, quotation boolean, "
    "exclusion string"
)
SUMMARY_SCHEMA = (
    "query string, chars long, copied_chars long, copied double, copied_with_quotations double, "
    "excluded_chars long, sources array<struct<id:string,chars:long,copied:double,quoted_chars:long>>"
)


def _splice_stage(fields: dict):
    """``(pos, line, text)`` -> ``(pos, line)``: the line with its text field's value replaced."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from neardup import _neardup

        for batch in batches:
            if batch.num_rows == 0:
                continue
            lines = _neardup.passage_splice(
                batch.column("line").cast(pa.binary()).to_pylist(), batch.column("text").to_pylist(),
                fields["text_field"], fields["id_field"], fields["tokens_field"], fields["lossy"],
            )
            yield pa.RecordBatch.from_arrays([batch.column("pos"), pa.array(lines, pa.string())],
                                             names=["pos", "line"])

    return run


def refuse_tokens(rows: Any) -> None:
    """--remove rewrites a text field: a record given as tokens has none (the CLI's rule)."""
    from pyspark.sql import functions as F

    if "tokens" in rows.columns:
        given = rows.where(F.col("tokens")).select("id_json").first()
        if given is not None:
            raise InputError(
                f"--remove rewrites a text field, and document {given['id_json']} has tokens "
                "(--tokens-field): give its text")


def write_records(rewritten: Any, rows: Any, fmt: str, path: str, fields: dict,
                  min_chars: Optional[int], text_field: str) -> dict:
    """Writes the input with the passages each record repeats from earlier ones removed (as
    ``neardup overlap -o``): every other field or column as read, in input order; a record left
    shorter than ``min_chars`` characters dropped. Returns what was removed and dropped."""
    from pyspark.sql import functions as F

    new = rewritten.select(F.col("q").alias("pos"), F.col("text").alias("__new"), "removed")
    keep = F.lit(True) if min_chars is None else F.length("__new") >= F.lit(min_chars)
    joined = rows.join(new, "pos")
    counted = joined.agg(F.sum("removed").alias("removed"),
                         F.sum(F.when(keep, 0).otherwise(1)).alias("dropped")).first()
    kept = joined.where(keep)
    if fmt == "jsonl":
        spliced = kept.select("pos", "line", F.col("__new").alias("text")).mapInArrow(
            _splice_stage(fields), "pos long, line string")
        spliced.orderBy("pos").select("line").write.mode("errorifexists").text(path)
    else:
        columns = [c for c in rows.columns if c != "pos"]
        out = kept.withColumn(text_field, F.col("__new").cast(rows.schema[text_field].dataType))
        out.orderBy("pos").select(*[F.col(f"`{c}`") for c in columns]) \
            .write.mode("errorifexists").parquet(path)
    return {"removed": counted["removed"] or 0, "dropped": counted["dropped"] or 0}
