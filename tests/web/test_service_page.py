"""The page `neardup serve` shows at `/`, in headless Chromium against a real server: it lists the
collections, searches and checks a pasted text, shows the hits side by side with the shared
passages marked, keeps a stored document's markup as text, and asks for the token when the
service wants one."""

from __future__ import annotations

import json
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from webhelpers import ROOT, Server, chromium, page_errors, screenshot, wait_for

MARKUP = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'
EN = (ROOT / "examples" / "data" / "en" / "report_a.txt").read_text(encoding="utf-8")
ZH_A, ZH_B = ((ROOT / "examples" / "data" / "zh" / f"news_{s}.txt").read_text(encoding="utf-8") for s in "ab")


def call(server: Server, method: str, path: str, body=None, token: str | None = None):
    req = urllib.request.Request(server.base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def fill(server: Server, token: str | None = None) -> None:
    call(server, "PUT", "/v1/collections/news", {"store_text": True}, token)
    call(server, "PUT", "/v1/collections/ids-only", {}, token)
    docs = [
        {"id": "zh-a", "text": ZH_A, "metadata": {"source": "example"}},
        {"id": "en-report", "text": EN},
        {"id": "markup", "text": MARKUP + " " + EN.replace("Tuesday", "Monday")},
    ]
    call(server, "POST", "/v1/collections/news/docs", {"docs": docs}, token)


def search(driver, text: str) -> list:
    box = driver.find_element(By.ID, "text")
    box.clear()
    driver.execute_script("arguments[0].value = arguments[1]", box, text)
    # The hits of an earlier search stay until the new answer replaces them:
    # wait for them to go, or the test reads (and races) the old list.
    before = driver.find_elements(By.CSS_SELECTOR, "#hits > li")
    driver.find_element(By.ID, "search").click()
    if before:
        WebDriverWait(driver, 20).until(EC.staleness_of(before[0]))
    return wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#hits > li"), what="hits")


def test_the_page_searches_and_shows_hits_side_by_side(server, browser):
    fill(server)
    browser.get(server.base + "/")
    wait_for(lambda: "Healthy" in browser.find_element(By.ID, "health").text, what="health")
    rows = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#collections tbody tr"), what="collections")
    cells = {r.find_elements(By.TAG_NAME, "td")[0].text: r.text for r in rows}
    assert set(cells) == {"news", "ids-only"}
    assert "3" in cells["news"] and "yes" in cells["news"]

    # Chinese: the near-duplicate is found, and its passages are marked by character.
    browser.find_element(By.ID, "collection").send_keys("news")
    hits = search(browser, ZH_B)
    assert hits[0].get_attribute("data-id") == "zh-a"
    assert "similarity 0.8" in hits[0].text or "similarity 0.9" in hits[0].text
    view = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#view .sbs"), what="side by side")[0]
    assert "character level" in view.find_element(By.CSS_SELECTOR, ".sbs-legend").text
    # What differs is marked first; the other button marks what is shared.
    assert view.find_elements(By.CSS_SELECTOR, ".pane-right mark.diff")
    view.find_element(By.CSS_SELECTOR, ".sbs-mode button[data-mode='shared']").click()
    view = browser.find_element(By.CSS_SELECTOR, "#view .sbs")
    marks = view.find_elements(By.CSS_SELECTOR, ".pane-right mark")
    assert any("新闻发布会" in m.text for m in marks)
    assert 'metadata: {"source":"example"}' in hits[0].text
    screenshot(browser, "service")

    # A stored document with markup: shown as text, nothing runs.
    hits = search(browser, EN)
    ids = [h.get_attribute("data-id") for h in hits]
    assert ids[:2] == ["en-report", "markup"]
    hits[1].find_element(By.XPATH, ".//button[text()='side by side']").click()
    wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#view .pane-right .text").text.startswith(MARKUP),
             what="markup as text")
    assert browser.execute_script("return window.__pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#view img")

    # Check: a near-duplicate is reported and not inserted without an id.
    browser.find_element(By.ID, "check").click()
    wait_for(lambda: "near-duplicate" in browser.find_element(By.ID, "status").text, what="check")
    assert call(server, "GET", "/v1/collections/news")["documents"] == 3
    # A new text with an id is inserted, and the table follows.
    browser.execute_script("arguments[0].value = arguments[1]", browser.find_element(By.ID, "text"),
                           "an unrelated note about the harbour festival and its fireworks this summer")
    browser.find_element(By.ID, "check-id").send_keys("note-1")
    browser.find_element(By.ID, "check").click()
    wait_for(lambda: "inserted as note-1" in browser.find_element(By.ID, "status").text, what="insert")
    assert call(server, "GET", "/v1/collections/news")["documents"] == 4
    assert not page_errors(browser)


def test_a_collection_without_texts_says_so(server, browser):
    fill(server)
    call(server, "POST", "/v1/collections/ids-only/docs", {"docs": [{"id": "x", "text": EN}]})
    browser.get(server.base + "/")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#collection option")) == 2, what="options")
    browser.execute_script("document.getElementById('collection').value = 'ids-only'")
    hits = search(browser, EN)
    assert hits[0].get_attribute("data-id") == "x"
    assert not hits[0].find_elements(By.XPATH, ".//button[text()='side by side']")


def test_the_page_asks_for_the_token(tmp_path, browser):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    server = Server(tmp_path / "data", "--token-file", str(token_file))
    try:
        fill(server, "s3cret-token")
        browser.get(server.base + "/")
        box = wait_for(lambda: browser.find_element(By.ID, "token-box"), what="token box")
        wait_for(lambda: box.is_displayed(), what="token box shown")
        assert not browser.find_elements(By.CSS_SELECTOR, "#collections tbody tr")
        field = browser.find_element(By.ID, "token")
        field.send_keys("wrong")
        browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait_for(lambda: "refused" in browser.find_element(By.ID, "token-error").text, what="refusal")
        field.clear()
        field.send_keys("s3cret-token")
        browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#collections tbody tr"), what="collections")
        assert not box.is_displayed()
        browser.execute_script("document.getElementById('collection').value = 'news'")
        hits = search(browser, ZH_B)
        assert hits[0].get_attribute("data-id") == "zh-a"
    finally:
        browser.execute_script("sessionStorage.clear()")
        server.stop()


def test_the_page_is_served_with_its_policy(server):
    with urllib.request.urlopen(server.base + "/") as r:
        policy = r.headers["Content-Security-Policy"]
        body = r.read().decode()
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert "http://" not in body.replace(server.base, "") and "https://" not in body


@pytest.mark.parametrize("path", ["/", "/v1/health"])
def test_the_page_and_health_are_open_with_a_token(tmp_path, path):
    token_file = tmp_path / "token"
    token_file.write_text("t0ken\n")
    server = Server(tmp_path / "data", "--token-file", str(token_file))
    try:
        with urllib.request.urlopen(server.base + path) as r:
            assert r.status == 200
    finally:
        server.stop()


THESIS_SOURCES = {
    "debian": "开源软件的发展离不开社区的贡献。Debian 项目由来自世界各地的志愿者维护，"
    "他们打包、测试并发布数以万计的软件包。每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。",
    "metro": "城市轨道交通的客流预测是线网规划的基础。本文采用四阶段法对远景年客流进行预测，"
    "并结合土地利用规划对各站点的进出站量进行了修正，结果表明修正后的预测精度明显提高。",
}
THESIS = (
    "第一章 绪论。我们认为，Debian 项目由来自世界各地的志愿者维护，他们打包、测试并发布数以万计的软件包。"
    "此外，本文采用四阶段法对远景年的客流进行预测，并结合土地利用规划对各站点的进出站量进行了修正。"
    "他写道：“每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。”全文完。"
)


def test_the_page_shows_the_copied_passages_of_a_text(server, browser):
    call(server, "PUT", "/v1/collections/theses", {"passages": True})
    call(server, "POST", "/v1/collections/theses/docs",
         {"docs": [{"id": k, "text": v} for k, v in THESIS_SOURCES.items()]})
    expected = call(server, "POST", "/v1/collections/theses/overlap", {"text": THESIS})
    assert len(expected["passages"]) == 2 and expected["excluded"], expected

    page_errors(browser)  # what earlier tests left in the log
    browser.get(server.base + "/")
    rows = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#collections tbody tr"), what="collections")
    assert "with passages" in rows[0].text
    browser.find_element(By.ID, "collection").send_keys("theses")
    box = browser.find_element(By.ID, "text")
    browser.execute_script("arguments[0].value = arguments[1]", box, THESIS)
    browser.find_element(By.ID, "overlap").click()
    view = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#view .overlap"), what="overlap view")[0]

    # The share as the service computed it, one colour per source, the quotation apart.
    share = f"{expected['copied_chars'] / expected['chars'] * 100:.1f}%"
    assert view.find_element(By.CSS_SELECTOR, ".ov-copied").text == share
    assert "counting quotations" in view.find_element(By.CSS_SELECTOR, ".ov-summary").text
    sources = view.find_elements(By.CSS_SELECTOR, ".ov-sources li")
    assert [s.get_attribute("data-id") for s in sources] == [s["id"] for s in expected["sources"]]
    marks = view.find_elements(By.CSS_SELECTOR, ".ov-text mark")
    chars = list(THESIS)
    assert [m.text for m in marks if "excluded" not in m.get_attribute("class")] == [
        "".join(chars[p["start"]:p["end"]]) for p in expected["passages"]
    ]
    colours = {m.get_attribute("class") for m in marks} - {"excluded"}
    assert len(colours) == 2
    assert any("excluded" in m.get_attribute("class") for m in marks)

    # Each passage beside its source: the reworded "远景年的客流" differs by one character.
    panes = view.find_elements(By.CSS_SELECTOR, "details.ov-passage .sbs-panes")
    assert len(panes) == 2
    diffs = [m.text for m in panes[1].find_elements(By.CSS_SELECTOR, ".pane-left mark.diff")]
    assert diffs == ["的"], diffs
    assert page_errors(browser) == []
    screenshot(browser, "service-overlap")

    # A collection without passages says how to get them.
    call(server, "PUT", "/v1/collections/plain", {})
    browser.get(server.base + "/")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#collections tbody tr")) == 2, what="rows")
    browser.find_element(By.ID, "collection").send_keys("plain")
    browser.execute_script("arguments[0].value = arguments[1]", browser.find_element(By.ID, "text"), THESIS)
    browser.find_element(By.ID, "overlap").click()
    wait_for(lambda: '"passages": true' in browser.find_element(By.ID, "status").text, what="status")


def test_the_page_speaks_chinese_to_a_chinese_browser(server):
    """A browser whose languages put Chinese first (Accept-Language zh-CN) gets the page in
    Chinese: headings, the table's columns, buttons and what the searches say."""
    fill(server)
    driver = chromium(lang="zh-CN")
    try:
        driver.get(server.base + "/")
        wait_for(lambda: "运行正常" in driver.find_element(By.ID, "health").text, what="health")
        assert driver.find_element(By.CSS_SELECTOR, "#collections-box h2").text == "集合"
        heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#collections thead th")]
        assert heads[:3] == ["名称", "文档数", "方法"]
        assert driver.find_element(By.ID, "search").text == "搜索"
        assert driver.find_element(By.ID, "text").get_attribute("placeholder") == "粘贴文本以查找相似文档"
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#collection option"), what="options")
        driver.execute_script("document.getElementById('collection').value = 'news'")
        search(driver, ZH_B)
        assert "在 news 中找到" in driver.find_element(By.ID, "status").text
        # The result lines too (they stayed English): each hit's similarity, the side-by-side
        # note, and a check's verdict.
        hit = driver.find_elements(By.CSS_SELECTOR, "#hits li")[0].text
        assert "相似度" in hit and "similarity" not in hit, hit
        wait_for(lambda: "存于 news" in driver.find_element(By.ID, "view").text, what="side by side")
        driver.find_element(By.ID, "check").click()
        wait_for(lambda: "近似重复" in driver.find_element(By.ID, "status").text, what="check verdict")
        assert "未插入" in driver.find_element(By.ID, "status").text
        assert not page_errors(driver)
        screenshot(driver, "service-zh")
    finally:
        driver.quit()
