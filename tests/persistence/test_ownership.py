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


HOLD = ("import sys, time; from pathlib import Path; from otel_agents.persistence.ownership import take\n"
        "held = take(Path(sys.argv[1]), announce=False); print('held', flush=True)\n"
        "time.sleep(float(sys.argv[2])); held.announce(); print('announced', flush=True); time.sleep(30)")


def _holder(directory, announce_after: float) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(directory), str(announce_after)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_writer_that_takes_the_lock_and_names_itself_a_moment_later_is_named(tmp_path):
    # A resume holds the lock while it loads the session and names itself only when it starts writing:
    # a second writer refused in between must not be told "another process", nor an earlier holder's pid.
    directory = tmp_path / "s1"
    with take(directory, create=True):
        pass  # an earlier writer, announced, gone
    holder = _holder(directory, announce_after=1.0)
    try:
        with pytest.raises(SessionBusy, match=f"^session s1 is being written by pid {holder.pid} "):
            take(directory)
    finally:
        holder.kill()
        holder.wait()


def test_a_holder_that_let_go_but_lives_on_is_never_named(tmp_path):
    # A program that closed its session and went on running is not the writer of the next holder's time.
    directory = tmp_path / "s1"
    earlier = take(directory, create=True)
    earlier.release()  # this test's process lives on
    holder = _holder(directory, announce_after=30)  # holds, never names itself within the test
    try:
        with pytest.raises(SessionBusy) as refused:
            take(directory)
        assert str(refused.value) == "session s1 is being written by another process"
        assert str(os.getpid()) not in str(refused.value)
    finally:
        holder.kill()
        holder.wait()
