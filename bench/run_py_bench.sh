#!/usr/bin/env bash
# Builds neardup (the CLI and the Python package, optimized) into bench/.venv with the pinned
# peers, and runs bench/py_bench.py. Options pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/setup.sh
cargo build -q --release -p neardup-cli
bench/.venv/bin/pip install -q ./crates/neardup-py
exec bench/.venv/bin/python bench/py_bench.py "$@"
