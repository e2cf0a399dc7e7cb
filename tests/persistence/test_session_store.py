"""Session directory files: tree payload versioning, clear errors for damage, meta and listing."""

from __future__ import annotations

import gzip
import os

import orjson
import pytest

from otel_agents.persistence.ownership import take
from otel_agents.persistence.store import (
    TREE_VERSION, SessionStore, StoreError, check_file_writable, list_sessions, make_payload,
)
from otel_agents.persistence.session_meta import effective_status, make_meta
from otel_agents.persistence.tree import assemble_session


@pytest.fixture
def store(tmp_path):
    return SessionStore.create(tmp_path / "sessions", "20250101-000000-abcdef")


def test_payload_round_trip_is_versioned(store):
    tree = assemble_session(store.session_id, [], [])
    written = store.save_tree(make_payload(tree, {"title": "t"}))
    assert written == store.tree_path.stat().st_size
    payload = store.load_payload()
    assert payload["version"] == TREE_VERSION == 1
    assert payload["session"] == tree and payload["meta"] == {"title": "t"}


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda data: data[: len(data) // 2], "truncated or corrupt"),
        (lambda data: b"not gzip at all", "truncated or corrupt"),
        (lambda data: gzip.compress(b"{not json"), "valid JSON"),
        (lambda data: gzip.compress(b"[1, 2]"), "payload object"),
        (lambda data: gzip.compress(orjson.dumps({"version": 99, "session": {}})), "version 99"),
        (lambda data: gzip.compress(orjson.dumps({"version": 1})), "no session"),
    ],
)
def test_damaged_tree_is_a_one_line_error(store, damage, message):
    store.save_tree(make_payload(assemble_session("x", [], []), {}))
    store.tree_path.write_bytes(damage(store.tree_path.read_bytes()))
    with pytest.raises(StoreError, match=message) as info:
        store.load_tree()
    assert "\n" not in str(info.value) and str(store.tree_path) in str(info.value)


def test_missing_tree_and_meta_are_errors(store):
    with pytest.raises(StoreError, match="does not exist"):
        store.load_tree()
    with pytest.raises(StoreError, match="does not exist"):
        store.read_meta()
    store.meta_path.write_text("{broken")
    with pytest.raises(StoreError, match="not valid JSON"):
        store.read_meta()


def test_create_refuses_an_unwritable_place(tmp_path):
    blocker = tmp_path / "sessions"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(StoreError, match="cannot write session directory") as info:
        SessionStore.create(blocker, "s")
    assert "\n" not in str(info.value) and f"{blocker} is a file, not a directory" in str(info.value)
    with pytest.raises(StoreError, match="cannot write"):
        check_file_writable(blocker / "billing.jsonl")


def test_check_file_writable_changes_nothing(tmp_path):
    target = tmp_path / "home" / "billing.jsonl"
    check_file_writable(target)
    assert not target.exists() and list(target.parent.iterdir()) == []
    target.write_text("line\n")
    check_file_writable(target)
    assert target.read_text() == "line\n"


def test_meta_summarises_and_lists(tmp_path):
    older = SessionStore.create(tmp_path, "a-older")
    newer = SessionStore.create(tmp_path, "b-newer")
    broken = SessionStore.create(tmp_path, "c-broken")
    (tmp_path / "..escape").mkdir()  # not a valid session id: ignored
    tree = assemble_session("a-older", [], [])
    older.write_meta(make_meta(tree, created_ns=2_000_000_000_000_000_000, updated_ns=2_000_000_000_000_000_000))
    newer.write_meta(make_meta(assemble_session("b-newer", [], []), created_ns=1_000_000_000_000_000_000,
                               updated_ns=1_000_000_000_000_000_000, running=True))
    broken.meta_path.write_text("[]")
    listed = list_sessions(tmp_path)
    assert [item.session_id for item in listed] == ["c-broken", "b-newer", "a-older"]
    assert listed[0].meta is None and "object" in listed[0].problem
    assert listed[1].meta["writer"]["pid"] == os.getpid()
    with take(newer.directory):  # its owner lives: running
        assert effective_status(listed[1].meta, newer.directory) == "running"
    assert effective_status(listed[2].meta, older.directory) == "new"
    assert effective_status(listed[1].meta, newer.directory) == "interrupted"  # no owner any more
