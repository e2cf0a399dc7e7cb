"""Opening saved session directories: events.jsonl, tree.json.gz, damage and fallbacks."""

from __future__ import annotations

import gzip

import pytest

from otel_agents.views import SessionDataError, SessionViewer
from otel_agents.views.loading import find_span, span_nodes

SCRIPT = {
    "name": "views-loading",
    "root": {"name": "main", "system_prompt": "Be brief."},
    "agents": {"main": ["Hello there.\nSecond line."]},
}


async def test_session_dir_round_trip_and_tree_fallback(scripted_session, tmp_path):
    saved = await scripted_session(SCRIPT, ["Hi"])
    path = saved.save(tmp_path / "sessions")
    viewer = SessionViewer.from_session_dir(path)
    assert viewer.session_id == saved.session.id
    assert viewer.records == saved.events
    said = viewer.extract_agent_perspective("main")[-1]
    assert said.kind == "said" and said.ts.endswith("Z") and len(said.ts) == len("2025-01-01T00:00:00.123456789Z")
    chat = saved.chat_spans()[0]
    assert viewer.chat_context(chat.span_id).messages[-1] == {"role": "user", "content": "Hi"}

    # Spans are the state: without events.jsonl the records come from the tree's span events.
    (path / "events.jsonl").unlink()
    from_tree = SessionViewer.from_session_dir(path)
    assert from_tree.records == saved.events
    assert from_tree.chat_context(chat.span_id).messages == viewer.chat_context(chat.span_id).messages


async def test_damaged_files_are_reported_in_one_line(scripted_session, tmp_path):
    saved = await scripted_session(SCRIPT, ["Hi"])
    path = saved.save(tmp_path / "sessions")
    events = path / "events.jsonl"
    good = events.read_bytes()

    # A torn last line (a crash mid-write) is skipped with a warning; the rest is viewable.
    events.write_bytes(good + b'{"message_id": "msg_0000')
    warnings = []
    viewer = SessionViewer.from_session_dir(path, warn=warnings.append)
    assert len(viewer.records) == len(saved.events) and len(warnings) == 1 and "torn" in warnings[0]

    # Damage anywhere else is an error that names the line.
    lines = good.split(b"\n")
    events.write_bytes(b"\n".join([lines[0], b"{not json", *lines[1:]]))
    with pytest.raises(SessionDataError, match=r"events.jsonl:2: not a valid record line"):
        SessionViewer.from_session_dir(path)
    events.write_bytes(good)

    # A transcript entry without a role passes every type the indexes need, but no message can be
    # rebuilt from it: it is refused, naming the line, by the views' fast reader and the cached one.
    import json

    roleless = json.loads(lines[1])
    assert roleless["event_type"] == "transcript_entry"
    del roleless["role"]
    events.write_bytes(b"\n".join([lines[0], json.dumps(roleless).encode(), *lines[2:]]))
    for cache in (None, tmp_path / "cache"):
        with pytest.raises(SessionDataError, match=r"events.jsonl:2: .*role must be one of"):
            SessionViewer.from_session_dir(path, cache_dir=cache)
    events.write_bytes(good)

    (path / "tree.json.gz").write_bytes(b"not gzip at all")
    viewer = SessionViewer.from_session_dir(path)  # views that need no tree still work
    assert viewer.list_agents()[0].name == "main"
    with pytest.raises(SessionDataError, match="tree.json.gz is truncated or corrupt"):
        viewer.chat_context(saved.chat_spans()[0].span_id)
    (path / "tree.json.gz").write_bytes(gzip.compress(b"[1, 2]"))
    with pytest.raises(SessionDataError, match="does not hold a tree payload object"):
        SessionViewer.from_session_dir(path).chat_context("00")

    events.unlink()
    (path / "tree.json.gz").unlink()
    with pytest.raises(SessionDataError, match="holds neither events.jsonl nor tree.json.gz"):
        SessionViewer.from_session_dir(path)
    with pytest.raises(SessionDataError, match="is not a session directory"):
        SessionViewer.from_session_dir(path / "missing")


@pytest.mark.parametrize("kind, field, value", [
    ("agent_created", "name", 1), ("agent_created", "parent", ["agent_001"]), ("agent_created", "language_model", {}),
    ("transcript_entry", "substance", []), ("agent_created", "cause", [1]),
])
async def test_a_record_of_the_wrong_shape_is_a_clear_error(scripted_session, tmp_path, kind, field, value):
    """Every view reads the agents and the links between records first: the fast reader checks them."""
    import json

    saved = await scripted_session(SCRIPT, ["Hi"])
    path = saved.save(tmp_path / "sessions")
    events = path / "events.jsonl"
    lines = events.read_text().splitlines()
    number = next(n for n, line in enumerate(lines) if json.loads(line)["event_type"] == kind)
    lines[number] = json.dumps({**json.loads(lines[number]), field: value})
    events.write_text("\n".join(lines) + "\n")
    for cache_dir in (None, tmp_path / "cache"):
        with pytest.raises(SessionDataError, match=rf"events.jsonl:{number + 1}: not a valid record line: .*{field}"):
            SessionViewer.from_session_dir(path, cache_dir=cache_dir)


def test_span_nodes_follow_the_trees_shape():
    def op(span_id, *children, **more):
        return {"span_id": span_id, "attributes": {"k": span_id}, "ops": list(children), **more}

    sub_agent = {"span_id": "dddddddddddddddd", "attributes": {}, "turns": [{"span_id": "eeeeeeeeeeeeeeee",
                                                                            "attributes": {}, "ops": [op("ffffffffffffffff")]}]}
    document = {
        "version": 1,
        "session": {
            "runs": [{"span_id": "aaaaaaaaaaaaaaaa", "attributes": {},
                      "turns": [{"span_id": "1111111111111111", "attributes": {},
                                 "ops": [op("BBBBBBBBBBBBBBBB", op("cccccccccccccccc", session=sub_agent))]}]}],
            "ops": [op("9999999999999999")],
            "agents": {"agent_001": {"span_id": "not-a-node", "attributes": {}}},  # not where spans are
        },
        "meta": {"span_id": "not-a-node-either", "attributes": {}},
    }
    assert find_span(document, "bbbbbbbbbbbbbbbb")["attributes"] == {"k": "BBBBBBBBBBBBBBBB"}
    assert find_span(document, "not-a-node") is None and find_span(document, "not-a-node-either") is None
    assert [n["span_id"] for n in span_nodes(document)] == [
        "aaaaaaaaaaaaaaaa", "1111111111111111", "BBBBBBBBBBBBBBBB", "cccccccccccccccc", "dddddddddddddddd",
        "eeeeeeeeeeeeeeee", "ffffffffffffffff", "9999999999999999"]
    assert [n["span_id"] for n in span_nodes(document["session"])] == [n["span_id"] for n in span_nodes(document)]
    deep = op("0000000000000001")
    for _ in range(400):  # as deep as orjson decodes (1,024 levels of JSON)
        deep = op("0000000000000000", deep)
    assert find_span({"runs": [], "ops": [deep]}, "0000000000000001") is not None


async def test_a_path_given_to_the_constructor_opens_the_session_directory(scripted_session, tmp_path):
    """Seed 001 writes SessionViewer(session_file): a path failed with 'str' object has no attribute 'get'."""
    saved = await scripted_session(SCRIPT, ["Hi"])
    path = saved.save(tmp_path / "sessions")
    for given in (path, str(path), path / "events.jsonl"):
        viewer = SessionViewer(given)
        assert viewer.session_id == saved.session.id and viewer.records == saved.events
    with pytest.raises(SessionDataError, match="is not a session directory"):
        SessionViewer(tmp_path / "nowhere")
    with pytest.raises(TypeError, match="from_session_dir"):
        SessionViewer(path, session_id="x")
    import otel_agents

    assert otel_agents.SessionViewer is SessionViewer


def test_an_events_jsonl_cut_short_gives_way_to_the_checkpoint(home, monkeypatch, tmp_path):
    """events.jsonl truncated: the views read it alone and showed "(nothing)" without a word; they now show
    the checkpoint's records, with one warning, cached or not. A closed session whose checkpoint mark holds
    is not decoded for the check (its quick path)."""
    from click.testing import CliRunner

    from otel_agents.cli import cli
    from otel_agents.views import loading

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    result = CliRunner().invoke(cli, ["run", "--script", "jack-and-jill", "Create Jack and Jill"])
    assert result.exit_code == 0, result.stderr
    (directory,) = (home / "sessions").iterdir()
    assert loading.checkpoint_to_compare(directory) is None  # the mark vouches: tree.json.gz not decoded
    whole = SessionViewer.from_session_dir(directory).records
    (directory / "events.jsonl").write_bytes(b"")
    for cache_dir in (None, tmp_path / "cache"):
        said: list[str] = []
        viewer = SessionViewer.from_session_dir(directory, said.append, cache_dir=cache_dir)
        assert [r["message_id"] for r in viewer.records] == [r["message_id"] for r in whole]
        assert len(viewer.list_agents()) == 5
        (warning,) = said
        assert f"lacks {len(whole)} records the checkpoint (tree.json.gz) holds" in warning
