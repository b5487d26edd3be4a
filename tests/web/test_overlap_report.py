"""The report of `neardup overlap --report` in headless Chromium: the table of queries with their
copied shares as `--summary` gives them, the most copied query opened to its text with each
passage marked in its source's colour and label, each passage beside its source with the
differences marked, a query holding markup shown as text, and the table readable without
JavaScript. On the bundled Chinese thesis (examples/thesis-zh), what a supervisor reads: the
page in Chinese for a browser that prefers it, the copied share with and without quotations, the
largest source, the per-source table, the quotation listed apart with its source, the sections,
and the passages grouped by source, longest first; and the same page in English. Sources past
eight keep a label and a colour each."""

from __future__ import annotations

import json
import random
import subprocess

import pyarrow as pa
import pytest
from selenium.webdriver.common.by import By

from webhelpers import ROOT, binary, chromium, page_errors, screenshot, wait_for

SET = ROOT / "tests" / "fixtures" / "passages" / "sample-en"
THESIS = ROOT / "examples" / "thesis-zh"
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
        By.ID, "q0").get_attribute("data-id") and not p["quotation"]]
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


@pytest.fixture(scope="module")
def thesis(tmp_path_factory):
    """The bundled Chinese thesis checked against its library, as README shows it."""
    d = tmp_path_factory.mktemp("thesis-zh")
    overlap("examples/thesis-zh/thesis.txt", "--against", "examples/thesis-zh/library.jsonl",
            "--report", d / "report.html", "--summary", d / "summary.jsonl",
            "--passages", d / "passages.jsonl", cwd=ROOT)
    return d


def pct(part, whole):
    return f"{part / whole * 100:.1f}%"


def cells(row):
    return [c.text for c in row.find_elements(By.TAG_NAME, "td")]


def test_the_thesis_report_in_chinese(thesis):
    """What a supervisor reads first, in Chinese: the two copied shares, the largest source, the
    sources (label, id, share, characters, passages, quoted characters), the quotation apart
    with its source, the sections, then the passages by source, longest first."""
    [summary] = read(thesis / "summary.jsonl")
    # Counted passages: --passages gives the quoted ones too, marked.
    passages = [p for p in read(thesis / "passages.jsonl") if not p["quotation"]]
    text = (THESIS / "thesis.txt").read_text(encoding="utf-8")
    driver = chromium(lang="zh-CN")
    try:
        driver.get((thesis / "report.html").as_uri())
        q = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#q0 .ov-group"), what="passages") and \
            driver.find_element(By.ID, "q0")
        assert driver.execute_script("return document.documentElement.lang") == "zh-CN"
        assert driver.find_element(By.TAG_NAME, "h1").text.startswith("文本复制检测报告")
        figures = {d.find_element(By.TAG_NAME, "dt").text: d.find_element(By.TAG_NAME, "dd").text
                   for d in q.find_elements(By.CSS_SELECTOR, "dl.figures > div")}
        chars = summary["chars"]
        assert figures["去除引用复制比"] == pct(summary["copied_chars"], chars)
        assert figures["总文字复制比（含引用）"] == pct(summary["copied_chars"] + summary["excluded_chars"], chars)
        assert summary["excluded_chars"] > 0, "the thesis quotes a source"
        top = summary["sources"][0]
        assert figures["单篇最大复制比"] == f"S1 {top['id']} {pct(top['chars'], chars)}"
        assert figures["字符数"] == f"{chars:,}"
        assert figures["片段数"] == str(len(passages))

        # The sources: the counted ones as --summary gives them, most copied first, then the
        # one only quoted; each labelled, each its own colour.
        heads = [th.text for th in q.find_elements(By.CSS_SELECTOR, ".ov-source-table thead th")]
        assert heads == ["标号", "来源", "复制比", "字符数", "片段数", "引用字符数"]
        rows = q.find_elements(By.CSS_SELECTOR, ".ov-source-table tbody tr")
        counted = [s for s in summary["sources"] if s["chars"] > 0]
        assert len(counted) >= 2 and len(rows) == len(counted) + 1
        for i, (row, s) in enumerate(zip(rows, counted)):
            n = sum(1 for p in passages if p["source"] == s["id"])
            assert cells(row) == [f"S{i + 1}", s["id"], pct(s["chars"], chars), f"{s['chars']:,}", str(n), "0"]
        quoted_row = cells(rows[-1])
        assert quoted_row[:5] == [f"S{len(rows)}", "zhao2020", "0.0%", "0", "0"]
        colours = {sw.value_of_css_property("background-color")
                   for sw in q.find_elements(By.CSS_SELECTOR, ".ov-source-table .swatch")}
        assert len(colours) == len(rows)

        # The quotation, apart: what the thesis quotes, from its source, not counted.
        assert "不计入" in q.find_element(By.XPATH, ".//h3[contains(., '引用与参考文献')]").text
        [quote] = q.find_elements(By.CSS_SELECTOR, ".ov-quote-table tbody tr")
        kind, where, source, n, quoted = cells(quote)
        assert kind == "引文" and source == f"S{len(rows)} zhao2020"
        assert quoted_row[5] == n and int(n) > 60
        inside = text[text.index("“") + 1:text.index("”")]
        assert quoted.rstrip("…") in inside
        start, end = map(int, where.split("–"))
        assert inside in text[start - 2:end + 2] or text[start:end] in inside

        # The sections: every heading of the thesis, in order; they add up to the text.
        sections = [cells(r) for r in q.find_elements(By.CSS_SELECTOR, ".ov-section-table tbody tr")]
        headings = [line.strip() for line in text.splitlines()
                    if line.startswith(("第", "摘要", "参考文献")) and len(line) < 20
                    or line[:1].isdigit() and line[1:2] == "."]
        assert [s[0] for s in sections] == ["第一个标题之前"] + headings
        assert sum(int(s[1].replace(",", "")) for s in sections) == chars
        assert sum(int(s[3].replace(",", "")) for s in sections) == summary["copied_chars"]
        by_title = {s[0]: s for s in sections}
        assert by_title["2.3 适老化改造的政策讨论"][4] == n, "the quotation's section"
        assert float(by_title["2.2 家庭中的数字反哺"][2].rstrip("%")) > 40

        # The passages: grouped by source in the table's order, the longest first in each.
        groups = q.find_elements(By.CSS_SELECTOR, ".ov-group")
        assert [g.get_attribute("data-id") for g in groups] == [s["id"] for s in counted]
        for g in groups:
            lengths = [int(d.get_attribute("data-chars")) for d in g.find_elements(By.CSS_SELECTOR, "details.ov-passage")]
            assert lengths == sorted(lengths, reverse=True) and lengths
        assert "个片段" in groups[0].find_element(By.TAG_NAME, "h3").text
        # Each mark carries its source's label; the quotation is outlined, labelled by its source.
        marks = q.find_elements(By.CSS_SELECTOR, ".ov-text mark")
        assert {m.get_attribute("data-label") for m in marks if "excluded" not in m.get_attribute("class")} == \
            {f"S{i + 1}" for i in range(len(counted))}
        [excluded] = [m for m in marks if "excluded" in m.get_attribute("class")]
        assert excluded.get_attribute("data-label") == f"S{len(rows)}" and "引文" in excluded.get_attribute("title")
        assert q.find_element(By.CSS_SELECTOR, ".ov-passage .pane-left h4").text == "查询文本"
        assert q.find_elements(By.CSS_SELECTOR, ".ov-passage .pane-left mark.diff"), "differences marked"
        assert not page_errors(driver)
        # README's picture: the figures and tables, and the text scrolled to its longest copy.
        driver.set_window_size(1040, 2700)
        driver.execute_script("""
            const box = document.querySelector("#q0 .ov-text");
            const m = [...box.querySelectorAll("mark")].sort((a, b) => b.textContent.length - a.textContent.length)[0];
            box.scrollTop = m.offsetTop - box.offsetTop - 150;
        """)
        screenshot(driver, "overlap-report-zh", full_height=False)
    finally:
        driver.quit()


def test_readme_shows_the_thesis_check_as_printed(tmp_path):
    """README's thesis-check section prints the example's summary lines: they are what the
    command prints."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("#### Thesis check (论文查重)"):]
    block = section[section.index("```sh\n") + 6:section.index("\n```", section.index("```sh\n"))]
    command, *shown = block.splitlines()
    args = command.split()
    assert args[:2] == ["neardup", "overlap"]
    args[args.index("--report") + 1] = str(tmp_path / "report.html")
    r = subprocess.run([str(binary()), *args[1:]], capture_output=True, cwd=ROOT, text=True)
    assert r.returncode == 0, r.stderr
    assert [line.removeprefix("# ") for line in shown] == [r.stdout.strip(), r.stderr.splitlines()[0]]


def test_the_thesis_report_in_english(thesis, browser):
    browser.get((thesis / "report.html").as_uri() + "?lang=en")
    q = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#q0 .ov-group"), what="passages") and \
        browser.find_element(By.ID, "q0")
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Passage check report")
    dts = [dt.text for dt in q.find_elements(By.CSS_SELECTOR, "dl.figures dt")]
    assert dts[:3] == ["Copied", "With quotations and references", "Largest single source"]
    heads = [th.text for th in q.find_elements(By.CSS_SELECTOR, ".ov-source-table thead th")]
    assert heads == ["Label", "Source", "Share", "Characters", "Passages", "Quoted characters"]
    assert cells(q.find_element(By.CSS_SELECTOR, ".ov-quote-table tbody tr"))[0] == "quotation"
    assert cells(q.find_element(By.CSS_SELECTOR, ".ov-section-table tbody tr"))[0] == "before the first heading"
    assert "passages" in q.find_element(By.CSS_SELECTOR, ".ov-group h3").text
    assert page_errors(browser) == []


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
