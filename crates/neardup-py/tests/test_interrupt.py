"""Long calls answer Ctrl-C within a second and show progress on a terminal (issue 20): a child
Python runs a long call with progress on, the test waits for its progress line, sends SIGINT
and times the KeyboardInterrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

CHILD = """
import sys, neardup
n = int(sys.argv[2])
base = " ".join(f"w{j}" for j in range(300))
texts = [f"{base} tail {i}" for i in range(n)]
call = sys.argv[1]
print("ready", flush=True)
try:
    if call == "dedup":
        neardup.dedup(texts, progress=True)
    elif call == "fingerprint_batch":
        neardup.Pipeline().fingerprint_batch(texts, progress=True)
    elif call == "overlap":
        print("working", file=sys.stderr, flush=True)
        neardup.overlap(texts[: n // 4], against=texts)
    else:
        neardup.Index().insert_many([str(i) for i in range(n)], texts, progress=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(42)
print("finished", flush=True)
"""


@pytest.mark.parametrize("call", ["dedup", "fingerprint_batch", "insert_many", "overlap"])
def test_ctrl_c_interrupts_a_long_call_within_a_second(call):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, call, "400000" if call != "overlap" else "100000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        seen = ""
        deadline = time.monotonic() + 60
        if call == "overlap":
            # No progress line: the call is deep in Rust a second after it starts.
            while "working" not in seen and time.monotonic() < deadline:
                seen += os.read(child.stderr.fileno(), 4096).decode(errors="replace")
            time.sleep(1.5)
        else:
            # The progress line appears after a second of work: then the call is deep in Rust.
            while "neardup:" not in seen and time.monotonic() < deadline:
                seen += os.read(child.stderr.fileno(), 4096).decode(errors="replace")
            assert "documents" in seen, seen
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        took = time.monotonic() - sent
        assert child.returncode == 42, (out, err[-2000:])
        assert "interrupted" in out and "finished" not in out
        assert took < 1.0, f"{call}: KeyboardInterrupt {took:.2f} s after SIGINT"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_progress_is_off_when_stderr_is_not_a_terminal():
    child = subprocess.run(
        [sys.executable, "-c", "import neardup; neardup.dedup(['a b c'] * 10)"],
        capture_output=True, text=True, timeout=60,
    )
    assert child.returncode == 0 and child.stderr == "", child.stderr
