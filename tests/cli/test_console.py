"""Console log lines: format, verbosity levels, and agreement with `sessions show` on path labels."""

from __future__ import annotations

import gzip
import json
import re

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.tracing import semconv as sc

PROMPT = "Create Jack and Jill for a cafe discussion"
LINE = re.compile(
    r"^\[txn:(?P<txn>[0-9a-f]{8})\] (?P<label>run|\d+(?:-\d+)*(?:\.\d+(?:-\d+)*)*) "
    r"(?P<kind>llm|tool|session)/(?P<id>\S+): (?P<level>VRB|WRN|ERR|TRC|THK|FIN|error:) (?P<message>.*)$"
)  # ``error:``: the run's own line, the error it stopped with


def run(*flags):
    result = CliRunner().invoke(cli, ["run", *flags, PROMPT], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    # The demo's notice and the closing where-and-what-next lines are not console lines (test_run_demo.py).
    lines = [line for line in result.stderr.splitlines() if not line.startswith(("demo: ", "saved: ", "next: "))]
    assert lines[-1].startswith("session: ")
    parsed = [LINE.match(line) for line in lines[:-1]]
    assert all(parsed), [line for line, m in zip(lines, parsed) if not m]
    return result, parsed, lines[-1].split(": ", 1)[1]


def op_counts(home, sid):
    """(LLM attempts, failed attempts, tool calls) according to the saved tree."""
    from otel_agents.persistence.tree_walk import iter_ops

    tree = json.loads(gzip.decompress((home / "sessions" / sid / "tree.json.gz").read_bytes()))["session"]
    ops = [ref.op for ref in iter_ops(tree)]
    llm = [op for op in ops if op["kind"] == "llm"]
    return len(llm), sum(op["status"] != "ok" for op in llm), sum(op["kind"] == "tool" for op in ops)


def test_default_shows_warnings_only_and_stdout_only_the_utterance(home):
    result, lines, _ = run()
    assert result.stdout == "Jack and Jill met in the cafe and introduced themselves; a fourth helper was not allowed.\n"
    assert {m["level"] for m in lines} == {"WRN"}
    by_kind = {(m["label"], m["kind"]) for m in lines}
    # the 429 on the first attempt of turn 4, the retry notice on turn 4, the hook's denial on a tool
    assert ("4-1", "llm") in by_kind and ("4", "session") in by_kind
    assert any(m["kind"] == "tool" and "Action blocked by hook 'ResourceMonitor'" in m["message"] for m in lines)
    assert len({m["txn"] for m in lines}) == 1


def test_verbose_adds_one_line_per_request_and_response(home):
    _, lines, sid = run("-v")
    vrb = [m for m in lines if m["level"] == "VRB"]
    llm_requests = [m for m in vrb if m["kind"] == "llm" and m["message"].startswith("request")]
    llm_responses = [m for m in vrb if m["kind"] == "llm" and m["message"].startswith("response")]
    tool_lines = [m for m in vrb if m["kind"] == "tool"]
    attempts, failed, tools = op_counts(home, sid)
    assert failed == 1 and attempts > 10 and tools > 5
    assert len(llm_requests) == attempts
    assert len(llm_responses) == attempts - failed  # a failed attempt's line is its WRN
    assert len(tool_lines) == 2 * tools  # each tool call: request and response
    assert all(re.search(r"\d+ in / \d+ out tokens, \d+ chars, \$\d+\.\d{6}", m["message"]) for m in llm_responses)
    assert [m["level"] for m in lines if m["level"] in ("THK", "FIN")] == ["THK", "FIN"]
    assert any(m["label"] == "run" and m["level"] == "FIN" for m in lines)


def test_trace_flags_add_full_payloads(home):
    _, lines, sid = run("--trace-llm")
    requests = [m for m in lines if m["level"] == "TRC" and m["message"].startswith("request ")]
    assert len(requests) == op_counts(home, sid)[0]
    first = json.loads(requests[0]["message"][len("request "):])
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[1]["content"] == PROMPT
    assert all(m["kind"] == "llm" for m in lines if m["level"] == "TRC")

    _, lines, _ = run("--trace-tools")
    results = [m for m in lines if m["level"] == "TRC"]
    assert results and all(m["kind"] == "tool" for m in results)
    assert any('"Created subagent: Jack"' in m["message"] for m in results)


def test_console_and_sessions_show_agree_on_path_labels(home):
    _, lines, sid = run("-v")
    shown = CliRunner().invoke(cli, ["sessions", "show", sid], catch_exceptions=False)
    assert shown.exit_code == 0
    show_labels = {}
    for line in shown.stdout.splitlines():
        match = re.match(r"^\s+(\d+(?:-\d+)*(?:\.\d+(?:-\d+)*)*)\s+\S+\s+\d+ms\s+(\w+)", line)
        if match:
            show_labels[match.group(1)] = match.group(2)
    console = {(m["label"], m["kind"]) for m in lines if m["label"] != "run"}
    assert console
    kinds = {"llm": "llm", "tool": "tool", "session": "session"}
    for label, kind in console:
        assert label in show_labels, label
        if "-" in label.rsplit(".", 1)[-1]:  # an operation, not a turn
            assert show_labels[label] == kinds[kind], (label, show_labels[label], kind)


def test_trace_llm_after_a_resume_shows_each_request_whole(home):
    """Issue 16 item 9: the resumed agents' saved history is part of what they send, and of what is shown."""
    first = CliRunner().invoke(cli, ["run", "Create Jack and Jill for a cafe discussion"], catch_exceptions=False)
    assert first.exit_code == 0, first.stderr
    sid = first.stderr.splitlines()[-1].split(": ", 1)[1]
    resumed = CliRunner().invoke(cli, ["resume", sid, "--trace-llm", "-v", "How did it go?"], catch_exceptions=False)
    assert resumed.exit_code == 0, resumed.stderr
    lines = [LINE.match(line) for line in resumed.stderr.splitlines()[:-1]]
    counts = [int(re.search(r"attempt \d+: (\d+) messages", m["message"])[1]) for m in lines
              if m and m["level"] == "VRB" and m["message"].startswith("request attempt")]
    requests = [json.loads(m["message"][len("request "):]) for m in lines
                if m and m["level"] == "TRC" and m["message"].startswith("request ")]
    assert counts and [len(r) for r in requests] == counts  # as many messages as each attempt sent
    assert requests[0][1] == {"role": "user", "content": PROMPT}  # the first run's prompt, from the saved history
    assert requests[0][-1] == {"role": "user", "content": "How did it go?"}


def _txns(stderr: str) -> set[str]:
    matches = [LINE.match(line) for line in stderr.splitlines() if line.startswith("[txn:")]
    assert matches and all(matches), stderr
    return {m["txn"] for m in matches}


def test_one_txn_id_for_the_whole_session_across_runs_resume_and_send(home):
    """One grep finds the session: every run's lines carry the first run's id; each run keeps its own trace id."""
    first = CliRunner().invoke(cli, ["run", "-v", PROMPT, "Thanks"], catch_exceptions=False)
    assert first.exit_code == 0, first.stderr
    sid = first.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    resumed = CliRunner().invoke(cli, ["resume", sid, "-v", "And now?"], catch_exceptions=False)
    assert resumed.exit_code == 0, resumed.stderr
    sent = CliRunner().invoke(cli, ["send", sid, "-v", "--to", "Jill", "--source", "ci", "build done"],
                              catch_exceptions=False)
    assert sent.exit_code == 0, sent.stderr

    tree = json.loads(gzip.decompress((home / "sessions" / sid / "tree.json.gz").read_bytes()))["session"]
    runs = tree["runs"]
    assert len(runs) == 4 and len({run["trace_id"] for run in runs}) == 4  # each run its own trace
    txn = runs[0]["trace_id"][:8]
    assert _txns(first.stderr) == _txns(resumed.stderr) == _txns(sent.stderr) == {txn}
    assert [run["attributes"]["otel_agents.session.txn"] for run in runs] == [txn] * 4
    assert all(not run["trace_id"].startswith(txn) for run in runs[1:])
    shown = CliRunner().invoke(cli, ["sessions", "show", sid], catch_exceptions=False)
    assert f"console txn:{txn}" in shown.stdout


def test_a_session_saved_before_txn_ids_keeps_its_first_runs_trace_prefix():
    from otel_agents.cli.console import saved_txn

    runs = [{"index": 1, "trace_id": "ab" * 16, "attributes": {}}, {"index": 2, "trace_id": "cd" * 16}]
    assert saved_txn(runs) == "abababab"
    assert saved_txn([{"index": 2, "trace_id": "cd" * 16, "txn": "0123abcd"}]) == "0123abcd"  # meta's last_run
    assert saved_txn([{"index": 2, "trace_id": "cd" * 16}]) is None  # not the first run's: unknown
    assert saved_txn([]) is None
def test_ips_are_masked_in_console_lines_and_exports_and_kept_with_the_switch(home, tmp_path, monkeypatch):
    from otel_agents.tracing import ip_masking

    script = tmp_path / "ips.json"
    script.write_text(json.dumps({"name": "ips-console", "agents": {"main": ["Seen from 198.51.100.23."]}}))

    def run_with_ip(keep: str | None):
        if keep is None:
            monkeypatch.delenv(ip_masking.KEEP_IPS_ENV, raising=False)
        else:
            monkeypatch.setenv(ip_masking.KEEP_IPS_ENV, keep)
        ip_masking.reload_ip_setting()
        otlp = tmp_path / f"export-{keep}.jsonl"
        args = ["run", "--script", str(script), "--trace-llm", "--otlp-file", str(otlp), "ping from 203.0.113.9"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        ip_masking.reload_ip_setting()
        assert result.exit_code == 0, result.stderr
        sid = result.stderr.strip().splitlines()[-1].split(": ", 1)[1]
        events = (home / "sessions" / sid / "events.jsonl").read_text()
        return result, otlp.read_text(), events

    result, exported, events = run_with_ip(None)
    console = [line for line in result.stderr.splitlines() if line.startswith("[txn:")]
    assert any("TRC request" in line and "ping from [IP]" in line for line in console)
    assert "203.0.113.9" not in result.stderr and "198.51.100.23" not in result.stderr
    assert "203.0.113.9" not in exported and "198.51.100.23" not in exported and "[IP]" in exported
    # The session directory is not a copy that leaves: it keeps what the model was sent.
    assert "ping from 203.0.113.9" in events and "198.51.100.23" in events
    assert result.stdout == "Seen from 198.51.100.23.\n"  # the answer itself is the user's, not a log line

    result, exported, _ = run_with_ip("true")
    assert "ping from 203.0.113.9" in result.stderr and "203.0.113.9" in exported and "[IP]" not in exported
    monkeypatch.delenv(ip_masking.KEEP_IPS_ENV)


def test_a_console_closed_mid_run_leaves_every_span_ended(home, tmp_path):
    """`otel-agents run -v ... 2>&1 | head -c 100`: the console lines after the pipe closed cannot be
    written; the run must go on and save every span it started ended (a failed write inside span
    start left that span open forever, and the session could no more be replayed)."""
    import os
    import subprocess
    import sys

    from otel_agents.persistence.saved import load_saved
    from otel_agents.persistence.tree_walk import iter_nodes

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "-v", "Create Jack and Jill"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    proc.stderr.read(100)  # as `head -c 100` does, then goes away while the run is still under way
    proc.stderr.close()
    proc.wait(timeout=120)
    (directory,) = (home / "sessions").iterdir()
    saved = load_saved(directory, lambda message: None)
    open_spans = [node["name"] for _, node in iter_nodes(saved.tree) if node.get("ended_ns") is None]
    assert open_spans == [] and saved.interrupted == 0
    assert json.loads((directory / "meta.json").read_text())["status"] == "ok"
    replayed = CliRunner().invoke(cli, ["replay", directory.name])
    assert replayed.exit_code == 0, replayed.output


def test_a_budget_warning_is_a_wrn_line_at_default_verbosity(home):
    """The user, never the model, is told at 80 % of a limit: on the console too, not only in the session."""
    result = CliRunner().invoke(cli, ["run", "--max-llm-calls", "5", "Create Jack and Jill"], catch_exceptions=False)
    assert result.exit_code == 1, result.stderr
    lines = [LINE.match(line) for line in result.stderr.splitlines() if line.startswith("[txn:")]
    assert all(lines), result.stderr
    warnings = [m for m in lines if "budget warning" in m["message"]]
    assert [(m["kind"], m["level"], m["message"]) for m in warnings] == [
        ("llm", "WRN", "budget warning for session: 4 of 5 LLM calls made (80% of the limit)")
    ]
    exhausted = [m for m in lines if m["level"] == "ERR" and "budget exhausted" in m["message"]]
    assert exhausted and lines.index(warnings[0]) < lines.index(exhausted[0])
    assert len({m["txn"] for m in lines}) == 1


def test_a_budget_warning_line_is_redacted_and_only_told_by_the_attempt_that_spent_it():
    import io

    from opentelemetry.sdk.trace import TracerProvider

    from otel_agents.cli.console import ConsoleRenderer
    from otel_agents.tracing.redaction import MARKER

    out = io.StringIO()
    renderer = ConsoleRenderer(lambda span_id: "1-1", txn="0123abcd", out=out)
    tracer = TracerProvider().get_tracer("test")
    secret = "sk-" + "a1" * 12
    notice = {"event_type": "host_notice", "agent_id": "a", "notice": "budget_warning",
              "content": f"budget warning for {secret}: 4 of 5 LLM calls made (80% of the limit)"}
    chat = {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_PROVIDER_NAME: "scripted", sc.LLM_MODEL: "scripted/demo"}
    with tracer.start_as_current_span("chat scripted/demo", attributes=chat) as span:
        renderer.on_record(span, notice, 0)
        renderer.on_record(span, {**notice, "notice": "retry"}, 0)  # has its own WRN log line
    # A fork replays the records it inherits on its run's root span: told in their own run already.
    run = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT}
    with tracer.start_as_current_span("invoke_agent main", attributes=run) as root:
        renderer.on_record(root, notice, 0)
    assert out.getvalue().splitlines() == [
        f"[txn:0123abcd] 1-1 llm/scripted:demo: WRN budget warning for {MARKER}: 4 of 5 LLM calls made (80% of the limit)"
    ]


@pytest.mark.parametrize("verbose", [True, False])
def test_a_truncation_is_a_vrb_line_where_it_was_made_and_not_where_a_fork_replays_it(verbose):
    import io

    from opentelemetry.sdk.trace import TracerProvider

    from otel_agents.cli.console import ConsoleOptions, ConsoleRenderer

    out = io.StringIO()
    renderer = ConsoleRenderer(lambda span_id: "1-2", ConsoleOptions(verbose=verbose), txn="0123abcd", out=out)
    tracer = TracerProvider().get_tracer("test")
    notice = {"event_type": "host_notice", "agent_id": "a", "notice": "truncation",
              "content": "main's working memory was cut to its first 1 entries (4 dropped)"}
    with tracer.start_as_current_span(sc.OP_TURN, attributes={sc.TURN_INDEX: 2}) as turn:
        renderer.on_record(turn, notice, 0)  # a reset hook: asked in the turn
    with tracer.start_as_current_span("invoke_agent main", attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT}) as root:
        renderer.on_record(root, notice, 0)  # a fork's inherited records
    lines = out.getvalue().splitlines()
    if not verbose:
        assert lines == []
        return
    assert len(lines) == 1 and lines[0].startswith("[txn:0123abcd] 1-2 ")
    assert lines[0].endswith(": VRB main's working memory was cut to its first 1 entries (4 dropped)")


STOPPED = re.compile(r"^\[txn:(?P<txn>[0-9a-f]{8})\] run session/main: error: (?P<message>.*)$")


def test_a_stopped_run_s_error_line_names_the_session_s_txn_and_the_run(home):
    """Every stderr line names what it concerns: the error a run stopped with too, by the session's txn id."""
    stopped = CliRunner().invoke(cli, ["run", "--max-llm-calls", "3", PROMPT], catch_exceptions=False)
    assert stopped.exit_code == 1, stopped.stderr
    *lines, closing = [line for line in stopped.stderr.splitlines() if not line.startswith(("demo: ", "saved: ", "next: "))]
    sid = closing.split(": ", 1)[1]
    found = STOPPED.match(lines[-1])
    assert found and found["message"] == "budget exhausted for session: 3 of 3 LLM calls made", lines[-1]
    assert all(LINE.match(line) for line in lines[:-1]) and {LINE.match(line)["txn"] for line in lines[:-1]} == {found["txn"]}
    again = CliRunner().invoke(cli, ["resume", sid, "more"], catch_exceptions=False)  # the same limit: spent already
    assert again.exit_code == 1, again.stderr
    (line,) = [line for line in again.stderr.splitlines() if " error: " in line]
    assert STOPPED.match(line)["txn"] == found["txn"]


def test_a_run_line_without_a_run_is_a_plain_redacted_line():
    import io

    from otel_agents.cli.console import ConsoleRenderer

    renderer = ConsoleRenderer(lambda span_id: None, out=io.StringIO())
    assert renderer.run_line("error:", "key sk-canary0123456789abcdefXYZ refused") == "error: key [REDACTED] refused"


def test_a_model_s_control_characters_are_escapes_in_every_console_line(home, tmp_path):
    # THK lines carried a model's reasoning as it was (ESC, BEL, a lone CR); TRC payloads, JSON with
    # ensure_ascii=False, still carried C1 controls and U+202E, which shows the rest of a line reversed.
    script = tmp_path / "ctl.json"
    script.write_text(json.dumps({"name": "ctl", "agents": {"main": [
        {"text": "said \u202eabc \x9b31m", "reasoning": "think\a over\rwrite \x1b[2J \u2066"}]}}))
    result = CliRunner().invoke(cli, ["run", "-v", "--trace-llm", "--script", str(script), "go"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    stderr = result.stderr_bytes.decode()
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", stderr), stderr
    (thk,) = [line for line in stderr.splitlines() if " THK " in line]
    assert thk.endswith("THK think\\x07 over\\rwrite \\x1b[2J \\u2066")
    response = next(line for line in stderr.splitlines() if " TRC response " in line)
    assert "said \\u202eabc \\x9b31m" in response


def test_a_stopped_run_s_error_line_shows_control_characters_as_escapes():
    import io

    from otel_agents.cli.console import ConsoleRenderer

    renderer = ConsoleRenderer(lambda span_id: None, out=io.StringIO())
    line = renderer.run_line("error:", "hook said \x1b[2J\u202eabc\a")
    assert line == "error: hook said \\x1b[2J\\u202eabc\\x07"


def test_costs_show_to_the_micro_dollar_as_billing_summary_rounds_them():
    """A float's :.6f rounded its binary value: $0.000013 in `sessions list`, 0.000014 in `billing summary`."""
    from decimal import ROUND_HALF_EVEN, Decimal

    from otel_agents.cli.console import dollars, total_cost

    for cost in (0.0000135, 0.0000125, 0.1 + 0.2, 1.0000005, 0.000000499999, 123.4567895):
        exact = Decimal(repr(round(cost, 12))).quantize(Decimal("0.000001"), rounding=ROUND_HALF_EVEN)
        assert dollars(cost) == f"${exact}"
    assert dollars(0.0000135) == "$0.000014" and dollars(0.0000125) == "$0.000012"  # half-even, as Decimal sums round
    assert dollars(1.3499999999999998e-05) == "$0.000014"  # a float sum of costs rounded to 12 digits first
    assert total_cost(0.0000135, 1, 2) == "$0.000014+"
    assert dollars(1e22) == "$10000000000000000000000.000000"
