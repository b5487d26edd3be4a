#!/usr/bin/env python3
"""neardup against its peers, one thread each, same data, same shingles, one run.

    bash bench/run_peers.sh            # sets up bench/.venv, builds, runs this

Corpus: the license texts in /usr/share/common-licenses (real English prose, on every Debian
system) cut into ~1 KB documents, repeated to --mb megabytes. Features: word 5-shingles of
text.split(), joined by one space; neardup's peer_bench builds exactly these strings.

For each peer two figures: "update" times only the sketch calls on prebuilt shingle lists (the
peer's best case), "end to end" adds the Python split and join. neardup is always end to end
(tokenize, shingle, hash, sketch), in-process, excluding file reading, as the peers.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
PEER_BENCH = ROOT / "target" / "release" / "examples" / "peer_bench"


def corpus(mb: float) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"en_licenses_{mb:g}mb.jsonl"
    if path.exists():
        return path
    text = ""
    lic = Path("/usr/share/common-licenses")
    for name in ["GPL-3", "GPL-2", "LGPL-3", "LGPL-2.1", "Apache-2.0", "MPL-2.0", "GFDL-1.3", "Artistic"]:
        if (lic / name).exists():
            text += (lic / name).read_text(encoding="utf-8", errors="replace") + "\n"
    if not text:
        text = "\n".join(p.read_text() for p in sorted((ROOT / "examples/data/en").glob("*.txt")))
    words = text.split(" ")
    docs, cur = [], []
    size = 0
    for w in words:
        cur.append(w)
        size += len(w) + 1
        if size >= 1024:
            docs.append(" ".join(cur))
            cur, size = [], 0
    if cur:
        docs.append(" ".join(cur))
    target = int(mb * 1024 * 1024)
    total, i = 0, 0
    with path.open("w", encoding="utf-8") as f:
        while total < target:
            d = docs[i % len(docs)]
            f.write(json.dumps({"id": i, "text": d}, ensure_ascii=False) + "\n")
            total += len(d.encode())
            i += 1
    return path


def load(path: Path):
    return [json.loads(l)["text"] for l in path.open(encoding="utf-8")]


def shingles(text: str, n: int = 5):
    toks = text.split()
    if not toks:
        return []
    return [" ".join(toks[i:i + n]) for i in range(max(1, len(toks) - n + 1))]


def resource_peak_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn, docs):
    t = time.perf_counter()
    fn(docs)
    return time.perf_counter() - t


def neardup(mode: str, path: Path, repeat: int = 1):
    r = subprocess.run([str(PEER_BENCH), mode, str(path), str(repeat)], check=True,
                       capture_output=True, text=True)
    out = json.loads(r.stdout)
    out["peak_rss_mb"] = out["peak_rss_kb"] / 1024
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=4.0, help="corpus size in MB")
    ap.add_argument("--datasketch-fraction", type=float, default=0.25,
                    help="datasketch is slow: time it on this fraction of the corpus")
    args = ap.parse_args()

    import datasketch
    import rensa
    import simhash as simhash_pkg

    path = corpus(args.mb)
    docs = load(path)
    nbytes = sum(len(d.encode()) for d in docs)
    mb = nbytes / 1e6
    pre = [shingles(d) for d in docs]
    rows = []

    def row(name, seconds, bytes_=nbytes, note=""):
        rows.append((name, bytes_ / 1e6 / seconds, len(docs) * bytes_ / nbytes / seconds, note))

    # neardup (in-process Rust, one thread)
    for mode in ["minhash-perm", "minhash-oph", "simhash-shingles"]:
        r = neardup(mode, path)
        row(f"neardup {mode}", r["seconds"], note=f"peak RSS {r['peak_rss_mb']:.0f} MB")

    # rensa RMinHash
    def rensa_update(batches):
        for sh in batches:
            m = rensa.RMinHash(num_perm=128, seed=42)
            m.update(sh)
            m.digest()

    def rensa_e2e(texts):
        rensa_update([shingles(t) for t in texts])

    row("rensa RMinHash update", timed(rensa_update, pre))
    row("rensa RMinHash end to end", timed(rensa_e2e, docs))

    # datasketch MinHash (on a fraction)
    k = max(1, int(len(docs) * args.datasketch_fraction))
    part_bytes = sum(len(d.encode()) for d in docs[:k])

    def ds_update(batches):
        for sh in batches:
            m = datasketch.MinHash(num_perm=128)
            m.update_batch([s.encode("utf-8") for s in sh])

    def ds_e2e(texts):
        ds_update([shingles(t) for t in texts])

    row("datasketch MinHash update_batch", timed(ds_update, pre[:k]), part_bytes,
        f"on {args.datasketch_fraction:g} of the corpus")
    row("datasketch MinHash end to end", timed(ds_e2e, docs[:k]), part_bytes,
        f"on {args.datasketch_fraction:g} of the corpus")

    # simhash (PyPI) over the same shingles, md5 per feature
    def sh_e2e(texts):
        for t in texts:
            simhash_pkg.Simhash(shingles(t)).value

    row("simhash (PyPI) end to end", timed(sh_e2e, docs[:k]), part_bytes,
        f"on {args.datasketch_fraction:g} of the corpus")

    by = {r[0]: r[1] for r in rows}
    own_rss = resource_peak_mb()
    print(f"corpus: {path.name}, {len(docs)} documents, {mb:.1f} MB; "
          f"python {sys.version.split()[0]}, datasketch {datasketch.__version__ if hasattr(datasketch, '__version__') else '?'}")
    print(f"python process peak RSS (corpus, shingle lists and all peers): {own_rss:.0f} MB")
    print()
    print("| implementation | MB/s (one thread) | note |")
    print("|---|---:|---|")
    for name, mbs, _, note in rows:
        print(f"| {name} | {mbs:.2f} | {note} |")
    print()
    perm = by["neardup minhash-perm"]
    oph = by["neardup minhash-oph"]
    for peer in ["rensa RMinHash update", "rensa RMinHash end to end",
                 "datasketch MinHash update_batch", "datasketch MinHash end to end"]:
        print(f"- neardup minhash-perm / {peer}: {perm / by[peer]:.1f}x; "
              f"minhash-oph: {oph / by[peer]:.1f}x")
    print(f"- neardup simhash-shingles / simhash (PyPI): "
          f"{by['neardup simhash-shingles'] / by['simhash (PyPI) end to end']:.1f}x")


if __name__ == "__main__":
    main()
