"""Dialog, perspective, causality and costs pages in Chromium show what the CLI views and the ledger show."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path


def shown_text(value):
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def agent_ids(saved_home, *names: str) -> list[str]:
    agents = saved_home.cli_json("view", saved_home.demo, "agents")["agents"]
    return [next(a["agent_id"] for a in agents if a["name"] == name) for name in names]


def test_dialog_shows_what_view_dialog_shows(page, ui, saved_home):
    jack, jill = agent_ids(saved_home, "Jack", "Jill")
    page.goto(f"{ui.url}/s/{saved_home.demo}?view=dialog&agents={jack},{jill}")
    page.wait_for_selector("#messages article[data-message]")
    expected = saved_home.cli_json("view", saved_home.demo, "dialog", "Jack", "Jill")["items"]
    shown = page.eval_on_selector_all("#messages article", """items => items.map(a => ({
        id: a.dataset.message, speaker: a.querySelector('.who .agent').textContent,
        content: a.querySelector('pre.content').textContent}))""")
    assert [(s["id"], s["speaker"], s["content"]) for s in shown] == [
        (i["message_id"], i["speaker"] or "?", shown_text(i["content"])) for i in expected]
    # Choosing agents is the page's state: unticking Jill asks for Jack's dialog alone.
    page.uncheck(f'#dialog-agents input[value="{jill}"]')
    only_jack = saved_home.cli_json("view", saved_home.demo, "dialog", "Jack")["items"]
    page.wait_for_function("n => document.querySelectorAll('#messages article').length === n", arg=len(only_jack))
    assert f"agents={jack}" in page.url and jill not in page.url


def test_perspective_shows_what_view_perspective_shows(page, ui, saved_home):
    page.goto(f"{ui.url}/s/{saved_home.demo}?view=perspective&agent=Jill")
    page.wait_for_selector("#messages article")
    expected = saved_home.cli_json("view", saved_home.demo, "perspective", "Jill")["items"]
    shown = page.eval_on_selector_all("#messages article", """items => items.map(a => ({
        kind: a.dataset.kind,
        content: a.querySelector(':scope > pre.content') ? a.querySelector(':scope > pre.content').textContent : null}))""")
    assert [(s["kind"], s["content"]) for s in shown] == [
        (i["kind"], shown_text(i["content"]) if i["content"] not in (None, "") else None) for i in expected]
    assert page.input_value("#perspective-agent") == agent_ids(saved_home, "Jill")[0]


def test_clicking_a_message_shows_its_causes_and_who_heard_it(page, ui, saved_home):
    jack, jill = agent_ids(saved_home, "Jack", "Jill")
    page.goto(f"{ui.url}/s/{saved_home.demo}?view=dialog&agents={jack},{jill}")
    page.wait_for_selector("#messages article[data-message]")
    shown = page.eval_on_selector_all("#messages article", "items => items.map(a => a.dataset.message)")
    # A message with a cause: its chain has more than itself.
    message = next(m for m in reversed(shown) if len(json.loads(urllib.request.urlopen(
        f"{ui.url}/api/sessions/{saved_home.demo}/messages/{m}/trace").read())["chain"]) > 1)
    page.click(f'#messages article[data-message="{message}"]')
    page.wait_for_selector("#cause-chain li")
    trace = saved_home.cli_json("view", saved_home.demo, "trace", message)
    heard = saved_home.cli_json("view", saved_home.demo, "heard", message)
    chain = page.eval_on_selector_all("#cause-chain > li", "items => items.map(li => li.dataset.message)")
    assert chain == [step["message_id"] for step in trace["chain"]] and len(chain) > 1
    hearers = page.locator("#heard-by > li")
    assert hearers.count() == max(1, len(heard["references"]))
    for index, reference in enumerate(heard["references"]):
        assert reference["agent"] in hearers.nth(index).inner_text()
    assert f"message={message}" in page.url
    # The deep link to the message opens its causality again.
    page.goto(page.url)
    page.wait_for_selector("#cause-chain li")
    assert page.eval_on_selector_all("#cause-chain > li", "items => items.map(li => li.dataset.message)") == chain


def test_costs_page_draws_its_charts_and_pages_the_ledger(page, ui, saved_home):
    page.goto(f"{ui.url}/s/{saved_home.demo}?view=costs")
    page.wait_for_selector("#chart-per-agent rect")
    page.wait_for_selector("#ledger-rows tbody tr")
    costs = json.loads(urllib.request.urlopen(f"{ui.url}/api/sessions/{saved_home.demo}/costs").read())
    assert page.locator("#chart-per-agent rect").count() == len(costs["per_agent"]) > 1
    assert page.locator("#chart-per-model rect").count() == len(costs["per_model"]) >= 1
    assert page.locator("#chart-over-time path").count() == 1
    ledger = json.loads(urllib.request.urlopen(f"{ui.url}/api/sessions/{saved_home.demo}/ledger?limit=1000").read())
    assert page.locator("#ledger-rows tbody tr").count() == min(50, ledger["total"]) > 0
    href = page.get_attribute("#ledger-csv", "href")
    assert href == f"/api/sessions/{saved_home.demo}/ledger.csv"
    csv = page.request.get(ui.url + href).body()
    done = saved_home.cli("billing", "export", "--format", "csv", "--session", saved_home.demo)
    assert done.returncode == 0 and csv == done.stdout.encode()


def test_tabs_keep_the_view_in_the_url_and_runs_link_to_jaeger(page, ui, saved_home):
    page.goto(f"{ui.url}/s/{saved_home.demo}")
    page.wait_for_selector(".tree .row[data-id]")
    page.click('.tabs [data-view="perspective"]')
    page.wait_for_selector("#perspective-agent")
    assert "view=perspective" in page.url
    page.go_back()
    page.wait_for_selector(".tree .row[data-id]")
    session = json.loads(urllib.request.urlopen(f"{ui.url}/api/sessions/{saved_home.demo}").read())
    links = page.eval_on_selector_all("#runs a.jaeger", "links => links.map(a => a.href)")
    assert links == [run["jaeger_url"] for run in session["runs"]]
    assert links and all(link.startswith("http://jaeger.invalid:16686/trace/") for link in links)


def test_a_busy_agent_s_perspective_and_dialog_are_drawn_a_page_at_a_time(page, ui, big_session):
    base = f"/api/sessions/{big_session}"
    whole = json.loads(urllib.request.urlopen(f"{ui.url}{base}/perspective/agent_001").read())
    total = len(whole["items"])
    assert total > 400  # more than two pages
    page.goto(f"{ui.url}/s/{big_session}?view=perspective&agent=agent_001")
    page.wait_for_selector("#messages article.message")
    shown = page.eval_on_selector_all("#messages article.message", "items => items.map(i => i.dataset.message)")
    assert shown == [item["message_id"] or "" for item in whole["items"][:200]]
    assert f"1–200 of {total}" in page.inner_text("#messages-pager")
    page.click("#messages-pager button.next")
    page.wait_for_selector(f"#messages-pager >> text=201–400 of {total}")
    shown = page.eval_on_selector_all("#messages article.message", "items => items.map(i => i.dataset.message)")
    assert shown == [item["message_id"] or "" for item in whole["items"][200:400]]
    assert "from=200" in page.url
    # The page holds one page of messages, not the agent's thousands of DOM nodes.
    assert page.evaluate("() => document.querySelectorAll('#messages *').length") < 200 * 12

    dialog = json.loads(urllib.request.urlopen(f"{ui.url}{base}/dialog?agents=agent_001&agents=agent_002").read())
    page.goto(f"{ui.url}/s/{big_session}?view=dialog&agents=agent_001,agent_002")
    page.wait_for_selector("#messages article.message")
    assert len(dialog["items"]) > 200
    shown = page.eval_on_selector_all("#messages article.message", "items => items.map(i => i.dataset.message)")
    assert shown == [item["message_id"] for item in dialog["items"][:200]]
    assert f"1–200 of {len(dialog['items'])}" in page.inner_text("#messages-pager")


def test_a_session_imported_from_spans_says_it_has_no_transcripts(page, servers, cli_env, tmp_path):
    """The tree lists the imported agent, the views (events.jsonl) none: Perspective opened on a 404, and the
    LLM node's context said its chat span "is not a chat span"."""
    home = tmp_path / "home"
    trace = Path(__file__).resolve().parents[2] / "data" / "foreign" / "jaeger-http-agent.json"
    done = subprocess.run([sys.executable, "-m", "otel_agents", "import", str(trace)], capture_output=True, text=True,
                          env=cli_env(home), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (session_id,) = [p.name for p in (home / "sessions").iterdir()]
    server = servers.start(home / "sessions", [home / "billing.jsonl"])
    failed = []

    def on_response(response):
        if response.status >= 400:
            failed.append(response.url)

    page.on("response", on_response)
    try:
        for view in ("perspective", "dialog"):
            page.goto(f"{server.url}/s/{session_id}?view={view}")
            page.wait_for_selector("#no-transcripts")
            assert "imported from spans without transcript records" in page.inner_text("#no-transcripts")
            assert page.locator("#pane .error").count() == 0
        assert failed == []
        llm = next(row for row in api_rows(server.url, session_id) if row["kind"] == "llm")
        page.goto(f"{server.url}/s/{session_id}?node={llm['id']}")
        page.wait_for_selector(f'#details[data-node="{llm["id"]}"]')
        shown = page.inner_text("#details")
        assert "recorded without its context" in shown and "not a chat span" not in shown
    finally:
        page.remove_listener("response", on_response)
        servers.stop(server)


def api_rows(url: str, session_id: str) -> list[dict]:
    rows, parents = [], [None]
    while parents:
        parent = parents.pop()
        query = f"?parent={parent}" if parent else ""
        for row in json.loads(urllib.request.urlopen(f"{url}/api/sessions/{session_id}/nodes{query}").read())["nodes"]:
            rows.append(row)
            if row["child_count"]:
                parents.append(row["id"])
    return rows
