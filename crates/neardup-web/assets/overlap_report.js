// The report of `neardup overlap`: each query of the data block as a section that opens to its
// marked text and passages, drawn by OverlapView (overlap.js) when first opened.
"use strict";

(() => {
  const data = JSON.parse(document.getElementById("overlap-data").textContent);
  const { element } = Shared;
  const list = document.getElementById("query-list");
  data.forEach((q, rank) => {
    const d = element("details", "query");
    d.id = `q${rank}`;
    d.dataset.id = q.id;
    const head = element("summary");
    head.append(element("strong", "id", q.id));
    head.append(
      ` · ${OverlapView.pct(q.copied_chars, q.chars)} copied from ${q.sources.length} source${q.sources.length === 1 ? "" : "s"}` +
        ` · ${q.chars.toLocaleString("en-US")} characters`,
    );
    const body = element("div", "query-body");
    d.append(head, body);
    let drawn = false;
    d.addEventListener("toggle", () => {
      if (d.open && !drawn) {
        OverlapView.render(body, q.text, q);
        drawn = true;
      }
    });
    if (rank === 0) d.open = true;
    list.append(d);
  });
  // A link from the table opens its query.
  const open = () => {
    const target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.tagName === "DETAILS") target.open = true;
  };
  window.addEventListener("hashchange", open);
  open();
})();
