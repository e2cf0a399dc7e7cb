"""`otel-agents replay`: a saved session re-run against its recorded answers, through the CLI.

Contract (issue 22, part 3): a replay of an unchanged session gives identical events
(apart from times, trace and span ids, and the agents' model, which is the replay's),
bills nothing, and leaves the saved session untouched; a changed request is reported
at the agent and turn where it first differs, with a diff, and exits 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli as otel_cli
from support.in_process import run_in_process
from support.openai_server import OpenAIServer, Reply
from support.stderr_lines import error_lines

ROOT = Path(__file__).resolve().parents[2]
APPS = Path(__file__).resolve().parents[1] / "data" / "apps"
DEMO = ROOT / "otel_agents" / "llm" / "scripts" / "jack-and-jill.json"
VOLATILE = {"ts", "trace_id", "span_id"}

CITY_APP = '''
from otel_agents import Agent, tool


@tool
def population(city: str) -> str:
    """How many people live in a city.

    city: the city's name
    """
    return f"{city} has {RESULT}"


def make():
    return Agent("researcher", "You answer questions about cities.", tools=[population])
'''
CITY_SCRIPT = {
    "name": "cities",
    "agents": {"researcher": [{"tool_calls": [{"name": "population", "arguments": {"city": "Paris"}}]},
                              "Paris is large."]},
}


def cli(*args: str, home: Path, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """In this process, or in its own when it loads an app from ``cwd`` that the test changes."""
    if cwd is not None:
        return _process(*args, home=home, cwd=cwd, check=check)
    if str(APPS) not in sys.path:
        sys.path.append(str(APPS))  # city_app, as PYTHONPATH gives it to a process
    done = run_in_process(*args, home=home, env={"OPENAI_API_KEY": "sk-test"})
    if check:
        assert done.returncode == 0, done.stderr
    return done


def _process(*args: str, home: Path, cwd: Path, check: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=os.pathsep.join([str(ROOT), str(APPS)]),
               LITELLM_LOCAL_MODEL_COST_MAP="True", OPENAI_API_KEY="sk-test")
    done = subprocess.run([sys.executable, "-m", "otel_agents", *args], env=env, capture_output=True, text=True,
                          timeout=120, cwd=cwd, stdin=subprocess.DEVNULL)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def session_of(done: subprocess.CompletedProcess) -> str:
    return [line for line in done.stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]


def events(home: Path, session_id: str) -> list[dict]:
    """The session's events without what differs between any two executions; the model named apart."""
    out = []
    for line in (home / "sessions" / session_id / "events.jsonl").read_bytes().splitlines():
        record = {k: v for k, v in orjson.loads(line).items() if k not in VOLATILE}
        record.pop("language_model", None)
        if record.get("event_type") == "host_notice":  # a retry notice names the model it retried
            record["content"] = re.sub(r"\b(?:scripted|replay|openai)/\S+", "<model>", record.get("content") or "")
        out.append(record)
    return out


def models(home: Path, session_id: str) -> set[str]:
    lines = (home / "sessions" / session_id / "events.jsonl").read_bytes().splitlines()
    return {r["language_model"] for r in map(orjson.loads, lines) if "language_model" in r}


def ledger(home: Path, session_id: str) -> list[dict]:
    rows = [orjson.loads(line) for line in (home / "billing.jsonl").read_bytes().splitlines()]
    return [r for r in rows if r["session_id"] == session_id]


def checksums(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def assert_replayed_whole(home: Path, source: str, replayed: str) -> None:
    assert events(home, replayed) == events(home, source)
    assert models(home, replayed) == {f"replay/{source}"}
    rows = ledger(home, replayed)
    assert len(rows) == len(ledger(home, source))  # every attempt, the failed ones too
    calls = [r for r in rows if r["type"] == "llm"]
    assert calls and {r["model"] for r in calls} == {f"replay/{source}"}
    assert sum(r.get("cost_usd") or 0 for r in rows) == 0
    assert all(r["cost_usd"] == 0 and r["price_source"] != "unpriced" for r in calls if r["status"] == "ok")
    assert cli("sessions", "verify", replayed, home=home, check=False).returncode == 0


def test_the_demo_replays_with_identical_events_and_bills_nothing(tmp_path):
    home = tmp_path / "home"
    source = session_of(cli("run", home=home))
    before = checksums(home / "sessions" / source)
    billed_before = ledger(home, source)

    done = cli("replay", source, home=home)
    replayed = session_of(done)
    assert replayed != source
    assert done.stdout == "Jack and Jill met in the cafe and introduced themselves; a fourth helper was not allowed.\n"
    assert "replay: 13 LLM calls of 1 runs matched" in done.stderr
    assert "WRN Error: Action blocked by hook 'ResourceMonitor'" in done.stderr  # the hook fired again
    assert "RateLimitError" in done.stderr  # and the recorded 429 was replayed and retried
    assert "retrying in 0.05s" in done.stderr  # after its recorded Retry-After, not a backoff of its own
    assert_replayed_whole(home, source, replayed)
    assert checksums(home / "sessions" / source) == before  # read-only on the source
    assert ledger(home, source) == billed_before  # never billed as the original model
    meta = json.loads((home / "sessions" / replayed / "meta.json").read_text())
    assert meta["totals"]["cost_usd"] == 0
    assert meta["totals"]["llm_calls"] == json.loads((home / "sessions" / source / "meta.json").read_text())[
        "totals"]["llm_calls"]


def test_repricing_the_ledger_keeps_a_replay_free_not_unpriced(tmp_path):
    home = tmp_path / "home"
    source = session_of(cli("run", home=home))
    replayed = session_of(cli("replay", source, home=home))
    # Its own process, as a user's later rebuild is: replay/<source>'s zero price is not registered there.
    done = cli("billing", "rebuild", "--reprice", home=home, cwd=tmp_path)
    assert "none differently" in done.stdout and "unpriced" not in done.stdout, done.stdout
    calls = [r for r in ledger(home, replayed) if r["type"] == "llm" and r["status"] == "ok"]
    assert calls and all(r["cost_usd"] == 0 and r["price_source"] == "litellm" and "repriced" not in r
                         for r in calls)


def test_a_replayed_session_resumes_and_forks_on_its_script_s_model(tmp_path):
    # replay/<source> answers only inside the replay: the replay's --model is not carried, and its
    # agents move to the script's model, as agents on another script's model do.
    home = tmp_path / "home"
    source = session_of(cli("run", home=home))
    replayed = session_of(cli("replay", source, home=home))
    resumed = cli("resume", replayed, "Anything else?", home=home)
    assert resumed.stdout == "I have nothing further to add.\n"
    calls = [r for r in ledger(home, replayed) if r["type"] == "llm"]
    assert {r["model"] for r in calls[-1:]} == {"scripted/jack-and-jill"}
    named = cli("resume", replayed, "--model", "scripted/jack-and-jill", "Still there?", home=home)
    assert named.stdout == "I have nothing further to add.\n"  # the script's own model, named, moves every agent too
    forked = cli("fork", replayed, "--at", "msg_000004", "Hello again", home=home)
    assert forked.returncode == 0
    assert cli("sessions", "verify", replayed, home=home, check=False).returncode == 0


def test_a_session_against_an_openai_compatible_server_replays_without_it(tmp_path):
    home = tmp_path / "home"
    with OpenAIServer() as server:
        server.plan(Reply.error(429, retry_after=0),
                    Reply(tool_calls=[("population", {"city": "Paris"})], prompt_tokens=40, completion_tokens=9),
                    Reply(content="Paris is large.", prompt_tokens=61, completion_tokens=4))
        source = session_of(cli("run", "--app", "city_app:make", "--model", "openai/x", "--api-base",
                                server.api_base, "How big is Paris?", home=home))
        asked = len(server.requests)
        done = cli("replay", source, home=home)
        assert len(server.requests) == asked == 3  # the replay never called the server
    assert done.stdout == "Paris is large.\n"
    assert "Paris has 5 million people" in [e.get("content") for e in events(home, source)]
    assert_replayed_whole(home, source, session_of(done))
    tokens = [r["tokens"] for r in ledger(home, session_of(done)) if r["type"] == "llm" and r["status"] == "ok"]
    assert tokens == [r["tokens"] for r in ledger(home, source) if r["type"] == "llm" and r["status"] == "ok"]  # as the server counted


def test_a_replayed_app_session_without_a_script_resumes_only_with_a_model_named_on_the_sources_api_base(tmp_path):
    home = tmp_path / "home"
    with OpenAIServer() as server:
        server.plan(Reply(content="Paris is large.", prompt_tokens=20, completion_tokens=4),
                    Reply(content="Lyon is smaller.", prompt_tokens=30, completion_tokens=4))
        source = session_of(cli("run", "--app", "city_app:make", "--model", "openai/x", "--api-base",
                                server.api_base, "How big is Paris?", home=home))
        replayed = session_of(cli("replay", source, home=home))
        before = checksums(home / "sessions" / replayed)
        refused = cli("resume", replayed, "And Lyon?", home=home, check=False)
        assert refused.returncode == 2 and refused.stdout == ""
        assert f"ran on replay/{source}, which answers only inside `otel-agents replay`: pass --model" in refused.stderr
        assert checksums(home / "sessions" / replayed) == before  # nothing run, nothing written
        # The replay recorded the source's api base (its answers came from the recording): a resume goes there.
        done = cli("resume", replayed, "--model", "openai/x", "And Lyon?", home=home)
    assert done.stdout == "Lyon is smaller.\n"


def test_a_changed_system_prompt_is_reported_at_the_first_turn_and_exits_1(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "cafe.json"
    data = json.loads(DEMO.read_text())
    script.write_text(json.dumps(data))
    source = session_of(cli("run", "--script", str(script), home=home))
    data["root"]["system_prompt"] = "You direct a play with two characters."
    script.write_text(json.dumps(data))

    done = cli("replay", source, home=home, check=False)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert "replay diverged: agent main, turn 1, attempt 1: messages differ" in lines
    diff = lines[lines.index("replay diverged: agent main, turn 1, attempt 1: messages differ") + 1:]
    assert any(line.startswith("-") and "You orchestrate a small cast" in line for line in diff)
    assert any(line.startswith("+") and "You direct a play with two characters." in line for line in diff)
    assert lines[-1].startswith("session: ")
    assert "Traceback" not in done.stderr
    assert ledger(home, session_of(done))[0]["cost_usd"] in (0, None)  # stopped before anything was answered


def test_a_changed_tool_result_diverges_at_the_turn_that_reads_it(tmp_path):
    home = tmp_path / "home"
    (tmp_path / "cities.json").write_text(json.dumps(CITY_SCRIPT))
    (tmp_path / "my_city_app.py").write_text(CITY_APP.replace("{RESULT}", "2 million people"))
    source = session_of(cli("run", "--app", "my_city_app:make", "--script", "cities.json", "How big is Paris?",
                            home=home, cwd=tmp_path))
    assert cli("replay", source, home=home, cwd=tmp_path).returncode == 0

    (tmp_path / "my_city_app.py").write_text(CITY_APP.replace("{RESULT}", "11 million people"))
    done = cli("replay", source, home=home, cwd=tmp_path, check=False)
    assert done.returncode == 1
    assert "replay diverged: agent researcher, turn 2, attempt 1: messages differ" in done.stderr
    assert '-  "content": "Paris has 2 million people",' in done.stderr
    assert '+  "content": "Paris has 11 million people",' in done.stderr


def test_strict_fails_on_a_changed_parameter_that_the_default_only_notes(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "echo.json"
    data = {"name": "echo", "params": {"temperature": 0.5}, "agents": {"main": ["Echo!"]}}
    script.write_text(json.dumps(data))
    source = session_of(cli("run", "--script", str(script), "hello", home=home))
    data["params"]["temperature"] = 0.9
    script.write_text(json.dumps(data))

    lenient = cli("replay", source, home=home)
    assert ("replay: note: agent main, turn 1, attempt 1: parameters differ (compared only with --strict; in 1 of the calls)"
            in lenient.stderr.splitlines())
    assert 'replay: note: + "temperature": 0.9' in lenient.stderr.splitlines()
    assert lenient.stdout == "Echo!\n"
    strict = cli("replay", source, "--strict", home=home, check=False)
    assert strict.returncode == 1
    assert "replay diverged: agent main, turn 1, attempt 1: parameters differ" in strict.stderr.splitlines()
    assert strict.stdout == ""


def _billed(rows: list[dict], first_run: int = 1) -> list[tuple]:
    """Ledger rows as what was done: run (counted from ``first_run``), place, agent, kind, outcome, tokens."""
    return [(r["run"] - first_run + 1, r["path"], r["agent_id"], r["agent_name"], r["type"], r["status"],
             r.get("attempt"), r.get("tokens")) for r in rows if r["run"] >= first_run]


def test_from_run_replays_runs_n_on_from_a_fork_of_the_session_just_before_run_n(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "cafe.json"
    data = json.loads(DEMO.read_text())
    script.write_text(json.dumps(data))
    source = session_of(cli("run", "--script", str(script), "Create Jack and Jill for a cafe discussion", home=home))
    cli("resume", source, "And then?", home=home)
    cli("resume", source, "Anything else?", home=home)
    before = checksums(home / "sessions" / source)

    done = cli("replay", source, "--from-run", "2", home=home)
    replayed = session_of(done)
    # Run 1's calls are not made again: the replay's attempts and tool calls are exactly runs 2 and 3's.
    assert _billed(ledger(home, replayed)) == _billed(ledger(home, source), first_run=2)
    assert len(_billed(ledger(home, source))) > len(_billed(ledger(home, replayed))) > 0
    llm_calls = len([r for r in ledger(home, replayed) if r["type"] == "llm"])
    assert f"replay: {llm_calls} LLM calls of 2 runs matched session {source}" in done.stderr
    assert sum(r.get("cost_usd") or 0 for r in ledger(home, replayed)) == 0
    # Its state is the source's at run 2's start (run 1's records, inherited), then runs 2 and 3 again.
    assert events(home, replayed) == events(home, source)
    run_1 = [r["message_id"] for r in map(orjson.loads, (home / "sessions" / source / "events.jsonl").read_bytes()
                                              .splitlines()) if r["trace_id"] == ledger(home, source)[0]["trace_id"]]
    meta = json.loads((home / "sessions" / replayed / "meta.json").read_text())
    assert meta["forked_from"] == {"session": source, "message": run_1[-1]}
    assert meta["runs"] == 2
    assert cli("sessions", "verify", replayed, home=home, check=False).returncode == 0
    assert checksums(home / "sessions" / source) == before


def test_from_run_compares_only_runs_n_on_and_names_turns_from_the_sessions_start(tmp_path):
    home = tmp_path / "home"
    twice = {"name": "cities", "agents": {"researcher": CITY_SCRIPT["agents"]["researcher"] * 2}}
    (tmp_path / "cities.json").write_text(json.dumps(twice))
    (tmp_path / "my_city_app.py").write_text(CITY_APP.replace("{RESULT}", "2 million people"))
    source = session_of(cli("run", "--app", "my_city_app:make", "--script", "cities.json", "How big is Paris?",
                            home=home, cwd=tmp_path))
    cli("resume", source, "Again?", home=home, cwd=tmp_path)

    (tmp_path / "my_city_app.py").write_text(CITY_APP.replace("{RESULT}", "11 million people"))
    whole = cli("replay", source, home=home, cwd=tmp_path, check=False)
    assert "replay diverged: agent researcher, turn 2, attempt 1: messages differ" in whole.stderr
    done = cli("replay", source, "--from-run", "2", home=home, cwd=tmp_path, check=False)
    assert done.returncode == 1
    # Run 1's tool result is inherited as saved, not made again: the first difference is run 2's,
    # at the researcher's 4th turn of the session.
    assert "replay diverged: agent researcher, turn 4, attempt 1: messages differ" in done.stderr
    assert ' "content": "Paris has 2 million people",' in done.stderr  # run 1's, unchanged in the diff
    assert '+  "content": "Paris has 11 million people",' in done.stderr
    assert [r["agent_name"] for r in ledger(home, session_of(done)) if r["type"] == "llm"] == ["researcher"] * 2


@pytest.mark.parametrize("args, message", [
    (["replay", "20990101-000000-abcdef"], "no session '20990101-000000-abcdef'"),
    (["replay", "../x"], "session"),
])
def test_bad_session_ids_are_one_line_usage_errors(tmp_path, monkeypatch, args, message):
    monkeypatch.setenv("OTEL_AGENTS_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "sessions").mkdir(parents=True)
    result = CliRunner().invoke(otel_cli, args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_run_number_past_the_session_is_exit_2_and_writes_nothing(tmp_path):
    home = tmp_path / "home"
    source = session_of(cli("run", "--script", str(DEMO), "hello", home=home))
    before = checksums(home / "sessions" / source)
    done = cli("replay", source, "--from-run", "3", home=home, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"Error: --from-run 3: session {source} has runs 1 to 1"]
    assert sorted(p.name for p in (home / "sessions").iterdir()) == [source]
    assert checksums(home / "sessions" / source) == before


def test_a_session_saved_without_contents_cannot_be_replayed(tmp_path):
    home = tmp_path / "home"
    source = session_of(cli("run", "--redacted-save", "--script", str(DEMO), "hello", home=home))
    done = cli("replay", source, home=home, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: session {source} was saved without contents (--redacted-save): nothing to replay"]


def test_a_forks_first_run_is_refused_and_its_later_runs_replay(tmp_path):
    home = tmp_path / "home"
    source = session_of(cli("run", "--script", str(DEMO), "hello", home=home))
    fork = session_of(cli("fork", source, "--at", "msg_000001", home=home))
    cli("resume", fork, "Go on.", home=home)
    done = cli("replay", fork, home=home, check=False)
    assert done.returncode == 2  # not a divergence (exit 1): its run 1 started from the source's state
    assert done.stderr.strip().splitlines() == [
        f"Error: session {fork} is a fork of {source} (after msg_000001): its run 1 starts from that session's "
        f"state; replay its later runs with --from-run 2, or replay {source}"]
    later = cli("replay", fork, "--from-run", "2", home=home, check=False)
    assert later.returncode == 0, later.stderr
    assert "of 1 runs matched" in later.stderr


def test_a_run_that_answered_an_outside_event_is_refused_and_nothing_is_written(tmp_path):
    home = tmp_path / "home"
    source = session_of(cli("run", "--script", str(DEMO), "hello", home=home))
    cli("send", source, "--to", "main", "--source", "cron", "File changed: data.json", home=home)
    before = checksums(home / "sessions" / source)
    done = cli("replay", source, home=home, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: session {source}: run 2 answered an outside event (send, a watched file or Session.external), "
        "which replay does not deliver again (docs/replay.md, Limits)"]
    assert sorted(p.name for p in (home / "sessions").iterdir()) == [source]
    assert checksums(home / "sessions" / source) == before
    assert cli("replay", source, "--from-run", "1", home=home, check=False).returncode == 2  # it is still in the range


def _error_lines(done: subprocess.CompletedProcess) -> list[str]:
    return error_lines(done.stderr)


def _replays_as_the_source_ended(home: Path, source_run: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """The replay of a session its limits stopped: no divergence, the same exit code, error line and events."""
    source = session_of(source_run)
    done = cli("replay", source, home=home, check=False)
    assert "diverged" not in done.stderr, done.stderr
    assert re.search(rf"replay: \d+ LLM calls of 1 runs matched session {source}", done.stderr), done.stderr
    assert done.returncode == source_run.returncode
    assert _error_lines(done) == _error_lines(source_run)
    assert done.stdout == source_run.stdout
    replayed = session_of(done)
    assert_replayed_whole(home, source, replayed)  # the same events: it stopped where the source stopped
    meta = [json.loads((home / "sessions" / sid / "meta.json").read_text()) for sid in (source, replayed)]
    assert meta[1]["last_run"].get("budget") == meta[0]["last_run"].get("budget")  # and says the same limits
    return done


@pytest.mark.parametrize("limit, error", [
    (["--max-llm-calls", "2"], "error: budget exhausted for session: 2 of 2 LLM calls made"),
    (["--max-tokens", "300"], "error: budget exhausted for session: 359 of 300 tokens spent"),
    # The replay is priced at zero: the limit counts the source's recorded cost of each call.
    (["--max-cost-usd", "0.0001"], "error: budget exhausted for session: $0.000127 of $0.0001 spent"),
])
def test_a_run_its_session_limit_stopped_replays_to_the_same_stop(tmp_path, limit, error):
    home = tmp_path / "home"
    source_run = cli("run", *limit, "Create Jack and Jill for a cafe discussion", "And then?", home=home, check=False)
    assert source_run.returncode == 1 and _error_lines(source_run) == [error], source_run.stderr
    _replays_as_the_source_ended(home, source_run)


@pytest.mark.parametrize("budget, detail", [
    ({"max_llm_calls": 1}, "1 of 1 LLM calls made"),
    ({"max_tokens": 20}, "35 of 20 tokens spent"),
    ({"max_cost_usd": 0.000001}, None),  # the recorded cost, whatever the demo price makes it
])
def test_a_sub_agent_its_script_budget_stopped_replays_to_the_same_error_result(tmp_path, budget, detail):
    home = tmp_path / "home"
    script = tmp_path / "budgeted.json"
    script.write_text(json.dumps({
        "name": "budgeted-replay",
        "agents": {
            "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Worker", "user_prompt": "work"}}]},
                     "The worker stopped early."],
            "Worker": [{"tool_calls": [{"name": "task", "arguments": {"name": "Helper"}}],
                        "usage": {"input_tokens": 30, "output_tokens": 5}}, "never said"],
        },
        "agent_budgets": {"Worker": budget},
    }))
    source_run = cli("run", "--script", str(script), "go", home=home)
    results = [r["content"] for r in events(home, session_of(source_run)) if r.get("role") == "tool"]
    assert results[-1].startswith("Error: budget exhausted for Worker: ")
    if detail is not None:
        assert results[-1] == f"Error: budget exhausted for Worker: {detail}"
    done = _replays_as_the_source_ended(home, source_run)
    assert [r["content"] for r in events(home, session_of(done)) if r.get("role") == "tool"] == results


def test_runs_after_a_run_a_limit_stopped_replay_from_that_run_under_its_raised_limit(tmp_path):
    home = tmp_path / "home"
    stopped = cli("run", "--max-llm-calls", "2", "Create Jack and Jill for a cafe discussion", home=home, check=False)
    assert stopped.returncode == 1, stopped.stderr
    source = session_of(stopped)
    resumed = cli("resume", source, "--max-llm-calls", "8", "And then?", home=home, check=False)
    assert _error_lines(resumed) == ["error: budget exhausted for session: 8 of 8 LLM calls made"]
    # A replay stops where run 1 stopped, as a replay of one process must: run 2's calls are unused.
    whole = cli("replay", source, home=home, check=False)
    assert whole.returncode == 1 and "recorded but never requested (6 recorded calls unused)" in whole.stderr
    # From run 2: its raised limit counts the 2 calls of run 1, as the resume did, and stops at the same place.
    done = cli("replay", source, "--from-run", "2", home=home, check=False)
    assert done.returncode == 1 and "diverged" not in done.stderr, done.stderr
    assert _error_lines(done) == _error_lines(resumed)
    assert f"replay: 6 LLM calls of 1 runs matched session {source}" in done.stderr


def test_a_run_resumed_with_budget_scope_run_replays_counting_its_own_spending_only(tmp_path):
    home = tmp_path / "home"
    source = session_of(cli("run", "Create Jack and Jill for a cafe discussion", home=home))  # 13 calls
    # 6 calls for this command alone: it makes 1, where the session's 14 would have stopped it at once.
    cli("resume", source, "--max-llm-calls", "6", "--budget-scope", "run", "And then?", home=home)
    # The default scope counts the whole session again, run 2's call included: 14 of 14, at once.
    stopped = cli("resume", source, "--max-llm-calls", "14", "More?", home=home, check=False)
    assert _error_lines(stopped) == ["error: budget exhausted for session: 14 of 14 LLM calls made"]
    done = cli("replay", source, home=home, check=False)
    assert done.returncode == 1 and "diverged" not in done.stderr, done.stderr
    assert f"replay: 14 LLM calls of 3 runs matched session {source}" in done.stderr
    assert _error_lines(done) == _error_lines(stopped)
    # The replay's run 2 records its scope as the source's did: replaying the replay counts alike.
    again = cli("replay", session_of(done), home=home, check=False)
    assert "diverged" not in again.stderr and _error_lines(again) == _error_lines(stopped), again.stderr


def test_from_run_replays_after_an_earlier_run_that_was_killed_in_a_call(tmp_path):
    """Runs before N are not made again, so a call killed in one of them (no answer, no error) is no obstacle."""
    import time

    home = tmp_path / "home"
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"name": "slow", "agents": {"main": [
        {"text": "never heard", "latency_ms": 60000}, "second answer", "third answer"]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--script", str(script), "first"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(b'"chat slow"' in p.read_bytes() for p in (home / "sessions").glob("*/spans.jsonl")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    (source,) = [p.name for p in (home / "sessions").iterdir()]
    cli("sessions", "repair", source, home=home)
    cli("resume", source, "And then?", home=home)
    cli("resume", source, "Anything else?", home=home)
    done = cli("replay", source, "--from-run", "2", home=home, check=False)
    assert done.returncode == 0, done.stderr
    assert "LLM calls of 2 runs matched session" in done.stderr


def test_a_session_run_from_python_without_an_app_is_refused_in_one_line(tmp_path):
    """Its agents and tools are the program's: the script's would diverge at the first call."""
    home = tmp_path / "home"
    script = tmp_path / "cities.json"
    script.write_text(json.dumps({"name": "cities", "agents": {"researcher": [
        {"tool_calls": [{"name": "population", "arguments": {"city": "Paris"}}]}, "Paris is large."]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    program = ROOT / "tests" / "data" / "api_programs" / "researcher.py"
    ran = subprocess.run([sys.executable, str(program), str(home), str(script), "How big is Paris?"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    source = json.loads(ran.stdout.splitlines()[-1])["session"]
    done = cli("replay", source, home=home, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == (f"Error: session {source} was run from Python without app=, so its agents "
                                            "and tools cannot be built again to replay it: give "
                                            "Session(app='module:factory')")
    assert [p.name for p in (home / "sessions").iterdir()] == [source]  # nothing new


def _kill_while_waiting(home: Path, source: str, prompt: str) -> None:
    """``resume SOURCE PROMPT``, its whole process group SIGKILLed while its model waits on a slow answer."""
    import signal
    import time

    from otel_agents.persistence.ownership import owner_of

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True",
               OTEL_TRACES_EXPORTER="none")
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "resume", source, prompt], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    spans = home / "sessions" / source / "spans.jsonl"
    try:
        deadline = time.monotonic() + 60
        before = spans.read_bytes().count(b'"chat ')
        while spans.read_bytes().count(b'"chat ') <= before:  # its run's chat span has started
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the recorder too: nothing ends the run's spans
        proc.wait()
    deadline = time.monotonic() + 30
    while owner_of(home / "sessions" / source) is not None and time.monotonic() < deadline:
        time.sleep(0.1)


def test_a_run_killed_in_a_call_is_refused_before_any_repair_and_nothing_is_written(tmp_path):
    """Read as `sessions show` reads it (journal first), not from the checkpoint the killed writer left behind."""
    home = tmp_path / "home"
    script = tmp_path / "crash.json"
    script.write_text(json.dumps({"name": "crash", "agents": {"main": [
        "first answer", "second answer", {"text": "never heard", "latency_ms": 8000}]}}))
    source = session_of(cli("run", "--script", str(script), "one", home=home))
    cli("resume", source, "two", home=home)
    _kill_while_waiting(home, source, "three")
    shown = cli("sessions", "show", source, home=home).stdout
    assert "interrupted" in shown
    before = checksums(home / "sessions" / source)
    done = cli("replay", source, home=home, check=False)
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(r"Error: chat span \S+ of main has neither an answer nor an error \(an interrupted call "
                        r"cannot be replayed\)", done.stderr.strip().splitlines()[-1]), done.stderr
    later = cli("replay", source, "--from-run", "3", home=home, check=False)
    assert later.returncode == 2 and "interrupted call cannot be replayed" in later.stderr, later.stderr
    assert sorted(p.name for p in (home / "sessions").iterdir()) == [source]
    assert checksums(home / "sessions" / source) == before


def test_each_run_is_replayed_with_the_parameters_it_recorded(tmp_path):
    """Runs given different --param values: each replayed run sends its own, so --strict matches."""
    home = tmp_path / "home"
    script = tmp_path / "echo.json"
    script.write_text(json.dumps({"name": "echo", "agents": {"main": ["one", "two", "three"]}}))
    source = session_of(cli("run", "--script", str(script), "--param", "temperature=0.3", "Go", home=home))
    cli("resume", source, "--param", "seed=5", "--param", "temperature=1", "again", home=home)
    cli("resume", source, "third", home=home)
    done = cli("replay", source, "--strict", home=home, check=False)
    assert done.returncode == 0, done.stderr
    assert f"replay: 3 LLM calls of 3 runs matched session {source}" in done.stderr.splitlines()
    replayed = session_of(done)
    assert events(home, replayed) == events(home, source)
    later = cli("replay", source, "--strict", "--from-run", "2", home=home, check=False)
    assert later.returncode == 0, later.stderr
    assert f"replay: 2 LLM calls of 2 runs matched session {source}" in later.stderr.splitlines()


EXTERNAL_PROGRAM = '''
import json
import sys

import otel_agents
from otel_agents import Session
import city_app

home, script = sys.argv[1:3]
agent, hooks = city_app.make()
with otel_agents.recording(home=home):
    with Session(agent, hooks=hooks, script=script, app="city_app:make") as session:
        session.run_sync("How big is Paris?")
        session.external("The census was updated.")  # heard between runs: run 2 answers it
        session.run_sync("And now?")
print(json.dumps({"session": session.id}))
'''


def test_a_run_that_answered_an_outside_event_of_the_python_api_is_refused_and_nothing_is_written(tmp_path):
    """`Session.external` between runs is heard by the next run, which replay cannot deliver it to: exit 2, as send."""
    home = tmp_path / "home"
    script = tmp_path / "cities.json"
    script.write_text(json.dumps({"name": "cities", "agents": {"researcher": ["Paris is large.", "Still large."]}}))
    program = tmp_path / "external.py"
    program.write_text(EXTERNAL_PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=os.pathsep.join([str(ROOT), str(APPS)]),
               LITELLM_LOCAL_MODEL_COST_MAP="True", OTEL_TRACES_EXPORTER="none")
    ran = subprocess.run([sys.executable, str(program), str(home), str(script)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    source = json.loads(ran.stdout.splitlines()[-1])["session"]
    lines = [orjson.loads(line) for line in (home / "sessions" / source / "events.jsonl").read_bytes().splitlines()]
    assert [line["source"] for line in lines if line.get("source")] == ["external"]  # what the check must see
    before = checksums(home / "sessions" / source)
    for args in ((), ("--from-run", "2")):
        done = cli("replay", source, *args, home=home, check=False, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"Error: session {source}: run 2 answered an outside event (send, a watched file or "
            "Session.external), which replay does not deliver again (docs/replay.md, Limits)"]
    assert sorted(p.name for p in (home / "sessions").iterdir()) == [source]
    assert checksums(home / "sessions" / source) == before
