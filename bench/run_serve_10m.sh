#!/usr/bin/env bash
# `neardup serve` at ten million ~1 KB documents: builds the corpus of bench/dedup_10m.py once
# (10.8 GB in bench/data/), then runs bench/serve_load.py on it through run_serve_load.sh
# (batch inserts, search and check under wrk, a restart), the store in a temporary directory
# (about 15 GB; removed at the end). Options pass through, e.g. `--seconds 20`.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=bench/data/en_planted_10000000.jsonl
truth=bench/data/en_planted_10000000.truth.tsv
if [ ! -f "$corpus" ] || [ ! -f "$truth" ]; then
  . bench/setup.sh
  (cd bench && .venv/bin/python -c 'import os, dedup_10m as d
d.make_corpus(d.DATA / "en_planted_10000000.jsonl", d.DATA / "en_planted_10000000.truth.tsv",
              10_000_000, os.cpu_count() or 2)')
fi
exec bash bench/run_serve_load.sh --corpus "$corpus" --docs 10000000 --no-peer "$@"
