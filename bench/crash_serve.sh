#!/usr/bin/env bash
# The serve crash tests, 200 rounds each:
# - a client streams inserts, the server is killed with SIGKILL at a random moment and
#   restarted; every acknowledged document must be there and searchable;
# - clients create, delete, insert, upsert, remove, check and search shared collections at once
#   while the server is killed at random moments; the final state must match the model of the
#   acknowledged operations, nothing deleted may return, no request may answer 500.
# `bash bench/crash_serve.sh [ROUNDS]`
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-200}"
NEARDUP_CRASH_ROUNDS="$rounds" NEARDUP_MODEL_ROUNDS="$rounds" cargo test --release \
  -p neardup-cli --test serve -- --nocapture \
  crash_recovery_keeps_every_acknowledged_write concurrent_operations_under_sigkill_match_the_model
