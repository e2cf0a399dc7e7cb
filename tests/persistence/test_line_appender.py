"""LineAppender: nothing created before the first line, flushed per line or per batch, a torn tail cut first."""

from __future__ import annotations

from otel_agents.persistence.line_appender import LineAppender


def _whole(raw: bytes) -> bool:
    return raw.startswith(b"{") and raw.endswith(b"}")


def test_nothing_is_created_until_the_first_line_and_each_line_is_flushed(tmp_path):
    path = tmp_path / "lines.jsonl"
    appender = LineAppender(path, _whole)
    assert not path.exists()
    appender.append_bytes(b'{"a": 1}\n')
    assert path.read_bytes() == b'{"a": 1}\n'  # in the kernel's hands before append returns
    appender.append_bytes(b'{"b": 2}\n{"c": 3}\n')
    assert path.read_bytes().count(b"\n") == 3 and (appender.lines_written, appender.bytes_written) == (3, 27)
    appender.close()
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


def test_without_flush_each_lines_wait_for_flush(tmp_path):
    path = tmp_path / "lines.jsonl"
    appender = LineAppender(path, _whole)
    appender.append_bytes(b'{"a": 1}\n')
    appender.flush_each = False
    appender.append_bytes(b'{"b": 2}\n')
    assert path.read_bytes() == b'{"a": 1}\n'
    appender.flush()
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    appender.close()


def test_a_torn_tail_is_cut_and_a_whole_line_missing_its_newline_is_kept(tmp_path):
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b'{"a": 1}\n{"b": ')
    warnings: list[str] = []
    appender = LineAppender(torn, _whole, warnings.append)
    appender.append_bytes(b'{"c": 3}\n')
    appender.close()
    assert torn.read_bytes() == b'{"a": 1}\n{"c": 3}\n'
    assert len(warnings) == 1 and "torn last line (6 bytes)" in warnings[0]
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b'{"a": 1}')
    appender = LineAppender(whole, _whole, warnings.append)
    appender.append_bytes(b'{"c": 3}\n')
    appender.close()
    assert whole.read_bytes() == b'{"a": 1}\n{"c": 3}\n' and len(warnings) == 1
