"""Ownership: the directory a writer takes, made when asked as every owner-only directory is."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from otel_agents.persistence.ownership import SessionBusy, take


def test_taking_a_new_directory_makes_it_and_every_missing_parent_0700(tmp_path):
    previous = os.umask(0o022)  # the common umask: mkdir(parents=True, mode=0o700) left the parents 0755
    try:
        with take(tmp_path / "new" / "a" / "b", create=True):
            pass
    finally:
        os.umask(previous)
    made = [tmp_path / "new", tmp_path / "new" / "a", tmp_path / "new" / "a" / "b"]
    assert [stat.S_IMODE(p.stat().st_mode) for p in made] == [0o700] * 3


def test_a_session_held_by_this_process_says_so_and_one_held_by_another_names_its_pid(tmp_path):
    directory = tmp_path / "s1"
    with take(directory, create=True):
        with pytest.raises(SessionBusy, match=rf"^session s1 is being written by this process \(pid {os.getpid()}\)$"):
            take(directory)
    script = ("import sys, time; from pathlib import Path; from otel_agents.persistence.ownership import take\n"
              "held = take(Path(sys.argv[1])); print('held', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", script, str(directory)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionBusy, match=f"^session s1 is being written by pid {holder.pid} "):
            take(directory)
    finally:
        holder.kill()
        holder.wait()
