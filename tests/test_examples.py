"""examples/: each program runs offline on its script as a real process, its session verifies, and
`otel-agents resume` re-imports the app and continues."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from support.in_process import run_in_process

ROOT = Path(__file__).resolve().parents[1]

# example -> (its answer offline, a text its run recorded, the resumed run's answer, a text the resumed run recorded)
EXAMPLES = {
    "jack_and_jill": ("Jack and Jill met in the cafe and introduced themselves; a fourth helper was not allowed.",
                      "Error: Action blocked by hook 'ResourceMonitor': Maximum subagents (3) already reached.",
                      "Jack and Jill ordered coffee.", "A flat white, please."),
    "researcher": ("Rome (2.8 million) is bigger than Paris (2.1 million).",
                   "Error: Action blocked by hook 'keep_notes': research notes are kept",
                   "Oslo is smaller than both: 0.7 million.", "Oslo: 0.7 million"),  # the custom tool, re-imported
    "debate": ("The Judge gave the debate to Pro.",
               "Pro wins: the argument about space was not answered.",
               "The Judge still favours Pro.", "No: Pro's point stands."),
    "whisper": ("Jack and Jill said hello; Jill knows the cake is gone.",
                "[Jack whispers]: Don't order the cake, it's gone.",
                "Jack had nothing more to say aloud.", "[Jack whispers]: Bring an umbrella."),  # the tool, re-imported
}


def run(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done


def cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    """The CLI in this process, from the clone as the example ran (its app module is imported from there)."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    return run_in_process(*args, home=home, cwd=ROOT)


def contents(home: Path, session_id: str) -> list:
    path = home / "sessions" / session_id / "events.jsonl"
    return [orjson.loads(line).get("content") for line in path.read_bytes().splitlines()]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_an_example_runs_offline_verifies_and_resumes_from_the_cli(tmp_path, name):
    answer, recorded, resumed_answer, resumed_recorded = EXAMPLES[name]
    home = tmp_path / "home"
    done = run("-m", f"examples.{name}", home=home)
    assert done.stdout.strip() == answer
    session_id = done.stderr.strip().splitlines()[-1].removeprefix("session: ")
    assert recorded in contents(home, session_id)
    assert cli("sessions", "verify", session_id, home=home).returncode == 0

    resumed = cli("resume", session_id, "Carry on", home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == resumed_answer
    said = contents(home, session_id)
    assert not [c for c in said if isinstance(c, str) and "unknown tool" in c]
    assert "Carry on" in said and resumed_recorded in said
    assert cli("sessions", "verify", session_id, home=home).returncode == 0


def test_a_whisper_reaches_one_agent_with_its_substance_and_cause_recorded(tmp_path):
    """The whisper tool uses only ToolContext.tell: Jill's entry points at a piece of text caused by Jack's call."""
    home = tmp_path / "home"
    done = run("-m", "examples.whisper", home=home)
    session_id = done.stderr.strip().splitlines()[-1].removeprefix("session: ")
    path = home / "sessions" / session_id / "events.jsonl"
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    by_id = {r["message_id"]: r for r in records}
    names = {r["agent_id"]: r["name"] for r in records if r["event_type"] == "agent_created" and r.get("name")}
    heard = [r for r in records if "whispers" in (r.get("content") or "") and r["event_type"] == "transcript_entry"]
    assert [(names[r["agent_id"]], r["role"]) for r in heard] == [("Jill", "user")]  # Jack never hears it back
    piece = by_id[heard[0]["substance"]]
    assert (piece["event_type"], names[piece["agent_id"]]) == ("piece_of_text", "Jack")
    call = by_id[piece["cause"]]
    assert [c["function"]["name"] for c in call["tool_calls"]] == ["whisper"] and names[call["agent_id"]] == "Jack"
