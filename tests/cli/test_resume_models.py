"""`resume --script` / `resume --model`: which model the saved agents continue with, and the change recorded."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.tracing import semconv as sc
from support.openai_server import OpenAIServer, Reply

FIRST = {
    "name": "first-script",
    "agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "A", "system_prompt": "You are A.",
                                                                 "user_prompt": "Hello A."}}]}, "A exists."],
        "A": ["A here."],
    },
}
OTHER = {"name": "other-script", "agents": {}, "fallback": "The other script carries on."}


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def session_of(result) -> str:
    assert result.exit_code == 0, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]


def script_file(tmp_path: Path, script: dict) -> str:
    path = tmp_path / f"{script['name']}.json"
    path.write_text(json.dumps(script))
    return str(path)


def last_run(home: Path, sid: str) -> dict:
    return json.loads(gzip.decompress((home / "sessions" / sid / "tree.json.gz").read_bytes()))["session"]["runs"][-1]


def llm_models(home: Path, sid: str) -> list[set[str]]:
    """The models the LLM calls of each run asked for."""
    from otel_agents.persistence.tree_walk import iter_ops

    tree = json.loads(gzip.decompress((home / "sessions" / sid / "tree.json.gz").read_bytes()))["session"]
    runs: dict[int, set[str]] = {}
    for ref in iter_ops(tree):
        if ref.op["kind"] == "llm":
            # The litellm string; gen_ai.request.model is the provider's name for it.
            runs.setdefault(ref.run["index"], set()).add(ref.op["attributes"][sc.LLM_MODEL])
    return [runs[index] for index in sorted(runs)]


def test_resume_with_another_script_moves_its_scripted_agents_and_records_the_change(home, tmp_path):
    sid = session_of(invoke("run", "--script", script_file(tmp_path, FIRST), "Start."))
    result = invoke("resume", sid, "--script", script_file(tmp_path, OTHER), "-v", "Go on.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "The other script carries on."  # answered by the new script: no failed call
    change = "scripted/first-script -> scripted/other-script for 2 agents"
    assert f"VRB model changed: {change}" in result.stderr
    run = last_run(home, sid)
    assert run["attributes"][sc.RUN_MODEL_CHANGES] == [change]
    assert run["attributes"][sc.RUN_SCRIPT].endswith("other-script.json")
    assert llm_models(home, sid) == [{"scripted/first-script"}, {"scripted/other-script"}]
    assert "ERR" not in result.stderr and "error" not in result.stderr.lower()

    # Back to the first script: a change from what the agents ran on last, not from what they were created with.
    back = invoke("resume", sid, "--script", script_file(tmp_path, FIRST), "Once more.")
    assert back.exit_code == 0, back.stderr
    assert last_run(home, sid)["attributes"][sc.RUN_MODEL_CHANGES] == [
        "scripted/other-script -> scripted/first-script for 2 agents"]
    # The same script again (the session's, by default): nothing changes, nothing is recorded.
    again = invoke("resume", sid, "Once more.")
    assert again.exit_code == 0, again.stderr
    assert sc.RUN_MODEL_CHANGES not in last_run(home, sid)["attributes"]


def test_resume_with_a_model_moves_every_agent_and_says_so_the_same_way(home, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    sid = session_of(invoke("run", "--script", script_file(tmp_path, FIRST), "Start."))
    with OpenAIServer() as server:
        server.plan(Reply(content="A real model answers."))
        result = invoke("resume", sid, "--model", "openai/test-model", "--api-base", server.api_base, "-v", "Go on.")
        (body,) = server.bodies
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "A real model answers."
    change = "scripted/first-script -> openai/test-model for 2 agents"
    assert f"VRB model changed: {change}" in result.stderr
    assert last_run(home, sid)["attributes"][sc.RUN_MODEL_CHANGES] == [change]
    # The real model is sent the whole saved history: the task's result, the answer, the new prompt.
    contents = [m.get("content") for m in body["messages"]]
    assert "Start." in contents and contents[-3:] == ["A here.", "A exists.", "Go on."]


def test_resume_with_another_scripted_model_is_refused_and_the_session_left_as_it_was(home, tmp_path):
    """`--model scripted/x` was dropped without a word; the way to another script is `--script`."""
    sid = session_of(invoke("run", "--script", script_file(tmp_path, FIRST), "Start."))
    directory = home / "sessions" / sid
    before = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    result = CliRunner().invoke(cli, ["resume", sid, "--model", "scripted/other-script", "Go on."])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines()[-1] == ("Error: --model scripted/other-script: a scripted model answers "
                                                      "from its script; choose that script with --script other-script")
    assert {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()} == before
    assert invoke("resume", sid, "--model", "scripted/first-script", "Go on.").exit_code == 0  # its own: no change
