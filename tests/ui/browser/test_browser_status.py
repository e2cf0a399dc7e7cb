"""What pages say of costs, statuses and damage, as the CLI says them: failed attempts, new and damaged sessions, long prompts."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest


def test_a_failed_attempt_of_a_priced_model_is_not_unpriced(driver, saved_home, demo_rows):
    """The tree and the ledger said "unpriced" of a failed attempt that billed nothing (`billing summary`: FAILED, UNPRICED 0)."""
    failed = next(row for row in demo_rows.values() if row["kind"] == "llm" and row["status"] == "error")
    driver.open(saved_home.demo)
    driver.reveal(demo_rows, failed["id"])
    assert driver.row(failed["id"]).locator(".cost").inner_text() == "$0 / $0"
    driver.page.goto(f"{driver.url}/s/{saved_home.demo}?view=costs")
    driver.page.wait_for_selector("#ledger-rows tbody tr.status-failed")
    costs = driver.page.eval_on_selector_all("#ledger-rows tbody tr.status-failed", """rows => rows
        .filter(r => r.children[4].textContent === "llm").map(r => r.children[9].textContent)""")
    assert costs and set(costs) == {"$0"}


@pytest.fixture(scope="module")
def damaged_home(saved_home, tmp_path_factory, cli_env):
    """An empty session directory, the demo with a torn spans.jsonl and no tree.json.gz, one with a damaged meta.json,
    and a run of a 5,000-character prompt."""
    home = tmp_path_factory.mktemp("ui-damaged") / "home"
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", "x" * 5000], capture_output=True, text=True,
                          env=cli_env(home), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    long = done.stderr.strip().splitlines()[-1].split("session: ")[1]
    (home / "sessions" / "empty").mkdir()
    torn = home / "sessions" / "torn"
    shutil.copytree(saved_home.sessions / saved_home.demo, torn)
    spans = (torn / "spans.jsonl").read_bytes()
    (torn / "spans.jsonl").write_bytes(spans[:3000])
    (torn / "tree.json.gz").unlink(missing_ok=True)
    shutil.copytree(saved_home.sessions / saved_home.demo, home / "sessions" / "broken")
    (home / "sessions" / "broken" / "meta.json").write_text("{")
    return home, long


@pytest.fixture(scope="module")
def damaged_ui(damaged_home, servers):
    server = servers.start(damaged_home[0] / "sessions", [])
    yield server
    servers.stop(server)


def test_an_empty_session_directory_is_new_as_sessions_list_says_with_no_1970(page, damaged_ui):
    page.goto(f"{damaged_ui.url}/?q=empty")
    page.wait_for_selector('#sessions-body tr[data-id="empty"]')
    row = page.locator('#sessions-body tr[data-id="empty"]')
    assert row.locator(".status").inner_text() == "new"
    assert "1970" not in row.inner_text()
    page.goto(f"{damaged_ui.url}/s/empty")
    page.wait_for_selector("#session-status")
    assert page.inner_text("#session-status") == "new"
    assert "1970" not in page.inner_text("#session-head")


def test_damaged_streams_are_said_in_the_session_header(page, damaged_ui):
    page.goto(f"{damaged_ui.url}/s/torn")
    page.wait_for_selector("#session-notes")
    assert "torn last line" in page.get_attribute("#session-notes", "title")


def test_a_rows_problem_shows_on_the_sessions_page(page, damaged_ui):
    page.goto(f"{damaged_ui.url}/?q=broken")
    page.wait_for_selector('#sessions-body tr[data-id="broken"] .problem')
    assert "meta.json" in page.inner_text('#sessions-body tr[data-id="broken"] .problem')


def test_a_long_prompt_does_not_widen_the_session_page(page, damaged_home, damaged_ui):
    """A 5,000-character prompt without a space made the page 36k px wide."""
    page.goto(f"{damaged_ui.url}/s/{damaged_home[1]}")
    page.wait_for_selector("#runs .prompt")
    assert page.get_attribute("#runs .prompt", "title") == "x" * 5000
    width, viewport = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= viewport
