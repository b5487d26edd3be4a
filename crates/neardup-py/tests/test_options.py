"""The one option table: every Python surface takes the library's options under their names, with
the library's defaults and messages. A surface that lacks an option or spells it otherwise fails
here (the CLI's flags and the service's schema are checked against the same table in Rust)."""

import ast
import json
import re
import inspect
from pathlib import Path

import pytest

import neardup
import neardup.spark
import neardup.spark.__main__ as spark_main
from neardup import _neardup

TABLE = neardup.options()
SEARCH = [r["name"] for r in TABLE if r["group"] == "search"]
COLLECTION = [r["name"] for r in TABLE if r["group"] == "search" and r["http"]]
PASSAGES = [r["name"] for r in TABLE if r["group"] == "passages"]
PIPELINE = [r["name"] for r in TABLE if r["group"] == "pipeline"]
STUB = Path(neardup.__file__).with_name("_neardup.pyi")


def params(f) -> set[str]:
    return set(inspect.signature(f).parameters)


def stub_params(cls: str, method: str) -> set[str]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return {a.arg for a in item.args.args + item.args.kwonlyargs}
    raise AssertionError(f"{cls}.{method} not in the stub")


def test_python_and_the_command_line_give_one_table(binary):
    from pyhelpers import run_cli

    out = run_cli(binary, "options", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == TABLE
    for r in TABLE:
        assert set(r) >= {"name", "group", "default", "min", "max", "choices", "doc", "cli",
                          "python", "http", "spark"}, r


def test_each_keyword_default_is_the_tables():
    """A keyword with a default in a signature shows the table's (the others are None: the
    library decides)."""
    rows = {(r["group"], r["name"]): r for r in TABLE}
    for fn, group in [(neardup.dedup, "search"), (neardup.overlap, "passages"),
                      (neardup.Index, "search")]:
        for name, p in inspect.signature(fn).parameters.items():
            r = rows.get((group, name))
            if r is None or p.default in (None, inspect.Parameter.empty):
                continue
            if r["kind"] == "flag":
                # A switch left off: the table's default is off (or the option's opposite).
                assert p.default is False, (fn.__qualname__, name, p.default)
            else:
                assert p.default == r["default"], (fn.__qualname__, name, p.default, r["default"])


def test_the_table_has_its_groups():
    assert {"threshold", "method", "hamming", "verify", "bands", "rows", "recall",
            "lsh_weights", "keep", "max_bucket", "star_width"} == set(SEARCH)
    assert set(SEARCH) - set(COLLECTION) == {"keep", "max_bucket", "star_width"}
    assert "min_units" in PASSAGES and "ngram" in PIPELINE


@pytest.mark.parametrize("surface,names", [
    (neardup.dedup, SEARCH),
    (neardup.spark.dedup, SEARCH),
    (neardup.spark.dedup_jsonl, SEARCH),
    (neardup.Index, COLLECTION),
    (neardup.overlap, PASSAGES),
])
def test_each_surface_takes_every_option_by_its_name(surface, names):
    missing = set(names) - params(surface)
    assert not missing, f"{surface.__qualname__} lacks {sorted(missing)}"


def test_the_stub_says_what_the_extension_takes():
    assert set(COLLECTION) <= stub_params("Index", "__init__")
    assert "keep" not in params(neardup.Index)


def test_the_spark_command_takes_every_search_option():
    commands = spark_main.parser()._subparsers._group_actions[0].choices
    actions = commands["dedup"]._actions
    flags = {a.dest for a in actions}
    assert set(SEARCH) <= flags
    # Each with the table's spelling and its doc and default in the help: the passage options
    # in `overlap`, the others in `dedup`.
    for r in TABLE:
        if r["spark"]:
            command = "overlap" if r["group"] == "passages" else "dedup"
            action = next(a for a in commands[command]._actions if a.dest == r["name"])
            assert r["spark"] in action.option_strings and r["doc"] in action.help, r["name"]
            if r["default"] is not None:
                assert f"[default: {r['default']}]" in action.help, (r["name"], action.help)
    args = spark_main.parser().parse_args(
        ["dedup", "in.jsonl", "out", "--hamming", "4", "--lsh-weights", "0.3,0.7", "--keep", "longest"])
    assert spark_main.search_options(args) == {"hamming": 4, "lsh_weights": [0.3, 0.7], "keep": "longest"}


def test_every_pipeline_option_is_a_pipeline_keyword():
    # Pipeline(**options): an unknown name is refused with the list, which is the table's.
    with pytest.raises(ValueError) as e:
        neardup.Pipeline(ngramm=3)
    for name in PIPELINE:
        assert name in str(e.value), name


def test_defaults_and_rules_are_the_librarys():
    docs = ["the quick brown fox jumps over the lazy dog near the river bank today"] * 2
    # No threshold given: the library's default (0.8), the same as given explicitly.
    assert neardup.dedup(docs).clusters == neardup.dedup(docs, threshold=0.8).clusters
    with pytest.raises(ValueError, match="hamming: applies to simhash candidates"):
        neardup.dedup(docs, method="minhash", hamming=3)
    with pytest.raises(ValueError, match=re.escape("keep: expected first | longest | shortest")):
        neardup.dedup(docs, keep="newest")
    with pytest.raises(ValueError, match="lsh_weights: and recall are two ways"):
        neardup.Index(lsh_weights=(0.5, 0.5), recall=0.9)
    assert neardup.Index(bands=8, rows=16).banding == (8, 16)
    job = _neardup.job_spec(None, {"hamming": 4})
    assert '"hamming":4' in job and _neardup.Sketcher(job).method == "simhash"
    with pytest.raises(ValueError, match="unknown option \"thresold\""):
        _neardup.job_spec(None, {"thresold": 0.5})


@pytest.mark.parametrize("call,function,meant", [
    (lambda: neardup.dedup(["a"], treshold=0.5), "dedup", "threshold"),
    (lambda: neardup.overlap(["a"], min_unit=3), "overlap", "min_units"),
    (lambda: neardup.Index(treshold=0.5), "Index", "threshold"),
])
def test_an_unknown_keyword_names_the_meant_one_and_every_one_taken(call, function, meant):
    with pytest.raises(TypeError) as e:  # still the TypeError Python raises
        call()
    assert isinstance(e.value, neardup.UnknownOptionError) and isinstance(e.value, neardup.OptionError)
    message = str(e.value)
    assert f"{function}() takes no option" in message and f"did you mean {meant!r}" in message
    target = {"dedup": neardup.dedup, "overlap": neardup.overlap, "Index": neardup.Index}[function]
    for name in inspect.signature(target).parameters:
        if name not in ("unknown", "texts", "docs", "queries"):
            assert name in message, (name, message)


def test_a_preset_name_is_a_pipeline():
    """``pipeline="zh-news"`` is the preset; anything else that is no Pipeline says what it takes."""
    texts = ["今天天气很好，我们去公园散步吧", "今天天气很好，我们去公园散步吧！"]
    by_name = neardup.dedup(texts, pipeline="zh-news")
    by_object = neardup.dedup(texts, pipeline=neardup.Pipeline("zh-news"))
    assert by_name.summary() == by_object.summary()
    assert neardup.Index(pipeline="zh-news").pipeline.id == neardup.Pipeline("zh-news").id
    with pytest.raises(neardup.OptionError, match="zh-nws"):
        neardup.Index(pipeline="zh-nws")
    with pytest.raises(neardup.InputTypeError, match="expected a neardup.Pipeline or a preset"):
        neardup.dedup(texts, pipeline=3)


def test_one_version_everywhere(binary):
    from importlib.metadata import version
    from pyhelpers import run_cli

    cli = run_cli(binary, "--version").stdout.decode().split()[-1]
    assert neardup.__version__ == version("neardup") == cli


def test_traditional_and_simplified_are_one_text_in_the_chinese_presets():
    hk = "香港特別行政區政府今日公佈，今年夏季防汛工作的總體安排已經確定，並在暴雨期間開放臨時庇護中心。"
    cn = "香港特别行政区政府今日公布，今年夏季防汛工作的总体安排已经确定，并在暴雨期间开放临时庇护中心。"
    zh = neardup.Pipeline("zh-news")
    assert zh.fingerprint(hk).simhash == zh.fingerprint(cn).simhash
    kept = neardup.Pipeline("zh-news", zh_script="keep")
    assert kept.fingerprint(hk).simhash != kept.fingerprint(cn).simhash
    assert neardup.dedup([cn, hk], pipeline="zh-news").keep_mask.tolist() == [True, False]
    assert neardup.dedup([cn, hk]).keep_mask.tolist() == [True, True]
    with pytest.raises(neardup.OptionError, match="expected one of keep, simplified, traditional, mainland"):
        neardup.Pipeline(zh_script="hant")


def test_taiwan_vocabulary_is_the_mainlands_under_zh_script_mainland():
    tw = "使用者可以在網路上下載這個軟體，再用滑鼠開啟檔案。"
    cn = "用户可以在网络上下载这个软件，再用鼠标打开文件。"
    chars_only = neardup.Pipeline("zh-news")
    assert chars_only.fingerprint(tw).simhash != chars_only.fingerprint(cn).simhash
    mainland = neardup.Pipeline("zh-news", zh_script="mainland")
    assert mainland.fingerprint(tw).simhash == mainland.fingerprint(cn).simhash
    assert neardup.dedup([cn, tw], pipeline=mainland).keep_mask.tolist() == [True, False]
