"""``otel-agents run``: prompts from arguments or stdin, stdout = utterances, exit codes 0/1/2."""

from __future__ import annotations

import gzip
import json
import os
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from support.openai_server import OpenAIServer, Reply

ROOT_ANSWER = "Jack and Jill met in the cafe and introduced themselves; a fourth helper was not allowed."


@pytest.fixture
def cli_env(home, monkeypatch):
    """Nothing exported over the network, prices from litellm's bundled map, an isolated home."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.delenv("OTEL_AGENTS_PRICES", raising=False)
    return home


def invoke(args, **kwargs):
    return CliRunner().invoke(cli, ["run", *args], catch_exceptions=False, **kwargs)


def session_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("session: ")]
    assert len(lines) == 1, stderr
    return lines[0].split(": ", 1)[1]


def test_run_prints_only_the_root_utterance(cli_env):
    result = invoke(["Create Jack and Jill for a cafe discussion"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ROOT_ANSWER + "\n"
    session_id = session_line(result.stderr)
    assert session_id and session_id not in result.stdout


def test_several_prompts_are_several_utterances_in_one_session(cli_env, tmp_path):
    otlp = tmp_path / "spans.jsonl"
    result = invoke(["Create Jack and Jill for a cafe discussion", "And now?", "--otlp-file", str(otlp)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [ROOT_ANSWER, "I have nothing further to add."]
    # Two runs, two traces, one conversation id.
    roots = []
    for line in otlp.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                roots += [s for s in ss["spans"] if s["name"] == "invoke_agent main" and not s.get("parentSpanId")]
    assert len(roots) == 2 and len({r["traceId"] for r in roots}) == 2


def test_unknown_script_is_a_usage_error(cli_env):
    result = CliRunner().invoke(cli, ["run", "--script", "no-such-script", "hi"])
    assert result.exit_code == 2
    assert "no script 'no-such-script'" in result.stderr
    assert result.stdout == ""


def test_an_empty_prompt_is_a_usage_error_and_saves_nothing(cli_env):
    result = CliRunner().invoke(cli, ["run", "hi", ""])
    assert result.exit_code == 2 and "prompt 2 is empty: a prompt says something" in result.stderr
    assert result.stdout == ""
    sessions = cli_env / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir())


def test_bad_script_json_is_a_usage_error(cli_env, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "agents": {"main": ["hi"]')
    result = CliRunner().invoke(cli, ["run", "--script", str(bad), "hi"])
    assert result.exit_code == 2
    assert "invalid JSON at line 1" in result.stderr
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"name": "x", "agents": {"main": [{"txt": "typo"}]}}))
    result = CliRunner().invoke(cli, ["run", "--script", str(invalid), "hi"])
    assert result.exit_code == 2 and "unknown turn field(s) ['txt']" in result.stderr


def test_a_scripted_model_of_another_script_is_a_usage_error_not_ignored(cli_env, tmp_path):
    """`--model scripted/x` was dropped without a word: every agent still answered from the script."""
    path = tmp_path / "echo.json"
    path.write_text(json.dumps({"name": "echo-cli", "agents": {"main": ["Echo!"]}}))
    for args in (["--model", "scripted/nonexistent"], ["--script", str(path), "--model", "scripted/jack-and-jill"]):
        result = CliRunner().invoke(cli, ["run", *args, "hi"])
        assert result.exit_code == 2 and result.stdout == "", result.output
        assert result.stderr.strip().splitlines()[-1] == (
            f"Error: --model {args[-1]}: a scripted model answers from its script; "
            f"choose that script with --script {args[-1].removeprefix('scripted/')}")
    assert not (cli_env / "sessions").exists() or not any((cli_env / "sessions").iterdir())  # nothing run
    # The script's own scripted model is the same model: nothing to refuse.
    assert invoke(["--script", str(path), "--model", "scripted/echo-cli", "hi"]).stdout == "Echo!\n"


def test_a_user_script_runs(cli_env, tmp_path):
    path = tmp_path / "echo.json"
    path.write_text(json.dumps({"name": "echo-cli", "agents": {"main": ["Echo!"]}}))
    result = invoke(["--script", str(path), "hello"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Echo!\n"


def test_a_failing_model_exits_1_with_a_clear_message(cli_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.plan(Reply.error(401))
        result = CliRunner().invoke(cli, ["run", "--model", "openai/x", "--api-base", server.api_base, "hi"])
        assert len(server.requests) == 1  # auth failures are not retried
    assert result.exit_code == 1
    assert "error: model 'openai/x' failed after 1 attempt: AuthenticationError" in result.stderr
    assert result.stdout == ""
    session_line(result.stderr)


def test_a_real_model_through_the_cli(cli_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.plan(Reply(content="Hello from the server"))
        result = invoke(["--model", "openai/x", "--api-base", server.api_base, "hi"])
        (body,) = server.bodies
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Hello from the server\n"
    assert body["messages"][-1] == {"role": "user", "content": "hi"}


def test_stdin_prompts_in_a_real_process(cli_env, tmp_path):
    """One prompt per stdin line; the real console script, as a user runs it."""
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"name": "two-cli", "agents": {"main": ["first answer", "second answer"]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(cli_env))
    proc = subprocess.run(
        [sys.executable, "-m", "otel_agents", "run", "--script", str(path)],
        input="one\n\n  two  \n", capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "first answer\nsecond answer\n"
    dash = subprocess.run(  # `-` alone reads stdin, as `send -` does: it was sent to the model as the prompt "-"
        [sys.executable, "-m", "otel_agents", "run", "--script", str(path), "-"],
        input="one\ntwo\n", capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert dash.returncode == 0 and dash.stdout == "first answer\nsecond answer\n", dash.stderr
    # The first turn is timed without the seconds of importing litellm (its span held them).
    tree = json.loads(gzip.decompress((cli_env / "sessions" / session_line(proc.stderr) / "tree.json.gz").read_bytes()))
    turn = tree["session"]["runs"][0]["turns"][0]
    (attempt,) = [op for op in turn["ops"] if op["kind"] == "llm"]
    turn_s, attempt_s = ((n["ended_ns"] - n["started_ns"]) / 1e9 for n in (turn, attempt))
    assert turn_s - attempt_s < 1.0, (turn_s, attempt_s)
    # A usage error from a real process: exit code 2, one clear line, nothing on stdout.
    proc = subprocess.run(
        [sys.executable, "-m", "otel_agents", "run", "--script", str(tmp_path / "missing.json"), "hi"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert "not a file and not a built-in script" in proc.stderr


def test_interactive_prompts_from_a_terminal(cli_env, tmp_path):
    """stdin is a terminal: prompts are read until an empty line; stdout still holds only answers."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"name": "one-tty", "agents": {"main": ["answer one", "answer two"]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(cli_env))
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "otel_agents", "run", "--script", str(path)],
            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path,
        )
        os.close(slave)
        os.write(master, b"first\nsecond\n\n")  # the terminal buffers it until the process reads
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(master)
    assert proc.returncode == 0, err
    assert out.decode() == "answer one\nanswer two\n"
    assert b"session: " in err


def test_a_scripted_remind_hook_fires_at_its_turn_and_is_recorded_with_its_cause(cli_env, tmp_path):
    script = {
        "name": "remind-cli",
        "hooks": [{"kind": "remind", "name": "Nudge", "message": "Remember the budget.", "after_turns": 1}],
        "agents": {"main": ["first", "second"]},
    }
    path = tmp_path / "remind.json"
    path.write_text(json.dumps(script))
    result = invoke(["--script", str(path), "one", "two"])
    assert result.exit_code == 0, result.stderr
    session_id = session_line(result.stderr)
    lines = [json.loads(x) for x in (cli_env / "sessions" / session_id / "events.jsonl").read_text().splitlines()]
    entries = [x for x in lines if x["event_type"] == "transcript_entry"]
    contents = [x.get("content") for x in entries]
    # One turn ("first"), then the reminder joins before the next turn, after the second prompt.
    assert contents[-4:] == ["first", "two", "Remember the budget.", "second"]
    reminder = entries[-2]
    assert reminder["source"] == "system"
    # Its span (the turn) carries the hook event naming the entry and its cause, the prompt before it.
    journal = [json.loads(x) for x in (cli_env / "sessions" / session_id / "spans.jsonl").read_text().splitlines()]
    ended = {x["end"]: x for x in journal if "end" in x}
    events = [e for e in ended[reminder["span_id"]].get("events", []) if e[0] == "otel_agents.hook"]
    assert [e[2] for e in events] == [{
        "otel_agents.hook.kind": "remind", "otel_agents.hook.name": "Nudge", "otel_agents.hook.decision": "remind",
        "otel_agents.hook.reason": "after 1 turn", "otel_agents.hook.message_id": reminder["message_id"],
        "otel_agents.hook.cause": entries[-3]["message_id"],
    }]


def test_host_notices_are_recorded_on_their_spans_and_never_sent_to_the_model(cli_env, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    script = tmp_path / "hooks.json"
    script.write_text(json.dumps({"name": "notices-cli", "agents": {},
                                  "hooks": [{"kind": "approval", "name": "NoHelpers", "deny_tools": ["task"]}]}))
    with OpenAIServer() as server:
        server.plan(
            Reply.error(429, retry_after=0.05),
            Reply(tool_calls=[("task", {"name": "Spy", "system_prompt": "x"})]),
            Reply(content="Done without helpers."),
        )
        result = invoke(["--script", str(script), "--model", "openai/x", "--api-base", server.api_base, "hi"])
        bodies = server.bodies
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Done without helpers.\n"
    session_dir = cli_env / "sessions" / session_line(result.stderr)
    lines = [json.loads(x) for x in (session_dir / "events.jsonl").read_text().splitlines()]
    notices = [x for x in lines if x["event_type"] == "host_notice"]
    assert [n["notice"] for n in notices] == ["retry", "denial"]
    assert "RateLimitError" in notices[0]["content"] and "NoHelpers" in notices[1]["content"]
    # Each on the span that caused it: the failed attempt, the denied tool call.
    journal = [json.loads(x) for x in (session_dir / "spans.jsonl").read_text().splitlines()]
    names = {x["start"]: x["name"] for x in journal if "start" in x}
    assert [names[n["span_id"]] for n in notices] == ["chat x", "execute_tool task"]
    # No model request carries them: the model saw the denial only as the tool result it always gets.
    assert len(bodies) == 3
    sent = json.dumps([body["messages"] for body in bodies])
    assert all(n["content"] not in sent for n in notices) and "Action blocked by hook 'NoHelpers'" in sent
    # Views show them apart from what the agent heard.
    view = CliRunner().invoke(cli, ["view", str(session_dir), "perspective", "main"], catch_exceptions=False)
    host_lines = [line for line in view.stdout.splitlines() if "[Host]" in line]
    assert len(host_lines) == 2 and all(line.endswith("(not sent to the model)") for line in host_lines)


def test_a_working_memory_truncation_is_one_host_notice_never_sent_to_the_model(cli_env, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    script = tmp_path / "forget.json"
    script.write_text(json.dumps({"name": "forget-cli", "agents": {},
                                  "hooks": [{"kind": "reset", "name": "Forget", "max_entries": 4, "keep": 1}]}))
    with OpenAIServer() as server:
        server.plan(Reply(content="One."), Reply(content="Two."), Reply(content="Three."), Reply(content="Four."))
        result = invoke(["--script", str(script), "--model", "openai/x", "--api-base", server.api_base,
                         "first", "second", "third", "fourth"])
        bodies = server.bodies
    assert result.exit_code == 0, result.stderr
    session_dir = cli_env / "sessions" / session_line(result.stderr)
    lines = [json.loads(x) for x in (session_dir / "events.jsonl").read_text().splitlines()]
    (cut,) = [x for x in lines if x["event_type"] == "transcript_truncated"]
    notices = [x for x in lines if x["event_type"] == "host_notice"]
    assert [(n["notice"], n["agent_id"]) for n in notices] == [("truncation", cut["agent_id"])]
    before = [x for x in lines[: lines.index(cut)]
              if x["event_type"] == "transcript_entry" and x["agent_id"] == cut["agent_id"]]
    assert f"first 1 entries ({len(before) - 1} dropped)" in notices[0]["content"] and len(before) > 4
    assert notices[0]["span_id"] == cut["span_id"]  # on the span that caused it, as its truncation record
    # The model's next request starts from the kept entry: neither the dropped ones nor the notice.
    assert len(bodies) == 4 and [m["content"] for m in bodies[3]["messages"]] == ["first", "fourth"]
    assert all(notices[0]["content"] not in json.dumps(body) for body in bodies)
    view = CliRunner().invoke(cli, ["view", str(session_dir), "perspective", "main"], catch_exceptions=False)
    host_lines = [line for line in view.stdout.splitlines() if "[Host]" in line]
    assert len(host_lines) == 1 and "working memory" in host_lines[0] and host_lines[0].endswith("(not sent to the model)")
    assert CliRunner().invoke(cli, ["sessions", "verify", session_dir.name]).exit_code == 0


def test_a_billing_file_that_is_a_pipe_is_refused_before_any_call_and_left_a_pipe(cli_env, tmp_path):
    # A device or a pipe (a mistyped /dev/null, say) would be made private, or block the first read.
    pipe = tmp_path / "ledger.fifo"
    os.mkfifo(pipe, 0o666)
    mode = pipe.stat().st_mode
    for argv in (["run", "hi"], ["billing", "rebuild"]):
        result = CliRunner().invoke(cli, [*argv, "--billing-file", str(pipe)])
        assert result.exit_code == 2, (argv, result.output)
        (line,) = [line for line in result.stderr.splitlines() if line.startswith("Error")]
        assert f"{pipe} is not a billing ledger (not a regular file)" in line, argv
        assert stat.S_ISFIFO(pipe.stat().st_mode) and pipe.stat().st_mode == mode
        assert "main" not in result.stdout  # no model was called
    assert not (cli_env / "sessions").exists() or not any((cli_env / "sessions").iterdir())
    # A shell's pipe (`<(cat billing.jsonl)`) too, whose real path (/proc/PID/fd/pipe:[N]) names no file.
    r, w = os.pipe()
    try:
        for argv in (["billing", "rebuild"], ["billing", "rebuild", "--dry-run"]):
            result = CliRunner().invoke(cli, [*argv, "--billing-file", f"/dev/fd/{r}"])
            assert result.exit_code == 2, (argv, result.output)
            assert result.stderr.splitlines()[-1] == f"Error: /dev/fd/{r} is not a billing ledger (not a regular file)"
    finally:
        os.close(r)
        os.close(w)


def test_a_billing_file_that_is_not_a_ledger_is_refused_and_left_as_it_was(cli_env, tmp_path):
    # A mistyped --billing-file naming a trace document: nothing may be appended to it or its mode changed.
    other = tmp_path / "trace.json"
    other.write_text('{\n  "data": []\n}\n')
    other.chmod(0o644)
    before = other.read_bytes()
    spans = tmp_path / "spans.jsonl"  # a real trace for import, saved elsewhere first
    assert invoke(["hi", "--otlp-file", str(spans), "--sessions-dir", str(tmp_path / "first")]).exit_code == 0
    for argv in (["run", "hi"], ["import", str(spans), "--sessions-dir", str(tmp_path / "second")]):
        result = CliRunner().invoke(cli, [*argv, "--billing-file", str(other)])
        assert result.exit_code == 2, (argv, result.output)
        (line,) = [line for line in result.stderr.splitlines() if line.startswith("Error")]
        assert f"{other} is not a billing ledger" in line, argv
        assert other.read_bytes() == before and other.stat().st_mode & 0o777 == 0o644
    assert not (cli_env / "sessions").exists() or not any((cli_env / "sessions").iterdir())
    assert not (tmp_path / "second").exists() or not any((tmp_path / "second").iterdir())


@pytest.mark.parametrize(
    "text", [b"my notes, no newline", b'{"hello": 1}', b'{"a":"\xff\xfe"}', gzip.compress(b"no newline in here")],
    ids=["notes", "json", "not-utf8", "gzip"])
def test_a_billing_file_of_one_unterminated_line_that_is_no_record_is_refused_not_wiped(cli_env, tmp_path, text):
    """Such a file was taken for a ledger whose first record was torn: the append cut it to nothing
    (notes gone, ledger records in their place) and `run` exited 0."""
    assert b"\n" not in text
    other = tmp_path / "notes.txt"
    other.write_bytes(text)
    spans = tmp_path / "spans.jsonl"
    assert invoke(["hi", "--otlp-file", str(spans), "--sessions-dir", str(tmp_path / "first")]).exit_code == 0
    for argv in (["run", "hi"], ["import", str(spans), "--sessions-dir", str(tmp_path / "second")]):
        result = CliRunner().invoke(cli, [*argv, "--billing-file", str(other)])
        assert result.exit_code == 2, (argv, result.output)
        assert [line for line in result.stderr.splitlines() if line.startswith("Error")] == [
            f"Error: {other} is not a billing ledger (its first line is not a ledger record)"], argv
        assert other.read_bytes() == text, argv
    assert not (tmp_path / "second").exists() or not any((tmp_path / "second").iterdir())


def test_a_torn_first_ledger_record_is_cut_by_the_next_run(cli_env, tmp_path):
    ledger = tmp_path / "billing.jsonl"
    assert invoke(["hi", "--billing-file", str(ledger)]).exit_code == 0
    count = len(ledger.read_bytes().splitlines())
    ledger.write_bytes(ledger.read_bytes()[:50])  # the first run killed while writing its first line
    result = CliRunner().invoke(cli, ["run", "hi", "--billing-file", str(ledger)])
    assert result.exit_code == 0, result.output
    lines = ledger.read_bytes().splitlines()
    assert len(lines) == count and all(json.loads(line)["record_id"] for line in lines)


def test_a_malformed_otlp_endpoint_is_exit_2_without_a_traceback_and_nothing_is_saved(cli_env, tmp_path):
    """OTEL_EXPORTER_OTLP_ENDPOINT="http://[::1" ended `run` with urlparse's traceback, exit 1."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_TRACES_EXPORTER="otlp", OTEL_EXPORTER_OTLP_ENDPOINT="http://[::1", OTEL_AGENTS_HOME=str(cli_env))
    proc = subprocess.run([sys.executable, "-m", "otel_agents", "run", "hi"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    # As any other invalid endpoint ("notaurl"): run's usage error, its one Error line naming the value.
    assert [line for line in proc.stderr.splitlines() if line.startswith("Error")] == [
        "Error: invalid OTLP endpoint 'http://[::1' in OTEL_EXPORTER_OTLP_ENDPOINT for http/protobuf "
        "(expected e.g. http://host:4318)"], proc.stderr
    assert not (cli_env / "sessions").exists() or not any((cli_env / "sessions").iterdir())
    assert not (cli_env / "billing.jsonl").exists()


SECRET = "sk-live-SECRET1234567890"


@pytest.mark.parametrize(
    "variables, named, entry",
    [
        ({"OTEL_EXPORTER_OTLP_HEADERS": f"Authorization: Bearer {SECRET}"}, "OTEL_EXPORTER_OTLP_HEADERS", 1),
        ({"OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"x-a=b, Authorization: Bearer {SECRET}"},
         "OTEL_EXPORTER_OTLP_TRACES_HEADERS", 2),
        ({"OTEL_EXPORTER_OTLP_METRICS_HEADERS": f"Authorization: Bearer {SECRET}"},
         "OTEL_EXPORTER_OTLP_METRICS_HEADERS", 1),
        ({"OTEL_RESOURCE_ATTRIBUTES": f"service.name=x,token {SECRET}"}, "OTEL_RESOURCE_ATTRIBUTES", 2),
    ],
)
def test_a_malformed_otel_list_is_exit_2_never_echoed_and_nothing_runs(cli_env, tmp_path, variables, named, entry):
    """The SDK printed a bad header list or resource attribute verbatim (up to three times) and the run went on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") or k == "OTEL_AGENTS_HOME"}
    env.update(variables, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_AGENTS_HOME=str(cli_env))
    proc = subprocess.run([sys.executable, "-m", "otel_agents", "run", "hi"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert SECRET not in proc.stderr
    form = "authorization=Bearer%20TOKEN" if "HEADERS" in named else "deployment.environment.name=lab"
    assert [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith(("Usage:", "Try "))] == [
        f"Error: {named} must be key=value pairs separated by commas, values URL-encoded (e.g. {form}); "
        f"entry {entry} is not (its value is not shown)"], proc.stderr
    assert not (cli_env / "sessions").exists() or not any((cli_env / "sessions").iterdir())


def test_valid_otel_lists_keep_working_with_encoded_and_spaced_values(cli_env, tmp_path):
    """Percent-encoded values, '=' inside a value and unencoded spaces (which the SDK takes) are not refused."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(cli_env), OTEL_TRACES_EXPORTER="none",
               OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20tok, x-a = b c ,",
               OTEL_RESOURCE_ATTRIBUTES="service.name=a%2Cb, deployment.environment.name = lab=1")
    proc = subprocess.run([sys.executable, "-m", "otel_agents", "run", "hi"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Invalid" not in proc.stderr and "invalid" not in proc.stderr
    journal = next((cli_env / "sessions").iterdir()) / "spans.jsonl"
    assert '"service.name":"a,b"' in journal.read_text()


def test_a_model_without_credentials_fails_once_not_after_four_billed_attempts(home, tmp_path):
    # The provider's client refuses before sending anything; litellm calls it an InternalServerError.
    from support.in_process import run_in_process

    with OpenAIServer() as server:
        done = run_in_process("run", "--model", "openai/gpt-4o-mini", "--api-base", server.api_base, "hi",
                              home=home, env={"OPENAI_API_KEY": None, "OTEL_TRACES_EXPORTER": "none"},
                              cwd=tmp_path)
        assert server.requests == []
    assert done.returncode == 1
    assert "retrying" not in done.stderr and "Missing credentials" in done.stderr
    rows = [json.loads(line) for line in (home / "billing.jsonl").read_text().splitlines()]
    assert [row["type"] for row in rows] == ["llm"]


@pytest.mark.parametrize("script, says", [
    ({"name": "typo", "agents": {"main": ["Hi"]},
      "hooks": [{"kind": "review", "name": "Guard", "agents": ["Nobdy"], "reject_if_contains": "x"}]},
     "hook 'Guard': agents names 'Nobdy', no agent of this script (its agents: main): the hook would never act on it"),
    ({"name": "boss", "root": {"name": "boss"}, "agents": {"main": ["Hi"]}},
     "'agents' key 'main' is no agent this script has: not its root ('boss') nor a name its turns give 'task' (a typo?)"),
    ({"name": "x", "agents": {"main": ["hi"]}, "agent_budgets": {"mian": {"max_llm_calls": 0}}},
     "'agent_budgets' key 'mian' is no agent this script has (its agents: main): it would apply to none (a typo?)"),
    ({"name": "x", "agents": {"main": ["hi"]}, "agent_params": {"Nobody": {"temperature": 1}}},
     "'agent_params' key 'Nobody' is no agent this script has (its agents: main): it would apply to none (a typo?)"),
])
def test_a_script_naming_an_agent_it_never_has_exits_2_before_anything_is_saved(cli_env, tmp_path, script, says):
    """Both ran with exit 0: the hook never acted, the root answered with the fallback."""
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(script))
    result = CliRunner().invoke(cli, ["run", "--script", str(path), "hi"])
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr.strip().splitlines()[-1] == f"Error: {path.resolve()}: {says}"
    assert not (cli_env / "sessions").exists() or not any((cli_env / "sessions").iterdir())


def test_script_naming_both_a_builtin_and_a_file_here_exits_2_and_the_default_still_runs(cli_env, tmp_path, monkeypatch):
    """--script jack-and-jill ran the built-in in silence though ./jack-and-jill was a script."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jack-and-jill").write_text(json.dumps({"name": "mine", "agents": {"main": ["mine says hi"]}}))
    result = CliRunner().invoke(cli, ["run", "--script", "jack-and-jill", "hi"])
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr.strip().splitlines()[-1].startswith(
        "Error: script 'jack-and-jill' is both a built-in script and the file ./jack-and-jill: give ./jack-and-jill")
    mine = CliRunner().invoke(cli, ["run", "--script", "./jack-and-jill", "hi"])
    assert mine.exit_code == 0 and mine.stdout == "mine says hi\n", mine.output
    assert CliRunner().invoke(cli, ["run", "hi"]).exit_code == 0  # no --script: the built-in, as the default


@pytest.mark.parametrize("script, says", [
    ({"name": "s", "agents": {"main": ["hi"]}, "promts": ["x"]}, "promts"),
    ({"name": "s", "agents": {"main": ["hi"]}, "hooks": [{"name": "h", "kind": "approval", "agent": "Nobdy"}]}, "Nobdy"),
])
def test_a_script_that_cannot_be_used_is_one_error_line(cli_env, tmp_path, script, says):
    """docs/scripts.md: exit 2 and one line naming the key or hook; click's usage block came first, as for a
    mistyped option, though the command was written rightly."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps(script))
    result = CliRunner().invoke(cli, ["run", "--script", str(path), "hi"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1, result.stderr
    assert says in result.stderr and result.stdout == ""


def test_a_price_that_overflows_records_the_call_unpriced_with_a_warning_never_infinity(cli_env, tmp_path, monkeypatch):
    """A rate of 1e308 a token priced each call at infinity, a cost no ledger or total can hold."""
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"scripted/jack-and-jill": {"input_cost_per_token": 1e308,
                                                             "output_cost_per_token": 1e308}}))
    monkeypatch.setenv("OTEL_AGENTS_PRICES", str(prices))
    result = invoke(["hi"])
    assert result.exit_code == 0, result.output
    assert "'scripted/jack-and-jill' gives a cost that is not a finite number" in result.stderr
    records = [json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} in the ledger"))
               for line in (cli_env / "billing.jsonl").read_text().splitlines()]
    llm_ok = [r for r in records if r["type"] == "llm" and r["status"] == "ok"]
    assert llm_ok and all(r["cost_usd"] is None and r["price_source"] == "unpriced" and "price_id" not in r
                          for r in llm_ok)
