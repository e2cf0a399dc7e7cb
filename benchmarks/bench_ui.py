"""UI figures in Debian's Chromium: the 100k synthetic session's first screen, and a running session's live lag.

    python benchmarks/bench_ui.py [--entries N]   # both figures alone, printed as JSON

Each figure serves a real ``otel-agents ui`` process and drives a headless Chromium through
Playwright (``executable_path`` set to Debian's chromium; Playwright's own download is never used).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_views  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
FIRST_ROW = ".tree .row[data-id]"


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"OTEL_AGENTS_HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    return env


@contextmanager
def ui_server(home: Path) -> Iterator[str]:
    """A real ``otel-agents ui`` process on a free loopback port; yields its URL (its first stdout line)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "otel_agents", "ui", "--port", "0", "--sessions-dir", str(home / "sessions"),
         "--billing-file", str(home / "billing.jsonl")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(home))
    try:
        line = process.stdout.readline().strip()
        if not line.startswith("http"):
            raise RuntimeError(f"otel-agents ui printed {line!r}: {process.stderr.read()[-2000:] if process.poll() is not None else ''}")
        yield line.rstrip("/")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class FirstScreen:
    seconds: list[float]  # navigation start to the tree's first row visible, each in a new browser context
    after_html_s: list[float]  # the same from the HTML's last byte (the page's own clock)
    cold_server_s: float  # the first navigation, the server's first read of the session included
    nodes: int


def first_screen(entries: int, tmp: Path, repeat: int) -> FirstScreen:
    """``repeat`` navigations to the synthetic session's page, after one on the server's first read."""
    home = tmp / "ui-first-screen"
    synthetic = bench_views.synthetic_session(entries)
    bench_views.write_session_dir(synthetic, home / "sessions")
    seconds: list[float] = []
    after_html: list[float] = []
    cold = 0.0
    with ui_server(home) as url, chromium() as browser:
        for attempt in range(repeat + 1):
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            started = time.perf_counter()
            page.goto(f"{url}/s/{synthetic.session_id}", wait_until="commit")
            page.wait_for_selector(FIRST_ROW, timeout=120_000)
            elapsed = time.perf_counter() - started
            html_done = page.evaluate("() => performance.now() - performance.getEntriesByType('navigation')[0].responseEnd")
            nodes = int(page.evaluate("() => document.querySelectorAll('.tree .row[data-id]').length"))
            context.close()
            if nodes < 1:
                raise AssertionError("the tree showed no row")
            if attempt == 0:
                cold = elapsed
                continue
            seconds.append(elapsed)
            after_html.append(html_done / 1000)
        node_count = json.loads(_get(f"{url}/api/sessions/{synthetic.session_id}"))["node_count"]
    return FirstScreen(seconds, after_html, cold, node_count)


def _get(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read()


# A MutationObserver (installed through CDP, so the page's CSP does not apply) notes when each
# row first shows its node ended, on the page's wall clock (the same clock the spans use).
WATCH_ROWS = """() => {
  window.endedSeen = {};
  const note = () => {
    const now = Date.now();
    for (const row of document.querySelectorAll('.tree .row[data-id][data-ended="1"]')) {
      if (!(row.dataset.id in window.endedSeen)) window.endedSeen[row.dataset.id] = now;
    }
  };
  new MutationObserver(note).observe(document.body, { childList: true, subtree: true, attributes: true });
  note();
}"""


@dataclass
class LiveLag:
    lags_s: list[float] = field(default_factory=list)  # span end to its row showing it ended
    runs: int = 0


def live_lag(tmp: Path, runs: int, latency_ms: int = 300) -> LiveLag:
    """A scripted session of ``runs`` prompts (each answer ``latency_ms`` late) watched on its open page:
    every run and turn that ends while the page is open, from its span's end to its row showing it."""
    home = tmp / "ui-live"
    script = tmp / "ui-live.json"
    script.write_text(json.dumps({"name": "live", "root": {"name": "main", "system_prompt": "Answer."},
                                  "agents": {"main": [{"text": f"answer {n}", "latency_ms": latency_ms} for n in range(runs)]}}))
    sessions = home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    result = LiveLag()
    with ui_server(home) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        run = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--script", str(script)], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=clean_env(home))
        try:
            run.stdin.write("".join(f"question {n}\n" for n in range(runs)))
            run.stdin.close()
            session_id = _wait_for_session(sessions)
            page.goto(f"{url}/s/{session_id}")
            # Watching from the moment the page is open: the run imports litellm before its first span,
            # then its few quick runs may all end before the first row would have been waited for.
            page.evaluate(WATCH_ROWS)
            opened_ms = time.time() * 1000
            page.wait_for_selector(FIRST_ROW, timeout=60_000)
            if run.wait(timeout=300) != 0:
                raise AssertionError(f"the scripted run failed: {run.stderr.read()[-2000:]}")
            page.wait_for_function("() => document.getElementById('session-status').textContent === 'ok'", timeout=30_000)
            page.wait_for_timeout(500)
            seen = page.evaluate("() => window.endedSeen")
        finally:
            if run.poll() is None:
                run.kill()
        session = json.loads(_get(f"{url}/api/sessions/{session_id}"))
        top = json.loads(_get(f"{url}/api/sessions/{session_id}/nodes?limit=1000"))["nodes"]
        rows = list(top)
        for row in top:
            rows += json.loads(_get(f"{url}/api/sessions/{session_id}/nodes?parent={row['id']}&limit=1000"))["nodes"]
    result.runs = len(top)
    for row in rows:
        if row["duration_ms"] is None or row["id"] not in seen:
            continue
        ended_ms = session["start_ms_epoch"] + row["start_ms"] + row["duration_ms"]
        if ended_ms > opened_ms + 100:  # ended while the page watched
            result.lags_s.append(max(0.0, (seen[row["id"]] - ended_ms) / 1000))
    if not result.lags_s:
        raise AssertionError("no node ended while the page was open")
    return result


def _wait_for_session(sessions: Path, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for p in sessions.iterdir() if (p / "spans.jsonl").exists()]
        if found:
            return found[0].name
        time.sleep(0.02)
    raise AssertionError("the scripted session never appeared")


def main(argv: list[str] | None = None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as name:
        screen = first_screen(args.entries, Path(name), args.repeat)
        lag = live_lag(Path(name), args.runs)
    print(json.dumps({"ui_first_screen_s": statistics.median(screen.seconds), "first_screen": screen.__dict__,
                      "ui_live_lag_s": statistics.median(lag.lags_s), "live": lag.__dict__}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
