"""Ingress metadata: where a run came from, on its root span, in meta.json and in `sessions show`; argv redacted."""

from __future__ import annotations

import getpass
import gzip
import os
import socket
import subprocess
import sys

import orjson
from hypothesis import given, strategies as st

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.credentials import MARKER
from otel_agents.tracing.ingress import ingress_attributes, ingress_of, redacted_argv
from otel_agents.version import __version__

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
secret_values = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=6, max_size=40).filter(
    lambda v: not v.startswith("-"))
option_names = st.sampled_from(["--api-key", "--token", "--openai-api-key", "--password", "--client-secret",
                                "--auth-token", "--x-api-key"])


@given(option_names, secret_values, st.lists(st.sampled_from(["run", "-v", "--model", "x", "hello"]), max_size=4))
def test_the_value_after_a_secret_option_is_never_kept(option, value, rest):
    argv = ["otel-agents", *rest, option, value, *rest]
    out = redacted_argv(argv)
    assert out[len(rest) + 2] == MARKER and len(out) == len(argv)
    assert redacted_argv(out) == out  # idempotent: redacting twice changes nothing


@given(option_names, secret_values)
def test_a_secret_named_assignment_keeps_its_name_only(option, value):
    assert redacted_argv([f"{option}={value}"]) == [f"{option}={MARKER}"]
    variable = option.lstrip("-").upper().replace("-", "_")
    assert redacted_argv([f"{variable}={value}"]) == [f"{variable}={MARKER}"]


def test_key_shaped_values_anywhere_are_redacted_and_ordinary_arguments_kept():
    argv = ["otel-agents", "run", "--max-tokens", "100", "--param", "max_tokens=5", f"use {SECRET} please",
            "--model", "openai/gpt-4o-mini"]
    out = redacted_argv(argv)
    assert out == ["otel-agents", "run", "--max-tokens", "100", "--param", "max_tokens=5", f"use {MARKER} please",
                   "--model", "openai/gpt-4o-mini"]


def test_ingress_attributes_name_this_process_and_the_sender():
    attributes = ingress_attributes(["otel-agents", "send"], sender="cron")
    assert attributes[sc.INGRESS_CWD] == os.getcwd()
    assert attributes[sc.INGRESS_PID] == os.getpid()
    assert attributes[sc.INGRESS_HOST] == socket.gethostname()
    assert attributes[sc.INGRESS_USER] == getpass.getuser()
    assert attributes[sc.INGRESS_VERSION] == __version__
    assert attributes[sc.INGRESS_SENDER] == "cron"
    assert ingress_of(attributes)["argv"] == ["otel-agents", "send"]
    assert sc.INGRESS_SENDER not in ingress_attributes([])  # absent facts are left out


def test_a_cli_run_carries_ingress_on_its_root_span_meta_json_and_sessions_show(home, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", f"Create Jack and Jill, key {SECRET}"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (directory,) = (home / "sessions").iterdir()

    tree = orjson.loads(gzip.decompress((directory / "tree.json.gz").read_bytes()))["session"]
    ingress = ingress_of(tree["runs"][0]["attributes"])
    assert ingress["cwd"] == str(tmp_path)
    assert ingress["host"] == socket.gethostname() and ingress["user"] == getpass.getuser()
    assert ingress["version"] == __version__ and isinstance(ingress["pid"], int) and ingress["pid"] != os.getpid()
    assert ingress["argv"][1:] == ["run", f"Create Jack and Jill, key {MARKER}"]
    meta = orjson.loads((directory / "meta.json").read_bytes())
    assert meta["last_run"]["ingress"] == ingress
    spans_text = (directory / "spans.jsonl").read_text()
    assert "otel_agents.ingress.argv" in spans_text

    shown = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "show", directory.name], env=env,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert f"from cli: {ingress['user']}@{ingress['host']} pid {ingress['pid']}, otel-agents {__version__}" in shown.stdout
    assert f"cwd {tmp_path}" in shown.stdout and "argv " in shown.stdout
    ingress_lines = [line for line in shown.stdout.splitlines() if line.startswith(("  from", "  cwd", "  argv"))]
    assert ingress_lines and not any(SECRET in line for line in ingress_lines)


def test_a_redacted_save_keeps_no_command_line_since_it_holds_the_prompts(home, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    prompt = "Create Jack and Jill for a secret cafe discussion"
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", "--redacted-save", prompt], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (directory,) = (home / "sessions").iterdir()
    saved = b"".join(gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
                     for p in sorted(directory.iterdir()) if p.is_file())
    assert prompt.encode() not in saved
    meta = orjson.loads((directory / "meta.json").read_bytes())
    assert "argv" not in meta["last_run"]["ingress"] and meta["last_run"]["ingress"]["cwd"] == str(tmp_path)


def test_the_user_info_of_a_url_is_redacted_in_the_command_line():
    argv = ["otel-agents", "run", "--api-base", "https://bob:TopSecretPw99@llm.example.com/v1",
            "--api-base=http://only-user@example.com:8080/v1", "see http://a:b@h/x and mail me@example.com"]
    redacted = redacted_argv(argv)
    assert redacted[3] == f"https://{MARKER}@llm.example.com/v1"
    assert redacted[4] == f"--api-base=http://{MARKER}@example.com:8080/v1"
    assert redacted[5] == f"see http://{MARKER}@h/x and mail me@example.com"  # an address is not a URL's user-info
    assert redacted_argv(redacted) == redacted


def test_the_command_line_keeps_an_address_as_the_api_base_does_and_copies_that_leave_mask_both(home, tmp_path):
    from support.openai_server import OpenAIServer, Reply

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(home), OPENAI_API_KEY="sk-test-ingress-0000")
    otlp_file = tmp_path / "run.jsonl"
    with OpenAIServer() as server:
        server.plan(Reply(content="hello"))
        base = server.api_base
        done = subprocess.run([sys.executable, "-m", "otel_agents", "run", "--model", "openai/gpt-4o-mini",
                               "--api-base", base, "--otlp-file", str(otlp_file), "hi"],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (directory,) = (home / "sessions").iterdir()
    shown = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "show", directory.name], env=env,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    # `sessions show` reads the session directory, which keeps the address: both lines say where the run went.
    [argv] = [line for line in shown.stdout.splitlines() if line.startswith("  argv ")]
    assert f"--api-base {base} " in argv and f"  api base {base}\n" in shown.stdout
    exported = otlp_file.read_text()
    assert "127.0.0.1" in base and "127.0.0.1" not in exported
    assert exported.count("otel_agents.ingress.argv") == 1 and "http://[IP]:" in exported
