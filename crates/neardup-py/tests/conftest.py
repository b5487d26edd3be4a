"""Shared fixtures: the repository and the neardup binary (helpers are in pyhelpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyhelpers import ROOT, neardup_binary


@pytest.fixture(scope="session")
def binary() -> Path:
    return neardup_binary()


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="module")
def spark():
    """A Spark session in local mode (local[2]) for one test module, stopped after it."""
    from pyspark.sql import SparkSession

    s = (
        SparkSession.builder.master("local[2]")
        .appName("neardup tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()
