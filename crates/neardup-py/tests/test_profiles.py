"""The compatibility profiles from Python: every golden vector of each."""

import pytest

from pyhelpers import golden, golden_lines
from neardup import profiles


def test_jieba_md5_recipe_vectors():
    rows = golden_lines("recipes/recipe_a.jsonl")
    for v in rows:
        if v["bits"] is None:
            with pytest.raises(ValueError, match="Han"):
                profiles.jieba_md5(v["text"])
            continue
        r = profiles.jieba_md5(v["text"])
        assert r["bits"] == v["bits_first_occurrence"], v["id"]
        if not v["hash_seed_sensitive"]:
            assert r["bits"] == v["bits"], v["id"]
        assert [list(w) for w in r["words"]] == [list(w) for w in v["words"]], v["id"]
        assert r["simhash"] == int(r["bits"], 2)


def test_gojieba_recipe_vectors():
    for v in golden_lines("recipes/recipe_b.jsonl"):
        r = profiles.gojieba(v["text"], v["topk"])
        assert r["bits"] == v["bits"], (v["id"], v["topk"])
        assert [w for w, _ in r["keywords"]] == [w for w, _ in v["words"]]


def test_yanyiwu_vectors():
    d = golden("yanyiwu_simhash.json")
    checked = 0
    for v in d["vectors"]:
        hexed = v.get("text_utf8_hex")
        r = v["results"].get("yanyiwu_simhash")
        if hexed is None or r is None:
            continue
        try:
            text = bytes.fromhex(hexed).decode("utf-8")
        except UnicodeDecodeError:
            continue  # invalid UTF-8 cannot be a Python str (the CLI and library test these)
        got = profiles.yanyiwu(text, v["topn"])
        assert got["simhash"] == int(r["simhash"]), v["id"]
        checked += 1
    assert checked > 20


def test_lucene_vectors():
    d = golden("lucene_minhash.json")
    checked = 0
    for v in d["vectors"]:
        if v.get("tokenizer") != "whitespace":
            continue
        e = v["effective"]
        got = profiles.lucene_min_hash(
            v["input_text"], e["hash_count"], e["bucket_count"], e["hash_set_size"],
            e["with_rotation"], v["shingle_size"],
        )
        assert [t.hex() for t in got] == v["output"]["indexed_utf8_hex"], v["id"]
        checked += 1
    assert checked > 20
    with pytest.raises(ValueError, match="hash_count"):
        profiles.lucene_min_hash("a b", hash_count=100000, bucket_count=100000)


# The bounds of the size options, as the CLI applies them (crates/neardup-cli/src/cmd/profile.rs:
# --topn at most MAX_TOP_N; Lucene's limits in neardup-compat; --shingle-size at most MAX_NGRAM).
MAX_TOP_N = 10_000
SIZE_OPTIONS = [
    (profiles.yanyiwu, "topn", 0, MAX_TOP_N),
    (profiles.jiebar, "topn", 0, MAX_TOP_N),
    (profiles.gojieba, "topn", 0, MAX_TOP_N),
    (profiles.lucene_min_hash, "hash_count", 1, 1024),
    (profiles.lucene_min_hash, "bucket_count", 1, 65_536),
    (profiles.lucene_min_hash, "hash_set_size", 1, 1024),
    (profiles.lucene_min_hash, "shingle_size", 1, 64),
]


@pytest.mark.parametrize("value", ["above", 2**64 - 1, 2**64, 2**100, "below", -(2**70)])
@pytest.mark.parametrize(
    "function,option,low,high", SIZE_OPTIONS, ids=lambda x: getattr(x, "__name__", str(x))
)
def test_size_options_out_of_bounds_raise_value_error_naming_them(function, option, low, high, value):
    value = {"above": high + 1, "below": low - 1}.get(value, value)
    with pytest.raises(ValueError) as e:
        function("今天天气很好 the weather is fine", **{option: value})
    message = str(e.value)
    assert option in message and str(value) in message, message
    assert str(high if value > high else low) in message, message


@pytest.mark.parametrize(
    "function,option,low,high", SIZE_OPTIONS, ids=lambda x: getattr(x, "__name__", str(x))
)
def test_size_options_at_their_bounds_are_taken(function, option, low, high):
    for value in (low, high):
        kwargs = {option: value}
        if option == "topn" and value == 0 and function is not profiles.gojieba:
            continue  # 0 keywords: taken, nothing to vote (the CLI takes it as well)
        function("今天天气很好 the weather is fine", **kwargs)
