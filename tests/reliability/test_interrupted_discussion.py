"""A ``discuss`` call killed (-9) after one speaker has replied: resume answers it as interrupted, after the reply."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from reliability_helpers import ScriptBuilder, cli_command, event_records, invoke, subprocess_env, verify
from test_interruption import journal_starts, wait_for

from otel_agents.runtime.tool_call import INTERRUPTED_RESULT

SLOW_MS = 60_000


def jill_thinking(home: Path):
    def check() -> bool:
        sessions = list((home / "sessions").glob("*")) if (home / "sessions").exists() else []
        return bool(sessions) and any(line.get("attrs", {}).get("gen_ai.agent.name") == "Jill"
                                      and str(line.get("name", "")).startswith("chat ")
                                      for line in journal_starts(sessions[0]))
    return check


@pytest.mark.parametrize("repaired_first", [False, True], ids=["resumed", "repaired then resumed"])
def test_a_discussion_killed_after_one_speaker_resumes_with_the_call_answered_as_interrupted(rel_home, tmp_path,
                                                                                           repaired_first):
    from otel_agents.persistence.ownership import owner_of

    script = ScriptBuilder("talk", {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Jack"}},
                                 {"name": "task", "arguments": {"name": "Jill"}}]},
                 {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Jack", "Jill"]}}]}],
        "Jack": ["Hi, I'm Jack."],
        "Jill": [{"text": "Hi, I'm Jill.", "latency_ms": SLOW_MS}],
    }).write(tmp_path / "talk.json")
    # A scripted agent answers its turns in order, counted over the session: main has had two.
    quick = ScriptBuilder("talk", {"main": ["-", "-", "carried on", "once more"]}).write(tmp_path / "quick.json")
    proc = subprocess.Popen([*cli_command(), "run", "--script", str(script), "go"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=subprocess_env(rel_home), cwd=rel_home.parent)
    try:
        wait_for(jill_thinking(rel_home), proc)
        time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()
    (directory,) = (rel_home / "sessions").iterdir()
    deadline = time.monotonic() + 30
    while owner_of(directory) is not None:  # the recorder process writes what it was given, then lets go
        assert time.monotonic() < deadline
        time.sleep(0.05)

    if repaired_first:  # billed and closed cleanly: resume then takes its quick path
        repaired = invoke(["sessions", "repair", directory.name])
        assert repaired.exit_code == 0, repaired.output
    resumed = invoke(["resume", directory.name, "--script", str(quick), "Carry on"])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == "carried on\n"
    main = [r for r in event_records(rel_home, directory.name)
            if r["event_type"] == "transcript_entry" and r["agent_id"] == "agent_001"]
    after_call = [(r["role"], r.get("content")) for r in main[[i for i, r in enumerate(main)
                                                                if "discuss" in str(r.get("tool_calls"))][0] + 1:]]
    assert after_call == [("tool", "Hi, I'm Jack."), ("tool", INTERRUPTED_RESULT), ("user", "Carry on"),
                          ("assistant", "carried on")]
    assert verify(directory.name).exit_code == 0

    # A second resume does not answer it again: the result is in, though the span stays interrupted.
    again = invoke(["resume", directory.name, "--script", str(quick), "Once more"])
    assert again.exit_code == 0, again.output
    contents = [r.get("content") for r in event_records(rel_home, directory.name)
                if r["event_type"] == "transcript_entry" and r["agent_id"] == "agent_001"]
    assert contents.count(INTERRUPTED_RESULT) == 1
