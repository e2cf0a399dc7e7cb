"""The session's pricing snapshot, ``pricing.json``: each price entry its chat spans were priced with, by id.

The runtime puts the entry on the first chat span of a trace that uses it (``otel_agents.llm.price_entry``,
llm/price_snapshot.py); the sink keeps each id once, with the first date it was used, and rewrites the
file atomically when a new one appears (rare: a model per session, again only if its price changed).
Imported and collected sessions get one the same way, from the spans they are written from. The
file holds no message content, so it is never redacted; the session stays self-contained.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import orjson

from otel_agents.persistence.atomic import atomic_write
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

PRICING_FILE = "pricing.json"
PRICING_FORMAT = 1
ENTRY_KEYS = ("model", "price_source", "table", "date", "rates")


class PricingFileError(ValueError):
    """A pricing.json that cannot be read (one line, naming the file)."""


def entry_of_span(span: SpanData) -> tuple[str, dict[str, Any]] | None:
    """(price id, entry) a span carries, or None; a malformed entry is ignored (the cost is on the span anyway)."""
    text = span.attributes.get(sc.LLM_PRICE_ENTRY)
    if not isinstance(text, str):
        return None
    try:
        entry = json.loads(text)
    except ValueError:
        return None
    if not (isinstance(entry, dict) and isinstance(entry.get("id"), str) and isinstance(entry.get("rates"), dict)
            and all(key in entry for key in ENTRY_KEYS)):
        return None
    return entry["id"], {key: entry[key] for key in ENTRY_KEYS}


def read_pricing(directory: Path) -> dict[str, dict[str, Any]]:
    """The snapshot's entries by price id; empty when the session has none (older sessions)."""
    path = Path(directory) / PRICING_FILE
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise PricingFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise PricingFileError(f"{path} is not valid JSON ({exc})") from None
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("rates"), dict) and all(k in e for k in ENTRY_KEYS)
        for e in entries.values()
    ):
        raise PricingFileError(f"{path}: expected {{\"entries\": {{price id: {{{', '.join(ENTRY_KEYS)}}}}}}}")
    return entries


def pricing_bytes(entries: Mapping[str, Mapping[str, Any]]) -> bytes:
    return orjson.dumps({"format": PRICING_FORMAT, "entries": entries}, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


class PricingSnapshot:
    """The sink's copy of pricing.json: entries taken from ended spans, the file rewritten when one is new."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._entries: dict[str, dict[str, Any]] | None = None  # read at the first entry (resume keeps the old)

    def take(self, span: SpanData) -> bool:
        """Keep the span's price entry; True if pricing.json was written."""
        found = entry_of_span(span)
        if found is None:
            return False
        if self._entries is None:
            try:
                self._entries = read_pricing(self.directory)
            except PricingFileError:
                self._entries = {}  # a damaged snapshot is replaced by what the spans say
        price_id, entry = found
        if price_id in self._entries:
            return False
        self._entries[price_id] = entry
        atomic_write(self.directory / PRICING_FILE, pricing_bytes(self._entries))
        return True
