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
