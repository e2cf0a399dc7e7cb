// Dialog between chosen agents, one agent's perspective, and a message's causality (causes and hearers).
import { getJSON, el, clear, errorBox, asText, colorClass } from "/static/api.js";

// Items a page: a busy agent's thousands of messages are read and drawn one page at a time.
export const PAGE = 200;

// Where the page shown starts (&from= in the URL, so a page is a deep link too).
function firstItem(context) {
  const from = Number(context.link.get("from"));
  return Number.isInteger(from) && from > 0 ? from : 0;
}

// "previous · 201–400 of 12,345 · next" above the list; nothing when everything fits on one page.
function pagerOf(view, offset, go) {
  const bar = el("div", { class: "pager", id: "messages-pager" });
  if (view.total <= PAGE && offset === 0) return bar;
  if (offset > 0) bar.append(el("button", { class: "previous", onclick: () => go(Math.max(0, offset - PAGE)) }, "previous"));
  bar.append(el("span", { class: "muted" }, `${offset + 1}–${offset + view.items.length} of ${view.total}`));
  if (offset + view.items.length < view.total) bar.append(el("button", { class: "next", onclick: () => go(offset + PAGE) }, "next"));
  return bar;
}

function agentChip(context, agentId, label) {
  const agent = context.session.agents.find((a) => a.id === agentId);
  return el("span", { class: `agent ${colorClass(agent ? agent.color : null)}` }, label || (agent ? agent.name : agentId || "?"));
}

// The message list on the left, the clicked message's causality on the right.
function layout(context, controls) {
  const list = el("div", { class: "messages", id: "messages" });
  const causality = el("aside", { class: "details causality", id: "causality" },
    el("p", { class: "muted" }, "Click a message to see its chain of causes and who heard it."));
  context.pane.append(el("div", { class: "toolbar" }, ...controls), el("div", { class: "split" }, list, causality));
  const selectedMessage = context.link.get("message");
  if (selectedMessage) showCausality(context, causality, selectedMessage);
  list.addEventListener("click", (event) => {
    const item = event.target.closest("[data-message]");
    if (!item) return;
    for (const other of list.querySelectorAll(".selected")) other.classList.remove("selected");
    item.classList.add("selected");
    context.link.set({ message: item.dataset.message });
    showCausality(context, causality, item.dataset.message);
  });
  return { list, causality };
}

// The session's agents, plus any a deep link names that the tree does not list (the views know them).
function withLinked(agents, linked) {
  const known = (name) => agents.some((a) => a.id === name || a.name === name || a.path === name);
  return [...agents, ...linked.filter((name) => !known(name)).map((name) => ({ id: name, name, path: name, color: null }))];
}

export function showDialog(context) {
  const wanted = (context.link.get("agents") || "").split(",").filter(Boolean);
  const agents = withLinked(context.session.agents, wanted);
  const chosen = new Set(wanted.length ? wanted : agents.slice(1, 3).map((a) => a.id));
  const boxes = agents.map((agent) => {
    const box = el("input", { type: "checkbox", value: agent.id, checked: chosen.has(agent.id) || chosen.has(agent.name) });
    return el("label", { class: "chooser" }, box, " ", agentChip(context, agent.id, agent.path || agent.name));
  });
  const { list } = layout(context, [el("span", { id: "dialog-agents" }, "Agents: ", ...boxes)]);
  let ticket = 0;
  async function load(offset = 0) {
    const ids = boxes.map((label) => label.querySelector("input")).filter((box) => box.checked).map((box) => box.value);
    context.link.set({ agents: ids.join(","), from: offset || null });
    const mine = ++ticket;
    clear(list);
    if (!ids.length) { list.append(el("p", { class: "muted" }, "Choose agents.")); return; }
    let dialog;
    try {
      dialog = await getJSON(`${context.base}/dialog`, { agents: ids, offset, limit: PAGE });
    } catch (error) {
      if (mine === ticket) list.append(errorBox(error));
      return;
    }
    if (mine !== ticket) return;
    list.append(pagerOf(dialog, offset, load));
    for (const item of dialog.items) {
      list.append(el("article", { class: "message", dataset: { message: item.message_id } },
        el("div", { class: "who" }, agentChip(context, item.speaker_agent_id, item.speaker || "?"),
          el("span", { class: "muted small" }, ` ${item.message_id}`),
          item.heard_by.length ? el("span", { class: "muted small" }, " heard by ", item.heard_by.map((id) => agentChip(context, id))) : null),
        el("pre", { class: "text content" }, asText(item.content))));
    }
    if (!dialog.items.length) list.append(el("p", { class: "muted" }, "Nothing said between these agents."));
  }
  for (const label of boxes) label.querySelector("input").addEventListener("change", () => load(0));
  (async () => {
    const mine = ticket;
    let known = null;
    try {
      known = await transcriptAgents(context);
    } catch {
      known = null; // the dialog's own request says what is wrong
    }
    if (mine !== ticket) return;
    if (known && !known.length) {
      for (const label of boxes) label.querySelector("input").disabled = true;
      clear(list).append(el("p", { class: "muted", id: "no-transcripts" }, NO_TRANSCRIPTS));
      return;
    }
    load(firstItem(context));
  })();
  return () => { ticket++; };
}

// The agents the transcript views know (events.jsonl), in the tree's order, then any only the views list.
// A session imported from another instrumentation's spans has agents in its tree and none here.
async function transcriptAgents(context) {
  const known = (await getJSON(`${context.base}/agents`)).agents;
  const ids = new Set(known.map((a) => a.agent_id));
  const inTree = context.session.agents.filter((a) => ids.has(a.id));
  const listed = new Set(inTree.map((a) => a.id));
  return [...inTree, ...known.filter((a) => !listed.has(a.agent_id)).map((a) => ({ id: a.agent_id, name: a.name, path: a.path, color: null }))];
}

export const NO_TRANSCRIPTS = "This session has no transcripts to show: it was imported from spans without transcript "
  + "records. The Tree and Costs tabs show what its spans say.";

export function showPerspective(context) {
  const asked = context.link.get("agent");
  const picker = el("select", { id: "perspective-agent" });
  const { list } = layout(context, [el("label", {}, "Agent: ", picker)]);
  let ticket = 0;
  async function load(offset = 0) {
    context.link.set({ agent: picker.value, from: offset || null });
    const mine = ++ticket;
    clear(list);
    let view;
    try {
      view = await getJSON(`${context.base}/perspective/${encodeURIComponent(picker.value)}`, { offset, limit: PAGE });
    } catch (error) {
      if (mine === ticket) list.append(errorBox(error));
      return;
    }
    if (mine !== ticket) return;
    list.append(pagerOf(view, offset, load));
    for (const item of view.items) {
      const body = el("article", { class: `message kind-${item.kind}`, dataset: { message: item.message_id || "", kind: item.kind } },
        el("div", { class: "who" }, el("span", { class: "kind-label" }, item.kind), " ",
          item.speaker ? agentChip(context, item.speaker_agent_id, item.speaker) : null,
          item.tool ? el("span", { class: "muted small" }, ` tool ${item.tool}`) : null,
          el("span", { class: "muted small" }, ` ${item.message_id || ""}`)));
      if (item.content !== null && item.content !== undefined && item.content !== "") body.append(el("pre", { class: "text content" }, asText(item.content)));
      for (const call of item.tool_calls || []) {
        body.append(el("div", { class: "tool-call" }, el("span", { class: "muted small" }, `calls ${call.name}`), el("pre", { class: "text" }, asText(call.arguments))));
      }
      list.append(body);
    }
    if (!view.items.length) list.append(el("p", { class: "muted" }, "Nothing in this agent's perspective."));
  }
  // The picker offers the views' agents, not the tree's: an agent only the tree knows has no perspective.
  (async () => {
    const mine = ticket;
    let agents;
    try {
      agents = await transcriptAgents(context);
    } catch (error) {
      if (mine === ticket) list.append(errorBox(error));
      return;
    }
    if (mine !== ticket) return;
    if (!agents.length) {
      picker.disabled = true;
      list.append(el("p", { class: "muted", id: "no-transcripts" }, NO_TRANSCRIPTS));
      return;
    }
    agents = withLinked(agents, asked ? [asked] : []);
    picker.append(...agents.map((a) => el("option", { value: a.id }, a.path || a.name)));
    const match = agents.find((a) => a.id === asked || a.name === asked || a.path === asked);
    picker.value = match ? match.id : agents[0].id;
    picker.addEventListener("change", () => load(0));
    load(firstItem(context));
  })();
  return () => { ticket++; };
}

let causalityTicket = 0;

async function showCausality(context, panel, messageId) {
  const mine = ++causalityTicket;
  clear(panel).append(el("p", { class: "muted" }, "Loading…"));
  const id = encodeURIComponent(messageId);
  let trace;
  let heard;
  try {
    [trace, heard] = await Promise.all([
      getJSON(`${context.base}/messages/${id}/trace`),
      getJSON(`${context.base}/messages/${id}/heard`),
    ]);
  } catch (error) {
    if (mine === causalityTicket) clear(panel).append(errorBox(error));
    return;
  }
  if (mine !== causalityTicket) return;
  const chain = el("ol", { class: "chain", id: "cause-chain" });
  for (const step of trace.chain) {
    const record = step.record || {};
    chain.append(el("li", { dataset: { message: step.message_id } },
      el("div", {}, el("span", { class: "muted small" }, `${step.message_id} ${step.event_type} `),
        agentChip(context, step.agent_id, step.agent), step.link ? el("span", { class: "muted small" }, ` (${step.link})`) : null,
        step.tool ? el("span", { class: "muted small" }, ` tool ${step.tool}`) : null),
      record.content !== undefined && record.content !== null ? el("pre", { class: "text" }, asText(record.content)) : null));
  }
  const hearers = el("ul", { class: "heard", id: "heard-by" });
  for (const ref of heard.references) {
    hearers.append(el("li", {}, agentChip(context, ref.agent_id, ref.agent), el("span", { class: "muted small" }, ` as ${ref.role} · ${ref.message_id}`),
      el("pre", { class: "text" }, asText(ref.content))));
  }
  if (!heard.references.length) hearers.append(el("li", { class: "muted" }, "nobody else"));
  clear(panel).append(el("h3", {}, `Why ${messageId} exists`), chain, el("h3", {}, "Who heard it"), hearers);
}
