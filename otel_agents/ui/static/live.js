// The session's server-sent events, reconnecting by itself after errors and server restarts.

const RETRY_MS = 1000;

export class LiveFeed {
  // cursor: where the stream starts (the session detail's, so nothing written since it was read is missed).
  constructor(url, handlers, cursor = null) {
    this.url = url;
    this.handlers = handlers;
    this.closed = false;
    this.cursor = cursor;
    this.connect(false);
  }

  connect(again) {
    if (this.closed) return;
    // The browser's own reconnection sends Last-Event-ID; a new EventSource says where it was with ?cursor=.
    const url = this.cursor ? `${this.url}?cursor=${encodeURIComponent(this.cursor)}` : this.url;
    const source = new EventSource(url, { withCredentials: true });
    this.source = source;
    let opened = false;
    source.addEventListener("open", () => {
      this.handlers.state("");
      // The browser's own reconnection resumes from Last-Event-ID; a new EventSource has none,
      // so what landed while it was away is fetched again.
      if (again && !opened) this.handlers.reconnected();
      opened = true;
    });
    const keep = (event) => { if (event.lastEventId) this.cursor = event.lastEventId; };
    source.addEventListener("cursor", keep);
    source.addEventListener("records", (event) => {
      keep(event);
      const data = parse(event.data);
      if (data && this.handlers.records) this.handlers.records(data.message_ids || []);
    });
    source.addEventListener("nodes", (event) => {
      keep(event);
      const data = parse(event.data);
      if (data && Array.isArray(data.nodes)) this.handlers.nodes(data.nodes);
    });
    source.addEventListener("status", (event) => {
      keep(event);
      const data = parse(event.data);
      if (data) this.handlers.status(data);
    });
    // The session was removed: its stream ends for good (a reconnection would only meet a 404).
    source.addEventListener("gone", (event) => {
      const data = parse(event.data);
      this.close();
      this.handlers.state("");
      if (this.handlers.gone) this.handlers.gone((data && data.error) || "this session was removed");
    });
    source.addEventListener("error", () => {
      if (this.closed) return;
      this.handlers.state("reconnecting…");
      // The browser retries by itself unless the answer was an error status: then a new source.
      if (source.readyState === EventSource.CLOSED) {
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.connect(true), RETRY_MS);
      }
    });
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.source) this.source.close();
  }
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
