#!/usr/bin/env bash
# Sets up the peers (pinned, in bench/.venv), builds neardup in release mode, and runs
# bench/eval_quality.py. Options pass through, e.g. `bash bench/run_eval.sh --docs 2000`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
fi
bench/.venv/bin/pip install -q "datasketch==2.0.0" "rensa==0.5.0" "simhash==2.1.2" "jieba==0.42.1"
cargo build -q --release -p neardup-cli
exec bench/.venv/bin/python bench/eval_quality.py "$@"
