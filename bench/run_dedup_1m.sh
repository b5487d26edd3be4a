#!/usr/bin/env bash
# Sets up the peers (pinned, in bench/.venv), builds neardup in release mode, and runs
# bench/dedup_1m.py. Options pass through, e.g. `bash bench/run_dedup_1m.sh --docs 100000`.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/setup.sh
cargo build -q --release -p neardup-cli
exec bench/.venv/bin/python bench/dedup_1m.py "$@"
