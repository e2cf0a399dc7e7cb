"""``otel-agents billing summary --by model`` over a large ledger, as a whole process.

The ledger is synthetic but shaped like the recorder's (``ledger_records.py``):
LLM attempts of several models (some failed, some unpriced) and tool calls,
over many sessions and days, one orjson line each with ``record_id`` first.
The summary's JSON output is checked against the counts written, so a fast but
wrong summary cannot pass.
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

MODELS = ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4", "scripted/jack-and-jill", "ollama/llama3")
TOOLS = ("task", "discuss", "search", "read_file")


@dataclass
class LedgerFile:
    path: Path
    records: int
    llm_records: int
    tool_records: int
    bytes: int


def write_ledger(path: Path, records: int, seed: int = 11) -> LedgerFile:
    """``records`` lines: about 70 % LLM attempts, 30 % tool calls, 2,000 sessions over 60 days."""
    rng = random.Random(seed)
    llm = tool = 0
    dumps = orjson.dumps
    with open(path, "wb") as fh:
        chunk: list[bytes] = []
        for number in range(records):
            session = f"20260{1 + number % 9}{10 + number % 18:02d}-1200{number % 60:02d}-{number % 2000:06x}"
            trace_id = f"{rng.getrandbits(128):032x}"
            span_id = f"{rng.getrandbits(64):016x}"
            day = 1 + (number // 500) % 28
            record = {
                "record_id": f"{trace_id}:{span_id}",
                "ts": f"2026-0{1 + (number // 14_000) % 2}-{day:02d}T12:{number % 60:02d}:00.{number % 10**9:09d}Z",
                "session_id": session,
                "trace_id": trace_id,
                "span_id": span_id,
                "run": 1 + number % 5,
                "path": f"{1 + number % 30}-1",
                "agent_id": f"agent_{1 + number % 12:03d}",
                "agent_name": f"Agent{1 + number % 12}",
                "call_path": f"main/Agent{1 + number % 12}",
            }
            if number % 10 < 7:
                llm += 1
                failed = number % 97 == 0
                inp, out = rng.randint(50, 20_000), rng.randint(5, 2_000)
                model = MODELS[number % len(MODELS)]
                record.update({
                    "type": "llm", "status": "failed" if failed else "ok", "latency_ms": rng.randint(50, 9000) / 7,
                    "error": "RateLimitError" if failed else None, "provider": model.split("/")[0], "model": model,
                    "response_model": model.split("/")[1], "attempt": 2 if failed else 1,
                    "tokens": {"input": inp, "output": out, "cache_read": inp // 4, "cache_write": 0,
                               "reasoning": out // 5, "total": inp + out},
                    "cost_usd": None if model.startswith("ollama") else round(inp * 1e-6 + out * 4e-6, 12),
                    "price_source": "unpriced" if model.startswith("ollama") else "litellm",
                })
            else:
                tool += 1
                record.update({
                    "type": "tool", "status": "ok", "latency_ms": rng.randint(1, 3000) / 3, "error": None,
                    "tool": TOOLS[number % len(TOOLS)], "chars_in": rng.randint(10, 500), "chars_out": rng.randint(10, 5000),
                })
            chunk.append(dumps(record) + b"\n")
            if len(chunk) >= 10_000:
                fh.write(b"".join(chunk))
                chunk.clear()
        fh.write(b"".join(chunk))
    return LedgerFile(path, records, llm, tool, path.stat().st_size)


def run_records(number: int, count: int = 100) -> list[dict]:
    """One run's ledger records (``count`` LLM attempts), ids unique to ``number``."""
    return [
        {"record_id": f"{number:024x}{i:08x}:{i:016x}", "ts": "2026-11-22T12:00:00.000000000Z",
         "session_id": "bench-run-end", "trace_id": f"{number:024x}{i:08x}", "span_id": f"{i:016x}", "run": number,
         "type": "llm", "status": "ok", "model": MODELS[0], "cost_usd": 0.0001,
         "tokens": {"input": 100, "output": 20, "cache_read": 0, "cache_write": 0, "reasoning": 0, "total": 120}}
        for i in range(count)
    ]


def run_end_appends(ledger: LedgerFile, repeat: int) -> tuple[list[float], list[float]]:
    """Seconds of a run's end appending its records to the ledger: (one call, a recorder's appender).

    One call (``append_records``, as ``import`` and crash recovery use) reads every id in the
    ledger. The recorder keeps a ``LedgerAppender`` that read the ledger while it waited
    (untimed here, as there) and at each run's end reads only what was appended since.
    """
    from otel_agents.persistence.ledger import LedgerAppender, append_records

    cold, warm = [], []
    appender = LedgerAppender(ledger.path)
    while not appender.read_ahead(8 << 20):
        pass
    for number in range(repeat):
        started = time.perf_counter()
        if append_records(ledger.path, run_records(2 * number + 1)) != 100:
            raise AssertionError("a run's records were not all appended")
        cold.append(time.perf_counter() - started)
        started = time.perf_counter()
        if appender.append(run_records(2 * number + 2)) != 100:
            raise AssertionError("a run's records were not all appended")
        warm.append(time.perf_counter() - started)
    return cold, warm


def summary_command(ledger: LedgerFile, as_json: bool = False) -> list[str]:
    command = [*otel_agents_command(), "billing", "summary", "--by", "model", "--billing-file", str(ledger.path)]
    return command + (["--json"] if as_json else [])


def otel_agents_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m otel_agents``."""
    script = Path(sys.executable).with_name("otel-agents")
    return [str(script)] if script.exists() else [sys.executable, "-m", "otel_agents"]


def check_summary(ledger: LedgerFile, json_output: bytes) -> None:
    """The summary must count every record written, by kind."""
    total = orjson.loads(json_output)["total"]
    got = (total["calls"], total["llm_calls"], total["tool_calls"])
    want = (ledger.records, ledger.llm_records, ledger.tool_records)
    if got != want:
        raise AssertionError(f"billing summary counted (calls, llm, tool) {got}, the ledger holds {want}")
