"""One exception tree under neardup.Error, each class also the built-in it was before."""

import json

import pytest

import neardup
from pyhelpers import run_cli

BASE = "the quick brown fox jumps over the lazy dog near the river bank in the morning"


def test_the_tree_keeps_the_builtins():
    assert issubclass(neardup.OptionError, neardup.InputError)
    assert issubclass(neardup.InputError, ValueError)
    assert issubclass(neardup.InputTypeError, TypeError)
    assert issubclass(neardup.PipelineMismatchError, neardup.IndexFileError)
    assert issubclass(neardup.IndexFileError, ValueError)
    assert issubclass(neardup.FileError, OSError)
    for cls in (neardup.InputError, neardup.InputTypeError, neardup.IndexFileError, neardup.FileError):
        assert issubclass(cls, neardup.Error)


@pytest.mark.parametrize("call,cls", [
    (lambda: neardup.dedup(["a"], method="lsh"), neardup.OptionError),
    (lambda: neardup.dedup(["a"], threshold=1.5), neardup.OptionError),
    (lambda: neardup.Pipeline(ngramm=3), neardup.OptionError),
    (lambda: neardup.Pipeline.from_spec('{"features": 5}'), neardup.OptionError),
    (lambda: neardup.Index(hamming=3, method="minhash"), neardup.OptionError),
    (lambda: neardup.dedup(5), neardup.InputTypeError),
    (lambda: neardup.Index().insert("", BASE), neardup.InputError),
    (lambda: neardup.Index().insert(1.5, BASE), neardup.InputTypeError),
    (lambda: neardup.Index.load("/nonexistent/neardup-index"), neardup.FileError),
    (lambda: neardup.overlap(["a"], min_units=0), neardup.OptionError),
])
def test_each_error_has_its_class(call, cls):
    with pytest.raises(cls):
        call()


def test_saved_index_errors(binary, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": 1, "text": t}) + "\n" for t in [BASE, "other words"]))
    assert run_cli(binary, "dedup", str(corpus), "--save-index", str(tmp_path / "rep")).returncode == 0
    with pytest.raises(neardup.IndexFileError, match="repeats the id"):
        neardup.Index.load(tmp_path / "rep")
    idx = neardup.Index()
    idx.insert("a", BASE)
    idx.save(tmp_path / "ok")
    (tmp_path / "ok" / "manifest.json").write_text("{not json")
    with pytest.raises(neardup.IndexFileError):
        neardup.Index.load(tmp_path / "ok")
