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

import json  # noqa: F401
import time  # noqa: F401
from typing import Any, Iterator, Optional  # noqa: F401

from ._stages import _RANK_SCHEMA, _SKETCH_SCHEMA, _max_doc_bytes, _sketch_batches, _sketch_lines  # noqa: F401
from ._graph import choose_shuffle_partitions, connected_components  # noqa: F401
from ._job import SparkDedupResult, _Job, _indexed  # noqa: F401

__all__ = ["dedup", "dedup_jsonl", "SparkDedupResult", "connected_components"]

# The public names are this module's, wherever they are defined.
SparkDedupResult.__module__ = connected_components.__module__ = __name__


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
