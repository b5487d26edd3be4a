"""Index: the live collection, shared between threads, saved in the CLI's index format."""

import json
import threading

import pytest

import neardup
from pyhelpers import run_cli

BASE = "the quick brown fox jumps over the lazy dog near the river bank in the morning"


def test_insert_search_check_remove():
    idx = neardup.Index(threshold=0.5)
    idx.insert("a", BASE)
    idx.insert_many(["b", "c"], [BASE + " again", "something else entirely about trains"])
    assert len(idx) == 3 and "b" in idx and idx.ids() == ["a", "b", "c"]
    hits = idx.search(BASE + "!")
    assert [h[0] for h in hits] == ["a", "b"] and hits[0][1] == 1.0
    r = idx.check("d", BASE)
    assert r["duplicate"] and not r["inserted"] and r["matches"][0][0] == "a"
    r = idx.check("e", "a completely new page about cooking rice at home tonight", insert=True)
    assert not r["duplicate"] and r["inserted"] and "e" in idx
    assert idx.remove("a") and not idx.remove("a")
    assert [h[0] for h in idx.search(BASE)] == ["b"]
    with pytest.raises(ValueError, match="threshold"):
        idx.search(BASE, threshold=2.0)
    with pytest.raises(ValueError, match="ids for"):
        idx.insert_many(["x"], ["a", "b"])


def test_threads_share_one_index():
    idx = neardup.Index(threshold=0.8)
    errors = []

    def work(t: int) -> None:
        try:
            for i in range(50):
                idx.insert(f"t{t}-{i}", f"{BASE} thread {t} item {i} with more words {i * 7}")
                idx.search(f"{BASE} thread {t} item {i}")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and len(idx) == 200


def test_save_load_and_the_cli_reads_it(binary, tmp_path):
    idx = neardup.Index(threshold=0.8)
    idx.insert_many(["a", "b"], [BASE, "another stored page about trains and stations"])
    idx.save(tmp_path / "idx")
    again = neardup.Index.load(tmp_path / "idx")
    assert again.ids() == ["a", "b"] and again.search(BASE)[0][0] == "a"
    assert again.pipeline.id == idx.pipeline.id
    # `neardup dedup --against` reads an index saved from Python.
    batch = tmp_path / "new.jsonl"
    batch.write_text(json.dumps({"id": "n", "text": BASE + "!"}) + "\n")
    out = run_cli(binary, "dedup", str(batch), "--against", str(tmp_path / "idx"), "--clusters", "-")
    assert out.returncode == 0, out.stderr
    cluster = json.loads(out.stdout)
    assert cluster["cluster"] == ["a", "n"] and cluster["keep"] == "a"
    with pytest.raises(OSError):
        neardup.Index.load(tmp_path / "missing")
