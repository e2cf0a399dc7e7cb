"""litellm as the product loads it: its loop-change notice stays off the user's stderr, its other warnings do not."""

from __future__ import annotations

import asyncio
import logging

from otel_agents.llm import litellm_loader
from otel_agents.llm.litellm_loader import load_litellm


def test_the_logging_workers_loop_change_is_not_printed_and_other_warnings_are(capfd):
    litellm = load_litellm()
    load_litellm()  # loading again adds nothing twice
    logger = logging.getLogger("LiteLLM")
    assert logger.filters.count(litellm_loader._not_loop_change) == 1

    from litellm.litellm_core_utils.logging_worker import LoggingWorker

    worker = LoggingWorker()

    async def noop() -> None:
        return None

    async def enqueue_and_leave() -> None:
        worker.ensure_initialized_and_enqueue(noop())  # still pending when this loop ends

    asyncio.run(enqueue_and_leave())
    asyncio.run(enqueue_and_leave())  # litellm carries the pending task over, and would warn
    logger.warning("a warning of litellm's own")
    err = capfd.readouterr().err
    assert "event loop changed" not in err
    assert "a warning of litellm's own" in err
    assert litellm.suppress_debug_info is True


class Provider:  # as litellm's custom providers are: ScriptedLLM.acompletion
    async def acompletion(self) -> None:
        return None

    async def my_own_work(self) -> None:
        return None


def test_a_provider_call_dropped_unawaited_is_not_warned_about_and_other_coroutines_are():
    """litellm drops the provider's coroutine when a call is cut short (the session records it as
    cancelled): Python's "never awaited" warning about it would name no operation of the user's."""
    import warnings

    load_litellm()
    load_litellm()
    assert sum(1 for f in warnings.filters if f[1] is not None and "acompletion" in f[1].pattern) == 1

    with warnings.catch_warnings(record=True) as caught:
        dropped = Provider().acompletion()
        del dropped  # never awaited: warned about as it is freed
        forgotten = Provider().my_own_work()
        del forgotten
    assert [str(w.message) for w in caught] == ["coroutine 'Provider.my_own_work' was never awaited"]


def test_a_process_s_first_run_imports_litellm_off_the_event_loop(tmp_path):
    # An application's other tasks go on while litellm's seconds-long first import runs (Python API, async).
    import subprocess
    import sys

    program = '''
import asyncio, sys, threading
importers = []
sys.addaudithook(lambda event, args: event == "import" and args[0] == "litellm"
                 and importers.append(threading.current_thread() is threading.main_thread()))
from otel_agents import Agent, Session
beats = []
async def beat():
    while True:
        await asyncio.sleep(0.01)
        module = sys.modules.get("litellm")  # in sys.modules from the import's start; set up by load_litellm at its end
        beats.append(module is not None and getattr(module, "suppress_debug_info", None) is not True)
async def main():
    ticking = asyncio.create_task(beat())
    await asyncio.sleep(0.05)
    answer = await Session(Agent("main", "Answer."), script="jack-and-jill").run("hi")
    ticking.cancel()
    return answer
assert "litellm" not in sys.modules
assert asyncio.run(main())
print(importers, beats.count(True) > 5)
'''
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "OTEL_SDK_DISABLED": "true", "OTEL_AGENTS_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    # Imported once, on a worker thread; the loop's other task ticked while the import went on.
    assert done.stdout.strip() == "[False] True", done.stdout


def test_a_fresh_process_s_first_http_attempt_is_timed_without_litellm_s_first_use_loading(tmp_path):
    # litellm loads its provider path (~460 modules, about 1 s) at its first call: inside the attempt, a
    # --timeout 0.5 failed a request never sent, counted against --max-llm-calls, and timed it as ~1.5 s.
    import gzip
    import json
    import os
    import subprocess
    import sys

    from support.openai_server import OpenAIServer

    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(home), HOME=str(tmp_path),
               OPENAI_API_KEY="sk-abcdefgh12345678")
    with OpenAIServer() as server:
        base = server.api_base.replace("http://", "http://alice:p4ssw0rdSecretQ@")  # the user's command, whole
        done = subprocess.run(
            [sys.executable, "-m", "otel_agents", "run", "--model", "openai/gpt-4o-mini", "--api-base", base,
             "--timeout", "0.5", "--max-llm-calls", "1", "hi"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180,
        )
        requests = server.requests
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n" and "Timeout" not in done.stderr
    (headers, _), = requests
    assert headers["authorization"].startswith("Basic ")
    (session_dir,) = (home / "sessions").iterdir()
    tree = json.loads(gzip.decompress((session_dir / "tree.json.gz").read_bytes()))
    (attempt,) = [op for op in tree["session"]["runs"][0]["turns"][0]["ops"] if op["kind"] == "llm"]
    assert (attempt["ended_ns"] - attempt["started_ns"]) / 1e9 < 0.5
