"""A Spark standalone cluster on loopback, started from pyspark's own distribution, and the
packed virtualenv its executors get the package from: what tests/test_spark_cluster.py and
bench/spark_cluster.py run neardup.spark on. Every process is started in a process group of its
own, so that `Cluster.stop` ends it with everything it started (executors, Python workers)."""

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

# Pinned in tests/requirements.txt: a missing pyspark fails the suite, never skips it.
import pyspark

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


def packed_environment(tmp: Path, wheel: Path) -> Path:
    """A new venv holding `wheel` and what the Spark job imports, packed by venv-pack."""
    env_dir = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", str(wheel), "pyarrow>=12",
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

    def up(self, workers: int, memory: str = "1g") -> str:
        self.start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                              "--port", str(self.port), "--webui-port", str(self.ui)])
        url = f"spark://127.0.0.1:{self.port}"
        for i in range(workers):
            work = self.tmp / f"work-{i}"
            work.mkdir()
            self.start(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                       "--cores", "1", "--memory", memory, "--work-dir", str(work),
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
