#!/usr/bin/env bash
# The passage check at scale: index the 1 GB dedup benchmark corpus, check one 100,000-character
# thesis and 1,000 theses against the saved index, and run the within-corpus mode over it.
# Prints one line per step: seconds, peak RSS, throughput. Usage:
#   bash bench/run_overlap.sh            # all steps (the corpus is built by run_dedup_1m.sh)
#   bash bench/run_overlap.sh --no-within
#   PYTHON=target/test-venv/bin/python bash bench/run_overlap.sh --no-within   # and Python's check
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=bench/data/en_dedup_1000000.jsonl
[ -f "$corpus" ] || { echo "build the corpus first: bash bench/run_dedup_1m.sh --docs 1000000" >&2; exit 1; }
cargo build --release -q -p neardup-cli
bin=target/release/neardup
work=$(mktemp -d "${TMPDIR:-/tmp}/neardup-overlap-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Theses: ~100,000 characters each, half original words (a shuffled mix of corpus words),
# half passages of 300-1,500 characters taken from corpus documents at random, some edited.
python3 - "$corpus" "$work" <<'PY'
import json, random, sys
corpus, work = sys.argv[1], sys.argv[2]
rng = random.Random(7)
docs = []
with open(corpus, encoding="utf-8") as f:
    for i, line in enumerate(f):
        if i % 97 == 0:
            docs.append(json.loads(line)["text"])
        if len(docs) >= 20000:
            break
words = " ".join(docs[:2000]).split()
def thesis():
    out, n = [], 0
    while n < 100_000:
        if rng.random() < 0.5:
            d = rng.choice(docs)
            a = rng.randrange(0, max(1, len(d) - 300))
            piece = d[a:a + rng.randrange(300, 1500)]
        else:
            piece = " ".join(rng.choice(words) for _ in range(rng.randrange(50, 250)))
        out.append(piece)
        n += len(piece) + 1
    return " ".join(out)
with open(f"{work}/one.jsonl", "w") as f:
    f.write(json.dumps({"id": "thesis", "text": thesis()}) + "\n")
with open(f"{work}/many.jsonl", "w") as f:
    for i in range(1000):
        f.write(json.dumps({"id": f"t{i}", "text": thesis()[:rng.randrange(5000, 20000)]}) + "\n")
PY

step() {  # name, bytes, docs, command...
    local name=$1 bytes=$2 docs=$3; shift 3
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    read -r secs kb <"$work/time"
    python3 -c "
s, kb, b, d = $secs, $kb, $bytes, $docs
print(f'$name: {s:.1f} s, peak RSS {kb/1024:,.0f} MB, {b/1e6/s:.1f} MB/s, {d/s:,.0f} docs/s')"
    tail -n 2 "$work/err" | sed 's/^/    /'
}
cbytes=$(stat -c %s "$corpus")
step "index 1 GB alone (read, fingerprint, save as read)" "$cbytes" 1000000 \
    $bin overlap --against "$corpus" --save-index "$work/idx"
step "one 100,000-char thesis against the saved index (read in place)" "$(stat -c %s "$work/one.jsonl")" 1 \
    $bin overlap "$work/one.jsonl" --against "$work/idx" --passages "$work/one.out"
step "one thesis with its HTML report against the saved index (read in place)" "$(stat -c %s "$work/one.jsonl")" 1 \
    $bin overlap "$work/one.jsonl" --against "$work/idx" --report "$work/one.html"
# Python's neardup.overlap against the saved index (read in place as the CLI reads it), when a
# Python with this tree's package is given (PYTHON=target/test-venv/bin/python after tests/run.sh).
if [ -n "${PYTHON:-}" ]; then
    step "Python: one thesis against the saved index (read in place)" "$(stat -c %s "$work/one.jsonl")" 1 \
        "$PYTHON" -c "
import json, pathlib, sys, neardup
q = json.loads(open('$work/one.jsonl').read())
neardup.overlap({q['id']: q['text']}, pathlib.Path('$work/idx'))"
fi
step "1,000 theses against the saved index (read in place)" "$(stat -c %s "$work/many.jsonl")" 1000 \
    $bin overlap "$work/many.jsonl" --against "$work/idx" --passages "$work/many.out"
if [ "${1:-}" != "--no-within" ]; then
    step "within-corpus mode over 1 GB" "$cbytes" 1000000 \
        $bin overlap "$corpus" --passages "$work/within.out"
fi
