"""The connected components of the verified pairs on Spark (large-star / small-star), and the
shuffle partitions chosen for an input's size."""

from __future__ import annotations

import json  # noqa: F401
import time  # noqa: F401
from dataclasses import dataclass, field  # noqa: F401
from typing import Any, Iterator, Optional  # noqa: F401

from ..errors import InputError, InputTypeError, OptionError  # noqa: F401


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


def shuffle_partitions_line(summary: dict) -> str:
    """A job's summary line on its shuffle partitions, and whether it chose them."""
    how = ("from the input size; set spark.sql.shuffle.partitions to choose"
           if summary.get("shuffle_partitions_chosen") else "as configured")
    return f"  {summary['shuffle_partitions']} shuffle partitions ({how})"


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
