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
   first in input order represents it, as in the CLI.
3. **candidates**: the representatives' band keys exploded and grouped by (band, key); each bucket
   gives its pairs. Skew plan: a bucket of more than ``max_bucket`` documents (near-copies of one
   text, boilerplate) pairs only its first ``star_width`` members with every other member
   instead of all pairs, so its cost is linear; such buckets are counted in the summary.
4. **verify** (``mapInArrow``): each candidate pair joined with both sketches and checked
   exactly in Rust (the CLI's ``verify``).
5. **components**: connected components of the verified pairs and the exact-copy edges with the
   large-star / small-star algorithm (Kiveris et al. 2014), iterated until the edges stop
   changing; a component is named by its first member's position.
6. **keep**: the keeper rule (``first`` in input order, ``longest``, ``shortest``; ties to the
   first), then the kept rows.

What crosses each shuffle: (exact key, position) in stage 2; (band, key, position) in stage 3;
(position, sketch bytes) for both ends of each candidate pair in stage 4; edges (two longs) in
stage 5; (position, cluster, length) in stage 6.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

__all__ = ["dedup", "SparkDedupResult", "connected_components"]

# The per-process sketcher, rebuilt only when the settings change (executors reuse it across
# batches and tasks).
_SKETCHER: dict = {}


def _sketcher(settings: dict) -> Any:
    import neardup

    key = tuple(sorted((k, str(v)) for k, v in settings.items()))
    sk = _SKETCHER.get(key)
    if sk is None:
        pipeline = neardup.Pipeline.from_spec(settings["spec"])
        sk = neardup._neardup.Sketcher(
            pipeline,
            settings["threshold"],
            settings["verify"],
            settings["keep"],
            settings["recall"],
            settings["bands"],
            settings["rows"],
        )
        _SKETCHER.clear()
        _SKETCHER[key] = sk
    return sk


def _binary_array(offsets: Any, data: Any) -> Any:
    import pyarrow as pa

    return pa.Array.from_buffers(
        pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _sketch_batches(settings: dict):
    """The function `mapInArrow` runs on each partition: (pos, text) -> sketch columns."""

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
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column("pos"),
                    pa.array(out["len"]),
                    pa.array(out["empty"]),
                    exact.cast(pa.binary()),
                    keys,
                    _binary_array(out["sketch_offsets"], out["sketch_data"]),
                ],
                names=["pos", "len", "empty", "exact", "keys", "sketch"],
            )

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
        s = self.summary
        lines = [
            f"neardup dedup (spark): {s.get('documents')} documents ({s.get('empty')} empty), "
            f"{s.get('clusters')} clusters, {s.get('dropped')} dropped, {s.get('kept')} kept",
            f"  minhash, {s.get('bands')} bands x {s.get('rows')} rows, P(candidate) "
            f"{s.get('candidate_probability', 0):.4f} at {s.get('threshold')}, verified by "
            f"{s.get('verification')}: {s.get('candidates')} candidate pairs, {s.get('verified')} "
            f"verified between distinct texts, {s.get('exact_duplicates')} exact copies",
        ]
        if s.get("capped_buckets"):
            lines.append(
                f"  {s['capped_buckets']} bucket(s) over max_bucket paired as stars (skew guard)"
            )
        if s.get("skipped"):
            lines.append(f"  skipped {s['skipped']} bad record(s)")
        if s.get("stage_seconds"):
            lines.append(
                "  time "
                + ", ".join(f"{k} {v:.1f} s" for k, v in s["stage_seconds"].items())
            )
        return "\n".join(lines)


def dedup(
    df: Any,
    text_col: str = "text",
    id_col: Optional[str] = "id",
    threshold: float = 0.8,
    pipeline: Any = None,
    keep: str = "first",
    verify: str = "jaccard",
    recall: Optional[float] = None,
    bands: Optional[int] = None,
    rows: Optional[int] = None,
    pairs: bool = False,
    skip_bad: bool = False,
    max_bucket: int = 2000,
    star_width: int = 2,
    order_col: Optional[str] = None,
) -> SparkDedupResult:
    """Near-duplicate clusters of a Spark DataFrame, as ``neardup dedup`` finds them.

    Args:
        df: the documents, one per row.
        text_col: the column holding the text (string).
        id_col: the column holding the id (any type); None: the position.
        threshold, keep, verify, recall, bands, rows: as ``neardup dedup`` (MinHash LSH).
        pipeline: a :class:`neardup.Pipeline` (default: the ``default`` preset).
        pairs: also compute every verified pair (copies included).
        skip_bad: drop rows whose text is null (counted) instead of failing.
        max_bucket, star_width: the skew guard of the candidate stage (see the module doc).
        order_col: a column giving input order (default: the order Spark reads the rows in).

    Each stage runs as its own Spark job (named in the Spark UI, its result persisted for the
    stages after it), and its seconds are in ``summary["stage_seconds"]``.
    """
    import neardup
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if keep not in ("first", "longest", "shortest"):
        raise ValueError(f"keep {keep!r}: expected one of first, longest, shortest")
    if text_col not in df.columns:
        raise ValueError(f"no column {text_col!r} (the text); the columns are {df.columns}")
    if id_col is not None and id_col not in df.columns:
        raise ValueError(f"no column {id_col!r} (the id); the columns are {df.columns}")
    if not isinstance(df.schema[text_col].dataType, T.StringType):
        raise TypeError(f"column {text_col!r} must be a string column, not {df.schema[text_col].dataType}")
    if max_bucket < 2 or star_width < 1:
        raise ValueError("max_bucket must be at least 2 and star_width at least 1")
    spark = df.sparkSession
    sc = spark.sparkContext
    pipeline = pipeline or neardup.Pipeline()
    settings = {
        "spec": pipeline.spec_json(),
        "threshold": float(threshold),
        "verify": verify,
        "keep": keep,
        "recall": recall,
        "bands": bands,
        "rows": rows,
    }
    # Validates every setting on the driver, at once, with the library's messages.
    local = _sketcher(settings)
    n_bands, n_rows = local.banding
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
    indexed = indexed.persist(StorageLevel.MEMORY_AND_DISK)
    sc.setJobDescription("neardup dedup: read")
    bad = indexed.where(F.col(text_col).isNull())
    skipped = 0
    if skip_bad:
        skipped = bad.count()
        indexed = indexed.where(F.col(text_col).isNotNull())
    else:
        first_bad = bad.select(id_col).limit(1).collect()
        if first_bad:
            raise ValueError(
                f"a row has no text (null {text_col!r}), e.g. id {first_bad[0][0]!r}; use "
                "skip_bad=True to skip such rows"
            )

    # 1. sketch
    schema = "pos long, len long, empty boolean, exact binary, keys array<long>, sketch binary"
    sketched = indexed.select(F.col("__pos").alias("pos"), F.col(text_col).alias("text")).mapInArrow(
        _sketch_batches(settings), schema
    )
    sketched = stage("sketch", sketched)

    # 2. exact copies: the first of each feature-set key represents it.
    nonempty = sketched.where(~F.col("empty"))
    groups = nonempty.groupBy("exact").agg(F.min("pos").alias("rep"), F.count(F.lit(1)).alias("copies"))
    membership = stage(
        "exact copies",
        nonempty.select("pos", "exact").join(groups, "exact").select("pos", "rep", "copies"),
    )
    reps = membership.where(F.col("pos") == F.col("rep")).select("pos")

    # 3. candidates from the band keys, with the skew guard.
    banded = (
        sketched.join(reps, "pos")
        .select("pos", F.posexplode("keys").alias("band", "key"))
    )
    buckets = (
        banded.groupBy("band", "key")
        .agg(F.sort_array(F.collect_list("pos")).alias("m"))
        .where(F.size("m") > 1)
    )
    # Pairs of each bucket: every member with every later one, or, over max_bucket members,
    # only the first star_width members with every later one (linear in the bucket's size).
    heads = f"IF(size(m) <= {int(max_bucket)}, size(m), {int(star_width)})"
    pair_expr = (
        f"flatten(transform(slice(m, 1, {heads}), (x, i) -> "
        "transform(slice(m, i + 2, size(m)), y -> named_struct('a', x, 'b', y))))"
    )
    candidates = buckets.select(F.explode(F.expr(pair_expr)).alias("p")).select("p.a", "p.b").distinct()
    candidates = stage("candidates", candidates)

    # 4. verify each candidate with both sketches.
    sk = sketched.select("pos", "sketch")
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
        sketched.select("pos", "len"), "pos"
    )
    from pyspark.sql.window import Window

    by_cluster = Window.partitionBy("cluster")
    if keep == "longest":
        rank_order = [F.col("len").desc(), F.col("pos").asc()]
    elif keep == "shortest":
        rank_order = [F.col("len").asc(), F.col("pos").asc()]
    else:
        rank_order = [F.col("pos").asc()]
    ranked = (
        members.withColumn("cluster_size", F.count(F.lit(1)).over(by_cluster))
        .withColumn("rank", F.row_number().over(by_cluster.orderBy(*rank_order)))
        .select("pos", "cluster", "cluster_size", (F.col("rank") == 1).alias("kept"))
    )
    ranked = stage("keep", ranked)
    assignments = (
        indexed.select("__pos", F.col(id_col).alias("id"))
        .join(ranked.withColumnRenamed("pos", "__pos"), "__pos", "left")
        .select(
            "__pos",
            "id",
            "cluster",
            F.coalesce("cluster_size", F.lit(1)).alias("cluster_size"),
            F.coalesce("kept", F.lit(True)).alias("kept"),
        )
    )
    dropped = ranked.where(~F.col("kept")).select(F.col("pos").alias("__pos"))
    kept_rows = indexed.join(dropped, "__pos", "left_anti")
    out_cols = [c for c in df.columns]
    kept = kept_rows.orderBy("__pos").select(*out_cols)

    pair_df = None
    if pairs:
        ids = indexed.select(F.col("__pos").alias("pos"), F.col(id_col).alias("id"))
        group_of = membership.select("pos", "rep")
        ga = group_of.select(F.col("rep").alias("a"), F.col("pos").alias("x"))
        gb = group_of.select(F.col("rep").alias("b"), F.col("pos").alias("y"))
        between = verified.join(ga, "a").join(gb, "b").select("x", "y", "similarity")
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
    counts = sketched.agg(
        F.count(F.lit(1)).alias("documents"),
        F.sum(F.col("empty").cast("long")).alias("empty"),
    ).first()
    n_clusters = ranked.select("cluster").distinct().count()
    n_dropped = dropped.count()
    copies = groups.agg(F.sum(F.col("copies") - 1).alias("c")).first()["c"] or 0
    capped = buckets.where(F.size("m") > max_bucket).count()
    summary = {
        "documents": counts["documents"],
        "empty": counts["empty"] or 0,
        "clusters": n_clusters,
        "dropped": n_dropped,
        "kept": counts["documents"] - n_dropped,
        "bands": n_bands,
        "rows": n_rows,
        "threshold": threshold,
        "candidate_probability": local.candidate_probability,
        "verification": local.verification,
        "candidates": candidates.count(),
        "verified": verified.count(),
        "exact_duplicates": copies,
        "capped_buckets": capped,
        "skipped": skipped,
        "stage_seconds": stage_seconds,
    }
    sc.setJobDescription(None)
    return SparkDedupResult(assignments=assignments.drop("__pos"), kept=kept, pairs=pair_df, summary=summary)
