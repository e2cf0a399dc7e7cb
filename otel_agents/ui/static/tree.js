// The session tree as a virtualised waterfall: children load lazily and in pages; only visible rows are in the DOM.
import { getJSON, el, clear, errorBox, colorClass } from "/static/api.js";
import * as fmt from "/static/format.js";
import { showDetails } from "/static/details.js";

const ROW_HEIGHT = 24; // px; must match .tree .row in style.css
const OVERSCAN = 10;
const INDENT = 12; // px per tree level
const PAGE = 200;

export class TreeView {
  constructor(pane, context) {
    this.context = context;
    this.nodes = new Map(); // span id -> {row, depth, expanded, children: [id] | null, total}
    this.top = { children: null, total: 0, depth: -1, expanded: true };
    this.flat = [];
    this.extent = 1;
    this.selected = context.link.get("node");
    this.pending = new Set(); // parents whose next page is on its way
    this.closed = false;

    this.follow = el("input", { type: "checkbox", id: "follow", checked: true });
    const toolbar = el("div", { class: "toolbar" },
      el("label", {}, this.follow, " expand running runs"),
      el("span", { class: "muted", id: "tree-count" }));
    this.count = toolbar.lastChild;
    const head = el("div", { class: "row head" },
      el("span", { class: "label" }, "node"), el("span", { class: "st" }, "status"),
      el("span", { class: "dur" }, "time"), el("span", { class: "tok", title: "tokens: self / inclusive" }, "tokens s / incl"),
      el("span", { class: "cost", title: "cost: self / inclusive" }, "cost self / incl"), el("span", { class: "wf" }, "timeline"));
    this.spacer = el("div", { class: "spacer" });
    this.viewport = el("div", { class: "tree", id: "tree", tabindex: "0" }, this.spacer);
    this.problem = el("div");
    this.details = el("aside", { class: "details", id: "details" }, el("p", { class: "muted" }, "Select a node to see its details."));
    pane.append(el("div", { class: "split wide-tree" }, el("div", { class: "tree-side" }, toolbar, this.problem, head, this.viewport), this.details));

    this.viewport.addEventListener("scroll", () => this.schedule());
    this.viewport.addEventListener("click", (event) => this.onClick(event));
    this.viewport.addEventListener("keydown", (event) => this.onKey(event));
    this.resize = () => this.schedule();
    window.addEventListener("resize", this.resize);
    this.start();
  }

  async start() {
    await this.loadPage(null);
    if (this.selected) await this.reveal(this.selected);
  }

  close() {
    this.closed = true;
    window.removeEventListener("resize", this.resize);
  }

  holder(id) {
    return id === null ? this.top : this.nodes.get(id);
  }

  // The next page of a parent's children (the runs when parent is null).
  async loadPage(parent) {
    const holder = this.holder(parent);
    if (!holder || this.pending.has(parent)) return;
    this.pending.add(parent);
    const offset = holder.children ? holder.children.length : 0;
    try {
      const early = parent === null && offset === 0 ? this.context.firstPage : null;
      this.context.firstPage = null;
      const page = await (early || getJSON(`${this.context.base}/nodes`, { parent, offset, limit: PAGE })).catch(
        (error) => (early ? getJSON(`${this.context.base}/nodes`, { parent, offset, limit: PAGE }) : Promise.reject(error)));
      if (this.closed) return;
      if (!holder.children) holder.children = [];
      holder.total = page.total;
      for (const row of page.nodes) {
        let entry = this.nodes.get(row.id);
        if (entry) this.update(row);
        else {
          entry = { row, depth: holder.depth + 1, expanded: false, children: null, total: row.child_count, listed: false };
          this.nodes.set(row.id, entry);
          this.stretch(row);
        }
        if (!entry.listed) { holder.children.push(row.id); entry.listed = true; }
      }
      if (page.nodes.length === 0) holder.total = holder.children.length; // nothing more to ask for
      clear(this.problem);
    } catch (error) {
      clear(this.problem).append(errorBox(error));
    } finally {
      this.pending.delete(parent);
    }
    this.rebuild();
  }

  async expand(id, open = true) {
    const entry = this.nodes.get(id);
    if (!entry) return;
    entry.expanded = open;
    if (open && entry.children === null && entry.row.child_count > 0) await this.loadPage(id);
    this.rebuild();
  }

  // Expands a deep-linked node's ancestors (paging until each is found), selects it and scrolls to it.
  async reveal(id) {
    let detail;
    try {
      detail = await getJSON(`${this.context.base}/nodes/${encodeURIComponent(id)}`);
    } catch (error) {
      clear(this.problem).append(errorBox(error));
      return;
    }
    const chain = [...(detail.ancestors || [])];
    if (chain.length > 1 && chain[0] === detail.node.parent) chain.reverse(); // outermost first
    let parent = null;
    for (const ancestor of [...chain, id]) {
      while (!this.nodes.has(ancestor)) {
        const holder = this.holder(parent);
        if (!holder || (holder.children && holder.children.length >= holder.total)) break;
        const before = holder.children ? holder.children.length : 0;
        await this.loadPage(parent);
        if ((holder.children ? holder.children.length : 0) === before) break;
      }
      if (ancestor !== id) await this.expand(ancestor, true);
      parent = ancestor;
    }
    this.select(id, detail);
    const index = this.flat.findIndex((item) => item.id === id);
    if (index >= 0) this.viewport.scrollTop = Math.max(0, index * ROW_HEIGHT - this.viewport.clientHeight / 3);
    this.schedule();
  }

  select(id, detail = null) {
    this.selected = id;
    this.context.link.set({ node: id });
    this.schedule();
    showDetails(this.details, this.context, id, detail);
  }

  onClick(event) {
    const target = event.target;
    const rowNode = target.closest(".row");
    if (!rowNode || !rowNode.dataset.id) return;
    const id = rowNode.dataset.id;
    if (target.closest(".toggle")) {
      const entry = this.nodes.get(id);
      this.expand(id, !entry.expanded);
    } else {
      this.select(id);
    }
  }

  // Up/Down move the selection, Right opens a node (or goes to its first child), Left closes it (or goes
  // to its parent). Every arrow is ours while the tree has focus: the browser must not also scroll the tree.
  onKey(event) {
    if (!["ArrowDown", "ArrowUp", "ArrowRight", "ArrowLeft"].includes(event.key)) return;
    event.preventDefault();
    const index = this.flat.findIndex((item) => item.id === this.selected);
    const entry = index >= 0 ? this.flat[index].entry : null;
    let target = null;
    if (event.key === "ArrowDown") target = this.flat.slice(index + 1).find((item) => item.entry);
    else if (event.key === "ArrowUp" && index > 0) target = this.flat.slice(0, index).reverse().find((item) => item.entry);
    else if (event.key === "ArrowRight" && entry && entry.row.child_count > 0 && !entry.expanded) this.expand(entry.row.id, true);
    else if (event.key === "ArrowRight" && entry && entry.expanded) target = this.flat[index + 1] && this.flat[index + 1].entry ? this.flat[index + 1] : null;
    else if (event.key === "ArrowLeft" && entry && entry.expanded) this.expand(entry.row.id, false);
    else if (event.key === "ArrowLeft" && entry && entry.row.parent) target = this.flat.find((item) => item.id === entry.row.parent);
    if (!target) return;
    this.select(target.id);
    const top = this.flat.indexOf(target) * ROW_HEIGHT;
    if (top < this.viewport.scrollTop) this.viewport.scrollTop = top;
    else if (top + ROW_HEIGHT > this.viewport.scrollTop + this.viewport.clientHeight) this.viewport.scrollTop = top + ROW_HEIGHT - this.viewport.clientHeight;
  }

  update(row) {
    const entry = this.nodes.get(row.id);
    entry.row = row;
    if (entry.children === null) entry.total = row.child_count;
    this.stretch(row);
  }

  stretch(row) {
    const end = row.start_ms + (row.duration_ms ?? Math.max(0, Date.now() - this.context.session.start_ms_epoch - row.start_ms));
    if (end > this.extent) this.extent = end;
  }

  // Rows from the live feed: known ones updated in place, new ones inserted under a loaded parent.
  applyLive(rows) {
    for (const row of rows) {
      if (this.nodes.has(row.id)) { this.update(row); this.nodes.get(row.id).fresh = Date.now(); continue; }
      const holder = this.holder(row.parent ?? null);
      if (!holder) continue; // its parent is not loaded: it arrives when the parent is expanded
      if (holder !== this.top) holder.row.child_count = Math.max(holder.row.child_count, (holder.children || []).length + 1);
      if (holder.children === null) { holder.total = Math.max(holder.total, holder.row.child_count); continue; }
      const complete = holder.children.length >= holder.total;
      holder.total += 1;
      if (!complete) continue; // a later page brings it
      this.nodes.set(row.id, { row, depth: holder.depth + 1, expanded: false, children: null, total: row.child_count, listed: true, fresh: Date.now() });
      const at = holder.children.findIndex((other) => this.nodes.get(other).row.start_ms > row.start_ms);
      if (at < 0) holder.children.push(row.id); else holder.children.splice(at, 0, row.id);
      this.stretch(row);
    }
    // Each running run is opened once; a run the user closes stays closed.
    for (const row of rows) {
      const entry = this.nodes.get(row.id);
      if (entry && entry.depth === 0 && row.status === "running" && this.follow.checked && !entry.followed) {
        entry.followed = true;
        this.expand(row.id, true);
      }
    }
    this.rebuild();
  }

  // Re-reads every loaded page (after the live feed was away); selection and expansion stay.
  async refresh() {
    const parents = [null, ...[...this.nodes.entries()].filter(([, e]) => e.expanded && e.children !== null).map(([id]) => id)];
    for (const parent of parents) {
      const holder = this.holder(parent);
      if (!holder) continue;
      const had = holder.children || [];
      for (const id of had) this.nodes.get(id).listed = false;
      holder.children = [];
      holder.total = 0;
      for (;;) {
        const before = holder.children.length;
        await this.loadPage(parent);
        const have = holder.children.length;
        if (this.closed || have === before || have >= Math.min(had.length, holder.total)) break;
      }
    }
    this.rebuild();
  }

  rebuild() {
    const flat = [];
    const walk = (holder) => {
      if (!holder.children) return;
      for (const id of holder.children) {
        const entry = this.nodes.get(id);
        flat.push({ id, entry });
        if (entry.expanded) walk(entry);
      }
      if (holder.children.length < holder.total) flat.push({ more: holder === this.top ? null : holder.row.id, depth: holder.depth + 1 });
    };
    walk(this.top);
    this.flat = flat;
    this.showCount();
    this.spacer.style.height = `${flat.length * ROW_HEIGHT}px`;
    this.schedule();
  }

  // Also called when the session's detail is read again (a run ended): its node_count is the newer word.
  // While a run goes on the detail is older than the live rows: the tree holds at least what it loaded.
  showCount() {
    const total = Math.max(this.context.session.node_count, this.nodes.size);
    this.count.textContent = `${total} nodes, ${this.nodes.size} loaded`;
  }

  schedule() {
    if (this.frame || this.closed) return;
    this.frame = requestAnimationFrame(() => { this.frame = null; this.render(); });
  }

  render() {
    const top = this.viewport.scrollTop;
    const height = this.viewport.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.flat.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    const rows = [];
    for (let i = first; i < last; i++) {
      const item = this.flat[i];
      if (item.entry) rows.push(this.drawRow(item.entry, i));
      else {
        rows.push(el("div", { class: "row more", dataset: { more: item.more ?? "" } }, el("span", { class: "label" }, "loading more…")));
        rows[rows.length - 1].style.top = `${i * ROW_HEIGHT}px`;
        rows[rows.length - 1].firstChild.style.paddingLeft = `${item.depth * INDENT + 4}px`;
        this.loadPage(item.more);
      }
    }
    clear(this.spacer).append(...rows);
  }

  drawRow(entry, index) {
    const row = entry.row;
    const classes = ["row", `kind-${row.kind}`, `st-${row.status}`];
    if (row.id === this.selected) classes.push("selected");
    if (row.retry_of) classes.push("retry");
    if (entry.fresh && Date.now() - entry.fresh < 1500) classes.push("fresh");
    const toggle = row.child_count > 0
      ? el("button", { class: "toggle", "aria-label": entry.expanded ? "collapse" : "expand", "aria-expanded": String(entry.expanded) }, entry.expanded ? "▾" : "▸")
      : el("span", { class: "toggle-none" });
    const attempt = row.kind === "llm" && row.attempt ? ` attempt ${row.attempt}` : "";
    const name = (row.name || "") + attempt;
    // The name gives way (an ellipsis) before the path label, kind or agent; the tooltip has it all.
    const label = el("span", { class: "label", title: [row.label, row.kind, name, row.agent].filter(Boolean).join(" · ") }, toggle,
      el("span", { class: "path" }, row.label || ""),
      el("span", { class: "kind" }, row.kind),
      el("span", { class: "name" }, name),
      row.retry_of ? el("span", { class: "retry-mark", title: `retry of ${row.retry_of}` }, "↻ retry") : null,
      row.agent ? el("span", { class: `agent ${colorClass(this.agentColor(row.agent_id))}` }, row.agent) : null);
    label.style.paddingLeft = `${entry.depth * INDENT + 4}px`;
    const bar = el("span", { class: `bar ${colorClass(this.agentColor(row.agent_id))}` });
    const duration = row.duration_ms ?? Math.max(0, Date.now() - this.context.session.start_ms_epoch - row.start_ms);
    bar.style.left = `${(100 * row.start_ms) / this.extent}%`;
    bar.style.width = `${Math.max(0.2, (100 * duration) / this.extent)}%`;
    const node = el("div", { class: classes.join(" "), role: "treeitem", dataset: { id: row.id, kind: row.kind, status: row.status, ended: row.duration_ms === null ? "" : "1" } },
      label,
      el("span", { class: `st status ${row.status}` }, row.status),
      el("span", { class: "dur" }, fmt.duration(row.duration_ms)),
      el("span", { class: "tok" }, `${fmt.tokens(row.self.tokens)} / ${fmt.tokens(row.inclusive.tokens)}`),
      el("span", { class: "cost" }, `${fmt.selfCost(row)} / ${fmt.inclusiveCost(row)}`),
      el("span", { class: "wf" }, bar));
    node.style.top = `${index * ROW_HEIGHT}px`;
    return node;
  }

  agentColor(agentId) {
    // Agents created while the page is open arrive with a reloaded session.
    if (!this.colors || (agentId && !this.colors.has(agentId))) this.colors = new Map(this.context.session.agents.map((a) => [a.id, a.color]));
    return this.colors.get(agentId);
  }
}
