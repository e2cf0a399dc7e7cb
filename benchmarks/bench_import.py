"""Import of a large OTLP/JSON lines file: a real demo export repeated to N spans, timed as a whole process.

    python benchmarks/bench_import.py [SPANS]      # default 100,000; prints one JSON line

The demo session is recorded live with ``--otlp-file`` (45 spans, 41 records), then its lines
are repeated with new trace and span ids, later times and shifted message ids, 20 copies per
session (so sessions hold several runs, as a long conversation does). The figure is the wall
time of ``python -m otel_agents import FILE`` into an empty home: what a user waits for.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROMPTS = ["Create Jack and Jill for a cafe discussion", "And then?"]
COPIES_PER_SESSION = 20
_HEX_ID = re.compile(r'"(traceId|spanId|parentSpanId)":"([0-9a-f]+)"')
_MESSAGE_ID = re.compile(r"msg_(\d+)")
_TIME = re.compile(r'"(startTimeUnixNano|endTimeUnixNano|timeUnixNano)":"(\d+)"')


def record_demo(directory: Path) -> Path:
    """The demo session's spans as the Collector file exporter writes them (one document per line)."""
    export = directory / "export.jsonl"
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "none"}
    subprocess.run(
        [sys.executable, "-m", "otel_agents", "run", *PROMPTS, "--otlp-file", str(export),
         "--sessions-dir", str(directory / "demo"), "--billing-file", str(directory / "demo.jsonl")],
        check=True, env=env, stdout=subprocess.DEVNULL,
    )
    return export


def repeat_export(export: Path, out: Path, spans: int) -> int:
    """Write ``out``: copies of ``export`` until it holds at least ``spans`` spans; returns the count."""
    lines = export.read_text().splitlines()
    per_copy = sum(len(ss["spans"]) for line in lines for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"])
    conversation = re.search(r'"gen_ai.conversation.id","value":\{"stringValue":"([^"]+)"', lines[0]).group(1)
    written = 0
    with out.open("w") as file:
        copy = 0
        while written < spans:
            def new_id(match: re.Match, copy: int = copy) -> str:
                digest = hashlib.blake2b(f"{match.group(2)}:{copy}".encode(), digest_size=len(match.group(2)) // 2)
                return f'"{match.group(1)}":"{digest.hexdigest()}"'

            def new_message(match: re.Match, copy: int = copy) -> str:
                return f"msg_{int(match.group(1)) + (copy % COPIES_PER_SESSION) * 1000:06d}"

            def later(match: re.Match, copy: int = copy) -> str:
                return f'"{match.group(1)}":"{int(match.group(2)) + copy * 60_000_000_000}"'

            session = f"bench-{copy // COPIES_PER_SESSION:05d}"
            for line in lines:
                line = _TIME.sub(later, _MESSAGE_ID.sub(new_message, _HEX_ID.sub(new_id, line)))
                file.write(line.replace(conversation, session) + "\n")
            written += per_copy
            copy += 1
    return written


def time_import(trace_file: Path, home: Path, preexec_fn=None) -> float:
    """Wall seconds of one whole ``otel-agents import`` process (``preexec_fn``: e.g. pinned to one core)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "otel_agents", "import", str(trace_file),
         "--sessions-dir", str(home / "sessions"), "--billing-file", str(home / "billing.jsonl")],
        capture_output=True, text=True, preexec_fn=preexec_fn,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"import failed: {done.stderr.strip()}")
    return elapsed


def main() -> None:
    spans = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        big = root / "big.jsonl"
        count = repeat_export(record_demo(root), big, spans)
        seconds = time_import(big, root / "home")
        print(json.dumps({"spans": count, "bytes": big.stat().st_size, "import_s": round(seconds, 2)}))


if __name__ == "__main__":
    main()
