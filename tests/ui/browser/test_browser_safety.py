"""Content is text, never HTML: an agent saying <script> or <img onerror> shows literally and runs nothing."""

from __future__ import annotations


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
