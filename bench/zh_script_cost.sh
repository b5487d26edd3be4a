#!/usr/bin/env bash
# The cost of the Chinese presets' traditional-to-simplified check on simplified text
# (BENCHMARKS.md, "zh_script"): 40,000 documents of 400 characters cut from the bundled Chinese
# examples, fingerprinted with zh-news on one thread, with and without the check, twice each.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p neardup-cli
corpus=bench/data/zh_script_bench.jsonl
mkdir -p bench/data
python3 - "$corpus" <<'PY'
import json, random, sys
random.seed(1)
chars = "".join(open(f"examples/data/zh/{n}", encoding="utf-8").read()
                for n in ["news_a.txt", "news_b.txt", "other.txt"])
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for i in range(40000):
        start = random.randrange(0, len(chars) - 400)
        f.write(json.dumps({"id": i, "text": chars[start:start + 400]}, ensure_ascii=False) + "\n")
PY
for run in 1 2; do
  for script in keep simplified; do
    /usr/bin/time -f "zh_script=$script run $run: %e s" \
      target/release/neardup fingerprint "$corpus" --preset zh-news --zh-script "$script" -j 1 >/dev/null
  done
done
