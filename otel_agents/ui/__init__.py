"""``otel-agents ui``: a read-only web app over saved sessions (Starlette server, JSON API, live updates; docs/ui.md)."""
