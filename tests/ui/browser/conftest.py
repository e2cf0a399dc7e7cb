"""Browser-test fixtures: one headless Debian chromium for the session, the real app under uvicorn, saved sessions."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
BENCH_VIEWS = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_views.py"
XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(2)>"
XSS_PROMPT = "<img src=y onerror=alert(3)> say hello"


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a real `otel-agents` process recording into ``home`` and nowhere else."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"OTEL_AGENTS_HOME": str(home), "OTEL_AGENTS_CAPTURE_INPUT_MESSAGES": "true",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    return env


def run_cli(home: Path, *args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "otel_agents", *args], input=stdin, capture_output=True, text=True,
                          env=clean_env(home), timeout=timeout)


def session_id_of(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr.strip().splitlines()[-1].split("session: ")[1]


def write_script(path: Path, document: dict) -> Path:
    path.write_text(json.dumps(document))
    return path


@dataclass
class Home:
    home: Path
    demo: str  # the built-in jack-and-jill session
    xss: str  # a session whose agent says HTML
    xss_said: str = f"{XSS_SCRIPT} and {XSS_IMG}"
    xss_prompt: str = XSS_PROMPT

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    @property
    def billing(self) -> Path:
        return self.home / "billing.jsonl"

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return run_cli(self.home, *args)

    def cli_json(self, *args: str):
        done = run_cli(self.home, *args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="session")
def cli_env():
    return clean_env


@pytest.fixture(scope="session")
def saved_home(tmp_path_factory, request) -> Home:
    """The API tests' demo run (one real run serves both suites) beside a run whose agent says HTML."""
    home = tmp_path_factory.mktemp("ui-browser") / "home"
    script = write_script(home.parent / "xss.json", {
        "name": "xss", "root": {"name": "main", "system_prompt": "Say HTML."},
        "agents": {"main": [f"{XSS_SCRIPT} and {XSS_IMG}"]},
    })
    # The HTML run goes on while the demo is made (or found made by the API tests): each is mostly start-up.
    with ThreadPoolExecutor(1) as pool:
        xss = pool.submit(run_cli, home, "run", "--script", str(script), XSS_PROMPT)
        shared = request.getfixturevalue("ui_home")  # read-only: its demo is copied, never changed
        xss_id = session_id_of(xss.result())
    shutil.copytree(shared.sessions / shared.demo, home / "sessions" / shared.demo)
    with open(home / "billing.jsonl", "ab") as ledger:  # one ledger holding both runs, as two runs in one home make
        ledger.write(shared.billing.read_bytes())
    return Home(home, shared.demo, xss_id)


@dataclass
class Server:
    url: str
    server: object
    thread: threading.Thread


def start_server(sessions: Path, billing: list[Path], port: int = 0, **options) -> Server:
    """The real app under uvicorn in a thread, on a loopback socket (the OS chooses the port unless given)."""
    import uvicorn

    from otel_agents.ui.app import create_app
    from otel_agents.ui.serve import ui_server

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(sessions, billing, **options), log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=1)
    server = ui_server(config)  # as `otel-agents ui` serves: the pages' live streams end as it stops
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the UI server did not start")
        time.sleep(0.02)
    return Server(f"http://127.0.0.1:{port}", server, thread)


def stop_server(server: Server) -> None:
    server.server.should_exit = True
    server.thread.join(timeout=10)


@pytest.fixture(scope="session")
def servers():
    """start_server and stop_server, for a test that runs (and restarts) a server of its own."""
    started = []

    class Servers:
        def start(self, *args, **kwargs) -> Server:
            started.append(start_server(*args, **kwargs))
            return started[-1]

        def stop(self, server: Server) -> None:
            stop_server(server)

    yield Servers()
    for server in started:
        stop_server(server)


@pytest.fixture(scope="session")
def ui(saved_home):
    server = start_server(saved_home.sessions, [saved_home.billing],
                          jaeger_url="http://jaeger.invalid:16686")
    yield server
    stop_server(server)


# Package scope, not session: Playwright's sync API keeps an event loop running in the main thread
# while the browser lives, and any later test calling asyncio.run would fail.
@pytest.fixture(scope="package")
def browser():
    if not Path(CHROMIUM).is_file():
        # As with the shared fixtures: one line naming what is missing; .ci/run (which installs it) fails instead.
        message = f"no chromium at {CHROMIUM}: install Debian's chromium (apt-get install chromium) for the browser tests"
        if os.environ.get("OTEL_AGENTS_REQUIRE_FIXTURES") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Dialogs(list):
    """Every alert/confirm the page tried to show: an XSS that ran lands here."""


@pytest.fixture(scope="package")
def shared_page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.dialogs = Dialogs()

    def on_dialog(dialog):
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.console_errors = []
    page.on("pageerror", lambda error: page.console_errors.append(str(error)))
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture
def page(shared_page, request, tmp_path):
    """The session's one page, cleared of earlier dialogs; a failing test leaves its screenshot in tmp_path."""
    shared_page.dialogs.clear()
    shared_page.console_errors.clear()
    yield shared_page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        shared_page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
        print(f"screenshot of the failing page: {tmp_path / 'failure.png'}")


def api_get(url: str, path: str, **params):
    """One JSON answer of the running app (what the page reads), asserted to be a 200."""
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    with urllib.request.urlopen(f"{url}{path}{'?' + query if query else ''}", timeout=10) as response:
        assert response.status == 200
        return json.loads(response.read())


def all_rows(url: str, session_id: str) -> dict[str, dict]:
    """Every node of a (small) session by its path label, read through the paged API."""
    found: dict[str, dict] = {}
    parents: list[str | None] = [None]
    while parents:
        parent = parents.pop()
        offset = 0
        while True:
            page = api_get(url, f"/api/sessions/{session_id}/nodes", parent=parent, offset=offset, limit=200)
            for row in page["nodes"]:
                found.setdefault(row["label"] or row["id"], row)
                if row["child_count"]:
                    parents.append(row["id"])
            offset += len(page["nodes"])
            if not page["nodes"] or offset >= page["total"]:
                break
    return found


class Driver:
    """What the tests do on a page: open a session, expand and select tree rows."""

    def __init__(self, page, url: str):
        self.page = page
        self.url = url

    def api(self, path: str, **params):
        return api_get(self.url, path, **params)

    def open(self, session_id: str, query: str = "") -> None:
        self.page.goto(f"{self.url}/s/{session_id}{query}")
        self.page.wait_for_selector(".tree .row[data-id]")

    def row(self, span_id: str):
        return self.page.locator(f'.tree .row[data-id="{span_id}"]')

    def expand(self, span_id: str) -> None:
        toggle = self.row(span_id).locator(".toggle")
        if toggle.get_attribute("aria-expanded") != "true":
            toggle.click()
        self.page.wait_for_selector(f'.tree .row[data-id="{span_id}"] .toggle[aria-expanded="true"]')

    def reveal(self, rows: dict[str, dict], span_id: str) -> None:
        """Expands every ancestor of a node (outermost first), as a user would, until its row shows."""
        by_id = {row["id"]: row for row in rows.values()}
        chain = []
        parent = by_id[span_id]["parent"]
        while parent:
            chain.append(parent)
            parent = by_id[parent]["parent"]
        for ancestor in reversed(chain):
            self.expand(ancestor)
        self.row(span_id).wait_for()

    def select(self, span_id: str) -> None:
        self.row(span_id).locator(".name").click()
        self.page.wait_for_selector(f'#details[data-node="{span_id}"]')


@pytest.fixture
def driver(page, ui) -> Driver:
    return Driver(page, ui.url)


@pytest.fixture(scope="session")
def demo_rows(saved_home, ui) -> dict[str, dict]:
    return all_rows(ui.url, saved_home.demo)


@pytest.fixture(scope="session")
def big_session(saved_home, ui) -> str:
    """The benchmark's synthetic session (4,000 entries, 12 agents) beside the others: long trees and lists."""
    spec = importlib.util.spec_from_file_location("bench_views", BENCH_VIEWS)
    bench_views = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_views", bench_views)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules["bench_views"])
    bench_views = sys.modules["bench_views"]
    synthetic = bench_views.synthetic_session(4_000, agents=12)
    bench_views.write_session_dir(synthetic, saved_home.sessions)
    return synthetic.session_id
