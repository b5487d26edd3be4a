#!/usr/bin/env bash
# Builds neardup (CLI and a release wheel) and runs bench/spark_cluster.py: neardup.spark on a
# Spark standalone cluster on loopback, the wheel shipped as a packed virtualenv (Java 17+
# needed). Options pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/setup.sh
bench/.venv/bin/pip install -q "pyspark>=3.5,<5" "pyarrow>=12" "pandas>=1.5,<3" "venv-pack>=0.2"
cargo build -q --release -p neardup-cli
bench/.venv/bin/pip install -q ./crates/neardup-py
rm -rf bench/data/wheels
bench/.venv/bin/pip wheel -q --no-deps ./crates/neardup-py -w bench/data/wheels
exec bench/.venv/bin/python bench/spark_cluster.py --wheel bench/data/wheels/neardup-*.whl "$@"
