"""Helpers of the service and page tests: the built binary, a running `neardup serve`, waiting
for a condition. (A module of its own, not conftest: the Python package's tests have their own
conftest, and pytest would import both under the one name.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The tests save their screenshots to target/screenshots/ (build output, not tracked), or to the
# directory NEARDUP_SCREENSHOTS names: the README's come from
# `NEARDUP_SCREENSHOTS=docs/screenshots bash tests/run.sh`.
SHOTS = ROOT / (os.environ.get("NEARDUP_SCREENSHOTS") or "target/screenshots")


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


def chromium(width: int = 1280, height: int = 900, javascript: bool = True, lang: str = "en-US"):
    """A headless Chromium (Debian's chromium and chromedriver) driven by WebDriver; without
    JavaScript when asked, to see what a reader without it sees; asking for pages in `lang`
    (its Accept-Language and navigator.languages)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium_path = shutil.which("chromium") or "/usr/bin/chromium"
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium_path
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
        "--hide-scrollbars",
        f"--window-size={width},{height}",
        f"--lang={lang}",
    ):
        opts.add_argument(flag)
    opts.add_experimental_option("prefs", {"intl.accept_languages": lang})
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium leaves directories of its own in TMPDIR (org.chromium.Chromium.*): it gets one of
    # the test's, removed when the driver quits.
    tmp = tempfile.mkdtemp(prefix="neardup-chromium-")
    try:
        service = Service(driver_path, env={**os.environ, "TMPDIR": tmp})
        driver = webdriver.Chrome(service=service, options=opts)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    quit_driver = driver.quit

    def quit_and_clean() -> None:
        try:
            quit_driver()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    driver.quit = quit_and_clean
    driver.set_page_load_timeout(60)
    if not javascript:
        driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    return driver


def page_errors(driver) -> list[str]:
    """Errors the page logged (script errors, refused loads, CSP violations)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def screenshot(driver, name: str, full_height: bool = True) -> Path:
    """Saves a screenshot to SHOTS/NAME.png, as tall as the page when asked."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    size = driver.get_window_size()
    if full_height:
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(size["width"], min(max(height, 300), 4000))
        driver.execute_script("window.scrollTo(0, 0)")
        time.sleep(0.2)
    driver.save_screenshot(str(path))
    driver.set_window_size(size["width"], size["height"])
    return path


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
