#!/bin/bash
# Interleaved before/after runs of issue 34's benchmark commands (BENCHMARKS.md, "The persisted
# job and the drivers' last slices"): three rounds of five commands with each build, then a
# byte-for-byte comparison of their outputs.
#
#   BEFORE=old/neardup AFTER=target/release/neardup C=en_dedup_200000.jsonl \
#   S=../shared/passages/sample-en SE=se-all.jsonl OUT=/tmp/bench34 bash bench/interleave_34.sh
set -euo pipefail
: "${BEFORE:?the earlier build's neardup}" "${AFTER:=target/release/neardup}"
: "${C:?the 200,000-document corpus of bench/dedup_1m.py}" "${S:=../shared/passages/sample-en}"
: "${SE:?sample-en-same's collection and queries in one file}" "${OUT:=/tmp/bench34}"
for round in 1 2 3; do
  for which in before after; do
    if [ "$which" = before ]; then N=$BEFORE; else N=$AFTER; fi
    d=$OUT/$which; mkdir -p "$d"
    t() { { /usr/bin/time -f "%e %M" "$@" -q; } 2>&1 | tail -1; }
    t1=$(t "$N" dedup "$C" -o "$d/kept.jsonl" --clusters "$d/c.jsonl")
    t2=$(t "$N" dedup "$C" --report "$d/r.html" --clusters "$d/c2.jsonl")
    t3=$(t "$N" report "$C" --clusters "$d/c.jsonl" -o "$d/rr.html")
    t4=$(t "$N" overlap "$S/queries.jsonl" --against "$S/collection.jsonl" --passages "$d/p.jsonl")
    t5=$(t "$N" overlap "$SE" -o "$d/o.jsonl" --passages "$d/w.jsonl")
    echo "$round $which | $t1 | $t2 | $t3 | $t4 | $t5   (seconds, peak KB)"
  done
done
for f in kept.jsonl c.jsonl c2.jsonl p.jsonl o.jsonl w.jsonl; do
  if cmp -s "$OUT/before/$f" "$OUT/after/$f"; then echo "$f same"; else echo "$f DIFFERS"; fi
done
