"""The conformance table (tests/conformance/table.json; the library is the oracle, in
crates/neardup/tests/conformance.rs) through Python: the dedup rows through ``neardup.dedup``,
the check rows through ``Index.check``. The CLI, the service and Spark run the same rows."""

import json

import pytest

import neardup
from pyhelpers import ROOT

TABLE = json.loads((ROOT / "tests" / "conformance" / "table.json").read_text(encoding="utf-8"))
DOCS = TABLE["corpus"]


def id_text(i) -> str:
    """The library's id rule: a string's value, a number as written."""
    return i if isinstance(i, str) else json.dumps(i)


@pytest.mark.parametrize("row", TABLE["dedup"], ids=lambda r: r["name"])
def test_dedup_rows(row):
    ids = [d["id"] for d in DOCS]
    result = neardup.dedup([d["text"] for d in DOCS], ids=ids,
                           pipeline=neardup.Pipeline(row["preset"]), **row["search"])
    clusters = sorted(sorted(id_text(m) for m in c.members) for c in result.clusters)
    kept = sorted(id_text(i) for i in result.kept_ids())
    assert {"clusters": clusters, "kept": kept} == row["expect"]


@pytest.mark.parametrize("row", TABLE["checks"], ids=lambda r: r["name"])
def test_check_rows(row):
    idx = neardup.Index(neardup.Pipeline(row["preset"]), **row["search"])
    for i, at in enumerate(row["sequence"]):
        d = DOCS[at]
        a = idx.check(d["id"], d["text"])
        got = {"duplicate": a["duplicate"], "matches": [m[0] for m in a["matches"]],
               "inserted": a["inserted"]}
        assert got == row["expect"][i], (row["name"], i)
    assert idx.ids() == row["ids"]
