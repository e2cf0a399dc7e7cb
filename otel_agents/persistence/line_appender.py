"""One append-only lines file of a session (events.jsonl, spans.jsonl): opened lazily, torn tail cut, flushed per append or per batch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Callable

from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.private import open_private_append


_BUFFER_BYTES = 1 << 16  # a batch's lines reach the kernel in few writes (the default is the block size)


class LineAppender:
    """Appends whole lines; nothing is opened until the first line, so an unused file is never created.

    ``flush_each`` (default): every :meth:`append_bytes` hands its bytes to the kernel before
    it returns, so a crash of this process tears at most the line being written. A
    writer whose input is durable elsewhere until it is written (the recorder process
    reads a kernel pipe) may turn it off for a batch and :meth:`flush` at its end.
    Either way a torn last line (cut by a crash) is cut off again before the next
    append, unless ``is_whole`` says it lost only its newline.
    """

    def __init__(self, path: Path, is_whole: Callable[[bytes], bool], warn: Warn = stderr_warning):
        self.path = Path(path)
        self.warn = warn
        self.flush_each = True
        self._is_whole = is_whole
        self._handle: BinaryIO | None = None
        self.lines_written = 0
        self.bytes_written = 0

    def append_bytes(self, data: bytes) -> None:
        """``data``: whole lines, each ending in a newline."""
        if self._handle is None:
            self._open()
        self._handle.write(data)
        if self.flush_each:
            self._handle.flush()
        self.lines_written += data.count(b"\n")
        self.bytes_written += len(data)

    def flush(self) -> None:
        if self._handle is not None:
            self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            try:
                self._handle.close()
            finally:
                self._handle = None

    def _open(self) -> None:
        cut = cut_torn_tail(self.path, self._is_whole)
        if cut:
            self.warn(f"{self.path}: removed a torn last line ({cut} bytes) left by an interrupted writer")
        self._handle = open_private_append(self.path, _BUFFER_BYTES)


def cut_torn_tail(path: Path, is_whole: Callable[[bytes], bool]) -> int:
    """Make the file end in a newline before appending; returns the number of bytes removed.

    An unterminated last line is cut off, unless ``is_whole`` says it is a complete
    line whose newline alone was lost (readers accept such a line, so the writer
    must keep it): then only the newline is added.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size == 0:
        return 0
    with open(path, "rb+") as handle:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        # Walk back to the last newline in blocks.
        position, block = size, 65536
        keep = 0
        while position > 0:
            start = max(0, position - block)
            handle.seek(start)
            chunk = handle.read(position - start)
            index = chunk.rfind(b"\n")
            if index >= 0:
                keep = start + index + 1
                break
            position = start
        handle.seek(keep)
        if is_whole(handle.read(size - keep)):
            handle.seek(size)
            handle.write(b"\n")
            keep = size
        else:
            handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    return size - keep
