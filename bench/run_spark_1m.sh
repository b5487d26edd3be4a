#!/usr/bin/env bash
# Builds neardup (CLI and Python package, optimized) into bench/.venv with pyspark, and runs
# bench/spark_1m.py (Java 17+ needed). Options pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/setup.sh
bench/.venv/bin/pip install -q "pyspark>=3.5,<5" "pyarrow>=12" "pandas>=1.5,<3"
cargo build -q --release -p neardup-cli
bench/.venv/bin/pip install -q ./crates/neardup-py
exec bench/.venv/bin/python bench/spark_1m.py "$@"
