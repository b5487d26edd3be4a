"""Pipeline, fingerprints, compare: the same answers as the command line."""

import json
import pickle

import numpy as np
import pytest

import neardup
from pyhelpers import ROOT, run_cli


def test_fingerprint_equals_the_cli(binary):
    files = sorted((ROOT / "examples" / "data").glob("*/*.txt"))
    out = run_cli(binary, "fingerprint", "--minhash", *map(str, files))
    assert out.returncode == 0, out.stderr
    cli = [json.loads(line) for line in out.stdout.decode().splitlines()]
    p = neardup.Pipeline()
    for path, line in zip(files, cli):
        fp = p.fingerprint(path.read_text(encoding="utf-8"))
        assert fp.hex == line["simhash"], path
        assert fp.minhash.tolist() == line["minhash"]
        assert fp.features == line["features"]
        assert fp.minhash.dtype == np.uint32


def test_options_by_name_match_the_cli_spec(binary):
    out = run_cli(binary, "spec", "--preset", "zh-news", "--ngram", "3", "--features", "ngrams",
                  "--stop-words", "zh", "--no-nfkc", "--num-perm", "64")
    assert out.returncode == 0, out.stderr
    p = neardup.Pipeline("zh-news", ngram=3, features="ngrams", stop_words=["zh"], nfkc=False,
                         num_perm=64)
    assert p.spec == json.loads(out.stdout)
    assert neardup.Pipeline.from_spec(p.spec).id == p.id
    assert neardup.Pipeline.from_spec(json.dumps(p.spec)).id == p.id
    assert p.num_perm == 64


def test_batch_equals_one_by_one_and_takes_many_inputs():
    texts = ["the quick brown fox jumps", "今天天气很好，我们出去玩吧", "", "a b c d e f g"] * 5
    p = neardup.Pipeline(bits=64)
    b = p.fingerprint_batch(texts)
    assert b.simhash.dtype == np.uint64 and b.simhash.shape == (20,)
    assert b.minhash.shape == (20, 128) and b.minhash.dtype == np.uint32
    for i, t in enumerate(texts):
        fp = p.fingerprint(t)
        assert int(b.simhash[i]) == fp.simhash
        assert b.minhash[i].tolist() == fp.minhash.tolist()
        assert int(b.features[i]) == fp.features
    assert len(b) == 20
    # tuple, generator, numpy array of str: the same answers.
    for other in (tuple(texts), (t for t in texts), np.array(texts, dtype=object)):
        assert p.fingerprint_batch(other).simhash.tolist() == b.simhash.tolist()
    wide = neardup.Pipeline(bits=128).fingerprint_batch(texts[:3], minhash=False)
    assert wide.simhash.shape == (3, 2) and wide.minhash is None


def test_tokens_skip_segmentation():
    p = neardup.Pipeline(features="words")
    assert p.features(["New York", "ＣＩＴＹ"]) == ["new york", "city"]
    assert p.fingerprint(["a", "b"]).features == 2


def test_compare_has_the_keys_of_compare_json(binary):
    a, b = "the cat sat on the mat", "the cat sat on a mat"
    out = run_cli(binary, "compare", "--text", a, "--text", b, "--features", "words", "--json")
    cli = json.loads(out.stdout)
    py = neardup.compare(a, b, neardup.Pipeline(features="words"))
    assert list(py) == list(cli)
    assert py == cli


def test_chinese_line_breaks_change_nothing():
    a = "石城古岸頭，一望思悠悠。幾許六朝事，不禁江水流。"
    b = "石城古岸頭，一望思悠悠。\n幾許六朝事，\r\n不禁 江水流。"
    assert neardup.compare(a, b)["jaccard_exact"] == 1.0


def test_pickle_and_repr():
    p = neardup.Pipeline("zh-news")
    q = pickle.loads(pickle.dumps(p))
    assert q.id == p.id and q.spec == p.spec
    assert "Pipeline" in repr(p)


def test_errors_are_python_exceptions_with_the_cli_messages():
    with pytest.raises(ValueError, match="segmentr"):
        neardup.Pipeline(segmentr="jieba")
    with pytest.raises(ValueError, match="trigrams"):
        neardup.Pipeline(features="trigrams")
    with pytest.raises(ValueError, match="1024"):
        neardup.Pipeline(num_perm=5000)
    with pytest.raises(ValueError, match="unknown preset"):
        neardup.Pipeline("fr-news")
    with pytest.raises(OSError, match="nonexistent"):
        neardup.Pipeline(idf="/nonexistent/idf.txt")
    with pytest.raises(ValueError, match="expected an object"):
        neardup.Pipeline.from_spec("[1, 2]")
    p = neardup.Pipeline()
    with pytest.raises(TypeError, match="document 1 is None"):
        p.fingerprint_batch(["a", None])
    with pytest.raises(TypeError, match="document 2 is bytes"):
        p.fingerprint_batch(["a", "b", b"c"])
    with pytest.raises(TypeError, match="document 0 is int"):
        p.fingerprint_batch([3])
    with pytest.raises(TypeError):
        p.fingerprint(None)
    with pytest.raises(TypeError, match="single str"):
        p.fingerprint_batch("not a list")


def test_presets_are_listed():
    names = [n for n, _ in neardup.presets()]
    assert "default" in names and "zh-news" in names
