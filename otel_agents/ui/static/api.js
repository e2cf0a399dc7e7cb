// Fetching the JSON API and building DOM nodes; data only ever enters the page as text.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function getJSON(path, params = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => url.searchParams.append(key, v));
    else url.searchParams.set(key, value);
  }
  const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(response.status, (body && body.error) || `HTTP ${response.status}`);
  return body;
}

// el("div", {class: "x", dataset: {id: "1"}, onclick: f}, "text", child, ...): strings become text nodes.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "title") node.setAttribute(key, visibleText(String(value))); // a tooltip is shown text too
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(visibleText(String(child))));
  }
  return node;
}

// Bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) would reorder the text after
// them (a right-to-left override makes JSON read backwards): the page shows each as a visible ⟨U+202E⟩.
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

export function visibleText(text) {
  return text.replace(BIDI_CONTROLS, (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase()}⟩`);
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  append(node, children);
  return node;
}

export function errorBox(error) {
  return el("p", { class: "error", role: "alert" }, String(error && error.message ? error.message : error));
}

// Content may be a string, a list of parts or any JSON: text as is, the rest as indented JSON.
export function asText(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

export function colorClass(color) {
  return Number.isInteger(color) ? `c${((color % 12) + 12) % 12}` : "c-none";
}
