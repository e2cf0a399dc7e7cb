"""The outside fixture set is found in one place; absent, its tests skip saying what is missing, or fail when required."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ONE_TEST = "tests/tracing/test_otlp_decode.py::test_otlp_example_trace_resources_kinds_and_nameless_events"


def pytest_run(fixtures: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_AGENTS_")}
    environment.update({"OTEL_AGENTS_FIXTURES": str(fixtures), **env})
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-rsf", "-q", ONE_TEST],
                          cwd=TESTS.parent, capture_output=True, text=True, env=environment, timeout=300)


def test_an_absent_fixture_set_skips_with_one_line_naming_it(tmp_path):
    done = pytest_run(tmp_path)
    assert done.returncode == 0, done.stdout
    (skipped,) = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert f"no shared fixture set at {tmp_path}" in skipped and "OTEL_AGENTS_FIXTURES" in skipped


def test_required_fixtures_fail_instead_of_skipping(tmp_path):
    done = pytest_run(tmp_path, OTEL_AGENTS_REQUIRE_FIXTURES="1")
    assert done.returncode == 1
    assert f"FAILED {ONE_TEST}" in done.stdout and f"no shared fixture set at {tmp_path}" in done.stdout
    assert "Traceback" not in done.stdout  # one line saying what is missing


def test_a_missing_file_of_a_present_set_is_named(tmp_path):
    (tmp_path / "jaeger").mkdir()
    (tmp_path / "jaeger" / "other.json").write_text("{}")
    done = pytest_run(tmp_path)
    assert f"shared fixture missing: {tmp_path / 'otlp' / 'example_trace.json'}" in done.stdout


def test_no_test_reaches_the_fixture_set_but_through_the_helper():
    allowed = {TESTS / "support" / "shared_fixtures.py", Path(__file__).resolve()}
    reaching = [
        str(path.relative_to(TESTS)) for path in TESTS.rglob("*.py")
        if path not in allowed and re.search(r'"shared"\s*/\s*"fixtures"|shared/fixtures', path.read_text())
    ]
    assert reaching == []
