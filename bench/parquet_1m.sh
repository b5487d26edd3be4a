#!/usr/bin/env bash
# Reading Parquet against reading JSONL (BENCHMARKS.md, "Parquet input"): the 1,000,000-document
# dedup corpus (bench/data/en_dedup_1000000.jsonl, made by bench/run_dedup_1m.sh) written once as
# Parquet (snappy, as Spark and pyarrow write it; its id and text columns only), then
# `neardup dedup` on each, alternated, twice (the first pass alone, and with -o /dev/null, which
# reads again and writes each kept record as JSON); and the kept rows written back as Parquet.
# Prints wall seconds and peak memory per run.
set -euo pipefail
cd "$(dirname "$0")/.."
jsonl=bench/data/en_dedup_1000000.jsonl
parquet=bench/data/en_dedup_1000000.parquet
[ -f "$jsonl" ] || { echo "run bash bench/run_dedup_1m.sh first (it makes $jsonl)" >&2; exit 1; }
. bench/setup.sh
bench/.venv/bin/pip install -q "pyarrow==21.0.0"
cargo build -q --release -p neardup-cli
if [ ! -f "$parquet" ]; then
  bench/.venv/bin/python - "$jsonl" "$parquet" <<'PY'
import sys
import pyarrow.json as pj
import pyarrow.parquet as pq
table = pj.read_json(sys.argv[1]).select(["id", "text"])
pq.write_table(table, sys.argv[2], compression="snappy", row_group_size=100_000)
PY
fi
ls -l "$jsonl" "$parquet"
for run in 1 2; do
  for input in "$jsonl" "$parquet"; do
    /usr/bin/time -f "$(basename "$input") run $run, no output (one pass): %e s, peak %M KB" \
      target/release/neardup dedup "$input" -q
    /usr/bin/time -f "$(basename "$input") run $run, -o /dev/null (JSONL): %e s, peak %M KB" \
      target/release/neardup dedup "$input" -o /dev/null -q
  done
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/time -f "parquet in, kept.parquet out: %e s, peak %M KB" \
  target/release/neardup dedup "$parquet" -o "$out/kept.parquet" -q
ls -l "$out/kept.parquet"
