// The passage check drawn: the copied share (with and without quotations), the sources (a label
// and a colour each), the text with every copied passage marked in its source's colour and
// label, and each passage side by side with its source, what differs marked. Used by the
// service's page and by the report of `neardup overlap`. A result has the shape the service
// answers and Python returns: chars, copied_chars, excluded_chars, sources [{id, chars}],
// passages and excluded [{start, end, source, source_start, source_end, similarity,
// source_text}], with offsets in code points. Texts are only ever inserted as text nodes.
"use strict";

const OverlapView = (() => {
  const { element, compare, t } = Shared;

  function pct(part, whole) {
    return whole ? `${((part / whole) * 100).toFixed(1)}%` : "0%";
  }

  // The colour of the i-th source (most copied first), for any number of sources: hues a golden
  // angle apart (each new hue falls in the widest gap left by the others), on three lightness
  // rings so that sources eight apart, whose hues come close again, still differ. Past a dozen
  // no colours stay apart at a glance, so every mark also carries its source's label.
  function colour(i) {
    const hue = (i * 137.508) % 360;
    const light = [80, 68, 89][Math.floor(i / 8) % 3];
    return `hsl(${hue.toFixed(1)}, 75%, ${light}%)`;
  }

  // The i-th source's label: S1 is the most copied (the report's tables say the same).
  function label(i) {
    return `S${i + 1}`;
  }

  // Gives el the i-th source's colour (through the CSSOM, which the page's policy allows; a
  // style attribute it would refuse).
  function paint(el, i) {
    el.classList.add("src", `src-${i}`);
    el.style.backgroundColor = colour(i);
  }

  // Source id -> its position in result.sources.
  function sourceIndex(result) {
    const at = new Map();
    result.sources.forEach((s, i) => at.set(String(s.id), i));
    return at;
  }

  // Code point ranges of `text` as UTF-16 positions: [start, end) -> [s16, e16).
  function utf16(text) {
    const at = [0];
    let i = 0;
    for (const c of text) {
      i += c.length;
      at.push(i);
    }
    return (cp) => at[Math.min(cp, at.length - 1)];
  }

  // Replaces el's content by text with the ranges {start, end, cls, src, label, title} (code
  // points, sorted, disjoint) in <mark> elements: a source's colour when src is given, its label
  // shown before the mark (data-label, drawn by CSS: not part of the text when copied).
  function markRanges(el, text, ranges) {
    el.replaceChildren();
    const at = utf16(text);
    let pos = 0;
    for (const r of ranges) {
      const s = Math.max(at(r.start), pos);
      const e = at(r.end);
      if (e <= s) continue;
      if (s > pos) el.append(text.slice(pos, s));
      const m = element("mark", r.cls, text.slice(s, e));
      if (r.src !== undefined) paint(m, r.src);
      if (r.label) m.dataset.label = r.label;
      if (r.title) m.title = r.title;
      el.append(m);
      pos = e;
    }
    if (pos < text.length) el.append(text.slice(pos));
  }

  // text with the units the other side does not share marked as differences.
  function drawDiff(el, text, side) {
    el.replaceChildren();
    let pos = 0;
    side.units.forEach((u, i) => {
      if (side.marks[i]) return;
      if (u.start > pos) el.append(text.slice(pos, u.start));
      el.append(element("mark", "diff", text.slice(u.start, u.end)));
      pos = u.end;
    });
    if (pos < text.length) el.append(text.slice(pos));
  }

  // A passage beside its source, differences marked.
  function passagePanes(queryPart, p, src) {
    const r = compare(queryPart, p.source_text || "");
    const panes = element("div", "sbs-panes");
    const sides = [
      [t("Query"), t("characters {a}–{b}", { a: p.start, b: p.end }), queryPart, r.a],
      [String(p.source), t("characters {a}–{b}", { a: p.source_start, b: p.source_end }), p.source_text || "", r.b],
    ];
    sides.forEach(([title, note, text, side], i) => {
      const pane = element("section", `pane pane-${i ? "right" : "left"}`);
      const h = element("h4");
      if (i && src !== undefined) {
        const sw = element("span", "swatch");
        paint(sw, src);
        h.append(sw, element("span", "src-tag", label(src)), " ");
      }
      h.append(title);
      pane.append(h, element("p", "note", note));
      const body = element("div", "text");
      drawDiff(body, text, side);
      pane.append(body);
      panes.append(pane);
    });
    return panes;
  }

  // The text with its passages marked: counted ones in their source's colour and label,
  // quotations and references outlined (not counted), labelled by the source that holds them.
  function markedText(text, result) {
    const idx = sourceIndex(result);
    const ranges = result.passages
      .map((p) => ({
        start: p.start,
        end: p.end,
        cls: null,
        src: idx.get(String(p.source)),
        label: idx.has(String(p.source)) ? label(idx.get(String(p.source))) : null,
        title: t("from {s} (similarity {x})", { s: p.source, x: p.similarity }),
      }))
      .concat(
        result.excluded.map((p) => ({
          start: p.start,
          end: p.end,
          cls: "excluded",
          label: idx.has(String(p.source)) ? label(idx.get(String(p.source))) : null,
          title: t(p.exclusion === "references" ? "reference list, also in {s}: not counted" : "quotation, also in {s}: not counted", { s: p.source }),
        })),
      )
      .sort((a, b) => a.start - b.start || a.end - b.end);
    const body = element("div", "ov-text");
    markRanges(body, text, ranges);
    return body;
  }

  // One passage, opened or not, beside its source.
  function passageDetails(text, at, p, src, open) {
    const d = element("details", "ov-passage");
    d.dataset.source = String(p.source);
    d.dataset.chars = String(p.end - p.start);
    if (open) d.open = true;
    const head = element("summary");
    if (src !== undefined) {
      const sw = element("span", "swatch");
      paint(sw, src);
      head.append(sw, element("span", "src-tag", label(src)), " ");
    }
    head.append(t("{a}–{b} from {s} ({c}–{d}), similarity {x}", { a: p.start, b: p.end, s: p.source, c: p.source_start, d: p.source_end, x: p.similarity }));
    if (p.also && p.also.length) head.append(`; ${t("also in {ids}", { ids: p.also.join(", ") })}`);
    d.append(head, passagePanes(text.slice(at(p.start), at(p.end)), p, src));
    return d;
  }

  // Draws `result` for the query `text` into root: the service's view (its summary, its
  // sources, the marked text, the passages in text order).
  function render(root, text, result) {
    const idx = sourceIndex(result);
    const box = element("div", "overlap");
    const summary = element("p", "ov-summary");
    summary.append(element("strong", "ov-copied", pct(result.copied_chars, result.chars)), ` ${t("copied")}`);
    summary.append(
      ` ${t("({a} of {b} characters)", { a: result.copied_chars.toLocaleString("en-US"), b: result.chars.toLocaleString("en-US") })}` +
        ` ${t(result.sources.length === 1 ? "from 1 source" : "from {n} sources", { n: result.sources.length })}`,
    );
    if (result.excluded_chars) {
      summary.append(
        `; ${t("{p} counting quotations and references ({n} characters left out)", { p: pct(result.copied_chars + result.excluded_chars, result.chars), n: result.excluded_chars.toLocaleString("en-US") })}`,
      );
    }
    box.append(summary);

    const list = element("ol", "ov-sources");
    result.sources.forEach((s, i) => {
      const li = element("li");
      li.dataset.id = String(s.id);
      const sw = element("span", "swatch");
      paint(sw, i);
      li.append(sw, element("span", "src-tag", label(i)), " ");
      li.append(element("strong", "id", String(s.id)));
      li.append(` · ${t("{p} of the text ({n} characters)", { p: pct(s.chars, result.chars), n: s.chars.toLocaleString("en-US") })}`);
      list.append(li);
    });
    box.append(list);

    box.append(element("h3", null, t("The text, copied passages marked")), markedText(text, result));

    if (result.passages.length) {
      const n = result.passages.length;
      box.append(element("h3", null, t(n === 1 ? "1 passage, beside its source (differences marked)" : "{n} passages, each beside its source (differences marked)", { n })));
      const at = utf16(text);
      result.passages.forEach((p, i) => box.append(passageDetails(text, at, p, idx.get(String(p.source)), i < 3)));
    }
    root.replaceChildren(box);
  }

  // Draws the report's part of a query into root: the marked text, then the passages grouped
  // by source (the most copied source first) and, within a source, the longest first, each
  // beside its source. The figures and tables are the page's static HTML.
  function renderGrouped(root, text, result) {
    const box = element("div", "overlap");
    box.append(element("h3", null, t("The text, copied passages marked")), markedText(text, result));
    const at = utf16(text);
    let opened = 0;
    result.sources.forEach((s, i) => {
      const own = result.passages
        .filter((p) => String(p.source) === String(s.id))
        .sort((a, b) => b.end - b.start - (a.end - a.start) || a.start - b.start);
      if (!own.length) return;
      const group = element("section", "ov-group");
      group.dataset.id = String(s.id);
      const h = element("h3");
      const sw = element("span", "swatch");
      paint(sw, i);
      h.append(sw, element("span", "src-tag", label(i)), " ", element("span", "id", String(s.id)), " · ");
      h.append(t(own.length === 1 ? "1 passage, {n} characters ({p} of the text)" : "{k} passages, {n} characters ({p} of the text)", { k: own.length, n: s.chars.toLocaleString("en-US"), p: pct(s.chars, result.chars) }));
      group.append(h);
      for (const p of own) group.append(passageDetails(text, at, p, i, opened++ < 3));
      box.append(group);
    });
    root.replaceChildren(box);
  }

  return { render, renderGrouped, pct, colour, label, paint };
})();
