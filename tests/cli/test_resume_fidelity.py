"""Resume sees what the original run saw (issue 16 item 12), with real processes and a real HTTP model.

The session directory keeps what the model was sent, pattern-labelled secrets included;
every copy that leaves it (OTLP file, console, billing export) is redacted; credentials
of the environment are written nowhere and shown nowhere; sessions are owner-only.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from support.openai_server import OpenAIServer, Reply

from otel_agents.tracing.redaction import redact

LABELLED = "password=hunter2-correct-horse-battery"  # a secret by pattern: content, kept in the session
SECRET_VALUE = b"hunter2-correct-horse-battery"
API_KEY = "sk-test-envkey-0123456789abcdef"  # credentials of the environment: written nowhere
SERVICE_TOKEN = "svc-token-from-env-9876543210"
PROMPTS = (f"Log in with {LABELLED}. The key is {API_KEY} and the token {SERVICE_TOKEN}.", "And now?")
REPLIES = ("Logged in.", "Nothing more to do.")


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), OTEL_TRACES_EXPORTER="none", OPENAI_API_KEY=API_KEY,
               MY_SERVICE_TOKEN=SERVICE_TOKEN, LITELLM_LOCAL_MODEL_COST_MAP="True")
    return env


def cli(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "otel_agents", *args], capture_output=True, env=env_for(home),
                          cwd=cwd, timeout=180)


def session_of(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stderr.decode().strip().splitlines()[-1].split(": ", 1)[1]


def model_args(server: OpenAIServer) -> list[str]:
    return ["--model", "openai/test-model", "--api-base", server.api_base, "--max-attempts", "1"]


def raw_messages(body: dict) -> bytes:
    return json.dumps(body["messages"], ensure_ascii=False, separators=(",", ":")).encode()


def files_under(root: Path) -> dict[Path, bytes]:
    out = {}
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            out[path] = gzip.decompress(data) if path.suffix == ".gz" else data
    return out


def test_a_resumed_model_is_sent_the_uninterrupted_runs_bytes_and_nothing_leaves_unredacted(tmp_path):
    whole_home, split_home = tmp_path / "whole", tmp_path / "split"
    otlp_file = tmp_path / "split.otlp.jsonl"  # both processes of the split session append to it
    with OpenAIServer() as server:
        server.plan(*(Reply(content=text) for text in REPLIES))
        session_of(cli(whole_home, "run", *model_args(server), *PROMPTS, cwd=tmp_path))
        whole = server.bodies
        server.reset_state()
        server.plan(*(Reply(content=text) for text in REPLIES))
        sid = session_of(cli(split_home, "run", *model_args(server), "--otlp-file", str(otlp_file), PROMPTS[0],
                             cwd=tmp_path))
        resumed = cli(split_home, "resume", sid, *model_args(server), "--trace-llm", "--otlp-file", str(otlp_file),
                      PROMPTS[1], cwd=tmp_path)
        split = server.bodies
        headers = [h for h, _ in server.requests]
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert resumed.stdout.decode().strip() == REPLIES[1]

    # The resumed model is sent exactly what the uninterrupted run sent, the labelled secret included.
    assert len(whole) == len(split) == 2
    assert [raw_messages(b) for b in split] == [raw_messages(b) for b in whole]
    assert SECRET_VALUE in raw_messages(split[1])
    # The key reaches the model in its header only; the prompt's copies were never in any transcript.
    assert all(h["authorization"] == f"Bearer {API_KEY}" for h in headers)
    assert API_KEY.encode() not in raw_messages(split[1]) and SERVICE_TOKEN.encode() not in raw_messages(split[1])

    # --trace-llm after a resume: the whole request as sent (first prompt and its answer), redacted.
    stderr = resumed.stderr.decode()
    requests = [line for line in stderr.splitlines() if " TRC request " in line]
    assert len(requests) == 1
    shown = json.loads(requests[0].split(" TRC request ", 1)[1])
    assert [m["role"] for m in shown] == ["system", "user", "assistant", "user"]
    assert shown == redact(split[1]["messages"])
    assert "password=[REDACTED]" in shown[1]["content"] and shown[2]["content"] == REPLIES[0]

    # The OTLP file export is redacted; the session directory keeps the content as sent.
    otlp = otlp_file.read_bytes()
    assert SECRET_VALUE not in otlp and b"password=[REDACTED]" in otlp
    saved = files_under(split_home / "sessions" / sid)
    assert SECRET_VALUE in saved[split_home / "sessions" / sid / "events.jsonl"]

    # billing export, like the ledger, holds no labelled secret (an error quoting one included).
    with OpenAIServer() as server:
        server.plan(Reply.error(400, f"Invalid request: {LABELLED} is not accepted"))
        failed = cli(split_home, "resume", sid, *model_args(server), "Try once more.", cwd=tmp_path)
    assert failed.returncode == 1
    journal = (split_home / "sessions" / sid / "spans.jsonl").read_bytes()
    assert SECRET_VALUE in journal  # the error as the provider said it, in the session only
    exported = cli(split_home, "billing", "export", "--format", "jsonl", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr.decode()
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert any("[REDACTED]" in (row.get("error") or "") for row in rows)
    assert SECRET_VALUE not in exported.stdout

    # Credentials of the environment: in no file under either home and in no output.
    outputs = [resumed.stdout, resumed.stderr, failed.stdout, failed.stderr, exported.stdout, exported.stderr, otlp]
    for path, data in {**files_under(whole_home), **files_under(split_home)}.items():
        for credential in (API_KEY, SERVICE_TOKEN):
            assert credential.encode() not in data, (path, credential)
    for data in outputs:
        assert API_KEY.encode() not in data and SERVICE_TOKEN.encode() not in data
        assert SECRET_VALUE not in data

    # Owner-only: the sessions directory and each session 0700, every file 0600.
    for home in (whole_home, split_home):
        sessions = home / "sessions"
        directories = [home, sessions, *(p for p in sessions.rglob("*") if p.is_dir())]
        assert {stat.S_IMODE(p.stat().st_mode) for p in directories} == {0o700}
        files = [home / "billing.jsonl", *(p for p in sessions.rglob("*") if p.is_file())]
        assert len(files) >= 5 and {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}


def test_modes_do_not_depend_on_the_umask(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "one.json"
    script.write_text(json.dumps({"name": "one", "agents": {"main": ["done"]}}))
    env = env_for(home)
    # A permissive umask would leave group and world bits on everything created with defaults.
    result = subprocess.run(["/bin/sh", "-c", 'umask 000 && exec "$@"', "sh", sys.executable, "-m", "otel_agents",
                             "run", "--script", str(script), "hi"], capture_output=True, env=env, cwd=tmp_path,
                            timeout=180)
    sid = session_of(result)
    directory = home / "sessions" / sid
    assert {stat.S_IMODE(p.stat().st_mode) for p in (home, home / "sessions", directory)} == {0o700}
    files = [home / "billing.jsonl", *directory.iterdir()]
    assert {"events.jsonl", "spans.jsonl", "tree.json.gz", "meta.json"} <= {p.name for p in files}
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}


def test_an_imported_export_holds_the_redacted_text_and_resumes_from_it(tmp_path):
    """`import` of an --otlp-file export builds the session from the redacted copy: expected, and said in docs."""
    script = tmp_path / "echo.json"
    script.write_text(json.dumps({"name": "echo", "agents": {"main": ["Noted.", "Still noted."]}}))
    source_home, other_home = tmp_path / "source", tmp_path / "other"
    otlp_file = tmp_path / "export.jsonl"
    sid = session_of(cli(source_home, "run", "--script", str(script), "--otlp-file", str(otlp_file),
                         f"Remember {LABELLED}.", cwd=tmp_path))
    assert SECRET_VALUE in (source_home / "sessions" / sid / "events.jsonl").read_bytes()
    imported = cli(other_home, "import", str(otlp_file), cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr.decode()
    events = (other_home / "sessions" / sid / "events.jsonl").read_bytes()
    assert SECRET_VALUE not in events and b"password=[REDACTED]" in events
    resumed = cli(other_home, "resume", sid, "--script", str(script), "--trace-llm", "Go on.", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert resumed.stdout.decode().strip() == "Still noted."
    assert stat.S_IMODE((other_home / "sessions" / sid).stat().st_mode) == 0o700
