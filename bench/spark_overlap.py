"""The passage job on Spark against the CLI, on passage sets laid out as ../shared/passages/*
(queries.jsonl, collection.jsonl): both modes' records compared byte for byte, and the wall time
of each, run in alternation.

    python bench/spark_overlap.py --cli target/release/neardup ../shared/passages/sample-zh ...

Within mode checks the collection and the queries as one input (the collection first) with
--remove (the CLI's -o). Prints one row per set and mode: the CLI's seconds, Spark's
(local[2], its start included), the ratio, the passages and whether they are identical."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def lines(folder: Path) -> list[str]:
    return [l for p in sorted(folder.glob("part-*")) for l in p.read_text(encoding="utf-8").splitlines()]


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{cmd[:3]} failed: {r.stderr[-2000:]}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sets", nargs="+", type=Path)
    ap.add_argument("--cli", default="target/release/neardup")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    env_python = sys.executable
    print("| set | mode | CLI s | Spark s | ratio | passages | identical |")
    print("|---|---|---|---|---|---|---|")
    for s in args.sets:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            q, c = s / "queries.jsonl", s / "collection.jsonl"
            both = tmp / "both.jsonl"
            both.write_bytes(c.read_bytes() + q.read_bytes())
            for mode in ("against", "within"):
                cli_out, kept = tmp / f"{mode}.jsonl", tmp / f"{mode}-kept.jsonl"
                if mode == "against":
                    cli = [args.cli, "overlap", str(q), "--against", str(c), "--passages", str(cli_out), "-q"]
                    spark_args = [str(q), str(tmp / f"spark-{mode}"), "--against", str(c)]
                else:
                    cli = [args.cli, "overlap", str(both), "--passages", str(cli_out), "-o", str(kept), "-q"]
                    spark_args = [str(both), str(tmp / f"spark-{mode}"), "--remove"]
                spark = [env_python, "-m", "neardup.spark", "overlap", *spark_args, "--master", args.master]
                t_cli = timed(cli)
                t_spark = timed(spark)
                got = lines(tmp / f"spark-{mode}" / "passages")
                want = cli_out.read_text(encoding="utf-8").splitlines()
                same = got == want
                if mode == "within":
                    same = same and lines(tmp / f"spark-{mode}" / "records") == kept.read_text(encoding="utf-8").splitlines()
                print(f"| {s.name} | {mode} | {t_cli:.1f} | {t_spark:.1f} | {t_spark / t_cli:.1f} | {len(want)} | {'yes' if same else 'NO'} |",
                      flush=True)
                shutil.rmtree(tmp / f"spark-{mode}")


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main()
