"""``otel-agents view SESSION VIEW ...`` against a session saved by a real ``otel-agents run``."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.content_capture import as_json, request_content
from otel_agents.views.loading import span_nodes

SEED_EXAMPLE_1 = [
    {"message_id": "msg_001", "event_type": "agent_created", "agent_id": "agent_root", "language_model": "m"},
    {"message_id": "msg_002", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "user", "content": "Create Jack and Jill for a cafe discussion"},
    {"message_id": "msg_003", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "task", "arguments": "{\"name\": \"Jill\"}"}}]},
    {"message_id": "msg_004", "event_type": "agent_created", "agent_id": "agent_jill", "cause": "msg_003", "name": "Jill", "language_model": "m"},
    {"message_id": "msg_005", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "system", "content": "You are an aspiring author..."},
    {"message_id": "msg_006", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "tool", "tool_call_id": "c1", "content": "Created subagent: Jill"},
    {"message_id": "msg_012", "event_type": "piece_of_text", "agent_id": "agent_root", "content": "You meet in a cafe. Introduce yourselves.", "cause": "msg_003"},
    {"message_id": "msg_014", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "user", "content": "You meet in a cafe. Introduce yourselves.", "substance": "msg_012"},
    {"message_id": "msg_018", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "assistant", "content": "*smiles* Hello, I'm Jill."},
]


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"OTEL_AGENTS_HOME": str(home), "OTEL_AGENTS_CAPTURE_INPUT_MESSAGES": "true",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    return env


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One real `otel-agents run` (a subprocess) recording into its own sessions directory."""
    home = tmp_path_factory.mktemp("view-cli") / "home"
    sessions = home / "sessions"
    done = subprocess.run(
        [sys.executable, "-m", "otel_agents", "run", "--sessions-dir", str(sessions),
         "Create Jack and Jill for a cafe discussion"],
        capture_output=True, text=True, env=clean_env(home), timeout=120,
    )
    assert done.returncode == 0, done.stderr
    session_id = done.stderr.strip().splitlines()[-1].split("session: ")[1]
    seed = sessions / "seed-example-1"
    seed.mkdir()
    (seed / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SEED_EXAMPLE_1))
    return home, sessions, session_id


def view(saved, *args: str):
    home, _, _ = saved
    result = CliRunner().invoke(cli, ["view", *args], env={"OTEL_AGENTS_HOME": str(home)})
    return result


def chat_nodes(sessions: Path, session_id: str) -> list[dict]:
    with gzip.open(sessions / session_id / "tree.json.gz") as fh:
        tree = json.load(fh)
    return [n for n in span_nodes(tree) if sc.CONTEXT_AGENT_ID in n["attributes"]]


def test_every_view_text_and_json(saved):
    _, _, sid = saved
    agents = view(saved, sid, "agents")
    assert agents.exit_code == 0, agents.output
    assert agents.stdout.splitlines()[0].split() == ["ID", "NAME", "PARENT", "ROLE", "MODEL"]
    assert [line.split()[1] for line in agents.stdout.splitlines()[1:]] == ["main", "Jack", "Jill", "ResourceMonitor", "Inner"]

    dialog = view(saved, sid, "dialog", "Jack", "Jill")
    assert [line.split(" ", 1)[1] for line in dialog.stdout.splitlines()] == [
        "main: You meet in a cafe. Introduce yourselves.",
        "Jack: Hi, I'm Jack. *extends hand*",
        "Jill: *smiles* Hello Jack, I'm Jill.",
    ]
    document = json.loads(view(saved, sid, "dialog", "agent_002", "main/Jill", "--json").stdout)
    assert [(i["speaker"], len(i["entries"])) for i in document["items"]] == [("main", 2), ("Jack", 2), ("Jill", 2)]
    assert document["agents"] == ["agent_002", "agent_003"]

    perspective = view(saved, sid, "perspective", "Inner").stdout.splitlines()
    assert [line.split(" ", 2)[1] for line in perspective] == ["[Heard]", "[Heard]", "[Said]"]
    assert perspective[1].endswith("[Heard] Jill: Jack just introduced himself. What should I say?")

    transcript = json.loads(view(saved, sid, "transcript", "Jack", "--json").stdout)
    assert [e["message"]["role"] for e in transcript["entries"]] == ["system", "user", "assistant", "user"]
    assert all(e["ts"].endswith("Z") for e in transcript["entries"])

    heard_id = transcript["entries"][3]["message_id"]
    chain = json.loads(view(saved, sid, "trace", heard_id, "--json").stdout)["chain"]
    assert [(s["agent"], s["link"]) for s in chain] == [("Jill", None), ("Jack", "substance")]
    said_id = chain[0]["message_id"]
    heard = view(saved, sid, "heard", said_id)
    assert heard.stdout.splitlines()[0] == f"{said_id} Jill [Said] *smiles* Hello Jack, I'm Jill."
    assert heard.stdout.splitlines()[2].startswith(f"    {heard_id} Jack at 20")
    for args in (["agents"], ["transcript", "main"], ["perspective", "main"], ["trace", said_id], ["heard", said_id]):
        assert json.loads(view(saved, sid, *args, "--json").stdout)["version"] == 1


def test_context_of_every_chat_span_is_what_was_sent(saved):
    _, sessions, sid = saved
    nodes = chat_nodes(sessions, sid)
    assert len(nodes) == 13  # 12 LLM calls, one of them retried after a 429
    for node in nodes:
        result = view(saved, sid, "context", node["span_id"], "--json")
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        # The captured content (the registry's shape) is the context shown, converted.
        instructions, history = request_content(document["messages"])
        assert as_json(history) == node["attributes"][sc.GEN_AI_INPUT_MESSAGES]
        assert as_json(instructions) == node["attributes"][sc.GEN_AI_SYSTEM_INSTRUCTIONS]
        text = view(saved, sid, "context", node["span_id"]).stdout.splitlines()
        assert text[0].startswith(f"chat span {node['span_id']}, attempt ")
        assert len(text) == 1 + document["message_count"]
    # By the assistant entry it produced: the last answer of main.
    last = json.loads(view(saved, sid, "transcript", "main", "--json").stdout)["entries"][-1]
    document = json.loads(view(saved, sid, "context", last["message_id"], "--json").stdout)
    assert document["agent"] == "main" and document["messages"][-1]["role"] == "tool"


def test_exact_text_of_a_seed_example(saved):
    assert view(saved, "seed-example-1", "perspective", "Jill").stdout == (
        "msg_005 [Heard] system: You are an aspiring author...\n"
        "msg_014 [Heard] agent_root: You meet in a cafe. Introduce yourselves.\n"
        "msg_018 [Said] *smiles* Hello, I'm Jill.\n"
    )
    assert view(saved, "seed-example-1", "trace", "msg_014").stdout == (
        'msg_003 agent_root [Action] task(name="Jill")\n'
        "msg_012 agent_root [Text] You meet in a cafe. Introduce yourselves.  (cause: msg_003)\n"
        "msg_014 Jill [Heard] agent_root: You meet in a cafe. Introduce yourselves.  (substance: msg_012)\n"
    )
    assert view(saved, "seed-example-1", "transcript", "agent_root").stdout == (
        "msg_002 user: Create Jack and Jill for a cafe discussion\n"
        'msg_003 assistant -> task(name="Jill")\n'
        "msg_006 tool task: Created subagent: Jill\n"
    )


def test_sessions_dir_before_or_after_and_session_paths(saved, tmp_path):
    _, sessions, sid = saved
    empty_home = tmp_path / "elsewhere"
    runner = CliRunner()
    env = {"OTEL_AGENTS_HOME": str(empty_home)}
    before = runner.invoke(cli, ["view", "--sessions-dir", str(sessions), sid, "agents"], env=env)
    after = runner.invoke(cli, ["view", sid, "agents", "--sessions-dir", str(sessions)], env=env)
    by_path = runner.invoke(cli, ["view", str(sessions / sid), "agents"], env=env)
    assert before.exit_code == after.exit_code == by_path.exit_code == 0
    assert before.stdout == after.stdout == by_path.stdout != ""
    missing = runner.invoke(cli, ["view", sid, "agents"], env=env)
    assert missing.exit_code == 2 and f"no session '{sid}'" in missing.output


def test_a_session_with_no_records_views_as_nothing(tmp_path):
    """Another instrumentation's trace, imported, holds spans and no seed-001 records: its agents
    view printed a header over no rows, where every empty view says (nothing)."""
    storage = ["--sessions-dir", str(tmp_path / "sessions"), "--billing-file", str(tmp_path / "billing.jsonl")]
    runner = CliRunner()
    imported = runner.invoke(cli, ["import", str(Path(__file__).parents[1] / "data" / "foreign" / "openinference.json"),
                                   *storage])
    assert imported.exit_code == 0, imported.output
    sessions = ["--sessions-dir", str(tmp_path / "sessions")]
    agents = runner.invoke(cli, ["view", "oi-session-42", "agents", *sessions])
    assert (agents.exit_code, agents.stdout) == (0, "(nothing)\n")
    as_json = runner.invoke(cli, ["view", "oi-session-42", "agents", "--json", *sessions])
    assert json.loads(as_json.stdout)["agents"] == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["perspective", "Bob"], "Error: unknown agent 'Bob' (agents: main, Jack, Jill, ResourceMonitor, Inner)"),
        (["dialog", "Jack", "Nobody"], "Error: unknown agent 'Nobody'"),
        (["trace", "msg_999999"], "Error: unknown message 'msg_999999'"),
        (["heard", "nope"], "Error: unknown message 'nope'"),
        (["context", "ffffffffffffffff"], "Error: no span 'ffffffffffffffff' in this session"),
        (["transcript", "Jack", "--after", "msg_000001"], "Error: msg_000001 is not a transcript entry of Jack"),
    ],
)
def test_unknown_things_are_one_line_errors_with_exit_2(saved, args, message):
    _, _, sid = saved
    result = view(saved, sid, *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1  # one line, no usage text


def test_transcript_after_takes_a_unique_start_of_a_message_id(saved, tmp_path):
    """A message id copied short names the one id it begins, in transcript --after as in trace and heard;
    the start of several ids, or of none, is a one-line exit 2."""
    records = [{"message_id": "msg_000001", "event_type": "agent_created", "agent_id": "a1", "name": "Ann"}]
    records += [{"message_id": f"msg_{n:06d}", "event_type": "transcript_entry", "agent_id": "a1",
                 "role": "user" if n % 2 else "assistant", "content": f"line {n}"} for n in range(2, 11)]
    session = tmp_path / "short-ids"
    session.mkdir()
    (session / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    whole = view(saved, str(session), "transcript", "Ann", "--after", "msg_000010")
    short = view(saved, str(session), "transcript", "Ann", "--after", "msg_00001")  # msg_000010 alone
    assert whole.exit_code == short.exit_code == 0, short.output
    assert short.stdout == whole.stdout and short.stdout.splitlines()[-1] == "msg_000010 assistant: line 10"
    trace = view(saved, str(session), "trace", "msg_00001", "--json")
    assert trace.exit_code == 0 and json.loads(trace.stdout)["message_id"] == "msg_000010"  # the whole id
    for given, error in [
        ("msg_00000", "Error: message id 'msg_00000' is the start of 9 ids (msg_000001, msg_000002, msg_000003, "
                      "msg_000004, msg_000005, ...); give more of it"),
        ("msg_9", "Error: unknown message 'msg_9'"),
    ]:
        refused = view(saved, str(session), "transcript", "Ann", "--after", given)
        assert (refused.exit_code, refused.stdout, refused.stderr) == (2, "", error + "\n")


def test_bad_sessions_and_non_chat_spans(saved, tmp_path):
    _, sessions, sid = saved
    assert view(saved, "../etc", "agents").exit_code == 2
    invalid = view(saved, "bad id!", "agents")
    assert invalid.exit_code == 2 and "invalid session id 'bad id!'" in invalid.output
    with gzip.open(sessions / sid / "tree.json.gz") as fh:
        tool_span = next(n for n in span_nodes(json.load(fh)) if n.get("name") == "execute_tool task")
    result = view(saved, sid, "context", tool_span["span_id"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: span {tool_span['span_id']} (execute_tool task) is not a chat span"
    no_tree = view(saved, "seed-example-1", "context", "0011223344556677")
    assert no_tree.exit_code == 2 and "no tree.json.gz" in no_tree.stderr
    # A damaged events file is reported, and nothing is written to it.
    broken = sessions / "broken"
    broken.mkdir()
    (broken / "events.jsonl").write_bytes(
        b'{"message_id": "msg_1", "event_type": "agent_created", "agent_id": "agent_001"}\n{oops\n{}\n'
    )
    before = (broken / "events.jsonl").read_bytes()
    result = view(saved, "broken", "agents")
    assert result.exit_code == 2 and "events.jsonl:2: not a valid record line" in result.stderr
    assert (broken / "events.jsonl").read_bytes() == before


def test_help_shows_the_syntax(saved):
    result = CliRunner().invoke(cli, ["view", "--help"])
    assert result.exit_code == 0
    assert "Usage: cli view [OPTIONS] SESSION COMMAND [ARGS]..." in result.output
    for command in ("agents", "transcript", "dialog", "perspective", "trace", "heard", "context"):
        assert f"  {command} " in result.output
    sub = CliRunner().invoke(cli, ["view", "anything", "dialog", "--help"])
    assert sub.exit_code == 0 and "dialog [OPTIONS] AGENTS..." in sub.output and "--json" in sub.output


def test_a_real_view_process(saved):
    home, _, sid = saved
    done = subprocess.run(
        [sys.executable, "-m", "otel_agents", "view", sid, "perspective", "Jill"],
        capture_output=True, text=True, env=clean_env(home), timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "[Heard] Jack: Hi, I'm Jack. *extends hand*" in done.stdout
    failed = subprocess.run(
        [sys.executable, "-m", "otel_agents", "view", sid, "heard", "msg_x"],
        capture_output=True, text=True, env=clean_env(home), timeout=60,
    )
    assert (failed.returncode, failed.stdout, failed.stderr) == (2, "", "Error: unknown message 'msg_x'\n")


def test_text_views_show_control_characters_as_escapes_and_json_keeps_them(home, monkeypatch, tmp_path):
    # click strips ESC only when stdout is no terminal; BEL, a lone CR and U+202E reached it always.
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    prompt, answer = "ask\a \u202eabc", "line one\r\n\tsaid\rover \x1b[2J \x9b done"
    script = tmp_path / "ctl.json"
    script.write_text(json.dumps({"name": "ctl", "agents": {"main": [answer]}}))
    runner = CliRunner()
    assert runner.invoke(cli, ["run", "--script", str(script), prompt], catch_exceptions=False).exit_code == 0
    (directory,) = (home / "sessions").iterdir()
    for view in (["perspective", "main"], ["dialog", "main"], ["transcript", "main"]):
        text = runner.invoke(cli, ["view", str(directory), *view], catch_exceptions=False)
        assert text.exit_code == 0, text.output
        out = text.stdout_bytes.decode()
        assert "ask\\x07 \\u202eabc" in out, view
        assert "line one\n    \tsaid\\rover \\x1b[2J \\x9b done" in out, view  # its lines kept, indented
        document = runner.invoke(cli, ["view", str(directory), *view, "--json"], catch_exceptions=False)
        assert {prompt, answer} <= set(_strings(json.loads(document.stdout_bytes))), view  # the exact content


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
