"""WholeLinesFile: an exported lines file stays readable after a failed append, and the loss is said once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_agents.tracing.otlp_json import OtlpJsonFileExporter
from otel_agents.tracing.whole_lines import WholeLinesFile


def test_an_append_cut_short_by_the_kernel_is_cut_back_and_later_lines_land(tmp_path):
    # A real short write: the kernel's file-size limit (as a full disk would) stops the second
    # line part-way; without the cut its head stays and glues itself to the third line.
    path = tmp_path / "out.jsonl"
    script = textwrap.dedent(f"""
        import resource, signal, sys
        from otel_agents.tracing.whole_lines import WholeLinesFile
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        out = WholeLinesFile({str(path)!r}, "spans", note="; see elsewhere")
        results = [out.append(b'{{"n": 1}}\\n'), out.append(b'{{"n": "' + b"x" * 8000 + b'"}}\\n', 3),
                   out.append(b'{{"n": 3}}\\n')]
        print(results)
        out.close()
        out.close()  # said once
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True, False, True]"
    assert [json.loads(line)["n"] for line in path.read_text().splitlines()] == [1, 3]
    assert done.stderr.splitlines() == [
        f"warning: could not write 3 of 5 spans to {path} (File too large); see elsewhere"
    ]


def test_the_provider_shutdown_says_what_the_otlp_file_did_not_get(tmp_path, capsys):
    path = tmp_path / "spans.jsonl"
    path.mkdir()  # cannot be opened for writing: every export fails
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(path)))
    tracer = provider.get_tracer("test")
    for name in ("a", "b"):
        with tracer.start_as_current_span(name):
            pass
    assert capsys.readouterr().err == ""  # nothing during the run: the SDK ignores a failed export
    provider.shutdown()
    err = capsys.readouterr().err.splitlines()
    assert err == [f"warning: could not write 2 of 2 spans to {path} (Is a directory); "
                   "the session directory holds every span"]


def test_nothing_is_said_when_every_line_was_written(tmp_path):
    said: list[str] = []
    out = WholeLinesFile(tmp_path / "m.jsonl", "metric exports", warn=said.append)
    assert out.append(b"{}\n") and out.append(b"{}\n")
    out.close()
    assert said == [] and (tmp_path / "m.jsonl").read_bytes() == b"{}\n{}\n"


def test_a_new_file_is_owner_only_and_an_existing_one_keeps_its_mode(tmp_path):
    # Redacted, an --otlp-file still holds every prompt and answer, as the session directory does.
    import os

    old = os.umask(0o022)
    try:
        out = WholeLinesFile(tmp_path / "new.jsonl", "spans")
        assert out.append(b"{}\n")
        shared = tmp_path / "shared.jsonl"
        shared.write_bytes(b"")
        shared.chmod(0o644)
        assert WholeLinesFile(shared, "spans").append(b"{}\n")
    finally:
        os.umask(old)
    assert (tmp_path / "new.jsonl").stat().st_mode & 0o777 == 0o600
    assert shared.stat().st_mode & 0o777 == 0o644
