// Costs: per agent, per model and over time as SVG drawn here (no plotting library), and the session's ledger rows.
import { getJSON, el, clear, errorBox, svg, colorClass } from "/static/api.js";
import * as fmt from "/static/format.js";

const LEDGER_PAGE = 50;

export function showCosts(context) {
  const charts = el("div", { class: "charts", id: "cost-charts" });
  const ledger = el("section", { class: "ledger", id: "ledger" });
  context.pane.append(charts, ledger);
  let closed = false;
  (async () => {
    let costs;
    try {
      costs = await getJSON(`${context.base}/costs`);
    } catch (error) {
      charts.append(errorBox(error));
      return;
    }
    if (closed) return;
    charts.append(
      figure("Cost per agent", bars(costs.per_agent.map((a) => ({ label: a.agent, value: a.cost_usd ?? 0, note: `${fmt.cost(a.cost_usd)} · ${fmt.tokens(a.tokens)} tok`, color: a.color })), "per-agent")),
      figure("Cost per model", bars(costs.per_model.map((m) => ({ label: m.model, value: m.cost_usd ?? 0, note: `${fmt.cost(m.cost_usd)} · ${fmt.tokens(m.tokens)} tok · ${m.calls} calls` })), "per-model")),
      figure("Tokens per agent", bars(costs.per_agent.map((a) => ({ label: a.agent, value: a.tokens ?? 0, note: fmt.tokens(a.tokens), color: a.color })), "tokens-per-agent")),
      figure("Cumulative cost over time", line(costs.over_time)));
  })();
  showLedger(context, ledger, 0, () => closed);
  return () => { closed = true; };
}

function figure(title, drawing) {
  return el("figure", { class: "chart" }, el("figcaption", {}, title), drawing);
}

function bars(items, id) {
  const rowHeight = 22;
  const width = 480;
  const labelWidth = 160;
  const height = Math.max(1, items.length) * rowHeight + 4;
  const max = Math.max(...items.map((i) => i.value), 0) || 1;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", id: `chart-${id}` });
  items.forEach((item, index) => {
    const y = index * rowHeight + 2;
    const barWidth = ((width - labelWidth - 150) * item.value) / max;
    chart.append(
      svg("text", { x: labelWidth - 6, y: y + 15, "text-anchor": "end", class: "chart-label" }, truncate(item.label, 24)),
      svg("rect", { x: labelWidth, y: y + 3, width: Math.max(1, barWidth), height: rowHeight - 6, class: `chart-bar ${colorClass(item.color)}` }),
      svg("text", { x: labelWidth + barWidth + 6, y: y + 15, class: "chart-note" }, item.note));
  });
  if (!items.length) chart.append(svg("text", { x: 4, y: 16, class: "chart-note" }, "nothing billed"));
  return chart;
}

function line(points) {
  const width = 480;
  const height = 160;
  const pad = 36;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", id: "chart-over-time" });
  if (!points.length) {
    chart.append(svg("text", { x: 4, y: 16, class: "chart-note" }, "nothing billed"));
    return chart;
  }
  const maxT = Math.max(...points.map((p) => p.t_ms), 1);
  const maxCost = Math.max(...points.map((p) => p.cost_usd ?? 0)) || 1;
  const x = (t) => pad + ((width - 2 * pad) * t) / maxT;
  const y = (c) => height - pad / 2 - ((height - pad) * c) / maxCost;
  const path = points.map((p, i) => `${i ? "L" : "M"}${x(p.t_ms).toFixed(1)},${y(p.cost_usd ?? 0).toFixed(1)}`).join(" ");
  chart.append(
    svg("line", { x1: pad, y1: height - pad / 2, x2: width - pad, y2: height - pad / 2, class: "chart-axis" }),
    svg("path", { d: path, class: "chart-line", fill: "none" }),
    svg("text", { x: pad, y: 12, class: "chart-note" }, `${fmt.cost(maxCost)} · ${fmt.tokens(points[points.length - 1].tokens)} tokens`),
    svg("text", { x: width - pad, y: height - 2, "text-anchor": "end", class: "chart-note" }, fmt.duration(maxT)));
  return chart;
}

function truncate(text, length) {
  text = String(text ?? "");
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

const LEDGER_COLUMNS = [
  ["ts", (r) => fmt.when(r.ts)], ["run", (r) => r.run], ["path", (r) => r.path], ["agent", (r) => r.agent_name],
  ["type", (r) => r.type], ["status", (r) => r.status], ["model / tool", (r) => r.model || r.tool || ""],
  ["attempt", (r) => r.attempt ?? ""], ["tokens", (r) => (r.tokens ? r.tokens.total : "")],
  ["cost", fmt.recordCost], ["price source", (r) => r.price_source || ""],
];

async function showLedger(context, box, offset, isClosed) {
  let page;
  try {
    page = await getJSON(`${context.base}/ledger`, { offset, limit: LEDGER_PAGE });
  } catch (error) {
    clear(box).append(errorBox(error));
    return;
  }
  if (isClosed()) return;
  const csv = el("a", { href: `${context.base}/ledger.csv`, download: `${context.session.id}.csv`, id: "ledger-csv" }, "download CSV");
  const table = el("table", { class: "ledger-rows", id: "ledger-rows" },
    el("thead", {}, el("tr", {}, ...LEDGER_COLUMNS.map(([name]) => el("th", {}, name)))),
    el("tbody", {}, ...page.records.map((record) => el("tr", { class: `status-${record.status}` },
      ...LEDGER_COLUMNS.map(([, value]) => el("td", {}, String(value(record) ?? "")))))));
  const pager = el("div", { class: "pager" }, el("span", { class: "muted" },
    `records ${page.total ? page.offset + 1 : 0}–${page.offset + page.records.length} of ${page.total} `));
  if (offset > 0) pager.append(el("button", { onclick: () => showLedger(context, box, Math.max(0, offset - LEDGER_PAGE), isClosed) }, "previous"));
  if (offset + LEDGER_PAGE < page.total) pager.append(el("button", { onclick: () => showLedger(context, box, offset + LEDGER_PAGE, isClosed) }, "next"));
  clear(box).append(el("h3", {}, "Ledger ", csv), pager, table);
}
