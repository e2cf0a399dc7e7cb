"""Slow backends end to end: real ``otel-agents run`` processes against real receivers, then ``export``.

Two runs at once (litellm's import costs each ~3 s of CPU): one against a receiver whose
first answer comes after 5 s with ``OTEL_EXPORTER_OTLP_TIMEOUT=10``, one against a receiver
that never answers. The second session is then sent again with ``otel-agents export`` to a
healthy receiver; the first is exported too and compared with what its live export delivered.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from otel_agents.tracing.setup import SHUTDOWN_GRACE_S
from support.otlp_receivers import HttpTraceReceiver, ReceivedSpan

PROMPT = "Create Jack and Jill for a cafe discussion"
HANG_TIMEOUT_S = 2.0
SLACK_S = 1.0  # a loaded 2-core machine


@dataclasses.dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    flush_s: float  # answer printed -> "session:" printed: Tracing.shutdown at exit
    home: Path

    @property
    def session_id(self) -> str:
        return self.stderr.strip().splitlines()[-1].split("session: ", 1)[1]

    @property
    def warnings(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("warning")]

    def journal_span_ids(self) -> set[str]:
        path = self.home / "sessions" / self.session_id / "spans.jsonl"
        return {line["end"] for line in map(orjson.loads, path.read_bytes().splitlines()) if "end" in line}


def _env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(extra, PYTHONUNBUFFERED="1", OTEL_AGENTS_HOME=str(home))
    return env


def _start(home: Path, extra: dict[str, str]):
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", PROMPT], env=_env(home, extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=home.parent)
    seen: dict[str, list] = {"out": [], "err": []}

    def read(stream, into):
        for line in stream:
            into.append((time.monotonic(), line))

    threads = [threading.Thread(target=read, args=(proc.stdout, seen["out"]), daemon=True),
               threading.Thread(target=read, args=(proc.stderr, seen["err"]), daemon=True)]
    for thread in threads:
        thread.start()
    return proc, seen, threads, home


def _finish(proc, seen, threads, home) -> Run:
    proc.wait(timeout=120)
    for thread in threads:
        thread.join(5)
    answered = seen["out"][0][0] if seen["out"] else time.monotonic()
    said = next(t for t, line in seen["err"] if line.startswith("session: "))
    return Run(proc.returncode, "".join(l for _, l in seen["out"]), "".join(l for _, l in seen["err"]),
               said - answered, home)


def export(home: Path, session_id: str, *args: str, env: dict[str, str] | None = None):
    return subprocess.run([sys.executable, "-m", "otel_agents", "export", session_id, *args],
                          env=_env(home, env or {}), capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("slow-backends")
    slow = HttpTraceReceiver(first_answer_delay=5.0).start()
    silent = HttpTraceReceiver("hang", hang_seconds=60).start()
    try:
        started = {
            "slow": _start(tmp / "slow", {"OTEL_EXPORTER_OTLP_ENDPOINT": slow.endpoint,
                                          "OTEL_EXPORTER_OTLP_TIMEOUT": "10"}),
            # Every span waits for the exit (a 60 s batch delay), so the count is the whole session.
            "silent": _start(tmp / "silent", {"OTEL_EXPORTER_OTLP_ENDPOINT": silent.endpoint,
                                              "OTEL_EXPORTER_OTLP_TIMEOUT": f"{HANG_TIMEOUT_S:g}",
                                              "OTEL_BSP_SCHEDULE_DELAY": "60000"}),
        }
        done = {tag: _finish(*parts) for tag, parts in started.items()}
        yield done, slow.spans(), len(silent.calls)
    finally:
        slow.stop()
        silent.stop()


def test_a_first_answer_after_5_s_within_a_10_s_timeout_delivers_everything_silently(runs):
    done, received, _ = runs
    run = done["slow"]
    assert run.returncode == 0, run.stderr
    assert run.warnings == [], run.stderr
    assert {s.span_id for s in received} == run.journal_span_ids() and len(received) > 30


def test_a_receiver_that_never_answers_costs_the_bound_and_one_counted_warning(runs):
    done, _, calls = runs
    run = done["silent"]
    assert run.returncode == 0, run.stderr
    (warning,) = run.warnings
    spans = len(run.journal_span_ids())
    assert f"): {spans} of {spans} spans not delivered" in warning and spans > 30
    assert warning.endswith("the local session artifacts are complete")
    assert HANG_TIMEOUT_S - 0.5 <= run.flush_s <= HANG_TIMEOUT_S + SHUTDOWN_GRACE_S + SLACK_S, run.flush_s
    assert calls == 1  # one attempt at exit, not one per batch


def test_export_later_delivers_every_span_with_its_ids(runs):
    done, _, _ = runs
    run = done["silent"]
    with HttpTraceReceiver() as healthy:
        result = export(run.home, run.session_id, "--endpoint", healthy.endpoint)
        received = healthy.spans()
    assert result.returncode == 0, result.stderr
    ids = run.journal_span_ids()
    assert result.stdout.strip() == (
        f"{len(ids)} of {len(ids)} spans of session {run.session_id} sent to {healthy.traces_url}"
    )
    assert [s.span_id for s in received].count(received[0].span_id) == 1
    assert {s.span_id for s in received} == ids
    assert {s.trace_id for s in received} == _trace_ids(run)


def _trace_ids(run: Run) -> set[str]:
    path = run.home / "sessions" / run.session_id / "spans.jsonl"
    return {line["trace"] for line in map(orjson.loads, path.read_bytes().splitlines()) if "start" in line}


def _comparable(span: ReceivedSpan) -> ReceivedSpan:
    # The journal does not keep the scope's version; everything else must be what the live export sent.
    return dataclasses.replace(span, scope_version="")


def test_an_export_sends_what_the_live_export_sent(runs):
    done, live, _ = runs
    run = done["slow"]
    with HttpTraceReceiver() as again:
        # The default endpoint comes from the standard variables, as for a run.
        result = export(run.home, run.session_id, "--json", env={"OTEL_EXPORTER_OTLP_ENDPOINT": again.endpoint})
        exported = again.spans()
    assert result.returncode == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["spans"] == summary["delivered"] == len(live) and summary["not_delivered"] == 0
    assert {s.span_id: _comparable(s) for s in exported} == {s.span_id: _comparable(s) for s in live}
