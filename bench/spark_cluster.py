#!/usr/bin/env python3
"""neardup.spark on a Spark standalone cluster as a cluster runs it, on the 1,000,000-document
corpus of the dedup benchmark, against the CLI on the same file and cores (`--job dedup`:
`neardup dedup`; `--job overlap`: the passage job within the corpus, `overlap CORPUS OUT
--remove` against `neardup overlap CORPUS --passages P -o O`): a master and
two workers of one core each on loopback (each its own JVM with its own Python workers, started
by the harness of tests/test_spark_cluster.py), the package shipped to the executors only as a
packed virtualenv (`--archives ...#environment`), `spark-submit --master spark://...` of the
command README.md gives. Spark and the CLI run in alternation, `--rounds` times; the ratio is
that of the medians. The peak memory is that of every process of the cluster (daemons,
executors, their Python workers, the driver). Everything the bench starts is stopped by process
group, even when it fails.

Usage: bash bench/run_spark_cluster.sh [--docs 1000000] [--input jsonl|parquet] [--rounds 3]
       [--job dedup|overlap]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from spark_1m import (DATA, ROOT, cli_clusters, corpus_for, run_cli, run_measured, spark_clusters,
                      tree_rss_mb)

sys.path.insert(0, str(ROOT / "crates" / "neardup-py" / "tests"))
from sparkcluster import SPARK_HOME, Cluster, cluster_env, packed_environment  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--input", choices=["jsonl", "parquet"], default="jsonl")
    ap.add_argument("--rounds", type=int, default=3, help="1-20")
    ap.add_argument("--wheel", required=True, help="the neardup wheel the executors get")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"))
    ap.add_argument("--worker-memory", default="7g", help="each worker's, and its executor's")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--job", choices=["dedup", "overlap"], default="dedup")
    args = ap.parse_args()
    if not 1 <= args.rounds <= 20:
        ap.error("--rounds must be between 1 and 20")
    corpus = corpus_for(args.docs, args.input)
    clusters = DATA / "spark_cli_clusters.jsonl"
    script = subprocess.run([sys.executable, "-m", "neardup.spark", "--script"], capture_output=True,
                            text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="neardup-cluster-", dir=DATA) as tmp:
        tmp = Path(tmp)
        packed = packed_environment(tmp, Path(args.wheel))
        cluster = Cluster(tmp)
        rounds = []
        try:
            master = cluster.up(workers=2, memory=args.worker_memory)
            env = dict(cluster_env(), PYSPARK_DRIVER_PYTHON=sys.executable,
                       PYSPARK_PYTHON="./environment/bin/python")
            out = tmp / "out"
            submit = [
                str(SPARK_HOME / "bin" / "spark-submit"), "--master", master,
                "--archives", f"{packed}#environment", "--driver-memory", args.driver_memory,
                "--conf", f"spark.executor.memory={args.worker_memory}",
                # As bench/spark_1m.py sets them for local[2].
                "--conf", "spark.sql.shuffle.partitions=16",
                "--conf", f"spark.sql.files.maxPartitionBytes={32 << 20}",
                script,
            ]
            if args.job == "dedup":
                submit += ["dedup", str(corpus), str(out / "kept"), "--threshold", "0.8",
                           "--assignments", str(out / "assignments")]
            else:
                submit += ["overlap", str(corpus), str(out), "--remove"]
            for i in range(args.rounds):
                subprocess.run(["rm", "-rf", str(out)], check=True)
                peak = [0.0]
                done = threading.Event()

                def poll() -> None:
                    while not done.is_set():
                        peak[0] = max(peak[0], sum(tree_rss_mb(p.pid) for p in cluster.procs))
                        time.sleep(0.5)

                threading.Thread(target=poll, daemon=True).start()
                t = time.perf_counter()
                proc = subprocess.Popen(submit, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env, start_new_session=True)
                cluster.procs.append(proc)  # stopped with the cluster, whatever happens
                # The driver's Python prints through spark-submit's stdout, Spark's log to stderr.
                said, err = proc.communicate(timeout=3600)
                spark_s = time.perf_counter() - t
                done.set()
                if proc.returncode != 0:
                    raise SystemExit(said[-2000:] + err[-4000:] + cluster.logs())
                if args.job == "dedup":
                    cli_s, cli_rss = run_cli(args.binary, corpus, clusters)
                else:
                    cli_s, cli_rss = run_cli_overlap(args.binary, corpus)
                print(f"round {i + 1}: cluster {spark_s:.1f} s, CLI {cli_s:.1f} s, "
                      f"{spark_s / cli_s:.2f}x", file=sys.stderr)
                (DATA / "spark_cluster_submit.log").write_text(said + err)
                # The command's summary: "  time sketch 30.1 s, exact copies 3.9 s, ..." (dedup),
                # "  2 passes; time read 7.9 s, ..." (overlap).
                times = next((l.split("time ", 1)[1] for l in said.splitlines()
                              if l.startswith("  time ") or "passes; time " in l), "")
                stages = {}
                for part in times.split(", ") if times else []:
                    name, secs, _ = part.rsplit(" ", 2)
                    stages[name] = float(secs)
                rounds.append((spark_s, peak[0], cli_s, cli_rss, stages))
            if args.job == "dedup":
                same = spark_clusters(out / "assignments") == cli_clusters(clusters)
            else:
                same = (part_lines(out / "passages") == lines_of(DATA / "cluster_cli_passages.jsonl")
                        and part_lines(out / "records") == lines_of(DATA / f"kept{corpus.suffix}"))
            ran = [bool(list((tmp / f"work-{w}").glob("app-*/*/environment/bin/python"))) for w in range(2)]
        finally:
            cluster.stop()

    med = statistics.median
    spark_s, cli_s = med(r[0] for r in rounds), med(r[2] for r in rounds)
    each = ", ".join(f"{r[0] / r[2]:.2f}" for r in rounds)
    print(f"corpus {corpus.name}: {args.docs} documents; standalone, 2 workers of 1 core and "
          f"{args.worker_memory}; driver {args.driver_memory}; medians of {args.rounds} rounds\n")
    print("| stage (the command's own timing) | median seconds |")
    print("|---|---:|")
    for name in rounds[-1][4]:
        print(f"| {name} | {med(r[4].get(name, 0.0) for r in rounds):.1f} |")
    print()
    print("| run | rounds (seconds) | median | peak RSS (every process) |")
    print("|---|---|---:|---:|")
    print(f"| neardup.spark, spark-submit to the cluster | {', '.join(f'{r[0]:.1f}' for r in rounds)} "
          f"| {spark_s:.1f} | {max(r[1] for r in rounds):,.0f} MB |")
    print(f"| neardup {args.job}, 2 threads | {', '.join(f'{r[2]:.1f}' for r in rounds)} | {cli_s:.1f} "
          f"| {max(r[3] for r in rounds):,.0f} MB |")
    what = "clusters" if args.job == "dedup" else "passages and records"
    print(f"\nCluster / CLI: {spark_s / cli_s:.2f}x (rounds: {each}); {what} identical: {same}; "
          f"executors on both workers from the archive: {all(ran)}")
    print(json.dumps({"spark_s": spark_s, "cli_s": cli_s, "rounds": [r[:4] for r in rounds],
                      "stages": [r[4] for r in rounds], "same": same,
                      "both_workers": all(ran)}))


def run_cli_overlap(binary: str, corpus: Path) -> tuple[float, float]:
    """`neardup overlap` within `corpus` (2 threads, `--passages`, the records kept with `-o`):
    its seconds and peak RSS in MB."""
    secs, rss, c = run_measured([binary, "overlap", str(corpus), "--passages",
                                 str(DATA / "cluster_cli_passages.jsonl"), "-o",
                                 str(DATA / f"kept{corpus.suffix}"), "-q"], dict(os.environ))
    if c.returncode != 0:
        raise SystemExit(c.stderr)
    return secs, rss


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def part_lines(folder: Path) -> list[str]:
    """The lines of a Spark output folder's JSON parts, in part order."""
    return [l for p in sorted(folder.glob("part-*")) for l in lines_of(p)]


if __name__ == "__main__":
    main()
