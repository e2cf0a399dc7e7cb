"""`otel-agents fork`: the fork's state is the source's just after the message, its continuation is the
source's, the source is never written, the fork verifies and bills only its own calls; bad --at is one line."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from otel_agents.forking import FORKED_RESULT
from otel_agents.views import SessionViewer
from support.in_process import run_in_process

DATA = Path(__file__).resolve().parents[1] / "data"
DEEP = str(DATA / "deep-hooks.json")
DEMO_PROMPTS = ["Create Jack and Jill for a cafe discussion", "And then?", "Goodbye."]
VOLATILE = {"ts", "trace_id", "span_id"}


def otel_agents(home: Path, *args: str) -> subprocess.CompletedProcess:
    return run_in_process(*args, home=home, env={"OTEL_TRACES_EXPORTER": "none"}, cwd=home.parent)


def session_id_of(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("session: ")]
    assert lines, done.stderr
    return lines[-1].split(": ", 1)[1]


def event_lines(home: Path, sid: str) -> list[dict]:
    return [orjson.loads(line) for line in (home / "sessions" / sid / "events.jsonl").read_bytes().splitlines()]


def core(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in VOLATILE}


def number(message_id: str) -> int:
    return int(message_id.rsplit("_", 1)[1])


def fingerprint(home: Path, sid: str) -> dict[str, str]:
    """Every file of the session directory (a lock file appearing would show) and the session's ledger lines."""
    directory = home / "sessions" / sid
    sums = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}
    billing = home / "billing.jsonl"
    ledger = [line for line in billing.read_bytes().splitlines() if sid.encode() in line] if billing.exists() else []
    sums["ledger"] = hashlib.sha256(b"\n".join(ledger)).hexdigest()
    return sums


def state_at(records: list[dict], message_id: str) -> dict[str, list[str]]:
    """Each agent's transcript (message ids) just after ``message_id``, replayed from the source's records."""
    transcripts: dict[str, list[str]] = {}
    for record in records:
        if number(record["message_id"]) > number(message_id):
            break
        kind, agent = record["event_type"], record["agent_id"]
        if kind == "agent_created":
            transcripts[agent] = []
        elif kind == "transcript_entry":
            transcripts[agent].append(record["message_id"])
        elif kind == "transcript_truncated":
            del transcripts[agent][record["keep"]:]
    return transcripts


def fork(home: Path, source: str, at: str, *args: str) -> str:
    before = fingerprint(home, source)
    done = otel_agents(home, "fork", source, "--at", at, *args)
    assert done.returncode == 0, done.stderr
    if not args:
        assert done.stdout == ""  # no prompt, no answer: not even an empty line
    assert fingerprint(home, source) == before  # read-only on the source: every file and its ledger lines
    sid = session_id_of(done)
    assert sid != source
    verified = otel_agents(home, "sessions", "verify", sid)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return sid


def check_fork_state(home: Path, source: str, sid: str, message_id: str) -> None:
    """The fork holds the source's records up to the message, its agents and transcripts as they were there."""
    source_records = [core(line) for line in event_lines(home, source)]
    prefix = [r for r in source_records if number(r["message_id"]) <= number(message_id)]
    forked = [core(line) for line in event_lines(home, sid)]
    assert forked[:len(prefix)] == prefix
    new = forked[len(prefix):]
    assert new and all(number(r["message_id"]) > number(message_id) for r in new)  # the id counter goes on
    expected = state_at(source_records, message_id)
    created_later = {r["agent_id"] for r in source_records if r["event_type"] == "agent_created"} - set(expected)
    viewer = SessionViewer.from_session_dir(home / "sessions" / sid)
    agents = {a.agent_id for a in viewer.list_agents()}
    fork_created = {r["agent_id"] for r in new if r["event_type"] == "agent_created"}
    assert agents == set(expected) | fork_created
    numbers = [int(a.rsplit("_", 1)[1]) for a in expected]
    assert all(int(a.rsplit("_", 1)[1]) > max(numbers) for a in fork_created)  # agent ids are not reused
    truncated = {r["agent_id"] for r in new if r["event_type"] == "transcript_truncated"}
    for agent, ids in expected.items():
        if agent in truncated:
            continue  # the fork's own run cut it: what is left of the prefix is checked by the events above
        entries = [e["message_id"] for e in viewer.get_transcript(agent)]
        assert [m for m in entries if number(m) <= number(message_id)] == ids, agent
    # Agents created after the message do not exist in the fork, unless the fork made its own.
    for agent in created_later - fork_created:
        assert agent not in agents


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    home = tmp_path_factory.mktemp("fork") / "home"
    done = otel_agents(home, "run", *DEMO_PROMPTS)
    assert done.returncode == 0, done.stderr
    return home, session_id_of(done)


@pytest.mark.parametrize("fraction", [0.1, 0.45, 0.8])
def test_fork_of_the_demo_has_the_sources_state_at_the_message(demo, fraction):
    home, source = demo
    lines = event_lines(home, source)
    first_run = [line for line in lines if line["trace_id"] == lines[0]["trace_id"]]
    message = first_run[int(len(first_run) * fraction)]
    sid = fork(home, source, message["message_id"], "And then?")
    check_fork_state(home, source, sid, message["message_id"])

    meta = orjson.loads((home / "sessions" / sid / "meta.json").read_bytes())
    assert meta["forked_from"] == {"session": source, "message": message["message_id"]}
    tree = orjson.loads(otel_agents(home, "sessions", "show", sid, "--json").stdout)["session"]
    links = tree["runs"][0]["links"]
    # The link names the source span that recorded the message.
    assert any(link["trace_id"] == message["trace_id"] and link["span_id"] == message["span_id"] for link in links), links
    listed = otel_agents(home, "sessions", "list")
    line = next(line for line in listed.stdout.splitlines() if line.startswith(sid))
    assert f"fork of {source} at {message['message_id']}" in line
    # The ledger bills the fork for its own calls only: as many records as its tree has LLM attempts, same cost.
    rows = [orjson.loads(row) for row in (home / "billing.jsonl").read_bytes().splitlines()]
    mine = [row for row in rows if row["session_id"] == sid]
    assert {row["trace_id"] for row in mine} <= set(tree["trace_ids"])  # none of the source's traces
    assert not {row["record_id"] for row in mine} & {row["record_id"] for row in rows if row["session_id"] == source}
    calls = [row for row in mine if row["type"] == "llm"]
    assert len(calls) == meta["totals"]["llm_calls"]
    assert sum(row["cost_usd"] or 0 for row in calls) == pytest.approx(meta["totals"]["cost_usd"])


def test_fork_with_the_sources_next_prompts_reproduces_its_continuation(demo):
    home, source = demo
    lines = event_lines(home, source)
    last_of_run_1 = [line for line in lines if line["trace_id"] == lines[0]["trace_id"]][-1]
    sid = fork(home, source, last_of_run_1["message_id"], *DEMO_PROMPTS[1:])
    assert [core(line) for line in event_lines(home, sid)] == [core(line) for line in lines]


def test_a_fork_without_prompts_holds_the_state_and_resumes_into_the_sources_continuation(demo):
    home, source = demo
    lines = event_lines(home, source)
    last_of_run_1 = [line for line in lines if line["trace_id"] == lines[0]["trace_id"]][-1]
    sid = fork(home, source, last_of_run_1["message_id"])  # no prompt: one run that records the state, no LLM call
    meta = orjson.loads((home / "sessions" / sid / "meta.json").read_bytes())
    assert meta["runs"] == 1 and meta["totals"]["llm_calls"] == 0
    before = fingerprint(home, source)
    resumed = otel_agents(home, "resume", sid, *DEMO_PROMPTS[1:])
    assert resumed.returncode == 0, resumed.stderr
    assert fingerprint(home, source) == before  # the fork's directory is complete on its own
    assert [core(line) for line in event_lines(home, sid)] == [core(line) for line in lines]


def test_fork_at_a_path_label_starts_after_the_last_message_inside_that_node(demo):
    home, source = demo
    tree = orjson.loads(otel_agents(home, "sessions", "show", source, "--json").stdout)["session"]
    run = tree["runs"][1]  # run 2, addressed as 2:LABEL
    turn = run["turns"][0]
    ids, stack = [], [turn]
    while stack:
        node = stack.pop()
        ids.extend(event["record"]["message_id"] for event in node.get("events", []))
        stack.extend(node.get("ops", []) + node.get("turns", []) + ([node["session"]] if node.get("session") else []))
    expected = max(ids, key=number)
    sid = fork(home, source, f"2:{turn['path']}", "Goodbye.")
    meta = orjson.loads((home / "sessions" / sid / "meta.json").read_bytes())
    assert meta["forked_from"]["message"] == expected
    check_fork_state(home, source, sid, expected)


def test_fork_inside_the_deepest_sub_agent(tmp_path):
    home = tmp_path / "home"
    done = otel_agents(home, "run", "--script", DEEP, "Start.", "Go deep.")
    assert done.returncode == 0, done.stderr
    source = session_id_of(done)
    lines = event_lines(home, source)
    created = {line["agent_id"]: line for line in lines if line["event_type"] == "agent_created"}
    deepest = next(agent for agent, line in created.items() if line["name"] == "C")
    # C's parent is B, whose parent is A, whose parent is main: three levels of sub-agents.
    chain, agent = [], deepest
    while agent is not None:
        chain.append(created[agent]["name"])
        agent = created[agent].get("parent")
    assert chain == ["C", "B", "A", "main"]
    said = [line for line in lines if line["agent_id"] == deepest and line.get("role") == "assistant"]
    assert said
    message = said[0]["message_id"]
    sid = fork(home, source, message, "Again.")
    check_fork_state(home, source, sid, message)
    # The tool calls open above C when it spoke (B's task or discuss, and A's and main's) got a result saying why.
    forked = event_lines(home, sid)
    repaired = [line for line in forked if number(line["message_id"]) > number(message)
                and line.get("role") == "tool" and line.get("content") == FORKED_RESULT]
    assert {line["agent_id"] for line in repaired} >= {created[created[deepest]["parent"]]["agent_id"]}


def _discuss_of_main(home: Path, sid: str) -> tuple[dict, list[dict]]:
    """The demo's first discuss call of main (Jack, then Jill) and the tool results it replied."""
    lines = event_lines(home, sid)
    call = next(line for line in lines if line["agent_id"] == "agent_001" and line.get("tool_calls")
                and line["tool_calls"][0]["function"]["name"] == "discuss")
    call_id = call["tool_calls"][0]["id"]
    return call, [line for line in lines if line.get("tool_call_id") == call_id]


def _context_after(home: Path, sid: str, agent: str, after: str) -> list[dict]:
    """The messages of ``agent``'s first LLM call in the fork (its first assistant entry after ``after``)."""
    answer = next(line for line in event_lines(home, sid) if line["agent_id"] == agent
                  and line.get("role") == "assistant" and number(line["message_id"]) > number(after))
    shown = otel_agents(home, "view", sid, "context", answer["message_id"], "--json")
    assert shown.returncode == 0, shown.stderr
    return orjson.loads(shown.stdout)["messages"]


def test_fork_between_two_speakers_of_a_discuss_says_the_call_was_cut_after_its_replies(demo):
    home, source = demo
    call, replies = _discuss_of_main(home, source)
    jack, jill = replies[0], replies[-1]
    assert len(replies) == 2 and "Jack" in jack["content"] and "Jill" in jill["content"]
    sid = fork(home, source, jack["message_id"], "And then?")
    check_fork_state(home, source, sid, jack["message_id"])
    messages = _context_after(home, sid, "agent_001", jack["message_id"])
    results = [m for m in messages if m.get("tool_call_id") == call["tool_calls"][0]["id"]]
    # Jack's reply is kept, then the call is said to be cut: the model does not take it for a finished discussion.
    assert [m["content"] for m in results] == [jack["content"], FORKED_RESULT]
    assert messages.index(results[-1]) + 1 == len(messages) - 1 and messages[-1] == {"role": "user",
                                                                                   "content": "And then?"}


@pytest.mark.parametrize("speaker", [0, -1])
def test_fork_at_a_speakers_own_words_gives_the_caller_that_reply(demo, speaker):
    """At Jack's entry, before main's copy of it (recorded next): main still hears Jack, then the cut. At the
    last speaker's words, the same: main hears every reply, and the call is cut before the others heard Jill."""
    home, source = demo
    call, replies = _discuss_of_main(home, source)
    copy = replies[speaker]
    lines = event_lines(home, source)
    words = [line for line in lines if line.get("role") == "assistant" and line["agent_id"] != "agent_001"
             and number(line["message_id"]) < number(copy["message_id"])][-1]
    assert words["content"] in copy["content"]
    sid = fork(home, source, words["message_id"], "And then?")
    check_fork_state(home, source, sid, words["message_id"])
    messages = _context_after(home, sid, "agent_001", words["message_id"])
    results = [m["content"] for m in messages if m.get("tool_call_id") == call["tool_calls"][0]["id"]]
    assert results == [r["content"] for r in replies[:replies.index(copy) + 1]] + [FORKED_RESULT]


def test_fork_after_everything_a_discuss_said_adds_no_result(demo):
    home, source = demo
    call, replies = _discuss_of_main(home, source)
    lines = event_lines(home, source)
    # Jill's reply goes to main, then Jack hears it: after that nothing of the call is left to come.
    heard = next(line for line in lines if number(line["message_id"]) > number(replies[-1]["message_id"]))
    assert heard["agent_id"] != "agent_001" and "Jill" in heard["content"]
    sid = fork(home, source, heard["message_id"], "And then?")
    forked = event_lines(home, sid)
    assert not [line for line in forked if line.get("content") == FORKED_RESULT]


@pytest.mark.parametrize("at", ["msg_999999", "9-9", "not a label", "7:1", "1-0", ":1", "1:", "2:0"])
def test_bad_at_is_one_line_and_exit_2(demo, at):
    home, source = demo
    before = fingerprint(home, source)
    sessions = set((home / "sessions").iterdir())
    done = otel_agents(home, "fork", source, "--at", at, "And then?")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    # One line: the command was written rightly, so click's usage block and --help hint would not help.
    assert done.stderr.startswith("Error: ") and len(done.stderr.splitlines()) == 1, done.stderr
    assert at in done.stderr or "no message" in done.stderr
    assert set((home / "sessions").iterdir()) == sessions  # no fork was created
    assert fingerprint(home, source) == before


def test_fork_of_an_unknown_session_is_exit_2(demo):
    home, _ = demo
    done = otel_agents(home, "fork", "20990101-000000-abcdef", "--at", "msg_000001", "Hi")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


SLOW_SCRIPT = {
    "name": "slow",
    "root": {"name": "main", "system_prompt": "Coordinate."},
    "agents": {
        "main": [
            {"tool_calls": [{"name": "task", "arguments": {"name": "Helper", "system_prompt": "Help.",
                                                         "user_prompt": "Think."}}]},
            "made a helper",
        ],
        "Helper": [{"text": "thinking forever", "latency_ms": 120000}],
    },
}


def test_fork_of_a_killed_run_leaves_what_the_crash_left_untouched(tmp_path):
    """A session whose writer was SIGKILLed is forked from its journal; nothing of it is repaired on disk."""
    import json
    import signal
    import time

    from otel_agents.persistence.ownership import owner_of

    home = tmp_path / "home"
    script = tmp_path / "slow.json"
    script.write_text(json.dumps(SLOW_SCRIPT))
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))}
    environment.update({"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none"})
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--script", str(script), "Go."],
                            env=environment, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # until the Helper has heard its prompt and waits on its answer
            found = list((home / "sessions").glob("*/events.jsonl")) if (home / "sessions").exists() else []
            if found and b'"Think."' in found[0].read_bytes():
                break
            time.sleep(0.2)
        else:
            pytest.fail("the run never reached the Helper")
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    (directory,) = (home / "sessions").iterdir()
    while owner_of(directory) is not None and time.monotonic() < deadline:  # the recorder process ends too
        time.sleep(0.2)
    source = directory.name
    lines = event_lines(home, source)
    heard = next(line for line in lines if line.get("content") == "Think.")
    before = fingerprint(home, source)
    sid = fork(home, source, heard["message_id"], "Go.")  # checks the source is unchanged, and that the fork verifies
    assert fingerprint(home, source) == before
    check_fork_state(home, source, sid, heard["message_id"])
    # main's task call was still open at the message: the fork gives it a result saying why it has none.
    forked = event_lines(home, sid)
    assert any(line.get("role") == "tool" and line.get("content") == FORKED_RESULT for line in forked)
    # The crashed run stays unbilled: billing it is the writer's job (resume, sessions repair), not a reader's.
    assert not [row for row in (home / "billing.jsonl").read_bytes().splitlines() if source.encode() in row]


def _task(name: str, prompt: str) -> dict:
    return {"tool_calls": [{"name": "task", "arguments": {"name": name, "user_prompt": prompt}}]}


BUDGETED = {  # the Worker is made only in the run after the fork point; its script budget stops it early
    "name": "fork-budgets",
    "agents": {
        "main": ["hello", _task("Worker", "work"), "The worker stopped early."],
        "Worker": [{"tool_calls": [{"name": "task", "arguments": {"name": "Helper"}}],
                    "usage": {"input_tokens": 30, "output_tokens": 5}}, "never said"],
    },
    "agent_budgets": {"Worker": {"max_tokens": 20}},
}


def _last_message_of_run_1(home: Path, sid: str) -> str:
    lines = event_lines(home, sid)
    return [line for line in lines if line["trace_id"] == lines[0]["trace_id"]][-1]["message_id"]


def test_fork_keeps_the_scripts_agent_budgets(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "budgeted.json"
    script.write_text(orjson.dumps(BUDGETED).decode())
    source = session_id_of(otel_agents(home, "run", "--script", str(script), "hi"))
    sid = fork(home, source, _last_message_of_run_1(home, source), "go")
    results = [line["content"] for line in event_lines(home, sid) if line.get("role") == "tool"]
    # Without the script's budget the Worker would have answered "never said" to main.
    assert results[-1] == "Error: budget exhausted for Worker: 35 of 20 tokens spent"


EVICTING = {  # three sub-agents made in run 1, spoken to in turn by the fork: some must leave memory
    "name": "fork-evict",
    "root": {"name": "main", "system_prompt": "You coordinate."},
    "agents": {
        "main": [_task("A1", "hi A1"), _task("A2", "hi A2"), _task("A3", "hi A3"), "made",
                 {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["A1", "A2", "A3"], "prompt": "go"}}]},
                 "talked"],
        # Slow answers: the recorder process writes a finished agent's records meanwhile, so it may leave memory.
        **{name: [{"text": f"{name} says {n}", "latency_ms": 300} for n in ("one", "two")]
           for name in ("A1", "A2", "A3")},
    },
}


def _evicted(home: Path, sid: str) -> list[int | None]:
    from otel_agents.persistence.saved import load_saved
    from otel_agents.tracing import semconv as sc

    return [run["attributes"].get(sc.RUN_AGENTS_EVICTED) for run in load_saved(home / "sessions" / sid).tree["runs"]]


@pytest.mark.parametrize("how", ["option", "script"])
def test_fork_evicts_by_the_option_or_the_scripts_eviction_and_saves_what_keeping_them_saves(tmp_path, how):
    home = tmp_path / "home"
    kept_script, evicting_script = tmp_path / "kept.json", tmp_path / "evicting.json"
    kept_script.write_text(orjson.dumps(EVICTING).decode())
    evicting_script.write_text(orjson.dumps({**EVICTING, "eviction": {"max_live_agents": 0}}).decode())
    source = session_id_of(otel_agents(home, "run", "--script", str(kept_script), "make them"))
    at = _last_message_of_run_1(home, source)
    plain = fork(home, source, at, "talk")
    lean = fork(home, source, at, "talk", *(["--max-live-agents", "0"] if how == "option"
                                             else ["--script", str(evicting_script)]))
    assert [core(line) for line in event_lines(home, lean)] == [core(line) for line in event_lines(home, plain)]
    assert _evicted(home, plain) == [None]
    assert _evicted(home, lean)[0] > 0  # agents really left memory, and came back from the fork's own records


NESTED = {  # main's task makes Helper, whose own task makes Deep: two calls open while Deep answers
    "name": "fork-nested",
    "root": {"name": "main", "system_prompt": "Coordinate."},
    "agents": {
        "main": [_task("Helper", "Ask Deep."), "made a helper", "bye"],
        "Helper": [_task("Deep", "Think."), "Deep thought so."],
        "Deep": ["deep thought"],
    },
}


def test_fork_inside_nested_calls_closes_the_inner_call_first_and_every_prefix_forks_and_resumes(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "nested.json"
    script.write_text(orjson.dumps(NESTED).decode())
    source = session_id_of(otel_agents(home, "run", "--script", str(script), "Go."))
    lines = event_lines(home, source)
    deep = next(line for line in lines if line.get("content") == "deep thought")
    sid = fork(home, source, deep["message_id"])  # main's task and Helper's task are both open there
    fillers = [line for line in event_lines(home, sid) if line.get("content") == FORKED_RESULT]
    names = {line["agent_id"]: line["name"] for line in lines if line["event_type"] == "agent_created"}
    # Helper's call ran inside main's: its result comes first, so no prefix has main's call closed around an open one.
    assert [names[line["agent_id"]] for line in fillers] == ["Helper", "main"]
    for line in fillers:
        again = fork(home, sid, line["message_id"])  # a fork of the fork at each of them: consistent state
        forked = event_lines(home, again)
        assert [names[f["agent_id"]] for f in forked if f.get("content") == FORKED_RESULT].count("main") == 1
        resumed = otel_agents(home, "resume", again, "More.")
        assert resumed.returncode == 0, resumed.stderr
        verified = otel_agents(home, "sessions", "verify", again)
        assert verified.returncode == 0, verified.stdout + verified.stderr
