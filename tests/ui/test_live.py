"""Live events: lines of a real run's journal copied in stages reach a connected client as node rows, and a
client that reconnects with Last-Event-ID gets what landed while it was away."""

from __future__ import annotations

import queue
import socket
import threading
import time
from pathlib import Path

import httpx
import orjson
import pytest

from otel_agents.ui import live
from otel_agents.ui.app import create_app
from support.ui_sessions import RunningServer

BOUND_S = 2.0  # the UI needs 0.5 s end to end; the poll is 0.1 s, the slack is for a loaded machine
SETTLE_S = 10.0  # waits that measure nothing (a first connection, a reconnect): only "without loss" is asserted


class EventReader:
    """Server-sent events of one connection, parsed in a thread, each with the time it arrived."""

    def __init__(self, url: str, headers: dict[str, str] | None = None):
        self.events: queue.Queue = queue.Queue()
        self.client = httpx.Client(timeout=httpx.Timeout(30, connect=5))
        self.response = self.client.send(self.client.build_request("GET", url, headers=headers), stream=True)
        assert self.response.status_code == 200
        assert self.response.headers["content-type"].startswith("text/event-stream")
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        fields: dict[str, str] = {}
        try:
            for line in self.response.iter_lines():
                if line == "":
                    if "data" in fields:
                        self.events.put((time.monotonic(), fields.get("event", "message"), fields.get("id"),
                                         orjson.loads(fields["data"])))
                    fields = {}
                elif not line.startswith(":") and ":" in line:
                    name, _, value = line.partition(":")
                    fields[name] = value[1:] if value.startswith(" ") else value
        except (httpx.HTTPError, RuntimeError):
            pass

    def until(self, wanted, timeout: float):
        """Events until ``wanted(events so far)`` holds; AssertionError past the timeout."""
        seen = []
        deadline = time.monotonic() + timeout
        while not wanted(seen):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"not within {timeout}s: {[(e[1], e[2]) for e in seen]}"
            try:
                seen.append(self.events.get(timeout=remaining))
            except queue.Empty:
                continue
        return seen

    def close(self) -> None:
        # Closing the response alone leaves the reading thread blocked in recv on the socket, so
        # the kernel keeps it open and the server sees no disconnect until its next heartbeat
        # (10 s, paid again by the server's shutdown). Shutting the socket down ends both now.
        stream = self.response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by the server
        self.response.close()
        self.client.close()
        self.thread.join(5)


def node_ids(events) -> set[str]:
    return {row["id"] for _, name, _, data in events if name == "nodes" for row in data["nodes"]}


def started(lines: list[bytes]) -> set[str]:
    return {v["start"] for v in map(orjson.loads, lines) if "start" in v}


@pytest.fixture
def staged(ui_home, tmp_path):
    """A session directory that a real run's spans.jsonl and events.jsonl are appended to in stages."""
    source = ui_home.sessions / ui_home.demo
    spans = source.joinpath("spans.jsonl").read_bytes().splitlines(keepends=True)
    events = source.joinpath("events.jsonl").read_bytes().splitlines(keepends=True)
    sessions = tmp_path / "sessions"
    target = sessions / ui_home.demo
    target.mkdir(parents=True)

    class Stages:
        directory = target

        def __init__(self):
            self.spans_at = self.events_at = 0

        def append(self, fraction: float) -> list[bytes]:
            """Copy up to ``fraction`` of both files; the journal lines copied now."""
            spans_to, events_to = int(len(spans) * fraction), int(len(events) * fraction)
            new = spans[self.spans_at:spans_to]
            with open(target / "spans.jsonl", "ab") as fh:
                fh.write(b"".join(new))
            with open(target / "events.jsonl", "ab") as fh:
                fh.write(b"".join(events[self.events_at:events_to]))
            self.spans_at, self.events_at = spans_to, events_to
            return new

    stages = Stages()
    stages.append(0.2)
    with RunningServer(create_app(sessions, [ui_home.billing])) as server:
        stages.url = f"{server.url}/api/sessions/{ui_home.demo}/live"
        stages.tree_url = f"{server.url}/api/sessions/{ui_home.demo}"
        yield stages


def test_new_spans_arrive_as_rows_within_the_bound_and_a_reconnect_loses_nothing(staged):
    reader = EventReader(staged.url)
    try:
        reader.until(lambda seen: any(e[1] == "status" for e in seen), SETTLE_S)
        second = started(staged.append(0.5))
        assert second
        written = time.monotonic()
        got = reader.until(lambda seen: second <= node_ids(seen), BOUND_S)
        lag = got[-1][0] - written
        assert lag < BOUND_S
        rows = [row for _, name, _, data in got if name == "nodes" for row in data["nodes"]]
        assert all({"id", "parent", "kind", "status", "inclusive"} <= set(row) for row in rows)
        # Parents come before their children within a message.
        for _, name, _, data in got:
            if name == "nodes":
                order = [r["id"] for r in data["nodes"]]
                assert all(order.index(r["parent"]) < order.index(r["id"]) for r in data["nodes"] if r["parent"] in order)
        cursor = [e[2] for e in got if e[2]][-1]
    finally:
        reader.close()

    third = started(staged.append(0.8))  # lands while no client is connected
    again = EventReader(staged.url, headers={"last-event-id": cursor})
    try:
        got = again.until(lambda seen: third <= node_ids(seen), SETTLE_S)
        assert third <= node_ids(got)
        fourth = started(staged.append(1.0))
        got = again.until(lambda seen: fourth <= node_ids(seen), BOUND_S)
    finally:
        again.close()
    with httpx.Client() as plain:
        count = plain.get(staged.tree_url).json()["node_count"]
    assert count == len(started(staged.directory.joinpath("spans.jsonl").read_bytes().splitlines()))


def test_a_line_half_written_when_a_client_connects_reaches_it_once_whole(ui_home, staged):
    journal = (ui_home.sessions / ui_home.demo / "spans.jsonl").read_bytes().splitlines(keepends=True)
    line = next(line for line in journal[staged.spans_at:] if started([line]))
    path = staged.directory / "spans.jsonl"
    with open(path, "ab") as fh:
        fh.write(line[:len(line) // 2])  # the writer is in the middle of it
    reader = EventReader(staged.url)  # no cursor: the stream starts where the whole lines end
    try:
        reader.until(lambda seen: any(e[1] == "status" for e in seen), SETTLE_S)
        with open(path, "ab") as fh:
            fh.write(line[len(line) // 2:])
        reader.until(lambda seen: started([line]) <= node_ids(seen), SETTLE_S)
    finally:
        reader.close()


def test_the_cursor_of_now_ends_at_the_last_whole_line(tmp_path):
    assert live.current_cursor(tmp_path) == (0, 0)  # no files yet
    long_tail = b"x" * (live.READ_BACK * 2 + 5)  # a line being written, longer than one read back
    (tmp_path / "spans.jsonl").write_bytes(b'{"a": 1}\n{"b": 2}\n' + long_tail)
    (tmp_path / "events.jsonl").write_bytes(b'{"c": 3}\n')
    assert live.current_cursor(tmp_path) == (18, 9)
    (tmp_path / "spans.jsonl").write_bytes(long_tail)
    assert live.current_cursor(tmp_path)[0] == 0


def test_a_reconnect_from_the_start_replays_every_node(staged):
    staged.append(1.0)
    reader = EventReader(staged.url, headers={"last-event-id": "0.0"})
    everything = started(staged.directory.joinpath("spans.jsonl").read_bytes().splitlines())
    try:
        reader.until(lambda seen: everything <= node_ids(seen), SETTLE_S)
    finally:
        reader.close()


def test_the_writer_gone_status_comes_after_every_line_it_wrote(staged, monkeypatch):
    """Its last lines landing between a poll's read and its look at the owner still come first."""
    import fcntl

    lock = open(staged.directory / "owner.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # a writer holds the session
    real_status = live._status
    finishing = threading.Event()
    last_lines: list[bytes] = []

    def status_as_the_writer_finishes(*args):
        if finishing.is_set():  # the race, made certain: the last lines and the exit during this poll
            finishing.clear()
            last_lines.extend(staged.append(1.0))
            fcntl.flock(lock, fcntl.LOCK_UN)
        return real_status(*args)

    monkeypatch.setattr(live, "_status", status_as_the_writer_finishes)
    reader = EventReader(staged.url)
    try:
        reader.until(lambda seen: any(e[1] == "status" and e[3]["live"] for e in seen), SETTLE_S)
        finishing.set()
        got = reader.until(lambda seen: any(e[1] == "status" and not e[3]["live"] for e in seen), SETTLE_S)
    finally:
        reader.close()
        lock.close()
    gone = next(i for i, e in enumerate(got) if e[1] == "status" and not e[3]["live"])
    assert started(last_lines) and started(last_lines) <= node_ids(got[:gone])


def test_read_lines_waits_for_a_torn_line_and_restarts_a_shorter_file(tmp_path):
    path = tmp_path / "spans.jsonl"
    assert live.read_lines(path, 0) == ([], 0)
    path.write_bytes(b'{"start":"a"}\n{"end":"a"')
    lines, offset = live.read_lines(path, 0)
    assert lines == [b'{"start":"a"}'] and offset == 14
    assert live.read_lines(path, offset) == ([], 14)
    with open(path, "ab") as fh:
        fh.write(b"}\n")
    lines, offset = live.read_lines(path, offset)
    assert lines == [b'{"end":"a"}'] and offset == path.stat().st_size
    path.write_bytes(b'{"start":"b"}\n')
    assert live.read_lines(path, offset) == ([b'{"start":"b"}'], 14)
    assert live.spans_named([b'{"start":"b"}', b'{"end":"b"}', b"torn", b'{"ctx":"x"}']) == ["b"]


def test_cursors():
    assert live.parse_cursor("12.34") == (12, 34)
    for bad in ("", "12", "a.b", "-1.2", "1.2.3", "１.2"):
        with pytest.raises(Exception):
            live.parse_cursor(bad)


def test_a_restarted_server_resumes_from_the_cursor(ui_home, staged):
    reader = EventReader(staged.url)
    try:
        first = started(staged.append(0.5))
        got = reader.until(lambda seen: first <= node_ids(seen), SETTLE_S)
        cursor = [e[2] for e in got if e[2]][-1]
    finally:
        reader.close()
    rest = started(staged.append(1.0))
    # Another server process would know nothing of the first: only the cursor carries over.
    with RunningServer(create_app(staged.directory.parent, [ui_home.billing])) as other:
        again = EventReader(f"{other.url}/api/sessions/{ui_home.demo}/live", headers={"last-event-id": cursor})
        try:
            got = again.until(lambda seen: rest <= node_ids(seen), SETTLE_S)
            assert got[0][1] in ("status", "nodes")
        finally:
            again.close()


def test_an_idle_stream_costs_almost_no_cpu(staged):
    reader = EventReader(staged.url)
    try:
        reader.until(lambda seen: any(e[1] == "status" for e in seen), SETTLE_S)
        before = time.process_time()
        time.sleep(2.0)
        used = time.process_time() - before
    finally:
        reader.close()
    assert used < 0.5, f"{used:.2f} s of CPU in 2 s of nothing happening"


def slow_script(path: Path, latency_ms: int) -> Path:
    """The demo's script with every model answer slowed, so a run is watched while it writes."""
    import json
    from importlib import resources

    script = json.loads(resources.files("otel_agents.llm").joinpath("scripts", "jack-and-jill.json").read_text())
    for turns in script["agents"].values():  # a turn is its text, or a dict
        turns[:] = [{**(t if isinstance(t, dict) else {"text": t}), "latency_ms": latency_ms} for t in turns]
    path.write_text(json.dumps(script))
    return path


def test_a_real_run_and_its_resume_are_followed_live(ui_home, tmp_path):
    import subprocess
    import sys

    from support.ui_sessions import DEMO_PROMPT, clean_env

    home = tmp_path / "home"
    sessions = home / "sessions"
    script = slow_script(tmp_path / "slow.json", 150)
    command = [sys.executable, "-m", "otel_agents"]
    writer = subprocess.Popen([*command, "run", "--script", str(script), DEMO_PROMPT], env=clean_env(home),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen_all = []
    try:
        with RunningServer(create_app(sessions, [home / "billing.jsonl"])) as server:
            deadline = time.monotonic() + 60
            while not (sessions.is_dir() and any(sessions.iterdir())):
                assert time.monotonic() < deadline and writer.poll() is None, "the run made no session"
                time.sleep(0.05)
            session_id = next(sessions.iterdir()).name
            reader = EventReader(f"{server.url}/api/sessions/{session_id}/live?cursor=0.0")
            try:
                seen_all += reader.until(lambda seen: any(
                    e[1] == "nodes" and any(r["status"] == "running" for r in e[3]["nodes"]) for e in seen)
                    and any(e[1] == "status" and e[3]["live"] for e in seen), 60)
                assert writer.wait(120) == 0, writer.stderr.read()
                seen_all += reader.until(lambda seen: any(
                    e[1] == "status" and e[3] == {"status": "ok", "live": False} for e in seen), 10)
                resumed = subprocess.Popen([*command, "resume", "--script", str(script), session_id, "Again, please"],
                                           env=clean_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                assert resumed.wait(120) == 0, resumed.stderr.read()
                seen_all += reader.until(lambda seen: any(
                    e[1] == "nodes" and any(r["parent"] is None and r["label"] == "run 2" for r in e[3]["nodes"])
                    for e in seen) and any(e[1] == "status" and e[3] == {"status": "ok", "live": False}
                                           for e in seen), 10)
            finally:
                reader.close()
            with httpx.Client() as plain:
                base = f"{server.url}/api/sessions/{session_id}"
                runs = plain.get(f"{base}/nodes").json()["nodes"]
                assert [r["label"] for r in runs] == ["run 1", "run 2"]
                everything = {r["id"] for r in runs}
                pending = [r["id"] for r in runs]
                while pending:
                    rows = plain.get(f"{base}/nodes", params={"parent": pending.pop(), "limit": 1000}).json()["nodes"]
                    everything |= {r["id"] for r in rows}
                    pending += [r["id"] for r in rows if r["child_count"]]
        assert everything <= node_ids(seen_all)  # every node of both runs arrived live
        final = {row["id"]: row for _, name, _, data in seen_all if name == "nodes" for row in data["nodes"]}
        assert all(final[i]["status"] != "running" for i in everything)  # the last word on each is its end
    finally:
        if writer.poll() is None:
            writer.kill()


def test_a_session_removed_while_followed_is_said_gone_and_the_stream_ends(own_home):
    """``sessions rm`` under a follower: the stream said ok, then interrupted, and went on to a session that
    every other endpoint calls a 404. It says ``gone`` once and ends (the page then stops following)."""
    with RunningServer(create_app(own_home.sessions, [own_home.billing])) as server:
        reader = EventReader(f"{server.url}/api/sessions/{own_home.demo}/live")
        try:
            reader.until(lambda seen: any(e[1] == "status" for e in seen), SETTLE_S)
            removed = own_home.cli("sessions", "rm", own_home.demo)
            assert removed.returncode == 0, removed.stderr
            got = reader.until(lambda seen: any(e[1] == "gone" for e in seen), SETTLE_S)
            reader.thread.join(SETTLE_S)  # the server ended the response: the reading thread is done
            assert not reader.thread.is_alive()
        finally:
            reader.close()
    assert [e[1] for e in got][-1] == "gone" and "removed" in got[-1][3]["error"]
    assert reader.events.empty()  # nothing after it


def test_a_writer_killed_mid_run_has_its_open_spans_sent_as_interrupted_rows(staged):
    """kill -9 changes no file: without a nodes event a page kept the writer's open rows running for good."""
    import fcntl

    lines = staged.append(0.5)
    ended = {v["end"] for v in map(orjson.loads, lines) if "end" in v}
    left_open = started(lines) - ended
    assert left_open
    lock = open(staged.directory / "owner.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # a writer holds the session
    reader = EventReader(staged.url)
    try:
        reader.until(lambda seen: any(e[1] == "status" and e[3]["live"] for e in seen), SETTLE_S)
        fcntl.flock(lock, fcntl.LOCK_UN)  # ... and dies without a word
        got = reader.until(lambda seen: any(e[1] == "status" and not e[3]["live"] for e in seen), SETTLE_S)
    finally:
        reader.close()
        lock.close()
    assert got[-1][3]["status"] == "interrupted"
    rows = {row["id"]: row for _, name, _, data in got if name == "nodes" for row in data["nodes"]}
    assert left_open <= set(rows)  # before the status that says the writer is gone
    assert all(rows[i]["status"] == rows[i]["outcome"] == "interrupted" for i in left_open)
