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


def test_the_wrong_kind_of_index_is_named(binary, tmp_path):
    # Regression (sweep 3): the wrong kind of index was "invalid UTF-8", or an empty collection.
    dedup_index = tmp_path / "dedup-index"
    neardup.Index(threshold=0.8).save(dedup_index)
    library = tmp_path / "library.txt"
    library.write_text(BASE)
    passage_index = tmp_path / "passage-index"
    out = run_cli(binary, "overlap", "--against", str(library), "--save-index", str(passage_index))
    assert out.returncode == 0, out.stderr
    with pytest.raises(neardup.errors.IndexFileError, match="is a passage index"):
        neardup.Index.load(passage_index)
    with pytest.raises(neardup.errors.IndexFileError, match="not a passage index"):
        neardup.overlap("a thesis " + BASE, against=dedup_index)
    # Each kind answers where it belongs.
    found = neardup.overlap("a thesis: " + BASE, against=passage_index)
    assert found["copied"] > 0.8


_SAVE_CHILD = """
import resource, sys
import neardup
path, limit, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
idx = neardup.Index.load(path)
for i in range(n):
    idx.insert(f"new-{i}", " ".join(f"new{i}w{k}" for k in range(12)))
if limit >= 0:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    idx.save(path)
except OSError as e:
    print(e, file=sys.stderr)
    sys.exit(3)
"""


def _copy_index(src, dst):
    import shutil

    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)


def test_a_failed_or_killed_save_leaves_the_old_index_or_the_new_one(tmp_path):
    """Index.save under a file size limit at many sizes, and under SIGKILL at moments spread
    over a save: the index read afterwards is the old one or the new one, whole; OSError means
    the old one, success the new one."""
    import subprocess
    import sys
    import time

    base = tmp_path / "base"
    old = neardup.Index(threshold=0.8)
    for i in range(40):
        old.insert(f"old-{i}", " ".join(f"old{i}w{k}" for k in range(12)))
    old.save(base)
    path = tmp_path / "index"
    n_new = 600

    def counts():
        return len(neardup.Index.load(path))

    reached_new = False
    for limit in [0, 100, 1000, 4000, 16000, 32000, 64000, 100000, -1]:
        _copy_index(base, path)
        child = subprocess.run(
            [sys.executable, "-c", _SAVE_CHILD, str(path), str(limit), str(n_new)],
            capture_output=True,
            text=True,
        )
        n = counts()
        if child.returncode == 0:
            assert n == 40 + n_new, f"limit {limit}: success means the new index"
            reached_new = True
        else:
            assert child.returncode == 3, child.stderr
            assert n == 40, f"limit {limit}: {child.stderr.strip()} means the old index"
            assert "index file" in child.stderr or "lock" in child.stderr, child.stderr
        leftovers = [p.name for p in path.iterdir() if p.name.endswith(".tmp")]
        assert not leftovers, f"limit {limit}: {leftovers}"
    assert reached_new

    started = time.monotonic()
    _copy_index(base, path)
    subprocess.run([sys.executable, "-c", _SAVE_CHILD, str(path), "-1", str(n_new)], check=True)
    length = time.monotonic() - started
    for step in range(12):
        _copy_index(base, path)
        child = subprocess.Popen([sys.executable, "-c", _SAVE_CHILD, str(path), "-1", str(n_new)])
        time.sleep(length * step / 10)
        child.kill()
        child.wait()
        assert counts() in (40, 40 + n_new), f"SIGKILL at {step}/10"


def test_ids_follow_the_library_rule(binary, tmp_path):
    # "7" and 7 are one id, in Python as in the service and the CLI.
    idx = neardup.Index(threshold=0.8)
    idx.insert(7, BASE)
    assert "7" in idx and 7 in idx and idx.ids() == ["7"]
    idx.insert("7", "another stored page about trains and stations")
    assert len(idx) == 1 and idx.search(BASE) == []
    assert idx.remove(7) and len(idx) == 0
    with pytest.raises(TypeError, match="id: an id must be a str or an int, found float"):
        idx.insert(7.0, BASE)
    with pytest.raises(ValueError, match=r"ids\[1\]: an id must not be empty"):
        idx.insert_many(["a", ""], [BASE, BASE])
    with pytest.raises(ValueError, match="at most 512 bytes"):
        idx.check("x" * 513, BASE)
    assert True not in idx

    # A CLI index whose ids are a string and a number loads with the ids as text.
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        json.dumps({"id": "7", "text": BASE}) + "\n"
        + json.dumps({"id": 9, "text": "another stored page about trains and stations"}) + "\n"
    )
    out = run_cli(binary, "dedup", str(corpus), "--save-index", str(tmp_path / "ok"))
    assert out.returncode == 0, out.stderr
    assert neardup.Index.load(tmp_path / "ok").ids() == ["7", "9"]

    # A batch whose records repeat an id ("7" and 7) saves both; loading it as a collection
    # would lose one, so it is refused by name.
    with corpus.open("a") as f:
        f.write(json.dumps({"id": 7, "text": "a third page, about cooking rice at home"}) + "\n")
    out = run_cli(binary, "dedup", str(corpus), "--save-index", str(tmp_path / "rep"))
    assert out.returncode == 0 and b"cannot be loaded as a collection" in out.stderr, out.stderr
    with pytest.raises(ValueError, match='document 2 repeats the id "7"'):
        neardup.Index.load(tmp_path / "rep")
    # The CLI searches it as it is, the repeat kept apart.
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "q", "text": "a third page, about cooking rice at home"}) + "\n")
    out = run_cli(binary, "dedup", str(q), "--against", str(tmp_path / "rep"), "--clusters", "-")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cluster"] == [7, "q"]


@pytest.mark.parametrize("version", ["index_v3", "index_v4"])
def test_the_committed_saved_indexes_load_and_answer_as_the_cli(root, tmp_path, version):
    """tests/fixtures/index_v3 and index_v4 (written by earlier builds: settings one by one,
    then the job) load in Python; checking the query documents against them finds the clusters
    the CLI's `--against` run pinned."""
    import shutil

    fixture = root / "tests" / "fixtures" / version
    shutil.copytree(fixture / "index", tmp_path / "index")
    idx = neardup.Index.load(tmp_path / "index")
    assert sorted(idx.ids()) == ["70", "a", "d", "z"]
    assert idx.banding == (35, 3)  # the settings of a 0.5 threshold, as saved
    expected = {}
    for line in (fixture / "expected_clusters.jsonl").read_text().splitlines():
        cluster = json.loads(line)
        for member in cluster["cluster"]:
            if member != cluster["keep"]:
                expected[member] = str(cluster["keep"])
    for line in (fixture / "query.jsonl").read_text().splitlines():
        doc = json.loads(line)
        answer = idx.check(doc["id"], doc["text"], insert=False)
        found = [m[0] for m in answer["matches"]] if answer["duplicate"] else []
        if doc["id"] in expected:
            assert expected[doc["id"]] in found, (doc["id"], answer)
        else:
            assert not found, (doc["id"], answer)


def test_a_search_below_the_index_threshold_scans_or_is_refused():
    """Never answered in part: below the index's threshold every document is verified while
    they are at most the scan limit (100,000); the pairs between the thresholds are found."""
    base = [f"w{i}" for i in range(60)]
    idx = neardup.Index(pipeline=neardup.Pipeline("shingles"))  # threshold 0.8
    for k in range(16):
        words = [f"x{k}y{j}" if j < k else w for j, w in enumerate(base)]
        idx.insert(f"k{k}", " ".join(words))
    at = idx.search(" ".join(base), top_k=100)
    below = idx.search(" ".join(base), top_k=100, threshold=0.3)
    assert all(s >= 0.3 for _, s in below) and len(below) > len(at)
    assert sum(1 for _, s in below if 0.3 <= s < 0.8) >= 4
    answer = idx.check("q", " ".join(base), insert=False, threshold=0.3, top_k=100)
    assert [m[0] for m in answer["matches"]] == [h[0] for h in below]
