#!/usr/bin/env python3
"""Ten million documents on one machine: `neardup dedup` end to end, time, peak memory, and its
quality against planted near-duplicates, scored from the files it writes.

The corpus (built once, cached in bench/data/): --docs JSONL documents of about 1 KB (150-190
words drawn with Zipf frequencies from the vocabulary of real English text, as the 1M benchmark),
10% of them planted near-duplicates of an earlier original: an exact copy, or a copy with 0.5%,
1% or 2% of its words substituted. For every planted pair the generator records the exact
Jaccard similarity of the two documents' word 5-shingle sets (what `dedup` verifies), so the
truth is "planted pairs at or above the threshold".

The run: `neardup dedup CORPUS --threshold T --output kept.jsonl --pairs pairs.jsonl` on every
core, under /usr/bin/time (wall seconds, peak RSS). Scored from pairs.jsonl as written:
  precision: the fraction of reported pairs whose two documents come from the same original
             (documents that were generated independently are never near-duplicates);
  recall:    the fraction of planted pairs at or above the threshold that are reported.

Usage: bash bench/run_dedup_10m.sh [--docs 10000000] [--threshold 0.8] [--neardup-args ...]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from dedup_1m import vocabulary  # the same words as the 1M benchmark

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
RATES = (0.0, 0.005, 0.01, 0.02)


def shingle_set(words: list[str]) -> set[str]:
    return {" ".join(words[i:i + 5]) for i in range(max(1, len(words) - 4))}


def make_chunk(args: tuple) -> tuple[str, str, int]:
    """Documents [start, start + n) into their own files; planted copies are of originals of
    the same chunk."""
    start, n, seed, out, truth = args
    rng = np.random.default_rng(seed)
    vocab = np.array(vocabulary(), dtype=object)
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    cum = np.cumsum(weights)
    pool: list[tuple[int, list[str]]] = []
    planted = 0
    with open(out, "w") as f, open(truth, "w") as t:
        for k in range(n):
            i = start + k
            if k > 1000 and rng.random() < 0.10:
                base_id, base = pool[rng.integers(len(pool))]
                rate = RATES[rng.integers(len(RATES))]
                subst = rng.random(len(base)) < rate
                words = list(base)
                for j in np.flatnonzero(subst):
                    words[j] = vocab[rng.integers(len(vocab))]
                a, b = shingle_set(base), shingle_set(words)
                jac = len(a & b) / len(a | b)
                t.write(f"{base_id}\t{i}\t{jac:.6f}\n")
                planted += 1
            else:
                idx = np.searchsorted(cum, rng.random(rng.integers(150, 191)) * cum[-1])
                words = list(vocab[idx])
                if len(pool) < 20000:
                    pool.append((i, words))
                else:
                    pool[rng.integers(len(pool))] = (i, words)
            f.write('{"id":%d,"text":"%s"}\n' % (i, " ".join(words)))
    return out, truth, planted


def make_corpus(path: Path, truth: Path, n: int, workers: int) -> int:
    chunk = (n + workers * 4 - 1) // (workers * 4)
    jobs = []
    for c, start in enumerate(range(0, n, chunk)):
        jobs.append((start, min(chunk, n - start), 1000 + c, f"{path}.part{c}", f"{truth}.part{c}"))
    planted = 0
    with mp.Pool(workers) as pool, open(path, "wb") as out, open(truth, "wb") as tr:
        for part, tpart, p in pool.imap(make_chunk, jobs):
            for src, dst in ((part, out), (tpart, tr)):
                with open(src, "rb") as f:
                    while block := f.read(1 << 24):
                        dst.write(block)
                os.remove(src)
            planted += p
    return planted


def score(pairs_path: Path, truth_path: Path, n: int, threshold: float) -> dict:
    root = np.arange(n, dtype=np.int64)
    want = set()
    for line in open(truth_path):
        a, b, j = line.split("\t")
        root[int(b)] = int(a)
        if float(j) >= threshold - 1e-9:
            want.add((int(a), int(b)))
    reported = correct = found = 0
    for line in open(pairs_path):
        p = json.loads(line)
        a, b = int(p["a"]), int(p["b"])
        reported += 1
        if root[a] == root[b]:
            correct += 1
        if (min(a, b), max(a, b)) in want:
            found += 1
    return {
        "reported": reported,
        "precision": correct / reported if reported else 1.0,
        "planted_at_threshold": len(want),
        "recall": found / len(want) if want else 1.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=10_000_000)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"))
    ap.add_argument("--neardup-args", default="", help="more options for neardup dedup")
    args = ap.parse_args()

    DATA.mkdir(parents=True, exist_ok=True)
    corpus = DATA / f"en_planted_{args.docs}.jsonl"
    truth = DATA / f"en_planted_{args.docs}.truth.tsv"
    if not corpus.exists() or not truth.exists():
        t = time.perf_counter()
        planted = make_corpus(corpus, truth, args.docs, os.cpu_count() or 2)
        print(f"made {corpus.name}: {args.docs} documents, {planted} planted near-duplicates, "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr)
    size_mb = corpus.stat().st_size / 1e6

    kept, pairs = DATA / "kept_10m.jsonl", DATA / "pairs_10m.jsonl"
    cmd = ["/usr/bin/time", "-f", "%e %M", args.binary, "dedup", str(corpus), "--threshold",
           str(args.threshold), "--output", str(kept), "--pairs", str(pairs)]
    cmd += shlex.split(args.neardup_args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    wall, rss_kb = r.stderr.strip().splitlines()[-1].split()
    summary = "\n".join(r.stderr.strip().splitlines()[:-1])
    s = score(pairs, truth, args.docs, args.threshold)
    print(f"corpus: {corpus.name}, {args.docs:,} documents, {size_mb:,.0f} MB; threshold "
          f"{args.threshold}; {os.cpu_count()} cores\n")
    print(summary + "\n")
    print("| run | seconds | docs/s | MB/s | peak RSS | precision | recall |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| `neardup dedup` {' '.join(shlex.split(args.neardup_args))} | {float(wall):.1f} | "
          f"{args.docs / float(wall):,.0f} | {size_mb / float(wall):.1f} | "
          f"{int(rss_kb) / 1024:,.0f} MB | {s['precision']:.4f} | {s['recall']:.4f} |")
    print(f"\n{s['reported']:,} pairs reported; {s['planted_at_threshold']:,} planted pairs at or "
          f"above the threshold")
    print(json.dumps({"seconds": float(wall), "rss_mb": int(rss_kb) / 1024, **s}))


if __name__ == "__main__":
    main()
