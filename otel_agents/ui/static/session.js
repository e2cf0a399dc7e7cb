// A session page: its header (runs, Jaeger links, totals), tabs, deep links in the URL, and the live feed.
import { getJSON, el, clear, errorBox, visibleText } from "/static/api.js";
import * as fmt from "/static/format.js";
import { TreeView } from "/static/tree.js";
import { showDialog, showPerspective } from "/static/conversation.js";
import { showCosts } from "/static/costs.js";
import { LiveFeed } from "/static/live.js";

const VIEWS = [["tree", "Tree"], ["dialog", "Dialog"], ["perspective", "Perspective"], ["costs", "Costs"]];

export function showSession(main, sessionId) {
  document.getElementById("crumb").textContent = sessionId;
  const base = `/api/sessions/${encodeURIComponent(sessionId)}`;
  const header = el("section", { class: "session-head", id: "session-head" });
  const tabs = el("nav", { class: "tabs", role: "tablist" });
  const pane = el("section", { class: "pane", id: "pane" });
  main.append(header, tabs, pane);
  const liveState = document.getElementById("live-state");

  // The URL is the page's state: ?view=&node=&agents=&agent=&message=
  const link = {
    get(key) { return new URLSearchParams(location.search).get(key); },
    set(changes, push = false) {
      const url = new URL(location.href);
      for (const [key, value] of Object.entries(changes)) {
        if (value === null || value === undefined || value === "") url.searchParams.delete(key);
        else url.searchParams.set(key, value);
      }
      if (url.href !== location.href) history[push ? "pushState" : "replaceState"](null, "", url);
    },
  };

  let session = null;
  let tree = null;
  let closeView = null;
  let shownView = null;
  let refreshTimer = null;
  let feed = null;
  let gone = false;

  function drawHeader() {
    clear(header);
    const status = el("span", { class: `status ${session.status}`, id: "session-status" }, session.status);
    header.append(el("h1", {}, session.title || session.id), el("div", { class: "facts" },
      status, session.live ? el("span", { class: "live-badge", id: "session-live" }, "live") : null,
      ` created ${fmt.when(session.created)} · updated ${fmt.when(session.updated)} · `,
      `${session.agent_count} agents · ${session.totals.tokens === null ? "?" : fmt.tokens(session.totals.tokens)} tokens · ${fmt.cost(session.totals.cost_usd)} · ${session.node_count} nodes`));
    if (session.notes.length) { // what loading had to say (damaged streams, no meta.json): the first, all on hover
      const more = session.notes.length > 1 ? ` (+${session.notes.length - 1} more)` : "";
      header.append(el("p", { class: "problem small", id: "session-notes", title: session.notes.join("\n") }, session.notes[0] + more));
    }
    if (session.forked_from) { // as `sessions list` says it, the source a link
      const source = session.forked_from;
      header.append(el("p", { class: "muted small", id: "session-fork" }, "fork of ",
        el("a", { href: `/s/${encodeURIComponent(source.session)}`, "data-nav": true }, source.session),
        source.message ? ` at ${source.message}` : ""));
    }
    const runs = el("ol", { class: "runs", id: "runs" });
    for (const run of session.runs) {
      runs.append(el("li", { dataset: { trace: run.trace_id || "" } },
        el("span", { class: `status ${run.status}` }, run.status), " ",
        el("span", { class: "prompt", title: run.prompt || null }, run.prompt || ""),
        el("span", { class: "muted small" }, ` trace ${run.trace_id || "?"} `),
        run.jaeger_url ? el("a", { href: run.jaeger_url, class: "jaeger", target: "_blank", rel: "noopener noreferrer" }, "open in Jaeger") : null));
    }
    header.append(runs);
    document.title = visibleText(`otel-agents: ${session.title || session.id}`);
  }

  function drawTabs(current) {
    clear(tabs);
    for (const [name, label] of VIEWS) {
      tabs.append(el("button", { role: "tab", class: name === current ? "tab active" : "tab", "aria-selected": String(name === current),
        dataset: { view: name }, onclick: () => open(name, true) }, label));
    }
  }

  function open(view, push = false) {
    if (closeView) closeView();
    closeView = null;
    if (!VIEWS.some(([name]) => name === view)) view = "tree";
    if (push) link.set({ view: view === "tree" ? null : view, message: null, from: null }, true);
    drawTabs(view);
    shownView = view;
    clear(pane);
    const context = { base, link, pane, get session() { return session; }, firstPage: prefetch };
    prefetch = null;
    if (view === "tree") {
      tree = new TreeView(pane, context);
      closeView = () => { tree.close(); tree = null; };
    } else if (view === "dialog") closeView = showDialog(context);
    else if (view === "perspective") closeView = showPerspective(context);
    else closeView = showCosts(context);
  }

  async function reloadSession() {
    try {
      session = await getJSON(base);
    } catch (error) {
      if (!session) clear(header).append(errorBox(error));
      return;
    }
    if (gone) return;
    drawHeader();
    if (tree) tree.showCount(); // the tree's counter says the same node count as the header
  }

  // The tree's first page is asked for beside the session itself: the first screen waits for one round trip, not two.
  const firstView = link.get("view") || "tree";
  let prefetch = firstView === "tree" ? getJSON(`${base}/nodes`, { offset: 0, limit: 200 }) : null;
  if (prefetch) prefetch.catch(() => {}); // a failure shows when the tree asks again
  const firstPage = prefetch;

  (async () => {
    try {
      session = await getJSON(base);
    } catch (error) {
      header.append(errorBox(error));
      return;
    }
    if (gone) return;
    drawHeader();
    open(firstView);
    // The first page may come from an older load than the session's detail: the feed starts at the
    // earlier of their cursors, so a node that ended between the two reads is replayed, not lost.
    const pageCursor = firstPage ? await firstPage.then((page) => page.cursor, () => null) : null;
    if (gone) return;
    feed = new LiveFeed(`${base}/live`, {
      nodes: (rows) => { if (tree) tree.applyLive(rows); },
      status: (state) => {
        if (state.status !== session.status || state.live !== session.live) reloadSession();
      },
      // New transcript entries: the dialog or perspective shown is read again (at most once a second).
      records: () => {
        if (shownView !== "dialog" && shownView !== "perspective") return;
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(() => { if (!gone) open(shownView); }, 1000);
      },
      reconnected: () => { reloadSession(); if (tree) tree.refresh(); },
      gone: (message) => {
        const status = document.getElementById("session-status");
        if (status) { status.className = "status gone"; status.textContent = "removed"; }
        const badge = document.getElementById("session-live");
        if (badge) badge.remove();
        header.prepend(el("p", { class: "error", id: "session-gone", role: "alert" }, message));
      },
      state: (text) => { liveState.hidden = !text; liveState.textContent = text; },
    }, earliest(session.cursor, pageCursor));
  })();

  return () => {
    gone = true;
    clearTimeout(refreshTimer);
    if (closeView) closeView();
    if (feed) feed.close();
    liveState.hidden = true;
  };
}

// The earlier of two live cursors ("<spans offset>.<events offset>"), part by part; null when neither is known.
function earliest(a, b) {
  if (!a || !b) return a || b || null;
  const [x, y] = [a, b].map((cursor) => cursor.split(".").map(Number));
  return `${Math.min(x[0], y[0])}.${Math.min(x[1], y[1])}`;
}
