#!/usr/bin/env bash
# Sets up the peers (pinned versions, in bench/.venv), builds neardup's in-process timer, and
# runs bench/peers.py. Pass peers.py options through, e.g. `bash bench/run_peers.sh --mb 8`.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/setup.sh
cargo build -q --release -p neardup --example peer_bench
exec bench/.venv/bin/python bench/peers.py "$@"
