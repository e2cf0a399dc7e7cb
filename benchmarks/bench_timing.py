"""Timing helpers: alternating comparisons, medians, timed subprocesses.

Machines here are noisy (shared cores, frequency changes), so a comparison never
times one side after the other: both sides run in the same invocation,
alternating, and the median of the per-pair ratios is reported.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


@dataclass
class Comparison:
    """Seconds of each side per pair, and the median of the per-pair ratios (a / b)."""

    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [x / y for x, y in zip(self.a, self.b)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def median_a(self) -> float:
        return statistics.median(self.a)

    @property
    def median_b(self) -> float:
        return statistics.median(self.b)


def quiet_gc() -> None:
    """Collect now, so no side pays for the other side's garbage."""
    gc.collect()


def alternate(side_a: Callable[[], float], side_b: Callable[[], float], pairs: int) -> Comparison:
    """Run a, b, b, a, a, b, ...: each side goes first equally often; each callable returns its seconds."""
    result = Comparison()
    for number in range(pairs):
        order = (("a", side_a), ("b", side_b)) if number % 2 == 0 else (("b", side_b), ("a", side_a))
        seconds = {}
        for name, side in order:
            quiet_gc()
            seconds[name] = side()
        result.a.append(seconds["a"])
        result.b.append(seconds["b"])
    return result


def median_of(action: Callable[[], float], repeat: int) -> float:
    values = []
    for _ in range(repeat):
        quiet_gc()
        values.append(action())
    return statistics.median(values)


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def run_process(command: Sequence[str], env: dict[str, str] | None = None, check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
    """Wall seconds of a whole process (interpreter start included) and its result."""
    full_env = {**os.environ, **(env or {})}
    started = time.perf_counter()
    done = subprocess.run(list(command), capture_output=True, env=full_env)
    seconds = time.perf_counter() - started
    if check and done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}"
        )
    return seconds, done
