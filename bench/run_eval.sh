#!/usr/bin/env bash
# Sets up the peers (pinned, in bench/.venv), builds neardup in release mode, and runs
# bench/eval_quality.py. Options pass through, e.g. `bash bench/run_eval.sh --docs 2000`.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/setup.sh
cargo build -q --release -p neardup-cli
exec bench/.venv/bin/python bench/eval_quality.py "$@"
