// The passage check drawn: the copied share (with and without quotations), the sources (one
// colour each), the text with every copied passage marked in its source's colour, and each
// passage side by side with its source, what differs marked. Used by the service's page and
// by the report of `neardup overlap`. A result has the shape the service answers and Python
// returns: chars, copied_chars, excluded_chars, sources [{id, chars}], passages and excluded
// [{start, end, source, source_start, source_end, similarity, source_text}], with offsets in
// code points. Texts are only ever inserted as text nodes.
"use strict";

const OverlapView = (() => {
  const { element, compare, t } = Shared;
  const COLOURS = 8;

  function pct(part, whole) {
    return whole ? `${((part / whole) * 100).toFixed(1)}%` : "0%";
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

  // Replaces el's content by text with the ranges {start, end, cls, title} (code points,
  // sorted, disjoint) in <mark> elements.
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
  function passagePanes(queryPart, p, colour) {
    const r = compare(queryPart, p.source_text || "");
    const panes = element("div", "sbs-panes");
    const sides = [
      [t("Query"), t("characters {a}–{b}", { a: p.start, b: p.end }), queryPart, r.a],
      [String(p.source), t("characters {a}–{b}", { a: p.source_start, b: p.source_end }), p.source_text || "", r.b],
    ];
    sides.forEach(([title, note, text, side], i) => {
      const pane = element("section", `pane pane-${i ? "right" : "left"}`);
      const h = element("h4");
      if (i) h.append(element("span", `swatch ${colour}`));
      h.append(title);
      pane.append(h, element("p", "note", note));
      const body = element("div", "text");
      drawDiff(body, text, side);
      pane.append(body);
      panes.append(pane);
    });
    return panes;
  }

  // Draws `result` for the query `text` into root.
  function render(root, text, result) {
    const colourOf = new Map();
    result.sources.forEach((s, i) => colourOf.set(String(s.id), `src-${i % COLOURS}`));
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
    for (const s of result.sources) {
      const li = element("li");
      li.dataset.id = String(s.id);
      li.append(element("span", `swatch ${colourOf.get(String(s.id))}`));
      li.append(element("strong", "id", String(s.id)));
      li.append(` · ${t("{p} of the text ({n} characters)", { p: pct(s.chars, result.chars), n: s.chars.toLocaleString("en-US") })}`);
      list.append(li);
    }
    box.append(list);

    const ranges = result.passages
      .map((p) => ({
        start: p.start,
        end: p.end,
        cls: colourOf.get(String(p.source)) || "src-0",
        title: t("from {s} (similarity {x})", { s: p.source, x: p.similarity }),
      }))
      .concat(
        result.excluded.map((p) => ({
          start: p.start,
          end: p.end,
          cls: "excluded",
          title: t(p.exclusion === "references" ? "reference list, also in {s}: not counted" : "quotation, also in {s}: not counted", { s: p.source }),
        })),
      )
      .sort((a, b) => a.start - b.start || a.end - b.end);
    const body = element("div", "ov-text");
    markRanges(body, text, ranges);
    box.append(element("h3", null, t("The text, copied passages marked")), body);

    if (result.passages.length) {
      const n = result.passages.length;
      box.append(element("h3", null, t(n === 1 ? "1 passage, beside its source (differences marked)" : "{n} passages, each beside its source (differences marked)", { n })));
      const at = utf16(text);
      result.passages.forEach((p, i) => {
        const d = element("details", "ov-passage");
        if (i < 3) d.open = true;
        const head = element("summary");
        head.append(element("span", `swatch ${colourOf.get(String(p.source))}`));
        head.append(t("{a}–{b} from {s} ({c}–{d}), similarity {x}", { a: p.start, b: p.end, s: p.source, c: p.source_start, d: p.source_end, x: p.similarity }));
        if (p.also && p.also.length) head.append(`; ${t("also in {ids}", { ids: p.also.join(", ") })}`);
        d.append(head, passagePanes(text.slice(at(p.start), at(p.end)), p, colourOf.get(String(p.source))));
        box.append(d);
      });
    }
    root.replaceChildren(box);
  }

  return { render, pct };
})();
