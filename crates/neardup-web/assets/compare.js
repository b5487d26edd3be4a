// The comparison page: the two texts of its data block side by side, shared passages marked.
// Without JavaScript the page shows the same texts unmarked, and every measure.
"use strict";

(() => {
  const data = JSON.parse(document.getElementById("compare-data").textContent);
  Shared.sideBySide(document.getElementById("side-by-side"), data.a, data.b);
})();
