#!/usr/bin/env python3
"""How fast the dedup report of the 1,000,000-document benchmark opens in a browser.

Runs `neardup dedup CORPUS --report report.html` (the corpus of bench/dedup_1m.py, built by it),
then opens the page as written in headless Chromium (Debian's chromium and chromedriver, driven
by WebDriver) several times, each in a fresh browser, and reads: the navigation timing
(responseEnd, domContentLoaded, load) and the moment the cluster list has been drawn by the
page's script (`#cluster-list > li` present, polled every 10 ms). Prints the page's size and the
median and worst of each.

Usage: target/test-venv/bin/python bench/report_open.py [--runs 5] [--report PATH (reuse a page)]
(the test suite's venv, made by `bash tests/run.sh`, has selenium; build the release binary first:
`cargo build --release -p neardup-cli`).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "web"))

from selenium.webdriver.common.by import By  # noqa: E402

from webhelpers import chromium  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--report", help="an existing report to open instead of running dedup")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "neardup"))
    args = ap.parse_args()

    if args.report:
        report = Path(args.report)
    else:
        corpus = ROOT / "bench" / "data" / "en_dedup_1000000.jsonl"
        if not corpus.exists():
            raise SystemExit(f"{corpus} is missing: run bench/run_dedup_1m.sh --peers '' first")
        report = ROOT / "bench" / "data" / "report_1m.html"
        kept = ROOT / "bench" / "data" / "kept_report.jsonl"
        t = time.perf_counter()
        r = subprocess.run([args.binary, "dedup", str(corpus), "--threshold", "0.8", "--output",
                            str(kept), "--report", str(report)], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(r.stderr)
        print(f"dedup with --report: {time.perf_counter() - t:.1f} s\n{r.stderr.strip()}")
    size = report.stat().st_size
    url = report.resolve().as_uri()

    rows = {"response end": [], "DOMContentLoaded": [], "load": [], "clusters drawn": []}
    clusters = 0
    for _ in range(args.runs):
        driver = chromium()
        try:
            t0 = time.perf_counter()
            driver.get(url)  # returns after the load event
            while not driver.find_elements(By.CSS_SELECTOR, "#cluster-list > li"):
                if time.perf_counter() - t0 > 60:
                    raise SystemExit("the cluster list was not drawn within 60 s")
                time.sleep(0.01)
            drawn = time.perf_counter() - t0
            timing = driver.execute_script(
                "const t = performance.getEntriesByType('navigation')[0];"
                "return [t.responseEnd, t.domContentLoadedEventEnd, t.loadEventEnd];")
            clusters = len(driver.find_elements(By.CSS_SELECTOR, "#cluster-list > li"))
        finally:
            driver.quit()
        rows["response end"].append(timing[0] / 1000)
        rows["DOMContentLoaded"].append(timing[1] / 1000)
        rows["load"].append(timing[2] / 1000)
        rows["clusters drawn"].append(drawn)

    print(f"\n{report.name}: {size / 1e6:.2f} MB, {clusters} clusters listed; {args.runs} opens, "
          "each in a fresh headless Chromium")
    print("| moment | median s | worst s |")
    print("|---|---:|---:|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):.2f} | {max(values):.2f} |")


if __name__ == "__main__":
    main()
