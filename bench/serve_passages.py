#!/usr/bin/env python3
"""The service's passage check on each store, in one run: the same collection and queries
through `neardup serve` on the embedded store and on PostgreSQL, their answers compared.

For each labelled set given (the format of shared/passages: collection.jsonl, queries.jsonl):
1. starts `neardup serve` (release build) on a new data directory, then on a throwaway
   PostgreSQL cluster (bench/serve_load.py's `PgCluster`: Debian's postgresql, a Unix socket);
2. creates a collection with `"passages": true` and stores the collection through
   `POST .../docs` in batches of 500: documents/s;
3. checks every query through `POST .../overlap`, one at a time: checks/s, p50 and p99;
4. stops the server and reads its peak RSS (VmHWM);
5. compares each query's passages (query range, source id, source range) between the stores.

With --corpus FILE --docs N (JSON Lines, `id` and `text`): the first N documents as the
collection, and as queries 200 of them spread over it, each with a sentence of its own before
and after (so every check finds its document), on the stores of --stores only (default both):
the memory a server takes as a passage collection grows, and the database's size.

Usage: python3 bench/serve_passages.py [--binary target/release/neardup] SET_DIR...
       python3 bench/serve_passages.py --corpus bench/data/en_dedup_1000000.jsonl --docs 200000
           --stores postgres
"""
import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_load import PgCluster, request, start_server  # noqa: E402

import http.client  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def peak_rss_mb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def corpus_set(path, n, queries=200):
    collection = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if len(collection) == n:
                break
            d = json.loads(line)
            collection.append({"id": str(d["id"]), "text": d["text"]})
    step = max(1, len(collection) // queries)
    picked = [{"text": "An opening sentence of the checker's own. " + d["text"]
               + " A closing sentence of its own."} for d in collection[::step][:queries]]
    return collection, picked


def run(binary, store, collection, queries, port):
    server, _ = start_server(binary, store, "", port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        request(conn, "PUT", "/v1/collections/lib", json.dumps({"passages": True}))
        t = time.perf_counter()
        for i in range(0, len(collection), 500):
            docs = [{"id": str(d["id"]), "text": d["text"]} for d in collection[i:i + 500]]
            request(conn, "POST", "/v1/collections/lib/docs", json.dumps({"docs": docs}))
        insert_s = time.perf_counter() - t
        answers, times = [], []
        for q in queries:
            t = time.perf_counter()
            v = request(conn, "POST", "/v1/collections/lib/overlap", json.dumps({"text": q["text"]}))
            times.append(time.perf_counter() - t)
            answers.append([(p["start"], p["end"], p["source"], p["source_start"], p["source_end"])
                            for p in v["passages"]])
        rss = peak_rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait()
    times.sort()
    return {
        "docs_per_s": len(collection) / insert_s,
        "checks_per_s": len(queries) / sum(times),
        "p50_ms": 1000 * times[len(times) // 2],
        "p99_ms": 1000 * times[min(len(times) - 1, int(len(times) * 0.99))],
        "rss_mb": rss,
        "answers": answers,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"))
    ap.add_argument("--corpus")
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--stores", default="embedded,postgres")
    ap.add_argument("sets", nargs="*")
    args = ap.parse_args()
    stores = args.stores.split(",")
    print("| set | documents | queries | store | stored docs/s | checks/s | p50 ms | p99 ms "
          "| server peak RSS MB | passages | same answers |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    inputs = [(Path(d).name, lambda d=d: (load(Path(d) / "collection.jsonl"),
                                          load(Path(d) / "queries.jsonl"))) for d in args.sets]
    if args.corpus:
        inputs.append((f"{Path(args.corpus).name}, first {args.docs}",
                       lambda: corpus_set(args.corpus, args.docs)))
    for name, read in inputs:
        collection, queries = read()
        results = {}
        data = Path(tempfile.mkdtemp(prefix="neardup-serve-passages-"))
        cluster = PgCluster()
        try:
            if "embedded" in stores:
                results["embedded"] = run(args.binary, data, collection, queries, 7792)
            if "postgres" in stores:
                results["postgres"] = run(args.binary, cluster.url, collection, queries, 7793)
                size = int(cluster.sql("bench", "SELECT pg_database_size('bench')"))
                results["postgres"]["db_mb"] = size / 2**20
        finally:
            cluster.close()
            shutil.rmtree(data, ignore_errors=True)
        answers = [r["answers"] for r in results.values()]
        same = sum(all(a == x[i] for x in answers) for i, a in enumerate(answers[0]))
        for store, r in results.items():
            print(f"| {name} | {len(collection)} | {len(queries)} | {store} | "
                  f"{r['docs_per_s']:.0f} | {r['checks_per_s']:.1f} | {r['p50_ms']:.1f} | "
                  f"{r['p99_ms']:.1f} | {r['rss_mb']:.0f} | "
                  f"{sum(map(len, r['answers']))} | {same}/{len(queries)} |"
                  + (f" database {r['db_mb']:.0f} MB" if "db_mb" in r else ""))


if __name__ == "__main__":
    main()
