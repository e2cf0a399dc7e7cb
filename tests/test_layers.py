"""The package's imports follow the layer table of docs/architecture.md, inside functions too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "otel_agents"
DOC = ROOT / "docs" / "architecture.md"


def layer_table() -> tuple[dict[str, str], dict[str, set[str]]]:
    """(module path or folder -> layer, layer -> layers it may import) from the doc's table."""
    section = DOC.read_text(encoding="utf-8").split("## Layers (the import graph)", 1)[1].split("\n## ", 1)[0]
    owners: dict[str, str] = {}
    allowed: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[1].startswith("`otel_agents/"):
            continue
        layer = cells[0]
        for path in re.findall(r"`(otel_agents/[^`]*)`", cells[1]):
            owners[path.rstrip("/")] = layer
        allowed[layer] = {x.strip() for x in cells[2].split(",") if x.strip() not in {"-", ""}}
    return owners, allowed


def layer_of(module_path: Path, owners: dict[str, str]) -> str | None:
    relative = module_path.relative_to(ROOT).as_posix()
    for candidate in (relative, *(p.as_posix() for p in Path(relative).parents)):
        if candidate in owners:
            return owners[candidate]
    return None


def module_file(name: str) -> Path | None:
    """The file a dotted ``otel_agents...`` name refers to (a package's __init__.py)."""
    path = ROOT.joinpath(*name.split("."))
    if path.with_suffix(".py").exists():
        return path.with_suffix(".py")
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    return None


def imports_of(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
            # ``from otel_agents.persistence import verify``: the submodule is what is imported
            out += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in out if name == "otel_agents" or name.startswith("otel_agents.")]


def test_every_module_has_a_layer():
    owners, allowed = layer_table()
    assert set(owners.values()) == set(allowed), "a layer without modules, or modules without a row"
    missing = [p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py") if layer_of(p, owners) is None]
    assert missing == []


def test_imports_follow_the_layer_table():
    owners, allowed = layer_table()
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mine = layer_of(path, owners)
        for line, name in imports_of(path):
            target = module_file(name)
            if target is None:
                continue  # an attribute imported from a module, e.g. `from otel_agents.x import name`
            theirs = layer_of(target, owners)
            if theirs != mine and theirs not in allowed[mine]:
                violations.append(f"{path.relative_to(ROOT)}:{line}: {mine} imports {theirs} ({name})")
    assert violations == []


def test_the_table_catches_a_forbidden_import(tmp_path, monkeypatch):
    """The checker itself: a persistence module importing the runtime is reported."""
    owners, allowed = layer_table()
    fake = PACKAGE / "persistence" / "tree.py"
    source = "from otel_agents.runtime.agent import Agent\n"
    theirs = layer_of(module_file("otel_agents.runtime.agent"), owners)
    assert layer_of(fake, owners) == "persistence" and theirs == "runtime"
    assert theirs not in allowed["persistence"]
    target = tmp_path / "probe.py"
    target.write_text(source)
    assert imports_of(target) == [(1, "otel_agents.runtime.agent"), (1, "otel_agents.runtime.agent.Agent")]
