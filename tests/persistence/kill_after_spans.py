"""Test helper (not a test): ``otel-agents run`` SIGKILLed at the n-th span end, for many n.

Usage: python kill_after_spans.py ROOT STEP -- RUN ARGS...

The CLI runs in-process in forked children, so litellm is imported once (seconds)
and each child costs only its run. Every TracerProvider a child creates gets, as
its first processor, one that SIGKILLs the process when the n-th span ends, so
the kill lands before the session recorder sees that end (no hook in product
code). Child 0 never kills and counts the span ends of a whole run, T; then one
child per n in 1, 1 + STEP, ... and T. One JSON line per child on stdout:
``{"n", "home", "signal", "exit", "span_ends"}``; each child uses ROOT/kill-<n>/ as
its sessions directory and billing file.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path


def child(n: int, home: Path, run_args: list[str]) -> None:
    try:
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

        ends = [0]

        class KillAtSpanEnd(SpanProcessor):
            def on_end(self, span) -> None:
                ends[0] += 1
                if ends[0] == n:
                    os.kill(os.getpid(), signal.SIGKILL)

        real_init = TracerProvider.__init__

        def init(self, *args, **kwargs):
            real_init(self, *args, **kwargs)
            self.add_span_processor(KillAtSpanEnd())

        TracerProvider.__init__ = init
        from otel_agents.cli import cli

        code = 0
        try:
            cli.main(["run", "--sessions-dir", str(home / "sessions"), "--billing-file", str(home / "billing.jsonl"),
                      *run_args], prog_name="otel-agents")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        (home / "span_ends").write_text(str(ends[0]))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    except BaseException:
        traceback.print_exc()
        os._exit(3)


def _wait_for_the_recorder(home: Path, timeout_s: float = 120.0) -> None:
    """The recorder process outlives the killed run and writes what it was sent: tests read the
    session only once it has ended, as a reader would (its lock, ``ownership.owner_of``)."""
    from otel_agents.persistence.ownership import owner_of

    deadline = time.monotonic() + timeout_s
    for directory in (home / "sessions").glob("*"):
        while time.monotonic() < deadline and owner_of(directory) is not None:
            time.sleep(0.01)


def run_child(n: int, root: Path, run_args: list[str]) -> dict:
    home = root / f"kill-{n}"
    home.mkdir(parents=True)
    pid = os.fork()
    if pid == 0:
        with open(home / "stdout", "wb") as out, open(home / "stderr", "wb") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
        child(n, home, run_args)
    _, status = os.waitpid(pid, 0)
    _wait_for_the_recorder(home)
    ends = home / "span_ends"
    return {
        "n": n,
        "home": str(home),
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "span_ends": int(ends.read_text()) if ends.exists() else None,
    }


def main() -> None:
    root, step = Path(sys.argv[1]), int(sys.argv[2])
    run_args = sys.argv[sys.argv.index("--") + 1 :]
    # Everything a run imports, imported once before forking (no threads exist yet).
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import otel_agents.cli  # noqa: F401
    import otel_agents.cli.execution  # noqa: F401
    import otel_agents.llm.client  # noqa: F401
    import otel_agents.persistence.recorder  # noqa: F401
    import otel_agents.runtime.scenario  # noqa: F401
    from otel_agents.llm.litellm_loader import load_litellm

    load_litellm()
    whole = run_child(0, root, run_args)
    print(json.dumps(whole), flush=True)
    total = whole["span_ends"]
    if not total:
        sys.exit(f"the uninterrupted run failed: {whole}")
    for n in sorted(set(range(1, total + 1, step)) | {total}):
        print(json.dumps(run_child(n, root, run_args)), flush=True)


if __name__ == "__main__":
    main()
