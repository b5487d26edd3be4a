// The service's page: its health, its collections, and a text searched or checked against one,
// with the hits side by side. Only the public HTTP API is used (the routes curl would call), on
// this page's own origin; texts from the service are inserted with textContent (shared.js).
"use strict";

(() => {
  const { element, sideBySide, labelCells, t } = Shared;
  Shared.translateStatic();
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = "neardup-token";
  // Stored texts can be large; the side-by-side view shows at most this many characters.
  const VIEW_CHARS = 200000;
  let token = sessionStorage.getItem(TOKEN_KEY) || "";
  let collections = [];

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (token) headers.Authorization = `Bearer ${token}`;
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    let json = null;
    try {
      json = await res.json();
    } catch (_) {
      json = null;
    }
    if (res.status === 401) {
      askToken(token ? "The service refused this token." : "");
      throw new ApiError(401, "a token is needed");
    }
    if (!res.ok) {
      const message = json && json.error ? `${json.error.code}: ${json.error.message}` : `HTTP ${res.status}`;
      throw new ApiError(res.status, message);
    }
    return json;
  }

  function askToken(message) {
    $("token-box").classList.remove("hidden");
    $("token-error").textContent = message;
    $("token").focus();
  }

  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token-error").textContent = "";
    loadCollections().then(() => {
      if (!$("token-error").textContent) $("token-box").classList.add("hidden");
    });
  });

  async function health() {
    const el = $("health");
    try {
      const res = await fetch("/v1/health", { cache: "no-store" });
      const h = await res.json();
      if (h.status === "ok") {
        el.className = "good";
        el.textContent = t("Healthy · neardup {v} · {host}", { v: h.version, host: location.host });
      } else {
        el.className = "bad";
        el.textContent = t("Unhealthy: {why} · neardup {v}", { why: h.reason || h.status, v: h.version });
      }
    } catch (e) {
      el.className = "bad";
      el.textContent = t("The service does not answer ({why}).", { why: e.message });
    }
  }

  async function loadCollections() {
    const status = $("collections-status");
    let list;
    try {
      list = (await api("GET", "/v1/collections")).collections;
    } catch (e) {
      status.textContent = e.status === 401 ? t("Give the token above to see the collections.") : e.message;
      return;
    }
    collections = list.sort((a, b) => a.name.localeCompare(b.name));
    const body = $("collections").querySelector("tbody");
    body.replaceChildren();
    const select = $("collection");
    const before = select.value;
    select.replaceChildren();
    for (const c of collections) {
      const tr = element("tr");
      const lsh = c.lsh ? `${c.lsh.bands} × ${c.lsh.rows}` : c.method === "simhash" ? `Hamming ≤ ${c.hamming}` : "";
      const cells = [
        c.name,
        c.documents === null ? c.error || "unavailable" : c.documents.toLocaleString("en-US"),
        c.method,
        c.threshold,
        lsh,
        c.verification || "",
        t(c.passages ? "yes, with passages" : c.store_text ? "yes" : "no"),
        c.pipeline_id,
      ];
      cells.forEach((v, i) => tr.append(element("td", i === 7 ? "id mono" : i === 0 ? "id" : null, v)));
      body.append(tr);
      const o = element("option", null, t("{c} ({n} documents)", { c: c.name, n: c.documents ?? "?" }));
      o.value = c.name;
      select.append(o);
    }
    labelCells($("collections"));
    if (collections.some((c) => c.name === before)) select.value = before;
    status.textContent = collections.length
      ? t(collections.length === 1 ? "1 collection." : "{n} collections.", { n: collections.length })
      : t("No collections yet: create one with PUT /v1/collections/NAME (see /v1/openapi.json).");
  }

  function current() {
    return collections.find((c) => c.name === $("collection").value);
  }

  function options() {
    const o = {};
    const k = $("top-k").value;
    if (k !== "") o.top_k = Math.max(1, Math.floor(+k));
    const t = $("threshold").value;
    if (t !== "") o.threshold = +t;
    return o;
  }

  function setStatus(text, cls) {
    const s = $("status");
    s.className = `note ${cls || ""}`;
    s.textContent = text;
  }

  // Each side-by-side request takes a ticket; an answer that arrives after a newer request
  // (the first hit's view still loading when another hit is clicked) is dropped.
  let viewTicket = 0;

  async function showSideBySide(c, query, id, similarity) {
    const view = $("view");
    const ticket = ++viewTicket;
    view.replaceChildren(element("p", "note", t("Fetching {id}…", { id })));
    let doc;
    try {
      doc = await api("GET", `/v1/collections/${encodeURIComponent(c.name)}/docs/${encodeURIComponent(id)}`);
    } catch (e) {
      if (ticket === viewTicket) view.replaceChildren(element("p", "bad", e.message));
      return;
    }
    if (ticket !== viewTicket) return;
    if (typeof doc.text !== "string") {
      view.replaceChildren(
        element("p", "note", t("{c} does not store texts (store_text is false), so only the ids and similarities can be shown.", { c: c.name })),
      );
      return;
    }
    const cut = (t) => (t.length > VIEW_CHARS ? t.slice(0, VIEW_CHARS) : t);
    const note = (s, what) =>
      s.length > VIEW_CHARS
        ? `${what}; ${t("cut here at {a} of {b} characters", { a: VIEW_CHARS.toLocaleString("en-US"), b: s.length.toLocaleString("en-US") })}`
        : what;
    sideBySide(
      view,
      { title: t("Your text"), note: note(query, t("{n} characters", { n: query.length.toLocaleString("en-US") })), text: cut(query) },
      { title: id, note: note(doc.text, t("stored in {c} · similarity {x}", { c: c.name, x: similarity.toFixed(3) })), text: cut(doc.text) },
    );
    view.scrollIntoView({ block: "nearest" });
  }

  function renderHits(c, query, hits) {
    const list = $("hits");
    list.replaceChildren();
    viewTicket++;
    $("view").replaceChildren();
    for (const h of hits) {
      const li = element("li", "hit");
      li.dataset.id = h.id;
      const row = element("div", "cluster-body");
      row.append(element("strong", "id", h.id));
      row.append(` · ${t("similarity {x}", { x: h.similarity.toFixed(3) })}`);
      const bar = element("span", "simbar");
      const fill = element("span");
      fill.style.width = `${Math.round(Math.max(0, Math.min(1, h.similarity)) * 100)}%`;
      bar.append(fill);
      row.append(bar, " ");
      if (c.store_text) {
        const b = element("button", "link", t("side by side"));
        b.type = "button";
        b.addEventListener("click", () => showSideBySide(c, query, h.id, h.similarity));
        row.append(b);
      }
      if (h.metadata !== undefined && h.metadata !== null) {
        row.append(element("div", "note mono", `${t("metadata")}: ${JSON.stringify(h.metadata)}`));
      }
      li.append(row);
      list.append(li);
    }
    if (hits.length && c.store_text) showSideBySide(c, query, hits[0].id, hits[0].similarity);
  }

  async function run(kind) {
    const c = current();
    const text = $("text").value;
    if (!c) {
      setStatus(t("Choose a collection first."), "bad");
      return;
    }
    if (!text.trim()) {
      setStatus(t("Paste a text first."), "bad");
      return;
    }
    if (kind === "overlap" && !c.passages) {
      setStatus(t('{c} keeps no passages: create a collection with "passages": true to find copied passages.', { c: c.name }), "bad");
      return;
    }
    setStatus(t(kind === "search" ? "Searching…" : "Checking…"));
    const base = `/v1/collections/${encodeURIComponent(c.name)}`;
    try {
      if (kind === "overlap") {
        const r = await api("POST", `${base}/overlap`, { text });
        $("hits").replaceChildren();
        viewTicket++;
        setStatus(
          r.passages.length
            ? t(r.sources.length === 1 ? "{p} of the text is copied from 1 document of {c}." : "{p} of the text is copied from {n} documents of {c}.", { p: OverlapView.pct(r.copied_chars, r.chars), n: r.sources.length, c: c.name })
            : t("No passage of the text is copied from {c}.", { c: c.name }),
          r.passages.length ? "warn" : "good",
        );
        OverlapView.render($("view"), text, r);
      } else if (kind === "search") {
        const r = await api("POST", `${base}/search`, { text, ...options() });
        const n = r.hits.length;
        setStatus(n ? t(n === 1 ? "1 hit in {c}." : "{n} hits in {c}.", { n, c: c.name }) : t("Nothing in {c} is similar enough.", { c: c.name }));
        renderHits(c, text, r.hits);
      } else {
        const id = $("check-id").value.trim();
        const asked = id ? { id, text, insert: true } : { text, insert: false };
        const r = await api("POST", `${base}/check`, { ...asked, ...options() });
        const n = r.matches.length;
        const what = r.duplicate
          ? t(n === 1 ? (r.inserted ? "A near-duplicate of 1 stored document." : "A near-duplicate of 1 stored document; not inserted.")
                      : (r.inserted ? "A near-duplicate of {n} stored documents." : "A near-duplicate of {n} stored documents; not inserted."), { n })
          : r.inserted
            ? t("New: nothing stored matches it; inserted as {id}.", { id })
            : t("New: nothing stored matches it (not inserted: no id given).");
        setStatus(what, r.duplicate ? "warn" : "good");
        renderHits(c, text, r.matches);
        if (r.inserted) loadCollections();
      }
    } catch (e) {
      setStatus(e.message, "bad");
    }
  }

  $("search").addEventListener("click", () => run("search"));
  $("check").addEventListener("click", () => run("check"));
  $("overlap").addEventListener("click", () => run("overlap"));
  health();
  setInterval(health, 15000);
  loadCollections();
})();
