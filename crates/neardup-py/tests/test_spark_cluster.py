"""neardup.spark on a Spark standalone cluster, as a cluster is really used (issue 21): a master
and two workers from pyspark's own distribution, each its own JVM with its own Python workers, on
loopback; the package reaches the executors only as a packed virtualenv (venv-pack) passed with
--archives, so they use nothing installed by hand. The clusters equal the CLI's. Every process
the test starts is stopped by its process group, even when the test fails."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

# Pinned in tests/requirements.txt: a missing pyspark fails the suite, never skips it.
import pyspark

from pyhelpers import ROOT, run_cli
from test_dedup import corpus

SPARK_HOME = Path(pyspark.__file__).parent
VENV_BIN = Path(sys.executable).parent


_GIVEN: set[int] = set()


def free_port() -> int:
    """A port nothing listens on now, never the same one twice in this run."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


def cluster_env() -> dict:
    """What the cluster's processes see: Spark's home, loopback, and neither this test's venv
    nor any Python path (the executors must get the package from the archive alone)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK", "PYTHON", "VIRTUAL_ENV", "SPARK_"))}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if Path(p) != VENV_BIN)
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


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


def packed_environment(tmp: Path) -> Path:
    """A new venv holding the wheel and what the Spark job imports, packed by venv-pack."""
    env_dir = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", str(the_wheel(tmp)), "pyarrow>=12",
                    "pandas>=1.5,<3"], check=True)
    packed = tmp / "neardup-env.tar.gz"
    subprocess.run([str(VENV_BIN / "venv-pack"), "-q", "-p", str(env_dir), "-o", str(packed)], check=True)
    return packed


class Cluster:
    """A standalone master and workers, each started in a process group of its own."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        self.port = free_port()
        self.ui = free_port()

    def start(self, name: str, args: list[str]) -> None:
        with open(self.tmp / f"{name}.log", "w") as log:
            self.procs.append(subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args], env=cluster_env(), stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            ))

    def up(self, workers: int) -> str:
        self.start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                              "--port", str(self.port), "--webui-port", str(self.ui)])
        url = f"spark://127.0.0.1:{self.port}"
        for i in range(workers):
            work = self.tmp / f"work-{i}"
            work.mkdir()
            self.start(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                       "--cores", "1", "--memory", "1g", "--work-dir", str(work),
                                       "--webui-port", str(free_port()), url])
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=2) as r:
                    state = json.load(r)
                if sum(w["state"] == "ALIVE" for w in state["workers"]) == workers:
                    return url
            except OSError:
                pass
            for p in self.procs:
                assert p.poll() is None, self.logs()
            time.sleep(0.5)
        raise AssertionError(f"the workers did not register\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.tmp.glob("*.log")))

    def stop(self) -> None:
        # Each group holds a daemon (or spark-submit), its executors and their Python workers:
        # asked to stop, then whatever is left of the group is killed.
        for p in self.procs:
            signal_group(p, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            signal_group(p, signal.SIGKILL)
            p.wait()


def signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


def clusters_of(lines: list[str]) -> list[list]:
    groups: dict = {}
    for line in lines:
        row = json.loads(line)
        if row.get("cluster") is not None:
            groups.setdefault(row["cluster"], []).append(row["id"])
    return sorted(sorted(g) for g in groups.values())


def test_dedup_on_a_standalone_cluster_with_a_packed_environment(binary, tmp_path):
    docs = corpus(seed=21, n=600)
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i:04d}", "text": t}) + "\n" for i, t in enumerate(docs)))
    cli = run_cli(binary, "dedup", str(path), "--threshold", "0.8", "--clusters", str(tmp_path / "cl.jsonl"),
                  "-o", str(tmp_path / "kept.jsonl"), "-q")
    assert cli.returncode == 0, cli.stderr
    want = sorted(sorted(json.loads(l)["cluster"]) for l in open(tmp_path / "cl.jsonl"))
    assert len(want) > 10

    packed = packed_environment(tmp_path)
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
        # Both workers ran executors, each with the archive unpacked beside it.
        for i in range(2):
            assert list((tmp_path / f"work-{i}").glob("app-*/*/environment/bin/python")), cluster.logs()
    finally:
        cluster.stop()
    assert all(p.poll() is not None for p in cluster.procs)
