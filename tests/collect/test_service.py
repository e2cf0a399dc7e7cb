"""`otel-agents collect` as a process: runtime processes export to it concurrently; the central copy equals the local one."""

from __future__ import annotations

import json
import signal

from support.collector import Collector, assert_same_session, run_session, session_id_of

RUNTIMES = 8  # the fleet: eight runtime processes at once


def test_runtimes_over_http_and_grpc_at_once_give_the_same_sessions_centrally(tmp_path):
    """Half the fleet exports over OTLP/HTTP, half over gRPC, to one collect listening on both."""
    with Collector(tmp_path / "central", grpc=True) as collector:
        endpoints = [(collector.http_endpoint, "http/protobuf"), (f"http://127.0.0.1:{collector.grpc_port}", "grpc")]
        homes = [tmp_path / f"worker{i}" for i in range(RUNTIMES)]
        procs = [run_session(home, *endpoints[i % 2]) for i, home in enumerate(homes)]
        ids = [session_id_of(proc) for proc in procs]
        assert len(set(ids)) == RUNTIMES
        assert collector.stop() == 0, "".join(collector.lines)  # SIGTERM: what was acknowledged is written
    for home, session_id in zip(homes, ids):
        assert_same_session(home, collector.home, session_id)


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


def test_the_line_at_exit_counts_what_came_since_the_last_one(tmp_path):
    with Collector(tmp_path / "central", "--json-log", "--log-every", "3600") as collector:
        session_id_of(run_session(tmp_path / "worker", collector.http_endpoint))
        assert collector.stop() == 0
    lines = [json.loads(line) for line in collector.lines]
    minutes = [line for line in lines if "spans_per_s" in line]
    assert len(minutes) == 1 and lines[-2] == minutes[0] and lines[-1]["stopped"] is True  # no minute had passed
    assert minutes[0]["sessions"] == 1 and minutes[0]["spans_per_s"] > 0 and minutes[0]["busy"] == 0


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


def test_a_grpc_port_another_collect_listens_on_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    from support.collector import base_env, free_port

    # grpcio's default SO_REUSEPORT let the second one listen too, the kernel splitting sessions between homes.
    with Collector(tmp_path / "first", grpc=True) as first:
        second = subprocess.run([sys.executable, "-m", "otel_agents", "collect", "--http", f"127.0.0.1:{free_port()}",
                                 "--grpc", f"127.0.0.1:{first.grpc_port}"], env=base_env(tmp_path / "second"),
                                capture_output=True, text=True, timeout=30)
        assert second.returncode == 2, second.stderr
        assert second.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{first.grpc_port}" in second.stderr
        assert first.proc.poll() is None
        assert first.stop() == 0


def test_a_port_outside_1_to_65535_is_an_invalid_address_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    from support.collector import base_env

    # 99999 was an OverflowError traceback over HTTP and, over gRPC, a listener on another port.
    for args in (["--http", "127.0.0.1:99999"], ["--http", "127.0.0.1:0"],
                 ["--http", "off", "--grpc", "127.0.0.1:99999"], ["--http", "off", "--grpc", "127.0.0.1:65536"]):
        proc = subprocess.run([sys.executable, "-m", "otel_agents", "collect", *args], env=base_env(tmp_path),
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and f"invalid address {args[-1]!r}" in proc.stderr, proc.stderr


def test_a_billing_file_that_is_not_a_ledger_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    from support.collector import base_env, free_port

    other = tmp_path / "notes.json"
    other.write_text('{"notes": []}\n')
    proc = subprocess.run([sys.executable, "-m", "otel_agents", "collect", "--http", f"127.0.0.1:{free_port()}",
                           "--billing-file", str(other)], env=base_env(tmp_path), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and f"{other} is not a billing ledger" in proc.stderr
    assert other.read_text() == '{"notes": []}\n'


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


def _snapshot(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name != "owner.lock"}


def test_collect_owns_the_sessions_it_writes_so_resume_and_a_second_collect_are_refused(tmp_path):
    import subprocess
    import sys

    from otel_agents.persistence.ownership import owner_of
    from support.collector import base_env, free_port

    central = tmp_path / "central"
    with Collector(central, "--settle", "60") as collector:  # the session stays open (owned) for a minute
        session_id = session_id_of(run_session(tmp_path / "worker", collector.http_endpoint))
        directory = central / "sessions" / session_id
        deadline = __import__("time").monotonic() + 60
        while owner_of(directory) is None:  # the worker's last batch reaches collect as it exits
            assert __import__("time").monotonic() < deadline
            __import__("time").sleep(0.05)
        before = _snapshot(directory)
        env = {**base_env(central), "OTEL_TRACES_EXPORTER": "none"}
        resumed = subprocess.run([sys.executable, "-m", "otel_agents", "resume", session_id, "And now?"], env=env,
                                 capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 2, resumed.stderr
        assert f"session {session_id} is being written by pid {collector.proc.pid}" in resumed.stderr
        assert resumed.stderr.count("\n") == 1 and "Traceback" not in resumed.stderr
        assert _snapshot(directory) == before
        second = subprocess.run([sys.executable, "-m", "otel_agents", "collect", "--http", f"127.0.0.1:{free_port()}"],
                                env=base_env(central), capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
        assert f"is being collected into by pid {collector.proc.pid}" in second.stderr
        assert _snapshot(directory) == before
        assert collector.stop() == 0
    assert owner_of(directory) is None  # given up at exit (and when quiet for --settle)
    assert_same_session(tmp_path / "worker", central, session_id)


def test_collect_rejects_the_spans_of_a_session_a_live_local_run_writes(tmp_path):
    import subprocess
    import sys
    import urllib.request

    from support.collector import base_env

    otlp = tmp_path / "spans.jsonl"
    session_id = session_id_of(run_session(tmp_path / "local", None, "http/protobuf", "--otlp-file", str(otlp)))
    docs = [json.loads(line) for line in otlp.read_text().splitlines()]
    body = json.dumps({"resourceSpans": [rs for doc in docs for rs in doc["resourceSpans"]]}).encode()
    total = sum(len(ss["spans"]) for doc in docs for rs in doc["resourceSpans"] for ss in rs["scopeSpans"])
    central = tmp_path / "central"
    directory = central / "sessions" / session_id
    holder = subprocess.Popen(  # a run on the collecting machine writing the same session
        [sys.executable, "-c", "import sys, time\nfrom otel_agents.persistence.ownership import take\n"
         "held = take(sys.argv[1], create=True)\nprint('held', flush=True)\ntime.sleep(120)\n", str(directory)],
        env=base_env(central), stdout=subprocess.PIPE, text=True)

    def post():
        request = urllib.request.Request(collector.http_endpoint + "/v1/traces", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())

    try:
        assert holder.stdout.readline().strip() == "held"
        with Collector(central) as collector:
            status, answer = post()
            assert status == 200
            assert int(answer["partialSuccess"]["rejectedSpans"]) == total
            assert f"session {session_id} is being written by pid {holder.pid}" in answer["partialSuccess"]["errorMessage"]
            assert sorted(p.name for p in directory.iterdir()) == ["owner.lock"]  # nothing written
            holder.kill()
            holder.wait()
            status, answer = post()  # the run has ended: delivered again, written
            assert status == 200 and "partialSuccess" not in answer, answer
            assert collector.stop() == 0
        said = [line for line in collector.lines if "not saved" in line]
        assert len(said) == 1 and f"being written by pid {holder.pid}" in said[0]
        assert_same_session(tmp_path / "local", central, session_id)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_hold_seconds_not_finite_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    from support.collector import base_env

    for value in ("inf", "nan"):
        proc = subprocess.run([sys.executable, "-m", "otel_agents", "collect", "--http", "127.0.0.1:0",
                               "--hold-seconds", value], env=base_env(tmp_path), capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--hold-seconds" in proc.stderr
    assert not (tmp_path / "sessions").exists()  # refused before anything was written
