#!/usr/bin/env bash
# Scores the passage check on labelled sets (shared/passages format: collection.jsonl, queries.jsonl,
# truth.jsonl) with shared/passages/plagdet.py, one Markdown table row per set.
#
#   bash bench/passages/score_sets.sh [--within] [--keep DIR] [SET_DIR...]
#
# Default sets: the four in /work/shared/passages, then every directory of /work/evalsets holding a
# truth.jsonl (bench/passages/README.md says how those are built).
# Mode: the queries against the collection (`neardup overlap Q --against C`); with --within, the
# collection and the queries given as one input (`neardup overlap ONE`), of whose reported pairs
# only a query's passage with a collection document as its source is scored.
# Environment: NEARDUP (the binary, default target/release/neardup of this repository; waited for
# if it is not built yet), NEARDUP_ARGS (more options for `neardup overlap`, e.g. "-j 1
# --min-units 15"), SHARED (default /work/shared), EVALSETS (default /work/evalsets).
# --keep DIR keeps each set's detections as DIR/NAME.jsonl (and the scorer's JSON as NAME.score.json).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
within=0 keep=
sets=()
while [ $# -gt 0 ]; do
    case $1 in
        --within) within=1 ;;
        --keep) keep=$(realpath -m "$2"); shift ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) sets+=("$(realpath "$1")") ;;
    esac
    shift
done
shared=${SHARED:-/work/shared}
evalsets=${EVALSETS:-/work/evalsets}
if [ ${#sets[@]} -eq 0 ]; then
    for d in "$shared"/passages/sample-zh "$shared"/passages/sample-en "$shared"/passages/sample-zh-same \
             "$shared"/passages/sample-en-same "$evalsets"/*/; do
        [ -f "$d/truth.jsonl" ] && sets+=("$(realpath "$d")")
    done
fi
scorer=$shared/passages/plagdet.py
case ${NEARDUP:-} in
    "") bin=$repo/target/release/neardup ;;
    */*) bin=$(realpath -m "$NEARDUP") ;;
    *) bin=$(command -v "$NEARDUP" || echo "$NEARDUP") ;;
esac
cd "$repo"
until [ -x "$bin" ]; do
    echo "waiting for $bin to be built..." >&2
    sleep 30
done
work=$(mktemp -d "${TMPDIR:-/tmp}/neardup-score.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -n "$keep" ] && mkdir -p "$keep"
# shellcheck disable=SC2206
extra=(${NEARDUP_ARGS:-})

mode=against
[ $within = 1 ] && mode=within
echo "| set ($mode) | plagdet | precision | recall | granularity | recall verbatim / light / heavy / reorder | negative_fp_chars_share | copied_fraction_mae | seconds |"
echo "|---|---|---|---|---|---|---|---|---|"
for d in "${sets[@]}"; do
    name=$(basename "$d")
    out=$work/$name.jsonl
    t0=$(date +%s.%N)
    if [ $within = 1 ]; then
        cat "$d/collection.jsonl" "$d/queries.jsonl" >"$work/one.jsonl"
        "$bin" overlap "$work/one.jsonl" --passages "$work/raw.jsonl" --quiet "${extra[@]}"
    else
        "$bin" overlap "$d/queries.jsonl" --against "$d/collection.jsonl" --passages "$out" --quiet "${extra[@]}"
    fi
    t1=$(date +%s.%N)
    if [ $within = 1 ]; then
        # only the query side: a query's passage whose source is a collection document
        python3 - "$d" "$work/raw.jsonl" "$out" <<'PY'
import json, sys
d, raw, out = sys.argv[1:]
def ids(p):
    with open(p, encoding="utf-8") as f:
        return {json.loads(line)["id"] for line in f if line.strip()}
q, c = ids(f"{d}/queries.jsonl"), ids(f"{d}/collection.jsonl")
with open(raw, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as g:
    for line in f:
        o = json.loads(line)
        if "start" in o and o.get("query") in q and o.get("source") in c:
            g.write(line)
PY
        rm -f "$work/one.jsonl" "$work/raw.jsonl"
    fi
    python3 "$scorer" "$d" "$out" >"$work/score.json"
    python3 - "$name" "$work/score.json" "$t0" "$t1" <<'PY'
import json, sys
name, path, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
s = json.load(open(path))
k = s["recall_by_kind"]
kinds = " / ".join(f"{k[x]:.3f}" if x in k else "-" for x in ("verbatim", "light", "heavy", "reorder"))
print(f"| {name} | {s['plagdet']:.4f} | {s['precision']:.4f} | {s['recall']:.4f} | {s['granularity']:.3f} | {kinds} "
      f"| {s['negative_fp_chars_share']:.5f} | {s['copied_fraction_mae']:.4f} | {t1 - t0:.1f} |")
PY
    if [ -n "$keep" ]; then
        cp "$out" "$keep/$name.jsonl"
        cp "$work/score.json" "$keep/$name.score.json"
    fi
    rm -f "$out"
done
