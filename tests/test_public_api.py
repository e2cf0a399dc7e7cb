"""The public surface: every name in ``otel_agents.__all__`` keeps its signature unless CHANGELOG.md says so.

tests/data/public_api.json holds each name's signature (a class: its constructor and public
members). A difference fails with the names that changed. To accept a change, note each such
name in CHANGELOG.md's ``## Unreleased`` section and run this file with UPDATE_PUBLIC_API=1,
which rewrites the snapshot only when every changed name is noted.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import otel_agents

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = Path(__file__).resolve().parent / "data" / "public_api.json"
CHANGELOG = ROOT / "CHANGELOG.md"


def describe(obj: object) -> str | dict[str, str]:
    """A signature as text; a class as its bases, its constructor and each public member's signature."""
    if not inspect.isclass(obj):
        return f"{getattr(obj, '__name__', type(obj).__name__)}{inspect.signature(obj)}" if callable(obj) else repr(obj)
    members = {"__bases__": ", ".join(base.__name__ for base in obj.__bases__)}
    try:
        members["__init__"] = str(inspect.signature(obj))
    except ValueError:  # an exception class: its bases say what it is
        pass
    for name, member in sorted(vars(obj).items()):
        if name.startswith("_") and name not in {"__enter__", "__exit__", "__aenter__", "__aexit__"}:
            continue
        if isinstance(member, property):
            members[name] = "property"
        elif callable(member):
            members[name] = str(inspect.signature(member))
    return members


def current_surface() -> dict[str, object]:
    return {name: describe(getattr(otel_agents, name)) for name in otel_agents.__all__ if name != "__version__"}


def changed_names(old: dict[str, object], new: dict[str, object]) -> list[str]:
    """Names removed, added or whose description differs."""
    return sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))


def unreleased_notes(changelog: str) -> str:
    match = re.search(r"^## Unreleased\s*$(.*?)(?=^## |\Z)", changelog, flags=re.M | re.S)
    return match.group(1) if match else ""


def unnoted(names: list[str], changelog: str) -> list[str]:
    notes = unreleased_notes(changelog)
    return [name for name in names if not re.search(rf"`{re.escape(name)}\b", notes)]


def test_the_surface_matches_its_snapshot_or_the_changelog_notes_the_change():
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    current = current_surface()
    changed = changed_names(stored, current)
    if not changed:
        return
    missing = unnoted(changed, CHANGELOG.read_text(encoding="utf-8"))
    if os.environ.get("UPDATE_PUBLIC_API") == "1" and not missing:
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return
    pytest.fail(
        f"public API changed: {', '.join(changed)}"
        + (f"; note {', '.join(missing)} under '## Unreleased' in CHANGELOG.md" if missing else "")
        + "; then rerun with UPDATE_PUBLIC_API=1 to refresh tests/data/public_api.json"
    )


def test_the_check_catches_a_changed_or_removed_name_until_the_changelog_notes_it():
    current = current_surface()
    edited = dict(current)
    del edited["tool"]
    edited["Session"] = {**current["Session"], "run": "(self, prompt)"}
    changed = changed_names(current, edited)
    assert changed == ["Session", "tool"]
    assert unnoted(changed, "# Changelog\n\n## Unreleased\n\n- nothing here\n") == ["Session", "tool"]
    noted = "# Changelog\n\n## Unreleased\n\n- `Session.run` takes no agent.\n- `tool` is gone.\n\n## 0.1.0\n"
    assert unnoted(changed, noted) == []
    # A note in a released section does not count for an unreleased change.
    assert unnoted(["tool"], "# Changelog\n\n## Unreleased\n\n## 0.1.0\n- `tool` added\n") == ["tool"]


def test_every_public_name_is_documented_and_in_the_changelog():
    reference = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    changelog = CHANGELOG.read_text(encoding="utf-8")
    for name in current_surface():
        assert f"`{name}" in reference, f"docs/python-api.md does not describe {name}"
        assert f"`{name}" in changelog, f"CHANGELOG.md does not mention {name}"


def documented_signature(function) -> str:
    """``name(a, b=1, *, c="x")`` as python-api.md's headings write it: defaults by repr, strings double-quoted."""
    parts, starred = [], False
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is parameter.KEYWORD_ONLY and not starred:
            parts.append("*")
        starred = starred or parameter.kind in (parameter.KEYWORD_ONLY, parameter.VAR_POSITIONAL)
        default = parameter.default
        if default is parameter.empty:
            parts.append(parameter.name)
        else:
            parts.append(f"{parameter.name}={json.dumps(default) if isinstance(default, str) else repr(default)}")
    return f"{function.__name__}({', '.join(parts)})"


def test_every_signature_heading_is_the_codes_signature():
    reference = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### `(\w+)\((.*?)\)(?: -> \w+)?`", reference, re.M)
    assert {"Session", "resume", "fork", "Budget", "ModelSettings", "recording"} <= {name for name, _ in headings}
    for name, parameters in headings:
        assert f"{name}({parameters})" == documented_signature(getattr(otel_agents, name)), name


def test_importing_the_package_and_naming_the_api_loads_no_litellm():
    code = (
        "import sys, otel_agents\n"
        "assert 'otel_agents.api' not in sys.modules, 'the API loads on first use only'\n"
        "from otel_agents import Agent, Session, recording, resume, tool\n"
        "assert callable(resume) and resume.__module__ == 'otel_agents.api_resume'\n"
        "import otel_agents.restore\n"  # the module that rebuilds sessions: no name clash with resume()
        "assert otel_agents.resume is resume\n"
        "print('litellm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Runner'"):
        otel_agents.Runner  # noqa: B018
    assert set(dir(otel_agents)) >= set(otel_agents.__all__)
