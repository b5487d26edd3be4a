#!/usr/bin/env bash
# The fuzz targets, long: the JSONL reader, the pipeline spec parser, the saved-index reader and
# every HTTP body (each a proptest target that CI runs with the default 256 cases).
# `bash bench/fuzz.sh [CASES]` (default 200000 per target). A failure prints the minimal input;
# put it in a named regression test next to the target.
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES="${1:-200000}"
cargo test --release -p neardup-cli --bin neardup -- jsonl_
cargo test --release -p neardup --lib -- spec_parser_never_panics index_reader_
cargo test --release -p neardup-server --test fuzz_bodies
