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
