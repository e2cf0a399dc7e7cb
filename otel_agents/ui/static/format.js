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
