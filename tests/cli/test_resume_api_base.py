"""resume, send and fork go on with the api base the session ran on (the CLI and Python alike), and say
each agent's model change from the model it ran on last."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.tracing import semconv as sc
from support.openai_server import OpenAIServer

FAST = ("--max-attempts", "1", "--timeout", "5")  # a call sent elsewhere fails at once, not after four tries


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def session_of(result) -> str:
    assert result.exit_code == 0, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]


def runs(home: Path, sid: str) -> list[dict]:
    return json.loads(gzip.decompress((home / "sessions" / sid / "tree.json.gz").read_bytes()))["session"]["runs"]


def meta(home: Path, sid: str) -> dict:
    return orjson.loads((home / "sessions" / sid / "meta.json").read_bytes())


def last_prompt(server: OpenAIServer) -> str:
    return server.bodies[-1]["messages"][-1]["content"]


def test_resume_and_send_go_on_with_the_api_base_the_session_ran_on(home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        base = server.api_base
        sid = session_of(invoke("run", "--model", "openai/basic", "--api-base", base, "one"))
        assert invoke("resume", sid, *FAST, "two").exit_code == 0
        assert last_prompt(server) == "two"
        assert invoke("send", sid, "--to", "main", *FAST, "event").exit_code == 0
        assert last_prompt(server) == "event"
        assert len(server.bodies) == 3
    assert [run["attributes"][sc.RUN_API_BASE] for run in runs(home, sid)] == [base] * 3
    assert meta(home, sid)["last_run"]["api_base"] == base
    shown = invoke("sessions", "show", sid)
    assert shown.stdout.count(f"  api base {base}\n") == 3


def test_a_new_api_base_is_gone_on_with_and_an_empty_one_means_the_providers_default(home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as first, OpenAIServer() as second:
        sid = session_of(invoke("run", "--model", "openai/basic", "--api-base", first.api_base, "one"))
        assert invoke("resume", sid, "--api-base", second.api_base, *FAST, "two").exit_code == 0
        assert invoke("resume", sid, *FAST, "three").exit_code == 0
        assert [last_prompt(second), len(second.bodies), len(first.bodies)] == ["three", 2, 1]
        CliRunner().invoke(cli, ["resume", sid, "--api-base", "", "--max-attempts", "1", "--timeout", "1", "four"])
        assert (len(first.bodies), len(second.bodies)) == (1, 2)  # neither: the provider's own endpoint
    assert sc.RUN_API_BASE not in runs(home, sid)[-1]["attributes"]


def test_a_base_recorded_without_its_secret_is_refused_and_the_session_left_as_it_was(home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        base = server.api_base + "?api-version=1&key=key-of-the-proxy"  # a key in a query: what a proxy may take
        sid = session_of(invoke("run", "--model", "openai/basic", "--api-base", base, "one"))
        recorded = runs(home, sid)[0]["attributes"][sc.RUN_API_BASE]
        assert recorded == server.api_base + "?api-version=1&key=[REDACTED]"
        directory = home / "sessions" / sid
        before = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
        result = CliRunner().invoke(cli, ["resume", sid, *FAST, "two"])
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().splitlines()[-1] == (
            f"Error: session {sid} ran on api base {recorded}, recorded without its secret: "
            "pass --api-base (api_base=) again")
        assert {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()} == before
        assert len(server.bodies) == 1
        assert invoke("resume", sid, "--api-base", base, *FAST, "two").exit_code == 0
        assert last_prompt(server) == "two"


def test_a_fork_goes_on_with_the_api_base_of_the_run_it_forks(home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        base = server.api_base
        sid = session_of(invoke("run", "--model", "openai/basic", "--api-base", base, "one"))
        forked = session_of(invoke("fork", sid, "--at", "1", *FAST, "two"))
        assert last_prompt(server) == "two"
    assert runs(home, forked)[0]["attributes"][sc.RUN_API_BASE] == base


def test_python_resume_and_fork_go_on_with_the_api_base_the_session_ran_on(home, monkeypatch):
    import otel_agents

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with OpenAIServer() as server:
        base = server.api_base
        with otel_agents.recording(home=home):
            with otel_agents.Session(otel_agents.Agent("main", model="openai/basic"), api_base=base,
                                     max_attempts=1) as session:
                session.run_sync("one")
            with otel_agents.resume(session.id, max_attempts=1) as resumed:
                resumed.run_sync("two")
            assert last_prompt(server) == "two"
            with otel_agents.fork(session.id, at="1", max_attempts=1) as forked:
                forked.run_sync("three")
            assert last_prompt(server) == "three"
    assert [run["attributes"][sc.RUN_API_BASE] for run in runs(home, session.id)] == [base] * 2


def test_model_changes_are_said_from_the_model_each_agent_ran_on_last(home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        sid = session_of(invoke("run", "--model", "openai/m1", "--api-base", server.api_base, "one"))
        said = []
        for args in (("--model", "openai/m2"), (), ("--model", "openai/m1")):
            result = invoke("resume", sid, *args, *FAST, "-v", "next")
            assert result.exit_code == 0, result.stderr
            said.append([line.split("VRB ", 1)[1] for line in result.stderr.splitlines() if "model changed" in line])
        assert [body["model"] for body in server.bodies] == ["m1", "m2", "m2", "m1"]
    assert said == [["model changed: openai/m1 -> openai/m2 for 1 agent"], [],
                    ["model changed: openai/m2 -> openai/m1 for 1 agent"]]
    assert [run["attributes"].get(sc.RUN_MODEL_CHANGES) for run in runs(home, sid)] == [
        None, ["openai/m1 -> openai/m2 for 1 agent"], None, ["openai/m2 -> openai/m1 for 1 agent"]]


def test_python_resume_goes_on_with_the_model_the_last_run_was_given(home, monkeypatch):
    # As `otel-agents resume` carries a --model on: the agents went back to their creation model.
    import otel_agents

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with OpenAIServer() as server:
        with otel_agents.recording(home=home):
            with otel_agents.Session(otel_agents.Agent("main", model="openai/m1"), api_base=server.api_base,
                                     max_attempts=1) as session:
                session.run_sync("one")
            with otel_agents.resume(session.id, model="openai/m2", max_attempts=1) as resumed:
                resumed.run_sync("two")
            with otel_agents.resume(session.id, max_attempts=1) as resumed:
                resumed.run_sync("three")
            with otel_agents.resume(session.id, model="openai/m1", max_attempts=1) as resumed:
                resumed.run_sync("four")
        assert [body["model"] for body in server.bodies] == ["m1", "m2", "m2", "m1"]
