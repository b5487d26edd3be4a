#!/usr/bin/env bash
# The serve crash test, 200 rounds: a client streams inserts, the server is killed with SIGKILL
# at a random moment and restarted; every acknowledged document must be there and searchable.
# `bash bench/crash_serve.sh [ROUNDS]`
set -euo pipefail
cd "$(dirname "$0")/.."
NEARDUP_CRASH_ROUNDS="${1:-200}" cargo test --release -p neardup-cli --test serve \
  crash_recovery_keeps_every_acknowledged_write -- --nocapture
