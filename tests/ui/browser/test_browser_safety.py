"""Content is text, never HTML: an agent saying <script> or <img onerror> shows literally and runs nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request


def test_html_in_titles_and_messages_renders_literally(page, driver, ui, saved_home):
    page.goto(ui.url + "/")
    row = page.locator(f'#sessions-body tr[data-id="{saved_home.xss}"]')
    row.wait_for()
    assert saved_home.xss_prompt in row.inner_text()
    assert page.locator("#sessions img, #sessions script").count() == 0

    page.goto(f"{ui.url}/s/{saved_home.xss}?view=perspective&agent=main")
    page.wait_for_selector("#messages article")
    text = page.inner_text("#messages")
    assert saved_home.xss_said in text and saved_home.xss_prompt in text
    assert page.locator("main img, main script").count() == 0
    assert saved_home.xss_prompt in page.inner_text("#session-head h1")

    rows = driver.api(f"/api/sessions/{saved_home.xss}/nodes")["nodes"]
    driver.open(saved_home.xss)
    driver.expand(rows[0]["id"])
    turn = driver.api(f"/api/sessions/{saved_home.xss}/nodes", parent=rows[0]["id"])["nodes"]
    turn = next(r for r in turn if r["kind"] == "turn")
    driver.expand(turn["id"])
    llm = next(r for r in driver.api(f"/api/sessions/{saved_home.xss}/nodes", parent=turn["id"])["nodes"] if r["kind"] == "llm")
    driver.select(llm["id"])
    assert saved_home.xss_said in page.inner_text("#details pre.response")
    assert saved_home.xss_prompt in page.inner_text("#context-messages")
    assert page.locator("main img, main script").count() == 0
    page.wait_for_timeout(200)  # an onerror would have fired by now
    assert page.dialogs == []
    assert not page.console_errors


def test_the_page_runs_under_the_content_security_policy(page, ui):
    response = page.goto(ui.url + "/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    page.wait_for_selector("#sessions-body tr[data-id]")  # the app's modules ran under it
    violations = []

    def on_console(message):
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    page.on("console", on_console)
    try:
        page.evaluate("() => { const s = document.createElement('script'); s.textContent = 'alert(9)'; document.body.appendChild(s); }")
        page.wait_for_timeout(100)
    finally:
        page.remove_listener("console", on_console)
    assert page.dialogs == [] and violations


def _logical_order(page, selector: str, text: str) -> bool:
    """Whether ``text`` in the element shows left to right: each character's box right of the one before."""
    return page.evaluate("""([selector, text]) => {
      const walker = document.createTreeWalker(document.querySelector(selector), NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.data.indexOf(text);
        if (at < 0) continue;
        const xs = [...text].map((_, i) => {
          const range = document.createRange();
          range.setStart(node, at + i);
          range.setEnd(node, at + i + 1);
          return range.getBoundingClientRect().left;
        });
        return xs.every((x, i) => i === 0 || x > xs[i - 1]);
      }
      return null;
    }""", [selector, text])


def test_a_right_to_left_override_shows_as_a_mark_and_reverses_nothing(page, servers, cli_env, tmp_path):
    """U+202E in an answer or a prompt made the text after it (JSON, a tool's arguments) read backwards."""
    home = tmp_path / "home"
    said = '\u202e{"amount": 100} PAID'
    script = tmp_path / "bidi.json"
    script.write_text(json.dumps({"name": "bidi", "root": {"name": "main", "system_prompt": "s"}, "agents": {"main": [said]}}))
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", "--script", str(script), "pay \u202eNOTE"],
                          capture_output=True, text=True, env=cli_env(home), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    session_id = done.stderr.strip().splitlines()[-1].split("session: ")[1]
    server = servers.start(home / "sessions", [home / "billing.jsonl"])
    try:
        # The API keeps the exact content; only the page shows the control as a mark.
        with urllib.request.urlopen(f"{server.url}/api/sessions/{session_id}/perspective/main", timeout=10) as answer:
            perspective = json.loads(answer.read())
        assert any(item.get("content") == said for item in perspective["items"])
        page.goto(f"{server.url}/s/{session_id}?view=perspective&agent=main")
        page.wait_for_selector("#messages article")
        text = page.inner_text("#messages")
        assert '⟨U+202E⟩{"amount": 100} PAID' in text and "pay ⟨U+202E⟩NOTE" in text
        assert "\u202e" not in page.evaluate("() => document.body.textContent + document.title")
        assert _logical_order(page, "#messages", '{"amount": 100} PAID')
        assert _logical_order(page, "#session-head h1", "NOTE")
    finally:
        servers.stop(server)
