"""dedup: the same clusters and pairs as `neardup dedup` on the same input."""

import json
import random
import warnings

import numpy as np
import pytest

import neardup
from pyhelpers import example_texts, run_cli


def corpus(seed: int = 3, n: int = 400) -> list[str]:
    """English and Chinese documents with planted near-copies and exact copies."""
    rng = random.Random(seed)
    base = example_texts()
    words = " ".join(base).split()
    han = [c for c in "".join(base) if "\u4e00" <= c <= "\u9fff"]
    docs = []
    for i in range(n):
        r = rng.random()
        if docs and r < 0.3:
            src = rng.choice(docs)
            if r < 0.1:
                docs.append(src)  # an exact copy
                continue
            chars = list(src)
            for _ in range(rng.randint(1, 6)):
                k = rng.randrange(len(chars))
                chars[k] = rng.choice(han) if "\u4e00" <= chars[k] <= "\u9fff" else chars[k].upper()
            docs.append("".join(chars))
        elif r < 0.65:
            docs.append(" ".join(rng.choice(words) for _ in range(rng.randint(20, 60))))
        else:
            docs.append("".join(rng.choice(han) for _ in range(rng.randint(30, 90))))
    return docs


@pytest.mark.parametrize("threshold", [0.5, 0.9])
@pytest.mark.parametrize("keep", ["first", "longest"])
def test_same_clusters_and_pairs_as_the_cli(binary, tmp_path, threshold, keep):
    docs = corpus()
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs)))
    out = run_cli(binary, "dedup", str(path), "--threshold", str(threshold), "--keep", keep,
                  "--clusters", str(tmp_path / "clusters.jsonl"), "--pairs",
                  str(tmp_path / "pairs.jsonl"), "--assignments", str(tmp_path / "a.jsonl"), "-q")
    assert out.returncode == 0, out.stderr
    cli_clusters = [json.loads(l) for l in open(tmp_path / "clusters.jsonl")]
    cli_pairs = {(p["a"], p["b"], p["similarity"]) for p in map(json.loads, open(tmp_path / "pairs.jsonl"))}
    ids = [f"d{i}" for i in range(len(docs))]
    r = neardup.dedup(docs, threshold=threshold, keep=keep, ids=ids)
    got = [{"cluster": c.members, "keep": c.keep, "size": len(c.members)} for c in r.clusters]
    want = [{"cluster": c["cluster"], "keep": c["keep"], "size": c["size"]} for c in cli_clusters]
    assert got == want
    assert len(got) > 5, "the corpus has near-duplicates"
    assert {(a, b, round(s, 6)) for a, b, s in r.pairs} == cli_pairs
    assert r.pair_count == len(cli_pairs)
    kept_cli = [json.loads(l)["kept"] for l in open(tmp_path / "a.jsonl")]
    assert r.keep_mask.tolist() == kept_cli
    assert r.kept_ids() == [i for i, k in zip(ids, kept_cli) if k]


def test_positions_are_the_default_ids_and_summary_counts():
    docs = ["a b c d e f g h i j", "a b c d e f g h i j!", "other words entirely", "a b c d e f g h i j"]
    r = neardup.dedup(docs)
    assert r.kept_ids() == [0, 2] and r.dropped_ids() == [1, 3]
    assert r.clusters[0].members == [0, 1, 3]
    s = r.summary()
    assert s["documents"] == 4 and s["dropped"] == 2 and s["kept"] == 2
    assert s["exact_duplicates"] == 2 and s["pairs"] == 3
    assert r.keep_mask.dtype == np.bool_
    a, b, sim = r.pair_arrays()
    assert sorted(zip(a.tolist(), b.tolist())) == [(0, 1), (0, 3), (1, 3)]
    assert r.cluster_of.tolist() == [0, 0, -1, 0]


def test_complete_pairs_of_a_large_group_and_compact_form():
    docs = ["the same page copied again and again by every mirror"] * 300
    r = neardup.dedup(docs)
    assert r.pair_count == 300 * 299 // 2
    a, b, _ = r.pair_arrays()
    assert len(a) == r.pair_count
    ca, cb, _ = r.pair_arrays(compact=True)
    assert len(ca) == 299


def test_methods_and_options_are_checked():
    docs = ["a b c d e f", "a b c d e f"]
    assert neardup.dedup(docs, hamming=3).clusters[0].members == [0, 1]
    assert neardup.dedup(docs, method="both", hamming=3).dropped == 1
    assert neardup.dedup(docs, recall=0.999).banding is not None
    with pytest.raises(ValueError, match="hamming"):
        neardup.dedup(docs, method="minhash", hamming=3)
    with pytest.raises(ValueError, match="threshold"):
        neardup.dedup(docs, threshold=1.5)
    with pytest.raises(ValueError, match="keep"):
        neardup.dedup(docs, keep="oldest")
    with pytest.raises(ValueError, match="ids"):
        neardup.dedup(docs, ids=["x"])
    with pytest.raises(ValueError, match="recall"):
        neardup.dedup(docs, recall=1.0)


def test_pandas_and_pyarrow_input_read_in_place():
    import pandas as pd
    import pyarrow as pa

    docs = corpus(n=120)
    want = neardup.dedup(docs).keep_mask.tolist()
    for arr in (pa.array(docs), pa.array(docs, type=pa.large_string()),
                pa.chunked_array([docs[:50], docs[50:]])):
        assert neardup.dedup(arr).keep_mask.tolist() == want
    # A slice starts at an offset into the buffers.
    tail = neardup.dedup(docs[10:]).keep_mask.tolist()
    assert neardup.dedup(pa.array(docs)[10:]).keep_mask.tolist() == tail
    assert neardup.dedup(pd.Series(docs)).keep_mask.tolist() == want
    assert neardup.dedup(pd.Series(docs, dtype="string[pyarrow]")).keep_mask.tolist() == want
    with pytest.raises(TypeError, match="document 1 is null"):
        neardup.dedup(pa.array(["a", None]))


def test_a_dict_of_id_to_text_is_deduplicated_under_its_keys():
    from collections import OrderedDict
    from types import MappingProxyType

    texts = ["a b c d e f g h i j", "a b c d e f g h i j!", "other words entirely", "a b c d e f g h i j"]
    keys = ["x", 7, ("t", 1), "w"]
    want = neardup.dedup(texts, ids=keys)
    for docs in (dict(zip(keys, texts)), OrderedDict(zip(keys, texts)),
                 MappingProxyType(dict(zip(keys, texts)))):
        r = neardup.dedup(docs)
        assert r.kept_ids() == ["x", ("t", 1)] == want.kept_ids()
        assert r.clusters == want.clusters and r.pairs == want.pairs
    assert neardup.dedup({}).documents == 0
    with pytest.raises(ValueError, match="keys are the ids"):
        neardup.dedup(dict(zip(keys, texts)), ids=keys)
    with pytest.raises(TypeError, match="'w' is int, not str"):
        neardup.dedup({"x": "text", "w": 3})


def _batch_calls():
    index = neardup.Index()
    pipeline = neardup.Pipeline("default")
    return {
        "dedup": neardup.dedup,
        "fingerprint_batch": pipeline.fingerprint_batch,
        "insert_many": lambda texts: index.insert_many(["a", "b"], texts),
    }


def _not_taken():
    import pandas as pd
    import pyarrow as pa

    return [
        (None, "NoneType"),
        (5, "int"),
        ("one text", "str"),
        (b"bytes", "bytes"),
        (pd.DataFrame({"text": ["a", "b"]}), "DataFrame"),
        (pa.table({"text": ["a", "b"]}), "Table"),
        (np.array([["a", "b"], ["c", "d"]]), "2-D"),
    ]


@pytest.mark.parametrize("call", ["dedup", "fingerprint_batch", "insert_many"])
def test_collections_not_taken_raise_type_error_naming_them(call):
    f = _batch_calls()[call]
    cases = _not_taken()
    if call != "dedup":  # dedup takes a dict of id -> text and tables; the others have no ids
        cases.append(({"a": "x", "b": "y"}, "dict"))
    else:
        cases = [(given, name) for given, name in cases if name not in ("DataFrame", "Table")]
    for given, name in cases:
        with pytest.raises(TypeError) as e:
            f(given)
        message = str(e.value)
        assert name in message and "list of str" in message, (call, message)
        assert "offsets" not in message, message


def test_dedup_takes_a_table_with_its_text_and_id_columns():
    """A pandas or polars DataFrame, or a pyarrow Table: the texts from text_col, the ids from
    id_col (or a column named id); the same clusters as the list of texts."""
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    texts = corpus()
    ids = [f"doc-{i}" for i in range(len(texts))]
    want = neardup.dedup(texts, ids=ids).clusters
    assert want
    for table in (
        pd.DataFrame({"id": ids, "body": texts, "n": range(len(texts))}),
        pl.DataFrame({"id": ids, "body": texts}),
        pa.table({"id": ids, "body": texts}),
    ):
        got = neardup.dedup(table, text_col="body").clusters
        assert got == want, type(table)
    renamed = pa.table({"url": ids, "text": texts})
    assert neardup.dedup(renamed, id_col="url").clusters == want
    with pytest.raises(neardup.InputError, match=r"no column 'body' \(text_col\).*\['url', 'text'\]"):
        neardup.dedup(renamed, text_col="body")
    with pytest.raises(neardup.InputError, match="ids given together with a table"):
        neardup.dedup(renamed, ids=ids)


def crawl_dates(n: int, seed: int = 5) -> list:
    """An ISO 8601 fetch time per document (some with an offset, one in ten missing)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.1:
            out.append(None)
            continue
        day, hour = rng.randint(1, 28), rng.randint(0, 23)
        out.append(f"2024-02-{day:02d}T{hour:02d}:{rng.randint(0, 59):02d}:00"
                   + rng.choice(["Z", "+08:00", "-05:00"]))
    return out


@pytest.mark.parametrize("rule", ["max:fetched_at", "min:fetched_at"])
def test_keep_by_a_date_column_keeps_what_the_cli_keeps(binary, tmp_path, rule):
    """keep="max:COLUMN" on a pandas, polars or pyarrow table, its dates as ISO strings or as
    datetimes: the same kept documents as `neardup dedup --keep max:FIELD` on JSONL."""
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    texts = corpus()
    ids = [f"doc-{i}" for i in range(len(texts))]
    dates = crawl_dates(len(texts))
    path = tmp_path / "c.jsonl"
    path.write_text("".join(
        json.dumps({"id": i, "text": t, **({"fetched_at": d} if d else {})}) + "\n"
        for i, t, d in zip(ids, texts, dates)
    ))
    out = run_cli(binary, "dedup", str(path), "--keep", rule, "-o", str(tmp_path / "kept.jsonl"), "-q")
    assert out.returncode == 0, out.stderr
    cli_kept = [json.loads(l)["id"] for l in open(tmp_path / "kept.jsonl")]
    first = [i for i, k in zip(ids, neardup.dedup(texts).keep_mask) if k]
    assert cli_kept != first, "the rule changes which copy is kept"

    stamps = pd.to_datetime(pd.Series(dates), utc=True, format="ISO8601")
    for table in (
        pd.DataFrame({"id": ids, "text": texts, "fetched_at": dates}),
        pd.DataFrame({"id": ids, "text": texts, "fetched_at": stamps}),  # NaT for missing
        pl.DataFrame({"id": ids, "text": texts, "fetched_at": dates}),
        pa.table({"id": ids, "text": texts, "fetched_at": pa.Array.from_pandas(stamps)}),
    ):
        r = neardup.dedup(table, keep=rule)
        assert r.kept_ids() == cli_kept, type(table)

    with pytest.raises(neardup.InputError, match=r"no column 'fetched' \(of keep="):
        neardup.dedup(pd.DataFrame({"text": texts, "at": dates}), keep="max:fetched")
    with pytest.raises(neardup.InputError, match="reads the column 'fetched_at' of a table"):
        neardup.dedup(texts, keep=rule)
    bad = list(dates)
    bad[7] = "last tuesday"
    with pytest.raises(neardup.InputError, match="row 7: column .fetched_at. \\(of keep\\): .last tuesday. is neither a number nor"):
        neardup.dedup(pd.DataFrame({"text": texts, "fetched_at": bad}), keep=rule)
    mixed = [3] + dates[1:]
    with pytest.raises(neardup.InputError, match="holds a date here and a number"):
        neardup.dedup(pd.DataFrame({"text": texts, "fetched_at": mixed}), keep=rule)


def test_repeated_ids_stay_separate_documents_and_are_said_as_the_cli_says(binary, tmp_path):
    """Records that repeat an id ("7" and 7 are one id) are kept apart as two documents and
    reported, with the CLI's count, examples and words: they passed silently."""
    import pandas as pd

    texts = corpus()[:40]
    ids = ["7", 7] + [f"d{i}" for i in range(2, 38)] + ["u", "u"]
    ids[20] = "u"
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts)))
    out = run_cli(binary, "dedup", str(path), "-o", "/dev/null")
    assert out.returncode == 0, out.stderr
    [cli_line] = [l.strip() for l in out.stderr.decode().splitlines() if "duplicate id" in l]

    for given in (dict(docs=pd.DataFrame({"id": ids, "text": texts})), dict(docs=texts, ids=ids)):
        with pytest.warns(neardup.RepeatedIdWarning) as caught:
            result = neardup.dedup(**given)
        assert str(caught[0].message) == f"neardup.dedup: {cli_line}"
        assert result.documents == len(texts) and result.kept_ids().count("u") >= 1
        s = result.summary()
        assert s["repeated_ids"] == 3 and s["repeated_id_examples"] == ["7", "u"]
        assert cli_line in result.summary_text()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert neardup.dedup(texts).summary()["repeated_ids"] == 0  # positions repeat nothing


def test_dotted_names_reach_into_struct_columns_as_the_cli_reads_parquet(binary, tmp_path):
    """id_col="meta.url" (and text and keep columns) read the field of a struct column, as
    `neardup dedup --id-field meta.url` reads a Parquet file; a column of the whole name wins."""
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = corpus()[:300]
    urls = [f"https://x.example/{i}" for i in range(len(texts))]
    dates = crawl_dates(len(texts))
    table = pa.table({
        "meta": pa.array([{"url": u, "fetched_at": d} for u, d in zip(urls, dates)]),
        "body": pa.array([{"content": {"text": t}} for t in texts]),
    })
    path = tmp_path / "nested.parquet"
    pq.write_table(table, path)

    def cli(source, *args):
        out = run_cli(binary, "dedup", str(source), "--clusters", str(tmp_path / "cl.jsonl"),
                      "-o", "/dev/null", "-q", *args)
        assert out.returncode == 0, out.stderr
        return sorted(sorted(json.loads(l)["cluster"]) for l in open(tmp_path / "cl.jsonl"))

    want = cli(path, "--id-field", "meta.url", "--text-field", "body.content.text",
               "--keep", "max:meta.fetched_at")
    assert len(want) > 10
    for given in (
        table,
        table.to_pandas(),  # columns of dicts
        table.to_pandas(types_mapper=pd.ArrowDtype),  # Arrow struct columns
        pl.from_arrow(table),
    ):
        result = neardup.dedup(given, text_col="body.content.text", id_col="meta.url",
                               keep="max:meta.fetched_at")
        assert sorted(sorted(c.members) for c in result.clusters) == want, type(given)

    # A column named with the whole dotted name is read before the struct's field.
    whole = table.append_column("meta.url", pa.array([f"w{i}" for i in range(len(texts))]))
    pq.write_table(whole, path)
    want = cli(path, "--id-field", "meta.url", "--text-field", "body.content.text")
    assert all(m.startswith("w") for c in want for m in c)
    for given in (whole, whole.to_pandas()):
        result = neardup.dedup(given, text_col="body.content.text", id_col="meta.url")
        assert sorted(sorted(c.members) for c in result.clusters) == want, type(given)

    with pytest.raises(neardup.InputError, match=r"no column 'meta.uri' \(id_col\) .*dotted name"):
        neardup.dedup(table, text_col="body.content.text", id_col="meta.uri")


def test_keep_compares_integers_past_2_53_and_times_1_ns_apart_exactly():
    """Regression (sweep 3): keep values went through doubles, so 2**53 and 2**53 + 1, or two
    crawl times 1 ns apart, tied and the first copy was kept, as in the CLI before."""
    import pandas as pd

    text = "the same page crawled twice, word for word, with nothing at all changed in it"
    for values in ([2**53, 2**53 + 1], [2**70, 2**70 + 1],
                   [pd.Timestamp("2024-05-01T00:00:00.000000001Z"),
                    pd.Timestamp("2024-05-01T00:00:00.000000002Z")]):
        table = pd.DataFrame({"id": ["first", "second"], "text": [text, text], "v": values})
        assert neardup.dedup(table, keep="max:v").kept_ids() == ["second"], values
        assert neardup.dedup(table, keep="min:v").kept_ids() == ["first"], values
