"""Corpus dedup on Apache Spark: the same verified clusters as ``neardup dedup``, on many
machines (``pip install "neardup[spark]"``).

>>> from neardup.spark import dedup
>>> result = dedup(df, text_col="text", id_col="id", threshold=0.8)
>>> result.assignments.show()      # id, cluster, cluster_size, kept
>>> result.kept.write.parquet(...)  # the kept rows of df, every column as it was

The job is DataFrame transformations from input to output; nothing proportional to the corpus
reaches the driver (only counts and the banding). Its stages, each a named Spark job:

1. **sketch** (``mapInArrow``): the Rust extension sketches each Arrow batch of texts on the
   executor's cores with the GIL released: per document its length, its feature-set key, its LSH
   band keys and its sketch bytes (the sorted 32-bit feature hashes that verification reads).
2. **exact copies**: documents with the same feature-set key form a group (shuffle by key); the
   first in input order represents it, as in the CLI, and carries its band keys on.
3. **buckets** and **candidates**: the representatives' band keys exploded and grouped by
   (band, key) with a fixed-width aggregate (count, min, max), so that the many buckets of one
   document cost no list; a bucket of two is its pair, and only buckets of three or more are
   gathered as lists. Skew plan: a bucket of more than ``max_bucket`` documents (near-copies of
   one text, boilerplate) pairs only its first ``star_width`` members with every other member
   instead of all pairs, so its cost is linear; such buckets are counted in the summary.
4. **verify** (``mapInArrow``): each candidate pair joined with both sketches and checked
   exactly in Rust (the CLI's ``verify``).
5. **components**: connected components of the verified pairs and the exact-copy edges with the
   large-star / small-star algorithm (Kiveris et al. 2014), iterated until the edges stop
   changing; a component is named by its first member's position.
6. **keep**: the keeper rule (``first`` in input order, ``longest``, ``shortest``, or by a
   column, ``max:COLUMN`` / ``min:COLUMN``, read in the sketch stage by the library's rule;
   ties, and rows without a value, to the first), then the kept rows.

What crosses each shuffle: (exact key, position, band keys) in stage 2; (bucket, count, smallest
and largest position) in stage 3, and (bucket, position) for buckets of three or more, a bucket
being the hash of (band, key);
(position, sketch bytes) of the candidates' ends only in stage 4 (the sketches are filtered to
them by a broadcast first); edges (two longs) in
stage 5; (position, cluster, length) in stage 6.
"""

from __future__ import annotations

from ..errors import InputError, InputTypeError

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

__all__ = ["dedup", "SparkDedupResult", "connected_components"]

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


def _sketch_batches(settings: dict, keep_field: Optional[str] = None):
    """The function `mapInArrow` runs on each partition: (pos, text[, rank_src]) -> sketch
    columns (and the keep rule's `rank`, `rank_kind`)."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa

        from neardup._input import as_texts

        sk = _sketcher(settings)
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            text = batch.column("text")
            missing = text.is_null()
            if text.null_count:
                text = pa.compute.fill_null(text, "")
            out = sk.sketch(as_texts(text))
            b = out["keys"].shape[1]
            keys = pa.ListArray.from_arrays(
                pa.array(np.arange(0, n * b + 1, b, dtype=np.int32)),
                pa.array(out["keys"].reshape(-1)),
            )
            exact = pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(16), n, [None, pa.py_buffer(np.ascontiguousarray(out["exact"]))]
            )
            columns = [
                batch.column("pos"),
                missing,
                pa.array(out["len"]),
                pa.array(out["empty"]),
                exact.cast(pa.binary()),
                keys,
                _binary_array(out["sketch_offsets"], out["sketch_data"]),
            ]
            names = ["pos", "missing", "len", "empty", "exact", "keys", "sketch"]
            if keep_field is not None:
                columns.extend(_rank_columns(batch, keep_field))
                names.extend(["rank", "rank_kind"])
            yield pa.RecordBatch.from_arrays(columns, names=names)

    return run


def _verify_batches(settings: dict):
    """The function `mapInArrow` runs on candidate pairs: (a, b, sa, sb) -> verified pairs."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa

        sk = _sketcher(settings)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            cols = []
            for name in ("sa", "sb"):
                arr = batch.column(name)
                if not pa.types.is_large_binary(arr.type):
                    arr = arr.cast(pa.large_binary())
                _, offsets, data = arr.buffers()[:3]
                o = np.frombuffer(offsets, dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
                d = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
                cols += [np.ascontiguousarray(o), d]
            sims = sk.verify(*cols)
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
) -> SparkDedupResult:
    """Near-duplicate clusters of a Spark DataFrame, as ``neardup dedup`` finds them.

    Args:
        df: the documents, one per row.
        text_col: the column holding the text (string).
        id_col: the column holding the id (any type); None: the position.
        threshold, keep, verify, recall, bands, rows, lsh_weights, method, hamming: as
            ``neardup dedup`` (the same defaults and rules: ``hamming=K`` alone means SimHash
            candidates within K bits, from Manku et al.'s permuted tables as keys).
        pipeline: a :class:`neardup.Pipeline` (default: the ``default`` preset).
        pairs: also compute every verified pair (copies included).
        skip_bad: drop rows whose text is null (counted) instead of failing.
        max_bucket, star_width: the skew guard of the candidate stage (see the module doc; the
            library's rule and defaults, 2,000 and 2, which `neardup dedup` applies too).
        order_col: a column giving input order (default: the order Spark reads the rows in).

    Unless ``spark.sql.shuffle.partitions`` is set (in the Spark configuration, or to anything
    but its default 200), it is set for the session from the input's size: one partition per
    64 MB, at least the default parallelism (:func:`choose_shuffle_partitions`).
        cache_input: persist ``df`` (memory and disk) for the run. Rows are numbered in the order
            Spark reads them, and the kept rows are joined back by number at the end, so the
            numbers must come out the same on both reads: true for a plain read of files (Spark
            splits and reads them the same way each time), not for an arbitrary plan (a
            repartition by range samples). The default caches; pass False for a plain file
            read, or with ``order_col``, to save the cache's memory and time.

    Each stage runs as its own Spark job (named in the Spark UI, its result persisted for the
    stages after it), and its seconds are in ``summary["stage_seconds"]``.
    """
    import neardup
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if text_col not in df.columns:
        raise InputError(f"no column {text_col!r} (the text); the columns are {df.columns}")
    if id_col is not None and id_col not in df.columns:
        raise InputError(f"no column {id_col!r} (the id); the columns are {df.columns}")
    if not isinstance(df.schema[text_col].dataType, T.StringType):
        raise InputTypeError(f"column {text_col!r} must be a string column, not {df.schema[text_col].dataType}")
    spark = df.sparkSession
    sc = spark.sparkContext
    shuffle_partitions = choose_shuffle_partitions(df)
    pipeline = pipeline or neardup.Pipeline()
    options = {
        "threshold": threshold, "keep": keep, "verify": verify, "recall": recall,
        "bands": bands, "rows": rows, "method": method, "hamming": hamming,
        "lsh_weights": lsh_weights, "max_bucket": max_bucket, "star_width": star_width,
    }
    # The library's JobSpec, checked on the driver at once with the library's messages and
    # defaults; executors receive it as JSON.
    settings = neardup._neardup.job_spec(
        pipeline, {k: v for k, v in options.items() if v is not None}
    )
    local = _sketcher(settings)
    n_bands, n_rows = local.banding or (0, 0)
    keep = local.keep
    keep_field = local.keep_field
    if keep_field is not None:
        # A column by its whole name, else a dotted path into a struct column.
        keep_column = F.col(f"`{keep_field}`") if keep_field in df.columns else F.col(keep_field)
        try:
            df.select(keep_column)
        except Exception:
            raise InputError(
                f"no column {keep_field!r} (of keep={keep!r}); the columns are {df.columns}"
            ) from None
    threshold = local.threshold
    max_bucket, star_width = local.max_bucket, local.star_width
    stage_seconds: dict = {}

    def stage(name: str, df_: Any) -> Any:
        """Runs a stage as its own job, named in the Spark UI, persisted; records its time."""
        sc.setJobDescription(f"neardup dedup: {name}")
        t = time.perf_counter()
        df_ = df_.persist(StorageLevel.MEMORY_AND_DISK)
        df_.count()
        stage_seconds[name] = stage_seconds.get(name, 0.0) + time.perf_counter() - t
        return df_

    order = F.col(order_col) if order_col else F.monotonically_increasing_id()
    indexed = df.withColumn("__pos", order)
    if id_col is None:
        indexed = indexed.withColumn("__id", F.col("__pos"))
        id_col = "__id"
    # Persisted (filled by the sketch stage's read, not by a pass of its own): the positions of
    # monotonically_increasing_id are only stable between computations of a plan that reads
    # the same rows into the same partitions, and the kept rows and assignments are joined back
    # to them at the end. A plain file read does; with cache_input=False the caller says so.
    if cache_input:
        indexed = indexed.persist(StorageLevel.MEMORY_AND_DISK)

    # 1. sketch (a null text is flagged here, so that finding one costs no pass of its own)
    schema = (
        "pos long, missing boolean, len long, empty boolean, exact binary, keys array<long>, "
        "sketch binary"
    )
    inputs = [F.col("__pos").alias("pos"), F.col(f"`{text_col}`").alias("text")]
    if keep_field is not None:
        schema += ", rank double, rank_kind byte"
        inputs.append(keep_column.alias("rank_src"))
    sketched = indexed.select(*inputs).mapInArrow(_sketch_batches(settings, keep_field), schema)
    sketched = stage("sketch", sketched)
    if keep_field is not None:
        # One field is compared as numbers or as dates, not both (the library's rule).
        kinds = sorted(r[0] for r in sketched.where(F.col("rank_kind") > 0).select("rank_kind").distinct().collect())
        if len(kinds) > 1:
            raise InputError(
                f"the keep field {keep_field!r} holds numbers in some rows and dates in others: "
                "one field is compared as numbers or as dates, not both"
            )
        if not kinds:
            raise InputError(f"no row has a value in the column {keep_field!r} named by keep={keep!r}")
    skipped = 0
    missing = sketched.where(F.col("missing"))
    if skip_bad:
        skipped = missing.count()
        if skipped:
            indexed = indexed.where(F.col(f"`{text_col}`").isNotNull())
            sketched = sketched.where(~F.col("missing"))
    else:
        first_bad = missing.select("pos").limit(1).collect()
        if first_bad:
            pos = first_bad[0][0]
            row = indexed.where(F.col("__pos") == pos).select(id_col).limit(1).collect()
            shown = row[0][0] if row else pos
            raise InputError(
                f"a row has no text (null {text_col!r}), e.g. id {shown!r}; use "
                "skip_bad=True to skip such rows"
            )

    # 2. exact copies: the first of each feature-set key represents it (one shuffle by key, a
    # window over each key's documents); only representatives keep their band keys.
    from pyspark.sql.window import Window

    by_key = Window.partitionBy("exact")
    grouped = (
        sketched.where(~F.col("empty"))
        .select("pos", "exact", "keys")
        .withColumn("rep", F.min("pos").over(by_key))
        .withColumn("copies", F.count(F.lit(1)).over(by_key))
        .select(
            "pos",
            "rep",
            "copies",
            F.when(F.col("pos") == F.col("rep"), F.col("keys")).alias("keys"),
        )
    )
    grouped = stage("exact copies", grouped)
    membership = grouped.where(F.col("copies") > 1).select("pos", "rep")
    groups = grouped.where(F.col("pos") == F.col("rep"))

    # 3. candidates from the band keys. Most buckets hold one representative: a fixed-width
    # aggregate (count, min, max) finds the others without building lists; a bucket of two
    # is its pair (min, max), and only buckets of three or more are gathered as lists.
    # A bucket is named by one long, the hash of (band, key): two buckets sharing a name
    # (probability about 2^-64 per pair) only add candidates, which verification rejects.
    banded = groups.select("pos", F.posexplode("keys").alias("band", "key")).select(
        "pos", F.xxhash64("band", "key").alias("bucket")
    )
    buckets = (
        banded.groupBy("bucket")
        .agg(F.count(F.lit(1)).alias("n"), F.min("pos").alias("lo"), F.max("pos").alias("hi"))
        .where(F.col("n") > 1)
    )
    buckets = stage("buckets", buckets)
    big = buckets.where(F.col("n") > 2).select("bucket")
    # The big buckets are few beside the exploded keys: broadcast them (no shuffle of the
    # exploded keys) unless there are too many to ship to every executor.
    if big.count() <= 1_000_000:
        big = F.broadcast(big)
    lists = (
        banded.join(big, "bucket", "left_semi")
        .groupBy("bucket")
        .agg(F.sort_array(F.collect_list("pos")).alias("m"))
    )
    # Pairs of each big bucket: every member with every later one, or, over max_bucket
    # members, only the first star_width members with every later one (linear in its size).
    heads = f"IF(size(m) <= {int(max_bucket)}, size(m), {int(star_width)})"
    pair_expr = (
        f"flatten(transform(slice(m, 1, {heads}), (x, i) -> "
        "transform(slice(m, i + 2, size(m)), y -> named_struct('a', x, 'b', y))))"
    )
    from_lists = lists.select(F.explode(F.expr(pair_expr)).alias("p")).select("p.a", "p.b")
    twos = buckets.where(F.col("n") == 2).select(F.col("lo").alias("a"), F.col("hi").alias("b"))
    candidates = stage("candidates", twos.unionByName(from_lists).distinct())

    # 4. verify each candidate with both sketches. Only the candidates' ends need theirs: the
    # sketches are filtered to them first (by broadcast, without moving the others), so the
    # joins shuffle the candidates' sketches, not the corpus's.
    ends = (
        candidates.select(F.col("a").alias("pos"))
        .unionByName(candidates.select(F.col("b").alias("pos")))
        .distinct()
    )
    ends = stage("candidate ends", ends)
    ends_side = F.broadcast(ends) if ends.count() <= _BROADCAST_ROWS else ends
    sk = sketched.select("pos", "sketch").join(ends_side, "pos", "left_semi")
    joined = (
        candidates.join(sk.select(F.col("pos").alias("a"), F.col("sketch").alias("sa")), "a")
        .join(sk.select(F.col("pos").alias("b"), F.col("sketch").alias("sb")), "b")
        .select("a", "b", "sa", "sb")
    )
    verified = joined.mapInArrow(_verify_batches(settings), "a long, b long, similarity double")
    verified = stage("verify", verified)

    # 5. connected components of verified pairs and exact-copy edges.
    copy_edges = membership.where(F.col("pos") != F.col("rep")).select(
        F.col("rep").alias("a"), F.col("pos").alias("b")
    )
    edges = verified.select("a", "b").unionByName(copy_edges)
    sc.setJobDescription("neardup dedup: components")
    t = time.perf_counter()
    components = connected_components(edges)
    stage_seconds["components"] = time.perf_counter() - t
    components = stage("components", components)

    # 6. keeper rule.
    members = components.select(F.col("node").alias("pos"), F.col("component").alias("cluster")).join(
        sketched.select("pos", "len", *(["rank"] if keep_field is not None else [])), "pos"
    )
    from pyspark.sql.window import Window

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
    ranked = stage("keep", ranked)
    # The clustered documents are few beside the corpus: joined to it by broadcast (no shuffle
    # of the corpus), which also keeps the input's partitions in order, so the kept rows come
    # out in input order without a sort. Too many to broadcast (or an order_col, whose order
    # the partitions need not follow): a shuffle join, then a sort by position.
    n_clustered = ranked.count()
    small = n_clustered <= _BROADCAST_ROWS and order_col is None
    side = F.broadcast if small else (lambda d: d)
    assignments = (
        indexed.select("__pos", F.col(f"`{id_col}`").alias("id"))
        .join(side(ranked.withColumnRenamed("pos", "__pos")), "__pos", "left")
        .select(
            "__pos",
            "id",
            "cluster",
            F.coalesce("cluster_size", F.lit(1)).alias("cluster_size"),
            F.coalesce("kept", F.lit(True)).alias("kept"),
        )
    )
    dropped = ranked.where(~F.col("kept")).select(F.col("pos").alias("__pos"))
    kept_rows = indexed.join(side(dropped), "__pos", "left_anti")
    # Quoted: a column's name may hold a dot (`meta.url`).
    out_cols = [F.col(f"`{c}`") for c in df.columns]
    kept = (kept_rows if small else kept_rows.orderBy("__pos")).select(*out_cols)

    pair_df = None
    if pairs:
        ids = indexed.select(F.col("__pos").alias("pos"), F.col(f"`{id_col}`").alias("id"))
        group_of = membership.select("pos", "rep")
        ga = group_of.select(F.col("rep").alias("a"), F.col("pos").alias("x"))
        gb = group_of.select(F.col("rep").alias("b"), F.col("pos").alias("y"))
        # A verified pair between representatives stands for every copy of one with every copy
        # of the other; a representative without copies stands for itself.
        between = (
            verified.join(ga, "a", "left")
            .withColumn("x", F.coalesce("x", "a"))
            .join(gb, "b", "left")
            .withColumn("y", F.coalesce("y", "b"))
            .select("x", "y", "similarity")
        )
        within = (
            group_of.alias("p")
            .join(group_of.alias("q"), F.col("p.rep") == F.col("q.rep"))
            .where(F.col("p.pos") < F.col("q.pos"))
            .select(F.col("p.pos").alias("x"), F.col("q.pos").alias("y"), F.lit(1.0).alias("similarity"))
        )
        both = between.unionByName(within).select(
            F.least("x", "y").alias("x"), F.greatest("x", "y").alias("y"), "similarity"
        )
        pair_df = (
            both.join(ids.select(F.col("pos").alias("x"), F.col("id").alias("a")), "x")
            .join(ids.select(F.col("pos").alias("y"), F.col("id").alias("b")), "y")
            .select("a", "b", "similarity")
        )

    # The summary: a few aggregates (scalars) on the driver.
    sc.setJobDescription("neardup dedup: summary")
    t = time.perf_counter()
    counts = sketched.agg(
        F.count(F.lit(1)).alias("documents"),
        F.sum(F.col("empty").cast("long")).alias("empty"),
    ).first()
    n_clusters = ranked.select("cluster").distinct().count()
    n_dropped = dropped.count()
    copies = membership.where(F.col("pos") != F.col("rep")).count()
    capped = buckets.where(F.col("n") > max_bucket).count()
    n_candidates = candidates.count()
    n_verified = verified.count()
    stage_seconds["summary"] = time.perf_counter() - t
    summary = {
        "documents": counts["documents"],
        "empty": counts["empty"] or 0,
        "clusters": n_clusters,
        "dropped": n_dropped,
        "kept": counts["documents"] - n_dropped,
        "method": local.method,
        "hamming": local.hamming if local.method != "minhash" else None,
        "bands": n_bands,
        "rows": n_rows,
        "threshold": threshold,
        "candidate_probability": local.candidate_probability,
        "verification": local.verification,
        "candidates": n_candidates,
        "verified": n_verified,
        "exact_duplicates": copies,
        "capped_buckets": capped,
        "skipped": skipped,
        "stage_seconds": stage_seconds,
        "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
        "shuffle_partitions_chosen": shuffle_partitions is not None,
    }
    sc.setJobDescription(None)
    return SparkDedupResult(assignments=assignments.drop("__pos"), kept=kept, pairs=pair_df, summary=summary)
