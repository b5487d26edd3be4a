#!/usr/bin/env python3
"""Load test of `neardup serve` with wrk, and the same workload on datasketch MinHashLSH + Redis.

1. Starts `neardup serve` (release build) on a fresh data directory on loopback.
2. Batch inserts --docs documents of ~1 KB (the corpus of bench/dedup_1m.py: English, 10%
   near-duplicates) in batches of 1,000 from 2 client threads: documents/s.
3. `search` with wrk (2 threads, 32 connections, --seconds): each request a random stored
   document with one word changed. Requests/s and latency percentiles.
4. `check` with wrk: each request a new id, half of them near-duplicates of stored documents
   (not inserted), half new pages (inserted, durable before the reply).
5. The peer: datasketch 2.0 MinHashLSH(threshold 0.8, 128) with Redis storage (Debian's
   redis-server, started here on a private port), --peer-docs documents inserted with an
   insertion session, then queries from 2 Python threads for --seconds.

On PostgreSQL the database is vacuumed and analyzed after step 1, untimed: every store and
number of servers then searches and checks the same state of the tables, not one autovacuum is
still working through.

6. Restarts the server on the same store: the seconds until it listens (it rebuilds every
   collection's index from the store) and its memory then.

With --stores embedded,postgres, steps 1-4 and 6 run on each store in turn, in one run: the
embedded store in a new directory, and PostgreSQL in a throwaway cluster of Debian's
postgresql (initdb and pg_ctl, a Unix socket, fsync on; as `nobody` when run as root), started
here and removed at the end. The store's size is its files (embedded) or
pg_database_size (PostgreSQL).

Documents are streamed from --corpus in batches (nothing but a sample of 2,000 kept), so
--docs may be as large as the file: `--corpus bench/data/en_planted_10000000.jsonl --docs
10000000` (the corpus of bench/dedup_10m.py) for ten million.

Usage: bash bench/run_serve_load.sh [--docs 1000000] [--seconds 20] [--peer-docs 50000]
       [--stores embedded,postgres]
"""
import argparse
import http.client
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
PORT = 7790
REDIS_PORT = 7791


def corpus_lines(n, path=None):
    path = path or DATA / "en_dedup_1000000.jsonl"
    if not path.exists():
        sys.path.insert(0, str(ROOT / "bench"))
        import dedup_1m
        DATA.mkdir(parents=True, exist_ok=True)
        dedup_1m.make_corpus(path, 1_000_000)
    out = []
    with open(path, "rb") as f:
        for line in f:
            out.append(line.rstrip(b"\n"))
            if len(out) >= n:
                break
    return out


def corpus_batches(path, n, size=1000):
    """Batches of up to `size` JSONL lines, the first `n` lines of `path` in all."""
    count = 0
    with open(path, "rb") as f:
        batch = []
        for line in f:
            if count >= n:
                break
            batch.append(line.rstrip(b"\n"))
            count += 1
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch


class PgCluster:
    """A throwaway PostgreSQL cluster (Debian's postgresql) on a Unix socket in a new directory."""

    def __init__(self):
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        if not bins:
            sys.exit("PostgreSQL is not installed: apt-get install postgresql")
        self.bin = bins[-1].parent
        self.dir = Path(tempfile.mkdtemp(prefix="neardup-pg-bench-"))
        self.owner = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
        if self.owner:
            shutil.chown(self.dir, "nobody")
        data = self.dir / "data"
        subprocess.run(self.owner + [str(self.bin / "initdb"), "-D", str(data), "-A", "trust",
                                     "-U", "neardup", "-E", "UTF8", "--locale", "C"],
                       check=True, capture_output=True)
        subprocess.run(self.owner + [str(self.bin / "pg_ctl"), "-D", str(data), "-l",
                                     str(self.dir / "log"), "-o",
                                     f"-k {self.dir} -c listen_addresses=''", "-w", "start"],
                       check=True, capture_output=True)
        self.sql("postgres", "CREATE DATABASE bench")
        self.url = f"postgres://neardup@{str(self.dir).replace('/', '%2F')}/bench"

    def sql(self, db, sql):
        return subprocess.run([str(self.bin / "psql"), "-h", str(self.dir), "-U", "neardup",
                               "-d", db, "-Atqc", sql],
                              check=True, capture_output=True, text=True).stdout.strip()

    def close(self):
        subprocess.run(self.owner + [str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"),
                                     "-m", "fast", "-w", "stop"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def start_server(binary, store, server_args, port=PORT):
    """`neardup serve` on `store` (a directory, or a PostgreSQL URL); returns the process and
    the seconds until it listened."""
    t = time.perf_counter()
    where = ["--store", store] if str(store).startswith("postgres") else ["--data-dir", str(store)]
    server = subprocess.Popen([str(binary), "serve"] + where + [
                               "--listen", f"127.0.0.1:{port}", "--max-body-bytes", str(256 << 20)]
                              + shlex.split(server_args),
                              stderr=subprocess.PIPE, text=True)
    for line in server.stderr:
        if "listening on" in line:
            break
    started = time.perf_counter() - t
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    return server, started


def request(conn, method, path, body=None):
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data)


def wrk(lua, seconds, url, threads=2, connections=32):
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency",
                          "-s", lua, url],
                         capture_output=True, text=True, check=True).stdout
    rps = float(next(l for l in out.splitlines() if l.startswith("Requests/sec")).split()[1])
    lat = {}
    for l in out.splitlines():
        parts = l.split()
        if len(parts) == 2 and parts[0] in ("50%", "90%", "99%"):
            v = parts[1]
            ms = float(v[:-2]) if v.endswith("ms") else float(v[:-2]) / 1000 if v.endswith("us") else float(v[:-1]) * 1000
            lat[parts[0]] = ms
    errors = [l.strip() for l in out.splitlines() if "Non-2xx" in l or "Socket errors" in l]
    return rps, lat, errors, out


def wrk_all(lua, seconds, ports):
    """wrk on each server at once (2 threads and 32 connections in all, split between them):
    the requests/s summed, each percentile the worst server's."""
    if len(ports) == 1:
        return wrk(lua, seconds, f"http://127.0.0.1:{ports[0]}")
    results = [None] * len(ports)

    def one(i):
        results[i] = wrk(lua, seconds, f"http://127.0.0.1:{ports[i]}", 1, 32 // len(ports))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(ports))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    rps = sum(r[0] for r in results)
    lat = {k: max(r[1].get(k, 0) for r in results) for k in ("50%", "90%", "99%")}
    errors = [e for r in results for e in r[2]]
    return rps, lat, errors, "\n".join(r[3] for r in results)


def lua_bodies(path, bodies, route):
    """A wrk script that posts a random body of `bodies` (written one per line to a file)."""
    body_file = path.with_suffix(".bodies")
    body_file.write_text("\n".join(bodies) + "\n")
    path.write_text(f"""
local bodies = {{}}
for line in io.lines("{body_file}") do bodies[#bodies + 1] = line end
local counter = 0
request = function()
  counter = counter + 1
  local body = bodies[math.random(#bodies)]
  body = string.gsub(body, "__ID__", tostring(math.random(1, 2000000000)) .. "-" .. counter)
  return wrk.format("POST", "{route}", {{["Content-Type"] = "application/json"}}, body)
end
""")
    return str(path)


def edit(text, rng):
    words = text.split()
    i = rng.randrange(len(words))
    words[i] = "zzz" + words[i]
    return " ".join(words)


def server_memory(pid):
    """The server's resident memory now and its peak so far (VmRSS, VmHWM), in MB."""
    fields = {l.split(":")[0]: int(l.split()[1]) / 1024 for l in open(f"/proc/{pid}/status")
              if l.startswith(("VmRSS", "VmHWM"))}
    return fields["VmRSS"], fields["VmHWM"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--peer-docs", type=int, default=50_000)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--server-args", default="", help="more options for neardup serve")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"),
                    help="the neardup to serve (another build, to compare two in one run)")
    ap.add_argument("--clients", type=int, default=2, help="concurrent batch-insert clients")
    ap.add_argument("--corpus", type=Path, default=DATA / "en_dedup_1000000.jsonl",
                    help="the JSONL documents to insert (streamed)")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="a new directory for the store, removed at the end (default: a new "
                         "temporary directory)")
    ap.add_argument("--collection", default="{}",
                    help="the collection's settings (JSON), e.g. a spec with one-permutation MinHash")
    ap.add_argument("--stores", default="embedded",
                    help="the stores to serve from, in turn: embedded, postgres (one server), "
                         "postgres2 (two servers on one database), e.g. embedded,postgres,postgres2")
    args = ap.parse_args()
    rng = random.Random(5)
    if args.corpus == DATA / "en_dedup_1000000.jsonl":
        corpus_lines(1, args.corpus)  # builds it when missing

    results = []
    for store in args.stores.split(","):
        if store not in ("embedded", "postgres", "postgres2"):
            sys.exit(f"--stores: {store!r} is not embedded, postgres or postgres2")
        results += run_neardup(args, store, random.Random(5))

    if not args.no_peer:
        results += peer(corpus_lines(args.peer_docs, args.corpus), args.seconds, rng)

    print("\n| workload | throughput | latency | notes |")
    print("|---|---:|---|---|")
    for r in results:
        print("| " + " | ".join(r) + " |")


def run_neardup(args, store_kind, rng):
    """Steps 1-4 and 6 on one store; the rows of the table."""
    cluster = None
    ports = [PORT, PORT + 2] if store_kind == "postgres2" else [PORT]
    if store_kind.startswith("postgres"):
        cluster = PgCluster()
        store = cluster.url
        data_dir = cluster.dir
    elif args.data_dir:
        args.data_dir.mkdir(parents=True, exist_ok=False)
        store = data_dir = args.data_dir
    else:
        store = data_dir = Path(tempfile.mkdtemp(prefix="neardup-load-"))
    tag = f"[{store_kind}, {len(ports)} server{'s' if len(ports) > 1 else ''}] "
    binary = Path(args.binary)
    servers = [start_server(binary, store, args.server_args, port)[0] for port in ports]
    server = servers[0]
    results = []
    try:
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=600)
        request(conn, "PUT", "/v1/collections/load", args.collection.encode())
        print(f"collection: {args.collection}")

        # 1. batch inserts, streamed from the corpus; a reservoir sample of 2,000 texts kept
        batches = corpus_batches(args.corpus, args.docs)
        lock = threading.Lock()
        sample_lines, seen, jsonl_bytes = [], 0, 0

        def insert_worker(port):
            nonlocal seen, jsonl_bytes
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            while True:
                with lock:
                    batch = next(batches, None)
                    if batch is None:
                        return
                    for line in batch:
                        seen += 1
                        jsonl_bytes += len(line) + 1
                        if len(sample_lines) < 2000:
                            sample_lines.append(line)
                        elif (j := rng.randrange(seen)) < 2000:
                            sample_lines[j] = line
                body = b'{"docs":[' + b",".join(batch) + b"]}"
                request(c, "POST", "/v1/collections/load/docs", body)

        t = time.perf_counter()
        workers = [threading.Thread(target=insert_worker, args=(ports[i % len(ports)],))
                   for i in range(args.clients)]
        [w.start() for w in workers]
        [w.join() for w in workers]
        insert_s = time.perf_counter() - t
        print(f"{seen} documents, {jsonl_bytes / 1e6:.0f} MB of JSONL from {args.corpus.name}; "
              f"{os.cpu_count()} cores")
        stored = request(conn, "GET", "/v1/collections/load")["documents"]
        rss = ", ".join(f"{server_memory(s.pid)[0]:.0f}" for s in servers)
        results.append((tag + f"neardup batch insert (1,000/batch, {args.clients} clients)", f"{seen / insert_s:,.0f} docs/s", "", f"{stored} stored, {insert_s:.1f} s, server RSS {rss} MB"))
        if cluster:
            # The same database state for every configuration: what autovacuum would do to
            # the tables just loaded (sooner or later after a faster load) done now, untimed,
            # so that search and check do not race it.
            t = time.perf_counter()
            cluster.sql("bench", "VACUUM ANALYZE")
            print(f"VACUUM ANALYZE after the load: {time.perf_counter() - t:.1f} s (untimed)")

        # 2. search
        sample = [json.loads(line)["text"] for line in sample_lines]
        rng.shuffle(sample)
        bodies = [json.dumps({"text": edit(t, rng), "top_k": 10}) for t in sample]
        lua = lua_bodies(DATA / "search.lua", bodies, "/v1/collections/load/search")
        rps, lat, errors, _ = wrk_all(lua, args.seconds, ports)
        hits = sum(1 for b in bodies[:200] if request(conn, "POST", "/v1/collections/load/search", b.encode())["hits"])
        results.append((tag + "neardup search (wrk -t2 -c32)", f"{rps:,.0f} req/s", f"p50 {lat.get('50%', 0):.2f} / p90 {lat.get('90%', 0):.2f} / p99 {lat.get('99%', 0):.2f} ms", f"{hits}/200 queries found their source; {'; '.join(errors) or 'no errors'}"))

        # 3. check: half near-duplicates, half new pages
        new_pages = [" ".join(rng.sample(t.split(), len(t.split()))) for t in sample[:1000]]
        bodies = [json.dumps({"id": "__ID__", "text": edit(t, rng)}) for t in sample[1000:]] + \
                 [json.dumps({"id": "__ID__", "text": t}) for t in new_pages]
        lua = lua_bodies(DATA / "check.lua", bodies, "/v1/collections/load/check")
        rps, lat, errors, _ = wrk_all(lua, args.seconds, ports)
        rss = ", ".join(f"{server_memory(s.pid)[0]:.0f}" for s in servers)
        peak = ", ".join(f"{server_memory(s.pid)[1]:.0f}" for s in servers)
        results.append((tag + "neardup check (wrk -t2 -c32; half new pages, inserted durably)", f"{rps:,.0f} req/s", f"p50 {lat.get('50%', 0):.2f} / p90 {lat.get('90%', 0):.2f} / p99 {lat.get('99%', 0):.2f} ms", ("; ".join(errors) or "no errors") + f"; server RSS {rss} MB, peak {peak} MB over the whole run"))

        # 4. a restart on the same store: every index rebuilt from it
        for s in servers:
            s.terminate()
            s.wait()
        if cluster:
            store_mb = int(cluster.sql("bench", "SELECT pg_database_size('bench')")) / 1e6
        else:
            store_mb = sum(f.stat().st_size for f in data_dir.rglob("*") if f.is_file()) / 1e6
        server, started = start_server(binary, store, args.server_args)
        servers = [server]
        rss, peak = server_memory(server.pid)
        fresh = http.client.HTTPConnection("127.0.0.1", PORT, timeout=600)
        stored = request(fresh, "GET", "/v1/collections/load")["documents"]
        results.append((tag + "neardup restart (index rebuilt from the store)", f"{started:.1f} s to listen", "",
                        f"{stored} documents; store {store_mb:,.0f} MB on disk ({store_mb * 1e6 / max(stored, 1):,.0f} bytes/doc); server RSS {rss:.0f} MB (peak {peak:.0f} MB)"))
    finally:
        for s in servers:
            s.terminate()
            s.wait()
        if cluster:
            cluster.close()
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    return results


def peer(lines, seconds, rng):
    from datasketch import MinHash, MinHashLSH
    redis_dir = Path(tempfile.mkdtemp(prefix="neardup-redis-"))
    redis = subprocess.Popen(["redis-server", "--port", str(REDIS_PORT), "--dir", str(redis_dir),
                              "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"],
                             stdout=subprocess.DEVNULL)
    time.sleep(1)
    out = []
    try:
        def sig(text):
            words = text.lower().split()
            m = MinHash(num_perm=128)
            m.update_batch([" ".join(words[i:i + 5]).encode() for i in range(max(1, len(words) - 4))])
            return m

        lsh = MinHashLSH(threshold=0.8, num_perm=128, storage_config={
            "type": "redis", "basename": b"load", "redis": {"host": "127.0.0.1", "port": REDIS_PORT}})
        docs = [json.loads(l) for l in lines]
        t = time.perf_counter()
        with lsh.insertion_session(buffer_size=1000) as s:
            for d in docs:
                s.insert(str(d["id"]), sig(d["text"]), check_duplication=False)
        insert_s = time.perf_counter() - t
        out.append((f"datasketch MinHashLSH + Redis insertion session ({len(docs):,} docs)", f"{len(docs) / insert_s:,.0f} docs/s", "", "MinHash(128) of word 5-shingles included"))

        queries = [edit(docs[rng.randrange(len(docs))]["text"], rng) for _ in range(2000)]
        lat, stop = [], time.perf_counter() + seconds

        def q():
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                lsh.query(sig(queries[rng.randrange(len(queries))]))
                lat.append(time.perf_counter() - t0)

        ths = [threading.Thread(target=q) for _ in range(2)]
        t = time.perf_counter()
        [x.start() for x in ths]
        [x.join() for x in ths]
        el = time.perf_counter() - t
        lat.sort()
        p = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))] * 1000
        out.append(("datasketch MinHashLSH + Redis query (2 Python threads)", f"{len(lat) / el:,.0f} req/s", f"p50 {p(0.5):.2f} / p90 {p(0.9):.2f} / p99 {p(0.99):.2f} ms", "in-process calls, no HTTP; candidates only, no verification"))
    finally:
        redis.terminate()
        redis.wait()
        shutil.rmtree(redis_dir, ignore_errors=True)
    return out


if __name__ == "__main__":
    main()
