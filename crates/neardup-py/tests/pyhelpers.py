"""Helpers of the Python package's tests: the repository, the neardup binary, the golden
vectors. (A module of its own, not conftest: the browser tests have their own conftest, and
pytest would import both under the one name.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def neardup_binary() -> Path:
    """The CLI built by `cargo build` (NEARDUP_BIN overrides)."""
    env = os.environ.get("NEARDUP_BIN")
    if env:
        return Path(env)
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "neardup"
        if p.exists():
            return p
    found = shutil.which("neardup")
    if found:
        return Path(found)
    pytest.fail("the neardup binary is not built: run `cargo build` (or set NEARDUP_BIN)")


def golden_lines(name: str) -> list[dict]:
    with open(ROOT / "tests" / "golden" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def golden(name: str) -> dict:
    with open(ROOT / "tests" / "golden" / name, encoding="utf-8") as f:
        return json.load(f)


def run_cli(binary: Path, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], input=input, capture_output=True, check=False)


def example_texts() -> list[str]:
    """The bundled example documents plus near-copies, English and Chinese."""
    texts = []
    for p in sorted((ROOT / "examples" / "data").glob("*/*.txt")):
        texts.append(p.read_text(encoding="utf-8"))
    return texts


def unpacked(name: str, part: str, dest: Path, limit: int | None = None) -> Path:
    """A sample set's zstd JSON Lines as plain JSON Lines (Spark's reader has no zstd)."""
    import pyarrow as pa

    with pa.input_stream(str(ROOT / "tests" / "fixtures" / "passages" / name / f"{part}.jsonl.zst"), compression="zstd") as f:
        lines = f.read().decode("utf-8").splitlines(keepends=True)
    path = dest / f"{name}-{part}.jsonl"
    path.write_text("".join(lines[:limit]), encoding="utf-8")
    return path
