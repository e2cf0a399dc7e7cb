"""Turn the GenAI semantic-convention registry's YAML into the compact JSON facts tests/data keeps.

Usage (files saved from open-telemetry/semantic-conventions-genai, model/gen-ai/):

    python tools/semconv_snapshot.py DIR --commit registry.yaml=SHA --commit spans.yaml=SHA ... \
        > tests/data/semconv_genai.json

DIR holds registry.yaml, spans.yaml, metrics.yaml, optionally registry-deprecated.yaml (from the main
semantic-conventions repository, which keeps the deprecated gen_ai names), gen-ai-*.json (the message
schemas) and gen-ai-metrics.md (the only place bucket boundaries are written). Prose (briefs, notes,
examples, descriptions) is left out: the snapshot keeps what a test can check.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

UPSTREAM = "open-telemetry/semantic-conventions-genai"
# Attributes the GenAI spans reference from the general registry (model/error, model/server in
# open-telemetry/semantic-conventions), all stable; their types are not in the GenAI files.
GENERAL_ATTRIBUTES = {
    "error.type": {"type": "string", "stability": "stable"},
    "server.address": {"type": "string", "stability": "stable"},
    "server.port": {"type": "int", "stability": "stable"},
}
SCHEMA_FILES = {
    "gen_ai.input.messages": "gen-ai-input-messages.json",
    "gen_ai.output.messages": "gen-ai-output-messages.json",
    "gen_ai.system_instructions": "gen-ai-system-instructions.json",
    "gen_ai.tool.definitions": "gen-ai-tool-definitions.json",
}
PROSE_KEYS = {"description", "title", "examples"}


def attribute_type(declared: Any) -> dict[str, Any]:
    """``string``/``int``/... as declared; an enum is a string with its member values."""
    if isinstance(declared, dict) and "members" in declared:
        return {"type": "string", "members": sorted(str(m["value"]) for m in declared["members"])}
    return {"type": str(declared)}


def registry_attributes(registry: dict, deprecated: dict | None) -> dict[str, dict[str, Any]]:
    facts: dict[str, dict[str, Any]] = {}
    for attr in registry.get("attributes", []):
        facts[attr["key"]] = {**attribute_type(attr["type"]), "stability": attr.get("stability")}
    for group in (deprecated or {}).get("groups", []):
        for attr in group.get("attributes", []):
            if "id" not in attr:
                continue
            entry = {**attribute_type(attr["type"]), "stability": attr.get("stability")}
            info = attr.get("deprecated") or {}
            entry["deprecated"] = {"reason": info.get("reason"), "renamed_to": info.get("renamed_to")}
            facts[attr["id"]] = entry
    for name, entry in GENERAL_ATTRIBUTES.items():
        facts.setdefault(name, dict(entry))
    return dict(sorted(facts.items()))


def requirement(level: Any) -> tuple[str, str | None]:
    """(level, condition): ``required``, ``recommended``, ``opt_in`` or ``conditionally_required``."""
    if isinstance(level, dict):
        (name, condition), = level.items()
        return str(name), str(condition)
    return str(level), None


class Groups:
    """Attribute groups by id, resolved recursively; a later ref overrides an earlier level."""

    def __init__(self, *documents: dict) -> None:
        self.groups = {g["id"]: g for doc in documents for g in doc.get("attribute_groups", [])}
        self.unresolved: set[str] = set()

    def resolve(self, refs: list[dict]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for ref in refs:
            if "ref_group" in ref:
                group = self.groups.get(ref["ref_group"])
                if group is None:
                    self.unresolved.add(ref["ref_group"])
                    continue
                for name, entry in self.resolve(group["attributes"]).items():
                    out[name] = entry
            elif "requirement_level" in ref:
                level, condition = requirement(ref["requirement_level"])
                out[ref["ref"]] = {"requirement_level": level, **({"condition": condition} if condition else {})}
            else:  # a ref that only marks sampling relevance keeps the level it already has
                out.setdefault(ref["ref"], {"requirement_level": "recommended"})
            if ref.get("sampling_relevant") and ref.get("ref"):
                out[ref["ref"]]["sampling_relevant"] = True
        return dict(sorted(out.items()))


def span_name_pattern(span: dict) -> str | None:
    note = (span.get("name") or {}).get("note", "")
    match = re.search(r"SHOULD be `([^`]+)`", note)
    return match.group(1) if match else None


def spans_facts(spans: dict, groups: Groups) -> dict[str, dict[str, Any]]:
    return {
        span["type"]: {
            "kind": span["kind"],
            "name": span_name_pattern(span),
            "stability": span.get("stability"),
            "attributes": groups.resolve(span.get("attributes", [])),
        }
        for span in spans.get("spans", [])
    }


def bucket_boundaries(markdown: str) -> dict[str, list[float]]:
    """``### Metric: `name` `` sections' ``ExplicitBucketBoundaries] of [...]`` sentences."""
    found: dict[str, list[float]] = {}
    for section in re.split(r"^### Metric: ", markdown, flags=re.M)[1:]:
        name = re.match(r"`([^`]+)`", section)
        buckets = re.search(r"ExplicitBucketBoundaries\] of \[([^\]]+)\]", section)
        if name and buckets:
            found[name.group(1)] = [json.loads(v) for v in buckets.group(1).split(",")]
    return found


def metrics_facts(metrics: dict, groups: Groups, buckets: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    out = {}
    for metric in metrics.get("metrics", []):
        before = set(groups.unresolved)
        attributes = groups.resolve(metric.get("attributes", []))
        value_type = ((metric.get("annotations") or {}).get("code_generation") or {}).get("metric_value_type")
        out[metric["name"]] = {
            "instrument": metric["instrument"],
            "unit": metric["unit"],
            "value_type": value_type,
            "stability": metric.get("stability"),
            "attributes": attributes,
            "bucket_boundaries": buckets.get(metric["name"]),
            # Groups the metric names that the registry files at this commit do not define.
            "unresolved_groups": sorted(groups.unresolved - before),
        }
        groups.unresolved |= before
    return out


def strip_prose(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_prose(v) for k, v in node.items() if k not in PROSE_KEYS}
    if isinstance(node, list):
        return [strip_prose(v) for v in node]
    return node


def snapshot(directory: Path, commits: dict[str, str]) -> dict[str, Any]:
    def load(name: str) -> dict | None:
        path = directory / name
        return yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None

    registry, spans, metrics = load("registry.yaml"), load("spans.yaml"), load("metrics.yaml")
    if registry is None or spans is None or metrics is None:
        raise SystemExit(f"error: {directory} needs registry.yaml, spans.yaml and metrics.yaml")
    groups = Groups(spans, metrics)
    markdown = directory / "gen-ai-metrics.md"
    buckets = bucket_boundaries(markdown.read_text(encoding="utf-8")) if markdown.exists() else {}
    schemas = {
        attribute: strip_prose(json.loads((directory / name).read_text(encoding="utf-8")))
        for attribute, name in SCHEMA_FILES.items()
        if (directory / name).exists()
    }
    return {
        "source": {"repository": UPSTREAM, "commits": dict(sorted(commits.items()))},
        "attributes": registry_attributes(registry, load("registry-deprecated.yaml")),
        "spans": spans_facts(spans, groups),
        "metrics": metrics_facts(metrics, groups, buckets),
        "message_schemas": schemas,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--commit", action="append", default=[], metavar="FILE=SHA",
                        help="upstream commit each file was read at (repeat)")
    args = parser.parse_args(argv)
    commits = {}
    for item in args.commit:
        name, _, sha = item.partition("=")
        if not re.fullmatch(r"[0-9a-f]{40}", sha):
            print(f"error: --commit {item!r}: expected FILE=<40 hex digits>", file=sys.stderr)
            return 2
        commits[name] = sha
    json.dump(snapshot(args.directory, commits), sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
