"""Options shared by every command that reads or writes the home."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import click

from otel_agents.persistence.gc_pause import collector_paused
from otel_agents.persistence.output_files import new_file_problem, storage_output_problem
from otel_agents.persistence.paths import InvalidSessionId, Paths


class SafePath(click.Path):
    """``click.Path`` that refuses a NUL byte with a usage error (click's own check stats the
    path first, and no OS call takes a NUL: it raises ValueError, a traceback)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and "\x00" in value:
            self.fail(f"{value!r} is not a path: it contains a NUL byte", param, ctx)
        if isinstance(value, str) and value == "":  # Path('') is '.': a directory read or written unasked
            self.fail("'' is not a file name" if not self.dir_okay else "'' is not a path (give . for this directory)",
                      param, ctx)
        return super().convert(value, param, ctx)


class NewFilePath(SafePath):
    """A file the command writes (``--otlp-file``): its directory must exist and be writable, checked
    before anything runs, as ``--watch``'s is; else the run went ahead and only warned it wrote nothing."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value, param, ctx):
        path = super().convert(value, param, ctx)
        problem = new_file_problem(path)  # shared with recording(otlp_file=)
        if problem is not None:
            self.fail(problem, param, ctx)
        return path


def refuse_storage_output(output: Path | None, paths: Paths, option: str, ledgers=()) -> None:
    """Exit 2 (one line, nothing written) when a file the command writes is the home's ledger, one of
    ``ledgers``, or inside the sessions directory (symlinks followed): it would overwrite or append to
    a session's own files, or the ledger, and leave them unreadable."""
    if output is None:
        return
    # --otlp-file also writes its metrics beside it (tracing/metrics_setup.py)
    problem = storage_output_problem(output, paths, option, ledgers=ledgers, metrics_beside=option == "--otlp-file")
    if problem is not None:
        raise click.UsageError(problem)


def storage_options(func):
    """Adds ``--sessions-dir`` and ``--billing-file``; passes ``paths: Paths``."""
    func = click.option(
        # multiple=True only to refuse a repeat: click would silently keep the last one.
        "--billing-file", type=SafePath(dir_okay=False, path_type=Path), multiple=True,
        help="Billing ledger (default: $OTEL_AGENTS_HOME/billing.jsonl).",
    )(func)
    func = _sessions_dir_option(func)

    @functools.wraps(func)  # carries click's collected params along
    def wrapper(*args, sessions_dir=None, billing_file=(), **kwargs):
        if len(billing_file) > 1:
            raise click.UsageError(
                f"--billing-file given {len(billing_file)} times; this command uses exactly one ledger "
                "(only `billing summary`, `billing export` and `ui` read several)"
            )
        return func(*args, paths=Paths.resolve(sessions_dir, billing_file[0] if billing_file else None), **kwargs)

    return wrapper


def ledger_sources_options(func):
    """Adds ``--sessions-dir`` and a repeatable ``--billing-file`` (a ledger, or a directory of
    ``*.jsonl`` ledgers); passes ``paths: Paths`` and ``ledgers: list[Path]``, for commands that
    only read the ledger and so can add up the shards of a fleet.

    Every file named must be a ledger (missing is one with no records yet); one that is not is
    refused (DataError) before the command writes anything."""
    func = click.option(
        "--billing-file", type=SafePath(path_type=str), multiple=True,  # as typed: "shards/" names a directory
        help="Billing ledger, or a directory whose *.jsonl files are ledgers; repeat to read several as one "
             "(a record in two of them counts once). Default: $OTEL_AGENTS_HOME/billing.jsonl.",
    )(func)
    func = _sessions_dir_option(func)

    @functools.wraps(func)
    def wrapper(*args, sessions_dir=None, billing_file=(), **kwargs):
        from otel_agents.persistence.ledger_read import LedgerError, check_readable_ledger
        from otel_agents.persistence.ledger_shards import ledger_files

        paths = Paths.resolve(sessions_dir, Path(billing_file[0]) if len(billing_file) == 1 else None)
        try:
            ledgers = ledger_files(billing_file) if billing_file else [paths.billing_file]
            # All of them first: a shard that is not a ledger is found before an export's CSV header
            # or an earlier shard's records are written, and a fleet is never silently under-counted.
            for ledger in ledgers:
                check_readable_ledger(ledger)
        except LedgerError as exc:  # here too for `ui`, which serves on and so does not convert them all
            raise DataError(str(exc)) from None
        return func(*args, paths=paths, ledgers=ledgers, **kwargs)

    return wrapper


def _sessions_dir_option(func):
    return click.option(
        "--sessions-dir", type=SafePath(file_okay=False, path_type=Path),
        help="Sessions directory (default: $OTEL_AGENTS_HOME/sessions).",
    )(func)


class NoSuchSession(click.ClickException):
    """A session id that is not valid or names no saved session: one line, exit 2 (the command was
    used rightly, so click's usage block and --help hint would not help)."""

    exit_code = 2


def session_dir_or_exit(paths: Paths, session_id: str, must_exist: bool = True) -> Path:
    """The session's directory; bad or unknown ids are NoSuchSession (exit 2)."""
    try:
        path = paths.session_dir(session_id)
    except InvalidSessionId as exc:
        raise NoSuchSession(str(exc)) from None
    if must_exist and not path.is_dir():
        raise NoSuchSession(f"no session {session_id!r} in {paths.sessions_dir}")
    return path


def not_empty(ctx, param, value):
    """An option's value, refused when given empty: ``--script ''`` read as no option ran the default in silence."""
    if value is not None and not value.strip():
        raise click.BadParameter("must not be empty", ctx=ctx, param=param)
    return value


class FiniteFloat(click.FloatRange):
    """``click.FloatRange`` without NaN and infinity: NaN passes every comparison a range makes, and
    neither is a number of seconds or dollars a command can use."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def utf8_text(value: str, what: str) -> str:
    """``value`` if it can be saved as UTF-8, else a usage error naming the byte.

    Python hands bytes that are not UTF-8 (an argument or a stdin line in Latin-1, say) over as
    lone surrogates; a run would call the model with them and then fail to save the session.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        byte = f"byte 0x{ord(bad) - 0xDC00:02x}" if 0xDC80 <= ord(bad) <= 0xDCFF else f"character U+{ord(bad):04X}"
        raise click.UsageError(f"{what} is not valid UTF-8 text ({byte} at position {exc.start})") from None
    return value


class DataError(click.ClickException):
    """Unreadable or damaged data: one line on stderr, exit 2 like any other bad input."""

    exit_code = 2


def ledger_errors_are_data_errors(func):
    """A ledger that cannot be opened is one clear line, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from otel_agents.persistence.ledger_read import LedgerError

        try:
            return func(*args, **kwargs)
        except LedgerError as exc:
            raise DataError(str(exc)) from None

    return wrapper


def reads_whole_sessions(func):
    """The command decodes whole saved sessions: the cyclic collector stays paused while it runs.

    A decoded tree is millions of young objects without cycles; each automatic collection
    after the decode walked all of them again (1.2-1.7 s of ``sessions verify`` at 100k
    entries). The command's process ends with it, so nothing cyclic is kept for long.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with collector_paused():
            return func(*args, **kwargs)

    return wrapper
