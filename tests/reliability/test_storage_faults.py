"""Storage faults: an unwritable home, a file-size limit hit mid-run, a full disk.

Outcomes (docs/reliability.md): an unwritable home is one line and exit 2 before
any LLM call; a write that fails mid-run costs one warning per destination, the
run goes on and the command ends with exit 1 saying the session was not saved
whole; the previous tree stays readable; no ledger line is ever torn; and what the
ledger missed is billed by `sessions repair`.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from reliability_helpers import (
    MODEL,
    ScriptBuilder,
    assert_clean_error,
    cli_command,
    invoke,
    ledger,
    load_tree,
    session_dir,
    session_id_of,
    snapshot,
    subprocess_env,
    verify,
)


def chatty_script(tmp_path: Path) -> Path:
    """main delegates twice per run, so every run writes a few kilobytes of spans and records."""
    turn = lambda n: {"tool_calls": [{"name": "task", "arguments": {  # noqa: E731
        "name": f"Helper{n}", "system_prompt": "You help. " * 20, "user_prompt": f"Question {n}? " * 20}}]}
    return ScriptBuilder("chatty", {"main": [turn(1), turn(2), "first run done", turn(3), turn(4), "second run done"]}
                         ).write(tmp_path / "chatty.json")


def first_run(tmp_path: Path, home: Path) -> str:
    result = invoke(["run", "--script", str(chatty_script(tmp_path)), "start"])
    assert result.exit_code == 0, result.output
    return session_id_of(result.stderr)


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


def limited(max_bytes: int):
    """preexec_fn: files may not grow past ``max_bytes``; writes fail with EFBIG instead of killing us."""
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
    return apply


def run_limited(args: list[str], home: Path, max_bytes: int) -> subprocess.CompletedProcess:
    return subprocess.run([*cli_command(), *args], capture_output=True, text=True, env=subprocess_env(home),
                          cwd=home.parent, preexec_fn=limited(max_bytes), timeout=120)


@contextlib.contextmanager
def mounted_tmpfs(path: Path, size: str, read_only: bool = False):
    """A tiny tmpfs at ``path`` (root only); yields False when it cannot be mounted here."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    if os.geteuid() != 0 or shutil.which("mount") is None:
        yield False
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        yield False
        return
    try:
        yield True
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def read_only_dir(path: Path):
    """A directory nobody here can write to: a read-only mount as root, else mode 0555."""
    if os.geteuid() == 0:
        with mounted_tmpfs(path, "64k", read_only=True) as ok:
            if not ok:
                pytest.skip("root cannot be denied by file modes and no read-only tmpfs can be mounted here")
            yield path
        return
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o555)
    try:
        yield path
    finally:
        path.chmod(0o755)


# --------------------------------------------------------------------------- unwritable home


@pytest.mark.parametrize("case", ["home is a file", "home is read-only", "sessions dir is read-only",
                                  "ledger is a directory"])
def test_an_unwritable_home_is_one_line_before_any_llm_call(case, rel_home, tmp_path, monkeypatch, model_server):
    args = ["run", "--model", MODEL, "--api-base", model_server.api_base, "hello"]
    with contextlib.ExitStack() as stack:
        if case == "home is a file":
            rel_home.write_text("not a directory")
            expected = f"{rel_home} is a file, not a directory"
        elif case == "home is read-only":
            home = stack.enter_context(read_only_dir(tmp_path / "ro-home"))
            monkeypatch.setenv("OTEL_AGENTS_HOME", str(home))
            expected = str(home)
        elif case == "sessions dir is read-only":
            sessions = stack.enter_context(read_only_dir(tmp_path / "ro-sessions"))
            args[1:1] = ["--sessions-dir", str(sessions)]
            expected = f"cannot write session directory {sessions}/"
        else:
            (rel_home / "billing.jsonl").mkdir(parents=True)
            expected = "billing.jsonl: Is a directory"
        before = snapshot(tmp_path)
        result = invoke(args)
        after = snapshot(tmp_path)
    assert_clean_error(result, 2)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and expected in errors[0], result.stderr
    assert result.stdout == ""
    assert model_server.requests == []  # reported before the first LLM call
    # Nothing was written: at most an empty home directory on the way to the refused one.
    added = {k: v for k, v in after.items() if before.get(k) != v}
    assert all(v == "dir" for v in added.values()) and all(k in after for k in before), added


@pytest.mark.parametrize("command", [
    ["resume", "{sid}", "next"],
    ["sessions", "verify", "{sid}"],
    ["billing", "summary"],
    ["billing", "export", "--format", "jsonl"],
    ["billing", "rebuild"],
], ids=lambda c: " ".join(c[:2]))
def test_a_ledger_path_that_is_a_directory_is_one_clear_error(command, rel_home, tmp_path):
    session_id = first_run(tmp_path, rel_home)
    (rel_home / "billing.jsonl").unlink()
    (rel_home / "billing.jsonl").mkdir()
    before = snapshot(rel_home)
    result = invoke([part.format(sid=session_id) for part in command])
    assert_clean_error(result, 2)
    assert "billing.jsonl" in result.stderr
    assert snapshot(rel_home) == before


# --------------------------------------------------------------------------- file-size limit


def fake_ledger_records(template: dict, count: int) -> bytes:
    """Whole, valid records of another (imaginary) session, to make the ledger big."""
    lines = []
    for i in range(count):
        record = dict(template, record_id=f"{'ab' * 16}:{i:016x}", session_id="20250101-000000-000000",
                      trace_id="ab" * 16, span_id=f"{i:016x}")
        lines.append(json.dumps(record).encode() + b"\n")
    return b"".join(lines)


def test_a_file_size_limit_hit_by_the_ledger_leaves_no_torn_line(rel_home, tmp_path):
    """The ledger crosses RLIMIT_FSIZE while appending a run: one warning, the file exactly as it was."""
    session_id = first_run(tmp_path, rel_home)
    billing = rel_home / "billing.jsonl"
    template = ledger(billing)[0]
    with billing.open("ab") as handle:
        handle.write(fake_ledger_records(template, 600))
    original = billing.read_bytes()
    largest_session_file = max(p.stat().st_size for p in session_dir(rel_home, session_id).iterdir())
    assert largest_session_file + 20_000 < len(original)  # only the ledger can reach the limit
    limit = len(original) + 200  # less than one record: the append must fail part-way

    proc = run_limited(["resume", session_id, "next"], rel_home, limit)
    assert proc.returncode == 1, proc.stderr  # the run goes on, and the command says it was not saved whole
    assert proc.stdout == "second run done\n"
    assert proc.stderr.splitlines()[-1] == f"error: session {session_id} was not saved whole (see the warnings above)"
    assert "Traceback" not in proc.stderr
    (warning,) = warnings_of(proc.stderr)
    assert "cannot append to the billing ledger" in warning and "File too large" in warning
    assert billing.read_bytes() == original  # not one byte of a half record
    ledger(billing)  # every line whole

    # Nothing is lost: the session holds run 2, and the owner's repair bills what the ledger missed.
    tree = load_tree(rel_home, session_id)
    assert [r["status"] for r in tree["runs"]] == ["ok", "ok"]
    repaired = invoke(["sessions", "repair", session_id])
    assert repaired.exit_code == 0, repaired.output
    assert "billed" in repaired.stdout
    records = ledger(billing, session_id)
    assert {r["run"] for r in records} == {1, 2} and len(records) == len({r["record_id"] for r in records})
    checked = verify(session_id)
    assert checked.exit_code == 0, checked.output


def test_a_file_size_limit_hit_by_the_session_files_keeps_the_previous_tree(rel_home, tmp_path):
    """spans.jsonl crosses RLIMIT_FSIZE mid-run: one warning, the run goes on, the saved tree is untouched."""
    session_id = first_run(tmp_path, rel_home)
    directory = session_dir(rel_home, session_id)
    tree_before = (directory / "tree.json.gz").read_bytes()
    billing = rel_home / "billing.jsonl"
    limit = max(p.stat().st_size for p in directory.iterdir()) + 300  # a few journal lines more, no more
    assert billing.stat().st_size + 10_000 < limit  # the ledger itself stays far below the limit

    proc = run_limited(["resume", session_id, "next"], rel_home, limit)
    assert proc.returncode == 1, proc.stderr  # not saved whole: said, with exit 1
    assert proc.stdout == "second run done\n"
    assert "Traceback" not in proc.stderr
    (warning,) = warnings_of(proc.stderr)  # one, however many writes were refused
    assert f"cannot save session {session_id}" in warning and "File too large" in warning
    assert (directory / "tree.json.gz").read_bytes() == tree_before
    assert len(load_tree(rel_home, session_id)["runs"]) == 1  # the previous tree, readable
    assert not [p for p in directory.iterdir() if p.name.startswith(".")]  # no temporary file left
    records = ledger(billing, session_id)  # whole lines; run 2 was billed from memory
    assert {r["run"] for r in records} == {1, 2}
    # The saved session still loads and shows (readers cope with a torn last journal line).
    shown = invoke(["sessions", "show", session_id])
    assert shown.exit_code == 0, shown.output
    assert "Traceback" not in shown.output


# --------------------------------------------------------------------------- full disk


def fill(directory: Path, leave: int) -> Path:
    """Fill the filesystem of ``directory`` until about ``leave`` bytes are free."""
    filler = directory / "filler"
    stat = os.statvfs(directory)
    free = stat.f_bavail * stat.f_frsize
    with filler.open("wb") as handle:
        with contextlib.suppress(OSError):
            handle.write(b"\0" * max(0, free - leave))
    return filler


def test_a_full_disk_mid_run_costs_one_warning_and_keeps_the_previous_tree(rel_home, tmp_path, monkeypatch):
    mount = tmp_path / "small-disk"
    with mounted_tmpfs(mount, "512k") as ok:
        if not ok:
            pytest.skip("needs root to mount a tiny tmpfs (the file-size limit tests cover the same paths)")
        home = mount / "home"
        monkeypatch.setenv("OTEL_AGENTS_HOME", str(home))
        session_id = first_run(tmp_path, home)
        directory = session_dir(home, session_id)
        tree_before = (directory / "tree.json.gz").read_bytes()
        filler = fill(mount, leave=0)

        result = invoke(["resume", session_id, "next"])
        assert result.exit_code == 1, result.output  # the run goes on; not saved whole: exit 1
        assert result.stdout == "second run done\n"
        assert "Traceback" not in result.output
        warnings = warnings_of(result.stderr)
        assert 1 <= len(warnings) <= 2  # at most one per destination (session directory, ledger)
        assert all("No space left on device" in w for w in warnings), warnings
        assert any(f"cannot save session {session_id}" in w for w in warnings)
        assert (directory / "tree.json.gz").read_bytes() == tree_before
        assert len(load_tree(home, session_id)["runs"]) == 1
        assert not [p for p in directory.iterdir() if p.name.startswith(".")]
        ledger(home / "billing.jsonl")  # whole lines only

        filler.unlink()  # space again: the session loads, nothing is torn, it can go on
        shown = invoke(["sessions", "show", session_id])
        assert shown.exit_code == 0, shown.output
        again = invoke(["resume", session_id, "third"])
        assert again.exit_code == 0, again.output
        ledger(home / "billing.jsonl")
        assert load_tree(home, session_id)["runs"][0]["status"] == "ok"
