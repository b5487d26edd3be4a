// The passages two texts share, drawn side by side. Used by the dedup report, the comparison
// page and the service's page. A view marks what differs (the units outside every shared
// passage: what a reviewer of near-copies looks for) or what is shared, switched by two buttons;
// the choice holds for every view of the page.
//
// A text is cut into units: a word (a run of letters, digits and marks) in space-separated
// scripts, one character in Han, Hiragana and Katakana. Two texts share a passage where they
// have a run of N units in common (compared after NFKC and lower-casing): N = 3 words, or
// N = 4 characters when either text is mostly Chinese or Japanese (character level). Every unit
// inside such a run is marked, and neighbouring marked units join into one mark. The texts are
// only ever inserted as text nodes: a document holding markup shows that markup as text.
"use strict";

const Shared = (() => {
  // The pages speak the reader's language when we have it: Chinese (simplified) when the
  // browser prefers Chinese (navigator.languages, the same list it sends as Accept-Language),
  // English otherwise; ?lang=zh or ?lang=en chooses. Strings are looked up by their English
  // text: dynamic ones through t("… {n} …", {n}), the page's static ones (text nodes and
  // placeholders, titles and labels that equal a key) by translateStatic().
  const ZH = {
    // The dedup report.
    "Summary": "概要",
    "Clusters": "簇",
    "documents": "文档",
    "clusters": "簇",
    "dropped": "删除",
    "kept": "保留",
    "removed": "删除的文本",
    "method": "方法",
    "verified by": "验证方式",
    "pairs at or above the threshold": "达到阈值的文档对",
    "pipeline": "处理流程",
    "time": "用时",
    "peak memory": "峰值内存",
    "against an index of": "对照索引",
    "skipped (bad records)": "跳过（坏记录）",
    "kept by review decisions": "按审阅决定保留",
    "Near-duplicates in": "近似重复：",
    "Filter by text or id": "按文本或 id 筛选",
    "words, or an id": "词语或 id",
    "Similarity to kept, from": "与保留文档的相似度，从",
    "to": "到",
    "Order": "排序",
    "largest first": "最大的在前",
    "least similar first": "最不相似的在前",
    "most similar first": "最相似的在前",
    "Export decisions (JSONL)": "导出决定（JSONL）",
    "which keeps them": "将保留它们",
    ", which keeps them": "，它将保留这些文档",
    "side by side": "并排对比",
    "large buckets paired as stars": "按星形配对的大桶",
    "invalid UTF-8 replaced": "替换的无效 UTF-8",
    "What another threshold would give, from the pairs this run verified": "其他阈值的结果（基于本次验证的文档对）",
    "for": "供",
    "threshold": "阈值",
    "pairs": "文档对",
    "dropped vs this run": "与本次相比删除",
    "this run": "本次",
    "the same": "相同",
    "Document": "文档",
    "Similarity to kept": "与保留文档的相似度",
    "Characters": "字符数",
    "Text": "文本",
    "Not a duplicate": "不是重复",
    "kept (badge)": "保留",
    "compare with kept": "与保留文档对比",
    "Left": "左",
    "Right": "右",
    "Side by side": "并排对比",
    "Mark every member shown not a duplicate": "将显示的所有成员标为不是重复",
    "sample": "抽样",
    "marked": "已标记",
    "{n} documents": "{n} 篇文档",
    "cluster {n}": "簇 {n}",
    "weakest link {x}": "最弱连接 {x}",
    "least similar to kept {x}": "与保留文档最低相似度 {x}",
    "kept: {id}": "保留：{id}",
    "{id} (kept)": "{id}（保留）",
    "the kept document": "保留的文档",
    "similarity to the kept document {x}": "与保留文档的相似度 {x}",
    "{n} characters": "{n} 个字符",
    "cut here at {a} of {b} characters": "此处截取 {b} 个字符中的 {a} 个",
    "{a} of {b} clusters on this page": "本页 {b} 个簇中的 {a} 个",
    "Cluster {n} is not among the clusters on this page.": "簇 {n} 不在本页的簇中。",
    "{n} documents marked not a duplicate": "{n} 篇文档标为不是重复",
    "1 document marked not a duplicate": "1 篇文档标为不是重复",
    "Nothing marked yet: tick \u201cnot a duplicate\u201d on a member to mark it.":
      "尚未标记：在成员旁勾选“不是重复”即可标记。",
    "This cluster is in the random sample of the smaller clusters.": "此簇来自较小簇的随机抽样。",
    "A link to this cluster": "此簇的链接",
    "Not a duplicate: keep it (exported with the decisions)": "不是重复：保留它（随决定导出）",
    // Side by side.
    "What differs": "不同之处",
    "What is shared": "相同之处",
    "characters (unit)": "字",
    "words (unit)": "词",
    "Marked: what differs, the {unit} outside every passage both texts contain":
      "标记：不同之处，即两篇文本共有段落之外的{unit}",
    "Marked: passages both texts contain": "标记：两篇文本共有的段落",
    "(runs of {n} {unit} in common, {level} level).": "（连续 {n} 个相同的{unit}，{level}级）。",
    "character (level)": "字",
    "word (level)": "词",
    "{a} of the left text and {b} of the right text are shared.":
      "左侧文本的 {a} 和右侧文本的 {b} 是共有的。",
    // The service's page.
    "Checking the service…": "正在检查服务…",
    "Token": "令牌",
    "Use this token": "使用此令牌",
    "Collections": "集合",
    "Name": "名称",
    "Documents": "文档数",
    "Method": "方法",
    "Threshold": "阈值",
    "Bands × rows": "分带 × 行",
    "Verified by": "验证方式",
    "Stores text": "存储文本",
    "Pipeline": "处理流程",
    "Search or check a text": "搜索或检查文本",
    "Collection": "集合",
    "Hits (top k)": "结果数（top k）",
    "default": "默认",
    "Paste a text to find what it matches": "粘贴文本以查找相似文档",
    "Search": "搜索",
    "Check": "检查",
    "Copied passages": "抄袭段落",
    "Insert if new, with this id (check only; empty: do not insert)": "若为新文档则以此 id 插入（仅检查；留空则不插入）",
    "Healthy · neardup {v} · {host}": "运行正常 · neardup {v} · {host}",
    "Unhealthy: {why} · neardup {v}": "运行异常：{why} · neardup {v}",
    "The service does not answer ({why}).": "服务无响应（{why}）。",
    "Give the token above to see the collections.": "请在上方输入令牌以查看集合。",
    "{n} collections.": "{n} 个集合。",
    "1 collection.": "1 个集合。",
    "No collections yet: create one with PUT /v1/collections/NAME (see /v1/openapi.json).":
      "还没有集合：用 PUT /v1/collections/NAME 创建（见 /v1/openapi.json）。",
    "Your text": "你的文本",
    "Choose a collection first.": "请先选择一个集合。",
    "Paste a text first.": "请先粘贴文本。",
    "Searching…": "正在搜索…",
    "Checking…": "正在检查…",
    "{n} hits in {c}.": "在 {c} 中找到 {n} 个结果。",
    "1 hit in {c}.": "在 {c} 中找到 1 个结果。",
    "Nothing in {c} is similar enough.": "{c} 中没有足够相似的文档。",
    "No passage of the text is copied from {c}.": "该文本没有段落抄自 {c}。",
    "yes": "是",
    "no": "否",
    "yes, with passages": "是，含段落",
    "{c} ({n} documents)": "{c}（{n} 篇文档）",
    "Fetching {id}…": "正在获取 {id}…",
    "{c} does not store texts (store_text is false), so only the ids and similarities can be shown.":
      "{c} 不存储文本（store_text 为 false），只能显示 id 和相似度。",
    "stored in {c} · similarity {x}": "存于 {c} · 相似度 {x}",
    "similarity {x}": "相似度 {x}",
    "metadata": "元数据",
    '{c} keeps no passages: create a collection with "passages": true to find copied passages.':
      '{c} 不保存段落：创建集合时加上 "passages": true 才能查找抄袭段落。',
    "{p} of the text is copied from 1 document of {c}.": "该文本的 {p} 抄自 {c} 中的 1 篇文档。",
    "{p} of the text is copied from {n} documents of {c}.": "该文本的 {p} 抄自 {c} 中的 {n} 篇文档。",
    "A near-duplicate of 1 stored document.": "与 1 篇已存文档近似重复。",
    "A near-duplicate of 1 stored document; not inserted.": "与 1 篇已存文档近似重复；未插入。",
    "A near-duplicate of {n} stored documents.": "与 {n} 篇已存文档近似重复。",
    "A near-duplicate of {n} stored documents; not inserted.": "与 {n} 篇已存文档近似重复；未插入。",
    "New: nothing stored matches it; inserted as {id}.": "新文档：没有已存文档与之匹配；已以 {id} 插入。",
    "New: nothing stored matches it (not inserted: no id given).": "新文档：没有已存文档与之匹配（未插入：未给出 id）。",
    // The passage check drawn (the service's page and the overlap report).
    "Query": "查询文本",
    "characters {a}–{b}": "字符 {a}–{b}",
    "copied": "抄袭",
    "({a} of {b} characters)": "（{b} 个字符中的 {a} 个）",
    "from 1 source": "来自 1 个来源",
    "from {n} sources": "来自 {n} 个来源",
    "{p} counting quotations and references ({n} characters left out)": "计入引文和参考文献则为 {p}（另有 {n} 个字符未计入）",
    "{p} of the text ({n} characters)": "占全文 {p}（{n} 个字符）",
    "from {s} (similarity {x})": "来自 {s}（相似度 {x}）",
    "reference list, also in {s}: not counted": "参考文献，亦见于 {s}：不计入",
    "quotation, also in {s}: not counted": "引文，亦见于 {s}：不计入",
    "The text, copied passages marked": "全文，抄袭段落已标出",
    "1 passage, beside its source (differences marked)": "1 个段落，与其来源并排（不同之处已标出）",
    "{n} passages, each beside its source (differences marked)": "{n} 个段落，各与其来源并排（不同之处已标出）",
    "{a}–{b} from {s} ({c}–{d}), similarity {x}": "{a}–{b}，来自 {s}（{c}–{d}），相似度 {x}",
    "also in {ids}": "亦见于 {ids}",
    // The overlap report (its words as a thesis-check report says them: 复制比, 引用).
    "Passage check report": "文本复制检测报告",
    "queries, the most copied first": "篇文本，复制比最高的在前",
    "query": "篇文本",
    "queries": "检测文本数",
    "documents in the collection": "比对库文档数",
    "copied on average": "平均复制比",
    "settings": "设置",
    "Queries": "检测文本",
    "Copied": "去除引用复制比",
    "With quotations and references": "总文字复制比（含引用）",
    "Largest single source": "单篇最大复制比",
    "Sources (share of the query)": "来源（占全文比例）",
    "and {n} more": "另有 {n} 个",
    "The texts of the {a} most copied queries are below; the other {b} are in the table only.":
      "下面是复制比最高的 {a} 篇文本；其余 {b} 篇只在上表中列出。",
    "source": "个来源",
    "sources": "个来源",
    "characters": "个字符",
    "Copied characters": "复制字符数",
    "Passages": "片段数",
    "Quotations and references": "引用与参考文献",
    "none": "无",
    "Sources": "来源",
    "Label": "标号",
    "Source": "来源",
    "Share": "复制比",
    "Quoted characters": "引用字符数",
    "Sections": "各章节",
    "Section": "章节",
    "before the first heading": "第一个标题之前",
    "Quotations and references, not counted": "引用与参考文献（不计入复制比）",
    "No quotation or reference list matches a source.": "没有与来源相符的引文或参考文献。",
    "Kind": "类型",
    "Where": "位置",
    "quotation": "引文",
    "reference list": "参考文献",
    "1 passage, {n} characters ({p} of the text)": "1 个片段，{n} 个字符（占全文 {p}）",
    "{k} passages, {n} characters ({p} of the text)": "{k} 个片段，{n} 个字符（占全文 {p}）",
  };

  function pickLanguage() {
    const asked = new URLSearchParams(location.search).get("lang");
    if (asked === "zh" || asked === "en") return asked;
    for (const l of navigator.languages || [navigator.language || "en"]) {
      const low = String(l).toLowerCase();
      if (low.startsWith("zh")) return "zh";
      if (low.startsWith("en")) return "en";
    }
    return "en";
  }
  const lang = pickLanguage();
  if (lang === "zh") document.documentElement.lang = "zh-CN";

  // The string for `key` (its English text) in the page's language, with {name} filled.
  function t(key, vars) {
    let s = (lang === "zh" && ZH[key]) || key.replace(/ \((badge|unit|level)\)$/, "");
    if (vars) for (const [k, v] of Object.entries(vars)) s = s.split(`{${k}}`).join(String(v));
    return s;
  }

  // Translates the static text of root: each text node, placeholder, title and aria-label
  // that is a key (trimmed), in place; not inside translate="no" (a document's own words: a
  // heading "Summary" in a thesis stays as written).
  function translateStatic(root = document.body) {
    if (lang === "en") return;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.parentElement && n.parentElement.closest('[translate="no"]') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    for (const n of nodes) {
      const key = n.nodeValue.trim();
      if (key && ZH[key]) n.nodeValue = n.nodeValue.replace(key, ZH[key]);
    }
    for (const el of root.querySelectorAll("[placeholder], [title], [aria-label]")) {
      for (const a of ["placeholder", "title", "aria-label"]) {
        const v = el.getAttribute(a);
        if (v && ZH[v.trim()]) el.setAttribute(a, ZH[v.trim()]);
      }
    }
  }
  const CJK = "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}";
  const UNIT = new RegExp(`[${CJK}]|(?:(?![${CJK}])[\\p{L}\\p{N}\\p{M}])+`, "gu");
  const IS_CJK = new RegExp(`^[${CJK}]`, "u");
  const WORD_N = 3;
  const CHAR_N = 4;
  const SEP = "\u0001";

  function units(text) {
    const out = [];
    for (const m of text.matchAll(UNIT)) {
      const s = m[0];
      out.push({
        start: m.index,
        end: m.index + s.length,
        key: s.normalize("NFKC").toLowerCase(),
        cjk: IS_CJK.test(s),
      });
    }
    return out;
  }

  function mostlyCjk(us) {
    let n = 0;
    for (const u of us) if (u.cjk) n++;
    return n * 2 > us.length;
  }

  function gramKey(us, i, n) {
    let k = us[i].key;
    for (let j = 1; j < n; j++) k += SEP + us[i + j].key;
    return k;
  }

  function grams(us, n) {
    const set = new Set();
    for (let i = 0; i + n <= us.length; i++) set.add(gramKey(us, i, n));
    return set;
  }

  function marks(us, other, n) {
    const m = new Uint8Array(us.length);
    for (let i = 0; i + n <= us.length; i++) {
      if (other.has(gramKey(us, i, n))) m.fill(1, i, i + n);
    }
    return m;
  }

  // The shared passages of texts a and b: for each, its units and which are marked.
  function compare(a, b) {
    const ua = units(a);
    const ub = units(b);
    const level = mostlyCjk(ua) || mostlyCjk(ub) ? "character" : "word";
    const wanted = level === "character" ? CHAR_N : WORD_N;
    const n = Math.max(1, Math.min(wanted, ua.length, ub.length));
    const ga = grams(ua, n);
    const gb = grams(ub, n);
    return {
      level,
      n,
      a: { units: ua, marks: marks(ua, gb, n) },
      b: { units: ub, marks: marks(ub, ga, n) },
    };
  }

  // The fraction of a side's units inside a shared passage.
  function coverage(side) {
    if (side.units.length === 0) return 0;
    let c = 0;
    for (const x of side.marks) c += x;
    return c / side.units.length;
  }

  // Replaces el's content by text, with the marked runs in <mark> elements (text nodes only):
  // the shared units, or with `differs` the others (as <mark class="diff">).
  function draw(el, text, side, differs = false) {
    el.replaceChildren();
    const us = side.units;
    const m = differs ? side.marks.map((x) => 1 - x) : side.marks;
    let pos = 0;
    let i = 0;
    while (i < us.length) {
      if (!m[i]) {
        i++;
        continue;
      }
      let j = i;
      while (j + 1 < us.length && m[j + 1]) j++;
      const s = us[i].start;
      const e = us[j].end;
      if (s > pos) el.append(text.slice(pos, s));
      const mark = document.createElement("mark");
      if (differs) mark.className = "diff";
      mark.textContent = text.slice(s, e);
      el.append(mark);
      pos = e;
      i = j + 1;
    }
    if (pos < text.length) el.append(text.slice(pos));
  }

  function element(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function percent(x) {
    return `${Math.round(x * 100)}%`;
  }

  // What the views mark: "differs" (the default) or "shared".
  let markMode = "differs";

  // Two panes in root, each {title, note, text}, marking what differs or what is shared, with
  // the two buttons that switch between them.
  function sideBySide(root, left, right) {
    const r = compare(left.text, right.text);
    const render = () => {
      const differs = markMode === "differs";
      const box = element("div", "sbs");
      const unit = r.level === "character" ? "characters" : "words";
      const modes = element("div", "sbs-mode");
      modes.setAttribute("role", "group");
      modes.setAttribute("aria-label", "Mark");
      for (const [mode, label] of [
        ["differs", "What differs"],
        ["shared", "What is shared"],
      ]) {
        const b = element("button", markMode === mode ? "on" : null, t(label));
        b.type = "button";
        b.dataset.mode = mode;
        b.setAttribute("aria-pressed", String(markMode === mode));
        b.addEventListener("click", () => {
          markMode = mode;
          render();
        });
        modes.append(b);
      }
      box.append(modes);
      const unitName = t(`${unit} (unit)`);
      const what = differs
        ? t("Marked: what differs, the {unit} outside every passage both texts contain", { unit: unitName })
        : t("Marked: passages both texts contain");
      const sep = lang === "zh" ? "" : " ";
      box.append(
        element(
          "p",
          "sbs-legend",
          what +
            sep +
            t("(runs of {n} {unit} in common, {level} level).", {
              n: r.n,
              unit: unitName,
              level: t(`${r.level} (level)`),
            }) +
            " " +
            t("{a} of the left text and {b} of the right text are shared.", {
              a: percent(coverage(r.a)),
              b: percent(coverage(r.b)),
            }),
        ),
      );
      const panes = element("div", "sbs-panes");
      for (const [doc, side, name] of [
        [left, r.a, "left"],
        [right, r.b, "right"],
      ]) {
        const pane = element("section", `pane pane-${name}`);
        pane.append(element("h4", null, doc.title));
        if (doc.note) pane.append(element("p", "note", doc.note));
        const body = element("div", "text");
        draw(body, doc.text, side, differs);
        pane.append(body);
        panes.append(pane);
      }
      box.append(panes);
      root.replaceChildren(box);
    };
    render();
    return r;
  }

  // Gives each cell of table's body the label of its column (data-label), which a narrow
  // screen shows before the cell when the header row is hidden.
  function labelCells(table) {
    const labels = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
    for (const tr of table.querySelectorAll("tbody tr")) {
      [...tr.children].forEach((td, i) => {
        if (labels[i]) td.dataset.label = labels[i];
      });
    }
  }

  return { units, compare, coverage, draw, sideBySide, labelCells, element, percent, t, lang, translateStatic };
})();
