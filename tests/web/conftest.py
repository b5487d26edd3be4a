"""Fixtures for the service and page tests: a running `neardup serve` and a headless Chromium
driven by WebDriver (Debian's chromium and chromium-driver). Helpers are in webhelpers.py."""

from __future__ import annotations

import pytest

from webhelpers import Server, chromium


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (WebDriver), 1280 x 900."""
    driver = chromium()
    yield driver
    driver.quit()
