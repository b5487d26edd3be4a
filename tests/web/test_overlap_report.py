"""The report of `neardup overlap --report` in headless Chromium: the table of queries with their
copied shares as `--summary` gives them, the most copied query opened to its text with each
passage marked in its source's colour and label, each passage beside its source with the
differences marked, a query holding markup shown as text, and the table readable without
JavaScript. Sources past eight keep a label and a colour each."""

from __future__ import annotations

import json
import random
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
        assert "Passage check report" in driver.find_element(By.TAG_NAME, "h1").text
        # The figures of the opened query are there too.
        assert driver.find_element(By.CSS_SELECTOR, "#q0 .fig-copied dd").text.endswith("%")
    finally:
        driver.quit()


def overlap(*args, cwd=None):
    r = subprocess.run([str(binary()), "overlap", *map(str, args), "-q"], capture_output=True, cwd=cwd)
    assert r.returncode == 0, r.stderr.decode()
    return r


def pct(part, whole):
    return f"{part / whole * 100:.1f}%"


def cells(row):
    return [c.text for c in row.find_elements(By.TAG_NAME, "td")]


def test_sources_past_eight_keep_a_label_and_a_colour_each(tmp_path, browser):
    """Twelve sources: twelve labels and twelve colours (the page cycled eight colours)."""
    rng = random.Random(7)
    pool = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质"
    docs = ["".join(rng.choice(pool) for _ in range(60)) for _ in range(12)]
    (tmp_path / "lib.jsonl").write_text(
        "".join(json.dumps({"id": f"p{i:02}", "text": d}, ensure_ascii=False) + "\n" for i, d in enumerate(docs)),
        encoding="utf-8")
    # Each source's copy a little shorter than the one before: S1 is p00, S12 is p11.
    (tmp_path / "q.txt").write_text(
        "\n".join(f"第{i + 1}段。{d[:60 - 2 * i]}" for i, d in enumerate(docs)), encoding="utf-8")
    overlap(tmp_path / "q.txt", "--against", tmp_path / "lib.jsonl", "--report", tmp_path / "r.html")
    browser.get((tmp_path / "r.html").as_uri())
    q = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#q0 .ov-text"), what="text")[0]
    marks = q.find_elements(By.CSS_SELECTOR, "mark.src")
    assert [m.get_attribute("data-label") for m in marks] == [f"S{i + 1}" for i in range(12)]
    assert len({m.value_of_css_property("background-color") for m in marks}) == 12
    ids = [r.get_attribute("data-id") for r in browser.find_elements(By.CSS_SELECTOR, "#q0 .ov-source-table tbody tr")]
    assert ids == [f"p{i:02}" for i in range(12)]
    assert page_errors(browser) == []
