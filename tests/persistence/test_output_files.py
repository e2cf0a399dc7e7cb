"""A file written beside the store (--otlp-file, recording(otlp_file=)): refused, in one line, where it cannot be written unharmed."""

from __future__ import annotations

import os

from otel_agents.persistence.output_files import new_file_problem, storage_output_problem
from otel_agents.persistence.paths import Paths


def test_a_new_file_is_refused_when_it_is_a_directory_or_its_directory_is_missing(tmp_path):
    assert new_file_problem(tmp_path / "spans.jsonl") is None
    (tmp_path / "old.jsonl").write_text("")
    assert new_file_problem(tmp_path / "old.jsonl") is None  # appended to
    assert new_file_problem(tmp_path) == f"cannot write {str(tmp_path)!r}: it is a directory"
    missing = tmp_path / "nodir" / "spans.jsonl"
    assert new_file_problem(missing) == (f"cannot write {str(missing)!r}: directory {str(missing.parent)!r} "
                                         "does not exist")


def test_a_new_file_in_a_directory_not_writable_is_refused(tmp_path, monkeypatch):
    # The tests may run as root, whom modes do not stop: the kernel's answer is given instead.
    locked = tmp_path / "locked"
    locked.mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: os.fspath(path) != os.fspath(locked))
    assert new_file_problem(locked / "spans.jsonl") == f"cannot write {str(locked / 'spans.jsonl')!r}: permission denied"
    assert new_file_problem(tmp_path / "spans.jsonl") is None


def test_an_output_in_the_sessions_directory_or_on_a_ledger_is_refused(tmp_path):
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    assert storage_output_problem(tmp_path / "spans.jsonl", paths, "--otlp-file", metrics_beside=True) is None
    inside = storage_output_problem(tmp_path / "sessions" / "x.jsonl", paths, "--otlp-file")
    assert inside.startswith("--otlp-file ") and "is inside the sessions directory" in inside
    assert storage_output_problem(tmp_path / "billing.jsonl", paths, "otlp_file=") == (
        f"otlp_file= {tmp_path / 'billing.jsonl'} is a billing ledger; choose another file")
    shard = tmp_path / "shard.jsonl"
    assert "is a billing ledger" in storage_output_problem(shard, paths, "--output", ledgers=[shard])
