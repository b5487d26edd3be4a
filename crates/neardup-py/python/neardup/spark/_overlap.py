"""The passage job on Spark (``python -m neardup.spark overlap``): which passages of each query
are copied from which documents of a collection (``--against``), or which passages the
documents of one corpus repeat from earlier ones, with the answers ``neardup overlap`` gives.

The library's engine runs in the executors, in parts (``neardup::overlap::parts``), and what
moves between them moves packed in few large rows, never a row per key:

1. the records are read once (JSON Lines by the library's rule) and kept, numbered in input
   order;
2. each document gives its winnowed keys (what an index posts) and each query the key of
   every k-gram, as packed ``(document, key)`` pairs by bucket of keys; shuffled by bucket,
   each key keeps its first ``max_postings`` holders and is joined with the queries asking for
   it, packed by group of queries (about 4 MB of their text), each key's list once to a group;
3. each group's queries are checked together, with their postings and the texts shipped to the
   group, each text once (and its hashes computed once per worker thread): a check that lacks
   the texts of the sources it would align next says which, they are shipped to its group, and
   the group's unfinished queries are checked again, until every query is done (most are in
   two passes). The answer depends only on the texts it used, so it is the CLI's. The first
   pass, which only learns what to ship (and answers the queries of no candidate), reads each
   list's first holders and its length, not the whole list.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from ..errors import InputError
from ._graph import shuffle_partitions_line

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
        if s.get("skipped"):
            lines.append(f"  {s['skipped']} bad lines skipped (--skip-bad)")
        if s.get("removed") is not None:
            lines.append(f"  {s['removed']} characters removed; {s['dropped']} records dropped")
        lines.append(
            f"  {s['passes']} passes; time "
            + ", ".join(f"{k} {v:.1f} s" for k, v in s["stage_seconds"].items())
        )
        if s.get("shuffle_partitions"):
            lines.append(shuffle_partitions_line(s))
        return "\n".join(lines)


def numbered(df: Any) -> Any:
    """``df`` with ``pos``: dense numbers from 0 in the order Spark reads its rows (the numbers
    a passage index gives, below 2**32), persisted so that they stay."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    return _dense(df.withColumn("__mid", F.monotonically_increasing_id()).persist(
        StorageLevel.MEMORY_AND_DISK_DESER))


def _dense(marked: Any) -> Any:
    """``marked`` (persisted, its rows numbered by ``monotonically_increasing_id`` in ``__mid``)
    with ``pos`` instead: dense numbers from 0 in the same order."""
    from pyspark.sql import functions as F

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


# Packed pairs (`passage_pairs`) gathered before they are written, a row per bucket and kind:
# a shuffle moves few large rows, not a row per key.
_PAIR_BYTES = 16 << 20


def _pairs_stage(spec: str, holders: bool, queries: bool, buckets: int):
    """``(pos, text)`` -> ``(bucket, kind, part)``: the texts' keys as packed pairs by bucket,
    kind 0 a holder's winnowed keys, kind 1 a query's every key."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from neardup import _neardup

        held: dict = {}
        size = 0

        def flush() -> Iterator:
            if held:
                keys = sorted(held)
                yield pa.RecordBatch.from_arrays(
                    [pa.array([b for b, _ in keys], pa.int32()), pa.array([k for _, k in keys], pa.int8()),
                     pa.array([b"".join(held[k]) for k in keys], pa.binary())],
                    names=["bucket", "kind", "part"],
                )
                held.clear()

        for batch in batches:
            if batch.num_rows == 0:
                continue
            for bucket, kind, part in _neardup.passage_pairs(
                spec, batch.column("pos").to_numpy(), batch.column("text"), holders, queries, buckets
            ):
                held.setdefault((bucket, kind), []).append(part)
                size += len(part)
            if size >= _PAIR_BYTES:
                yield from flush()
                size = 0
        yield from flush()

    return run


# The bytes of a batch a stage gives the JVM, which reads it whole into its heap.
_BATCH_BYTES = 16 << 20


def _held_batch(rows: list) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [pa.array([g for g, _, _ in rows], pa.int64()), pa.array([f for _, f, _ in rows], pa.bool_()),
         pa.array([h for _, _, h in rows], pa.binary())],
        names=["g", "first", "held"],
    )


def _join_stage(spec: str, group: int, within: bool, exclude: list):
    """The rows of a shuffle by bucket -> ``(g, first, held)``: each group's postings of its
    queries' keys, packed, whole (``first`` false) and as the first pass reads them."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from neardup import _neardup

        kinds, parts = [], []
        for batch in batches:
            if batch.num_rows:
                kinds.extend(batch.column("kind").to_pylist())
                parts.extend(batch.column("part").to_pylist())
        if not parts:
            return
        out = _neardup.passage_join(spec, kinds, parts, group, within, exclude)
        del kinds, parts
        # Batches of a few megabytes: the JVM reads a batch whole into its heap.
        rows: list = []
        size = 0
        for g, f, h in out:
            rows.append((g, f, h))
            size += len(h)
            if size >= _BATCH_BYTES:
                yield _held_batch(rows)
                rows, size = [], 0
        if rows:
            yield _held_batch(rows)

    return run


_CHECKED = ("q long, needs array<long>, lines array<string>, summary string, text string, "
            "removed long")

# The kinds of row of the check's input: a text shipped to group g, a part of the group's
# postings, or a query of it.
_SHIPPED, _HELD, _QUERY = 0, 1, 2


def _check_stage(spec: str, within: bool, exclude: list, first: bool):
    """A pass of checks over rows sorted by group: each group's queries, with its postings and
    the texts shipped to it (each once), checked together; ``first``: the postings are the
    lists' first holders (the first pass)."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from neardup import _neardup

        schema = pa.schema([
            ("q", pa.int64()), ("needs", pa.list_(pa.int64())), ("lines", pa.list_(pa.string())),
            ("summary", pa.string()), ("text", pa.string()), ("removed", pa.int64()),
        ])

        def check(rows: list) -> Iterator:
            table = pa.Table.from_batches(rows)
            kind = table.column("kind")
            shipped = table.filter(pc.equal(kind, _SHIPPED))
            held = table.filter(pc.equal(kind, _HELD)).column("held").to_pylist()
            asked = table.filter(pc.equal(kind, _QUERY))
            if asked.num_rows == 0:
                return
            qs = asked.column("pos").to_pylist()
            out = _neardup.passage_check_group(
                spec, within, exclude, qs, asked.column("own").to_pylist(),
                asked.column("id_json").to_pylist(), asked.column("text"), held, first,
                shipped.column("pos").to_pylist(), shipped.column("id_json").to_pylist(),
                shipped.column("text"),
            )
            yield pa.RecordBatch.from_pylist(
                [
                    {"q": q, "needs": needs, "lines": lines, "summary": summary,
                     "text": rewritten[0] if rewritten else None,
                     "removed": rewritten[1] if rewritten else None}
                    for q, (needs, lines, summary, rewritten) in zip(qs, out)
                ],
                schema=schema,
            )

        rows: list = []
        current = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            g = batch.column("g").to_numpy()
            cuts = [0, *(np.flatnonzero(g[1:] != g[:-1]) + 1).tolist(), len(g)]
            for s, e in zip(cuts, cuts[1:]):
                if current is not None and g[s] != current:
                    yield from check(rows)
                    rows = []
                current = g[s]
                rows.append(batch.slice(s, e - s))
        if rows:
            yield from check(rows)

    return run


# Bytes of query text per group: a group's queries are checked together, with the texts
# shipped to any of them sent once to the group. Larger groups ship fewer copies of a text but
# cost more per group: the check stage of 250,000 documents took 102, 109, 123 and 153 s with
# groups of 2, 4, 8 and 32 MB (BENCHMARKS.md).
_GROUP_BYTES = 4 << 20
_GROUP_MAX = 2048


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

    started = time.perf_counter()
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
        exclude = sorted(int(x) for x in found.values())

    # Groups of queries, checked together: about _GROUP_BYTES of text each.
    mean = queries.agg(F.avg(F.length("text")).alias("m")).first()["m"] or 1.0
    group = max(1, min(_GROUP_MAX, int(_GROUP_BYTES // max(mean, 1.0))))
    buckets = int(spark.conf.get("spark.sql.shuffle.partitions"))
    stage_seconds["ids"] = time.perf_counter() - started

    # 1. The keys of the collection's documents and the queries as packed pairs by bucket;
    # each bucket's postings joined with the keys asked for, by group of queries.
    if within:
        pairs = coll.select("pos", "text").mapInArrow(
            _pairs_stage(spec, True, True, buckets), "bucket int, kind byte, part binary")
    else:
        pairs = coll.select("pos", "text").mapInArrow(
            _pairs_stage(spec, True, False, buckets), "bucket int, kind byte, part binary"
        ).unionByName(queries.select("pos", "text").mapInArrow(
            _pairs_stage(spec, False, True, buckets), "bucket int, kind byte, part binary"))
    held, _ = timed("postings", pairs.repartition("bucket").mapInArrow(
        _join_stage(spec, group, within, exclude), "g long, first boolean, held binary"))

    # Each query's own number in the collection, never its source: within a corpus, itself (no
    # join: a join of the queries with themselves moved every text through a shuffle); against
    # one, the document of its id.
    queried = queries.select(F.col("pos").alias("q"), "id", "id_json", "text")
    if within:
        queried = queried.withColumn("own", F.col("q"))
    else:
        queried = queried.join(coll.select("id", F.col("pos").alias("own")), "id", "left")
    pending, n_queries = timed("keys", queried.select(
        "q", "id_json", "text", "own", (F.col("q") / F.lit(group)).cast("long").alias("g")))
    sources = coll.select(F.col("pos").alias("doc"), "id_json", "text")
    wanted = None

    # 2. Passes of checks, each group given the texts any of its queries asked for, once.
    done_parts = []
    passes = 0
    while True:
        passes += 1
        rows = pending.select(
            "g", F.lit(_QUERY).cast("byte").alias("kind"), F.col("q").alias("pos"), "own", "id_json",
            "text", F.lit(None).cast("binary").alias("held"))
        # The postings of the groups with queries left: at the first pass, every group's first
        # holders (it learns what to ship from them); after, the whole lists of the groups left,
        # by a join with them broadcast (a shuffle join moved every posting through one more
        # shuffle each pass: 4.3 GB for the 1M corpus, BENCHMARKS.md).
        first = passes == 1
        left_held = held.where(F.col("first") == F.lit(first)).drop("first")
        if not first:
            left_held = left_held.join(F.broadcast(pending.select("g").distinct()), "g")
        rows = rows.unionByName(left_held.select(
            "g", F.lit(_HELD).cast("byte").alias("kind"), F.lit(None).cast("long").alias("pos"),
            F.lit(None).cast("long").alias("own"), F.lit(None).cast("string").alias("id_json"),
            F.lit(None).cast("string").alias("text"), "held"))
        if wanted is not None:
            rows = rows.unionByName(wanted.join(sources, "doc").select(
                "g", F.lit(_SHIPPED).cast("byte").alias("kind"), F.col("doc").alias("pos"),
                F.lit(None).cast("long").alias("own"), "id_json", "text",
                F.lit(None).cast("binary").alias("held")))
        grouped = rows.repartition("g").sortWithinPartitions("g", "kind")
        checked, _ = timed("check", grouped.mapInArrow(_check_stage(spec, within, exclude, first), _CHECKED))
        done_parts.append(checked.where(F.col("needs").isNull()).drop("needs"))
        needs = checked.where(F.col("needs").isNotNull()).select(
            "q", (F.col("q") / F.lit(group)).cast("long").alias("g"), F.explode("needs").alias("doc"))
        asked = needs.select("g", "doc")
        wanted, shipped = timed("ship", (asked if wanted is None else wanted.unionByName(asked)).distinct())
        pending, left = timed("pending", pending.join(needs.select("q").distinct(), "q", "left_semi"))
        if left == 0:
            break
        if wanted.join(sources, "doc", "left_anti").first() is not None:
            raise RuntimeError("a query's sources were not found in the collection: a bug, please report it")
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


# Rows per Arrow batch, unless the user set it: a row of the check's input is a document's text
# (up to --max-doc-bytes) or a part of a group's postings (about a megabyte), and Spark's 10,000
# rows made one batch of gigabytes in the JVM's heap.
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


_RECORDS = "pos long, status byte, error string, id string, id_json string, text string, line string"


def _records_stage(fields: dict):
    """``(pos, line)`` -> the records of JSON Lines, read by the library's rule for a record."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from neardup import _neardup
        from neardup.spark._stages import _large_binary_buffers

        def strings(out: dict, name: str, n: int, valid: Any = None) -> Any:
            return pa.Array.from_buffers(
                pa.large_string(), n,
                [valid, pa.py_buffer(out[f"{name}_offsets"]), pa.py_buffer(out[f"{name}_data"])])

        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            offsets, data = _large_binary_buffers(batch.column("line"))
            out = _neardup.passage_records(offsets, data, **fields)
            errors: list = [None] * n
            for row, message in out["errors"]:
                errors[row] = message
            valid = pa.array(out["id_valid"]).buffers()[1]
            yield pa.RecordBatch.from_arrays(
                [batch.column("pos"), pa.array(out["status"]).cast(pa.int8()), pa.array(errors, pa.string()),
                 strings(out, "id", n, valid), strings(out, "id_json", n, valid), strings(out, "text", n),
                 batch.column("line")],
                names=["pos", "status", "error", "id", "id_json", "text", "line"],
            )

    return run


def read_jsonl(spark: Any, paths: list, fields: dict, skip_bad: bool) -> tuple[Any, int]:
    """JSON Lines records as :func:`overlap` takes them (``pos``, ``id``, ``id_json``, ``text``,
    and ``line``, the line as read), each line read as ``neardup overlap`` reads it; a record
    without an id is named by its position (the CLI's FILE:LINE needs a line number, which
    Spark's reader does not give). Returns the records and the bad lines skipped."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    # Read once and kept (deserialized): every stage of the check reads the records, and
    # reading them again is a pass of every line through Python. Numbered after, on what is kept.
    lines = spark.read.text(paths, lineSep="\n").where(F.length("value") > 0)
    read = lines.select(F.monotonically_increasing_id().alias("pos"), F.col("value").alias("line")) \
        .mapInArrow(_records_stage(fields), _RECORDS).withColumnRenamed("pos", "__mid") \
        .persist(StorageLevel.MEMORY_AND_DISK_DESER)
    records = _dense(read)
    # A record without an id is named by its number.
    number = F.col("pos").cast("string")
    records = records.withColumn("id", F.coalesce("id", number)).withColumn("id_json", F.coalesce("id_json", number))
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
    # Counted from the answers alone (one each per record): a count of the join below computed
    # the join, a shuffle of the whole input, once more than the write needs.
    counted = new.agg(F.sum("removed").alias("removed"),
                      F.sum(F.when(keep, 0).otherwise(1)).alias("dropped")).first()
    kept = rows.join(new, "pos").where(keep)
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
