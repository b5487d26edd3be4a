// The report of `neardup overlap`. Its figures and tables are static HTML; this script puts
// them in the reader's language (shared.js), colours the sources' swatches, and draws each
// query's marked text and passages (OverlapView, overlap.js) when its section is first opened.
"use strict";

(() => {
  const data = JSON.parse(document.getElementById("overlap-data").textContent);
  const { t, translateStatic, labelCells } = Shared;

  // The static words, then the few that hold a number.
  translateStatic();
  for (const el of document.querySelectorAll(".more[data-n]")) el.textContent = t("and {n} more", { n: el.dataset.n });
  const note = document.getElementById("detail-note");
  if (note) note.textContent = t("The texts of the {a} most copied queries are below; the other {b} are in the table only.", { a: note.dataset.shown, b: note.dataset.rest });
  for (const table of document.querySelectorAll("table.members")) labelCells(table);
  if (Shared.lang === "zh") document.title = document.title.replace(/^Passage check report/, t("Passage check report"));

  data.forEach((q, rank) => {
    const d = document.getElementById(`q${rank}`);
    if (!d) return;
    for (const sw of d.querySelectorAll(".swatch[data-src]")) OverlapView.paint(sw, Number(sw.dataset.src));
    const drawn = d.querySelector(".ov-drawn");
    let done = false;
    const draw = () => {
      if (d.open && !done) {
        OverlapView.renderGrouped(drawn, q.text, q);
        done = true;
      }
    };
    d.addEventListener("toggle", draw);
    draw();
  });
  // A link from the table opens its query.
  const open = () => {
    const target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.tagName === "DETAILS") target.open = true;
  };
  window.addEventListener("hashchange", open);
  open();
})();
