// The cluster browser of the dedup report: the clusters in the page's data block, filtered by
// text and by similarity, each opening to its members and a side-by-side view of two of them.
// Each cluster has its own link (#cluster-N). A reviewer can mark members "not a duplicate"
// (kept in this browser's storage) and export the marks as JSON Lines for
// `neardup dedup --decisions FILE`.
// Everything from the data is inserted with textContent (see shared.js).
"use strict";

(() => {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const { element, sideBySide, labelCells, t } = Shared;
  Shared.translateStatic();
  const list = document.getElementById("cluster-list");
  const count = document.getElementById("cluster-count");
  const query = document.getElementById("filter-text");
  const minSim = document.getElementById("filter-min");
  const maxSim = document.getElementById("filter-max");
  const order = document.getElementById("filter-order");
  document.getElementById("cluster-tools").classList.remove("hidden");
  document.getElementById("decision-tools").classList.remove("hidden");

  const exportLink = document.getElementById("export-decisions");
  const decisionCount = document.getElementById("decision-count");

  // The reviewer's marks: member id -> the cluster it was marked in. Kept per report (its
  // title and clusters) in this browser's storage, so a reload keeps them.
  const storeKey = `neardup-decisions:${document.title}:${data.clusters.length}:${data.threshold}`;
  const decisions = new Map();
  try {
    for (const [id, cluster] of JSON.parse(localStorage.getItem(storeKey) || "[]")) decisions.set(id, cluster);
  } catch (e) {
    // No storage (a file opened in a private window): the marks last as long as the page.
  }
  const onDecisions = [];
  function decisionsChanged() {
    try {
      localStorage.setItem(storeKey, JSON.stringify([...decisions]));
    } catch (e) {
      // See above.
    }
    const lines = [...decisions].map(([id, cluster]) =>
      JSON.stringify({ id, decision: "not_duplicate", cluster }));
    const n = lines.length;
    decisionCount.textContent = n
      ? t(n === 1 ? "1 document marked not a duplicate" : "{n} documents marked not a duplicate", { n })
      : t("Nothing marked yet: tick \u201cnot a duplicate\u201d on a member to mark it.");
    exportLink.href = `data:application/x-ndjson;charset=utf-8,${encodeURIComponent(lines.map((l) => `${l}\n`).join(""))}`;
    exportLink.classList.toggle("disabled", n === 0);
    exportLink.setAttribute("aria-disabled", String(n === 0));
    for (const f of onDecisions) f();
  }

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
    return m.kept ? t("{id} (kept)", { id: m.id }) : m.id;
  }

  function memberNote(m) {
    const parts = [];
    if (!m.kept) parts.push(t("similarity to the kept document {x}", { x: fmt(m.similarity) }));
    else parts.push(t("the kept document"));
    parts.push(t("{n} characters", { n: number(m.chars) }));
    if (m.cut) parts.push(t("cut here at {a} of {b} characters", { a: number(data.selection.text_chars), b: number(m.chars) }));
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
      td.append(element("span", "badge kept", t("kept (badge)")));
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
    if (c.sampled) notes.push(t("This cluster is in the random sample of the smaller clusters."));
    for (const n of notes) body.append(element("p", "note", n));

    // Two members side by side, chosen in two lists.
    const tools = element("div", "toolbar");
    const pick = (label, selected) => {
      const l = element("label", null, label);
      const s = element("select");
      c.members.forEach((m, i) => {
        const o = element("option", null, m.kept ? t("{id} (kept)", { id: m.id }) : `${m.id} (${fmt(m.similarity)})`);
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
    const selA = pick(t("Left"), keptIndex);
    const selB = pick(t("Right"), weakest);
    const go = element("button", null, t("Side by side"));
    go.type = "button";
    tools.append(go);

    const table = element("table", "members");
    const head = element("thead");
    const hr = element("tr");
    for (const h of ["Document", "Similarity to kept", "Characters", "Text", "Not a duplicate", ""]) hr.append(element("th", null, h && t(h)));
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
      const decide = element("td");
      if (!m.kept) {
        const box = element("input", "not-duplicate");
        box.type = "checkbox";
        box.title = t("Not a duplicate: keep it (exported with the decisions)");
        box.setAttribute("aria-label", `${m.id} is not a duplicate`);
        box.checked = decisions.has(m.id);
        box.addEventListener("change", () => {
          if (box.checked) decisions.set(m.id, c.number);
          else decisions.delete(m.id);
          decisionsChanged();
        });
        onDecisions.push(() => {
          box.checked = decisions.has(m.id);
        });
        decide.append(box);
      }
      tr.append(decide);
      const act = element("td");
      if (!m.kept) {
        const b = element("button", "link", t("compare with kept"));
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
    labelCells(table);
    const whole = element("button", null, t("Mark every member shown not a duplicate"));
    whole.type = "button";
    whole.addEventListener("click", () => {
      const all = c.members.filter((m) => !m.kept).every((m) => decisions.has(m.id));
      for (const m of c.members) {
        if (m.kept) continue;
        if (all) decisions.delete(m.id);
        else decisions.set(m.id, c.number);
      }
      decisionsChanged();
    });
    tools.append(whole);
    go.addEventListener("click", () => showPair(view, c.members[+selA.value], c.members[+selB.value]));
    body.append(table, tools, view);
    showPair(view, c.members[keptIndex], c.members[weakest]);
  }

  function clusterItem(c) {
    const li = element("li");
    li.dataset.cluster = String(c.number);
    li.id = `cluster-${c.number}`;
    const det = element("details");
    const sum = element("summary");
    const head = element("span", "cluster-head");
    const link = element("a", "permalink", "#");
    link.href = `#cluster-${c.number}`;
    link.title = t("A link to this cluster");
    link.setAttribute("aria-label", `link to cluster ${c.number}`);
    link.addEventListener("click", (e) => e.stopPropagation());
    head.append(link);
    head.append(element("span", "size", t("{n} documents", { n: number(c.size) })));
    head.append(
      ` · ${t("cluster {n}", { n: c.number })} · ${t("weakest link {x}", { x: fmt(c.weakest) })} · ` +
        t("least similar to kept {x}", { x: fmt(c.lowest) }),
    );
    if (c.sampled) head.append(element("span", "badge", t("sample")));
    const reviewed = element("span", "badge reviewed hidden", t("marked"));
    const showReviewed = () =>
      reviewed.classList.toggle("hidden", !c.members.some((m) => decisions.has(m.id)));
    onDecisions.push(showReviewed);
    showReviewed();
    head.append(reviewed);
    const kept = c.members.find((m) => m.kept);
    head.append(element("span", "snippet", `${t("kept: {id}", { id: kept.id })} · ${kept.text.slice(0, 160)}`));
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
      if (det.open && location.hash !== `#cluster-${c.number}`) {
        history.replaceState(null, "", `#cluster-${c.number}`);
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
    count.textContent = t("{a} of {b} clusters on this page", { a: number(shown.length), b: number(data.clusters.length) });
  }

  for (const el of [query, minSim, maxSim, order]) el.addEventListener("input", apply);
  apply();
  decisionsChanged();

  // A link to a cluster (#cluster-N) opens it, the filters cleared if they hide it.
  function openFromHash() {
    const m = /^#cluster-(\d+)$/.exec(location.hash);
    if (!m) return;
    const c = data.clusters.find((x) => String(x.number) === m[1]);
    if (!c) {
      count.textContent = t("Cluster {n} is not among the clusters on this page.", { n: m[1] });
      return;
    }
    if (!list.contains(item(c))) {
      query.value = "";
      minSim.value = "0";
      maxSim.value = "1";
      apply();
    }
    const li = item(c);
    li.querySelector("details").open = true;
    li.scrollIntoView({ block: "start" });
  }
  window.addEventListener("hashchange", openFromHash);
  openFromHash();
})();
