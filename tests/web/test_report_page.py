"""The dedup report and the comparison page in headless Chromium: the summary, the charts, the
clusters and their shared passages are in the rendered page; a document holding markup stays
text; the summary reads without JavaScript; a narrow screen needs no sideways scrolling; and
`neardup report` builds the same page from the run's outputs."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest
from selenium.webdriver.common.by import By

from webhelpers import ROOT, binary, chromium, page_errors, screenshot, wait_for

MARKUP = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"><b>bold</b>'


def english(seed: int, n: int = 90) -> list[str]:
    words = (
        "council budget river harbour library school bridge market train station museum park "
        "festival election report season weather storm harvest factory hospital court police "
        "theatre orchestra university student teacher farmer village county coast mountain"
    ).split()
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(words[x % len(words)])
    return out


def corpus() -> list[tuple[str, str]]:
    """Clusters of English near-copies (one holding markup), a Chinese cluster, and singletons."""
    docs: list[tuple[str, str]] = []
    base = english(7)
    for i in range(6):  # a cluster of six: one word changed in each
        w = list(base)
        if i:
            w[i * 9] = "changed"
        docs.append((f"en-big-{i}", " ".join(w)))
    marked = english(99)
    docs.append(("markup-a", MARKUP + " " + " ".join(marked)))
    docs.append(("markup-b", MARKUP + " " + " ".join(marked[:-2] + ["one", "two"])))
    zh = [(ROOT / "examples" / "data" / "zh" / f"news_{s}.txt").read_text(encoding="utf-8") for s in "ab"]
    docs += [("zh-a", zh[0]), ("zh-b", zh[1]), ("zh-c", zh[0].replace("防汛", "防洪", 1))]
    docs.append(("copy-1", " ".join(english(5))))
    docs.append(("copy-2", " ".join(english(5))))
    for i in range(20):
        docs.append((f"alone-{i}", " ".join(english(1000 + i))))
    return docs


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    src = d / "corpus.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in corpus()),
                   encoding="utf-8")
    # Relative paths, run from the corpus's directory: the page names the input as given.
    out = subprocess.run(
        [str(binary()), "dedup", src.name, "--report", "report.html", "--clusters", "clusters.jsonl",
         "--pairs", "pairs.jsonl", "-o", "kept.jsonl"],
        capture_output=True, text=True, cwd=d,
    )
    assert out.returncode == 0, out.stderr
    return d


def data_block(html: str, block: str) -> dict:
    m = re.search(rf'<script type="application/json" id="{block}">(.*?)</script>', html, re.S)
    assert m, block
    return json.loads(m.group(1))


def open_cluster(driver, member_id: str):
    """Opens the cluster that holds member_id and returns its list item."""
    for li in driver.find_elements(By.CSS_SELECTOR, "#cluster-list > li"):
        data = driver.execute_script(
            "return JSON.parse(document.getElementById('report-data').textContent)"
            ".clusters.find(c => String(c.number) === arguments[0].dataset.cluster)", li)
        if any(m["id"] == member_id for m in data["members"]):
            li.find_element(By.TAG_NAME, "summary").click()
            wait_for(lambda: li.find_elements(By.CSS_SELECTOR, ".sbs mark"), what="marks")
            return li
    raise AssertionError(f"no cluster holds {member_id}")


def test_the_report_shows_summary_charts_clusters_and_shared_passages(run, browser):
    clusters = [json.loads(l) for l in open(run / "clusters.jsonl")]
    pairs = [json.loads(l) for l in open(run / "pairs.jsonl")]
    browser.get((run / "report.html").as_uri())
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#cluster-list > li"), what="clusters")

    summary = {dt.text: dd.text for dt, dd in zip(browser.find_elements(By.CSS_SELECTOR, "dl.summary dt"),
                                                  browser.find_elements(By.CSS_SELECTOR, "dl.summary dd"))}
    assert summary["documents"].startswith(f"{len(corpus())} ")
    assert summary["clusters"] == str(len(clusters))
    assert summary["dropped"] == str(sum(c["size"] - 1 for c in clusters))
    assert "16 bands x 6 rows" in summary["method"]

    # The histogram: one bar per used bin, their counts summing to the pairs written, and the
    # threshold line; the sizes chart counts every cluster.
    counts = [int(r.get_attribute("data-count")) for r in browser.find_elements(By.CSS_SELECTOR, "#similarity-svg rect")]
    assert sum(counts) == len(pairs) and len(counts) >= 2
    assert browser.find_elements(By.CSS_SELECTOR, "#similarity-svg line.threshold")
    # From 0 to 1, the unverified region below the threshold shaded; the table says what each
    # higher threshold would drop, this run's row first.
    assert browser.find_elements(By.CSS_SELECTOR, "#similarity-svg path.unverified")
    assert "0.00" in browser.find_element(By.ID, "similarity-svg").text
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in browser.find_elements(By.CSS_SELECTOR, "#threshold-table tbody tr")]
    assert [r[0] for r in rows] == ["0.8", "0.85", "0.9", "0.95", "1"]
    assert rows[0][3] == summary["dropped"] and rows[0][4] == "this run"
    assert rows[-1][1] == str(sum(1 for p in pairs if p["similarity"] >= 1.0))
    assert int(rows[-1][3]) <= int(rows[0][3])
    sizes = [int(r.get_attribute("data-count")) for r in browser.find_elements(By.CSS_SELECTOR, "#size-svg rect")]
    assert sum(sizes) == len(clusters)

    # Every cluster, largest first (small corpus: nothing left out).
    items = browser.find_elements(By.CSS_SELECTOR, "#cluster-list > li")
    assert len(items) == len(clusters)
    assert items[0].find_element(By.CSS_SELECTOR, ".size").text == "6 documents"
    assert browser.find_element(By.ID, "cluster-count").text == f"{len(clusters)} of {len(clusters)} clusters on this page"

    # English: word-level marks; the weakest member faces the kept one.
    li = open_cluster(browser, "en-big-0")
    legend = li.find_element(By.CSS_SELECTOR, ".sbs-legend").text
    assert "word level" in legend
    rows = li.find_elements(By.CSS_SELECTOR, "table.members tbody tr")
    assert len(rows) == 6 and "kept" in rows[0].text
    # What differs is marked first: the changed word.
    right = li.find_element(By.CSS_SELECTOR, ".pane-right .text")
    diff = " ".join(m.text for m in right.find_elements(By.CSS_SELECTOR, "mark.diff"))
    assert "changed" in diff and len(diff) < len(right.text) / 4, diff
    # The other button marks what is shared (and holds for every view on the page).
    li.find_element(By.CSS_SELECTOR, ".sbs-mode button[data-mode='shared']").click()
    left = li.find_element(By.CSS_SELECTOR, ".pane-left .text")
    right = li.find_element(By.CSS_SELECTOR, ".pane-right .text")
    marked = " ".join(m.text for m in right.find_elements(By.TAG_NAME, "mark"))
    assert "changed" in right.text and "changed" not in marked
    assert left.find_elements(By.TAG_NAME, "mark") and not left.find_elements(By.CSS_SELECTOR, "mark.diff")
    screenshot(browser, "report")

    # Chinese: character-level marks.
    li = open_cluster(browser, "zh-a")
    assert "character level" in li.find_element(By.CSS_SELECTOR, ".sbs-legend").text
    marks = li.find_elements(By.CSS_SELECTOR, ".pane-right mark")
    assert any("本市今天上午召开新闻发布会" in m.text for m in marks)

    # Two chosen members side by side.
    selects = li.find_elements(By.CSS_SELECTOR, ".toolbar select")
    n = len(selects[1].find_elements(By.TAG_NAME, "option"))
    browser.execute_script("arguments[0].value = arguments[1]", selects[0], str(n - 1))
    li.find_element(By.XPATH, ".//button[text()='Side by side']").click()
    wait_for(lambda: li.find_element(By.CSS_SELECTOR, ".pane-left h4").text.startswith("zh-"), what="new pair")

    # Filters: by text, then by similarity.
    box = browser.find_element(By.ID, "filter-text")
    box.send_keys("防汛")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#cluster-list > li")) == 1, what="text filter")
    browser.execute_script("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input'))", box)
    lo = browser.find_element(By.ID, "filter-min")
    browser.execute_script("arguments[0].value = '0.999'; arguments[0].dispatchEvent(new Event('input'))", lo)
    shown = browser.find_elements(By.CSS_SELECTOR, "#cluster-list > li")
    assert 1 <= len(shown) < len(clusters)  # the copies (similarity 1) stay
    assert not page_errors(browser)


def test_markup_in_a_document_stays_text(run, browser):
    browser.get((run / "report.html").as_uri())
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#cluster-list > li"), what="clusters")
    li = open_cluster(browser, "markup-a")
    text = li.find_element(By.CSS_SELECTOR, ".pane-left .text").text
    assert text.startswith(MARKUP)
    assert browser.execute_script("return window.__pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "img, b")
    assert len(browser.find_elements(By.TAG_NAME, "script")) == 2  # the data block and the code
    # The raw file: the markup only ever appears escaped inside the JSON block.
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "<img" not in html and "<b>" not in html
    assert data_block(html, "report-data")["clusters"]


def test_the_summary_and_charts_read_without_javascript(run):
    driver = chromium(javascript=False)
    try:
        driver.get((run / "report.html").as_uri())
        assert driver.find_element(By.CSS_SELECTOR, "dl.summary").is_displayed()
        assert driver.find_elements(By.CSS_SELECTOR, "#similarity-svg rect")
        assert driver.find_elements(By.CSS_SELECTOR, "#size-svg rect")
        assert not driver.find_element(By.ID, "cluster-tools").is_displayed()
        assert "needs JavaScript" in driver.find_element(By.TAG_NAME, "noscript").get_attribute("textContent")
        assert not driver.find_elements(By.CSS_SELECTOR, "#cluster-list > li")
        assert not driver.find_element(By.ID, "decision-tools").is_displayed()
    finally:
        driver.quit()


def test_a_cluster_has_its_own_link(run, browser):
    clusters = [json.loads(l) for l in open(run / "clusters.jsonl")]
    number = next(i for i, c in enumerate(clusters) if "zh-a" in c["cluster"])
    browser.get((run / "report.html").as_uri() + f"#cluster-{number}")
    li = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, f"#cluster-{number} details[open]"),
                  what="the linked cluster open")[0]
    wait_for(lambda: li.find_elements(By.CSS_SELECTOR, ".sbs"), what="its side by side")
    assert "zh-a" in li.text
    # Opening another cluster puts its link in the address bar.
    other = browser.find_elements(By.CSS_SELECTOR, "#cluster-list > li")[0]
    other.find_element(By.TAG_NAME, "summary").click()
    wait_for(lambda: browser.execute_script("return location.hash") == f"#{other.get_attribute('id')}",
             what="the hash")
    assert other.find_element(By.CSS_SELECTOR, "a.permalink").get_attribute("href").endswith(
        f"#{other.get_attribute('id')}")


def test_review_decisions_export_and_dedup_keeps_them(run, browser, tmp_path):
    """The reviewer marks a member "not a duplicate", exports the decisions as the page
    writes them, and `neardup dedup --decisions` keeps that member; the summary says what was
    removed."""
    browser.get((run / "report.html").as_uri())
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#cluster-list > li"), what="clusters")
    summary = {dt.text: dd.text for dt, dd in zip(browser.find_elements(By.CSS_SELECTOR, "dl.summary dt"),
                                                  browser.find_elements(By.CSS_SELECTOR, "dl.summary dd"))}
    assert re.fullmatch(r"[\d.]+ KB of text, [\d.]+% of the bytes", summary["removed"]), summary["removed"]
    link = browser.find_element(By.ID, "export-decisions")
    assert "disabled" in link.get_attribute("class")
    li = open_cluster(browser, "en-big-0")
    box = li.find_elements(By.CSS_SELECTOR, "input.not-duplicate")[0]
    member = box.get_attribute("aria-label").split(" is not")[0]
    box.click()
    wait_for(lambda: "1 document marked" in browser.find_element(By.ID, "decision-count").text, what="count")
    assert li.find_element(By.CSS_SELECTOR, ".badge.reviewed").is_displayed()
    href = link.get_attribute("href")
    assert href.startswith("data:application/x-ndjson") and link.get_attribute("download") == "decisions.jsonl"
    from urllib.parse import unquote

    exported = unquote(href.split(",", 1)[1])
    lines = [json.loads(l) for l in exported.splitlines()]
    assert [(l["id"], l["decision"]) for l in lines] == [(member, "not_duplicate")]
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text(exported, encoding="utf-8")
    kept = lambda extra: {json.loads(l)["id"] for l in subprocess.run(  # noqa: E731
        [str(binary()), "dedup", "corpus.jsonl", "-o", "-", "-q", *extra],
        capture_output=True, text=True, cwd=run, check=True).stdout.splitlines()}
    before, after = kept([]), kept(["--decisions", str(decisions)])
    assert member not in before and after == before | {member}
    # The marks stay after a reload.
    browser.refresh()
    wait_for(lambda: "1 document marked" in browser.find_element(By.ID, "decision-count").text, what="kept marks")
    assert not page_errors(browser)


def test_a_narrow_screen_needs_no_sideways_scrolling(run):
    driver = chromium(390, 844)
    try:
        driver.get((run / "report.html").as_uri())
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#cluster-list > li"), what="clusters")
        li = open_cluster(driver, "en-big-0")
        time.sleep(0.2)
        fits = driver.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1")
        assert fits, driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        # The header row is hidden on a phone: each cell says its column.
        label = driver.execute_script(
            "return getComputedStyle(arguments[0], '::before').content",
            li.find_element(By.CSS_SELECTOR, "table.members tbody tr:nth-child(2) td:nth-child(2)"))
        assert "Similarity to kept" in label, label
        left = li.find_element(By.CSS_SELECTOR, ".pane-left").rect
        right = li.find_element(By.CSS_SELECTOR, ".pane-right").rect
        assert right["y"] >= left["y"] + left["height"] - 1  # stacked, not side by side
        screenshot(driver, "report-narrow")
    finally:
        driver.quit()


def test_neardup_report_builds_the_same_page_from_the_outputs(run):
    out = run / "again.html"
    r = subprocess.run(
        [str(binary()), "report", "corpus.jsonl", "--clusters", "clusters.jsonl", "--pairs", "pairs.jsonl",
         "-o", str(out)],
        capture_output=True, text=True, cwd=run,
    )
    assert r.returncode == 0, r.stderr
    a = data_block((run / "report.html").read_text(encoding="utf-8"), "report-data")
    b = data_block(out.read_text(encoding="utf-8"), "report-data")
    assert a == b
    # The same histogram (the pairs file lists what the run counted).
    svg = lambda p: re.findall(r'data-count="(\d+)"', p.read_text(encoding="utf-8"))  # noqa: E731
    assert svg(run / "report.html") == svg(out)


def test_compare_html_marks_shared_passages(tmp_path, browser):
    a, b = (ROOT / "examples" / "data" / "en" / f"report_{s}.txt" for s in "ab")
    page = tmp_path / "compare.html"
    r = subprocess.run([str(binary()), "compare", "--html", str(a), str(b)], capture_output=True)
    assert r.returncode == 0, r.stderr
    page.write_bytes(r.stdout)
    browser.get(page.as_uri())
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#side-by-side mark"), what="marks")
    measures = {th.text: td.text for th, td in zip(browser.find_elements(By.CSS_SELECTOR, "table.measures th"),
                                                   browser.find_elements(By.CSS_SELECTOR, "table.measures td"))}
    assert set(measures) >= {"simhash hamming", "jaccard exact", "cosine (tf-idf)", "edit similarity"}
    right = browser.find_element(By.CSS_SELECTOR, ".pane-right .text")
    diff = " ".join(m.text for m in right.find_elements(By.CSS_SELECTOR, "mark.diff"))
    assert "Reporting by the city desk" in diff  # only in b: marked as what differs
    browser.find_element(By.CSS_SELECTOR, ".sbs-mode button[data-mode='shared']").click()
    right = browser.find_element(By.CSS_SELECTOR, ".pane-right .text")
    unmarked = right.text
    for m in right.find_elements(By.TAG_NAME, "mark"):
        unmarked = unmarked.replace(m.text, "", 1)
    assert "Reporting by the city desk" in unmarked  # only in b
    assert not page_errors(browser)
    screenshot(browser, "compare")


def test_compare_html_needs_two_texts_and_no_profile():
    r = subprocess.run([str(binary()), "compare", "--html", "--profile", "jiebar", "--text", "a", "--text", "b"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--profile" in r.stderr



def test_the_report_speaks_chinese_to_a_chinese_browser(run):
    """A browser that prefers Chinese gets the page's words in Chinese; ?lang=en keeps English."""
    driver = chromium(lang="zh-CN")
    try:
        driver.get((run / "report.html").as_uri())
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#cluster-list > li"), what="clusters")
        assert driver.execute_script("return document.documentElement.lang") == "zh-CN"
        assert driver.find_element(By.CSS_SELECTOR, "#summary h2").text == "概要"
        labels = [dt.text for dt in driver.find_elements(By.CSS_SELECTOR, "dl.summary dt")]
        assert "文档" in labels and "删除的文本" in labels
        assert driver.find_element(By.CSS_SELECTOR, "#export-decisions").text == "导出决定（JSONL）"
        assert "本页" in driver.find_element(By.ID, "cluster-count").text
        li = open_cluster(driver, "zh-a")
        assert "篇文档" in li.find_element(By.CSS_SELECTOR, ".size").text
        assert li.find_element(By.CSS_SELECTOR, ".sbs-mode button[data-mode='differs']").text == "不同之处"
        assert "字级" in li.find_element(By.CSS_SELECTOR, ".sbs-legend").text
        assert "与保留文档的相似度" in li.find_element(By.CSS_SELECTOR, "table.members thead").text
        assert not page_errors(driver)
        screenshot(driver, "report-zh")
        driver.get((run / "report.html").as_uri() + "?lang=en")
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#cluster-list > li"), what="clusters")
        assert driver.find_element(By.CSS_SELECTOR, "#summary h2").text == "Summary"
    finally:
        driver.quit()
