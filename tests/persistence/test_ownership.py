"""Ownership: the directory a writer takes, made when asked as every owner-only directory is."""

from __future__ import annotations

import os
import stat

from otel_agents.persistence.ownership import take


def test_taking_a_new_directory_makes_it_and_every_missing_parent_0700(tmp_path):
    previous = os.umask(0o022)  # the common umask: mkdir(parents=True, mode=0o700) left the parents 0755
    try:
        with take(tmp_path / "new" / "a" / "b", create=True):
            pass
    finally:
        os.umask(previous)
    made = [tmp_path / "new", tmp_path / "new" / "a", tmp_path / "new" / "a" / "b"]
    assert [stat.S_IMODE(p.stat().st_mode) for p in made] == [0o700] * 3
