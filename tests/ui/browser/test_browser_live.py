"""Live: a running scripted session gains nodes on the open page without reload, across the server restarting."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

RUNS = 6
LATENCY_MS = 500


def start_slow_session(home: Path, env: dict) -> tuple[subprocess.Popen, str]:
    """A real `otel-agents run` of RUNS prompts, each answered after LATENCY_MS; returns it and its session id."""
    script = home.parent / "slow.json"
    script.write_text(json.dumps({"name": "slow", "root": {"name": "main", "system_prompt": "Answer slowly."},
                                  "agents": {"main": [{"text": f"answer {n}", "latency_ms": LATENCY_MS} for n in range(RUNS)]}}))
    sessions = home / "sessions"
    before = set(p.name for p in sessions.iterdir()) if sessions.exists() else set()
    process = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--script", str(script)],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, text=True)
    process.stdin.write("".join(f"question {n}\n" for n in range(RUNS)))
    process.stdin.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = [p for p in sessions.iterdir() if p.name not in before] if sessions.exists() else []
        if new and (new[0] / "spans.jsonl").exists():
            return process, new[0].name
        time.sleep(0.05)
    process.kill()
    raise AssertionError("the slow session never appeared")


def test_running_session_gains_nodes_without_reload_and_survives_a_server_restart(page, servers, cli_env, tmp_path):
    home = tmp_path / "home"
    first = servers.start(home / "sessions", [home / "billing.jsonl"])
    process, session_id = start_slow_session(home, cli_env(home))
    try:
        page.goto(f"{first.url}/")
        page.wait_for_selector(f'#sessions-body tr[data-id="{session_id}"] .live-badge')  # marked live

        page.goto(f"{first.url}/s/{session_id}")
        page.wait_for_selector(".tree .row[data-id]")
        page.evaluate("() => { window.notReloaded = true; }")
        count_at_open = int(page.locator("#tree-count").inner_text().split()[0])
        seen_at_open = set(page.eval_on_selector_all(".tree .row[data-id]", "rows => rows.map(r => r.dataset.id)"))
        # New nodes arrive through the live feed while the run goes on.
        page.wait_for_function("seen => [...document.querySelectorAll('.tree .row[data-id]')].some(r => !seen.includes(r.dataset.id))",
                               arg=sorted(seen_at_open), timeout=15_000)
        # Meanwhile the counter, whose node count is the detail's read at the start, never says fewer than it holds.
        page.wait_for_function("n => Number(document.getElementById('tree-count').textContent.match(/(\\d+) loaded/)[1]) > n",
                               arg=count_at_open, timeout=15_000)
        total, loaded = page.evaluate("() => document.getElementById('tree-count').textContent.match(/\\d+/g).map(Number)")
        assert total >= loaded > count_at_open

        # The server goes away and comes back on the same port: the page reconnects by itself.
        port = int(first.url.rsplit(":", 1)[1])
        servers.stop(first)
        second = servers.start(home / "sessions", [home / "billing.jsonl"], port=port)
        assert process.wait(timeout=60) == 0
        page.wait_for_function("() => document.getElementById('session-status').textContent === 'ok'", timeout=15_000)
        expected = json.loads(urllib.request.urlopen(f"{second.url}/api/sessions/{session_id}/nodes").read())
        page.wait_for_function(
            "ids => ids.every(id => document.querySelector(`.tree .row[data-id=\"${id}\"][data-status=\"ok\"]`))",
            arg=[row["id"] for row in expected["nodes"]], timeout=15_000)
        assert expected["total"] == RUNS
        # The tree's counter follows the session read again at the run's end, as the header does.
        node_count = json.loads(urllib.request.urlopen(f"{second.url}/api/sessions/{session_id}").read())["node_count"]
        page.wait_for_function("n => document.getElementById('session-head').textContent.includes(`${n} nodes`)",
                               arg=node_count, timeout=15_000)
        assert page.locator("#tree-count").inner_text().startswith(f"{node_count} nodes, ")

        # A resume appends a new run to the same files: it shows up on the same page.
        resumed = subprocess.run([sys.executable, "-m", "otel_agents", "resume", session_id, "one more question"],
                                 capture_output=True, text=True, env=cli_env(home), timeout=120)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        page.wait_for_function(
            "n => document.querySelectorAll('.tree .row.kind-run[data-status=\"ok\"]').length === n", arg=RUNS + 1,
            timeout=15_000)
        assert page.evaluate("() => window.notReloaded") is True
        assert not page.console_errors
    finally:
        if process.poll() is None:
            process.kill()


def test_a_node_that_ends_between_the_first_page_and_the_session_detail_is_not_lost(page, servers, saved_home, tmp_path):
    """The tree's first page is read from the session as it was; the run ends (its journal grows) before the
    session's detail is read: the page must still learn that the run ended."""
    sessions = tmp_path / "sessions"
    directory = sessions / saved_home.demo
    shutil.copytree(saved_home.sessions / saved_home.demo, directory)
    journal = (directory / "spans.jsonl").read_bytes()
    lines = journal.splitlines(keepends=True)
    (directory / "spans.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]))  # the run not ended yet
    server = servers.start(sessions, [tmp_path / "billing.jsonl"])
    base = f"/api/sessions/{saved_home.demo}"
    first_page_served = []

    def serve_first_page(route):
        response = route.fetch()  # the session as it was: the run still open
        (directory / "spans.jsonl").write_bytes(journal)  # ... and now the run has ended
        first_page_served.append(True)
        route.fulfill(response=response)

    def serve_detail_after_it(route):
        while not first_page_served:
            page.wait_for_timeout(20)
        route.continue_()

    page.route(f"**{base}/nodes?*", serve_first_page)
    page.route(f"**{base}", serve_detail_after_it)
    try:
        page.goto(f"{server.url}/s/{saved_home.demo}")
        page.wait_for_selector(".tree .row.kind-run")
        # The run's end reaches the page through the live feed, replayed from the first page's cursor.
        page.wait_for_selector('.tree .row.kind-run[data-status="ok"]', timeout=10_000)
        assert page.locator("#session-status").inner_text() == "ok"
    finally:
        page.unroute(f"**{base}/nodes?*")
        page.unroute(f"**{base}")
        servers.stop(server)


def test_a_session_removed_while_its_page_is_open_says_so_and_stops_following(page, servers, saved_home, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(saved_home.sessions / saved_home.demo, home / "sessions" / saved_home.demo)
    server = servers.start(home / "sessions", [home / "billing.jsonl"])
    try:
        page.goto(f"{server.url}/s/{saved_home.demo}")
        page.wait_for_selector(".tree .row[data-id]")
        page.wait_for_function("() => document.getElementById('session-status').textContent === 'ok'")
        shutil.rmtree(home / "sessions" / saved_home.demo)  # as `sessions rm` leaves it
        page.wait_for_selector("#session-gone", timeout=15_000)
        assert "removed" in page.inner_text("#session-gone")
        assert page.inner_text("#session-status") == "removed"
        assert page.locator("#session-live").count() == 0
        time.sleep(2.5)  # past the feed's retry interval: a closed feed does not come back reconnecting
        assert page.locator("#session-gone").count() == 1
        assert page.evaluate("() => document.getElementById('live-state').hidden")  # not 'reconnecting…'
    finally:
        servers.stop(server)


def test_rows_of_a_writer_killed_mid_turn_stop_running_on_the_open_page(page, servers, cli_env, tmp_path):
    """kill -9 changes no file: the header said interrupted while the run and turn rows kept `running` for good."""
    import signal

    home = tmp_path / "home"
    script = tmp_path / "slow2.json"
    script.write_text(json.dumps({"name": "slow2", "agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "H", "system_prompt": "s", "user_prompt": "u"}}],
                  "latency_ms": 1500}, {"text": "x", "latency_ms": 1500}],
        "H": [{"text": "a", "latency_ms": 2500}]}, "prompts": ["go slow 1"]}))
    server = servers.start(home / "sessions", [home / "billing.jsonl"])
    process = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--script", str(script)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cli_env(home))
    try:
        sessions = home / "sessions"
        deadline = time.monotonic() + 30
        while not (sessions.is_dir() and any((p / "spans.jsonl").exists() for p in sessions.iterdir())):
            assert time.monotonic() < deadline and process.poll() is None, "the run made no session"
            time.sleep(0.05)
        session_id = next(sessions.iterdir()).name
        page.goto(f"{server.url}/s/{session_id}")
        page.wait_for_selector('.tree .row.kind-turn[data-status="running"]', timeout=15_000)  # mid-turn
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        page.wait_for_function("() => document.getElementById('session-status').textContent === 'interrupted'",
                               timeout=15_000)
        page.wait_for_function("() => !document.querySelector('.tree .row[data-status=\"running\"]')", timeout=10_000)
        run = page.locator(".tree .row.kind-run")
        assert run.get_attribute("data-status") == "interrupted" and run.get_attribute("data-ended") == "1"
    finally:
        if process.poll() is None:
            process.kill()
        servers.stop(server)
