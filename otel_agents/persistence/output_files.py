"""Whether a file written beside the store (``--otlp-file``, ``recording(otlp_file=)``) can be written unharmed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from otel_agents.persistence.paths import Paths


def new_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written, or None: said before anything runs, not as a warning after each run
    that it wrote nothing (``could not write 42 of 42 spans ... (Is a directory)``)."""
    if str(path) in ("", "."):
        return f"{str(path)!r} is not a file name"
    if path.is_dir():
        return f"cannot write {str(path)!r}: it is a directory"
    directory = path.parent
    if not directory.is_dir():
        return f"cannot write {str(path)!r}: directory {str(directory)!r} does not exist"
    if not os.access(directory, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"cannot write {str(path)!r}: permission denied"
    return None


def storage_output_problem(output: Path, paths: Paths, what: str, *, ledgers: Iterable[Path] = (),
                           metrics_beside: bool = False) -> str | None:
    """Why writing ``output`` would damage the store, or None: it is the home's ledger, one of ``ledgers``,
    or inside the sessions directory (symlinks followed), where it would overwrite or append to a session's
    own files. ``metrics_beside``: the metrics file written next to an OTLP file is checked too."""
    from otel_agents.tracing.metrics_setup import metrics_file_for

    sessions = paths.sessions_dir.resolve()
    ledger_files = {Path(p).resolve() for p in (paths.billing_file, *ledgers)}
    for target in {output.resolve(), *([metrics_file_for(output).resolve()] if metrics_beside else [])}:
        if target == sessions or sessions in target.parents:
            return (f"{what} {output} is inside the sessions directory {paths.sessions_dir}: "
                    "it would damage a saved session; choose a file outside it")
        if target in ledger_files:
            return f"{what} {output} is a billing ledger; choose another file"
    return None
