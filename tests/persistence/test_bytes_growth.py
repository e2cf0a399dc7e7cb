"""Bytes written for a session grow linearly with its length, runs included.

Every file counts: events.jsonl and spans.jsonl (append-only, O(1) per record and
span), tree.json.gz and meta.json (every atomic rewrite) and the ledger.
"""

from __future__ import annotations

import pytest

from otel_agents.persistence.recorder import CheckpointPolicy

EVERY_END = CheckpointPolicy(growth=0, min_bytes=0, during_runs=True)  # rewrite the tree at every sub-agent and run end
BOUND = 1.3  # bytes(8R prompts) / bytes(R prompts) / 8


def cafe_script(prompts: int) -> dict:
    """Jack-and-Jill-like: each prompt makes main create a helper who answers, then main sums up;
    every agent falls back to a fixed answer once its turns run out, so any number of prompts works."""
    main = []
    for i in range(prompts):
        main.append({"tool_calls": [{"name": "task", "arguments": {
            "name": f"Guest{i}", "system_prompt": "You are a guest in a cafe. Answer in one line.",
            "user_prompt": f"Guest {i}, what will you order?"}}]})
        main.append({"text": f"Guest {i} ordered.", "reasoning": "The guest answered; I can report it."})
    return {
        "name": f"cafe-{prompts}",
        "root": {"name": "main", "system_prompt": "You host a cafe. Use task to seat guests."},
        "agents": {"main": main, **{f"Guest{i}": [f"A coffee for guest {i}, please."] for i in range(prompts)}},
        "fallback": "Nothing more from me.",
    }


@pytest.fixture
def measured(record, monkeypatch):
    """Run a session; return every byte written to disk for it, counted at the write calls and the files."""
    import otel_agents.persistence.store as store_module

    def run(prompts: int, policy: CheckpointPolicy) -> dict:
        rewritten = []
        real = store_module.atomic_write

        def counting(path, data, **kwargs):
            rewritten.append(len(data))
            return real(path, data, **kwargs)

        monkeypatch.setattr(store_module, "atomic_write", counting)
        recorded = record(cafe_script(prompts), [f"Prompt {i}" for i in range(prompts)],
                          policy=policy, sessions_dir=None, billing_file=None)
        monkeypatch.setattr(store_module, "atomic_write", real)
        store, stats = recorded.store, recorded.recorder.stats
        appended = sum(p.stat().st_size for p in (store.events_path, store.journal_path))
        ledger = recorded.billing_file.stat().st_size
        # The recorder's own accounting agrees with the write calls and the files.
        assert stats.tree_bytes_written + stats.meta_bytes_written == sum(rewritten)
        assert stats.journal_bytes_written == store.journal_path.stat().st_size
        assert len(store.load_tree()["runs"]) == prompts
        recorded.billing_file.unlink()  # the next measurement starts with an empty ledger
        return {"total": appended + sum(rewritten) + ledger, "tree": stats.tree_bytes_written,
                "checkpoints": stats.checkpoints, "journal": stats.journal_bytes_written}

    return run


def test_bytes_written_are_linear_in_the_number_of_runs(measured):
    r = 3
    small = measured(r, CheckpointPolicy())
    large = measured(8 * r, CheckpointPolicy())
    ratio = large["total"] / small["total"] / 8
    print(f"R={r}: {small}; 8R: {large}; ratio/8 = {ratio:.3f}")
    assert ratio <= BOUND, (small, large)
    assert large["checkpoints"] < 8 * r / 2  # run ends no longer each rewrite the tree
    # The journal itself is exactly linear: O(1) lines per span.
    assert large["journal"] / small["journal"] / 8 == pytest.approx(1, abs=0.1)
    # What the bound guards against: one tree rewrite per run (and sub-agent) end is quadratic.
    naive_small = measured(r, EVERY_END)
    naive_large = measured(8 * r, EVERY_END)
    print(f"naive: R={r}: {naive_small}; 8R: {naive_large}; ratio/8 = {naive_large['total'] / naive_small['total'] / 8:.3f}")
    assert naive_large["total"] / naive_small["total"] / 8 > BOUND
    assert naive_large["tree"] / naive_small["tree"] / 8 > 2
