"""Fixtures for the service and page tests: the built binary, a running `neardup serve`, and a
headless Chromium driven by WebDriver (Debian's chromium and chromium-driver)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "screenshots"


def binary() -> Path:
    env = os.environ.get("NEARDUP_BIN")
    if env:
        return Path(env)
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "neardup"
        if p.exists():
            return p
    pytest.fail("the neardup binary is not built: run `cargo build` (or set NEARDUP_BIN)")


class Server:
    """`neardup serve` on a free loopback port, stopped at the end."""

    def __init__(self, data: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [str(binary()), "serve", "--data-dir", str(data), "--listen", "127.0.0.1:0", *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        found = threading.Event()
        self.base = ""

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                m = re.search(r"listening on (http://\S+)", line)
                if m:
                    self.base = m.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60):
            self.stop()
            raise RuntimeError("the server did not start: " + "".join(self.lines))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (WebDriver), started as the machine's probe starts it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - the page may still be loading
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}: {last}")
