#!/usr/bin/env python3
"""neardup.spark on the 1,000,000-document corpus of the dedup benchmark, in local[2], against
`neardup dedup` on the same file and cores: each stage's time, the totals, the peak memory of
each process tree (Spark's JVM and its Python workers together), the shuffle volume per stage
(from the Spark REST API), and whether the clusters are identical.

Usage: bash bench/run_spark_1m.sh [--docs 1000000] [--driver-memory 8g] [--input jsonl|parquet]
                                  [--rounds 3]

This machine's speed drifts by tens of percent over minutes, so the two are run in alternation,
`--rounds` times, and the ratio is that of the medians (each round's is printed too).
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"


def tree_rss_mb(pid: int) -> float:
    """The resident memory of a process and all its descendants, from /proc."""
    total = 0
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(stat[1]), []).append(int(p.name))
        except OSError:
            continue
    stack = [pid]
    while stack:
        q = stack.pop()
        try:
            for line in (Path("/proc") / str(q) / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
        stack.extend(children.get(q, []))
    return total / 1024


def run_measured(cmd: list[str], env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = [0.0]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss_mb(proc.pid))
            time.sleep(0.5)

    threading.Thread(target=poll, daemon=True).start()
    out, err = proc.communicate()
    done.set()
    return time.perf_counter() - t, peak[0], subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def corpus_for(docs: int, fmt: str) -> Path:
    """The dedup benchmark's corpus of `docs` documents as JSONL or Parquet, made if missing."""
    corpus = DATA / f"en_dedup_{docs}.jsonl"
    if not corpus.exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "dedup_1m.py"), "--docs",
                        str(docs), "--peers", ""], check=True)
    if fmt == "parquet":
        jsonl, corpus = corpus, corpus.with_suffix(".parquet")
        if not corpus.exists():
            import pyarrow.json as pj
            import pyarrow.parquet as pq

            pq.write_table(pj.read_json(jsonl), corpus)
    return corpus


def run_cli(binary: str, corpus: Path, clusters: Path) -> tuple[float, float]:
    """`neardup dedup` on `corpus` (2 threads, kept records in its format, clusters to
    `clusters`): its seconds and peak RSS in MB."""
    secs, rss, c = run_measured([binary, "dedup", str(corpus), "--clusters", str(clusters), "-o",
                                 str(DATA / f"kept{corpus.suffix}"), "-q"], dict(os.environ))
    if c.returncode != 0:
        raise SystemExit(c.stderr)
    return secs, rss


def cli_clusters(path: Path) -> list[list[int]]:
    """The clusters of a `neardup dedup --clusters` file, each sorted, sorted."""
    return sorted(sorted(json.loads(l)["cluster"]) for l in open(path))


def spark_clusters(assignments: Path) -> list[list[int]]:
    """The clusters of neardup.spark's assignments folder (JSON parts), as `cli_clusters`."""
    groups: dict = {}
    for part in sorted(assignments.glob("part-*")):
        for line in open(part):
            row = json.loads(line)
            if row.get("cluster") is not None:
                groups.setdefault(row["cluster"], []).append(int(row["id"]))
    return sorted(sorted(g) for g in groups.values())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"))
    ap.add_argument("--input", choices=["jsonl", "parquet"], default="jsonl",
                    help="the corpus as JSON Lines, or as Parquet (written once from the JSONL)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="Spark and the CLI run in alternation this many times (1-20)")
    args = ap.parse_args()
    if not 1 <= args.rounds <= 20:
        ap.error("--rounds must be between 1 and 20")
    corpus = corpus_for(args.docs, args.input)
    out = DATA / "spark_out"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
               PYSPARK_SUBMIT_ARGS=f"--driver-memory {args.driver_memory} pyspark-shell")
    cmd = [sys.executable, str(ROOT / "bench" / "spark_job.py"), str(corpus), str(out)]
    clusters = DATA / "spark_cli_clusters.jsonl"
    rounds = []
    for i in range(args.rounds):
        subprocess.run(["rm", "-rf", str(out)], check=True)
        spark_s, spark_rss, r = run_measured(cmd, env)
        if r.returncode != 0:
            raise SystemExit(r.stderr[-4000:])
        report = json.loads(r.stdout.strip().splitlines()[-1])
        cli_s, cli_rss = run_cli(args.binary, corpus, clusters)
        print(f"round {i + 1}: Spark {spark_s:.1f} s, CLI {cli_s:.1f} s, {spark_s / cli_s:.2f}x",
              file=sys.stderr)
        rounds.append((spark_s, spark_rss, cli_s, cli_rss, report))

    cli = cli_clusters(clusters)
    same = spark_clusters(out / "assignments") == cli
    med = statistics.median
    spark_s, cli_s = med(r[0] for r in rounds), med(r[2] for r in rounds)
    spark_rss, cli_rss = max(r[1] for r in rounds), max(r[3] for r in rounds)
    report = rounds[-1][4]
    report["stage_seconds"] = {name: med(r[4]["stage_seconds"][name] for r in rounds)
                               for name in report["stage_seconds"]}

    print(f"corpus {corpus.name}: {args.docs} documents; local[2]; driver memory {args.driver_memory}; "
          f"medians of {args.rounds} rounds\n")
    print("| stage | seconds | shuffle write |")
    print("|---|---:|---:|")
    for name, secs in report["stage_seconds"].items():
        mb = report["shuffle_mb"].get(name)
        print(f"| {name} | {secs:.1f} | {'' if mb is None else f'{mb:,.0f} MB'} |")
    print("\n| run | seconds | peak RSS (process tree) |")
    print("|---|---:|---:|")
    print(f"| neardup.spark, local[2] (JVM start, read, all stages, write) | {spark_s:.1f} | {spark_rss:,.0f} MB |")
    print(f"| neardup dedup, 2 threads | {cli_s:.1f} | {cli_rss:,.0f} MB |")
    each = ", ".join(f"{r[0] / r[2]:.2f}" for r in rounds)
    print(f"\nSpark / CLI: {spark_s / cli_s:.2f}x (rounds: {each}); clusters identical: {same} "
          f"({len(cli)} clusters)")
    print(json.dumps({"spark_s": spark_s, "cli_s": cli_s, "rounds": [r[:4] for r in rounds], "spark_rss_mb": spark_rss,
                      "cli_rss_mb": cli_rss, "same": same, **report}))


if __name__ == "__main__":
    main()
