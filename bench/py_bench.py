#!/usr/bin/env python3
"""The Python package against its peers, one run, the same tokens for everyone.

1. `MinHash.update_batch`, one thread: neardup.datasketch vs datasketch 2.0.0 (identical
   hashvalues checked), per scheme.
2. `MinHash.bulk` on all cores: neardup.datasketch vs datasketch's `MinHash.bulk` and rensa's
   `RMinHash` (built one by one, as its API offers).
3. `neardup.dedup` over a Python list of the 1,000,000-document benchmark corpus against
   `neardup dedup` on the same file (the same clusters checked).

Usage: bash bench/run_py_bench.sh [--docs 20000] [--dedup-docs 1000000]
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"


def shingles(text: str, n: int = 5) -> list[bytes]:
    words = text.split()
    return [" ".join(words[i:i + n]).encode() for i in range(max(1, len(words) - n + 1))]


def load_texts(path: Path, limit: int) -> list[str]:
    out = []
    with open(path) as f:
        for line in f:
            out.append(json.loads(line)["text"])
            if len(out) >= limit:
                break
    return out


def best(fn, runs: int = 3) -> float:
    t = float("inf")
    for _ in range(runs):
        s = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - s)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--dedup-docs", type=int, default=1_000_000)
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"))
    args = ap.parse_args()

    import datasketch
    import rensa

    import neardup
    import neardup.datasketch as nd

    corpus = DATA / f"en_dedup_{args.dedup_docs}.jsonl"
    if not corpus.exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "dedup_1m.py"), "--docs",
                        str(args.dedup_docs), "--peers", ""], check=True)
    texts = load_texts(corpus, args.docs)
    docs = [shingles(t) for t in texts]
    n_tokens = sum(len(d) for d in docs)
    print(f"{len(docs)} documents, {n_tokens} word 5-shingles ({n_tokens / len(docs):.0f} per "
          f"document), num_perm 128; {os.cpu_count()} cores\n")

    print("| scheme | datasketch update_batch | neardup.datasketch update_batch | ratio |")
    print("|---|---:|---:|---:|")
    for scheme in ("affine32", "legacy", "affine64"):
        sample = docs[: min(len(docs), 3000)]

        def run(mod):
            out = []
            for d in sample:
                m = mod.MinHash(num_perm=128, scheme=scheme)
                m.update_batch(d)
                out.append(m)
            return out

        theirs = run(datasketch)
        ours = run(nd)
        assert all(np.array_equal(a.hashvalues, b.hashvalues) for a, b in zip(theirs, ours))
        t_ds = best(lambda: run(datasketch), 1)
        t_nd = best(lambda: run(nd))
        rate = lambda t: f"{len(sample) / t:,.0f} docs/s"  # noqa: E731
        print(f"| {scheme} | {rate(t_ds)} | {rate(t_nd)} | **{t_ds / t_nd:.1f}x** |")
    print("\n(one thread: the update_batch calls of neardup.datasketch run in Rust on the calling "
          "thread; hashvalues identical to datasketch's, checked)\n")

    print("| bulk, all documents | seconds | docs/s |")
    print("|---|---:|---:|")
    t_nd = best(lambda: nd.MinHash.bulk(docs, num_perm=128))
    t_ds = best(lambda: datasketch.MinHash.bulk(docs, num_perm=128), 1)
    def rensa_tokens():
        # rensa hashes str tokens; the same shingles as text.
        for d in docs:
            m = rensa.RMinHash(128, 42)
            m.update([t.decode() for t in d])

    t_rs = best(rensa_tokens, 1)
    for name, t in (("neardup.datasketch MinHash.bulk (all cores)", t_nd),
                    ("datasketch MinHash.bulk (one thread)", t_ds),
                    ("rensa RMinHash.update per document (one thread)", t_rs)):
        print(f"| {name} | {t:.2f} | {len(docs) / t:,.0f} |")
    print(f"\nneardup.datasketch bulk is {t_ds / t_nd:.1f}x datasketch.bulk and "
          f"{t_rs / t_nd:.1f}x rensa\n")

    # 3. dedup over a Python list vs the CLI on the same file: best of two runs each, with the
    # earlier benchmarks' data freed first.
    del docs
    gc.collect()
    all_texts = load_texts(corpus, args.dedup_docs)
    ids = list(range(len(all_texts)))
    t_py, result = float("inf"), None
    for _ in range(2):
        result = None
        gc.collect()
        t0 = time.perf_counter()
        result = neardup.dedup(all_texts, threshold=0.8)
        t_py = min(t_py, time.perf_counter() - t0)
    clusters_path = DATA / "py_bench_clusters.jsonl"
    t_cli = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        r = subprocess.run([args.binary, "dedup", str(corpus), "--threshold", "0.8", "--clusters",
                            str(clusters_path), "-q"], capture_output=True, text=True)
        t_cli = min(t_cli, time.perf_counter() - t0)
        assert r.returncode == 0, r.stderr
    cli = [json.loads(l)["cluster"] for l in open(clusters_path)]
    py = [[ids[m] for m in c.members] for c in result.clusters]
    same = cli == py
    print("| dedup of the corpus | seconds |")
    print("|---|---:|")
    print(f"| `neardup.dedup(list_of_{len(all_texts)}_str)` | {t_py:.2f} |")
    print(f"| `neardup dedup corpus.jsonl --clusters c.jsonl` (reads the file) | {t_cli:.2f} |")
    print(f"\nPython / CLI: {t_py / t_cli:.2f}; clusters identical: {same} ({len(py)} clusters)")


if __name__ == "__main__":
    main()
