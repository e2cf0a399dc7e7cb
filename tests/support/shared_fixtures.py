"""The one place tests find the outside trace fixtures: ``OTEL_AGENTS_FIXTURES``, else ``../shared/fixtures``.

The fixtures are real Jaeger and OTLP documents from other projects, kept beside the
repository rather than in it. A fresh clone has none: the tests that read them skip
with one line naming what is missing. ``OTEL_AGENTS_REQUIRE_FIXTURES=1`` (set by
``.ci/run``, which always has them) turns that skip into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
ENV_DIR = "OTEL_AGENTS_FIXTURES"
ENV_REQUIRE = "OTEL_AGENTS_REQUIRE_FIXTURES"


def fixtures_dir() -> Path:
    configured = os.environ.get(ENV_DIR)
    return Path(configured) if configured else REPOSITORY.parent / "shared" / "fixtures"


FIXTURES = fixtures_dir()


def require_fixtures(*paths: Path | str) -> None:
    """Skip the calling test (fail it under OTEL_AGENTS_REQUIRE_FIXTURES=1) unless the fixture set, and these files in it, exist."""
    if not FIXTURES.is_dir() or not any(p.is_file() for p in FIXTURES.rglob("*")):
        missing = f"no shared fixture set at {FIXTURES}"
    else:
        missing = next((f"shared fixture missing: {FIXTURES / p}" for p in paths if not (FIXTURES / p).exists()), None)
    if missing is None:
        return
    message = f"{missing} (set {ENV_DIR} or put the fixture set at ../shared/fixtures)"
    if os.environ.get(ENV_REQUIRE) == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def shared_fixture(*parts: str) -> Path:
    """``FIXTURES/<parts>``, once required: call inside a test."""
    path = FIXTURES.joinpath(*parts)
    require_fixtures(path.relative_to(FIXTURES))
    return path


def fixture_files(pattern: str) -> list[Path]:
    """The fixture files matching ``pattern`` (for parametrizing); a missing set gives one placeholder,
    so the test still runs and its :func:`require_fixtures` says what is missing."""
    files = sorted(p for p in FIXTURES.glob(pattern) if p.is_file())
    return files or [FIXTURES / "missing"]
