// Number, duration, cost and time formats shared by every page.

export function tokens(n) {
  if (n === null || n === undefined) return "";
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

export function cost(usd) {
  if (usd === null || usd === undefined) return "unpriced";
  if (usd === 0) return "$0";
  if (usd < 0.01) return `$${usd.toFixed(6)}`;
  return `$${usd.toFixed(4)}`;
}

// Only LLM attempts are priced: a node with no attempt at or under it has no cost to show ("–"),
// while a completed attempt whose model has no price is "unpriced". A failed attempt that billed
// nothing costs $0 (the API says 0); one running or cut off has no cost yet ("–"), as the CLI counts it.
export function selfCost(row) {
  if (row.kind !== "llm") return "–";
  return row.self.cost_usd === null && row.status !== "ok" ? "–" : cost(row.self.cost_usd);
}

export function inclusiveCost(row) {
  const priced = (row.kind === "llm" && row.status === "ok") || row.inclusive.cost_usd !== null || row.inclusive.tokens > 0;
  return priced ? cost(row.inclusive.cost_usd) : "–";
}

// A ledger record's cost: a failed LLM attempt without one billed nothing ($0), as `billing summary`
// counts it (not unpriced); an interrupted one's is unknown ("–").
export function recordCost(record) {
  if (record.type !== "llm") return "";
  if (record.cost_usd === null || record.cost_usd === undefined) {
    if (record.status === "failed") return "$0";
    if (record.status !== "ok") return "–";
  }
  return cost(record.cost_usd);
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "…";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)}s`;
  const minutes = Math.floor(ms / 60000);
  return `${minutes}m${Math.round((ms % 60000) / 1000)}s`;
}

export function when(iso) {
  if (!iso) return "";
  // Sessions give nanosecond ISO times in UTC; seconds are enough here.
  return String(iso).replace("T", " ").slice(0, 19);
}
