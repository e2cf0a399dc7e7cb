"""The recorder process's own CPU per LLM call, resolved: a session's frames replayed through its loop in this process.

Whole sessions cannot resolve a change of the recorder of less than about 300 us per
call on a shared 2-vCPU machine (the same code moves 20 % between invocations). A
replay can: one traced session runs once with the link's frames teed into memory, then
those exact bytes are fed through a pipe to ``recorder_process.serve`` driving a fresh
``SessionRecorder`` in this process, as the forked child would. Its CPU is the
recorder's work alone, with no run competing for the machine. The replay writes the
same events.jsonl and spans.jsonl as the live session (the harness test checks it).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import bench_session


@dataclass(frozen=True)
class Frames:
    data: bytes  # every frame the run's process sent its recorder process, in order
    messages: int
    session_id: str
    session_dir: Path  # the live session's directory, to compare the replay's with
    llm_calls: int


def capture(script: Path, prompts: tuple[str, ...], home: Path) -> Frames:
    """Run one traced session (recorder process on), keeping a copy of every frame its link sent."""
    from otel_agents.persistence import recorder_link

    sent: list[bytes] = []
    encode = recorder_link.encode_frame

    def tee(message: tuple) -> bytes:
        frame = encode(message)
        sent.append(frame)
        return frame

    recorder_link.encode_frame = tee  # the link looks the name up at each send
    try:
        with bench_session.recorder_mode("process"):
            run = bench_session.run_session(script, prompts, home, traced=True)
    finally:
        recorder_link.encode_frame = encode
    if not sent or run.session_dir is None:
        raise AssertionError("the traced session sent its recorder process nothing")
    return Frames(b"".join(sent), len(sent), run.session_id, run.session_dir, run.llm_calls)


def replay(frames: Frames, home: Path) -> tuple[float, Path]:
    """CPU seconds of the recorder's loop over ``frames`` (a fresh session under ``home``), and the directory."""
    from otel_agents.persistence.paths import Paths
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.recorder_process import serve
    from otel_agents.persistence.store import SessionStore

    paths = Paths(Path(home) / "sessions", Path(home) / "billing.jsonl")
    store = SessionStore.create(paths.sessions_dir, frames.session_id)
    recorder = SessionRecorder(store, frames.session_id, billing_file=paths.billing_file)
    read_fd, write_fd = os.pipe()

    def feed() -> None:  # in pipe-sized writes, as the run's process sends them
        view = memoryview(frames.data)
        try:
            while view:
                view = view[os.write(write_fd, view[:65536]):]
        finally:
            os.close(write_fd)

    feeder = threading.Thread(target=feed)
    gc.collect()
    started = time.process_time()  # the feeder's few writes included: under a millisecond
    feeder.start()
    code = serve(recorder, read_fd)
    seconds = time.process_time() - started
    feeder.join()
    if code != 0:
        raise AssertionError(f"the replayed recorder ended with {code}")
    return seconds, store.directory


def replay_figure(script: Path, prompts: tuple[str, ...], home: Callable[[], Path], add: Callable[..., None], *,
                  replays: int) -> Frames:
    """``recorder_replay_us_per_call``: the least disturbed of ``replays`` replays, given to ``add(name, value, **details)``;
    returns the frames replayed."""
    frames = capture(script, prompts, home())
    runs = [replay(frames, home()) for _ in range(replays)]
    per_call = [seconds / frames.llm_calls * 1e6 for seconds, _ in runs]
    replayed = runs[0][1]
    add("recorder_replay_us_per_call", min(per_call), runs_us=per_call, llm_calls=frames.llm_calls,
        messages=frames.messages, frame_bytes=len(frames.data),
        same_streams=all((replayed / name).read_bytes() == (frames.session_dir / name).read_bytes()
                         for name in ("events.jsonl", "spans.jsonl")),
        note="CPU of recorder_process.serve over one traced session's frames, in this process; the minimum")
    return frames
