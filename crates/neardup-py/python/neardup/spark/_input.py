"""The input of ``python -m neardup.spark dedup``: its format, decided as ``neardup dedup``
decides it, and Spark's own logging kept out of a user's way.

The format: each file's name (``.jsonl``, ``.ndjson``, ``.json``, compressed too; ``.parquet``),
else its first bytes (``PAR1``: Parquet); a folder by its files, passing over what Spark and
Hadoop write beside their data (``_SUCCESS``, ``_temporary``, hidden ``.crc`` checksums), as
``neardup dedup`` reads a folder. The paths are listed through Hadoop's FileSystem, so globs
and every filesystem Spark reads (``s3a://``, ``hdfs://``) are decided alike.

Spark's logging: a run prints the summary, its warnings and, on failure, one line naming the
problem and the way out, not Spark's INFO lines and Java stack traces (``--verbose`` shows
them). The driver's log4j2 is configured before its JVM starts when this command starts it
(``log4j2.properties`` beside this file), and set again through the running JVM when
spark-submit started it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from ..errors import InputError

# Names read by their first bytes, at most (the rest of a folder is taken to be like them).
_SNIFFED_FILES = 100
# Files of one path looked at, at most: a crawl of a million parts is decided by its first.
_LISTED_FILES = 10_000

# Loggers that say, at WARN or ERROR, what the command says itself in one line (a task's
# failure, with the Java and Python traces), or that warn of nothing a user can act on. (Not
# org.apache.spark.api.python: Spark takes the default level of a PySpark driver from its
# PythonGatewayServer's logger, and would print "Setting default log level to OFF".)
_QUIET_LOGGERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.scheduler.TaskSchedulerImpl",
    "org.apache.spark.sql.execution.datasources.FileFormatWriter",
    "org.apache.spark.sql.execution.python",
    "org.apache.spark.util.Utils",
    "org.apache.hadoop.util.NativeCodeLoader",
    "org.apache.spark.storage.BlockManager",
    "org.apache.spark.sql.catalyst.util.SparkStringUtils",
)

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


def by_name(name: str) -> Optional[str]:
    """The format a file's name says (``neardup_corpus::Format::by_name``): ``jsonl``,
    ``parquet``, ``arrow``, or None."""
    name = name.lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".arrow", ".feather", ".arrows", ".ipc")):
        return "arrow"
    for ext in (".gz", ".zst", ".zstd"):
        while name.endswith(ext):
            name = name[: -len(ext)]
    return "jsonl" if name.endswith((".jsonl", ".ndjson", ".json")) else None


def by_content(head: bytes) -> Optional[str]:
    """The format a file's first bytes say (``neardup_corpus::Format::by_content``)."""
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1") or head.startswith(b"\xff\xff\xff\xff"):
        return "arrow"
    return None


def _is_side_file(name: str) -> bool:
    """What Spark and Hadoop write beside their data, and hidden files (the CLI passes over the
    same)."""
    return name.startswith(("_", ".")) or name.endswith(".crc")


def _files(spark: Any, path: str) -> list[tuple[str, Any, Any]]:
    """``(shown path, Hadoop path, filesystem)`` of the data files a path names: a file as
    given, a folder's files at any depth less side files, a glob's matches; at most
    ``_LISTED_FILES``. A path that names nothing is an InputError."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(conf)
    statuses = fs.globStatus(hpath)
    if not statuses:
        raise InputError(f"{path}: no such file or directory")
    out: list[tuple[str, Any, Any]] = []
    for status in statuses:
        if not status.isDirectory():
            out.append((status.getPath().toString(), status.getPath(), fs))
            continue
        root = status.getPath().toString().rstrip("/") + "/"
        found = fs.listFiles(status.getPath(), True)
        while found.hasNext() and len(out) < _LISTED_FILES:
            f = found.next().getPath()
            shown = f.toString()
            inside = shown[len(root):] if shown.startswith(root) else f.getName()
            if any(_is_side_file(part) for part in inside.split("/")):
                continue
            out.append((shown, f, fs))
    return out


def _head(fs: Any, hpath: Any) -> bytes:
    stream = fs.open(hpath)
    try:
        return bytes(stream.readNBytes(8))
    finally:
        stream.close()


def input_format(spark: Any, paths: list[str]) -> str:
    """``"jsonl"`` or ``"parquet"``: the format of the files ``paths`` name, each by its name,
    else by its first bytes (a file that says neither is read as JSON Lines, as ``neardup
    dedup`` reads a named file). Files of both formats, Arrow IPC files, or no data file at
    all are an InputError naming the files and the way out."""
    formats: dict[str, str] = {}  # format -> a file of it
    sniffed = 0
    for path in paths:
        for shown, hpath, fs in _files(spark, path):
            fmt = by_name(hpath.getName())
            if fmt is None and sniffed < _SNIFFED_FILES:
                sniffed += 1
                fmt = by_content(_head(fs, hpath))
            formats.setdefault(fmt or "jsonl", shown)
            if len(formats) > 1:
                break
    if not formats:
        raise InputError(
            f"{', '.join(paths)}: no data file (a folder's files starting with _ or . are "
            "Spark's and Hadoop's side files, passed over)"
        )
    if "arrow" in formats:
        raise InputError(
            f"{formats['arrow']} is Arrow IPC, which the Spark command does not read: convert "
            "it to Parquet, or run neardup dedup"
        )
    if len(formats) > 1:
        raise InputError(
            f"the input mixes Parquet ({formats['parquet']}) and JSON Lines "
            f"({formats['jsonl']}): give the files of one format, or force one with --format"
        )
    return next(iter(formats))


def quiet_start(builder: Any) -> Any:
    """``builder`` set to start Spark quietly: Spark's warnings only, and no progress bar when
    stderr is not a terminal (drawn over itself, it is noise in a log).

    When this process starts Spark's JVM, its log4j2 configuration is the package's (the
    loggers of task failures off too), unless the user configured log4j2 (``SPARK_CONF_DIR``,
    ``$SPARK_HOME/conf``, ``-Dlog4j2.configurationFile``). When spark-submit started it, its
    log4j2 is configured already, and Spark 4 sets it up again as the context starts: the
    level is then ``spark.log.level`` (Spark 3.5+), unless the user set it."""
    import sys

    if not sys.stderr.isatty():
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        _quiet_jvm_start()
        return builder
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    if not SparkConf().contains("spark.log.level"):
        builder = builder.config("spark.log.level", "WARN")
    return builder


def _quiet_jvm_start() -> None:
    """The package's log4j2 configuration for the JVM this process starts, unless the user
    configured log4j2."""
    opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if "log4j2.configurationFile" in opts or "log4j.configurationFile" in opts:
        return
    for conf_dir in (os.environ.get("SPARK_CONF_DIR"), _spark_home_conf()):
        if conf_dir and (Path(conf_dir) / "log4j2.properties").exists():
            return
    config = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.resolve().as_uri()}"
    os.environ["SPARK_SUBMIT_OPTS"] = f"{opts} {config}".strip()


def _spark_home_conf() -> Optional[str]:
    home = os.environ.get("SPARK_HOME")
    if home is None:
        try:
            import pyspark

            home = os.path.dirname(pyspark.__file__)
        except ImportError:
            return None
    return os.path.join(home, "conf")


def quiet_running_jvm(spark_context_class: Any) -> None:
    """Sets the driver's log levels through its running JVM, whose configuration this command
    may not have chosen (spark-submit's, or the user's): WARN, and the loggers of task
    failures off."""
    spark_context_class._ensure_initialized()
    jvm = spark_context_class._jvm
    log4j = jvm.org.apache.logging.log4j
    configurator = log4j.core.config.Configurator
    configurator.setRootLevel(log4j.Level.WARN)
    for name in _QUIET_LOGGERS:
        configurator.setLevel(name, log4j.Level.OFF)
    import logging

    logging.getLogger("py4j").setLevel(logging.ERROR)
