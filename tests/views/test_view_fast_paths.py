"""The views' fast paths agree with the plain ones.

- ``views.cache``: a saved index read back (records parsed line by line on first read)
  gives exactly what parsing the whole file gives, and is used only when that is sure;
- ``index._order``'s string check gives the order the numeric sort gives;
- ``render``'s shared JSON encoder writes what ``json.dumps(v, ensure_ascii=False)`` writes.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otel_agents.cli import cli
from otel_agents.tracing.records import message_id_number
from otel_agents.views import SessionViewer, ViewError, cache, jsonout
from otel_agents.views import render as R
from otel_agents.views.cache import LineRecords
from otel_agents.views.index import _order
from support.seed_examples import seed_records

# --------------------------------------------------------------------------- every view, rendered


def _outcome(view) -> Any:
    try:
        return view()
    except ViewError as exc:
        return ("refused", type(exc).__name__, str(exc))


def everything(viewer: SessionViewer) -> dict[str, Any]:
    """Every view of every agent and message, as text and JSON (refusals included)."""
    out: dict[str, Any] = {}
    agents = viewer.list_agents()
    ids = [a.agent_id for a in agents]
    out["agents"] = (R.render_agents(agents), jsonout.dumps(jsonout.agents_json(viewer.session_id, agents)))
    for agent in agents:
        lines = viewer.transcript(agent.agent_id)
        out[f"transcript {agent.agent_id}"] = (
            R.render_transcript(lines), jsonout.dumps(jsonout.transcript_json(agent, lines))
        )
        items = viewer.extract_agent_perspective(agent.agent_id)
        out[f"perspective {agent.agent_id}"] = (
            R.render_perspective(items), jsonout.dumps(jsonout.perspective_json(agent, items))
        )
        for name in (agent.name, agent.path):
            if name:
                out[f"resolve {name}"] = _outcome(lambda name=name: viewer.resolve_agent(name))
    selections = [ids, *([a] for a in ids), *([a, b] for a in ids[:4] for b in ids[:4] if a != b)]
    for chosen in selections:
        items = viewer.extract_dialog(chosen)
        out[f"dialog {chosen}"] = (R.render_dialog(items), jsonout.dumps(jsonout.dialog_json(
            [viewer.agent(a) for a in chosen], items)))
    message_ids = [r["message_id"] for r in viewer.records]
    for message_id in [*message_ids, "msg_999999", "nope"]:
        steps = _outcome(lambda: viewer.trace_message_flow(message_id))
        out[f"trace {message_id}"] = steps if isinstance(steps, tuple) else (
            R.render_trace(steps), jsonout.dumps(jsonout.trace_json(message_id, steps)))
        original = _outcome(lambda: viewer.step(message_id))
        if not isinstance(original, tuple):
            refs = viewer.trace_content_references(message_id)
            out[f"heard {message_id}"] = (
                R.render_references(original, refs), jsonout.dumps(jsonout.heard_json(original, refs))
            )
        for agent_id in ids[:3]:
            after = _outcome(lambda: viewer.get_transcript(agent_id, after=message_id))
            out[f"after {agent_id} {message_id}"] = after
    out["causality"] = viewer.build_causality_index()
    out["records"] = viewer.records
    return out


# --------------------------------------------------------------------------- sessions with unusual records


def write_events(directory: Path, records: list[dict[str, Any]], *, spaced: bool = False) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    encode = (lambda r: json.dumps(r).encode()) if spaced else orjson.dumps
    (directory / "events.jsonl").write_bytes(b"".join(encode(r) + b"\n" for r in records))
    return directory


def random_session(seed: int, size: int, *, shuffle: bool, replay: bool, foreign: bool, ownerless: bool):
    """A multi-agent stream: creations, utterances heard by others (substance), tool calls and results,
    pieces of text, truncations, links to messages that are not in the session."""
    rng = random.Random(seed)
    agents = [f"agent_{i:03d}" for i in range(1, rng.randint(2, 6))]
    records: list[dict[str, Any]] = []

    def new_id() -> str:
        n = len(records) + 1
        return f"m-{rng.randint(0, 99)}-{n}" if foreign and rng.random() < 0.3 else f"msg_{n:06d}"

    for i, agent in enumerate(agents):
        created = {"message_id": new_id(), "event_type": "agent_created", "agent_id": agent,
                   "name": rng.choice(["Jack", "Jill", f"A{i}"]), "language_model": "m"}
        if i and rng.random() < 0.5:
            created["parent"] = agents[0]
        records.append(created)
        if rng.random() < 0.8:
            records.append({"message_id": new_id(), "event_type": "transcript_entry", "agent_id": agent,
                            "role": "system", "content": f"You are {agent}."})
    calls: dict[str, list[str]] = {a: [] for a in agents}
    while len(records) < size:
        agent = rng.choice(agents)
        earlier = rng.choice(records)["message_id"]
        kind = rng.random()
        record: dict[str, Any] = {"message_id": new_id(), "event_type": "transcript_entry", "agent_id": agent}
        if kind < 0.3:
            record.update(role="user", content=f"heard {len(records)}\nline two")
            if rng.random() < 0.7:
                record["substance"] = rng.choice([earlier, earlier, "msg_999999"])
            if rng.random() < 0.1:
                record["source"] = rng.choice(["external", "system"])
        elif kind < 0.5:
            record.update(role="assistant", content=f"said {len(records)}")
            if rng.random() < 0.3:
                record["reasoning_content"] = "because"
        elif kind < 0.65:
            call_id = f"call_{rng.randint(0, 5)}"
            calls[agent].append(call_id)
            arguments = rng.choice(['{"name": "Jack", "n": 2}', "not json", "", '["x"]'])
            record.update(role="assistant", content=rng.choice([None, "thinking aloud"]), tool_calls=[
                {"id": call_id, "type": "function", "function": {"name": rng.choice(["task", "discuss"]),
                                                                 "arguments": arguments}}])
        elif kind < 0.8:
            record.update(role="tool", tool_call_id=rng.choice(calls[agent] or ["call_none"]), content="done")
            if rng.random() < 0.3:
                record["name"] = "task"
        elif kind < 0.9:
            record = {"message_id": record["message_id"], "event_type": "piece_of_text", "agent_id": agent,
                      "content": "a piece", "cause": rng.choice([earlier, [earlier, "msg_999998"]])}
        else:
            record = {"message_id": record["message_id"], "event_type": "transcript_truncated", "agent_id": agent,
                      "keep": rng.randint(0, 4)}
        records.append(record)
    if replay:
        records.insert(rng.randrange(len(records)), dict(rng.choice(records), content="a replayed copy"))
    if shuffle:
        i, j = rng.randrange(len(records)), rng.randrange(len(records))
        records[i], records[j] = records[j], records[i]
    if ownerless:
        del rng.choice([r for r in records if r["event_type"] == "piece_of_text"] or records)["agent_id"]
    return records


@pytest.fixture
def no_minimum(monkeypatch):
    """Cache sessions of any size (the real minimum keeps small files out of the cache)."""
    monkeypatch.setattr(cache, "MIN_LINES", 0)


def opened_three_ways(directory: Path, cache_dir: Path) -> tuple[SessionViewer, SessionViewer, SessionViewer]:
    plain = SessionViewer.from_session_dir(directory)
    first = SessionViewer.from_session_dir(directory, cache_dir=cache_dir)  # reads the file, may save
    second = SessionViewer.from_session_dir(directory, cache_dir=cache_dir)  # may use what was saved
    return plain, first, second


def from_cache(viewer: SessionViewer) -> bool:
    return isinstance(viewer._index.rows, LineRecords)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10**6), size=st.integers(1, 70), shuffle=st.booleans(), replay=st.booleans(),
    foreign=st.booleans(), ownerless=st.booleans(), spaced=st.booleans(),
)
def test_cached_index_gives_every_view_exactly(tmp_path_factory, no_minimum, seed, size, shuffle, replay, foreign,
                                               ownerless, spaced):
    root = tmp_path_factory.mktemp("s")
    records = random_session(seed, size, shuffle=shuffle, replay=replay, foreign=foreign, ownerless=ownerless)
    directory = write_events(root / "session", records, spaced=spaced)
    try:
        plain, first, second = opened_three_ways(directory, root / "cache")
    except ViewError as exc:  # e.g. an ownerless transcript entry: the strict reader refuses the file
        assert "not a valid record line" in str(exc)
        with pytest.raises(ViewError, match="not a valid record line"):
            SessionViewer.from_session_dir(directory, cache_dir=root / "cache")
        return
    expected = everything(plain)
    assert everything(first) == expected
    assert everything(second) == expected
    # Saved only when record i is line i (nothing replayed, moved or dropped) and every line is plain.
    ids = [r["message_id"] for r in records]
    in_order = ids == [r["message_id"] for r in plain.records]
    assert from_cache(second) == (in_order and not ownerless)
    assert not from_cache(first)


def test_seed_examples_and_a_realistic_session_through_the_cache(tmp_path, no_minimum):
    for number in (1, 2, 3, 4):
        directory = write_events(tmp_path / f"seed-{number}", seed_records(number))
        plain, _, second = opened_three_ways(directory, tmp_path / "cache")
        assert everything(second) == everything(plain)
    # Many agents with interleaved entries, hooks, truncations: every agent, every message.
    records = random_session(11, 600, shuffle=False, replay=False, foreign=False, ownerless=False)
    plain, _, second = opened_three_ways(write_events(tmp_path / "big", records), tmp_path / "cache")
    assert from_cache(second) and everything(second) == everything(plain)


def test_the_cache_is_used_only_while_the_file_is_unchanged(tmp_path, no_minimum):
    records = random_session(5, 40, shuffle=False, replay=False, foreign=False, ownerless=False)
    directory = write_events(tmp_path / "s", records)
    events, cache_dir = directory / "events.jsonl", tmp_path / "cache"
    SessionViewer.from_session_dir(directory, cache_dir=cache_dir)
    assert from_cache(SessionViewer.from_session_dir(directory, cache_dir=cache_dir))

    # Appended (a live session): the new record is seen, and the index saved again.
    extra = {"message_id": "msg_000041", "event_type": "transcript_entry", "agent_id": "agent_001",
             "role": "user", "content": "late"}
    with events.open("ab") as out:
        out.write(orjson.dumps(extra) + b"\n")
    viewer = SessionViewer.from_session_dir(directory, cache_dir=cache_dir)
    assert not from_cache(viewer) and viewer.records[-1] == extra
    assert from_cache(SessionViewer.from_session_dir(directory, cache_dir=cache_dir))

    # Rewritten with the same size (one character changed), then given back its old mtime.
    stat = events.stat()
    data = events.read_bytes()
    events.write_bytes(data.replace(b'"late"', b'"LATE"'))
    os.utime(events, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    viewer = SessionViewer.from_session_dir(directory, cache_dir=cache_dir)
    assert not from_cache(viewer) and viewer.records[-1]["content"] == "LATE"


def test_a_damaged_or_foreign_cache_file_is_ignored(tmp_path, no_minimum):
    records = random_session(9, 50, shuffle=False, replay=False, foreign=False, ownerless=False)
    directory = write_events(tmp_path / "s", records)
    cache_dir = tmp_path / "cache"
    plain = everything(SessionViewer.from_session_dir(directory))
    SessionViewer.from_session_dir(directory, cache_dir=cache_dir)
    (saved,) = cache_dir.iterdir()
    good = saved.read_bytes()
    for damaged in (good[:-9], good[:-9] + b"\x00" * 9, good.replace(b'"format":1', b'"format":7'), b"", b"{}\n"):
        saved.write_bytes(damaged)
        viewer = SessionViewer.from_session_dir(directory, cache_dir=cache_dir)
        assert not from_cache(viewer) and everything(viewer) == plain
        assert saved.read_bytes() == good  # the plain read saved a good copy again

    # A cache directory that cannot be written is no obstacle either.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be")
    assert everything(SessionViewer.from_session_dir(directory, cache_dir=blocked)) == plain


def test_damaged_and_torn_events_files_read_as_before_and_are_never_cached(tmp_path, no_minimum):
    records = random_session(3, 30, shuffle=False, replay=False, foreign=False, ownerless=False)
    directory = write_events(tmp_path / "s", records)
    events, cache_dir = directory / "events.jsonl", tmp_path / "cache"
    good = events.read_bytes()
    events.write_bytes(good + b'{"message_id": "msg_0000')  # torn last line: skipped with a warning
    for _ in range(2):
        warnings: list[str] = []
        viewer = SessionViewer.from_session_dir(directory, warn=warnings.append, cache_dir=cache_dir)
        assert len(warnings) == 1 and "torn" in warnings[0] and not from_cache(viewer)
    lines = good.split(b"\n")
    events.write_bytes(b"\n".join([lines[0], b"{not json", *lines[1:]]))
    for _ in range(2):
        with pytest.raises(ViewError, match=r"events.jsonl:2: not a valid record line"):
            SessionViewer.from_session_dir(directory, cache_dir=cache_dir)
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_small_files_are_not_cached_and_old_cache_files_are_pruned(tmp_path, monkeypatch):
    records = random_session(1, 30, shuffle=False, replay=False, foreign=False, ownerless=False)
    cache_dir = tmp_path / "cache"
    SessionViewer.from_session_dir(write_events(tmp_path / "small", records), cache_dir=cache_dir)
    assert not cache_dir.exists()  # below cache.MIN_LINES: nothing written at all
    monkeypatch.setattr(cache, "MIN_LINES", 0)
    monkeypatch.setattr(cache, "MAX_FILES", 3)
    cache_dir.mkdir()
    old, fresh = cache_dir / ".killed-writer.tmp", cache_dir / ".writing-now.tmp"
    old.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(old, ns=(0, 0))
    for number in range(5):
        SessionViewer.from_session_dir(write_events(tmp_path / f"s{number}", records), cache_dir=cache_dir)
    assert len(list(cache_dir.glob(f"*{cache.SUFFIX}"))) == 3
    assert not old.exists() and fresh.exists()


def test_cli_views_save_the_index_under_the_home_directory_only(tmp_path, no_minimum):
    records = random_session(21, 80, shuffle=False, replay=False, foreign=False, ownerless=False)
    directory = write_events(tmp_path / "sessions" / "20260101-000000-abcdef", records)
    home = tmp_path / "home"
    before = sorted(p.name for p in directory.iterdir())
    commands = [["agents"], ["perspective", "agent_001"], ["dialog", "agent_001", "agent_002"],
                ["trace", records[-1]["message_id"]], ["transcript", "agent_002", "--json"]]

    def run(args: list[str], home: Path) -> tuple[int, str]:
        result = CliRunner().invoke(cli, ["view", str(directory), *args], env={"OTEL_AGENTS_HOME": str(home)})
        return result.exit_code, result.output

    unwritable = tmp_path / "not-a-directory"
    unwritable.write_text("")
    plain = [run(c, unwritable) for c in commands]  # no cache can be saved: every view reads the file
    assert all(code == 0 for code, _ in plain)
    assert [run(c, home) for c in commands] == plain  # the first saves the index; the rest read it
    assert list((home / "cache" / "views").glob(f"*{cache.SUFFIX}"))
    assert [run(c, home) for c in commands] == plain
    assert sorted(p.name for p in directory.iterdir()) == before  # the session directory is never written


# --------------------------------------------------------------------------- message-id order


def reference_order(ids: list[Any]) -> list[int]:
    """The numeric order as the viewer has always computed it (file order for foreign ids)."""
    try:
        numbers = [message_id_number(i) for i in ids]
    except (ValueError, IndexError, TypeError, AttributeError):
        return list(range(len(ids)))
    return sorted(range(len(ids)), key=numbers.__getitem__)


message_ids = st.one_of(
    st.integers(0, 10**6).map(lambda n: f"msg_{n:06d}"),
    st.integers(0, 10**4).map(lambda n: f"msg_{n}"),  # variable width: "msg_9" > "msg_10" as strings
    st.integers(0, 999).map(lambda n: f"x_y_{n:03d}"),
    st.sampled_from(["msg_\u0663", "msg_+7", "msg_ 8", "msg_1\nmsg_2", "nounderscore", "msg_", "a_b-1", 7]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(message_ids, max_size=12), st.booleans())
@example(["a_1", "a_2\na_0"], False)  # increasing as strings and aligned as lines, but numbers 1 > 0
@example(["msg_9", "msg_10"], False)
def test_order_check_agrees_with_the_numeric_sort(ids, sort_first):
    if sort_first:  # mostly-increasing lists are where the shortcut applies
        ids = sorted(ids, key=lambda i: (type(i).__name__, i))
    records = [{"message_id": i} for i in ids]
    ordered, ordered_ids = _order(records, ids)
    assert [r["message_id"] for r in ordered] == ordered_ids
    assert [id(r) for r in ordered] == [id(records[i]) for i in reference_order(ids)]


# --------------------------------------------------------------------------- rendering


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_tool_arguments_render_as_json_dumps_would(arguments):
    raw = json.dumps(arguments)
    expected = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in json.loads(raw).items())
    assert R.format_arguments(raw) == expected


def test_per_agent_facts_follow_the_first_record_and_skip_ownerless_entries():
    """Facts the one-pass layout and the per-agent replay keep, as the single pass always kept them."""
    records = [
        {"message_id": "msg_000001", "event_type": "agent_created", "agent_id": "a", "name": "A"},
        {"message_id": "msg_000002", "event_type": "agent_created", "agent_id": "a", "name": "again"},
        {"message_id": "msg_000003", "event_type": "transcript_entry", "agent_id": "a", "role": "system",
         "content": "first"},
        {"message_id": "msg_000004", "event_type": "transcript_entry", "agent_id": "a", "role": "system",
         "content": "second"},
        {"message_id": "msg_000005", "event_type": "piece_of_text", "content": "said by nobody"},
        {"message_id": "msg_000006", "event_type": "transcript_entry", "role": "user", "content": "x",
         "substance": "msg_000005"},
        {"message_id": "msg_000007", "event_type": "transcript_entry", "agent_id": "a", "role": "user", "content": "y",
         "substance": "msg_000005"},
    ]
    viewer = SessionViewer(records)
    (agent,) = viewer.list_agents()
    assert (agent.name, agent.system_prompt, agent.entries, agent.created_by) == ("A", "first", 3, "msg_000001")
    assert [r.message_id for r in viewer.trace_content_references("msg_000005")] == ["msg_000007"]


def test_file_names_are_the_persistence_layers():
    from otel_agents.persistence.journal import JOURNAL_FILE
    from otel_agents.persistence.store import TREE_FILE
    from otel_agents.views.loading import JOURNAL_FILE as VIEWS_JOURNAL_FILE
    from otel_agents.views.loading import TREE_FILE as VIEWS_TREE_FILE

    assert VIEWS_TREE_FILE == TREE_FILE
    assert VIEWS_JOURNAL_FILE == JOURNAL_FILE


def test_file_stamps_are_the_checkpoint_marks(tmp_path):
    """The views compare meta.json's checkpoint mark with their own stamps of the files (without importing
    session_meta on their fast path): both must stamp a file, and a missing one, alike."""
    from otel_agents.persistence import session_meta
    from otel_agents.views import loading

    present = tmp_path / "events.jsonl"
    present.write_bytes(b"{}\n")
    for path in (present, tmp_path / "missing.jsonl"):
        assert loading._stamp(path) == session_meta._stamp(path)
