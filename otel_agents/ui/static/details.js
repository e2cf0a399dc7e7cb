// A selected node's details: an LLM attempt's exact context, response, reasoning, usage and cost;
// a tool call's arguments and result; its log lines and hook decisions; its attributes.
import { getJSON, el, clear, errorBox, asText, colorClass } from "/static/api.js";
import * as fmt from "/static/format.js";

let shown = 0; // answers for an earlier selection are dropped

export async function showDetails(panel, context, id, detail = null) {
  const mine = ++shown;
  clear(panel).append(el("p", { class: "muted" }, "Loading…"));
  try {
    detail = detail || (await getJSON(`${context.base}/nodes/${encodeURIComponent(id)}`));
  } catch (error) {
    if (mine === shown) clear(panel).append(errorBox(error));
    return;
  }
  if (mine !== shown) return;
  clear(panel).append(...render(detail, context));
  panel.dataset.node = id;
}

function section(title, ...body) {
  return el("section", { class: "detail-section" }, el("h3", {}, title), ...body);
}

function facts(pairs) {
  const list = el("dl", { class: "facts-list" });
  for (const [key, value] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    list.append(el("dt", {}, key), el("dd", {}, String(value)));
  }
  return list;
}

function pre(value, cls = "") {
  return el("pre", { class: `text ${cls}` }, asText(value));
}

function render(detail, context) {
  const node = detail.node;
  const agent = context.session.agents.find((a) => a.id === node.agent_id);
  const parts = [
    el("h2", {}, el("span", { class: "path" }, node.label || ""), " ", node.kind, " ", node.name || "",
      agent ? el("span", { class: `agent ${colorClass(agent.color)}` }, agent.name) : null),
    facts([
      ["span", node.id], ["status", node.status], ["error", node.error], ["start", fmt.duration(node.start_ms)],
      ["duration", fmt.duration(node.duration_ms)], ["attempt", node.attempt], ["retry of", node.retry_of],
      ["tokens (self)", node.self.tokens], ["tokens (inclusive)", node.inclusive.tokens],
      ["cost (self)", fmt.selfCost(node)], ["cost (inclusive)", fmt.inclusiveCost(node)],
    ]),
  ];
  if (detail.context) parts.push(section("Context sent", contextBlock(detail.context)));
  else if (detail.context_error) parts.push(section("Context sent", el("p", { class: "muted" }, detail.context_error)));
  if (detail.response !== undefined && detail.response !== null) parts.push(section("Response", pre(detail.response, "response")));
  if (detail.reasoning) parts.push(section("Reasoning", pre(detail.reasoning, "reasoning")));
  if (node.kind === "llm") { // only an LLM attempt has usage and a price
    parts.push(section("Usage and cost", pre(detail.usage ?? {}, "usage"),
      facts([["cost", detail.cost_usd === undefined ? undefined : fmt.cost(detail.cost_usd)], ["price source", detail.price_source]])));
  }
  if (detail.tool) {
    parts.push(section(`Tool ${detail.tool.name || ""}`,
      el("h4", {}, "arguments"), pre(detail.tool.arguments, "tool-arguments"),
      el("h4", {}, "result"), pre(detail.tool.result, "tool-result")));
  }
  if (detail.events && detail.events.length) parts.push(section("Log and hook decisions", eventList(detail.events)));
  parts.push(el("details", { class: "attributes" }, el("summary", {}, "attributes"), attributeTable(detail.attributes || {})));
  return parts;
}

function contextBlock(context) {
  const list = el("ol", { class: "context", id: "context-messages", dataset: { span: context.span_id || "" } });
  for (const message of context.messages || []) {
    const item = el("li", { class: `message role-${message.role}`, dataset: { role: message.role || "" } },
      el("div", { class: "role" }, message.role || "", message.name ? ` (${message.name})` : "", message.tool_call_id ? ` ← ${message.tool_call_id}` : ""));
    if (message.content !== undefined && message.content !== null) item.append(pre(message.content, "content"));
    if (message.tool_calls) item.append(el("div", { class: "muted small" }, "tool calls"), pre(message.tool_calls, "tool-calls"));
    list.append(item);
  }
  const tools = context.tools && context.tools.length
    ? el("details", {}, el("summary", {}, `${context.tools.length} tool definitions`), pre(context.tools, "tools"))
    : null;
  return el("div", {}, el("div", { class: "muted small" }, `${context.message_count} messages, agent ${context.agent || ""}, attempt ${context.attempt ?? ""}`), list, tools);
}

function eventList(events) {
  const list = el("ul", { class: "events" });
  for (const event of events) {
    const level = (event.level || "info").toLowerCase();
    list.append(el("li", { class: `event level-${level}` },
      el("span", { class: "level" }, level.toUpperCase()), " ",
      el("span", { class: "muted small" }, fmt.when(event.time)), " ",
      el("span", { class: "event-name" }, event.name || ""),
      event.message ? el("div", { class: "event-message" }, event.message) : null,
      event.attributes && Object.keys(event.attributes).length ? pre(event.attributes, "event-attributes") : null));
  }
  return list;
}

function attributeTable(attributes) {
  const table = el("table", { class: "attrs" });
  for (const key of Object.keys(attributes).sort()) {
    table.append(el("tr", {}, el("th", {}, key), el("td", {}, asText(attributes[key]))));
  }
  return table;
}
