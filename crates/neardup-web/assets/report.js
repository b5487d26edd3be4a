// The cluster browser of the dedup report: the clusters in the page's data block, filtered by
// text and by similarity, each opening to its members and a side-by-side view of two of them.
// Everything from the data is inserted with textContent (see shared.js).
"use strict";

(() => {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const { element, sideBySide } = Shared;
  const list = document.getElementById("cluster-list");
  const count = document.getElementById("cluster-count");
  const query = document.getElementById("filter-text");
  const minSim = document.getElementById("filter-min");
  const maxSim = document.getElementById("filter-max");
  const order = document.getElementById("filter-order");
  document.getElementById("cluster-tools").classList.remove("hidden");

  const fmt = (x) => (x === null || x === undefined ? "" : x.toFixed(3));
  const number = (n) => n.toLocaleString("en-US");

  // Per cluster, its lowest similarity to the kept document among the members shown, and the
  // lower-cased text searched by the text filter.
  for (const c of data.clusters) {
    const sims = c.members.filter((m) => !m.kept).map((m) => m.similarity);
    c.lowest = sims.length ? Math.min(...sims) : 1;
    c.highest = sims.length ? Math.max(...sims) : 1;
    c.haystack = c.members.map((m) => `${m.id}\n${m.text}`).join("\n").toLowerCase();
  }

  function memberTitle(m) {
    return m.kept ? `${m.id} (kept)` : m.id;
  }

  function memberNote(m) {
    const parts = [];
    if (!m.kept) parts.push(`similarity to the kept document ${fmt(m.similarity)}`);
    else parts.push("the kept document");
    parts.push(`${number(m.chars)} characters`);
    if (m.cut) parts.push(`cut here at ${number(data.selection.text_chars)} of ${number(m.chars)} characters`);
    return parts.join(" · ");
  }

  function showPair(view, a, b) {
    sideBySide(
      view,
      { title: memberTitle(a), note: memberNote(a), text: a.text },
      { title: memberTitle(b), note: memberNote(b), text: b.text },
    );
  }

  function simCell(m) {
    const td = element("td", "num");
    if (m.kept) {
      td.append(element("span", "badge kept", "kept"));
      return td;
    }
    td.append(fmt(m.similarity));
    const bar = element("span", "simbar");
    const fill = element("span");
    fill.style.width = `${Math.round(Math.max(0, Math.min(1, m.similarity)) * 100)}%`;
    bar.append(fill);
    td.append(bar);
    return td;
  }

  function renderBody(c, body) {
    body.replaceChildren();
    const shown = c.members.length;
    const notes = [];
    if (c.hidden > 0) {
      notes.push(
        `Showing the kept document and the ${shown - 1} members least similar to it; ` +
          `${number(c.hidden)} more members are not shown (--report-members).`,
      );
    }
    if (c.members.some((m) => m.cut)) {
      notes.push(`Some texts are cut at ${number(data.selection.text_chars)} characters (--report-text-chars); each cut is said below.`);
    }
    if (c.sampled) notes.push("This cluster is in the random sample of the smaller clusters.");
    for (const n of notes) body.append(element("p", "note", n));

    // Two members side by side, chosen in two lists.
    const tools = element("div", "toolbar");
    const pick = (label, selected) => {
      const l = element("label", null, label);
      const s = element("select");
      c.members.forEach((m, i) => {
        const o = element("option", null, m.kept ? `${m.id} (kept)` : `${m.id} (${fmt(m.similarity)})`);
        o.value = String(i);
        s.append(o);
      });
      s.value = String(selected);
      l.append(s);
      tools.append(l);
      return s;
    };
    const keptIndex = c.members.findIndex((m) => m.kept);
    let weakest = keptIndex === 0 ? 1 : 0;
    c.members.forEach((m, i) => {
      if (!m.kept && m.similarity < c.members[weakest].similarity) weakest = i;
    });
    const selA = pick("Left", keptIndex);
    const selB = pick("Right", weakest);
    const go = element("button", null, "Side by side");
    go.type = "button";
    tools.append(go);

    const table = element("table", "members");
    const head = element("thead");
    const hr = element("tr");
    for (const h of ["Document", "Similarity to kept", "Characters", "Text", ""]) hr.append(element("th", null, h));
    head.append(hr);
    table.append(head);
    const tb = element("tbody");
    const view = element("div", "sbs-view");
    c.members.forEach((m, i) => {
      const tr = element("tr");
      if (m.kept) tr.className = "kept";
      tr.append(element("td", "id", m.id));
      tr.append(simCell(m));
      tr.append(element("td", "num", number(m.chars)));
      const snippet = m.text.length > 220 ? `${m.text.slice(0, 220)}…` : m.text;
      tr.append(element("td", "text", snippet));
      const act = element("td");
      if (!m.kept) {
        const b = element("button", "link", "compare with kept");
        b.type = "button";
        b.addEventListener("click", () => {
          selA.value = String(keptIndex);
          selB.value = String(i);
          showPair(view, c.members[keptIndex], m);
          view.scrollIntoView({ block: "nearest" });
        });
        act.append(b);
      }
      tr.append(act);
      tb.append(tr);
    });
    table.append(tb);
    go.addEventListener("click", () => showPair(view, c.members[+selA.value], c.members[+selB.value]));
    body.append(table, tools, view);
    showPair(view, c.members[keptIndex], c.members[weakest]);
  }

  function clusterItem(c) {
    const li = element("li");
    li.dataset.cluster = String(c.number);
    const det = element("details");
    const sum = element("summary");
    const head = element("span", "cluster-head");
    head.append(element("span", "size", `${number(c.size)} documents`));
    head.append(` · cluster ${c.number} · weakest link ${fmt(c.weakest)} · least similar to kept ${fmt(c.lowest)}`);
    if (c.sampled) head.append(element("span", "badge", "sample"));
    const kept = c.members.find((m) => m.kept);
    head.append(element("span", "snippet", `kept: ${kept.id} · ${kept.text.slice(0, 160)}`));
    sum.append(head);
    det.append(sum);
    const body = element("div", "cluster-body");
    det.append(body);
    let rendered = false;
    det.addEventListener("toggle", () => {
      if (det.open && !rendered) {
        rendered = true;
        renderBody(c, body);
      }
    });
    li.append(det);
    return li;
  }

  const items = new Map();
  function item(c) {
    let li = items.get(c);
    if (!li) {
      li = clusterItem(c);
      items.set(c, li);
    }
    return li;
  }

  function apply() {
    const q = query.value.trim().toLowerCase();
    const lo = minSim.value === "" ? 0 : +minSim.value;
    const hi = maxSim.value === "" ? 1 : +maxSim.value;
    let shown = data.clusters.filter((c) => {
      if (q && !c.haystack.includes(q)) return false;
      return c.members.some((m) => !m.kept && m.similarity >= lo - 1e-9 && m.similarity <= hi + 1e-9);
    });
    const by = order.value;
    shown = shown.slice();
    if (by === "weakest") shown.sort((a, b) => a.lowest - b.lowest || b.size - a.size);
    else if (by === "strongest") shown.sort((a, b) => b.lowest - a.lowest || b.size - a.size);
    // "size": the data's own order, largest first.
    list.replaceChildren(...shown.map(item));
    count.textContent = `${number(shown.length)} of ${number(data.clusters.length)} clusters on this page`;
  }

  for (const el of [query, minSim, maxSim, order]) el.addEventListener("input", apply);
  apply();
})();
