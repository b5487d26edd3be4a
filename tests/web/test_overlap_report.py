"""The report of `neardup overlap --report` in headless Chromium: the table of queries with their
copied shares as `--summary` gives them, the most copied query opened to its text with each
passage marked in its source's colour, each passage beside its source with the differences
marked, quotations apart, a query holding markup shown as text, and the table readable without
JavaScript."""

from __future__ import annotations

import json
import subprocess

import pyarrow as pa
import pytest
from selenium.webdriver.common.by import By

from webhelpers import ROOT, binary, chromium, page_errors, screenshot, wait_for

SET = ROOT / "tests" / "fixtures" / "passages" / "sample-en"
MARKUP = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The English sample set checked with a report, plus a query that holds markup and copies
    a passage of a collection document."""
    d = tmp_path_factory.mktemp("overlap-report")
    queries = d / "queries.jsonl"
    with pa.input_stream(str(SET / "queries.jsonl.zst"), compression="zstd") as f:
        lines = f.read().decode("utf-8").splitlines()[:60]
    with pa.input_stream(str(SET / "collection.jsonl.zst"), compression="zstd") as f:
        doc = json.loads(f.read().decode("utf-8").splitlines()[0])
    words = doc["text"].split()
    copied = " ".join(words[: min(len(words), 40)])
    lines.append(json.dumps({"id": "markup", "text": f"{MARKUP} Our own words here. {copied} The end."}))
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = subprocess.run(
        [str(binary()), "overlap", str(queries), "--against", str(SET / "collection.jsonl.zst"),
         "--report", str(d / "report.html"), "--summary", str(d / "summary.jsonl"),
         "--passages", str(d / "passages.jsonl"), "-q"],
        capture_output=True,
    )
    assert r.returncode == 0, r.stderr.decode()
    return d


def read(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_report_lists_every_query_and_opens_the_most_copied(run, browser):
    summary = {json.dumps(s["query"]): s for s in read(run / "summary.jsonl")}
    page_errors(browser)
    browser.get((run / "report.html").as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#query-table tbody tr")
    assert len(rows) == len(summary)
    # The table: most copied first, each share as --summary gives it.
    shares = [float(r.find_element(By.CSS_SELECTOR, "td.copied").text.rstrip("%")) for r in rows]
    assert shares == sorted(shares, reverse=True)
    top = max(summary.values(), key=lambda s: s["copied"])
    assert abs(shares[0] - top["copied"] * 100) < 0.06

    first = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#q0 .overlap"), what="first query")[0]
    passages = [p for p in read(run / "passages.jsonl") if p["query"] == browser.find_element(
        By.ID, "q0").get_attribute("data-id")]
    marks = first.find_elements(By.CSS_SELECTOR, ".ov-text mark:not(.excluded)")
    assert len(marks) == len(passages) > 0
    assert all(m.get_attribute("class").startswith("src src-") and m.get_attribute("data-label") for m in marks)
    panes = first.find_elements(By.CSS_SELECTOR, "details.ov-passage[open] .sbs-panes")
    assert panes, "each passage beside its source"
    assert page_errors(browser) == []
    screenshot(browser, "overlap-report")


def test_a_query_holding_markup_stays_text(run, browser):
    browser.get((run / "report.html").as_uri() + "#")
    rank = next(
        i for i, r in enumerate(browser.find_elements(By.CSS_SELECTOR, "#query-table tbody tr"))
        if r.find_element(By.CSS_SELECTOR, "td.id").text == "markup"
    )
    browser.get((run / "report.html").as_uri() + f"#q{rank}")
    view = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, f"#q{rank} .ov-text"), what="markup query")[0]
    assert "<script>window.__pwned = 1</script>" in view.text
    assert view.find_elements(By.CSS_SELECTOR, "mark")
    assert browser.execute_script("return window.__pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "#query-list img")


def test_the_table_reads_without_javascript(run):
    driver = chromium(javascript=False)
    try:
        driver.get((run / "report.html").as_uri())
        assert len(driver.find_elements(By.CSS_SELECTOR, "#query-table tbody tr")) == 61
        assert "Copied passages" in driver.find_element(By.TAG_NAME, "h1").text
    finally:
        driver.quit()
