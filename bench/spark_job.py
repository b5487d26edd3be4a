#!/usr/bin/env python3
"""The Spark side of bench/spark_1m.py: `python -m neardup.spark dedup` as a user runs it
(the command's own `run`, in this process so that Spark's status API can be read after it), on
a JSONL or Parquet corpus in local[2], writing the kept records and the assignments; prints each
stage's time and shuffle volume as one JSON line."""

import json
import sys
import time


def main() -> None:
    corpus, out = sys.argv[1], sys.argv[2]
    from pyspark.sql import SparkSession

    from neardup.spark import __main__ as command

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
    ap = command.parser()
    args = ap.parse_args(["dedup", corpus, f"{out}/kept", "--threshold", "0.8",
                          "--assignments", f"{out}/assignments"])
    t = time.perf_counter()
    result = command.run(args)
    run_s = time.perf_counter() - t

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
    stages_s = {"start Spark": started, **summary.pop("stage_seconds")}
    print(result.print_summary(), file=sys.stderr)
    print(json.dumps({"stage_seconds": stages_s, "run_s": run_s, "shuffle_mb": shuffle,
                      "summary": summary}))


if __name__ == "__main__":
    main()
