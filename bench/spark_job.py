#!/usr/bin/env python3
"""The Spark side of bench/spark_1m.py: the dedup of `python -m neardup.spark dedup` on a JSONL
file in local[2], writing the kept lines and the assignments, and printing each stage's time and
shuffle volume (from Spark's status API) as one JSON line."""

import json
import sys
import time


def main() -> None:
    corpus, out = sys.argv[1], sys.argv[2]
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from neardup.spark import dedup

    t0 = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("neardup dedup bench")
        .config("spark.sql.shuffle.partitions", "16")
        # Input splits of 32 MB: several tasks per core, so that the last wave of the read
        # does not leave a core idle (128 MB gives 9 tasks for 2 cores on this file).
        .config("spark.sql.files.maxPartitionBytes", str(32 << 20))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter() - t0
    schema = T.StructType([T.StructField("id", T.StringType()), T.StructField("text", T.StringType())])
    lines = spark.read.text(corpus)
    df = lines.select("value", F.from_json("value", schema).alias("r")).select(
        "value", F.col("r.id").alias("id"), F.col("r.text").alias("text")
    )
    t = time.perf_counter()
    # As `python -m neardup.spark dedup` runs it: a plain file read, not cached.
    result = dedup(df, threshold=0.8, cache_input=False)
    dedup_s = time.perf_counter() - t
    t = time.perf_counter()
    spark.sparkContext.setJobDescription("neardup dedup: write")
    result.kept.select("value").write.text(f"{out}/kept")
    result.assignments.write.parquet(f"{out}/assignments")
    write_s = time.perf_counter() - t

    # Shuffle bytes written per stage, by the job descriptions the stages ran under.
    shuffle: dict = {}
    try:
        import urllib.request

        base = spark.sparkContext.uiWebUrl
        app = spark.sparkContext.applicationId
        with urllib.request.urlopen(f"{base}/api/v1/applications/{app}/jobs") as r:
            jobs = json.load(r)
        with urllib.request.urlopen(f"{base}/api/v1/applications/{app}/stages") as r:
            stages = {s["stageId"]: s for s in json.load(r)}
        for job in jobs:
            name = (job.get("description") or "").replace("neardup dedup: ", "")
            written = sum(stages[s].get("shuffleWriteBytes", 0) for s in job["stageIds"] if s in stages)
            shuffle[name] = shuffle.get(name, 0) + written / 1e6
    except Exception as e:  # noqa: BLE001 - the numbers are a report, not the job
        print(f"no shuffle figures: {e}", file=sys.stderr)
    summary = dict(result.summary)
    stages_s = {"start Spark": started, **summary.pop("stage_seconds"), "write": write_s}
    print(result.print_summary(), file=sys.stderr)
    print(json.dumps({"stage_seconds": stages_s, "dedup_s": dedup_s, "shuffle_mb": shuffle,
                      "summary": summary}))


if __name__ == "__main__":
    main()
