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
        const b = element("button", markMode === mode ? "on" : null, label);
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
      const what = differs
        ? `Marked: what differs, the ${unit} outside every passage both texts contain`
        : "Marked: passages both texts contain";
      box.append(
        element(
          "p",
          "sbs-legend",
          `${what} (runs of ${r.n} ${unit} in common, ${r.level} level). ` +
            `${percent(coverage(r.a))} of the left text and ${percent(coverage(r.b))} of the right ` +
            `text are shared.`,
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

  return { units, compare, coverage, draw, sideBySide, labelCells, element, percent };
})();
