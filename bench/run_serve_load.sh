#!/usr/bin/env bash
# Load test of `neardup serve` (wrk) and the datasketch + Redis peer, loopback only, bounded in
# time. Installs wrk and redis-server from Debian if missing, the pinned Python peers in
# bench/.venv, and builds neardup in release mode.
# `bash bench/run_serve_load.sh [--docs 1000000] [--seconds 20] [--peer-docs 50000]
#  [--stores embedded,postgres]`
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v wrk >/dev/null || ! command -v redis-server >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk redis-server >/dev/null
fi
# --stores postgres: Debian's PostgreSQL (the bench starts a throwaway cluster of its own).
if [[ " $* " == *postgres* ]] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
fi
. bench/setup.sh
cargo build -q --release -p neardup-cli
exec bench/.venv/bin/python bench/serve_load.py "$@"
