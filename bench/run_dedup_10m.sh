#!/usr/bin/env bash
# Builds the CLI (release) and runs bench/dedup_10m.py (the corpus is generated once, about
# 10 GB in bench/data/, with numpy from bench/.venv). Options pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/setup.sh
cargo build -q --release -p neardup-cli
exec bench/.venv/bin/python bench/dedup_10m.py "$@"
