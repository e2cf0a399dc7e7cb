"""The built-in demo as a newcomer meets it: scripted failures announced once, where it was saved, what to try next."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DEMO_PROMPT = "Create Jack and Jill for a cafe discussion"


def otel_agents(home: Path, *args: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))}
    environment.update({"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none"})
    return subprocess.run([sys.executable, "-m", "otel_agents", *args], capture_output=True, text=True,
                          env=environment, timeout=120, cwd=home.parent)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    home = tmp_path_factory.mktemp("demo") / "home"
    done = otel_agents(home, "run", DEMO_PROMPT)
    assert done.returncode == 0, done.stderr
    return home, done


def test_the_demo_says_once_that_its_429_and_denial_are_scripted(demo):
    _, done = demo
    lines = done.stderr.splitlines()
    notices = [line for line in lines if line.startswith("demo: ")]
    assert len(notices) == 1 and "429" in notices[0] and "ResourceMonitor" in notices[0] and "scripted" in notices[0]
    warnings = [i for i, line in enumerate(lines) if line.startswith("[txn:") and " WRN " in line]
    assert warnings and lines.index(notices[0]) < warnings[0]  # said before the warnings it explains


def test_the_last_lines_name_the_directory_and_two_commands_that_work(demo):
    home, done = demo
    *_, saved, show, view, last = done.stderr.splitlines()
    session_id = last.removeprefix("session: ")
    assert saved == f"saved: {home / 'sessions' / session_id}" and Path(saved.removeprefix("saved: ")).is_dir()
    assert show == f"next: otel-agents sessions show {session_id}"
    assert view == f"next: otel-agents view {session_id} dialog Jack Jill"
    for command in (show, view):
        args = command.removeprefix("next: otel-agents ").split()
        tried = otel_agents(home, *args)
        assert tried.returncode == 0 and tried.stdout.strip(), (command, tried.stderr)
    assert "Jill" in otel_agents(home, *view.removeprefix("next: otel-agents ").split()).stdout


def test_another_script_gets_no_notice_and_the_storage_options_in_its_commands(tmp_path):
    script = tmp_path / "hello.json"
    script.write_text('{"name": "hello", "agents": {"main": ["Hello."]}}')
    sessions = tmp_path / "elsewhere"
    done = otel_agents(tmp_path / "home", "run", "--script", str(script), "--sessions-dir", str(sessions), "hi")
    assert done.returncode == 0, done.stderr
    assert not any(line.startswith("demo: ") for line in done.stderr.splitlines())
    *_, show, view, last = done.stderr.splitlines()
    session_id = last.removeprefix("session: ")
    assert view == f"next: otel-agents view {session_id} agents --sessions-dir {sessions}"
    tried = otel_agents(tmp_path / "home", *show.removeprefix("next: otel-agents ").split())
    assert tried.returncode == 0 and session_id in tried.stdout


def test_the_demo_prompt_on_a_real_model_suggests_the_agents_view(tmp_path):
    # A real model names its agents as it likes: "dialog Jack Jill" would be a view of nobody.
    from support.openai_server import OpenAIServer, Reply

    with OpenAIServer() as server:
        server.plan(Reply(content="Nobody here is called Jack."))
        done = subprocess.run(
            [sys.executable, "-m", "otel_agents", "run", "--model", "openai/local-model", "--api-base",
             server.api_base, DEMO_PROMPT], capture_output=True, text=True, timeout=120, cwd=tmp_path,
            env={**{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))},
                 "OTEL_AGENTS_HOME": str(tmp_path / "home"), "OTEL_TRACES_EXPORTER": "none",
                 "OPENAI_API_KEY": "sk-test"})
    assert done.returncode == 0, done.stderr
    *_, view, last = done.stderr.splitlines()
    assert view == f"next: otel-agents view {last.removeprefix('session: ')} agents"
    assert not any(line.startswith("demo: ") for line in done.stderr.splitlines())


def test_sessions_show_ids_reaches_view_context(demo):
    home, done = demo
    session_id = done.stderr.splitlines()[-1].removeprefix("session: ")
    plain = otel_agents(home, "sessions", "show", session_id).stdout.splitlines()
    with_ids = otel_agents(home, "sessions", "show", session_id, "--ids").stdout.splitlines()
    assert len(plain) == len(with_ids)
    llm_lines = [line for line in with_ids if " llm " in line]
    assert llm_lines and all(" span " in line for line in llm_lines)
    assert not any(" span " in line for line in plain if " llm " in line)
    span_id = llm_lines[-1].rsplit(" span ", 1)[1]
    context = otel_agents(home, "view", session_id, "context", span_id)
    assert context.returncode == 0, context.stderr
    assert DEMO_PROMPT in context.stdout
