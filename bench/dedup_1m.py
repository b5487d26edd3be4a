#!/usr/bin/env python3
"""End-to-end dedup speed and memory: neardup against datasketch MinHashLSH and rensa, one run.

Builds (once, cached in bench/data/) an English JSONL corpus of --docs documents of about 1 KB:
words drawn with Zipf frequencies from the vocabulary of real English text (the Debian copyright
files and licenses in /usr/share), 10% of the documents being near-duplicates of earlier ones
(1-3% of their words substituted, some exact copies). Then, each in its own process so that the
peak RSS is its own:

  neardup   `neardup dedup corpus.jsonl --output kept.jsonl` (word 5-shingles, MinHash 128,
            LSH bands for the threshold, exact Jaccard verification, clusters, kept records)
  datasketch  words split, 5-shingles, MinHash(128).update_batch, MinHashLSH(threshold) insert
            and query of every document; a document is dropped when it has an earlier candidate
  rensa     RMinHash.from_token_sets (128), RMinHashLSH insert_many + query_all, same rule

Usage: bash bench/run_dedup_1m.sh [--docs 1000000] [--threshold 0.8] [--peers datasketch,rensa]
       [--binary PATH] [--neardup-args "--recall 0.999"] [--runs 1]
"""
import argparse
import json
import os
import random
import re
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"


def vocabulary() -> list[str]:
    """The 30,000 most frequent words of the Debian copyright files and licenses on this
    machine, most frequent first (ties by word, files in path order: the same on every run)."""
    words: dict[str, int] = {}
    sources = list(Path("/usr/share/common-licenses").glob("*"))
    sources += list(Path("/usr/share/doc").glob("*/copyright"))
    for p in sorted(sources):
        try:
            text = p.read_text(errors="ignore")
        except OSError:
            continue
        for w in re.findall(r"[A-Za-z][a-z]+", text):
            words[w.lower()] = words.get(w.lower(), 0) + 1
    return sorted(words, key=lambda w: (-words[w], w))[:30000]


def make_corpus(path, n, seed=7):
    rng = random.Random(seed)
    vocab = vocabulary()
    cum, total = [], 0.0
    for r in range(len(vocab)):
        total += 1.0 / (r + 1) ** 1.05
        cum.append(total)
    originals = []
    planted = 0
    with open(path, "w") as out:
        for i in range(n):
            if i > 1000 and rng.random() < 0.10:
                base = originals[rng.randrange(len(originals))]
                rate = rng.choice([0.0, 0.01, 0.02, 0.03])
                words = [rng.choice(vocab) if rng.random() < rate else w for w in base]
                planted += 1
            else:
                words = rng.choices(vocab, cum_weights=cum, k=rng.randint(150, 190))
                if len(originals) < 200000:
                    originals.append(words)
                else:
                    originals[rng.randrange(len(originals))] = words
            out.write(json.dumps({"id": i, "text": " ".join(words)}) + "\n")
    return planted


def shingles(text, n=5):
    words = text.lower().split()
    return [" ".join(words[i:i + n]) for i in range(max(1, len(words) - n + 1))]


def peer(name, corpus, threshold):
    """Runs in its own process; prints one JSON line."""
    t0 = time.perf_counter()
    texts = [json.loads(line)["text"] for line in open(corpus)]
    dropped = 0
    if name == "datasketch":
        from datasketch import MinHash, MinHashLSH
        lsh = MinHashLSH(threshold=threshold, num_perm=128)
        sigs = []
        for i, t in enumerate(texts):
            m = MinHash(num_perm=128)
            m.update_batch([s.encode() for s in shingles(t)])
            sigs.append(m)
        with lsh.insertion_session() as session:
            for i, m in enumerate(sigs):
                session.insert(i, m, check_duplication=False)
        for i, m in enumerate(sigs):
            if any(k < i for k in lsh.query(m)):
                dropped += 1
    elif name == "rensa":
        import rensa
        mhs = rensa.RMinHash.from_token_sets((shingles(t) for t in texts), 128, 42)
        lsh = rensa.RMinHashLSH(threshold, 128, 16)
        lsh.insert_many(mhs, 0)
        for i, cands in enumerate(lsh.query_all(mhs)):
            if any(k < i for k in cands):
                dropped += 1
    else:
        raise SystemExit(f"unknown peer {name}")
    elapsed = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peer": name, "seconds": elapsed, "rss_mb": rss, "dropped": dropped}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--peers", default="datasketch,rensa")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"))
    ap.add_argument("--neardup-args", default="", help="more options for neardup dedup")
    ap.add_argument("--runs", type=int, default=1, help="neardup runs (the best is reported)")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        return peer(args.peer, args.corpus, args.threshold)

    DATA.mkdir(parents=True, exist_ok=True)
    corpus = DATA / f"en_dedup_{args.docs}.jsonl"
    if not corpus.exists():
        t = time.perf_counter()
        planted = make_corpus(corpus, args.docs)
        print(f"made {corpus.name}: {args.docs} documents, {planted} planted near-duplicates, "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr)
    size_mb = corpus.stat().st_size / 1e6
    print(f"corpus: {corpus.name}, {args.docs} documents, {size_mb:.0f} MB; threshold "
          f"{args.threshold}; {os.cpu_count()} cores")

    kept = DATA / "kept.jsonl"
    extra = shlex.split(args.neardup_args)
    neardup_s, neardup_rss = float("inf"), 0.0
    for _ in range(args.runs):
        # Timed by /usr/bin/time: its peak RSS is the neardup process's own (a child forked by
        # Python may be charged the parent's pages).
        t = time.perf_counter()
        r = subprocess.run(["/usr/bin/time", "-f", "%M", args.binary, "dedup", str(corpus),
                            "--threshold", str(args.threshold), "--output", str(kept)] + extra,
                           capture_output=True, text=True)
        neardup_s = min(neardup_s, time.perf_counter() - t)
        if r.returncode != 0:
            raise SystemExit(r.stderr)
        *summary, rss_kb = r.stderr.strip().splitlines()
        neardup_rss = max(neardup_rss, int(rss_kb) / 1024)
        summary = "\n".join(summary)
        print(f"\nneardup summary ({args.binary} {' '.join(extra)}):\n{summary}")
    kept_n = sum(1 for _ in open(kept))
    rows = [(f"neardup dedup {' '.join(extra)} (2 threads)", neardup_s, neardup_rss,
             args.docs - kept_n)]

    for name in [p for p in args.peers.split(",") if p]:
        r = subprocess.run([sys.executable, __file__, "--peer", name, "--corpus", str(corpus),
                            "--threshold", str(args.threshold)], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name} failed: {r.stderr[-2000:]}", file=sys.stderr)
            continue
        res = json.loads(r.stdout.strip().splitlines()[-1])
        rows.append((f"{name} (1 thread)", res["seconds"], res["rss_mb"], res["dropped"]))

    print("| implementation | seconds | docs/s | MB/s | peak RSS MB | dropped |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, s, rss, dropped in rows:
        print(f"| {name} | {s:.1f} | {args.docs / s:,.0f} | {size_mb / s:.1f} | {rss:.0f} | "
              f"{dropped} |")
    for name, s, _, _ in rows[1:]:
        print(f"- neardup is {s / neardup_s:.1f}x faster than {name}")


if __name__ == "__main__":
    main()
