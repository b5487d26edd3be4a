#!/usr/bin/env bash
# Sets up the peers (pinned versions, in bench/.venv), builds neardup's in-process timer, and
# runs bench/peers.py. Pass peers.py options through, e.g. `bash bench/run_peers.sh --mb 8`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
fi
bench/.venv/bin/pip install -q "datasketch==2.0.0" "rensa==0.5.0" "simhash==2.1.2" "jieba==0.42.1"
cargo build -q --release -p neardup --example peer_bench
exec bench/.venv/bin/python bench/peers.py "$@"
