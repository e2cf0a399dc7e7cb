"""Owner-only storage: 0700 directories, 0600 files, whatever the umask; shared parents left alone."""

from __future__ import annotations

import os
import stat

import pytest

from otel_agents.persistence.private import make_private_dir, open_private_append


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(params=[0o000, 0o022, 0o077, 0o277])
def umask(request):
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def test_new_directories_and_files_are_owner_only_whatever_the_umask(tmp_path, umask):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    target = shared / "home" / "sessions" / "s1"
    make_private_dir(target)
    assert [mode(p) for p in (shared / "home", shared / "home" / "sessions", target)] == [0o700] * 3
    assert mode(shared) == 0o755  # an existing parent may be shared: left alone
    with open_private_append(target / "events.jsonl") as handle:
        handle.write(b"line\n")
    assert mode(target / "events.jsonl") == 0o600


def test_an_existing_directory_and_file_are_made_private_without_losing_a_byte(tmp_path):
    directory = tmp_path / "sessions"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    make_private_dir(directory, own_existing=False)
    assert mode(directory) == 0o755
    make_private_dir(directory)
    assert mode(directory) == 0o700
    path = directory / "events.jsonl"
    path.write_bytes(b"kept\n")
    path.chmod(0o644)
    with open_private_append(path) as handle:
        handle.write(b"added\n")
    assert mode(path) == 0o600 and path.read_bytes() == b"kept\nadded\n"
