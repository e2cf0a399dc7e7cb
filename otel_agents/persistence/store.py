"""One session directory (seed 003): ``events.jsonl``, ``spans.jsonl``, ``tree.json.gz``, ``meta.json``.

``tree.json.gz`` is encoded and decoded by tree_file.py alone (its versions, the flat
form of deep trees, the checks of its shape); ``meta.json`` is a small summary for
fast listing, its contents decided by session_meta.py. Both are replaced atomically, so a
crash leaves the previous version readable. Reading reports damage as a :class:`StoreError` with a one-line message
naming the file and the problem. Reading a whole session, with crash recovery, is
saved.py's ``load_saved``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import orjson

from otel_agents.persistence.atomic import atomic_write, remove_stale_temps
from otel_agents.persistence.private import make_private_dir
from otel_agents.persistence.events_file import EVENTS_FILE
from otel_agents.persistence.journal import JOURNAL_FILE
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.tree_encoding import TreeEncoder, encode_payload
# NESTED_LEVELS, TREE_VERSION, decode_payload and make_payload are re-exported for the writers that import them from here.
from otel_agents.persistence.tree_file import (  # noqa: F401
    NESTED_LEVELS, TREE_FILE, TREE_VERSION, StoreError, decode_payload, make_payload,
    read_payload,
)

META_FILE = "meta.json"


@dataclass(frozen=True)
class SessionStore:
    """Paths and file operations of one session directory."""

    directory: Path

    @property
    def session_id(self) -> str:
        return self.directory.name

    @property
    def tree_path(self) -> Path:
        return self.directory / TREE_FILE

    @property
    def events_path(self) -> Path:
        return self.directory / EVENTS_FILE

    @property
    def meta_path(self) -> Path:
        return self.directory / META_FILE

    @property
    def journal_path(self) -> Path:
        return self.directory / JOURNAL_FILE

    @classmethod
    def create(cls, sessions_dir: Path, session_id: str) -> "SessionStore":
        """Make the directory and prove it writable; StoreError (one line) if it is not."""
        directory = Path(sessions_dir) / session_id
        try:
            make_private_dir(Path(sessions_dir))  # it holds sessions, which keep what models were sent
            make_private_dir(directory)
            fd, probe = tempfile.mkstemp(prefix=".probe.", dir=directory)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise StoreError(f"cannot write session directory {directory}: {explain_os_error(exc, directory)}") from None
        store = cls(directory)
        remove_stale_temps(store.tree_path)
        remove_stale_temps(store.meta_path)
        return store

    def exists(self) -> bool:
        return self.directory.is_dir()

    def holds_session(self) -> bool:
        """Whether a session was saved here already (a directory holding only a lock is empty)."""
        return any((self.directory / name).exists() for name in (EVENTS_FILE, JOURNAL_FILE, TREE_FILE, META_FILE))

    # --- tree ---
    def save_tree(
        self, payload: Mapping[str, Any], *, before_rename: Callable[[Path], None] | None = None,
        encoder: TreeEncoder | None = None,
    ) -> int:
        """Atomically replace tree.json.gz; returns the compressed bytes written.

        ``encoder``: the writer's own, which compresses again only what changed since its last write.
        """
        data = encoder.encode(payload) if encoder is not None else encode_payload(payload)
        return atomic_write(self.tree_path, data, before_rename=before_rename)

    def load_payload(self, encoder: TreeEncoder | None = None) -> dict[str, Any]:
        return read_payload(self.tree_path, encoder)

    def load_tree(self, encoder: TreeEncoder | None = None) -> dict[str, Any]:
        return self.load_payload(encoder)["session"]

    # --- meta ---
    def write_meta(self, meta: Mapping[str, Any], *, durable: bool = True) -> int:
        """Atomically replace meta.json; returns the bytes written.

        ``durable=False`` (a live recorder, several times per run) leaves out the fsyncs:
        meta.json is derived from the tree, and a careful load writes it again.
        """
        return atomic_write(self.meta_path, orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n", durable=durable)

    def read_meta(self) -> dict[str, Any]:
        try:
            meta = orjson.loads(self.meta_path.read_bytes())
        except FileNotFoundError:
            raise StoreError(f"{self.meta_path} does not exist") from None
        except OSError as exc:
            raise StoreError(f"cannot read {self.meta_path}: {exc.strerror or exc}") from None
        except orjson.JSONDecodeError as exc:
            raise StoreError(f"{self.meta_path} is not valid JSON ({exc})") from None
        if not isinstance(meta, dict):
            raise StoreError(f"{self.meta_path} does not hold an object")
        return meta


# --------------------------------------------------------------------------- listing


@dataclass(frozen=True)
class SessionListing:
    session_id: str
    directory: Path
    meta: dict[str, Any] | None
    problem: str | None  # why meta is missing, if it is


def list_sessions(sessions_dir: Path) -> list[SessionListing]:
    """Every session directory, oldest first; unreadable ones are listed with their problem."""
    sessions_dir = Path(sessions_dir)
    if not sessions_dir.is_dir():
        return []
    paths = Paths(sessions_dir, Path(os.devnull))
    out = []
    for entry in sessions_dir.iterdir():
        if not entry.is_dir():
            continue
        try:
            paths.session_dir(entry.name)
        except InvalidSessionId:
            continue
        store = SessionStore(entry)
        try:
            meta, problem = store.read_meta(), None
        except StoreError as exc:
            meta, problem = None, str(exc)
        out.append(SessionListing(entry.name, entry, meta, problem))
    out.sort(key=by_creation)
    return out


def by_creation(listing: SessionListing) -> tuple[str, str]:
    """The listing order: meta.json's ``created``, then the id (sessions without meta.json first)."""
    return (listing.meta or {}).get("created") or "", listing.session_id


def check_file_writable(path: Path) -> None:
    """Prove a file can be appended to (created if need be) without changing it; StoreError if not."""
    path = Path(path)
    try:
        make_private_dir(path.parent, own_existing=False)
        if path.exists():
            with open(path, "ab"):
                pass
        else:
            fd, probe = tempfile.mkstemp(prefix=f".{path.name}.probe.", dir=path.parent)
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {explain_os_error(exc, path)}") from None


class NotALedger(StoreError):
    """The billing file's path names a file that is not a ledger: bad input, not a write failure."""


def check_ledger_writable(billing_file: Path) -> None:
    """``check_file_writable`` for the billing ledger, and a file already there must be one (NotALedger)."""
    from otel_agents.persistence.ledger_read import not_a_ledger

    path = Path(billing_file)
    reason = not_a_ledger(path)  # first: it stats before opening, and the probe would open a device or block on a pipe
    if reason is not None:
        raise NotALedger(reason)
    check_file_writable(path)


def explain_os_error(exc: OSError, path: Path) -> str:
    """``File exists`` from mkdir says little; name the file that stands where a directory must be."""
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        for ancestor in [Path(path), *Path(path).parents]:
            if ancestor.exists() and not ancestor.is_dir():
                return f"{ancestor} is a file, not a directory"
    return exc.strerror or type(exc).__name__
