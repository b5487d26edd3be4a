#!/usr/bin/env python3
"""Labelled sets for the passage check, of the hard "same-domain" kind (Python 3.11, stdlib only).

Two steps (bench/passages/README.md says which material and which commands):

  make_set.py pool law|markdown|man|mojlaw SRC_DIR POOL.jsonl [--chunk N]
      Cleans raw material into a pool of documents, one JSON line each: {"id", "text", "group"}.
      `law`: LawRefBook-style Markdown laws (versions of one law share a group); `markdown`: a
      documentation tree (front matter, code blocks, link targets and tags dropped); `man`: a tree
      of roff man pages, rendered with `man -l`; `mojlaw`: Taiwan's laws as one JSON file each
      (kong0107/mojLawSplitJSON's FalVMingLing/). Documents longer than --chunk characters are
      split at their headings (a group per file); pieces under 300 characters are dropped.

  make_set.py build POOL.jsonl OUT_DIR --lang zh|en [--seed N] [--collection N] [--queries N]
      Writes OUT_DIR/{collection,queries,truth,meta}.jsonl|json in the format of
      shared/passages/README.md. The collection and the original writing of the queries are drawn
      from the one pool (disjoint groups), so copy-free text shares the domain's stock phrases
      with the collection. Four queries in five get 1-8 passages of collection documents spliced
      in at sentence boundaries (verbatim, light, heavy or reorder); the fifth copies nothing.
      Text of a query outside its planted passages that stands verbatim in the collection (at
      least 13 characters for zh, 8 words for en) is marked `incidental`. Every truth line is
      checked against the texts as written before the run ends. Deterministic given --seed.
"""
import argparse
import bisect
import gzip
import json
import math
import os
import random
import re
import subprocess
import sys
from collections import Counter, defaultdict
from difflib import SequenceMatcher

MIN_DOC, MAX_DOC = 300, 20000

# --------------------------------------------------------------------------------------------
# Pools


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


FENCE = re.compile(r"^\s*(```|~~~)")
TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def clean_markdown(text):
    """Markdown to plain text: returns a list of (is_heading, line) in order, blank lines kept."""
    text = text.replace("\r\n", "\n").replace("\ufeff", "")
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            text = text[text.find("\n", end + 1) + 1:] if text.find("\n", end + 1) != -1 else ""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out, in_fence = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        s = line.strip()
        if s.startswith(("{{<", "{{%", "{%", ":::", "<div", "</div")) or TABLE_SEP.match(s):
            continue
        if re.match(r"^\[[^\]]+\]:\s*\S+", s):  # link definition
            continue
        heading = bool(re.match(r"^#{1,6}\s", s))
        s = re.sub(r"^#{1,6}\s*", "", s)
        s = re.sub(r"\s*#+$", "", s) if heading else s
        s = re.sub(r"^(>\s*)+", "", s)
        s = re.sub(r"^\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*", "", s)
        if s.startswith("|"):
            s = "  ".join(c.strip() for c in s.strip("|").split("|") if c.strip())
        s = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", s)
        s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
        s = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", s)
        s = re.sub(r"</?[A-Za-z][^>]*>", "", s)
        s = s.replace("**", "").replace("__", "").replace("`", "")
        s = re.sub(r"[ \t]+", " ", s).strip()
        if s in ("-", "*", "+") or re.fullmatch(r"\d+\.", s):
            continue
        out.append((heading and bool(s), s))
    return drop_empty_headings(out)


def drop_empty_headings(lines):
    """Drops headings with no text before the next heading (tables of contents, empty sections)."""
    keep = []
    for i, (h, s) in enumerate(lines):
        if h:
            j = i + 1
            while j < len(lines) and not lines[j][1]:
                j += 1
            if j == len(lines) or lines[j][0]:
                continue
        keep.append((h, s))
    return keep


def sections(lines):
    """Splits (is_heading, line) lines into sections, each starting at a heading."""
    secs, cur = [], []
    for h, s in lines:
        if h and cur:
            secs.append(cur)
            cur = []
        cur.append(s)
    if cur:
        secs.append(cur)
    return [re.sub(r"\n{3,}", "\n\n", "\n".join(s)).strip() for s in secs]


def pack(secs, chunk):
    """Packs sections into documents of at most `chunk` characters (a longer section is cut at
    paragraphs); pieces under MIN_DOC join the previous one or are dropped."""
    pieces = []
    for s in secs:
        if len(s) <= chunk:
            pieces.append(s)
            continue
        cur = ""
        for para in s.split("\n\n"):
            if cur and len(cur) + 2 + len(para) > chunk:
                pieces.append(cur)
                cur = ""
            cur = f"{cur}\n\n{para}" if cur else para
        if cur:
            pieces.append(cur)
    docs, cur = [], ""
    for p in pieces:
        if cur and len(cur) + 2 + len(p) > chunk:
            docs.append(cur)
            cur = ""
        cur = f"{cur}\n\n{p}" if cur else p
    if cur:
        if len(cur) < MIN_DOC and docs and len(docs[-1]) + 2 + len(cur) <= MAX_DOC:
            docs[-1] += "\n\n" + cur
        else:
            docs.append(cur)
    return [d[:MAX_DOC] for d in docs if len(d) >= MIN_DOC]


def walk(root, suffixes):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith(suffixes):
                yield os.path.join(dirpath, f)


def pool_law(root, chunk):
    skip = {"README.md", "_index.md", "法律法规模版.md"}
    for path in walk(root, (".md",)):
        rel = os.path.relpath(path, root)
        if os.path.basename(path) in skip or rel.startswith("scripts"):
            continue
        with open(path, encoding="utf-8") as f:
            lines = clean_markdown(f.read())
        stem = os.path.basename(path)[:-3]
        group = re.sub(r"\(\d{4}-\d{1,2}-\d{1,2}\)$", "", stem)
        for i, text in enumerate(pack(sections(lines), chunk)):
            yield {"id": f"{rel[:-3]}#{i}", "text": text, "group": group}


def pool_markdown(root, chunk):
    for path in walk(root, (".md", ".markdown")):
        rel = os.path.relpath(path, root)
        base = os.path.basename(path)
        if base.upper().startswith(("README", "TOC", "LICENSE", "CONTRIBUTING", "CODE_OF_CONDUCT", "SECURITY")) \
                or base.startswith("_"):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = clean_markdown(f.read())
        for i, text in enumerate(pack(sections(lines), chunk)):
            yield {"id": f"{rel.rsplit('.', 1)[0]}#{i}", "text": text, "group": rel}


def pool_mojlaw(root, chunk):
    """Taiwan's national law database as split into one JSON file per law (法規名稱, 沿革內容,
    法規內容: articles {條號, 條文內容} and headings {編章節})."""
    for path in walk(root, (".json",)):
        with open(path, encoding="utf-8-sig") as f:
            d = json.load(f)
        if not isinstance(d, dict) or "法規內容" not in d:
            continue
        title = d.get("法規名稱", "").strip()
        history = re.sub(r"\n[ \u3000]+", "", (d.get("沿革內容") or "").replace("\r\n", "\n")).strip()
        lines = [(True, title), (False, history), (False, "")]
        for it in d["法規內容"]:
            if "編章節" in it:
                lines.append((True, it["編章節"].strip()))
            elif "條文內容" in it:
                body = it["條文內容"].replace("\r\n", "\n").strip()
                lines.append((False, f"{it.get('條號', '').strip()} {body}".strip()))
        lines = drop_empty_headings(lines)
        rel = os.path.relpath(path, root)
        for i, text in enumerate(pack(sections(lines), chunk)):
            yield {"id": f"{title or rel}#{i}", "text": text, "group": title or rel}


BOX = re.compile(r"[\u2500-\u257f]")


def render_man(path):
    env = dict(os.environ, MANWIDTH="1000", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="0")
    r = subprocess.run(["man", "-E", "UTF-8", "-l", path], capture_output=True, env=env)
    col = subprocess.run(["col", "-bx"], input=r.stdout, capture_output=True)
    return col.stdout.decode("utf-8", "replace")


def pool_man(root, chunk):
    for path in walk(root, (".gz", ".1", ".2", ".3", ".4", ".5", ".6", ".7", ".8")):
        if os.path.islink(path):
            continue
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
        if re.match(r"^\.so\s", head.lstrip()):
            continue
        raw = render_man(path).split("\n")
        while raw and not raw[-1].strip():
            raw.pop()
        raw = raw[1:-1]  # the title and footer lines
        lines, skipping = [], False
        for line in raw:
            if re.match(r"^[A-Z][A-Z0-9 ,/-]*$", line):  # a section: EXAMPLES are mostly programs
                skipping = line.strip() in ("EXAMPLE", "EXAMPLES")
            if skipping:
                continue
            if BOX.search(line):
                if not re.search(r"[A-Za-z0-9]", line):
                    continue
                line = BOX.sub(" ", line)
            heading = bool(re.match(r"^[A-Z][A-Z0-9 ,/-]*$", line)) or bool(re.match(r"^ {3}\S", line))
            s = re.sub(r"\s{2,}", "  ", line.strip())
            lines.append((heading and bool(s), s))
        lines = drop_empty_headings(lines)
        name = os.path.basename(path).removesuffix(".gz")
        for i, text in enumerate(pack(sections(lines), chunk)):
            yield {"id": f"{name}#{i}", "text": text, "group": name}


def cmd_pool(a):
    gen = {"law": pool_law, "markdown": pool_markdown, "man": pool_man, "mojlaw": pool_mojlaw}[a.kind]
    n = chars = 0
    with open(a.out, "w", encoding="utf-8") as f:
        for rec in gen(a.src, a.chunk):
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
            chars += len(rec["text"])
    print(f"{a.out}: {n} documents, {chars} characters", file=sys.stderr)


# --------------------------------------------------------------------------------------------
# Sets

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
ZH_END = "。！？；\n"
ZH_PUNCT = {"，": ",", "。": ".", "：": ":", "；": ";", "！": "!", "？": "?", "（": "(", "）": ")"}


def sentence_spans(text, lang, lo=0, hi=None):
    """(start, end) of the sentences of text[lo:hi], whitespace excluded."""
    hi = len(text) if hi is None else hi
    if lang == "zh":
        pat = re.compile(r"[^。！？；\n]*(?:[。！？；]+|\n|$)")
    else:
        pat = re.compile(r".+?(?:[.!?;:](?=\s)|\n|$)", re.S)
    spans = []
    for m in pat.finditer(text, lo, hi):
        a, b = m.start(), m.end()
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            spans.append((a, b))
    return spans


def clause_spans(text, lang, lo, hi):
    """Finer pieces for a passage of fewer than three sentences: clauses at commas too."""
    pat = re.compile(r"[^，,。！？；;\n]*(?:[，,。！？；;]+|\n|$)") if lang == "zh" \
        else re.compile(r".+?(?:[,.!?;:](?=\s)|\n|$)", re.S)
    spans = []
    for m in pat.finditer(text, lo, hi):
        a, b = m.start(), m.end()
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            spans.append((a, b))
    return spans


class Planter:
    def __init__(self, lang, rng, pool_texts, plo, phi):
        self.lang, self.rng, self.plo, self.phi = lang, rng, plo, phi
        sample = pool_texts[:: max(1, len(pool_texts) // 400)]
        if lang == "zh":
            self.vocab = [c for t in sample for c in t if CJK.match(c)]
        else:
            self.vocab = [w.lower() for t in sample for w in WORD.findall(t) if len(w) > 1]
        self.vocab.sort()  # deterministic whatever the pool order of the sample

    def length(self):
        return int(round(math.exp(self.rng.uniform(math.log(self.plo), math.log(self.phi)))))

    def span(self, src, want_sentences=1):
        """A sentence-aligned range of src of about length() characters, or None."""
        rng, lang = self.rng, self.lang
        if len(src) < self.plo + 10:
            return None
        L = self.length()
        sents = sentence_spans(src, lang)
        starts = [a for a, b in sents if a <= len(src) - self.plo]
        if not starts:
            return None
        for _ in range(8):
            s = rng.choice(starts)
            ends = [b for a, b in sents if b >= s + L and a >= s]
            e = ends[0] if ends and ends[0] <= s + self.phi else None
            if e is None:
                e = min(len(src), s + L)
                if lang == "en":
                    sp = src.rfind(" ", s, e)
                    e = sp if sp > s + self.plo else e
            while e > s and src[e - 1].isspace():
                e -= 1
            if not self.plo <= e - s <= self.phi:
                continue
            if want_sentences > 1 and len(sentence_spans(src, lang, s, e)) < want_sentences \
                    and len(clause_spans(src, lang, s, e)) < want_sentences:
                continue
            return s, e
        return None

    # -- the four kinds: each returns (new text, source range used)

    def light(self, src, s, e):
        rng, t = self.rng, list(src[s:e])
        changed = 0
        if self.lang == "zh":
            swap_rate = rng.choice([0.3, 0.6, 1.0])
            for i, c in enumerate(t):
                if c in ZH_PUNCT and rng.random() < swap_rate:
                    t[i] = ZH_PUNCT[c]
                    changed += 1
                elif ("0" <= c <= "9" or "A" <= c <= "z" and c.isalpha()) and rng.random() < 0.5:
                    t[i] = chr(ord(c) + 0xFEE0)  # full-width form
                    changed += 1
            cjk = [i for i, c in enumerate(t) if CJK.match(c)]
            for i in rng.sample(cjk, min(len(cjk), rng.randint(1, 3))):
                t[i] = rng.choice(self.vocab)
                changed += 1
        else:
            words = [m.span() for m in WORD.finditer(src, s, e) if m.end() - m.start() >= 4]
            for a, b in rng.sample(words, min(len(words), rng.randint(1, 3))):
                i = rng.randrange(a - s, b - s - 1)
                op = rng.randrange(3)
                if op == 0:
                    t[i], t[i + 1] = t[i + 1], t[i]
                elif op == 1:
                    t[i] = rng.choice("aeioustrnl")
                else:
                    t[i] = t[i] + t[i]
                changed += 1
            punct = [i for i, c in enumerate(t[:-1]) if c in ",.;:()"]
            for i in rng.sample(punct, min(len(punct), rng.randint(0, 3))):
                c = t[i]
                t[i] = rng.choice([{",": ";", ".": ";", ";": ",", ":": " -"}.get(c, c), chr(ord(c) + 0xFEE0)])
                changed += 1
        if rng.random() < 0.7 or not changed or "".join(t) == src[s:e]:
            spaces = [i for i in range(1, len(t) - 1) if (t[i] == " " if self.lang == "en" else t[i] in "，,。.")]
            i = rng.choice(spaces) if spaces else rng.randrange(1, len(t) - 1)
            if self.lang == "en" and t[i] == " ":
                t[i] = "\n"
            else:
                t[i] = t[i] + "\n"
        return "".join(t), (s, e)

    def heavy(self, src, s, e):
        rng = self.rng
        rate = 1 / rng.uniform(10, 15)
        if self.lang == "zh":
            out, edits = [], 0
            for c in src[s:e]:
                if CJK.match(c) and rng.random() < rate:
                    op = rng.random()
                    edits += 1
                    if op < 0.5:
                        out.append(rng.choice(self.vocab))
                    elif op < 0.75:
                        continue
                    else:
                        out.extend((c, rng.choice(self.vocab)))
                else:
                    out.append(c)
            text = "".join(out)
        else:
            out, last, edits = [], s, 0
            for m in WORD.finditer(src, s, e):
                if rng.random() >= rate:
                    continue
                edits += 1
                op = rng.random()
                out.append(src[last:m.start()])
                if op < 0.5:
                    out.append(rng.choice(self.vocab))
                    last = m.end()
                elif op < 0.75:
                    last = m.end()
                    if last < e and src[last] == " ":
                        last += 1
                else:
                    out.append(m.group() + " " + rng.choice(self.vocab))
                    last = m.end()
            out.append(src[last:e])
            text = "".join(out)
        if not edits or text == src[s:e]:
            return None
        return text, (s, e)

    def reorder(self, src, s, e):
        rng = self.rng
        parts = sentence_spans(src, self.lang, s, e)
        if len(parts) < 3:
            parts = clause_spans(src, self.lang, s, e)
        if len(parts) < 3:
            return None
        order = list(range(len(parts)))
        drop = rng.randrange(len(parts))
        order.remove(drop)
        for _ in range(10):
            rng.shuffle(order)
            if order != sorted(order):
                break
        if order == sorted(order):
            return None
        joiner = "" if self.lang == "zh" else " "
        text = joiner.join(src[parts[i][0]:parts[i][1]] for i in order)
        kept = [parts[i] for i in order]
        return text, (min(a for a, b in kept), max(b for a, b in kept))


def insertion_points(text, lang):
    """Positions where a passage can go: after a sentence's end."""
    if lang == "zh":
        return [m.end() for m in re.finditer(r"[。！？；]+|\n", text) if m.end() < len(text)]
    return [m.start() for m in re.finditer(r"(?<=[.!?:;])[ \n]|\n", text)]


def units(text, lang):
    """(start, end) of each unit: a code point (zh) or a whitespace-separated word (en)."""
    if lang == "zh":
        return None
    return [m.span() for m in re.finditer(r"\S+", text)]


def find_incidental(queries, coll_texts, lang, k):
    """Per query: (start, end) stretches of at least k units that occur verbatim in the
    collection (maximal, merged), found by k-unit grams and extended by direct comparison."""
    def grams(text, spans):
        if spans is None:
            return ((i, text[i:i + k]) for i in range(len(text) - k + 1))
        return ((i, text[spans[i][0]:spans[i + k - 1][1]]) for i in range(len(spans) - k + 1))

    qspans = [units(t, lang) for t in queries]
    wanted = set()
    for t, sp in zip(queries, qspans):
        wanted.update(g for _, g in grams(t, sp))
    occ = defaultdict(list)
    for di, t in enumerate(coll_texts):
        sp = units(t, lang)
        for i, g in grams(t, sp):
            if g in wanted:
                lst = occ[g]
                if len(lst) < 8:
                    lst.append((di, i if sp is None else sp[i][0]))
    del wanted

    def lcp(a, i, b, j):
        n = 0
        while True:
            step = 64
            if a[i + n:i + n + step] == b[j + n:j + n + step] and i + n + step <= len(a) and j + n + step <= len(b):
                n += step
                continue
            while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
                n += 1
            return n

    result = []
    for t, sp in zip(queries, qspans):
        zones = []
        ends = None if sp is None else [b for _, b in sp]
        n = len(t) - k + 1 if sp is None else len(sp) - k + 1
        i = 0
        while i < n:
            g = t[i:i + k] if sp is None else t[sp[i][0]:sp[i + k - 1][1]]
            cands = occ.get(g)
            if not cands:
                i += 1
                continue
            a = i if sp is None else sp[i][0]
            end = max(a + lcp(t, a, coll_texts[d], off) for d, off in cands)
            if sp is None:
                zones.append((a, end))
                i = max(i + 1, end - k + 1)
            else:
                last = bisect.bisect_right(ends, end) - 1  # last word ending by `end`
                zones.append((a, sp[last][1]))
                i = max(i + 1, last - k + 2)
        merged = []
        for a, b in sorted(zones):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        result.append(merged)
    return result


def subtract(zones, planted, text, lang, k):
    out = []
    for a, b in zones:
        pieces = [(a, b)]
        for pa, pb in planted:
            nxt = []
            for x, y in pieces:
                if pb <= x or pa >= y:
                    nxt.append((x, y))
                    continue
                if x < pa:
                    nxt.append((x, pa))
                if pb < y:
                    nxt.append((pb, y))
            pieces = nxt
        for x, y in pieces:
            while x < y and text[x].isspace():
                x += 1
            while y > x and text[y - 1].isspace():
                y -= 1
            size = y - x if lang == "zh" else len(text[x:y].split())
            if size >= k:
                out.append((x, y))
    return out


def cmd_build(a):
    rng = random.Random(a.seed)
    lang = a.lang
    qlo, qhi = a.query_chars
    plo, phi = a.passage_chars
    k = a.incidental_units or (13 if lang == "zh" else 8)
    pool = [r for r in load_jsonl(a.pool) if MIN_DOC <= len(r["text"]) <= MAX_DOC]
    ids = Counter(r["id"] for r in pool)
    assert all(n == 1 for n in ids.values()), "pool ids must be unique"
    groups = defaultdict(list)
    for r in pool:
        groups[r.get("group", r["id"])].append(r)
    names = sorted(groups)
    rng.shuffle(names)
    need = a.queries * (qlo + qhi) / 2 * 1.1
    held, coll, held_chars = [], [], 0
    for g in names:
        if held_chars < need:
            held.extend(groups[g])
            held_chars += sum(len(r["text"]) for r in groups[g])
        elif len(coll) < a.collection:
            coll.extend(groups[g])
    if held_chars < need:
        print(f"warning: pool too small: {held_chars:.0f} of {need:.0f} held-out characters", file=sys.stderr)
    if len(coll) < a.collection:
        print(f"note: the collection takes the rest of the pool, {len(coll)} documents", file=sys.stderr)
    coll = sorted(coll[:a.collection], key=lambda r: r["id"])
    coll_text = {r["id"]: r["text"] for r in coll}
    coll_ids = [r["id"] for r in coll]
    rng.shuffle(held)
    held = [r["text"] for r in held]
    planter = Planter(lang, rng, [r["text"] for r in pool], plo, phi)
    kinds = ["verbatim", "light", "heavy", "reorder"]
    weights = [0.29, 0.30, 0.22, 0.19]

    queries, truth_cases = [], []
    hi_ = 0
    for qi in range(a.queries):
        target = rng.randint(qlo, qhi)
        parts, n = [], 0
        while n < target and hi_ < len(held):
            t = held[hi_]
            hi_ += 1
            if n + len(t) > target * 1.2:
                cut = max((m.end() for m in re.finditer(r"\n\n|。|\.\s", t[:target - n + 200])), default=0)
                if cut < MIN_DOC:
                    cut = min(len(t), target - n + 200)
                rest = t[cut:].strip()
                if len(rest) >= MIN_DOC:  # the rest of the document goes to the next query
                    hi_ -= 1
                    held[hi_] = rest
                t = t[:cut].rstrip()
            parts.append(t)
            n += len(t) + 1
        if n < qlo // 2:
            sys.exit(f"the pool's held-out documents ran out at query {qi}: use a larger pool or fewer queries")
        base = "\n".join(parts)
        qid = f"q{qi:04d}"
        cases = []
        if qi % 5 != 4:
            npass = rng.randint(1, 8)
            points = insertion_points(base, lang)
            points = sorted(rng.sample(points, min(npass, len(points))))
            planted = []
            for _ in points:
                for _try in range(50):
                    kind = rng.choices(kinds, weights)[0]
                    src_id = rng.choice(coll_ids)
                    src = coll_text[src_id]
                    sp = planter.span(src, 3 if kind == "reorder" else 1)
                    if sp is None:
                        continue
                    s, e = sp
                    if kind == "verbatim":
                        res = (src[s:e], (s, e))
                    else:
                        res = getattr(planter, kind)(src, s, e)
                    if res is None or not res[0].strip():
                        continue
                    planted.append((kind, src_id, res[0], res[1]))
                    break
            # splice: base[..p1] passage1 base[p1..p2] passage2 ...
            out, pos, last = [], 0, 0
            for p, (kind, src_id, ptext, (ss, se)) in zip(points, planted):
                chunk = base[last:p]
                out.append(chunk)
                pos += len(chunk)
                sep = " " if lang == "en" else ""
                out.append(sep)
                pos += len(sep)
                cases.append({"query": qid, "start": pos, "end": pos + len(ptext), "source": src_id,
                              "source_start": ss, "source_end": se, "kind": kind})
                out.append(ptext)
                pos += len(ptext)
                last = p
            out.append(base[last:])
            text = "".join(out)
        else:
            text = base
        queries.append({"id": qid, "text": text})
        truth_cases.append(cases)

    print(f"{a.out}: finding incidental zones", file=sys.stderr)
    zones = find_incidental([q["text"] for q in queries], [r["text"] for r in coll], lang, k)
    truth = []
    n_inc = inc_chars = 0
    for q, cases, zs in zip(queries, truth_cases, zones):
        zs = subtract(zs, [(c["start"], c["end"]) for c in cases], q["text"], lang, k)
        truth.extend(cases)
        for x, y in zs:
            truth.append({"query": q["id"], "start": x, "end": y, "kind": "incidental"})
            n_inc += 1
            inc_chars += y - x

    os.makedirs(a.out, exist_ok=True)
    write_jsonl(f"{a.out}/collection.jsonl", [{"id": r["id"], "text": r["text"]} for r in coll])
    write_jsonl(f"{a.out}/queries.jsonl", queries)
    write_jsonl(f"{a.out}/truth.jsonl", truth)
    cases = [t for t in truth if t["kind"] != "incidental"]
    meta = {"name": a.name or os.path.basename(os.path.normpath(a.out)), "lang": lang,
            "collection_docs": len(coll), "collection_chars": sum(len(r["text"]) for r in coll),
            "queries": len(queries), "query_chars": sum(len(q["text"]) for q in queries),
            "negative_queries": sum(1 for c in truth_cases if not c), "cases": len(cases),
            "incidental_zones": n_inc, "incidental_chars": inc_chars,
            "kinds": {kd: sum(1 for c in cases if c["kind"] == kd) for kd in kinds},
            "passage_chars": [plo, phi], "seed": a.seed, "pool": os.path.basename(a.pool)}
    with open(f"{a.out}/meta.json", "w", encoding="utf-8") as f:
        json.dump(meta, f, ensure_ascii=False, indent=1)
    verify(a.out, lang, k)
    print(json.dumps(meta, ensure_ascii=False), file=sys.stderr)


def verify(d, lang, k):
    """Re-reads the set as written and checks every truth line against the texts."""
    coll = {o["id"]: o["text"] for o in load_jsonl(f"{d}/collection.jsonl")}
    queries = {o["id"]: o["text"] for o in load_jsonl(f"{d}/queries.jsonl")}
    truth = load_jsonl(f"{d}/truth.jsonl")
    assert not set(coll) & set(queries), "query ids clash with collection ids"
    by_q = defaultdict(list)
    bad, weak, stitched = [], 0, 0
    joined = "\x00".join(coll.values())
    for t in truth:
        q = queries[t["query"]]
        assert 0 <= t["start"] < t["end"] <= len(q), t
        by_q[t["query"]].append((t["start"], t["end"], t["kind"]))
        if t["kind"] == "incidental":
            if q[t["start"]:t["end"]] not in joined:
                stitched += 1  # overlapping verbatim stretches from different documents
            continue
        src = coll[t["source"]]
        assert 0 <= t["source_start"] < t["source_end"] <= len(src), t
        a, b = q[t["start"]:t["end"]], src[t["source_start"]:t["source_end"]]
        if t["kind"] == "verbatim":
            if a != b:
                bad.append(t)
        else:
            if a == b:
                bad.append(t)
            r = SequenceMatcher(None, a, b, autojunk=False).ratio()
            weak += r < 0.6
    for q, rs in by_q.items():
        rs.sort()
        for (a1, b1, k1), (a2, b2, k2) in zip(rs, rs[1:]):
            assert b1 <= a2, f"overlapping truth ranges in {q}: {(a1, b1, k1)} {(a2, b2, k2)}"
    assert not bad, f"{len(bad)} truth lines do not match their texts, e.g. {bad[0]}"
    print(f"{d}: verified {len(truth)} truth lines ({weak} edited passages under 0.6 similarity, "
          f"{stitched} incidental zones joined from several documents)", file=sys.stderr)


def pair(s):
    lo, hi = (int(x) for x in s.split(","))
    return lo, hi


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pool", help="clean raw material into a pool")
    p.add_argument("kind", choices=["law", "markdown", "man", "mojlaw"])
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--chunk", type=int, default=6000, help="split documents longer than this at headings")
    b = sub.add_parser("build", help="build a set from a pool")
    b.add_argument("pool")
    b.add_argument("out")
    b.add_argument("--lang", choices=["zh", "en"], required=True)
    b.add_argument("--name")
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--collection", type=int, default=4000, help="collection documents")
    b.add_argument("--queries", type=int, default=300)
    b.add_argument("--query-chars", type=pair, help="original writing per query, LO,HI characters")
    b.add_argument("--passage-chars", type=pair, help="planted passage length, LO,HI characters")
    b.add_argument("--incidental-units", type=int, help="shortest incidental zone (default 13 zh, 8 en)")
    b.add_argument("--verify-only", action="store_true", help="only check an existing set")
    a = ap.parse_args()
    if a.cmd == "pool":
        cmd_pool(a)
        return
    a.query_chars = a.query_chars or ((1000, 8000) if a.lang == "zh" else (2500, 16000))
    a.passage_chars = a.passage_chars or ((40, 400) if a.lang == "zh" else (120, 1200))
    if a.verify_only:
        verify(a.out, a.lang, a.incidental_units or (13 if a.lang == "zh" else 8))
        return
    cmd_build(a)


if __name__ == "__main__":
    main()
