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


# One long passage check: a thesis of varied repeats of a few paragraphs against many near-copies
# (each k-gram hits every copy, in many places; some 200 sources are aligned in turn, seconds of
# work in one query), from a saved passage index (loaded in a moment, so that the signal comes
# during the check) or an Index.
CHILD_PASSAGES = """
import pathlib, random, sys, neardup
rng = random.Random(1)
vocab = [f"w{i}" for i in range(2000)]
base = [" ".join(rng.choice(vocab) for _ in range(60)) for _ in range(5)]
def varied(r):
    return "\\n".join(
        " ".join(w if r.random() > 0.03 else r.choice(vocab) for w in rng.choice(base).split()) + "."
        for _ in range(1000)
    )
thesis = varied(random.Random(0))
collection = {f"c{i}": varied(random.Random(i + 1)) for i in range(200)}
call = sys.argv[1]
index = neardup.Index(passages=True)
index.insert_many(list(collection), list(collection.values()))
if call == "overlap":
    saved = pathlib.Path(sys.argv[2])
    index.save(saved)  # with its passage index, which neardup.overlap reads
print("ready", flush=True)
try:
    print("working", file=sys.stderr, flush=True)
    if call == "overlap":
        neardup.overlap(thesis, saved)
    else:
        index.overlap(thesis)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(42)
print("finished", flush=True)
"""


@pytest.mark.parametrize("call", ["overlap", "Index.overlap"])
def test_ctrl_c_interrupts_one_long_passage_check(call, tmp_path):
    """One query's passage check runs off the calling thread, the passage index's stop flag
    set: Ctrl-C stops it between candidate sources, not at its end seconds later."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_PASSAGES, call, str(tmp_path / "saved")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()[-2000:]
        seen = ""
        deadline = time.monotonic() + 60
        while "working" not in seen and time.monotonic() < deadline:
            seen += os.read(child.stderr.fileno(), 4096).decode(errors="replace")
        time.sleep(1.0)  # deep in the check: it takes seconds
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
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
