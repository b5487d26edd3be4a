#!/bin/bash
# Interleaved before/after runs of issue 34's benchmark commands.
C=/tmp/bench34/en_dedup_200000.jsonl; S=/work/shared/passages/sample-en
for round in 1 2 3; do
  for which in before after; do
    if [ $which = before ]; then N=/tmp/before-target/release/neardup; else N=/work/main/target/release/neardup; fi
    d=/tmp/bench34/$which; mkdir -p $d
    t1=$( { /usr/bin/time -f "%e %M" $N dedup $C -o $d/kept.jsonl --clusters $d/c.jsonl -q; } 2>&1 | tail -1)
    t2=$( { /usr/bin/time -f "%e %M" $N dedup $C --report $d/r.html --clusters $d/c2.jsonl -q; } 2>&1 | tail -1)
    t3=$( { /usr/bin/time -f "%e %M" $N report $C --clusters $d/c.jsonl -o $d/rr.html -q; } 2>&1 | tail -1)
    t4=$( { /usr/bin/time -f "%e %M" $N overlap $S/queries.jsonl --against $S/collection.jsonl --passages $d/p.jsonl -q; } 2>&1 | tail -1)
    t5=$( { /usr/bin/time -f "%e %M" $N overlap /tmp/bench34/se-all.jsonl -o $d/o.jsonl --passages $d/w.jsonl -q; } 2>&1 | tail -1)
    echo "$round $which | $t1 | $t2 | $t3 | $t4 | $t5"
  done
done
for f in kept.jsonl c.jsonl c2.jsonl p.jsonl o.jsonl w.jsonl; do cmp -s before/$f after/$f && echo "$f same" || echo "$f DIFFERS"; done
