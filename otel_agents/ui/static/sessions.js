// The sessions page: every session, sortable and filterable, live ones marked, polled every 2 s.
import { getJSON, el, clear, errorBox } from "/static/api.js";
import * as fmt from "/static/format.js";

const COLUMNS = [
  ["title", "Title", "title"],
  ["status", "Status", null],
  ["created", "Created", "created"],
  ["updated", "Updated", "updated"],
  ["runs", "Runs", null],
  ["agents", "Agents", null],
  ["tokens", "Tokens", "tokens"],
  ["cost_usd", "Cost", "cost"],
];
const PAGE = 100;
// The API's default order of each sort (docs/ui.md): titles A to Z, everything else newest or largest first.
const defaultOrder = (sort) => (sort === "title" ? "asc" : "desc");
const POLL_MS = 2000;

export function showSessions(main, navigate) {
  document.getElementById("crumb").textContent = "sessions";
  document.title = "otel-agents: sessions";
  const params = new URLSearchParams(location.search);
  const state = {
    q: params.get("q") || "",
    status: params.get("status") || "",
    sort: params.get("sort") || "updated",
    order: params.get("order") || defaultOrder(params.get("sort") || "updated"),
    offset: Number(params.get("offset")) || 0,
  };

  const search = el("input", { type: "search", id: "filter-text", placeholder: "filter by text", value: state.q });
  const status = el("select", { id: "filter-status" },
    ...["", "new", "running", "ok", "failed", "interrupted"].map((s) => el("option", { value: s }, s || "any status")));
  status.value = state.status;
  const count = el("span", { class: "muted", id: "session-count" });
  const head = el("tr");
  const body = el("tbody", { id: "sessions-body" });
  const pager = el("div", { class: "pager" });
  const problem = el("div");
  main.append(el("div", { class: "toolbar" }, search, status, count), problem,
    el("table", { class: "sessions", id: "sessions" }, el("thead", {}, head), body), pager);

  function keepUrl() {
    const url = new URL(location.href);
    for (const [key, value] of Object.entries(state)) {
      if (value && !(key === "sort" && value === "updated") && !(key === "order" && value === defaultOrder(state.sort))) url.searchParams.set(key, value);
      else url.searchParams.delete(key);
    }
    history.replaceState(null, "", url);
  }

  function drawHead() {
    clear(head);
    for (const [, label, sortKey] of COLUMNS) {
      if (!sortKey) { head.append(el("th", {}, label)); continue; }
      const arrow = state.sort === sortKey ? (state.order === "asc" ? " ▲" : " ▼") : "";
      head.append(el("th", { class: "sortable", dataset: { sort: sortKey }, onclick: () => {
        // A new column starts in the API's order for it; the same column again turns it the other way.
        if (state.sort !== sortKey) state.order = defaultOrder(sortKey);
        else state.order = state.order === "asc" ? "desc" : "asc";
        state.sort = sortKey;
        state.offset = 0;
        refresh();
      } }, label + arrow));
    }
  }

  function row(session) {
    const href = `/s/${encodeURIComponent(session.id)}`;
    const statusCell = el("td", {}, el("span", { class: `status ${session.status}` }, session.status));
    if (session.live) statusCell.append(" ", el("span", { class: "live-badge" }, "live"));
    return el("tr", { dataset: { id: session.id }, class: session.live ? "is-live" : "" },
      el("td", {}, el("a", { href, "data-nav": true }, session.title || session.id), el("div", { class: "muted small" }, session.id),
        session.problem ? el("div", { class: "problem small", title: session.problem }, session.problem) : null),
      statusCell,
      el("td", {}, fmt.when(session.created)),
      el("td", {}, fmt.when(session.updated)),
      el("td", { class: "num" }, session.runs ?? "?"),
      el("td", { class: "num" }, session.agents ?? "?"),
      el("td", { class: "num" }, fmt.tokens(session.tokens)),
      el("td", { class: "num" }, fmt.cost(session.cost_usd)));
  }

  let ticket = 0;
  async function refresh() {
    const mine = ++ticket;
    keepUrl();
    drawHead();
    let page;
    try {
      page = await getJSON("/api/sessions", { ...state, limit: PAGE });
    } catch (error) {
      if (mine === ticket) clear(problem).append(errorBox(error));
      return;
    }
    if (mine !== ticket) return; // a newer request answers instead
    clear(problem);
    clear(body).append(...page.sessions.map(row));
    if (!page.sessions.length) body.append(el("tr", {}, el("td", { colspan: COLUMNS.length, class: "muted" }, "no sessions")));
    count.textContent = `${page.total} session${page.total === 1 ? "" : "s"}`;
    clear(pager);
    if (state.offset > 0) pager.append(el("button", { onclick: () => { state.offset = Math.max(0, state.offset - PAGE); refresh(); } }, "previous"));
    if (state.offset + PAGE < page.total) pager.append(el("button", { onclick: () => { state.offset += PAGE; refresh(); } }, "next"));
  }

  let typing = null;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.q = search.value; state.offset = 0; refresh(); }, 150);
  });
  status.addEventListener("change", () => { state.status = status.value; state.offset = 0; refresh(); });
  refresh();
  const timer = setInterval(refresh, POLL_MS);
  return () => { clearInterval(timer); clearTimeout(typing); ticket++; };
}
