"""`otel-agents collect` as a process: runtime processes export to it concurrently; the central copy equals the local one."""

from __future__ import annotations

import json
import signal

import pytest

from support.collector import Collector, assert_same_session, run_session, session_id_of

RUNTIMES = 4  # parametrized: 8 works too (CPU is shared while testing)


def _fleet(tmp_path, collector: Collector, endpoint: str, protocol: str, n: int) -> None:
    homes = [tmp_path / f"worker{i}" for i in range(n)]
    procs = [run_session(home, endpoint, protocol) for home in homes]
    ids = [session_id_of(proc) for proc in procs]
    assert len(set(ids)) == n
    assert collector.stop() == 0, "".join(collector.lines)  # SIGTERM: what was acknowledged is written
    for home, session_id in zip(homes, ids):
        assert_same_session(home, collector.home, session_id)


@pytest.mark.parametrize("n", [RUNTIMES])
def test_runtimes_over_http_give_the_same_sessions_centrally(tmp_path, n):
    with Collector(tmp_path / "central") as collector:
        _fleet(tmp_path, collector, collector.http_endpoint, "http/protobuf", n)


@pytest.mark.parametrize("n", [RUNTIMES])
def test_runtimes_over_grpc_give_the_same_sessions_centrally(tmp_path, n):
    with Collector(tmp_path / "central", "--http", "off", grpc=True) as collector:
        _fleet(tmp_path, collector, f"http://127.0.0.1:{collector.grpc_port}", "grpc", n)


def test_the_log_line_counts_spans_sessions_and_ignored_and_sigint_exits_0(tmp_path):
    with Collector(tmp_path / "central", "--json-log", "--log-every", "0.5") as collector:
        session_id_of(run_session(tmp_path / "worker", collector.http_endpoint))
        import time; time.sleep(1.5)
        assert collector.stop(signal.SIGINT) == 0
    lines = [json.loads(line) for line in collector.lines]
    assert lines[0]["listening"] is True and lines[-1] == {**lines[-1], "stopped": True}
    minutes = [line for line in lines if "spans_per_s" in line]
    assert sum(line["sessions"] for line in minutes) >= 1
    assert any(line["spans_per_s"] > 0 for line in minutes)
    assert {"rejected", "ignored"} <= set(minutes[0])


def test_a_busy_port_is_one_line_and_exit_2(tmp_path):
    import socket
    import subprocess
    import sys

    from support.collector import base_env

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "otel_agents", "collect", "--http", f"127.0.0.1:{port}"],
                              env=base_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    bad = subprocess.run([sys.executable, "-m", "otel_agents", "collect", "--http", "nowhere"],
                         env=base_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid address 'nowhere'" in bad.stderr and "Traceback" not in bad.stderr


def test_a_collected_session_resumes_on_the_collecting_machine(tmp_path):
    import subprocess
    import sys

    from support.collector import base_env

    with Collector(tmp_path / "central") as collector:
        session_id = session_id_of(run_session(tmp_path / "worker", collector.http_endpoint))
        assert collector.stop() == 0
    env = {**base_env(tmp_path / "central"), "OTEL_TRACES_EXPORTER": "none"}
    resumed = subprocess.run([sys.executable, "-m", "otel_agents", "resume", session_id, "And now?"], env=env,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip()
    verify = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "verify", session_id], env=env,
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    shown = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "show", session_id, "--json"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and len(json.loads(shown.stdout)["session"]["runs"]) == 2, shown.stdout[:500] + shown.stderr
