#!/usr/bin/env bash
# Every test of neardup, in one command (the README's, and what .ci/run calls):
#   1. Rust: unit, property, golden-vector and integration tests (the built CLI and the real
#      server): `cargo test --workspace`, and the service's suite again on the PostgreSQL store
#      (Debian's postgresql: `apt-get install postgresql`);
#   2. Python: the package built from this tree into target/test-venv, its tests (against the
#      real datasketch and rensa, and the CLI), the Spark tests in local mode (Java 17+), the
#      service's OpenAPI document and the pages in headless Chromium (chromium and chromedriver
#      from Debian: `apt-get install chromium chromium-driver`).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace
# The service's suite again, on the PostgreSQL store (a throwaway cluster of Debian's
# postgresql: `apt-get install postgresql`; the tests start and stop it themselves).
NEARDUP_TEST_STORE=postgres cargo test -p neardup-server --test service
NEARDUP_TEST_STORE=postgres cargo test -p neardup-cli --test serve

venv=target/test-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q -r tests/requirements.txt
if [ "${NEARDUP_TEST_WHEEL:-dev}" = release ]; then
  # What users install (CI): the release wheel (abi3, one wheel for CPython 3.10+, tagged
  # manylinux by maturin's checks), built by maturin and installed from the file.
  rm -rf target/wheels
  "$venv/bin/maturin" build -q --release -m crates/neardup-py/Cargo.toml -o target/wheels
  wheel=$(ls target/wheels/neardup-*-abi3-manylinux*.whl)
  "$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel"
  echo "tests/run.sh: testing $wheel"
  # The Spark cluster test packs this wheel into the executors' environment.
  export NEARDUP_WHEEL="$PWD/$wheel"
else
  # The extension in the dev profile: it reuses what `cargo test` just compiled (a user's
  # `pip install ./crates/neardup-py` builds it optimized).
  "$venv/bin/pip" install -q --force-reinstall --no-deps \
    --config-settings=build-args="--profile dev" ./crates/neardup-py
fi

for tool in java chromium chromedriver; do
  command -v "$tool" >/dev/null || {
    echo "tests/run.sh: $tool is missing (Spark needs Java 17+; the browser tests need Debian's chromium and chromium-driver)" >&2
    exit 1
  }
done

export NEARDUP_BIN="$PWD/target/debug/neardup"
# Temporary directories of passed tests are removed (pytest keeps every test's by default, for
# the last three runs: gigabytes with the Spark tests).
"$venv/bin/python" -m pytest -q --durations=25 -o tmp_path_retention_policy=failed crates/neardup-py/tests tests/web
