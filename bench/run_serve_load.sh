#!/usr/bin/env bash
# Load test of `neardup serve` (wrk) and the datasketch + Redis peer, loopback only, bounded in
# time. Installs wrk and redis-server from Debian if missing, the pinned Python peers in
# bench/.venv, and builds neardup in release mode.
# `bash bench/run_serve_load.sh [--docs 1000000] [--seconds 20] [--peer-docs 50000]`
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v wrk >/dev/null || ! command -v redis-server >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk redis-server >/dev/null
fi
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
fi
bench/.venv/bin/pip install -q "datasketch==2.0.0" "rensa==0.5.0" "simhash==2.1.2" "jieba==0.42.1" "redis==5.2.1"
cargo build -q --release -p neardup-cli
exec bench/.venv/bin/python bench/serve_load.py "$@"
