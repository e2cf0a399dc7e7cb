"""Secret redaction: patterns, keys, idempotence, and canary runs grepped byte for byte."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.tracing.redaction import MARKER, is_secret_key, redact, redact_attributes, redact_text

CANARY_KEY = "sk-canary0123456789abcdefXYZ"
CANARY_TOKEN = "abcdefgh12345678"
CANARY_BEARER = f"Authorization: Bearer {CANARY_TOKEN}"
CANARIES = (b"canary0123456789", CANARY_TOKEN.encode())


# --- units --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {CANARY_KEY} here", f"key {MARKER} here"),
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", MARKER),
        ("sk-proj-AbCdEfGhIjKlMnOpQrStUv_x-y", MARKER),
        (CANARY_BEARER, f"Authorization: {MARKER}"),
        ("authorization: bearer xyz12345678", f"authorization: {MARKER}"),
        ('{"Authorization": "Basic dXNlcjpwYXNz"}', f'{{"Authorization": "{MARKER}"}}'),
        ("headers={'x-api-key': 'abc123'}", f"headers={{'x-api-key': '{MARKER}'}}"),
        ("completion(api_key='gsk_notreallyakeybutlongenough', model=m)", f"completion(api_key='{MARKER}', model=m)"),
        ("litellm.completion(api_key=myplainkey123)", f"litellm.completion(api_key={MARKER})"),
        ("https://x/?apikey=abc&q=1", f"https://x/?apikey={MARKER}&q=1"),
        ("AKIAABCDEFGHIJKLMNOP", MARKER),
        ("ghp_" + "a" * 36, MARKER),
        ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
         f"token {MARKER}"),
        ("password=hunter2", f"password={MARKER}"),
        ('{"password": "hunter2"}', f'{{"password": "{MARKER}"}}'),
        ("Cookie: session=abc; theme=dark\nnext", f"Cookie: {MARKER}\nnext"),
        # Prose is left alone: these words are not secrets by themselves.
        ("the secret: a garden", "the secret: a garden"),
        ("my password is long", "my password is long"),
        ("Cookie: chocolate chip", "Cookie: chocolate chip"),
        ("ask-me-anything-about-tokens-please", "ask-me-anything-about-tokens-please"),
        ("0sk-AbCdEfGhIjKlMnOpQrStUv", f"0{MARKER}"),
        ("", ""),
    ],
)
def test_redact_text(text, expected):
    assert redact_text(text) == expected


def test_escaped_json_stays_valid_json():
    inner = json.dumps({"headers": {"Authorization": "Basic dXNlcjpwYXNz", "x-api-key": "k123"}, "q": CANARY_KEY})
    outer = json.dumps({"arguments": inner})
    redacted = redact_text(outer)
    decoded = json.loads(json.loads(redacted)["arguments"])
    assert decoded == {"headers": {"Authorization": MARKER, "x-api-key": MARKER}, "q": MARKER}


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("Authorization", True), ("X-API-Key", True), ("api_key", True), ("Cookie", True),
        ("http.request.header.authorization", True), ("http.request.header.x-api-key", True),
        ("litellm.api_key", True), ("gen_ai.usage.input_tokens", False), ("otel_agents.event.content", False),
        ("authorization_server", False), ("tokens", False),
    ],
)
def test_secret_keys(key, secret):
    assert is_secret_key(key) is secret


def test_structures_lose_secret_values_and_keep_everything_else():
    value = {
        "headers": {"Authorization": "anything at all", "Accept": "json"},
        "pairs": [("cookie", "a=1"), ("accept", "json")],
        "list": [f"x {CANARY_KEY}", 3, None, True],
        "nested": ({"api_key": 12345},),
        "raw": f"Bearer {CANARY_TOKEN}".encode(),
    }
    assert redact(value) == {
        "headers": {"Authorization": MARKER, "Accept": "json"},
        "pairs": [("cookie", MARKER), ("accept", "json")],
        "list": [f"x {MARKER}", 3, None, True],
        "nested": ({"api_key": MARKER},),
        "raw": MARKER.encode(),
    }
    attrs = redact_attributes({"http.request.header.authorization": ["Basic abc"], "n": 1, "s": CANARY_BEARER})
    assert attrs == {"http.request.header.authorization": MARKER, "n": 1, "s": f"Authorization: {MARKER}"}


_FRAGMENTS = st.sampled_from([
    CANARY_KEY, "Bearer ", CANARY_TOKEN, "Authorization", ": ", "=", '"', "'", "\\", "api_key", "password",
    "Cookie: ", "a=1; ", "sk-", "x-api-key", " ", "\n", "{", "}", MARKER, "Basic ", "secret",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=8)), max_size=12).map("".join))
def test_redaction_is_idempotent_and_removes_the_canaries(text):
    once = redact_text(text)
    assert redact_text(once) == once
    # A key glued to the end of a word ("ask-...") is not a key; anywhere else it is.
    assert re.search(r"(?<![A-Za-z])" + re.escape(CANARY_KEY), once) is None
    assert re.search(r"(?<![A-Za-z])Bearer " + CANARY_TOKEN, once) is None


# --- canary runs: every byte written must be clean ------------------------------------------


def canary_script(tmp_path: Path) -> Path:
    script = {
        "name": "canary",
        "root": {"name": "main", "system_prompt": f"Use {CANARY_KEY} when you call the API."},
        "agents": {
            "main": [
                {"tool_calls": [{"name": "task", "arguments": {
                    "name": "Jack",
                    "system_prompt": f"You hold the key {CANARY_KEY}. Send '{CANARY_BEARER}'.",
                    "user_prompt": f"Say your key. curl -H '{CANARY_BEARER}' -H 'x-api-key: {CANARY_KEY}'",
                }}]},
                {"text": "All done.", "reasoning": f"Jack said his key; I must never repeat {CANARY_KEY}."},
            ],
            "Jack": [f"My key is {CANARY_KEY} and my header is {CANARY_BEARER}."],
        },
    }
    path = tmp_path / "canary.json"
    path.write_text(json.dumps(script))
    return path


def all_bytes_under(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def assert_clean(where: str, data: bytes) -> None:
    for canary in CANARIES:
        assert canary not in data, f"{where} holds the canary {canary!r}"


def test_cli_run_with_canaries_writes_and_exports_no_secret(tmp_path):
    from support.otlp_receivers import HttpTraceReceiver

    home = tmp_path / "home"
    otlp_file = tmp_path / "spans.jsonl"
    prompt = f"Create Jack. His key is {CANARY_KEY}; {CANARY_BEARER}"
    with HttpTraceReceiver() as receiver:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(OTEL_AGENTS_HOME=str(home), OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                   OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf", LITELLM_LOCAL_MODEL_COST_MAP="True")
        result = subprocess.run(
            [sys.executable, "-m", "otel_agents", "run", "-v", "--script", str(canary_script(tmp_path)),
             "--otlp-file", str(otlp_file), prompt],
            capture_output=True, env=env, cwd=tmp_path, timeout=120,
        )
        assert result.returncode == 0, result.stderr.decode()
        spans = receiver.wait_for_spans(6, timeout=10)
        received = b"".join(request.SerializeToString() for request in receiver.requests)
    assert result.stdout.decode().strip() == "All done."
    assert len(spans) >= 6 and received
    assert_clean("the OTLP export", received)
    assert_clean("--otlp-file", otlp_file.read_bytes())
    assert MARKER.encode() in otlp_file.read_bytes()  # the secrets were there, and were replaced
    assert_clean("stderr", result.stderr)
    assert_clean("stdout", result.stdout)
    # Issue 16 item 12: the session directory keeps what the model was sent (a resumed model
    # sees it too); the ledger, like every copy that leaves the session, is redacted.
    assert_clean("the ledger", (home / "billing.jsonl").read_bytes())
    (events,) = [data for path, data in all_bytes_under(home).items() if path.name == "events.jsonl"]
    assert all(canary in events for canary in CANARIES)
    # Issue 19: --otlp-file also writes the run's metrics beside the spans; they hold no secret either.
    assert_clean("--otlp-file metrics", (tmp_path / "spans.metrics.jsonl").read_bytes())
    assert not [p for p in tmp_path.iterdir()
                if p.name not in {"home", "spans.jsonl", "spans.metrics.jsonl", "canary.json"}]


def test_recorded_session_home_and_ledger_hold_no_secret(tmp_path, memory_tracing, no_sleep):
    """The session directory and the ledger, written by the real recorder during a canary run."""
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.retry import RetryPolicy
    from otel_agents.llm.scripts import load_script
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.store import SessionStore
    from otel_agents.runtime.scenario import build_session

    home = tmp_path / "home"
    script = load_script(str(canary_script(tmp_path)))
    llm = LLMClient(memory_tracing.telemetry, retry=RetryPolicy(max_attempts=2), sleep=no_sleep)
    session = build_session(script, telemetry=memory_tracing.telemetry, llm=llm)
    recorder = SessionRecorder(SessionStore.create(home / "sessions", session.id), billing_file=home / "billing.jsonl")
    memory_tracing.provider.add_span_processor(recorder)
    memory_tracing.telemetry.listeners.append(recorder)
    asyncio.run(session.run(f"Create Jack. {CANARY_BEARER} and {CANARY_KEY}"))
    recorder.close()
    files = all_bytes_under(home)
    names = {p.name for p in files}
    assert {"events.jsonl", "tree.json.gz", "meta.json", "billing.jsonl"} <= names
    import gzip

    # Issue 16 item 12: the ledger is redacted; the session files keep content as sent.
    assert_clean("the ledger", files[home / "billing.jsonl"])
    for path, data in files.items():
        if path.name in ("events.jsonl", "tree.json.gz"):
            data = gzip.decompress(data) if path.suffix == ".gz" else data
            assert all(canary in data for canary in CANARIES), path
    # The listener saw the records as the span events hold them: as the model was sent them.
    assert all(canary in json.dumps(memory_tracing.recorder.records).encode() for canary in CANARIES)


def test_the_api_key_of_a_real_litellm_call_stays_out(tmp_path):
    """The key travels in the Authorization header to the model and nowhere else, errors included."""
    from support.openai_server import OpenAIServer, Reply

    home = tmp_path / "home"
    otlp_file = tmp_path / "spans.jsonl"
    with OpenAIServer() as server:
        server.plan(
            Reply(content=f"The header was {CANARY_BEARER}", prompt_tokens=12, completion_tokens=5),
            Reply.error(401, f"Incorrect API key provided: {CANARY_KEY}. You can find your API key at ..."),
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(OTEL_AGENTS_HOME=str(home), OPENAI_API_KEY=CANARY_KEY, LITELLM_LOCAL_MODEL_COST_MAP="True")
        result = subprocess.run(
            [sys.executable, "-m", "otel_agents", "run", "-v", "--model", "openai/test-model",
             "--api-base", server.api_base, "--max-attempts", "1", "--otlp-file", str(otlp_file),
             f"first {CANARY_KEY}", "second"],
            capture_output=True, env=env, cwd=tmp_path, timeout=120,
        )
        headers = [{k.lower(): v for k, v in h.items()} for h, _ in server.requests]
    assert result.returncode == 1, result.stderr.decode()  # the second prompt's call fails (401)
    assert len(headers) == 2 and all(h["authorization"] == f"Bearer {CANARY_KEY}" for h in headers)
    assert b"401" in result.stderr or b"AuthenticationError" in result.stderr
    data = otlp_file.read_bytes()
    assert b"Incorrect API key provided: [REDACTED]" in data
    assert_clean("--otlp-file", data)
    assert_clean("stderr", result.stderr)
    # The key is a credential of the environment: written nowhere (issue 16 item 12). The bearer
    # token the model replied with is content, kept in the session and redacted in the ledger.
    for path, content in all_bytes_under(home).items():
        assert b"canary0123456789" not in content, path
        if path.name == "billing.jsonl":
            assert_clean(str(path), content)


def _cli(args, env, cwd):
    return subprocess.run([sys.executable, "-m", "otel_agents", *args], capture_output=True, env=env, cwd=cwd, timeout=120)


def _clean_env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and not k.endswith("_API_KEY")}
    env.update(OTEL_AGENTS_HOME=str(home), HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    return env


@pytest.mark.parametrize("key, slashes", [
    ("sk-proj-AbCd/EfGh+IjKl/MnOp1234", True),  # "/" written "\/" by the server's JSON
    ("sk-proj-AbCd/EfGh+IjKl/MnOp1234", False),
    ('pw-with"quote\\and-backslash99', False),  # '"' and '\' are always escaped in JSON
])
def test_a_key_the_server_echoes_json_escaped_is_written_and_shown_nowhere(tmp_path, key, slashes):
    from support.openai_server import OpenAIServer, Reply

    home = tmp_path / "home"
    env = _clean_env(home) | {"HOSTED_VLLM_API_KEY": key}
    with OpenAIServer() as server:
        server.plan(Reply.error(401, f"Incorrect API key provided: {key}", escape_slashes=slashes))
        run = _cli(["run", "--model", "hosted_vllm/x", "--api-base", server.api_base, "--max-attempts", "1",
                    "--otlp-file", str(tmp_path / "out.jsonl"), "Hi"], env, tmp_path)
    assert run.returncode == 1 and b"error:" in run.stderr, run.stderr.decode()
    assert b"Incorrect API key provided: [REDACTED]" in (tmp_path / "out.jsonl").read_bytes()
    session = [line for line in run.stderr.decode().splitlines() if line.startswith("session: ")][0].split()[1]
    shown = [run.stdout, run.stderr, (tmp_path / "out.jsonl").read_bytes(),
             _cli(["billing", "export"], env, tmp_path).stdout, _cli(["sessions", "show", session], env, tmp_path).stdout]
    shown += all_bytes_under(home).values()
    distinctive = b"MnOp1234" if "MnOp" in key else b"backslash99"
    assert not [data for data in shown if distinctive in data]


def test_credentials_in_the_api_base_url_are_saved_and_shown_nowhere(tmp_path):
    from support.openai_server import OpenAIServer, Reply

    home = tmp_path / "home"
    env = _clean_env(home) | {"HOSTED_VLLM_API_KEY": "sk-test"}
    with OpenAIServer() as server:
        api_base = server.api_base.replace("://", "://bob:TopSecretPw99@")
        run = _cli(["run", "--model", "hosted_vllm/x", "--api-base", api_base, "--max-attempts", "1",
                    "--otlp-file", str(tmp_path / "out.jsonl"), "Hi"], env, tmp_path)
    assert run.returncode in (0, 1) and b"session: " in run.stderr, run.stderr.decode()
    session = [line for line in run.stderr.decode().splitlines() if line.startswith("session: ")][0].split()[1]
    show = _cli(["sessions", "show", session], env, tmp_path)
    assert show.returncode == 0 and b"--api-base" in show.stdout, show.stderr
    shown = [run.stdout, run.stderr, (tmp_path / "out.jsonl").read_bytes(), show.stdout, *all_bytes_under(home).values()]
    assert not [data for data in shown if b"TopSecretPw99" in data]


# --- seed 002's redaction list ---

from otel_agents.tracing.redaction import SEED_002_HEADERS  # noqa: E402


def test_the_seed_list_names_the_headers_it_quotes():
    assert {"authorization", "x-api-key", "x-openai-api-key", "x-slack-signature"} <= set(SEED_002_HEADERS)


@pytest.mark.parametrize("header", SEED_002_HEADERS)
def test_every_header_of_the_seed_list_is_redacted_wherever_it_appears(header):
    value = "v0=4f1c2e9ab7d3"  # shaped like no known key: only the header name can give it away
    spellings = {header, header.upper(), "-".join(part.capitalize() for part in header.split("-"))}
    for name in spellings:
        assert is_secret_key(name) and is_secret_key(f"http.request.header.{name}")
        assert redact({"headers": {name: value}}) == {"headers": {name: MARKER}}
        assert redact([(name, value)]) == [(name, MARKER)]
        assert redact_attributes({f"http.request.header.{name}": value}) == {f"http.request.header.{name}": MARKER}
        for text in (f"{name}: {value}", f'-H "{name}: {value}"', json.dumps({name: value})):
            redacted = redact_text(text)
            assert value not in redacted and MARKER in redacted, (name, text, redacted)
            assert redact_text(redacted) == redacted


def test_redact_text_once_gives_redact_text_and_asks_it_once_per_text(monkeypatch):
    from otel_agents.tracing import redaction

    asked = []
    real = redaction.redact_text
    monkeypatch.setattr(redaction, "redact_text", lambda text: asked.append(text) or real(text))
    seen: dict[str, str] = {}
    texts = ["api_key=abc123 here", "plain words", "api_key=abc123 here", "plain words"]
    assert [redaction.redact_text_once(t, seen) for t in texts] == [real(t) for t in texts]
    assert asked == ["api_key=abc123 here", "plain words"] and "abc123" not in seen["api_key=abc123 here"]
