"""The recorder replay's instructions per LLM call, counted by valgrind: exact where CPU time here is not.

This VM shares its two vCPUs and has no hardware counters; the same replay's CPU time
moves by half between hours, so a recorder change of a few percent cannot be shown in
time. Valgrind's callgrind counts every instruction a process executes: the same replay
counts the same within about 0.01 % run alone, 0.3 % with the other core busy (the pipe's
feeder thread then hands over other batch sizes). One process replays a session's frames
once (imports, first-use work and one replay), another twice; the difference is one warm
replay, the figure's numerator. Instructions are not time (a cache miss costs more than
an add), and valgrind hides some CPU extensions (OpenSSL's SHA-256 of the tree's members
runs without SHA-NI under it: about 7 % of the count, a fraction of that natively), so the
figure locates changes of the recorder's own code; it has no target.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

_COLLECTED = re.compile(rb"Collected : (\d+)")


def count(frames_file: Path, replays: int, home: Path) -> int:
    """Instructions of a whole process that replays the pickled frames ``replays`` times."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, __file__, str(frames_file), str(replays), str(home)],
        capture_output=True, env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts every time
    )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind replay failed ({done.returncode}): {done.stderr[-2000:].decode(errors='replace')}")
    return int(found.group(1))


UNAVAILABLE = "valgrind is not installed (Debian: apt-get install valgrind)"


def instructions_figure(frames, home: Callable[[], Path], add: Callable[..., None]) -> None:
    """``recorder_replay_instructions_per_call`` of ``bench_recorder.Frames``, given to ``add(name, value, **details)``;
    NaN, saying why, where valgrind is not installed (a locator, not a target: the other figures still run)."""
    if shutil.which("valgrind") is None:
        add("recorder_replay_instructions_per_call", float("nan"), unavailable=UNAVAILABLE)
        return
    directory = home()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "frames.pickle"
    path.write_bytes(pickle.dumps(frames))
    with ThreadPoolExecutor(2) as pool:  # two processes under valgrind: both cores, half the wait
        counting = [pool.submit(count, path, replays, home()) for replays in (1, 2)]
        once, twice = (job.result() for job in counting)
    add("recorder_replay_instructions_per_call", (twice - once) / frames.llm_calls,
        instructions_one_replay=once, instructions_two_replays=twice, llm_calls=frames.llm_calls,
        note="valgrind callgrind, PYTHONHASHSEED=0: a process replaying the frames twice minus one replaying them once")


def _replay(frames_file: Path, replays: int, home: Path) -> None:
    import bench_recorder

    frames = pickle.loads(frames_file.read_bytes())
    for number in range(replays):
        bench_recorder.replay(frames, home / f"replay-{number}")


if __name__ == "__main__":
    _replay(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
