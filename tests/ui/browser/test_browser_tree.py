"""The session page's tree in Chromium: lazy expansion, retries, an LLM attempt's exact context, tool calls, deep links, scale."""

from __future__ import annotations

import json


def shown_text(value):
    """What the page shows for a message's content: text as is, other JSON indented (api.js asText)."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def llm_rows(rows: dict[str, dict]) -> list[dict]:
    return [row for row in rows.values() if row["kind"] == "llm"]


def test_expanding_the_tree_loads_children_lazily(driver, saved_home, demo_rows):
    driver.open(saved_home.demo)
    top = [row for row in demo_rows.values() if row["parent"] is None]
    # Only the runs are in the page before anything is expanded.
    assert sorted(driver.page.eval_on_selector_all(".tree .row[data-id]", "rows => rows.map(r => r.dataset.id)")) == sorted(
        row["id"] for row in top)
    run = top[0]
    driver.expand(run["id"])
    children = [row for row in demo_rows.values() if row["parent"] == run["id"]]
    for child in children:
        driver.row(child["id"]).wait_for()
    assert driver.page.locator(".tree .row[data-id]").count() == 1 + len(children)
    # Rows carry the path label, durations and self / inclusive tokens.
    turn = next(row for row in children if row["kind"] == "turn")
    text = driver.row(turn["id"]).inner_text()
    assert turn["label"] in text and str(turn["inclusive"]["tokens"]) in text.replace(",", "")
    driver.expand(run["id"])  # already open: nothing changes
    driver.row(run["id"]).locator(".toggle").click()  # collapse
    driver.page.wait_for_function("n => document.querySelectorAll('.tree .row[data-id]').length === n", arg=len(top))


def test_failed_attempt_is_visible_and_its_retry_grouped(driver, saved_home, demo_rows):
    failed = next(row for row in llm_rows(demo_rows) if row["status"] == "error")
    retry = next(row for row in llm_rows(demo_rows) if row["retry_of"] == failed["id"])
    driver.open(saved_home.demo)
    driver.reveal(demo_rows, retry["id"])
    assert "st-error" in driver.row(failed["id"]).get_attribute("class")
    assert driver.row(failed["id"]).locator(".status").inner_text() == "error"
    assert "retry" in driver.row(retry["id"]).get_attribute("class").split()
    assert "retry" in driver.row(retry["id"]).locator(".retry-mark").inner_text()
    assert "retry" not in driver.row(failed["id"]).get_attribute("class").split()


def test_selected_llm_attempt_shows_the_context_view_context_gives(driver, saved_home, demo_rows):
    attempt = next(row for row in llm_rows(demo_rows) if row["retry_of"])  # a retried call: a long context
    driver.open(saved_home.demo)
    driver.reveal(demo_rows, attempt["id"])
    driver.select(attempt["id"])
    expected = saved_home.cli_json("view", saved_home.demo, "context", attempt["id"])
    shown = driver.page.eval_on_selector_all("#context-messages > li", """items => items.map(li => ({
        role: li.dataset.role,
        content: li.querySelector(':scope > pre.content') ? li.querySelector(':scope > pre.content').textContent : null,
        tool_calls: li.querySelector(':scope > pre.tool-calls') ? li.querySelector(':scope > pre.tool-calls').textContent : null}))""")
    assert len(shown) == expected["message_count"] == len(expected["messages"]) > 2
    for message, seen in zip(expected["messages"], shown):
        assert seen["role"] == message["role"]
        assert seen["content"] == shown_text(message.get("content"))
        assert seen["tool_calls"] == shown_text(message.get("tool_calls"))
    details = driver.page.locator("#details")
    usage = json.loads(details.locator("pre.usage").inner_text())
    assert usage  # the attempt's usage as the API gives it
    assert attempt["self"]["tokens"] and details.locator("dd", has_text="litellm").count() >= 1  # the price source
    assert details.locator("pre.response").inner_text().strip()


def test_selected_tool_call_shows_its_arguments_and_result(driver, saved_home, demo_rows):
    tool = demo_rows["1-2"]  # the demo's first tool call: task, creating Jack
    driver.open(saved_home.demo)
    driver.reveal(demo_rows, tool["id"])
    driver.select(tool["id"])
    detail = driver.api(f"/api/sessions/{saved_home.demo}/nodes/{tool['id']}")
    arguments = driver.page.locator("#details pre.tool-arguments").inner_text()
    assert arguments == shown_text(detail["tool"]["arguments"])
    assert "Jack" in arguments  # the demo's first task creates Jack
    assert driver.page.locator("#details pre.tool-result").inner_text() == shown_text(detail["tool"]["result"])


def test_denied_tool_call_shows_its_log_lines_with_levels(driver, saved_home, demo_rows):
    denied = next(row for row in demo_rows.values() if row["kind"] == "tool" and row["status"] == "error")
    driver.open(saved_home.demo)
    driver.reveal(demo_rows, denied["id"])
    driver.select(denied["id"])
    detail = driver.api(f"/api/sessions/{saved_home.demo}/nodes/{denied['id']}")
    assert detail["events"]
    levels = driver.page.eval_on_selector_all("#details .events .level", "spans => spans.map(s => s.textContent)")
    assert levels == [(event["level"] or "info").upper() for event in detail["events"]]
    assert "ResourceMonitor" in driver.page.locator("#details").inner_text()


def test_deep_link_opens_the_node_selected_and_scrolled_to(driver, saved_home, demo_rows):
    deepest = max(llm_rows(demo_rows), key=lambda row: row["label"].count("-") + row["label"].count("."))
    driver.page.goto(f"{driver.url}/s/{saved_home.demo}?node={deepest['id']}")
    driver.page.wait_for_selector(f'.tree .row.selected[data-id="{deepest["id"]}"]')
    driver.page.wait_for_selector(f'#details[data-node="{deepest["id"]}"]')
    assert driver.row(deepest["id"]).is_visible()
    assert f"node={deepest['id']}" in driver.page.url
    # Selecting another node keeps the URL a deep link to it.
    other = next(row for row in demo_rows.values() if row["parent"] is None)
    driver.select(other["id"])
    assert f"node={other['id']}" in driver.page.url


def test_a_long_tree_keeps_only_visible_rows_in_the_page(driver, big_session):
    driver.open(big_session)
    run = driver.page.get_attribute(".tree .row[data-id]", "data-id")
    driver.expand(run)
    turn = driver.api(f"/api/sessions/{big_session}/nodes", parent=run, limit=1)["nodes"][0]
    driver.expand(turn["id"])
    total = turn["child_count"]
    assert total > 600  # more than three pages of children
    in_dom = driver.page.locator(".tree .row[data-id]").count()
    assert 2 < in_dom < 80
    # Scrolling to the end pages the rest in; the DOM still holds only what is visible.
    for _ in range(20):
        driver.page.eval_on_selector("#tree", "tree => { tree.scrollTop = tree.scrollHeight; }")
        driver.page.wait_for_timeout(150)
        loaded = driver.page.inner_text("#tree-count")
        if f"{total + 2} loaded" in loaded:
            break
    assert f"{total + 2} loaded" in driver.page.inner_text("#tree-count")
    assert driver.page.locator(".tree .row[data-id]").count() < 80
    driver.page.eval_on_selector("#tree", "tree => { tree.scrollTop = tree.scrollHeight; }")
    last = driver.api(f"/api/sessions/{big_session}/nodes", parent=turn["id"], offset=total - 1, limit=1)["nodes"][0]
    driver.row(last["id"]).wait_for()


def test_keys_move_the_selection_and_open_and_close_nodes(driver, saved_home, demo_rows):
    run = next(row for row in demo_rows.values() if row["parent"] is None)
    children = sorted((row for row in demo_rows.values() if row["parent"] == run["id"]), key=lambda row: row["start_ms"])
    driver.open(saved_home.demo)
    driver.select(run["id"])
    driver.page.focus("#tree")
    driver.page.keyboard.press("ArrowRight")  # opens the run
    driver.row(children[0]["id"]).wait_for()
    driver.page.keyboard.press("ArrowDown")
    driver.page.wait_for_selector(f'#details[data-node="{children[0]["id"]}"]')
    driver.page.keyboard.press("ArrowDown")
    driver.page.wait_for_selector(f'#details[data-node="{children[1]["id"]}"]')
    assert f"node={children[1]['id']}" in driver.page.url
    driver.page.keyboard.press("ArrowLeft")  # a closed child: to its parent
    driver.page.wait_for_selector(f'#details[data-node="{run["id"]}"]')
    driver.page.keyboard.press("ArrowLeft")  # the open run closes
    driver.page.wait_for_function("n => document.querySelectorAll('.tree .row[data-id]').length === n",
                                  arg=sum(row["parent"] is None for row in demo_rows.values()))


def test_arrow_keys_never_scroll_the_tree_sideways(driver, saved_home, demo_rows):
    deepest = max(llm_rows(demo_rows), key=lambda row: row["label"].count("-") + row["label"].count("."))
    driver.page.set_viewport_size({"width": 1300, "height": 900})
    try:
        driver.page.goto(f"{driver.url}/s/{saved_home.demo}?node={deepest['id']}")
        driver.page.wait_for_selector(f'#details[data-node="{deepest["id"]}"]')
        driver.page.focus("#tree")
        # A leaf, then its open parent: Right has nothing to open on the first, the browser must not take it.
        for key in ("ArrowRight", "ArrowRight", "ArrowLeft", "ArrowRight", "ArrowRight", "ArrowLeft", "ArrowLeft"):
            driver.page.keyboard.press(key)
        driver.page.wait_for_timeout(200)
        assert driver.page.eval_on_selector("#tree", "tree => tree.scrollLeft") == 0
        assert driver.page.eval_on_selector("#tree", "tree => tree.scrollWidth <= tree.clientWidth")
    finally:
        driver.page.set_viewport_size({"width": 1400, "height": 900})


def test_deep_rows_keep_their_path_kind_and_name_readable_at_1300_px(driver, saved_home, demo_rows):
    deepest = max(llm_rows(demo_rows), key=lambda row: row["label"].count("-") + row["label"].count("."))
    driver.page.set_viewport_size({"width": 1300, "height": 900})
    try:
        driver.page.goto(f"{driver.url}/s/{saved_home.demo}?node={deepest['id']}")
        driver.page.wait_for_selector(f'#details[data-node="{deepest["id"]}"]')
        label = driver.row(deepest["id"]).locator(".label")
        box = {part: label.locator(f".{part}").bounding_box() for part in ("path", "kind", "name", "agent")}
        cell = label.bounding_box()
        # Path label, kind, name and agent side by side, each whole inside the cell, none over another.
        assert box["path"]["x"] >= cell["x"] and box["agent"]["x"] + box["agent"]["width"] <= cell["x"] + cell["width"] + 0.5
        assert box["path"]["x"] + box["path"]["width"] <= box["kind"]["x"] <= box["name"]["x"]
        assert box["name"]["x"] + box["name"]["width"] <= box["agent"]["x"]
        assert box["name"]["width"] >= 80  # the name's first words show, not just an ellipsis
        assert label.locator(".path").evaluate("e => e.scrollWidth <= e.clientWidth")  # the path label is whole
        assert deepest["label"] in label.get_attribute("title") and deepest["name"] in label.get_attribute("title")
    finally:
        driver.page.set_viewport_size({"width": 1400, "height": 900})


def test_only_llm_attempts_show_a_cost_and_usage(driver, saved_home, demo_rows):
    tool = demo_rows["1-2"]
    driver.open(saved_home.demo)
    driver.reveal(demo_rows, tool["id"])
    driver.select(tool["id"])
    details = driver.page.locator("#details")
    assert details.locator("pre.usage").count() == 0
    assert "Usage and cost" not in details.inner_text() and "unpriced" not in details.inner_text()
    assert details.locator("dt:text-is('cost (self)') + dd").inner_text() == "–"
    assert driver.row(tool["id"]).locator(".cost").inner_text().startswith("– / ")
    # A node with no LLM attempt under it has no cost at all.
    bare = next(row for row in demo_rows.values() if row["kind"] != "llm" and not row["inclusive"]["tokens"]
                and row["inclusive"]["cost_usd"] is None)
    driver.reveal(demo_rows, bare["id"])
    assert driver.row(bare["id"]).locator(".cost").inner_text() == "– / –"
    attempt = next(row for row in llm_rows(demo_rows) if row["status"] == "ok")
    driver.reveal(demo_rows, attempt["id"])
    driver.select(attempt["id"])
    assert details.locator("pre.usage").count() == 1
