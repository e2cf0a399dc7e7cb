"""``otel-agents sessions`` list/show/verify/rm, and the session directory ``run`` leaves behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from support.held_sessions import opened_session

PROMPT = "Create Jack and Jill for a cafe discussion"


@pytest.fixture
def env(home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.delenv("OTEL_AGENTS_PRICES", raising=False)
    return home


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_demo(*extra) -> str:
    result = invoke("run", PROMPT, *extra)
    assert result.exit_code == 0, result.stderr
    (line,) = [l for l in result.stderr.splitlines() if l.startswith("session: ")]
    return line.split(": ", 1)[1]


def test_run_saves_the_session_in_the_home_and_nothing_in_the_cwd(env, tmp_path, monkeypatch):
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    session_id = run_demo()
    directory = env / "sessions" / session_id
    # pricing.json: the session's pricing snapshot (issue 23)
    assert sorted(p.name for p in directory.iterdir()) == ["events.jsonl", "meta.json", "owner.lock", "pricing.json", "spans.jsonl", "tree.json.gz"]
    assert (env / "billing.jsonl").stat().st_size > 0
    assert list(workdir.iterdir()) == []


def test_list_show_verify_rm(env):
    first = run_demo()
    second = run_demo()
    listed = invoke("sessions", "list")
    assert listed.exit_code == 0
    rows = listed.stdout.splitlines()
    assert rows[0].split()[:5] == ["ID", "CREATED", "RUNS", "STATUS", "COST"]
    assert [r.split()[0] for r in rows[1:]] == [second, first]  # newest first (issue 16: as the README says)
    assert all(" ok " in r and PROMPT in r for r in rows[1:])

    as_json = json.loads(invoke("sessions", "list", "--json").stdout)
    assert [s["id"] for s in as_json] == [second, first]
    assert as_json[1]["runs"] == 1 and as_json[1]["totals"]["llm_calls"] == 13 and as_json[1]["status"] == "ok"
    assert as_json[0]["runs"] == 1 and as_json[0]["totals"]["llm_calls"] == 13 and as_json[0]["status"] == "ok"

    shown = invoke("sessions", "show", first)
    assert shown.exit_code == 0
    text = shown.stdout
    assert text.startswith(f"session {first}  ok")
    for needle in ("run 1  ok", "4-3-2.2-2-1.1-1", "tool task", "blocked by hook 'ResourceMonitor'",
                   "RateLimitError", "session Jill (agent_003) main/Jill", "$0.002557"):
        assert needle in text, needle
    agent_rows = {line.split()[1]: line.split() for line in text.splitlines() if line.startswith("agent_")}
    assert set(agent_rows) == {"main", "Jack", "Jill", "Inner", "ResourceMonitor"}
    assert agent_rows["main"][-2:] == ["$0.001815", "$0.002557"]  # self, inclusive
    assert agent_rows["Jill"][-2] != agent_rows["Jill"][-1]  # Jill's inclusive includes Inner

    payload = json.loads(invoke("sessions", "show", first, "--json").stdout)
    assert payload["version"] == 1 and payload["session"]["id"] == first and payload["meta"]["id"] == first

    verified = invoke("sessions", "verify", first)
    assert verified.exit_code == 0, verified.stdout
    # issue 23: 41 records, the demo's 39 and its two host notices (the 429 retry, the denial)
    assert "agree" in verified.stdout and "41 records" in verified.stdout and "20 records" in verified.stdout

    ledger_before = (env / "billing.jsonl").read_bytes()
    removed = invoke("sessions", "rm", first)
    assert removed.exit_code == 0
    assert not (env / "sessions" / first).exists() and (env / "sessions" / second).is_dir()
    assert (env / "billing.jsonl").read_bytes() == ledger_before  # billing history stays
    assert invoke("sessions", "show", first).exit_code == 2


def test_list_escapes_a_title_s_control_characters(env):
    # The title is the first prompt: an ESC in it would drive the terminal, a NUL break the table row.
    result = invoke("run", "look \x1b[31mred\x00 here")
    assert result.exit_code == 0, result.stderr
    listed = invoke("sessions", "list").stdout
    (row,) = listed.splitlines()[1:]
    assert "\x1b" not in row and "\x00" not in row
    assert row.endswith("look \\x1b[31mred\\x00 here")
    (saved,) = json.loads(invoke("sessions", "list", "--json").stdout)
    assert saved["title"] == "look \x1b[31mred\x00 here"  # what was said is kept as it was


def test_list_and_show_escape_control_characters_in_every_field_as_every_text_output_does(env, tmp_path):
    # `list` escaped the title only, `show` only its title: a fork's source named in a copied meta.json,
    # and the prompt in the argv a run records, reached the terminal whole (ESC, BEL, a CR that
    # overwrites, a RIGHT-TO-LEFT OVERRIDE).
    prompt = "two\nlines \u202eabc \a over\rwrite \x1b[2J"
    environment = {**os.environ, "OTEL_AGENTS_HOME": str(env), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", prompt], env=environment, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    session_id = done.stderr.splitlines()[-1].split(": ", 1)[1]
    meta_path = env / "sessions" / session_id / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "forked_from": {"session": "s\x1b[2J", "message": "m\u202e\r"}}))
    (row,) = invoke("sessions", "list").stdout_bytes.decode().splitlines()[1:]
    assert "two lines \\u202eabc \\x07 over write \\x1b[2J" in row  # a title is one line of words
    assert row.endswith("(fork of s\\x1b[2J at m\\u202e\\r)")
    shown = invoke("sessions", "show", session_id).stdout_bytes.decode()
    (argv,) = [line for line in shown.splitlines() if line.startswith("  argv ")]
    assert "two\\nlines \\u202eabc \\x07 over\\rwrite \\x1b[2J" in argv  # the argv line is one line
    assert not any(c in shown for c in "\u202e\a\r\x1b")


def test_show_of_a_closed_billed_session_reads_neither_its_events_nor_the_ledger(env, monkeypatch):
    import otel_agents.persistence.saved as saved
    import otel_agents.persistence.ledger as ledger

    session_id = run_demo()
    expected = invoke("sessions", "show", session_id).stdout

    def never(*args, **kwargs):
        raise AssertionError("read although the checkpoint is current and billed")

    monkeypatch.setattr(saved, "read_event_lines", never)
    monkeypatch.setattr(ledger, "append_records", never)
    shown = invoke("sessions", "show", session_id)
    assert shown.exit_code == 0 and shown.stderr == ""
    assert shown.stdout == expected


def test_commands_that_decode_whole_sessions_pause_the_collector(env, monkeypatch):
    import gc
    import importlib

    import otel_agents.persistence.ledger_rebuild as ledger_rebuild
    import otel_agents.persistence.verify as verify

    # The modules, not the click groups of the same names that otel_agents.cli exports.
    sessions_cli = importlib.import_module("otel_agents.cli.sessions")

    session_id = run_demo()
    seen = {}

    def noting(name, function):
        def wrapper(*args, **kwargs):
            seen[name] = gc.isenabled()
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(sessions_cli, "render_session", noting("show", sessions_cli.render_session))
    monkeypatch.setattr(verify, "verify_session", noting("verify", verify.verify_session))
    monkeypatch.setattr(ledger_rebuild, "derived_records", noting("rebuild", ledger_rebuild.derived_records))
    assert invoke("sessions", "show", session_id).exit_code == 0
    assert invoke("sessions", "verify", session_id).exit_code == 0
    assert invoke("billing", "rebuild", "--dry-run").exit_code == 0
    assert seen == {"show": False, "verify": False, "rebuild": False}
    assert gc.isenabled()  # as it was, once the command is done


def test_show_writes_nothing_and_repair_bills_a_session_not_marked_billed(env):
    session_id = run_demo()
    meta_path = env / "sessions" / session_id / "meta.json"
    ledger = env / "billing.jsonl"
    lines = ledger.read_text().splitlines()
    ledger.unlink()  # as if the run's ledger writes had failed
    meta = json.loads(meta_path.read_text())
    meta["billed"] = False
    meta_path.write_text(json.dumps(meta))
    before = meta_path.read_bytes()
    shown = invoke("sessions", "show", session_id)
    assert shown.exit_code == 0 and "billed" not in shown.stderr
    assert not ledger.exists() and meta_path.read_bytes() == before  # a reader never writes
    repaired = invoke("sessions", "repair", session_id)
    assert repaired.exit_code == 0, repaired.stderr
    assert f"billed {len(lines)} ledger record(s)" in repaired.stdout
    assert sorted(ledger.read_text().splitlines()) == sorted(lines)
    assert json.loads(meta_path.read_text())["billed"] is True
    again = invoke("sessions", "repair", session_id)
    assert again.exit_code == 0 and "nothing to repair" in again.stdout


@pytest.mark.parametrize("command", ["show", "verify", "rm"])
@pytest.mark.parametrize("bad_id", ["../x", "a/b", "..", "/etc", "x/../../y"])
def test_ids_that_could_escape_are_rejected(env, command, bad_id):
    (env / "sessions").mkdir(parents=True)
    (env / "x").mkdir()
    result = CliRunner().invoke(cli, ["sessions", command, bad_id])
    assert result.exit_code == 2
    assert "invalid session id" in result.stderr
    assert (env / "x").is_dir()


@pytest.mark.parametrize("command", ["show", "verify", "rm"])
def test_unknown_id_is_a_usage_error(env, command):
    result = CliRunner().invoke(cli, ["sessions", command, "20990101-000000-ffffff"])
    assert result.exit_code == 2 and "no session" in result.stderr


def test_verify_names_tampered_events_and_ledger(env):
    session_id = run_demo()
    events = env / "sessions" / session_id / "events.jsonl"
    lines = events.read_text().splitlines()
    changed = json.loads(lines[7])
    changed["content"] = "edited afterwards"
    lines[7] = json.dumps(changed)
    events.write_text("\n".join(lines) + "\n")
    result = invoke("sessions", "verify", session_id)
    assert result.exit_code == 1
    assert "1 disagreement" in result.stdout and changed["message_id"] in result.stdout

    # A fresh session, whose ledger records are tampered with instead.
    run_id = run_demo()
    billing = env / "billing.jsonl"
    ledger = [json.loads(l) for l in billing.read_text().splitlines()]
    mine = [r for r in ledger if r["session_id"] == run_id]
    mine[0]["tokens"]["input"] += 1000
    dropped = mine[1]["record_id"]
    billing.write_text("".join(json.dumps(r) + "\n" for r in ledger if r["record_id"] != dropped))
    result = invoke("sessions", "verify", run_id)
    assert result.exit_code == 1
    assert mine[0]["record_id"] in result.stdout and "tokens" in result.stdout
    assert dropped in result.stdout and "lacks" in result.stdout


def test_verify_refuses_a_billing_file_that_is_not_a_ledger(env, tmp_path):
    session_id = run_demo()
    other = tmp_path / "README.md"
    other.write_text("# notes\n\nnot a ledger\n")
    result = invoke("sessions", "verify", session_id, "--billing-file", str(other))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"Error: {other} is not a billing ledger (its first line is not a ledger record)\n"


def test_verify_against_a_ledger_that_is_not_there_says_so(env, tmp_path):
    # Sessions copied to another place, their ledger left in the home: the missing records must not read as lost.
    session_id = run_demo()
    missing = tmp_path / "elsewhere" / "billing.jsonl"
    result = invoke("sessions", "verify", session_id, "--billing-file", str(missing))
    assert result.exit_code == 1 and "ledger lacks" in result.stdout
    assert f"warning: no ledger at {missing}: checked as empty" in result.stderr
    assert not missing.exists()  # read-only
    kept = invoke("sessions", "verify", session_id)
    assert kept.exit_code == 0 and "no ledger" not in kept.stderr


def test_corrupt_tree_is_shown_from_the_journal_and_reported_by_verify(env):
    session_id = run_demo()
    tree = env / "sessions" / session_id / "tree.json.gz"
    intact = CliRunner().invoke(cli, ["sessions", "show", session_id]).stdout
    tree.write_bytes(tree.read_bytes()[:100])
    result = CliRunner().invoke(cli, ["sessions", "show", session_id])
    assert result.exit_code == 0
    assert result.stdout == intact  # rebuilt from spans.jsonl + events.jsonl
    assert "truncated or corrupt" in result.stderr and "Traceback" not in result.stderr
    (env / "sessions" / session_id / "spans.jsonl").unlink()
    (env / "sessions" / session_id / "events.jsonl").unlink()
    unreadable = CliRunner().invoke(cli, ["sessions", "show", session_id])
    assert unreadable.exit_code == 2 and "truncated or corrupt" in unreadable.stderr
    assert unreadable.stderr.strip().count("\n") == 0
    verified = invoke("sessions", "verify", session_id)
    assert verified.exit_code == 1 and "truncated or corrupt" in verified.stdout


def test_storage_flags_override_the_home(env, tmp_path):
    sessions_dir, billing = tmp_path / "elsewhere" / "s", tmp_path / "elsewhere" / "bill.jsonl"
    flags = ["--sessions-dir", str(sessions_dir), "--billing-file", str(billing)]
    session_id = run_demo(*flags)
    assert (sessions_dir / session_id / "tree.json.gz").exists() and billing.exists()
    assert not (env / "sessions").exists() and not (env / "billing.jsonl").exists()
    assert session_id in invoke("sessions", "list", *flags).stdout
    assert invoke("sessions", "list").stdout == ""
    assert invoke("sessions", "verify", session_id, *flags).exit_code == 0
    assert invoke("sessions", "show", session_id).exit_code == 2


def test_unwritable_home_is_reported_before_the_first_llm_call(env, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the home directory should be")
    monkeypatch.setenv("OTEL_AGENTS_HOME", str(blocker))
    spans = tmp_path / "spans.jsonl"
    result = CliRunner().invoke(cli, ["run", PROMPT, "--otlp-file", str(spans)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "cannot write" in result.stderr
    assert f"{blocker} is a file, not a directory" in result.stderr
    # No span at all was exported: no LLM attempt happened.
    assert not spans.exists() or spans.read_text().strip() == ""
    assert blocker.read_text() == "a file where the home directory should be"


def test_unwritable_billing_file_is_reported_before_the_first_llm_call(env, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    result = CliRunner().invoke(cli, ["run", PROMPT, "--billing-file", str(blocker / "billing.jsonl")])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "cannot write" in result.stderr and "billing.jsonl" in result.stderr
    assert not (env / "sessions").exists()  # nothing half-created


def test_list_reports_unreadable_sessions(env):
    session_id = run_demo()
    (env / "sessions" / session_id / "meta.json").write_text("{")
    result = invoke("sessions", "list")
    assert result.exit_code == 0 and "unreadable" in result.stdout
    as_json = json.loads(invoke("sessions", "list", "--json").stdout)
    assert as_json == [{"id": session_id, "problem": as_json[0]["problem"]}] and "JSON" in as_json[0]["problem"]


def test_list_shows_a_session_opened_before_its_first_meta_as_running_and_newest(env, tmp_path):
    """Before its first run's meta.json, a new session held by its program was listed last, as unreadable."""
    flags = ["--sessions-dir", str(tmp_path / "opened" / "home" / "sessions")]
    earlier = run_demo(*flags)
    with opened_session(tmp_path / "opened") as opened:
        rows = invoke("sessions", "list", *flags).stdout.splitlines()[1:]
        assert [row.split()[0] for row in rows] == [opened.directory.name, earlier]
        assert rows[0].split()[2:5] == ["0", "running", "$0.000000"], rows[0]
        newest, _ = json.loads(invoke("sessions", "list", "--json", *flags).stdout)
        assert (newest["id"], newest["status"], newest["runs"], newest["title"]) == (
            opened.directory.name, "running", 0, None) and "problem" not in newest


@pytest.mark.parametrize("field, value", [
    ("totals", {"cost_usd": [0.1]}), ("totals", ["x"]), ("runs", [1]), ("runs", "two"),
])
def test_list_shows_a_hand_edited_meta_with_question_marks(env, field, value):
    session_id = run_demo()
    path = env / "sessions" / session_id / "meta.json"
    meta = json.loads(path.read_text())
    meta[field] = value
    path.write_text(json.dumps(meta))
    result = invoke("sessions", "list")
    assert result.exit_code == 0
    (row,) = [line for line in result.stdout.splitlines() if line.startswith(session_id)]
    assert "?" in row.split()[2:5] or "?" in row.split()[-3:], row


def test_real_processes_run_then_verify(env):
    """The installed command, in real processes: the demo's tree and events agree."""
    exe = [sys.executable, "-m", "otel_agents"]
    environment = dict(os.environ)
    ran = subprocess.run([*exe, "run", PROMPT], capture_output=True, text=True, env=environment, timeout=120)
    assert ran.returncode == 0, ran.stderr
    session_id = ran.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    verified = subprocess.run([*exe, "sessions", "verify", session_id], capture_output=True, text=True,
                              env=environment, timeout=60)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    bad = subprocess.run([*exe, "sessions", "show", "../x"], capture_output=True, text=True, env=environment, timeout=60)
    assert bad.returncode == 2


@pytest.mark.parametrize("args", [
    ["sessions", "list", "--sessions-dir", "a\x00b"], ["sessions", "list", "--billing-file", "\x00"],
    ["run", "--otlp-file", "\x00", "hi"], ["billing", "export", "-o", "\x00"], ["view", "--sessions-dir", "\x00"],
])
def test_a_path_with_a_nul_byte_is_a_usage_error(env, args):
    """No shell can pass a NUL, but an in-process caller can: one line and exit 2, not a ValueError."""
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2 and "contains a NUL byte" in result.stderr, result.output
    assert not (env / "sessions").exists()


def test_readme_help_and_listing_agree_on_the_order(env):
    """Issue 16: the README said newest first while --help and the code said oldest first."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (line,) = [l for l in readme.splitlines() if l.startswith("otel-agents sessions list")]
    assert "newest first" in line
    assert "newest first" in invoke("sessions", "list", "--help").stdout
    assert "newest first" in invoke("sessions", "--help").stdout


def test_a_session_of_an_unpriced_model_is_never_listed_or_finished_at_zero(env, monkeypatch):
    # Its calls' cost is unknown: "$0.000000" read as free.
    from support.openai_server import OpenAIServer, Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.plan(Reply(content="no price for me"))
        result = invoke("run", "-v", "--model", "openai/unpriced-local-model", "--api-base", server.api_base, "hi")
    assert result.exit_code == 0, result.stderr
    (fin,) = [line for line in result.stderr.splitlines() if " FIN " in line]
    assert fin.endswith("out tokens, unpriced"), fin
    (row,) = invoke("sessions", "list").stdout.splitlines()[1:]
    assert " unpriced " in row and "$" not in row


def test_show_gives_a_failed_attempt_that_was_billed_its_tokens_and_cost(env, monkeypatch):
    """A 200 reply without choices fails its attempt but reports usage: billed, so its row says so."""
    from support.openai_server import OpenAIServer, Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.plan(Reply(patch={"choices": []}, prompt_tokens=500, completion_tokens=50), Reply(content="fine"))
        result = invoke("run", "--model", "openai/gpt-4o-mini", "--api-base", server.api_base, "hi")
    assert result.exit_code == 0, result.stderr
    session_id = result.stderr.splitlines()[-1].split(": ", 1)[1]
    rows = [line for line in invoke("sessions", "show", session_id).stdout.splitlines() if " llm " in line]
    failed, answered = rows
    assert " error " in failed and "attempt 1  in 500 out 50  $0.000105  — MalformedReply" in failed, failed
    assert " ok " in answered and " in 41 out 1 " in answered


@pytest.mark.parametrize("cost, unpriced, calls, text", [
    (0.0012, 0, 3, "$0.001200"), (0.0012, 1, 3, "$0.001200+"), (0.0, 3, 3, "unpriced"), ("x", 0, 1, "?"),
    (0.0, None, 0, "$0.000000"),
])
def test_a_total_cost_says_when_some_or_all_calls_were_unpriced(cost, unpriced, calls, text):
    from otel_agents.cli.console import total_cost

    assert total_cost(cost, unpriced, calls) == text


def test_verify_names_a_journal_shorter_than_its_checkpoint_and_show_keeps_the_checkpoint(env):
    """spans.jsonl cut short (truncated, or restored from an older copy): verify said the files agreed
    (exit 0) and show displayed the part the journal holds, hiding what tree.json.gz has."""
    session_id = run_demo()
    shown = invoke("sessions", "show", session_id).stdout
    journal = env / "sessions" / session_id / "spans.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[: len(lines) // 2]))

    verified = invoke("sessions", "verify", session_id)
    assert verified.exit_code == 1
    assert "the journal lacks spans the checkpoint holds" in verified.stdout
    assert "recoverable" not in verified.stdout
    assert invoke("sessions", "show", session_id).stdout.splitlines()[:3] == shown.splitlines()[:3]


SECRET = "sk-ant-api03-" + "Zq7xW2" * 14


def test_verify_redacts_the_values_it_quotes(env):
    """A disagreeing record's values were quoted as they are: a secret in one left the session directory
    in clear on the console, which every other console line redacts."""
    session_id = run_demo()
    events = env / "sessions" / session_id / "events.jsonl"
    lines = events.read_text(encoding="utf-8").splitlines()
    line = json.loads(lines[1])
    line["content"] = f"my key is {SECRET}"
    lines[1] = json.dumps(line)
    events.write_text("".join(l + "\n" for l in lines), encoding="utf-8")

    verified = invoke("sessions", "verify", session_id)
    assert verified.exit_code == 1 and "content:" in verified.stdout
    assert "[REDACTED]" in verified.stdout
    assert SECRET not in verified.stdout + verified.stderr and SECRET[:20] not in verified.stdout


def test_verify_shows_control_characters_of_the_values_it_quotes_as_escapes(env):
    # A ledger record's id, as a copied or hand-edited ledger holds it, reached the terminal whole.
    session_id = run_demo()
    billing = env / "billing.jsonl"
    ledger = [json.loads(l) for l in billing.read_text().splitlines()]
    odd = {**next(r for r in ledger if r["session_id"] == session_id), "record_id": "odd\x1b[2J\u202ediw\r"}
    with open(billing, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(odd) + "\n")
    verified = invoke("sessions", "verify", session_id)
    assert verified.exit_code == 1
    out = verified.stdout_bytes.decode()
    assert "ledger record odd\\x1b[2J\\u202ediw\\r names session" in out
    assert not any(c in out for c in "\x1b\u202e\r")


def _header(shown: str) -> list[str]:
    return shown.split("\n\n", 1)[0].splitlines()


def test_show_gives_a_session_that_carried_on_after_a_failed_run_no_error_of_that_run(env):
    """The session's status is its last run's: run 1's error stays on run 1's line, not the session's."""
    import gzip

    stopped = invoke("run", PROMPT, "--max-llm-calls", "3")
    assert stopped.exit_code == 1
    (line,) = [l for l in stopped.stderr.splitlines() if l.startswith("session: ")]
    session_id = line.split(": ", 1)[1]
    assert invoke("resume", session_id, "--max-llm-calls", "100", "more").exit_code == 0
    shown = invoke("sessions", "show", session_id).stdout
    header = _header(shown)
    assert header[0].split()[2] == "ok" and not any("error" in l for l in header), header
    run_1 = shown.split("\nrun 1 ", 1)[1].splitlines()
    assert run_1[1] == "  error: BudgetExhausted: budget exhausted for session: 3 of 3 LLM calls made"
    saved = json.loads(gzip.decompress((env / "sessions" / session_id / "tree.json.gz").read_bytes()))["session"]
    assert saved["status"] == "ok" and saved["error"] is None and saved["runs"][0]["error"]


def test_show_of_a_tree_saved_with_an_earlier_run_s_error_on_an_ok_session_leaves_it_to_that_run():
    from otel_agents.cli.session_render import render_session

    counts = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "llm_calls": 0}
    totals = {"inclusive": counts, "self": counts}
    run = {"index": 1, "status": "error", "error": "LLMCallFailed: boom", "totals": totals, "started_ns": 0,
           "ended_ns": 1, "agent_name": "main", "agent_id": "agent_001"}
    tree = {"id": "s", "status": "ok", "error": "LLMCallFailed: boom", "totals": totals, "agents": {},
            "runs": [run, dict(run, index=2, status="ok", error=None)]}
    lines = render_session(tree, None)
    assert lines.count("  error: LLMCallFailed: boom") == 1 and lines.index("  error: LLMCallFailed: boom") > 3
    failing = render_session(dict(tree, status="error"), None)
    assert failing.count("  error: LLMCallFailed: boom") == 2  # a session whose last run failed says so up top


def test_a_session_holding_only_its_lock_is_shown_new_as_it_is_listed(env):
    # Killed before its first run wrote anything: `list` said new, `show` said ok.
    directory = env / "sessions" / "20261129-000000-abcdef"
    directory.mkdir(parents=True, mode=0o700)
    (directory / "owner.lock").touch()
    (row,) = invoke("sessions", "list").stdout.splitlines()[1:]
    assert " new " in row
    shown = invoke("sessions", "show", "20261129-000000-abcdef")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "session 20261129-000000-abcdef  new"


def test_show_puts_an_error_of_several_lines_on_its_own_line():
    """A tool's or hook's error text may hold line breaks: shown as is, its lines posed as rows of the tree."""
    from otel_agents.cli.session_render import render_session

    counts = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "llm_calls": 0}
    totals = {"inclusive": counts, "self": counts}
    tool = {"kind": "tool", "path": "main/tool", "status": "error", "error": "ValueError: bad\nmultiline\n  error",
            "accounting": [], "attributes": {},
            "started_ns": 0, "ended_ns": 1, "name": "boom", "ops": []}
    turn = {"index": 1, "path": "main/turn", "status": "ok", "totals": totals, "started_ns": 0, "ended_ns": 1,
            "ops": [tool]}
    run = {"index": 1, "status": "error", "error": "HookFailed: review\nhook said no", "totals": totals,
           "started_ns": 0, "ended_ns": 1, "agent_name": "main", "agent_id": "agent_001", "turns": [turn]}
    tree = {"id": "s", "status": "error", "error": run["error"], "totals": totals, "agents": {}, "runs": [run]}
    lines = render_session(tree, None)
    assert lines.count("  error: HookFailed: review hook said no") == 2
    (row,) = [line for line in lines if "main/tool" in line]
    assert row.endswith("— ValueError: bad multiline error")
    assert not any(line.strip() in ("multiline", "error", "hook said no") for line in lines)


def test_an_events_jsonl_cut_to_nothing_is_named_once_refused_by_repair_and_shown_from_the_checkpoint(env):
    """events.jsonl truncated: show said 0 agents and the views "(nothing)", verify named each of its records
    in a line of its own, and nothing said why. Now readers show the checkpoint with a warning, verify says it
    in one line and repair changes nothing."""
    session_id = run_demo()
    shown = invoke("sessions", "show", session_id).stdout
    agents = invoke("view", session_id, "agents").stdout
    directory = env / "sessions" / session_id
    (directory / "events.jsonl").write_bytes(b"")
    before = {path.name: path.read_bytes() for path in directory.iterdir() if path.name != "owner.lock"}

    verified = invoke("sessions", "verify", session_id)
    assert verified.exit_code == 1
    (problem,) = [line for line in verified.stdout.splitlines() if "events.jsonl" in line]
    assert "lacks" in problem and "records the checkpoint (tree.json.gz) holds" in problem
    assert "not in events.jsonl" not in verified.stdout
    for args in (("sessions", "show", session_id), ("view", session_id, "agents")):
        result = invoke(*args)
        assert result.exit_code == 0 and result.stdout == (shown if args[0] == "sessions" else agents)
        (warning,) = [line for line in result.stderr.splitlines() if "events.jsonl lacks" in line]
    repaired = invoke("sessions", "repair", session_id)
    assert repaired.exit_code == 2
    (error,) = [line for line in repaired.stderr.splitlines() if line.startswith("Error:")]
    assert "events.jsonl lacks" in error and "nothing was changed" in error
    assert {path.name: path.read_bytes() for path in directory.iterdir() if path.name != "owner.lock"} == before


def test_show_marks_a_turn_whose_answer_a_review_hook_rejected_as_it_marks_a_denial(env, tmp_path):
    """The denied tool call's line said so; the turn whose answer was rejected showed nothing."""
    script = tmp_path / "rj.json"
    script.write_text(json.dumps({"name": "rj", "agents": {"main": [
        {"tool_calls": [{"name": "task", "arguments": {"name": "Jack"}}]}, "bad\nanswer", "good answer"]},
        "hooks": [{"kind": "review", "name": "Picky", "reject_if_contains": "bad"},
                  {"kind": "approval", "name": "NoTask", "deny_tools": ["task"]}]}))
    session_id = run_demo("--script", str(script))
    shown = invoke("sessions", "show", session_id, "--ids").stdout.splitlines()
    marked = {line.split()[0]: line for line in shown if " hook " in line and "argv" not in line}
    assert sorted(marked) == ["1-2", "2"]  # the denied call and the rejected answer's turn, nothing else
    assert "tool task" in marked["1-2"] and "— Error: Action blocked by hook 'NoTask'" in marked["1-2"]
    assert "turn 2 " in marked["2"] and "  — answer rejected by hook 'Picky': the answer must not contain 'bad'  span " in marked["2"]
