"""A run on the driver: its settings as the library resolved them, the stages chained from input
to output, the components (on the driver when the edges are few), the keep rule and the
summary."""

from __future__ import annotations

import json  # noqa: F401
import time  # noqa: F401
from dataclasses import dataclass, field  # noqa: F401
from typing import Any, Iterator, Optional  # noqa: F401

from ..errors import InputError, InputTypeError, OptionError  # noqa: F401
from ._stages import _bucket_batches, _sketcher, _verify_batches  # noqa: F401
from ._graph import choose_shuffle_partitions, connected_components, shuffle_partitions_line  # noqa: F401


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
        lines = ["neardup dedup (spark): " + neardup._neardup.format_summary(json.dumps(s), runner=True)]
        if s.get("stage_seconds"):
            lines.append(
                "  time "
                + ", ".join(f"{k} {v:.1f} s" for k, v in s["stage_seconds"].items())
            )
        if s.get("shuffle_partitions"):
            lines.append(shuffle_partitions_line(s))
        return "\n".join(lines)


# Up to this many clustered documents are broadcast to the corpus's partitions at the end.
_BROADCAST_ROWS = 2_000_000


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

        import neardup

        keep, keep_field = self.keep, self.keep_field
        members = components.select(F.col("node").alias("pos"), F.col("component").alias("cluster")).join(
            docs.select("pos", "len", *(["rank"] if keep_field is not None else [])), "pos"
        )
        by_cluster = Window.partitionBy("cluster")
        # The library's sort of a cluster's members, best first (values missing last).
        rank_order = [
            F.col(column).desc_nulls_last() if descending else F.col(column).asc_nulls_last()
            for column, descending in neardup._neardup.keep_order(keep)
        ]
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
