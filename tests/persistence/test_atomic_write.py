"""Atomic tree writes: a process killed between the temporary write and the rename
leaves the previous tree readable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from otel_agents.persistence.atomic import atomic_write, remove_stale_temps
from otel_agents.persistence.store import SessionStore, make_payload

CRASHING_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from otel_agents.persistence.store import SessionStore, make_payload

    store = SessionStore(Path(sys.argv[1]))
    big = {"id": "s", "runs": [], "filler": os.urandom(50000).hex()}

    def die(temp):
        # The temporary file is complete and synced; the rename has not happened.
        print(temp, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    store.save_tree(make_payload(big, {"title": "second"}), before_rename=die)
    print("not reached", flush=True)
    """
)


def test_killed_between_write_and_rename_leaves_previous_tree(tmp_path):
    store = SessionStore.create(tmp_path / "sessions", "s-1")
    first = {"id": "s-1", "runs": [], "marker": "first"}
    store.save_tree(make_payload(first, {"title": "first"}))
    before = store.tree_path.read_bytes()

    proc = subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(store.directory)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    temp = proc.stdout.strip()
    assert temp and "not reached" not in proc.stdout
    assert os.path.exists(temp), "the killed writer's temporary file is left behind"
    assert os.path.getsize(temp) > 1000

    # The previous tree is intact and loads.
    assert store.tree_path.read_bytes() == before
    assert store.load_payload()["session"]["marker"] == "first"
    # Re-opening the session removes the stale temporary file; the tree stays.
    SessionStore.create(tmp_path / "sessions", "s-1")
    assert not os.path.exists(temp)
    assert store.load_tree()["marker"] == "first"


def test_failure_before_rename_keeps_old_file_and_removes_temp(tmp_path):
    target = tmp_path / "file.bin"
    atomic_write(target, b"old")

    def fail(temp):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        atomic_write(target, b"new" * 1000, before_rename=fail)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.bin"]


def test_atomic_write_replaces_and_counts_bytes(tmp_path):
    target = tmp_path / "t.json"
    assert atomic_write(target, b"12345") == 5
    assert atomic_write(target, b"abc") == 3
    assert target.read_bytes() == b"abc"
    # Owner-only whatever the umask (issue 16 item 12: sessions keep what models were sent).
    for mask in (0o000, 0o022, 0o277):
        previous = os.umask(mask)
        try:
            atomic_write(target, b"again")
        finally:
            os.umask(previous)
        assert (target.stat().st_mode & 0o777) == 0o600


def test_remove_stale_temps_only_touches_its_targets_temps(tmp_path):
    target = tmp_path / "tree.json.gz"
    (tmp_path / ".tree.json.gz.abc.tmp").write_bytes(b"x")
    (tmp_path / ".meta.json.abc.tmp").write_bytes(b"x")
    (tmp_path / "other.tmp").write_bytes(b"x")
    assert remove_stale_temps(target) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".meta.json.abc.tmp", "other.tmp"]


@pytest.mark.parametrize("durable, syncs", [(True, 2), (False, 0)])
def test_only_durable_writes_wait_for_the_disk(tmp_path, monkeypatch, durable, syncs):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd) or real(fd))
    target = tmp_path / "meta.json"
    target.write_bytes(b"old")
    assert atomic_write(target, b"new", durable=durable) == 3
    assert target.read_bytes() == b"new" and len(calls) == syncs  # the file, then its directory
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]
