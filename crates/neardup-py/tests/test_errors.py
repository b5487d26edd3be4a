"""One exception tree under neardup.Error, each class also the built-in it was before."""

import json
import re

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


# Every float option, on every surface that takes it (job_spec is what Spark's functions run).
FLOAT_OPTIONS = [
    ("threshold", lambda v: neardup.dedup([BASE], threshold=v)),
    ("recall", lambda v: neardup.dedup([BASE], recall=v)),
    ("lsh_weights[1]", lambda v: neardup.dedup([BASE], lsh_weights=(0.5, v))),
    ("threshold", lambda v: neardup.Index(threshold=v)),
    ("recall", lambda v: neardup.Index(recall=v)),
    ("lsh_weights[0]", lambda v: neardup.Index(lsh_weights=[v, 0.5])),
    ("threshold", lambda v: neardup.Index().search(BASE, threshold=v)),
    ("threshold", lambda v: neardup.Index().check("x", BASE, threshold=v)),
    ("min_similarity", lambda v: neardup.overlap(BASE, [BASE], min_similarity=v)),
    ("min_similarity", lambda v: neardup.Index(passages={"min_similarity": v})),
    ("threshold", lambda v: neardup._neardup.job_spec(None, {"threshold": v})),
    ("ngram", lambda v: neardup.Pipeline(ngram=v)),
    ("spec.minhash.num_perm", lambda v: neardup.Pipeline.from_spec({"minhash": {"num_perm": v}})),
]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("name,call", FLOAT_OPTIONS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(FLOAT_OPTIONS)])
def test_nan_and_infinite_options_are_refused_naming_them(name, call, value):
    """NaN and the infinities have no JSON form: they became null, "not given", and
    threshold=nan ran at 0.8. Each is an OptionError naming the option and the value."""
    with pytest.raises(neardup.OptionError, match=re.escape(f"{name}: expected a finite number, found {value!r}")):
        call(value)


# A text decoded with errors="surrogateescape" from Latin-1 bytes: b"caf\xe9 au lait".
BAD = b"caf\xe9 au lait".decode("utf-8", "surrogateescape")


@pytest.mark.parametrize("call,where", [
    (lambda: neardup.dedup([BASE, BAD]), "document 1"),
    (lambda: neardup.dedup({"a": BASE, "b": BAD}), "document 1"),
    (lambda: neardup.Pipeline().fingerprint(BAD), "text"),
    (lambda: neardup.Pipeline().fingerprint(["ok", BAD]), "text: token 1"),
    (lambda: neardup.Pipeline().fingerprint_batch([BASE, BASE, BAD]), "document 2"),
    (lambda: neardup.compare(BASE, BAD), "b"),
    (lambda: neardup.Index().insert(BAD, BASE), "id"),
    (lambda: neardup.Index().insert("a", BAD), "text"),
    (lambda: neardup.Index().insert_many(["a", BAD], [BASE, BASE]), r"ids\[1\]"),
    (lambda: neardup.Index().search(BAD), "text"),
    (lambda: neardup.overlap({"q": BAD}, [BASE]), 'queries: document "q"'),
    (lambda: neardup.overlap(BASE, {"a": BASE, "b": BAD}), 'against: document "b"'),
    (lambda: neardup.overlap({BAD: BASE}, [BASE]), "queries: the id"),
    (lambda: neardup.overlap(BASE, {"a": BASE}, exclude_source=[BAD]), r"exclude_source\[0\]: the id"),
    (lambda: neardup.dedup([BASE], method=BAD), "method: the value"),
    (lambda: neardup.Pipeline(segmenter=BAD), "segmenter: the value"),
])
def test_a_lone_surrogate_is_an_input_error_naming_its_place(call, where):
    """Python's raw UnicodeEncodeError, for a text or id UTF-8 cannot hold, becomes an
    InputError naming the argument, its place, the character and an excerpt of the value."""
    with pytest.raises(neardup.InputError, match=where) as e:
        call()
    said = str(e.value)
    assert "lone surrogate U+DCE9 at character 3" in said and "'caf\\udce9 au lait'" in said, said


@pytest.mark.parametrize("call,message", [
    (lambda: neardup.Index().search(BASE, top_k=-1), r"top_k: expected a whole number from 0 to \d+, found -1"),
    (lambda: neardup.Index().search(BASE, top_k=2**70), r"top_k: .* found 1180591620717411303424"),
    (lambda: neardup.Index().check("x", BASE, top_k=-1), "top_k: .* found -1"),
    (lambda: neardup.dedup([BASE], bands=2**70), r"bands: expected a number from -\d+ to \d+, found 1180591620717411303424"),
    (lambda: neardup.dedup([BASE], star_width=-2**70), "star_width: .* found -1180591620717411303424"),
    (lambda: neardup.dedup([BASE], max_bucket=-1), "max_bucket: .*-1"),
    (lambda: neardup.Pipeline(ngram=2**70), "ngram: .* found 1180591620717411303424"),
    (lambda: neardup.overlap(BASE, [BASE], min_units=2**40), r"min_units: expected a whole number in \[1, 1000\], found 1099511627776"),
    (lambda: neardup.overlap(BASE, [BASE], window=-1), r"window: expected a whole number in \[1, 1000\], found -1"),
])
def test_an_int_out_of_range_is_an_option_error_naming_it(call, message):
    """An int past u32/usize, or a negative count: Python's raw OverflowError before."""
    with pytest.raises(neardup.OptionError, match=message):
        call()


def test_wrong_kinds_of_values_are_type_errors_naming_the_option():
    with pytest.raises(neardup.InputTypeError, match="top_k: expected an int, found float"):
        neardup.Index().search(BASE, top_k=2.5)
    with pytest.raises(neardup.InputTypeError, match='keep_quotes: expected true or false, found "yes"'):
        neardup.Index(passages={"keep_quotes": "yes"})
    with pytest.raises(neardup.InputTypeError, match='min_units: expected a whole number .*, found "5"'):
        neardup.Index(passages={"min_units": "5"})


def test_table_columns_are_found_by_label_and_a_shared_name_is_refused():
    """A pandas column labelled 0 is named by "0" as by 0 (a KeyError before), and a name two
    columns share is an InputError naming it (pyarrow raised KeyError)."""
    import pandas as pd
    import pyarrow as pa

    texts = [BASE, BASE + " again", "something else entirely"]
    by_label = pd.DataFrame({0: ["a", "b", "c"], 1: texts})
    for text_col, id_col in (("1", "0"), (1, 0)):
        assert neardup.dedup(by_label, text_col=text_col, id_col=id_col).clusters[0].members == ["a", "b"]
    twice = pa.Table.from_arrays([pa.array(texts), pa.array(texts)], names=["text", "text"])
    with pytest.raises(neardup.InputError, match=r"text_col: 2 columns of the pyarrow Table are named 'text'"):
        neardup.dedup(twice)
    with pytest.raises(neardup.InputError, match=r"text_col: 2 columns of the pandas DataFrame are named 'text'"):
        neardup.dedup(pd.DataFrame([[t, t] for t in texts], columns=["text", "text"]))
