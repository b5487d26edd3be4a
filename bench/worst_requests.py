"""The service's and the CLI's memory on the worst requests of the third sweep (issue 32).

Each case runs on a fresh `neardup serve` (release build, defaults but where named) and reports
what the server answered and its peak resident memory (VmHWM) over the case; the CLI case runs
`neardup overlap` under /usr/bin/time. The cases, as the sweep sent them:

  batch-check  200 stored copies with 65 KB of metadata, then one 30 KB request: 250 documents,
               "insert": false, top_k 200 (it aborted the server asking 2.1 GB); then the
               largest batch the default 1 GiB budget admits (250 documents, top_k 50)
  overlap      a passage collection of 50 texts of 20,000 words over a 50-word vocabulary, then
               six 8 MB texts of that vocabulary checked at once (1.4 GB each; six aborted it)
  scan         50,000 stored documents, then one batch check of 200 below the collection's
               threshold (10^7 comparisons under the writer lock, 21-34 s), and an insert sent
               while it runs
  cli-overlap  neardup overlap of a 19 MB text of that vocabulary (3.7 GB, 39 s)
  own-metadata a variant of batch-check found after the fix: into an empty collection, one
               batch of 1,000 documents with 64 KB of metadata each and 600 copies of one of
               them, top_k 600 (its own metadata was not counted at admission)
  cli-maps     neardup dedup of 1.5 MB of JSON Lines whose records hold maps of their own
               words (meta.wordcounts) to Parquet (a column per key: 4.7 GB, aborted under 8 GB)

Usage: python3 bench/worst_requests.py [--bin target/release/neardup] [--case NAME ...]
"""
import argparse
import concurrent.futures
import json
import random
import re
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def words(rng, n, vocabulary=50):
    return " ".join(f"w{rng.randrange(vocabulary)}x" for _ in range(n))


class Server:
    def __init__(self, binary, data_dir, *args):
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0",
             "--max-body-bytes", str(256 << 20), *args],
            stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            m = re.search(r"listening on (\S+)", line)
            if m:
                self.base = m.group(1)
                break
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def call(self, method, path, body=None, timeout=600):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def peak_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def code(body):
    try:
        return json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return ""


def case_batch_check(binary, work):
    s = Server(binary, work / "batch", "--max-metadata-bytes", "70000")
    try:
        s.call("PUT", "/v1/collections/c", {"preset": "default"})
        text = words(random.Random(1), 300, vocabulary=5000)
        meta = {"blob": "m" * 65000}
        for i in range(0, 200, 50):
            docs = [{"id": j, "text": text, "metadata": meta} for j in range(i, i + 50)]
            s.call("POST", "/v1/collections/c/docs", {"docs": docs})
        batch = [{"id": f"q{i}", "text": text} for i in range(250)]
        rows = []
        for top_k in (200, 50):
            t = time.perf_counter()
            st, body = s.call("POST", "/v1/collections/c/check",
                              {"docs": batch, "insert": False, "top_k": top_k})
            what = f"{st} {code(body)}".strip() if st != 200 else f"200, {len(body) / 1e6:.0f} MB answer"
            rows.append((f"batch check 250 docs x top_k {top_k} x 65 KB metadata", what,
                         time.perf_counter() - t, s.peak_mb()))
        return rows
    finally:
        s.stop()


def case_overlap(binary, work):
    s = Server(binary, work / "overlap")
    try:
        s.call("PUT", "/v1/collections/lib", {"passages": True})
        rng = random.Random(7)
        for i in range(0, 50, 10):
            docs = [{"id": j, "text": words(rng, 20000)} for j in range(i, i + 10)]
            s.call("POST", "/v1/collections/lib/docs", {"docs": docs})
        texts = [words(random.Random(100 + i), 1_700_000) for i in range(6)]
        t = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(
                lambda text: s.call("POST", "/v1/collections/lib/overlap", {"text": text}),
                texts))
        seconds = time.perf_counter() - t
        statuses = {}
        for st, body in answers:
            key = f"{st} {code(body)}".strip()
            statuses[key] = statuses.get(key, 0) + 1
        what = ", ".join(f"{n} x {k}" for k, n in sorted(statuses.items()))
        return [("six 8 MB overlap checks at once (50-word vocabulary)", what, seconds,
                 s.peak_mb())]
    finally:
        s.stop()


def case_scan(binary, work):
    s = Server(binary, work / "scan")
    try:
        s.call("PUT", "/v1/collections/c", {"preset": "default"})
        rng = random.Random(3)
        for i in range(0, 50_000, 5_000):
            docs = [{"id": j, "text": words(rng, 60, vocabulary=20000)} for j in range(i, i + 5_000)]
            s.call("POST", "/v1/collections/c/docs", {"docs": docs})
        rows = []
        # 200 documents: refused; 1 document (50,000 verifications, within the default budget):
        # answered, with an insert sent while the scan holds the collection's writers.
        for n in (200, 1):
            batch = [{"id": f"q{i}", "text": words(rng, 60, vocabulary=20000)} for i in range(n)]
            done = {}

            def insert_meanwhile():
                time.sleep(0.05)
                t = time.perf_counter()
                st, _ = s.call("POST", "/v1/collections/c/docs",
                               {"docs": [{"id": f"late{n}", "text": "an insert sent meanwhile"}]})
                done["insert"] = (st, time.perf_counter() - t)

            th = threading.Thread(target=insert_meanwhile)
            th.start()
            t = time.perf_counter()
            st, body = s.call("POST", "/v1/collections/c/check",
                              {"docs": batch, "insert": False, "threshold": 0.5})
            seconds = time.perf_counter() - t
            th.join()
            ist, iseconds = done["insert"]
            rows.append((f"batch check {n} x 50,000 below the threshold",
                         f"{st} {code(body)}".strip(), seconds, s.peak_mb()))
            rows.append(("an insert sent meanwhile", f"{ist}, answered in {iseconds:.2f} s",
                         iseconds, s.peak_mb()))
        return rows
    finally:
        s.stop()


def case_cli_overlap(binary, work):
    rng = random.Random(7)
    coll = work / "coll.jsonl"
    with coll.open("w") as f:
        for i in range(50):
            f.write(json.dumps({"id": f"c{i}", "text": words(rng, 20000)}) + "\n")
    query = work / "q19.jsonl"
    query.write_text(json.dumps({"id": "q", "text": words(random.Random(8), 4_000_000)}) + "\n")
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M", str(binary), "overlap", str(query),
                          "--against", str(coll), "--summary", "/dev/null", "-q"],
                         capture_output=True, text=True, check=True)
    seconds, kb = out.stderr.strip().splitlines()[-1].split()
    return [("CLI: overlap of a 19 MB text (50-word vocabulary)", "done", float(seconds),
             int(kb) / 1024)]


def case_own_metadata(binary, work):
    s = Server(binary, work / "own", "--max-metadata-bytes", "70000")
    try:
        s.call("PUT", "/v1/collections/c", {"preset": "default"})
        rng = random.Random(5)
        meta = {"blob": "m" * 64000}
        core = words(rng, 300, vocabulary=5000)
        docs = [{"id": i, "text": f"{core} {words(rng, 30, vocabulary=5000)}", "metadata": meta}
                for i in range(1000)]
        docs += [{"id": f"copy{i}", "text": core, "metadata": meta} for i in range(600)]
        t = time.perf_counter()
        st, body = s.call("POST", "/v1/collections/c/check", {"docs": docs, "top_k": 600})
        what = f"{st} {code(body)}".strip() if st != 200 else f"200, {len(body) / 1e6:.0f} MB answer"
        return [("one batch storing 1,000 x 64 KB of metadata and 600 copies, top_k 600", what,
                 time.perf_counter() - t, s.peak_mb())]
    finally:
        s.stop()


def case_cli_maps(binary, work):
    corpus = work / "maps.jsonl"
    with corpus.open("w") as f:
        for i in range(8000):
            counts = {f"w{i * 8 + k}": k for k in range(8)}
            f.write(json.dumps({"id": i, "text": f"record {i} with words {i * 7} and {i * 13}",
                                "meta": {"wordcounts": counts}}) + "\n")
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M", str(binary), "dedup", str(corpus),
                          "-o", str(work / "kept.parquet"), "-q"],
                         capture_output=True, text=True, check=True)
    seconds, kb = out.stderr.strip().splitlines()[-1].split()
    mb = corpus.stat().st_size / 1e6
    return [(f"CLI: dedup of {mb:.1f} MB of JSONL holding maps to Parquet", "done",
             float(seconds), int(kb) / 1024)]


CASES = {"batch-check": case_batch_check, "overlap": case_overlap, "scan": case_scan,
         "cli-overlap": case_cli_overlap, "own-metadata": case_own_metadata,
         "cli-maps": case_cli_maps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target/release/neardup"))
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    args = ap.parse_args()
    print("| request | answer | seconds | peak RSS (MB) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="neardup-worst-") as tmp:
        for name in args.case or list(CASES):
            work = Path(tmp) / name
            work.mkdir()
            for row in CASES[name](Path(args.bin), work):
                print(f"| {row[0]} | {row[1]} | {row[2]:.2f} | {row[3]:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
