"""neardup.spark on a Spark standalone cluster, as a cluster is really used (issue 21): a master
and two workers from pyspark's own distribution, each its own JVM with its own Python workers, on
loopback; the package reaches the executors only as a packed virtualenv (venv-pack) passed with
--archives, so they use nothing installed by hand. The clusters equal the CLI's. Every process
the test starts is stopped by its process group, even when the test fails."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from pyhelpers import ROOT, run_cli, unpacked
from sparkcluster import SPARK_HOME, VENV_BIN, Cluster, cluster_env, packed_environment
from test_dedup import corpus


def the_wheel(tmp: Path) -> Path:
    """The wheel under test: the release wheel tests/run.sh built (CI), else a dev-profile wheel
    of this tree (it reuses cargo's build)."""
    given = os.environ.get("NEARDUP_WHEEL")
    if given:
        return Path(given)
    subprocess.run([str(VENV_BIN / "maturin"), "build", "-q", "--profile", "dev", "-m",
                    str(ROOT / "crates" / "neardup-py" / "Cargo.toml"), "-o", str(tmp / "wheels")],
                   check=True, capture_output=True)
    return sorted((tmp / "wheels").glob("neardup-*.whl"))[-1]


def clusters_of(lines: list[str]) -> list[list]:
    groups: dict = {}
    for line in lines:
        row = json.loads(line)
        if row.get("cluster") is not None:
            groups.setdefault(row["cluster"], []).append(row["id"])
    return sorted(sorted(g) for g in groups.values())


def test_dedup_and_overlap_on_a_standalone_cluster_with_a_packed_environment(binary, tmp_path):
    docs = corpus(seed=21, n=600)
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i:04d}", "text": t}) + "\n" for i, t in enumerate(docs)))
    cli = run_cli(binary, "dedup", str(path), "--threshold", "0.8", "--clusters", str(tmp_path / "cl.jsonl"),
                  "-o", str(tmp_path / "kept.jsonl"), "-q")
    assert cli.returncode == 0, cli.stderr
    want = sorted(sorted(json.loads(l)["cluster"]) for l in open(tmp_path / "cl.jsonl"))
    assert len(want) > 10

    packed = packed_environment(tmp_path, the_wheel(tmp_path))
    cluster = Cluster(tmp_path)
    try:
        master = cluster.up(workers=2)
        script = subprocess.run([sys.executable, "-m", "neardup.spark", "--script"], capture_output=True,
                                text=True, check=True).stdout.strip()
        # The commands README.md gives for a cluster: the driver's Python has the package, the
        # executors' is the archive's.
        env = dict(cluster_env(), PYSPARK_DRIVER_PYTHON=sys.executable,
                   PYSPARK_PYTHON="./environment/bin/python")
        out, assignments = tmp_path / "kept", tmp_path / "assignments"
        submit = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master,
             "--archives", f"{packed}#environment", "--conf", "spark.executor.memory=1g",
             script, "dedup", str(path), str(out), "--threshold", "0.8", "--assignments", str(assignments)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        )
        cluster.procs.append(submit)  # its driver and Python go with it, whatever happens
        stdout, stderr = submit.communicate(timeout=900)
        said = stdout + stderr
        assert submit.returncode == 0, said[-4000:] + cluster.logs()
        assert "neardup dedup (spark):" in said, said[-2000:]
        lines = [l for p in sorted(assignments.glob("part-*")) for l in p.read_text().splitlines()]
        assert clusters_of(lines) == want
        kept = [json.loads(l)["id"] for p in sorted(out.glob("part-*")) for l in p.read_text().splitlines()]
        assert kept == [json.loads(l)["id"] for l in open(tmp_path / "kept.jsonl")]
        # The passage job on the same cluster: the CLI's passage records, byte for byte.
        queries = unpacked("sample-zh", "queries", tmp_path, 80)
        collection = unpacked("sample-zh", "collection", tmp_path)
        passages = tmp_path / "passages.jsonl"
        cli = run_cli(binary, "overlap", str(queries), "--against", str(collection), "--passages",
                      str(passages), "-q")
        assert cli.returncode == 0, cli.stderr
        answers = tmp_path / "answers"
        submit = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master,
             "--archives", f"{packed}#environment", "--conf", "spark.executor.memory=1g",
             script, "overlap", str(queries), str(answers), "--against", str(collection)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        )
        cluster.procs.append(submit)
        stdout, stderr = submit.communicate(timeout=900)
        said = stdout + stderr
        assert submit.returncode == 0, said[-4000:] + cluster.logs()
        assert "neardup overlap (spark):" in said, said[-2000:]
        # Nobody set spark.sql.shuffle.partitions: the job chose it from the inputs' size.
        assert re.search(r"\d+ shuffle partitions \(from the input size", said), said[-2000:]
        got = [l for p in sorted((answers / "passages").glob("part-*")) for l in p.read_text().splitlines()]
        want_passages = passages.read_text().splitlines()
        assert len(want_passages) > 50 and got == want_passages
        # Both workers ran executors, each with the archive unpacked beside it.
        for i in range(2):
            assert list((tmp_path / f"work-{i}").glob("app-*/*/environment/bin/python")), cluster.logs()
    finally:
        cluster.stop()
    assert all(p.poll() is not None for p in cluster.procs)
