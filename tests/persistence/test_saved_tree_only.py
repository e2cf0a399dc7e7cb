"""``load_saved(tree_only=True)``: the same tree and meta as the full read, without reading events.jsonl it need not."""

from __future__ import annotations

import pytest

from otel_agents.persistence.saved import SOURCE_CHECKPOINT, SOURCE_JOURNAL, SOURCE_TREE, load_saved


@pytest.fixture
def closed(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion"])
    return recorded.store


def both(store):
    """The full read and the tree-only read, each with the warnings it gave."""
    full_warnings: list[str] = []
    tree_warnings: list[str] = []
    full = load_saved(store.directory, full_warnings.append)
    tree_only = load_saved(store.directory, tree_warnings.append, tree_only=True)
    return full, full_warnings, tree_only, tree_warnings


def test_without_a_journal_both_give_the_saved_tree_and_the_tree_only_read_skips_the_events(closed):
    store = closed
    store.journal_path.unlink()
    full, full_warnings, tree_only, tree_warnings = both(store)
    assert full.source == tree_only.source == SOURCE_TREE
    assert tree_only.tree == full.tree == store.load_tree()
    assert tree_only.meta == full.meta and tree_only.live == full.live is False
    assert tree_only.notes == full.notes and tree_warnings == full_warnings  # said the same way
    assert full.records and tree_only.records == []
    # events.jsonl is not even opened: where it cannot be read, only the full read notices.
    store.events_path.unlink()
    store.events_path.mkdir()
    full, _, tree_only, _ = both(store)
    assert any("events.jsonl" in note for note in full.notes)
    assert not any("events.jsonl" in note for note in tree_only.notes)
    assert tree_only.tree == full.tree


def test_with_a_journal_or_a_current_checkpoint_the_tree_is_the_full_read_s(closed):
    store = closed
    full, _, tree_only, _ = both(store)
    assert full.source == tree_only.source == SOURCE_CHECKPOINT
    assert tree_only.tree == full.tree and tree_only.records == [] and full.records
    store.meta_path.write_text(store.meta_path.read_text().replace('"checkpoint"', '"was_checkpoint"'))
    full, _, tree_only, _ = both(store)
    assert full.source == tree_only.source == SOURCE_JOURNAL
    assert tree_only.tree == full.tree


def test_an_unreadable_tree_falls_back_as_the_full_read_does(closed):
    store = closed
    store.journal_path.unlink()
    store.tree_path.write_bytes(b"not gzip")
    full, full_warnings, tree_only, tree_warnings = both(store)
    assert tree_only.source == full.source and tree_only.records == full.records and tree_warnings == full_warnings
