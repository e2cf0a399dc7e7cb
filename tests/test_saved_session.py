"""The saved session resume starts from: the quick load of a closed session equals the careful one."""

from __future__ import annotations

import json

from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.saved_session import _load_current, load_for_resume

DEEP = str(__import__("pathlib").Path(__file__).parent / "data" / "deep-hooks.json")


def invoke(args):
    return CliRunner().invoke(cli, args)


def session_id_of(result) -> str:
    (line,) = [l for l in result.stderr.splitlines() if l.startswith("session: ")]
    return line.split(": ", 1)[1]


def test_the_quick_load_of_a_closed_session_equals_the_careful_one(home):
    """A cleanly closed session resumes from events.jsonl and meta.json alone; the careful path
    (journal, tree, contradiction checks) gives the same saved session."""
    first = invoke(["run", "--script", DEEP, "Start.", "Go deep."])
    assert first.exit_code == 0, first.stderr
    sid = session_id_of(first)
    directory = home / "sessions" / sid
    quick, quick_tree, quick_meta, quick_repair = load_for_resume(directory, sid)
    assert _load_current(directory, sid) is not None and quick_tree is None  # billed: the tree is not even read
    meta = json.loads((directory / "meta.json").read_text())
    (directory / "meta.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "checkpoint"}))
    assert _load_current(directory, sid) is None
    careful, careful_tree, _, careful_repair = load_for_resume(directory, sid)
    assert careful_tree is not None
    assert quick_repair is None and careful_repair is not None  # the careful load's writes wait for the caller
    assert (quick.records, quick.runs, quick.last_run, quick.redacted) == (
        careful.records, careful.runs, careful.last_run, careful.redacted)
    assert quick.runs == 2 and quick.last_run.script == DEEP
    assert quick.last_run.span_id == careful_tree["runs"][-1]["span_id"]


def test_the_hooks_a_resume_lacks_come_from_the_runs_without_reading_the_journal(home, tmp_path):
    """Each run names the hooks it had, so a quick resume warns from meta.json, and of a hook that
    never acted too; a session whose runs do not name them is searched for the decisions recorded."""
    import shutil

    from otel_agents.persistence.saved import load_saved
    from otel_agents.saved_session import hooks_left_behind

    done = invoke(["run", "--script", DEEP, "Start."])
    assert done.exit_code == 0, done.stderr
    directory = home / "sessions" / session_id_of(done)
    meta = json.loads((directory / "meta.json").read_text())
    installed = meta["hooks"]
    assert installed and all(isinstance(name, str) for name in installed)
    bare = tmp_path / "bare"  # the files a quick path does not read, gone
    shutil.copytree(directory, bare)
    (bare / "spans.jsonl").unlink()
    (bare / "tree.json.gz").unlink()
    assert hooks_left_behind(bare, None, meta, set()) == installed
    assert hooks_left_behind(bare, None, meta, set(installed[:1])) == installed[1:]
    tree = load_saved(directory).tree
    assert hooks_left_behind(directory, tree, None, set()) == installed
    older = {k: v for k, v in meta.items() if k != "hooks"}  # saved before runs named their hooks
    acted = hooks_left_behind(directory, None, older, set())
    assert set(acted) <= set(installed)
    assert hooks_left_behind(bare, None, older, set()) == []  # nothing left to search
