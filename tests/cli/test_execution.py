"""cli/execution: however a command ends, its tracing is shut down; what --stream puts on stdout.

A command that configured tracing and then refused (exit 2) or failed (exit 1) must
not leave the metric reader's thread behind: in a process that goes on (the test
suite, a program calling the commands) it would export into whatever directory is
current a minute later. ``--otlp-file`` gives every command here a metric reader.
"""

from __future__ import annotations

import json
import threading

import click
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.cli.execution import SettingRefused, command_tracing

READER = "OtelPeriodicExportingMetricReader"  # the SDK's name for a periodic reader's thread


def readers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == READER and t.is_alive()}


@pytest.fixture
def cli_env(home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    for name in ("OTEL_AGENTS_PRICES", "OTEL_METRICS_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def earlier():
    """Readers this process had before the test (none, unless another test left one)."""
    return readers()


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), input="")


@pytest.mark.parametrize("ending", [RuntimeError("a bug"), click.UsageError("refused"), KeyboardInterrupt()])
def test_the_block_shuts_the_tracing_down_however_it_ends(cli_env, earlier, tmp_path, ending):
    with pytest.raises(type(ending)):
        with command_tracing(tmp_path / "spans.jsonl") as tracing:
            assert len(readers() - earlier) == 1  # what --otlp-file starts: the metrics file's reader
            with tracing.telemetry.tracer.start_as_current_span("chat m"):
                pass
            raise ending
    assert readers() == earlier
    assert (tmp_path / "spans.jsonl").stat().st_size > 0


def test_a_bad_setting_is_exit_2_and_starts_nothing(cli_env, earlier, tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "carrier-pigeon")
    with pytest.raises(SettingRefused, match="OTEL_TRACES_EXPORTER") as refused:
        with command_tracing(tmp_path / "spans.jsonl"):
            pass
    assert refused.value.exit_code == 2
    assert readers() == earlier


BAD_SETTINGS = [
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_COMPRESSION": "brotli"},
     "Error: unsupported OTEL_EXPORTER_OTLP_COMPRESSION 'brotli' (use gzip, deflate or none)"),
    ({"OTEL_SPAN_LINK_COUNT_LIMIT": "abc"},
     "Error: OTEL_SPAN_LINK_COUNT_LIMIT must be a whole number of at least 0, not 'abc'"),
    ({"OTEL_AGENTS_EXPORT_VALUE_CAP": "abc"}, "Error: OTEL_AGENTS_EXPORT_VALUE_CAP must be a whole number of bytes"),
    ({"OTEL_AGENTS_PRICES": "/"}, "Error: /: cannot read prices"),
]


@pytest.mark.parametrize("variables, message", BAD_SETTINGS)
def test_a_bad_otel_value_is_one_error_line_and_exit_2_for_run_resume_and_fork(cli_env, monkeypatch, variables,
                                                                                message):
    # click's UsageError put `Usage:` and `Try … --help` before it: the command line is not at fault.
    done = invoke("run", "hi")
    assert done.exit_code == 0, done.output
    session_id = next(line.split(": ", 1)[1] for line in done.stderr.splitlines() if line.startswith("session: "))
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    for command in (["run", "hi"], ["resume", session_id, "again"], ["fork", session_id, "--at", "msg_000002", "x"]):
        result = invoke(*command)
        assert result.exit_code == 2, (command, result.output)
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(message), (command, result.stderr)


def _demo(otlp: str) -> str:
    result = invoke("run", "Create Jack and Jill for a cafe discussion", "--otlp-file", otlp)
    assert result.exit_code == 0, result.stderr
    return result.stderr.splitlines()[-1].removeprefix("session: ")


def test_refusals_after_the_tracing_started_leave_no_thread(cli_env, earlier, tmp_path):
    otlp = str(tmp_path / "spans.jsonl")
    session_id = _demo(otlp)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    refusals = [  # (argv, environment, what the one line says): each after configure, before any call
        (["run", "hi", "--billing-file", str(blocker / "billing.jsonl")], {}, "billing.jsonl"),
        (["run", "hi", "--model", "openai/no-such-model", "--max-cost-usd", "1"], {}, "--allow-unpriced"),
        (["run", "hi"], {"OTEL_AGENTS_PRICES": str(tmp_path / "none.json")}, "none.json"),
        (["send", session_id, "hello", "--to", "Nobody"], {}, "has no agent 'Nobody'"),
        (["resume", session_id, "again", "--model", "openai/no-such-model", "--max-cost-usd", "1"], {},
         "--allow-unpriced"),
    ]
    for argv, env, said in refusals:
        result = CliRunner().invoke(cli, [*argv, "--otlp-file", otlp], input="", env=env)
        assert result.exit_code == 2, (argv, result.output)
        assert said in result.stderr, (argv, result.stderr)
        assert readers() == earlier, argv


def test_a_failed_run_leaves_no_thread(cli_env, earlier, tmp_path):
    # Nothing listens on port 9 here: the one attempt fails at once, and the run ends with exit 1.
    result = invoke("run", "hi", "--model", "openai/gpt-4o-mini", "--api-base", "http://127.0.0.1:9/v1",
                    "--max-attempts", "1", "--otlp-file", str(tmp_path / "spans.jsonl"))
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1].startswith("session: ")
    assert readers() == earlier


def test_stream_starts_each_root_turn_on_a_line_of_its_own(cli_env, tmp_path):
    # Text before a tool call and the turn after it are separate utterances: not run together.
    script = tmp_path / "st.json"
    task = {"name": "task", "arguments": {"name": "Bob", "user_prompt": "hi"}}
    script.write_text(json.dumps({"name": "st", "agents": {
        "main": [{"text": "Let me ask.", "tool_calls": [task]}, "Final root words.", "Second run."],
        "Bob": ["hi"]}}))
    streamed = invoke("run", "--stream", "--script", str(script), "go", "again")
    assert streamed.exit_code == 0, streamed.stderr
    assert streamed.stdout == "Let me ask.\nFinal root words.\nSecond run.\n"
    plain = invoke("run", "--script", str(script), "go", "again")  # unchanged: each run's answer, one line
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout == "Final root words.\nSecond run.\n"


def test_a_stream_whose_reader_went_away_fails_no_model_call(home, tmp_path):
    """`otel-agents run --stream ... | head -c 10`: the text written after the reader left raised
    BrokenPipeError inside the model call, which was recorded as failed and ended the run in error."""
    import os
    import subprocess
    import sys

    from otel_agents.persistence.saved import load_saved
    from otel_agents.persistence.tree_walk import iter_nodes

    script = tmp_path / "talk.json"
    script.write_text(json.dumps({"name": "talk", "agents": {"main": [
        {"text": f"answer {n} " * 50, "latency_ms": 100} for n in range(6)]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--stream", "--script", str(script),
                             *[f"p{n}" for n in range(6)]],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    proc.stdout.read(10)  # as `head -c 10` does, then goes away while the run goes on
    proc.stdout.close()
    proc.wait(timeout=120)
    (directory,) = (home / "sessions").iterdir()
    tree = load_saved(directory, lambda message: None).tree
    # The command stops once it cannot print an answer (nobody reads on), but what ran succeeded.
    assert tree["runs"] and all(run["status"] == "ok" for run in tree["runs"])
    failed = [node["name"] for _, node in iter_nodes(tree) if node.get("status") == "error"]
    assert failed == []
    verified = CliRunner().invoke(cli, ["sessions", "verify", directory.name])
    assert verified.exit_code == 0, verified.output


def test_a_streamed_reply_shows_no_credential_of_the_environment_even_split_across_chunks(cli_env, monkeypatch):
    from otel_agents.tracing.credentials import reload_credentials
    from support.openai_server import OpenAIServer, Reply

    key = "sk-proj-AbCd/EfGh+IjKl/MnOp1234"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    reload_credentials()
    try:
        with OpenAIServer() as server:
            # The server sends the content in three chunks: the key straddles both boundaries.
            content = f"Your key is {key}, as JSON {json.dumps(key)}; done."
            server.plan(Reply(content=content), Reply(content=content))
            streamed = invoke("run", "--model", "openai/x", "--api-base", server.api_base, "--stream", "Hi")
            plain = invoke("run", "--model", "openai/x", "--api-base", server.api_base, "Hi")
    finally:
        monkeypatch.delenv("OPENAI_API_KEY")
        reload_credentials()
    assert streamed.exit_code == 0 and plain.exit_code == 0, streamed.stderr + plain.stderr
    assert "MnOp1234" not in streamed.stdout
    assert streamed.stdout == plain.stdout == 'Your key is [REDACTED], as JSON "[REDACTED]"; done.\n'


def test_a_streamed_basic_auth_header_shows_no_credential_when_its_base64_straddles_a_chunk(cli_env, monkeypatch):
    import base64

    from otel_agents.tracing.credentials import longest_form, reload_credentials
    from support.openai_server import OpenAIServer, Reply

    key = "sk-proj-AbCd/EfGh+IjKl/MnOp1234"
    basic = base64.b64encode(f"alice:{key}".encode()).decode()
    head, tail = "Use the header Authorization: Basic ", " for the proxy."
    # Dots make the server's first chunk end 5 characters into the base64, the Basic word shown before.
    size = len(head) + len(basic) - 5
    content = head + basic + tail + "." * (3 * size - len(head + basic + tail))
    monkeypatch.setenv("OPENAI_API_KEY", key)
    reload_credentials()
    try:
        assert size - (longest_form() - 1) > len(head)  # the word is out of the held tail
        with OpenAIServer() as server:
            server.plan(Reply(content=content), Reply(content=content))
            streamed = invoke("run", "--model", "openai/gpt-4o-mini", "--api-base", server.api_base, "--stream", "how do I auth")
            plain = invoke("run", "--model", "openai/gpt-4o-mini", "--api-base", server.api_base, "how do I auth")
    finally:
        monkeypatch.delenv("OPENAI_API_KEY")
        reload_credentials()
    assert streamed.exit_code == 0 and plain.exit_code == 0, streamed.stderr + plain.stderr
    assert basic[:-8] not in streamed.stdout
    assert streamed.stdout == plain.stdout
    assert streamed.stdout.startswith(head) and "[REDACTED]" in streamed.stdout


UNTRUSTED = "ding\a over\rwrite \u202eabc \x1b[2J \x9b31m done"
UNTRUSTED_SHOWN = "ding\\x07 over\\rwrite \\u202eabc \\x1b[2J \\x9b31m done"


def test_the_answer_and_the_stream_show_control_characters_as_escapes(cli_env, tmp_path):
    # A model's BEL, lone CR, RIGHT-TO-LEFT OVERRIDE, ESC and C1 CSI reached the terminal (click
    # strips ESC only when stdout is not one, --stream not even then); ordinary text is unchanged.
    script = tmp_path / "ctl.json"
    script.write_text(json.dumps({"name": "ctl", "agents": {"main": [UNTRUSTED, "plain\r\nlines\n\tok"]}}))
    for flags in ([], ["--stream"]):
        result = invoke("run", *flags, "--script", str(script), "go", "again")
        assert result.exit_code == 0, result.stderr
        assert result.stdout_bytes.decode() == UNTRUSTED_SHOWN + "\nplain\r\nlines\n\tok\n", flags


def test_a_streamed_cr_waits_for_the_next_piece_to_be_told_from_a_crlf(capsys):
    from otel_agents.cli.streamed_text import StreamedText

    streamed = StreamedText()
    for piece in ("one\r", "\ntwo\r", "three\r"):
        streamed.write(piece)
    streamed.end()
    streamed.write("last\r", last=True)
    assert capsys.readouterr().out == "one\r\ntwo\\rthree\\rlast\\r"


def test_a_stream_cut_and_retried_shows_the_break_and_a_failed_one_ends_its_line(cli_env, monkeypatch):
    """`partial answer that neveslow trifinal whole answer`: the cut texts and the retry's ran together,
    and a run whose every attempt was cut left stdout without its last newline."""
    from support.openai_server import OpenAIServer, Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.plan(Reply.cut_stream("partial answer that never ends"), Reply.cut_stream("slow trickle of words"),
                    Reply(content="final whole answer"), Reply.cut_stream("partial answer that never ends"))
        retried = invoke("run", "--model", "openai/x", "--api-base", server.api_base, "--stream", "Hi")
        failed = invoke("run", "--model", "openai/x", "--api-base", server.api_base, "--stream",
                        "--max-attempts", "1", "Hi")
    assert retried.exit_code == 0, retried.stderr
    first, second, last = retried.stdout.split("\n")[:3]
    assert retried.stdout == f"{first}\n{second}\n{last}\n" and last == "final whole answer"
    assert "partial answer that never ends".startswith(first) and "slow trickle of words".startswith(second)
    said = "WRN the streamed text above was cut off; the retry's answer follows"
    assert retried.stderr.count(said) == 2, retried.stderr
    assert failed.exit_code == 1 and "error: model 'openai/x' failed after 1 attempt" in failed.stderr
    assert failed.stdout.endswith("\n") and "partial answer that never ends".startswith(failed.stdout[:-1])
