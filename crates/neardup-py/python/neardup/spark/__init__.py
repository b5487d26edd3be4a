"""Corpus dedup on Apache Spark: the same verified clusters as ``neardup dedup``, on many
machines (``pip install "neardup[spark]"``).

>>> from neardup.spark import dedup, dedup_jsonl
>>> result = dedup(df, text_col="text", id_col="id", threshold=0.8)
>>> result = dedup_jsonl(spark.read.text("crawl/*.jsonl.gz", lineSep="\\n"), id_field="meta.url")
>>> result.assignments.show()      # id, cluster, cluster_size, kept
>>> result.kept.write.parquet(...)  # the kept rows of df, every column as it was

JSON Lines are read by :func:`dedup_jsonl` from the lines of ``spark.read.text``: the
executors read each line by the library's rule for a record (``neardup dedup``'s), so Spark
parses no JSON and the kept lines are the input's, byte for byte.

The job is DataFrame transformations from input to output; nothing proportional to the corpus
reaches the driver (counts, the banding, and, when they are few, the edges of the clusters).
Its stages, each a named Spark job:

1. **sketch** (``mapInArrow``): the Rust extension sketches each Arrow batch of texts (or reads
   and sketches each batch of lines) on the executor's cores with the GIL released: per
   document its length, its feature-set key, its buckets (each LSH band key, or SimHash table
   key, named with its band) and its sketch bytes (the sorted 32-bit feature hashes that
   verification reads). The run's counts (documents, empty, bad rows) come from the same job.
2. **exact copies**: documents with the same feature-set key, by a fixed-width aggregate
   (count, first position); the first in input order represents its group, as in the CLI. The
   groups of copies are few beside the corpus and are joined back by broadcast.
3. **candidates**: the representatives' buckets shuffled by bucket; in each partition the
   extension pairs the members of each bucket by the library's rule (``bucket_candidates``),
   skew guard included: a bucket of more than ``max_bucket`` documents (near-copies of one
   text, boilerplate) pairs only its first ``star_width`` members with every other member, so
   its cost is linear; such buckets are counted in the summary.
4. **verify** (``mapInArrow``): each candidate pair joined with both sketches and checked
   exactly in Rust (the CLI's ``verify``).
5. **components**: connected components of the verified pairs and the exact-copy edges: up to
   5 million edges on the driver with the library's union-find, else with the large-star /
   small-star algorithm (Kiveris et al. 2014), iterated until the edges stop changing; a
   component is named by its first member's position.
6. **keep**: the keeper rule (``first`` in input order, ``longest``, ``shortest``, or by a
   column or field, ``max:FIELD`` / ``min:FIELD``, read in the sketch stage by the library's
   rule; ties, and rows without a value, to the first), then the kept rows.

What crosses each shuffle: (feature-set key, count, position) in stage 2; (bucket, position)
in stage 3, a bucket being one long; (position, sketch bytes) of the candidates' ends only in
stage 4 (the sketches are filtered to them by a broadcast first); (position, cluster, length)
in stage 6.
"""

from __future__ import annotations

from ..errors import InputError, InputTypeError, OptionError

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

__all__ = ["dedup", "dedup_jsonl", "SparkDedupResult", "connected_components"]

# Up to this many clustered documents are broadcast to the corpus's partitions at the end.
_BROADCAST_ROWS = 2_000_000

# The per-process sketcher, rebuilt only when the settings change (executors reuse it across
# batches and tasks).
_SKETCHER: dict = {}


def _sketcher(job: str) -> Any:
    """The sketcher of a job (the library's ``JobSpec`` as JSON, made on the driver)."""
    import neardup

    sk = _SKETCHER.get(job)
    if sk is None:
        sk = neardup._neardup.Sketcher(job)
        _SKETCHER.clear()
        _SKETCHER[job] = sk
    return sk


def _max_doc_bytes(value: Optional[int]) -> int:
    """``max_doc_bytes`` as the CLI takes ``--max-doc-bytes``: None is its default (32 MiB), and
    a value must be from 1 to 2 GiB."""
    from neardup import _neardup

    if value is None:
        return _neardup.DEFAULT_MAX_DOC_BYTES
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputTypeError(f"max_doc_bytes must be an int, not {type(value).__name__}")
    if not 1 <= value <= _neardup.MAX_DOC_BYTES:
        raise OptionError(f"max_doc_bytes must be between 1 and {_neardup.MAX_DOC_BYTES} (2 GiB), not {value}")
    return value


def _binary_array(offsets: Any, data: Any) -> Any:
    import pyarrow as pa

    return pa.Array.from_buffers(
        pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _rank_columns(batch: Any, field: str) -> tuple[Any, Any]:
    """The keep rule's values of a batch (its `rank_src` column) as the library reads them: a
    double column (null for none) and their kinds (0 none, 1 number, 2 date). A value it
    cannot read is an InputError naming its position."""
    import numpy as np
    import pyarrow as pa

    from neardup import _neardup
    from neardup._input import rank_json

    values = batch.column("rank_src").to_pylist()
    try:
        numbers, kinds = _neardup.rank_values(rank_json(values, field), field, 0)
    except (InputError, InputTypeError):
        # Say which document: the first value that fails alone.
        for pos, v in zip(batch.column("pos").to_pylist(), values):
            try:
                _neardup.rank_values(rank_json([v], field), field, 0)
            except (InputError, InputTypeError) as e:
                raise InputError(f"the document at position {pos}: {str(e).split(': ', 1)[-1]}") from None
        raise
    return pa.array(numbers, mask=np.isnan(numbers)), pa.array(kinds)


def _sketch_output(out: dict, n: int) -> tuple[list, list]:
    """The sketch columns of a batch from the extension's arrays."""
    import numpy as np
    import pyarrow as pa

    b = out["buckets"].shape[1]
    buckets = pa.ListArray.from_arrays(
        pa.array(np.arange(0, n * b + 1, b, dtype=np.int32)), pa.array(out["buckets"].reshape(-1))
    )
    exact = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(16), n, [None, pa.py_buffer(np.ascontiguousarray(out["exact"]))]
    )
    columns = [
        pa.array(out["len"]),
        pa.array(out["empty"]),
        exact.cast(pa.binary()),
        buckets,
        _binary_array(out["sketch_offsets"], out["sketch_data"]),
    ]
    return columns, ["len", "empty", "exact", "buckets", "sketch"]


# The sketch stage's columns after (pos, status, error[, id]): status 0 is a document, 1 a line
# that is no record (blank), 2 a bad one (its error says why).
_SKETCH_SCHEMA = "len long, empty boolean, exact binary, buckets array<long>, sketch binary"
_RANK_SCHEMA = ", rank double, rank_kind byte"


def _sketch_batches(settings: str, max_doc_bytes: int, keep_field: Optional[str] = None):
    """The function `mapInArrow` runs on each partition of a DataFrame: (pos, text[, rank_src])
    -> (pos, status, error, sketch columns[, rank, rank_kind]); a null text, or one of more than
    `max_doc_bytes` bytes, is a bad row (not sketched), as `neardup dedup` reads a Parquet row."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa
        import pyarrow.compute as pc

        from neardup._input import as_texts

        sk = _sketcher(settings)
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            text = batch.column("text")
            missing = pc.fill_null(text.is_null(), True)
            large = pc.fill_null(pc.greater(pc.binary_length(text), max_doc_bytes), False)
            bad = pc.or_(missing, large)
            if pc.any(bad).as_py():
                text = pc.if_else(bad, pa.scalar("", text.type), text)
            columns, names = _sketch_output(sk.sketch(as_texts(text)), n)
            status = pc.if_else(bad, pa.scalar(2, pa.int8()), pa.scalar(0, pa.int8()))
            error = pc.if_else(
                missing, pa.scalar("null text"),
                pc.if_else(large, pa.scalar(f"document is larger than --max-doc-bytes {max_doc_bytes}"),
                           pa.scalar(None, pa.string())),
            )
            columns = [batch.column("pos"), status, error] + columns
            names = ["pos", "status", "error"] + names
            if keep_field is not None:
                columns.extend(_rank_columns(batch, keep_field))
                names.extend(["rank", "rank_kind"])
            yield pa.RecordBatch.from_arrays(columns, names=names)

    return run


def _large_binary_buffers(arr: Any) -> tuple[Any, Any]:
    """The (int64 offsets, uint8 data) numpy views of a string or binary Arrow array."""
    import numpy as np
    import pyarrow as pa

    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    _, offsets, data = arr.buffers()[:3]
    o = np.frombuffer(offsets, dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    d = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return np.ascontiguousarray(o), d


def _sketch_lines(settings: str, fields: dict):
    """The function `mapInArrow` runs on each partition of JSON Lines: (pos, line) -> (pos,
    status, error, id, sketch columns[, rank, rank_kind]), each line read by the library's rule
    for a record (as `neardup dedup` reads a file's lines)."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa

        sk = _sketcher(settings)
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            line = batch.column("line")
            offsets, data = _large_binary_buffers(line)
            out = sk.sketch_records(offsets, data, **fields)
            columns, names = _sketch_output(out, n)
            errors: list = [None] * n if out["errors"] else []
            for row, message in out["errors"]:
                shown = bytes(data[offsets[row]:offsets[row + 1]][:160]).decode("utf-8", "replace")
                errors[row] = f"{message}; the line begins {shown!r}"
            error = pa.array(errors, pa.string()) if errors else pa.nulls(n, pa.string())
            valid = out["id_valid"]
            ids = pa.Array.from_buffers(
                pa.large_string(), n,
                [pa.array(valid).buffers()[1], pa.py_buffer(out["id_offsets"]), pa.py_buffer(out["id_data"])],
                null_count=int(n - np.count_nonzero(valid)),
            )
            columns = [batch.column("pos"), pa.array(out["status"]).cast(pa.int8()), error, ids] + columns
            names = ["pos", "status", "error", "id"] + names
            if fields.get("keep_field") is not None:
                rank = out["rank"]
                columns += [pa.array(rank, mask=np.isnan(rank)), pa.array(out["rank_kind"]).cast(pa.int8())]
                names += ["rank", "rank_kind"]
            yield pa.RecordBatch.from_arrays(columns, names=names)

    return run


def _bucket_batches(settings: str):
    """The function `mapInArrow` runs on each partition of (bucket, pos) rows shuffled by
    bucket: every row of the partition gathered, then its candidate pairs by the library's rule
    (the skew guard included) as (a, b, null); a partition whose guard limited buckets adds one
    row (partition, null, count)."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa
        from pyspark import TaskContext

        buckets, positions = [], []
        for batch in batches:
            if batch.num_rows:
                buckets.append(batch.column("bucket").to_numpy())
                positions.append(batch.column("pos").to_numpy())
        if not buckets:
            return
        sk = _sketcher(settings)
        (a, b), capped = sk.bucket_candidates(np.concatenate(buckets), np.concatenate(positions))
        step = 1 << 20
        for i in range(0, len(a), step):
            yield pa.RecordBatch.from_arrays(
                [pa.array(a[i:i + step]), pa.array(b[i:i + step]), pa.nulls(len(a[i:i + step]), pa.int64())],
                names=["a", "b", "capped"],
            )
        if capped:
            yield pa.RecordBatch.from_arrays(
                [pa.array([TaskContext.get().partitionId()], pa.int64()), pa.nulls(1, pa.int64()),
                 pa.array([capped], pa.int64())],
                names=["a", "b", "capped"],
            )

    return run


def _verify_batches(settings: str):
    """The function `mapInArrow` runs on candidate pairs: (a, b, sa, sb) -> verified pairs."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa

        sk = _sketcher(settings)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            sims = sk.verify(*_large_binary_buffers(batch.column("sa")), *_large_binary_buffers(batch.column("sb")))
            keep = ~np.isnan(sims)
            if not keep.any():
                continue
            idx = pa.array(np.flatnonzero(keep))
            yield pa.RecordBatch.from_arrays(
                [batch.column("a").take(idx), batch.column("b").take(idx), pa.array(sims[keep])],
                names=["a", "b", "similarity"],
            )

    return run


def connected_components(edges: Any, max_rounds: int = 100, on_round: Any = None) -> Any:
    """Connected components of an undirected graph given as a DataFrame of edges ``(a, b)``
    (longs), by large-star / small-star (Kiveris, Lattanzi, Mirrokni, Rastogi, Vassilvitskii,
    "Connected Components in MapReduce and Beyond", SoCC 2014): each round, large-star links
    every node's larger neighbours to its smallest neighbour (or itself), then small-star links
    each node and its smaller neighbours to the smallest of them; the edge set shrinks to one
    star per component, centred on its smallest node. Returns ``(node, component)`` for every node
    in an edge, the component being its smallest node.
    """
    from pyspark.sql import functions as F

    def normalize(df: Any) -> Any:
        return (
            df.select(F.least("a", "b").alias("a"), F.greatest("a", "b").alias("b"))
            .where(F.col("a") != F.col("b"))
            .distinct()
        )

    def signature(df: Any) -> tuple:
        row = df.agg(F.count(F.lit(1)).alias("n"), F.bit_xor(F.xxhash64("a", "b")).alias("h")).first()
        return (row["n"], row["h"])

    current = normalize(edges).localCheckpoint()
    last = signature(current)
    for round_ in range(max_rounds):
        # Large-star: for each u, m(u) = min(u, N(u)); emit (v, m(u)) for v in N(u), v > u.
        both = current.unionByName(current.select(F.col("b").alias("a"), F.col("a").alias("b")))
        mins = both.groupBy("a").agg(F.min("b").alias("m"))
        large = (
            both.join(mins, "a")
            .where(F.col("b") > F.col("a"))
            .select(F.col("b").alias("a"), F.least(F.col("a"), F.col("m")).alias("b"))
        )
        large = normalize(large)
        # Small-star: orient (u, v) with v < u; m(u) = min(u, N<(u)); emit (v, m) and (u, m).
        oriented = large.select(F.col("b").alias("u"), F.col("a").alias("v"))
        m2 = oriented.groupBy("u").agg(F.min("v").alias("m"))
        small = oriented.join(m2, "u").select(F.col("v").alias("a"), F.col("m").alias("b"))
        small = small.unionByName(m2.select(F.col("u").alias("a"), F.col("m").alias("b")))
        nxt = normalize(small).localCheckpoint()
        sig = signature(nxt)
        if on_round is not None:
            on_round(round_, sig[0])
        current = nxt
        if sig == last:
            break
        last = sig
    else:
        raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")
    # Stars centred on the smallest node: (center, leaf) edges.
    leaves = current.select(F.col("b").alias("node"), F.col("a").alias("component"))
    centers = current.select(F.col("a").alias("node"), F.col("a").alias("component")).distinct()
    return leaves.unionByName(centers).groupBy("node").agg(F.min("component").alias("component"))


# Bytes of input per shuffle partition when neardup chooses the count, and the bounds.
_BYTES_PER_PARTITION = 64 << 20
_MAX_PARTITIONS = 2000


def choose_shuffle_partitions(df: Any) -> Optional[int]:
    """Sets ``spark.sql.shuffle.partitions`` for ``df``'s size when the user has not set it
    (it is not in the Spark configuration and still Spark's default, 200): one partition per
    64 MB of input, at least the default parallelism, at most 2,000. Returns the number set,
    or None when the user's (or an unknown input size) leaves it alone.

    Spark's 200 suits a cluster and a large input; on a small input each partition's fixed
    cost dominates (1,000 documents took 213 s in ``local[4]`` with 200, 64 s with 4)."""
    spark = df.sparkSession
    key = "spark.sql.shuffle.partitions"
    if spark.sparkContext.getConf().contains(key) or spark.conf.get(key) != "200":
        return None
    try:
        # A Scala BigInt, which py4j hands over as a Python int.
        size = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # a DataFrame without a JVM plan (Spark Connect): leave Spark's choice
        return None
    if size <= 0 or size >= 1 << 62:  # Spark's "unknown" is Long.MaxValue
        return None
    n = max(spark.sparkContext.defaultParallelism,
            min(_MAX_PARTITIONS, -(-size // _BYTES_PER_PARTITION)))
    spark.conf.set(key, str(n))
    return n


# The fields of the library's summary that the Spark job counts.
_SUMMARY_FIELDS = (
    "documents", "empty", "clusters", "dropped", "kept", "method", "bands", "rows",
    "candidate_probability", "threshold", "hamming", "verification", "candidates", "verified",
    "exact_duplicates", "capped_buckets", "skipped",
)


@dataclass
class SparkDedupResult:
    """The DataFrames of :func:`dedup` and its summary."""

    assignments: Any
    """Every document: ``id``, ``cluster`` (the position of its cluster's first member, or null
    when alone), ``cluster_size``, ``kept``."""
    kept: Any
    """The kept rows of the input DataFrame, every column as it was."""
    pairs: Optional[Any]
    """Every verified pair ``(a, b, similarity)`` of ids, copies included (``pairs=True``)."""
    summary: dict = field(default_factory=dict)
    """The counts `neardup dedup` prints, and each stage's seconds (``timings=True``)."""

    def print_summary(self) -> str:
        """The summary as ``neardup dedup`` prints it (the library formats it), with the seconds
        of each Spark stage. Returns the text (it prints nothing)."""
        import neardup

        s = self.summary
        fields = {k: s[k] for k in _SUMMARY_FIELDS if s.get(k) is not None}
        if not fields.get("bands"):
            fields.pop("bands", None)
            fields.pop("rows", None)
        lines = ["neardup dedup (spark): " + neardup._neardup.format_summary(json.dumps(fields))]
        if s.get("stage_seconds"):
            lines.append(
                "  time "
                + ", ".join(f"{k} {v:.1f} s" for k, v in s["stage_seconds"].items())
            )
        if s.get("shuffle_partitions"):
            how = ("from the input size; set spark.sql.shuffle.partitions to choose"
                   if s.get("shuffle_partitions_chosen") else "as configured")
            lines.append(f"  {s['shuffle_partitions']} shuffle partitions ({how})")
        return "\n".join(lines)


_COMMON_ARGS = """
        threshold, keep, verify, recall, bands, rows, lsh_weights, method, hamming: as
            ``neardup dedup`` (the same defaults and rules: ``hamming=K`` alone means SimHash
            candidates within K bits, from Manku et al.'s permuted tables as keys).
        pipeline: a :class:`neardup.Pipeline` (default: the ``default`` preset).
        pairs: also compute every verified pair (copies included).
        max_bucket, star_width: the skew guard of the candidate stage (see the module doc; the
            library's rule and defaults, 2,000 and 2, which `neardup dedup` applies too).
        cache_input: persist the input (memory and disk) for the run. Rows are numbered in the
            order Spark reads them, and the kept rows are joined back by number at the end, so
            the numbers must come out the same on both reads: true for a plain read of files
            (Spark splits and reads them the same way each time), not for an arbitrary plan (a
            repartition by range samples). The default caches; pass False for a plain file
            read, or with ``order_col``, to save the cache's memory and time.

    Unless ``spark.sql.shuffle.partitions`` is set (in the Spark configuration, or to anything
    but its default 200), it is set for the session from the input's size: one partition per
    64 MB, at least the default parallelism (:func:`choose_shuffle_partitions`).

    Each stage runs as its own Spark job (named in the Spark UI, its result persisted for the
    stages after it), and its seconds are in ``summary["stage_seconds"]``.
"""


def dedup(
    df: Any,
    text_col: str = "text",
    id_col: Optional[str] = "id",
    threshold: Optional[float] = None,
    pipeline: Any = None,
    keep: Optional[str] = None,
    verify: Optional[str] = None,
    recall: Optional[float] = None,
    bands: Optional[int] = None,
    rows: Optional[int] = None,
    method: Optional[str] = None,
    hamming: Optional[int] = None,
    lsh_weights: Optional[tuple[float, float]] = None,
    pairs: bool = False,
    skip_bad: bool = False,
    max_bucket: Optional[int] = None,
    star_width: Optional[int] = None,
    order_col: Optional[str] = None,
    cache_input: bool = True,
    max_doc_bytes: Optional[int] = None,
) -> SparkDedupResult:
    """Near-duplicate clusters of a Spark DataFrame, as ``neardup dedup`` finds them.

    Args:
        df: the documents, one per row.
        text_col: the column holding the text (string).
        id_col: the column holding the id (any type); None: the position.
        skip_bad: drop rows whose text is null or too large (counted) instead of failing.
        max_doc_bytes: the largest text taken, in UTF-8 bytes (default: the CLI's, 32 MiB); a
            longer one is a bad row, as ``neardup dedup`` reads a Parquet file.
        order_col: a long or int column giving input order (default: the order Spark reads the
            rows in).
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if text_col not in df.columns:
        raise InputError(f"no column {text_col!r} (the text); the columns are {df.columns}")
    if id_col is not None and id_col not in df.columns:
        raise InputError(f"no column {id_col!r} (the id); the columns are {df.columns}")
    if not isinstance(df.schema[text_col].dataType, T.StringType):
        raise InputTypeError(f"column {text_col!r} must be a string column, not {df.schema[text_col].dataType}")
    job = _Job.make(df, pipeline, locals())
    max_doc_bytes = _max_doc_bytes(max_doc_bytes)
    keep_column = None
    if job.keep_field is not None:
        # A column by its whole name, else a dotted path into a struct column.
        keep_column = F.col(f"`{job.keep_field}`") if job.keep_field in df.columns else F.col(job.keep_field)
        try:
            df.select(keep_column)
        except Exception:
            raise InputError(
                f"no column {job.keep_field!r} (of keep={job.keep!r}); the columns are {df.columns}"
            ) from None
    indexed, id_col = _indexed(df, order_col, cache_input, id_col)
    inputs = [F.col("__pos").alias("pos"), F.col(f"`{text_col}`").alias("text")]
    schema = "pos long, status byte, error string, " + _SKETCH_SCHEMA
    if keep_column is not None:
        inputs.append(keep_column.alias("rank_src"))
        schema += _RANK_SCHEMA
    sketched = indexed.select(*inputs).mapInArrow(
        _sketch_batches(job.settings, max_doc_bytes, job.keep_field), schema
    )

    def refuse(first_bad: Any) -> None:
        row = indexed.where(F.col("__pos") == first_bad["pos"]).select(id_col).limit(1).collect()
        shown = row[0][0] if row else first_bad["pos"]
        n = first_bad["bad"]
        what = (f"no text (null {text_col!r})" if first_bad["error"] == "null text"
                else f"a text over max_doc_bytes {max_doc_bytes}")
        raise InputError(
            f"{n} {'row is' if n == 1 else 'rows are'} bad, the first with {what}, id {shown!r}; "
            "use skip_bad=True to skip such rows"
        )

    return job.run(
        indexed, sketched, ids=indexed.select("__pos", F.col(f"`{id_col}`").alias("id")),
        out_cols=[F.col(f"`{c}`") for c in df.columns], skip_bad=skip_bad, refuse=refuse,
        pairs=pairs, order_col=order_col,
    )


dedup.__doc__ += _COMMON_ARGS


def dedup_jsonl(
    lines: Any,
    line_col: str = "value",
    text_field: str = "text",
    id_field: str = "id",
    id_field_named: bool = False,
    tokens_field: str = "tokens",
    lossy: bool = False,
    max_doc_bytes: Optional[int] = None,
    threshold: Optional[float] = None,
    pipeline: Any = None,
    keep: Optional[str] = None,
    verify: Optional[str] = None,
    recall: Optional[float] = None,
    bands: Optional[int] = None,
    rows: Optional[int] = None,
    method: Optional[str] = None,
    hamming: Optional[int] = None,
    lsh_weights: Optional[tuple[float, float]] = None,
    pairs: bool = False,
    skip_bad: bool = False,
    max_bucket: Optional[int] = None,
    star_width: Optional[int] = None,
    cache_input: bool = True,
) -> SparkDedupResult:
    """Near-duplicate clusters of JSON Lines records, as ``neardup dedup`` finds them in a
    file: ``lines`` holds one line per row (``spark.read.text(paths, lineSep="\\n")``, column
    ``value``), and the executors read each line by the library's rule for a record (the fields
    by name, dotted into objects; the id as written; invalid UTF-8, a bad record and a document
    over ``max_doc_bytes``), so Spark parses no JSON. ``kept`` holds the kept lines as they were
    (the ``line_col`` column); ``assignments`` ids are the records' ids (a JSON string's value
    or a number's text), or the position for a record without one (the CLI's ``FILE:LINE``
    needs a line number, which Spark's reader does not give).

    Rows are numbered in the order Spark reads them: a file's lines in order, but several files
    in the order Spark packs their splits (by size), so with many files ``keep="first"`` keeps
    the first in that order, and the kept lines come out in it.

    Args:
        lines: the lines, one per row (blank lines are not records).
        line_col: the column holding them (string).
        text_field, id_field, tokens_field: the fields read (``--text-field`` and so on).
        id_field_named: the id field was chosen by the user: no record having it is an error
            naming it (a misspelt name), as in ``neardup dedup --id-field``.
        lossy: replace invalid UTF-8 with U+FFFD instead of calling the line bad.
        max_doc_bytes: the largest document taken (default: the CLI's, 32 MiB).
        skip_bad: skip bad lines (counted in ``summary["skipped"]``, left out of ``kept``)
            instead of failing on the first.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if line_col not in lines.columns:
        raise InputError(f"no column {line_col!r} (the lines); the columns are {lines.columns}")
    if not isinstance(lines.schema[line_col].dataType, T.StringType):
        raise InputTypeError(f"column {line_col!r} must be a string column, not {lines.schema[line_col].dataType}")
    job = _Job.make(lines, pipeline, locals())
    fields = dict(text_field=text_field, id_field=id_field, tokens_field=tokens_field,
                  keep_field=job.keep_field, lossy=lossy, max_doc_bytes=_max_doc_bytes(max_doc_bytes))
    # Empty lines never reach the executors' reader (a cheap filter; blank ones do, and are
    # no record).
    numbered = lines.where(F.length(F.col(f"`{line_col}`")) > 0).withColumn(
        "__pos", F.monotonically_increasing_id()
    )
    indexed = numbered.persist(StorageLevel.MEMORY_AND_DISK_DESER) if cache_input else numbered
    schema = "pos long, status byte, error string, id string, " + _SKETCH_SCHEMA
    if job.keep_field is not None:
        schema += _RANK_SCHEMA
    sketched = indexed.select(
        F.col("__pos").alias("pos"), F.col(f"`{line_col}`").alias("line")
    ).mapInArrow(_sketch_lines(job.settings, fields), schema)

    def refuse(first_bad: Any) -> None:
        # Which file: a scan of the input, only on this path. A plan of its own (the file name
        # taken before the numbering, which it leaves as it is), or Spark would answer from
        # the input's cache, where no file is known.
        named = (
            lines.select(F.col(f"`{line_col}`"), F.input_file_name().alias("__file"))
            .where(F.length(F.col(f"`{line_col}`")) > 0)
            .withColumn("__pos", F.monotonically_increasing_id())
        )
        where = named.where(F.col("__pos") == first_bad["pos"]).select("__file").first()
        place = f"{where[0]}: " if where and where[0] else ""
        n = first_bad["bad"]
        raise InputError(
            f"{n} {'line is' if n == 1 else 'lines are'} not records; the first: {place}"
            f"{first_bad['error']} (use skip_bad=True, --skip-bad, to skip bad records)"
        )

    def check_ids(stats: Any) -> None:
        if id_field_named and stats["documents"] > 0 and stats["with_id"] == 0:
            raise InputError(
                f"none of the {stats['documents']} records has the field {id_field!r} named as "
                "the id field (check the name; a dotted name such as meta.url reaches into an "
                "object)"
            )

    return job.run(
        indexed, sketched, ids=None, out_cols=[F.col(f"`{line_col}`")], skip_bad=skip_bad,
        refuse=refuse, pairs=pairs, order_col=None, check_stats=check_ids,
    )


dedup_jsonl.__doc__ += _COMMON_ARGS


def _indexed(df: Any, order_col: Optional[str], cache_input: bool, id_col: Optional[str]) -> tuple[Any, Optional[str]]:
    """The input numbered (``__pos``, by ``order_col`` or read order) and, without an id
    column, the position as its id; persisted when ``cache_input``.

    Persisted (filled by the sketch stage's read, not by a pass of its own): the positions of
    monotonically_increasing_id are only stable between computations of a plan that reads the
    same rows into the same partitions, and the kept rows and assignments are joined back to
    them at the end. A plain file read does; with cache_input=False the caller says so."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    order = F.col(order_col) if order_col else F.monotonically_increasing_id()
    indexed = df.withColumn("__pos", order)
    if id_col is None:
        indexed = indexed.withColumn("__id", F.col("__pos"))
        id_col = "__id"
    if cache_input:
        indexed = indexed.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    return indexed, id_col


def _local_frame(spark: Any, table: Any, schema: str) -> Any:
    """A DataFrame of a small pyarrow Table held by the driver, of the Spark schema given (an
    empty table too: Spark cannot infer a schema from no rows)."""
    if table.num_rows == 0:
        return spark.createDataFrame([], schema)
    try:
        return spark.createDataFrame(table, schema)  # Spark 4 takes a pyarrow Table
    except (TypeError, ValueError):
        key = "spark.sql.execution.arrow.pyspark.enabled"
        before = spark.conf.get(key, "false")
        spark.conf.set(key, "true")
        try:
            return spark.createDataFrame(table.to_pandas(), schema)
        finally:
            spark.conf.set(key, before)


def _collect_arrow(df: Any) -> Any:
    """A small DataFrame as a pyarrow Table on the driver."""
    import pyarrow as pa

    if hasattr(df, "toArrow"):  # Spark 4
        return df.toArrow()
    batches = df._collect_as_arrow()
    if not batches:
        return pa.table({c: pa.array([], pa.int64()) for c in df.columns})
    return pa.Table.from_batches(batches)


# Up to this many edges (verified pairs and copies), the clusters are found on the driver with
# the library's union-find (16 bytes an edge, a second at most) instead of the rounds of
# large-star / small-star, each a few Spark jobs.
_LOCAL_EDGES = 5_000_000


@dataclass
class _Job:
    """A run's settings as the library resolved them on the driver."""

    settings: str
    local: Any
    keep: str
    keep_field: Optional[str]
    shuffle_partitions: Optional[int]

    @staticmethod
    def make(df: Any, pipeline: Any, options: dict) -> "_Job":
        import neardup

        shuffle_partitions = choose_shuffle_partitions(df)
        pipeline = pipeline or neardup.Pipeline()
        # The library's JobSpec, checked on the driver at once with the library's messages and
        # defaults; executors receive it as JSON. `options`: the caller's arguments, of which
        # the search options (the library's table) are taken when given.
        search = {r["name"] for r in neardup.options() if r["group"] == "search"}
        settings = neardup._neardup.job_spec(
            pipeline, {k: v for k, v in options.items() if k in search and v is not None}
        )
        local = _sketcher(settings)
        return _Job(settings, local, local.keep, local.keep_field, shuffle_partitions)

    def run(self, indexed: Any, sketched: Any, ids: Any, out_cols: list, skip_bad: bool,
            refuse: Any, pairs: bool, order_col: Optional[str], check_stats: Any = None) -> SparkDedupResult:
        """The stages after the input is numbered: ``sketched`` is the sketch stage's plan,
        ``ids`` (``__pos``, ``id``) the ids' (None: the sketch stage's ``id`` column)."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        spark = indexed.sparkSession
        sc = spark.sparkContext
        local, keep, keep_field = self.local, self.keep, self.keep_field
        n_bands, n_rows = local.banding or (0, 0)
        stage_seconds: dict = {}

        def stage(name: str, df_: Any, *aggs: Any) -> tuple[Any, Any]:
            """Runs a stage as its own job, named in the Spark UI, persisted; records its time.
            The job that fills the cache computes ``aggs`` (or counts the rows) as it goes."""
            sc.setJobDescription(f"neardup dedup: {name}")
            t = time.perf_counter()
            # Deserialized, as Scala's Dataset.cache() keeps it: PySpark's MEMORY_AND_DISK is
            # the serialized level, and serializing the sketch stage's cache (1 GB at 1M
            # documents) cost a third of that stage.
            df_ = df_.persist(StorageLevel.MEMORY_AND_DISK_DESER)
            row = df_.agg(*aggs).first() if aggs else df_.count()
            stage_seconds[name] = stage_seconds.get(name, 0.0) + time.perf_counter() - t
            return df_, row

        # 1. sketch, with the counts of the run in the job that fills the cache.
        is_doc = F.col("status") == 0
        aggs = [
            F.count(F.lit(1)).alias("rows"),
            F.sum(is_doc.cast("long")).alias("documents"),
            F.sum((is_doc & F.col("empty")).cast("long")).alias("empty"),
            F.sum((F.col("status") == 2).cast("long")).alias("bad"),
            F.min(F.when(F.col("status") == 2, F.col("pos"))).alias("first_bad"),
        ]
        if "id" in sketched.columns:
            aggs.append(F.count(F.when(is_doc, F.col("id"))).alias("with_id"))
        if keep_field is not None:
            kind = F.when(F.col("rank_kind") > 0, F.col("rank_kind"))
            aggs += [F.min(kind).alias("kind_lo"), F.max(kind).alias("kind_hi")]
        sketched, stats = stage("sketch", sketched, *aggs)
        documents, skipped = stats["documents"] or 0, stats["bad"] or 0
        if skipped and not skip_bad:
            first = sketched.where(F.col("pos") == stats["first_bad"]).select("pos", "error").first()
            refuse({"pos": first["pos"], "error": first["error"], "bad": skipped})
        if check_stats is not None:
            check_stats({"documents": documents, "with_id": stats["with_id"]})
        if keep_field is not None and documents:
            # One field is compared as numbers or as dates, not both (the library's rule).
            if stats["kind_lo"] is None:
                raise InputError(f"no row has a value in the column {keep_field!r} named by keep={keep!r}")
            if stats["kind_lo"] != stats["kind_hi"]:
                raise InputError(
                    f"the keep field {keep_field!r} holds numbers in some rows and dates in others: "
                    "one field is compared as numbers or as dates, not both"
                )
        # Rows that are no document: left out of every stage, and of the kept rows.
        not_docs = sketched.where(~is_doc).select(F.col("pos").alias("__pos"))
        docs = sketched.where(is_doc)

        def broadcast_or_not(d: Any, n: int) -> Any:
            return F.broadcast(d) if n <= _BROADCAST_ROWS else d

        # 2. exact copies: documents with the same feature-set key, grouped by a fixed-width
        # aggregate (no list, no sort); the first in input order represents its group, as in the
        # CLI. The groups of copies are few: joined back by broadcast, without a shuffle.
        copies, counted = stage(
            "exact copies",
            docs.where(~F.col("empty")).groupBy("exact")
            .agg(F.count(F.lit(1)).alias("n"), F.min("pos").alias("rep"))
            .where(F.col("n") > 1),
            F.count(F.lit(1)).alias("groups"),
            F.sum(F.col("n") - 1).alias("copies"),
        )
        n_groups, n_copies = counted["groups"], counted["copies"] or 0
        membership = (
            docs.where(~F.col("empty")).select("pos", "exact")
            .join(broadcast_or_not(copies.select("exact", "rep"), n_groups), "exact")
            .select("pos", "rep")
        )
        groups = (
            docs.where(~F.col("empty"))
            .join(broadcast_or_not(copies.select("exact", "rep"), n_groups), "exact", "left")
            .where(F.col("rep").isNull() | (F.col("pos") == F.col("rep")))
        )

        # 3. candidates: the representatives' buckets (each candidate key named with its band
        # or table) shuffled by bucket, each partition's pairs found by the library's rule
        # (the skew guard included) in the extension; pairs found in several buckets once.
        rows = groups.select("pos", F.explode("buckets").alias("bucket")).repartition("bucket")
        found = rows.mapInArrow(_bucket_batches(self.settings), "a long, b long, capped long")
        found, counted = stage(
            "candidates", found.distinct(),
            F.count(F.when(F.col("capped").isNull(), 1)).alias("candidates"),
            F.sum("capped").alias("capped"),
        )
        candidates = found.where(F.col("capped").isNull()).select("a", "b")
        n_candidates, capped = counted["candidates"], counted["capped"] or 0

        # 4. verify each candidate with both sketches. Only the candidates' ends need theirs:
        # the sketches are filtered to them first (by broadcast, without moving the others), so
        # the joins shuffle the candidates' sketches, not the corpus's.
        ends = (
            candidates.select(F.col("a").alias("pos"))
            .unionByName(candidates.select(F.col("b").alias("pos")))
            .distinct()
        )
        sk = docs.select("pos", "sketch").join(broadcast_or_not(ends, 2 * n_candidates), "pos", "left_semi")
        joined = (
            candidates.join(sk.select(F.col("pos").alias("a"), F.col("sketch").alias("sa")), "a")
            .join(sk.select(F.col("pos").alias("b"), F.col("sketch").alias("sb")), "b")
            .select("a", "b", "sa", "sb")
        )
        verified = joined.mapInArrow(_verify_batches(self.settings), "a long, b long, similarity double")
        verified, n_verified = stage("verify", verified)

        # 5. connected components of verified pairs and exact-copy edges: on the driver when
        # they are few (the library's union-find), else by large-star / small-star.
        copy_edges = membership.where(F.col("pos") != F.col("rep")).select(
            F.col("rep").alias("a"), F.col("pos").alias("b")
        )
        edges = verified.select("a", "b").unionByName(copy_edges)
        sc.setJobDescription("neardup dedup: components")
        t = time.perf_counter()
        ranked = None
        if n_verified + n_copies <= _LOCAL_EDGES:
            import numpy as np
            import pyarrow as pa

            import neardup

            table = _collect_arrow(edges)
            nodes, comps = neardup._neardup.components(
                table.column("a").to_numpy().astype("int64"), table.column("b").to_numpy().astype("int64")
            )
            if keep == "first":
                # A component is named by its first member, which `first` keeps: the keeper rule
                # needs nothing more than the components themselves.
                _, inverse, counts = np.unique(comps, return_inverse=True, return_counts=True)
                kept_flags = nodes == comps
                ranked = _local_frame(spark, pa.table({
                    "pos": nodes, "cluster": comps, "cluster_size": counts[inverse].astype("int64"),
                    "kept": kept_flags,
                }), "pos long, cluster long, cluster_size long, kept boolean")
                n_clustered, n_dropped = len(nodes), int(len(nodes) - np.count_nonzero(kept_flags))
            else:
                components = _local_frame(
                    spark, pa.table({"node": nodes, "component": comps}), "node long, component long"
                )
        else:
            components = connected_components(edges)
        stage_seconds["components"] = time.perf_counter() - t

        # 6. keeper rule.
        if ranked is None:
            ranked, n_clustered, n_dropped = self._keep(stage, components, docs)
        n_clusters = n_clustered - n_dropped
        # The clustered documents are few beside the corpus: joined to it by broadcast (no
        # shuffle of the corpus), which also keeps the input's partitions in order, so the kept
        # rows come out in input order without a sort. Too many to broadcast (or an order_col,
        # whose order the partitions need not follow): a shuffle join, then a sort by position.
        not_docs_n = stats["rows"] - documents
        small = n_clustered + not_docs_n <= _BROADCAST_ROWS and order_col is None
        side = F.broadcast if small else (lambda d: d)
        # A JSON Lines record without an id is named by its position (the CLI's FILE:LINE needs a
        # line number, which Spark's reader does not give).
        id_rows = ids if ids is not None else docs.select(
            F.col("pos").alias("__pos"), F.coalesce("id", F.col("pos").cast("string")).alias("id")
        )
        assignments = (
            id_rows.join(side(ranked.withColumnRenamed("pos", "__pos")), "__pos", "left")
            .select(
                "__pos",
                "id",
                "cluster",
                F.coalesce("cluster_size", F.lit(1)).alias("cluster_size"),
                F.coalesce("kept", F.lit(True)).alias("kept"),
            )
        )
        if ids is not None and skipped:
            assignments = assignments.join(broadcast_or_not(not_docs, skipped), "__pos", "left_anti")
        dropped = ranked.where(~F.col("kept")).select(F.col("pos").alias("__pos"))
        removed = dropped.unionByName(not_docs) if not_docs_n else dropped
        kept_rows = indexed.join(side(removed), "__pos", "left_anti")
        kept = (kept_rows if small else kept_rows.orderBy("__pos")).select(*out_cols)

        pair_df = None
        if pairs:
            id_of = id_rows.select(F.col("__pos").alias("pos"), "id")
            pair_df = _pairs(verified, membership, id_of)

        summary = {
            "documents": documents,
            "empty": stats["empty"] or 0,
            "clusters": n_clusters,
            "dropped": n_dropped,
            "kept": documents - n_dropped,
            "method": local.method,
            "hamming": local.hamming if local.method != "minhash" else None,
            "bands": n_bands,
            "rows": n_rows,
            "threshold": local.threshold,
            "candidate_probability": local.candidate_probability,
            "verification": local.verification,
            "candidates": n_candidates,
            "verified": n_verified,
            "exact_duplicates": n_copies,
            "capped_buckets": capped,
            "skipped": skipped,
            "stage_seconds": stage_seconds,
            "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
            "shuffle_partitions_chosen": self.shuffle_partitions is not None,
        }
        sc.setJobDescription(None)
        return SparkDedupResult(assignments=assignments.drop("__pos"), kept=kept, pairs=pair_df, summary=summary)

    def _keep(self, stage: Any, components: Any, docs: Any) -> tuple[Any, int, int]:
        """The keeper rule over the clusters: each member's cluster, its size and whether it is
        kept (the job's rule on length or the keep field; ties to the first)."""
        from pyspark.sql import functions as F
        from pyspark.sql.window import Window

        keep, keep_field = self.keep, self.keep_field
        members = components.select(F.col("node").alias("pos"), F.col("component").alias("cluster")).join(
            docs.select("pos", "len", *(["rank"] if keep_field is not None else [])), "pos"
        )
        by_cluster = Window.partitionBy("cluster")
        if keep == "longest":
            rank_order = [F.col("len").desc(), F.col("pos").asc()]
        elif keep == "shortest":
            rank_order = [F.col("len").asc(), F.col("pos").asc()]
        elif keep.startswith("max:"):
            rank_order = [F.col("rank").desc_nulls_last(), F.col("pos").asc()]
        elif keep.startswith("min:"):
            rank_order = [F.col("rank").asc_nulls_last(), F.col("pos").asc()]
        else:
            rank_order = [F.col("pos").asc()]
        ranked = (
            members.withColumn("cluster_size", F.count(F.lit(1)).over(by_cluster))
            .withColumn("rank", F.row_number().over(by_cluster.orderBy(*rank_order)))
            .select("pos", "cluster", "cluster_size", (F.col("rank") == 1).alias("kept"))
        )
        ranked, counted = stage(
            "keep", ranked,
            F.count(F.lit(1)).alias("clustered"),
            F.sum((~F.col("kept")).cast("long")).alias("dropped"),
        )
        return ranked, counted["clustered"], counted["dropped"] or 0


def _pairs(verified: Any, membership: Any, id_of: Any) -> Any:
    """Every verified pair (a, b, similarity) of ids, copies included: a verified pair between
    representatives stands for every copy of one with every copy of the other; a representative
    without copies stands for itself."""
    from pyspark.sql import functions as F

    ga = membership.select(F.col("rep").alias("a"), F.col("pos").alias("x"))
    gb = membership.select(F.col("rep").alias("b"), F.col("pos").alias("y"))
    between = (
        verified.join(ga, "a", "left")
        .withColumn("x", F.coalesce("x", "a"))
        .join(gb, "b", "left")
        .withColumn("y", F.coalesce("y", "b"))
        .select("x", "y", "similarity")
    )
    within = (
        membership.alias("p")
        .join(membership.alias("q"), F.col("p.rep") == F.col("q.rep"))
        .where(F.col("p.pos") < F.col("q.pos"))
        .select(F.col("p.pos").alias("x"), F.col("q.pos").alias("y"), F.lit(1.0).alias("similarity"))
    )
    both = between.unionByName(within).select(
        F.least("x", "y").alias("x"), F.greatest("x", "y").alias("y"), "similarity"
    )
    return (
        both.join(id_of.select(F.col("pos").alias("x"), F.col("id").alias("a")), "x")
        .join(id_of.select(F.col("pos").alias("y"), F.col("id").alias("b")), "y")
        .select("a", "b", "similarity")
    )
