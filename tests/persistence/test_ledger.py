"""The billing ledger's appends: locked, dedup by record id, torn lines cut, atomic rewrite, the appender."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ledger_samples import llm, tool

from otel_agents.persistence.ledger import LedgerAppender, append_records, rewrite_records
from otel_agents.persistence.ledger_read import CSV_COLUMNS, LedgerError, iter_records, read_records


# --- appending ----------------------------------------------------------------------------


def test_append_creates_the_file_and_reads_back(tmp_path):
    ledger = tmp_path / "home" / "deep" / "billing.jsonl"
    records = [llm(1), tool(2), llm(3, cost=None)]
    assert append_records(ledger, records) == 3
    assert read_records(ledger) == records
    lines = ledger.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 4
    assert all(line.startswith(b'{"record_id":"') for line in lines[:-1])


def test_a_record_id_is_never_written_twice(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    assert append_records(ledger, [llm(1), tool(2)]) == 2
    # Re-export, a retried flush, an import of the same trace: same ids, nothing new.
    assert append_records(ledger, [llm(1), tool(2)]) == 0
    assert append_records(ledger, [tool(2), llm(3), llm(3)]) == 1
    assert [r["record_id"] for r in read_records(ledger)] == [llm(1)["record_id"], tool(2)["record_id"], llm(3)["record_id"]]
    assert append_records(ledger, []) == 0


def test_ids_are_found_whatever_the_field_order(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    record = llm(1)
    moved = {k: v for k, v in record.items() if k != "record_id"} | {"record_id": record["record_id"]}
    ledger.write_bytes(orjson.dumps(moved) + b"\n")
    assert append_records(ledger, [record]) == 0


def test_records_without_an_id_are_refused_before_anything_is_written(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(1)])
    before = ledger.read_bytes()
    bad = llm(2)
    del bad["record_id"]
    with pytest.raises(LedgerError, match="without a record_id"):
        append_records(ledger, [llm(3), bad])
    assert ledger.read_bytes() == before


def test_secrets_never_reach_the_ledger(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    record = llm(1, status="failed")
    record["error"] = "AuthenticationError: Incorrect API key provided: sk-canary0123456789abcdefXYZ"
    append_records(ledger, [record])
    assert b"canary" not in ledger.read_bytes()
    assert "[REDACTED]" in read_records(ledger)[0]["error"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text(max_size=60),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=8,
)
SECRETISH = ["sk-canary0123456789abcdefXYZ", "Bearer abcdefghijklmnop", "api_key=abc123", "password=hunter2"]


@given(
    st.dictionaries(st.sampled_from([*CSV_COLUMNS, "tokens", "api_key", "authorization", "extra", "input"]),
                    json_values | st.sampled_from(SECRETISH), max_size=12),
    st.dictionaries(st.sampled_from(["input", "output", "total", "api_key", "x"]),
                    st.integers(0, 10**9) | st.sampled_from(SECRETISH), max_size=5),
)
def test_a_line_is_redacted_as_the_generic_redaction_redacts_it(fields, tokens):
    """The ledger's short way through its own fields writes what ``redact`` of the whole record gives."""
    from otel_agents.persistence.ledger import _line
    from otel_agents.tracing.redaction import redact

    record = {**fields, "record_id": "a" * 32 + ":" + "b" * 16, "tokens": tokens}
    ordered = {"record_id": record["record_id"], **{k: v for k, v in record.items() if k != "record_id"}}
    assert _line(record) == orjson.dumps(redact(ordered)) + b"\n"


@given(st.lists(st.dictionaries(st.sampled_from([*CSV_COLUMNS, "api_key", "extra"]),
                                 st.sampled_from([*SECRETISH, "main", "gpt-4o", None, 3]), max_size=8), max_size=5))
def test_a_batch_redacts_each_repeated_text_once_and_every_line_as_alone(batch):
    """An append's records share one memo of redacted texts: each line is still what ``redact`` gives it."""
    from otel_agents.persistence.ledger import _line
    from otel_agents.tracing.redaction import redact

    records = [{**fields, "record_id": f"{n:032x}:{n:016x}"} for n, fields in enumerate(batch)]
    seen: dict[str, str] = {}
    written = [_line(record, seen) for record in records]
    assert written == [orjson.dumps(redact({"record_id": r["record_id"], **r})) + b"\n" for r in records]
    assert not any(secret in line for line in written for secret in (b"canary", b"hunter2", b"abc123"))


def test_a_torn_last_line_is_skipped_with_a_warning_and_cut_by_the_next_append(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(1)])
    with open(ledger, "ab") as fh:  # a writer killed mid-line
        fh.write(orjson.dumps(llm(2))[:57])
    warnings = []
    assert [r["record_id"] for r in iter_records(ledger, warnings.append)] == [llm(1)["record_id"]]
    assert warnings == [f"{ledger}:2: skipped a torn last line"]
    # Recovery bills the record again (its id never made it whole); the torn bytes are gone.
    assert append_records(ledger, [llm(2), llm(3)]) == 2
    warnings.clear()
    ids = [r["record_id"] for r in iter_records(ledger, warnings.append)]
    assert ids == [llm(1)["record_id"], llm(2)["record_id"], llm(3)["record_id"]]
    assert warnings == []
    assert len(ledger.read_bytes().splitlines()) == 3



def test_a_whole_last_record_missing_only_its_newline_is_kept_by_the_next_append(tmp_path):
    """It was cut as torn: a record another process wrote (or a hand edit) was lost until a rebuild."""
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(1)])
    with open(ledger, "ab") as fh:
        fh.write(orjson.dumps(llm(2)))  # whole, without its newline
    assert append_records(ledger, [llm(2), llm(3)]) == 1  # llm(2) is there already: written once
    ids = [r["record_id"] for r in iter_records(ledger, lambda _: None)]
    assert ids == [llm(1)["record_id"], llm(2)["record_id"], llm(3)["record_id"]]
    assert ledger.read_bytes().endswith(b"\n") and len(ledger.read_bytes().splitlines()) == 3


WRITER = r"""
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from ledger_samples import llm, tool
from otel_agents.persistence.ledger import append_records
ledger, worker, go = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
written = 0
pad = "x" * 5000  # lines far beyond PIPE_BUF: atomicity must come from the lock, not the kernel
for batch in range(12):
    # Neighbouring workers share half of their ids: every id is offered by two processes.
    base = worker * 100 + batch * 8
    records = [(llm if n % 2 else tool)(n) | {"pad": pad, "writer": worker} for n in range(base, base + 8)]
    records += [llm(n) | {"writer": worker} for n in range(base + 100, base + 104)]
    written += append_records(ledger, records)
print(written)
"""


def test_eight_processes_append_whole_lines_and_no_duplicate_ids(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(ledger), str(w), str(go), str(Path(__file__).parent)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for w in range(8)
    ]
    time.sleep(0.3)
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    written = sum(int(out) for out, _ in outputs)

    offered = set()
    for w in range(8):
        for batch in range(12):
            base = w * 100 + batch * 8
            offered |= set(range(base, base + 8)) | set(range(base + 100, base + 104))
    raw = ledger.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    ids = [orjson.loads(line)["record_id"] for line in lines]  # every line parses whole
    assert len(ids) == len(set(ids)) == written == len(offered)
    assert set(ids) == {llm(n)["record_id"] for n in offered}
    writers = {orjson.loads(line)["writer"] for line in lines}
    assert len(writers) > 1


REWRITER = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from ledger_samples import llm
from otel_agents.persistence.ledger import append_records
ledger, worker = Path(sys.argv[1]), int(sys.argv[2])
for n in range(60):
    append_records(ledger, [llm(worker * 1000 + n)])
"""


def test_appends_racing_a_rewrite_are_never_lost(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(n) for n in range(10)])
    here = str(Path(__file__).parent)
    procs = [subprocess.Popen([sys.executable, "-c", REWRITER, str(ledger), str(w), here]) for w in (1, 2)]
    rewrites = 0
    while any(p.poll() is None for p in procs) or rewrites < 3:
        # A rewrite that keeps what it finds (and drops one of the ten first records) under the lock.
        # Only those: on a slow machine there are over a thousand rewrites, and llm(1000) is an append.
        dropped = llm(rewrites % 10)["record_id"]
        rewrite_records(ledger, lambda old: [r for r in old if r["record_id"] != dropped])
        rewrites += 1
    assert all(p.wait(60) == 0 for p in procs)
    ids = [r["record_id"] for r in read_records(ledger)]
    assert len(ids) == len(set(ids))
    expected = {llm(w * 1000 + n)["record_id"] for w in (1, 2) for n in range(60)}
    assert expected <= set(ids), "an append made while a rewrite held the lock went to the replaced file"
    assert not list(tmp_path.glob(".billing.jsonl.*.tmp"))


def test_rewrite_returning_none_leaves_the_ledger_alone(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(1)])
    before = ledger.stat()
    seen = []
    assert rewrite_records(ledger, lambda old: seen.append(old)) is None
    assert seen == [[llm(1)]]
    assert ledger.stat().st_ino == before.st_ino and ledger.stat().st_mtime_ns == before.st_mtime_ns


# --- a long-lived appender -------------------------------------------------------------------


def _ids(ledger):
    return [r["record_id"] for r in read_records(ledger)]


def test_an_appender_reads_the_ledger_once_then_only_what_others_appended(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(n) for n in range(300)])
    appender = LedgerAppender(ledger)
    assert appender.append([llm(5), llm(1000)]) == 1  # llm(5) is there already
    assert appender.bytes_read == ledger.stat().st_size - len(orjson.dumps(llm(1000))) - 1
    read_before = appender.bytes_read
    size_before = ledger.stat().st_size
    append_records(ledger, [llm(2000), llm(2001)])  # another session's writer
    others = ledger.stat().st_size - size_before
    assert appender.append([llm(2000), llm(1000), llm(1001)]) == 1  # the others' record is seen too
    assert appender.bytes_read - read_before == others  # only what was appended meanwhile was read
    ids = _ids(ledger)
    assert len(ids) == len(set(ids)) == 304


def test_an_appender_reads_again_a_ledger_replaced_or_rewritten_in_place(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    appender = LedgerAppender(ledger)
    assert appender.append([llm(n) for n in range(10)]) == 10
    # billing rebuild replaces the file: a record it dropped is written again.
    rewrite_records(ledger, lambda old: [r for r in old if r["record_id"] != llm(9)["record_id"]])
    assert appender.append([llm(9), llm(3)]) == 1
    assert sorted(_ids(ledger)) == sorted(llm(n)["record_id"] for n in range(10))
    # The same file rewritten in place (an editor that keeps the inode), its last record changed.
    raw = ledger.read_bytes()
    last = raw.rstrip(b"\n").rsplit(b"\n", 1)[1]
    changed = last.replace(llm(9)["record_id"].encode(), llm(77)["record_id"].encode())
    with open(ledger, "r+b") as fh:
        fh.write(raw[: len(raw) - len(last) - 1] + changed + b"\n")
    assert appender.append([llm(9), llm(77)]) == 1  # 9 is gone again; 77 is there
    # Cut shorter in place, then grown again by another writer past where the appender stopped.
    with open(ledger, "r+b") as fh:
        fh.truncate(0)
    append_records(ledger, [llm(n) for n in range(500, 520)])
    assert appender.append([llm(0), llm(500)]) == 1
    ids = _ids(ledger)
    assert len(ids) == len(set(ids)) == 21 and llm(0)["record_id"] in ids


def test_reading_ahead_in_slices_knows_every_id_and_leaves_a_line_being_written(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(n) for n in range(200)])
    half = orjson.dumps(llm(200)) + b"\n"
    with open(ledger, "ab") as fh:
        fh.write(half[:40])  # a line another writer is in the middle of
    appender = LedgerAppender(ledger)
    slices = 0
    while not appender.read_ahead(4096):
        slices += 1
        assert slices < 1000
    assert slices > 5  # it really went a slice at a time
    whole = ledger.stat().st_size - 40
    assert appender.bytes_read == whole  # every whole line, not the one being written
    with open(ledger, "ab") as fh:
        fh.write(half[40:])  # ... which then ends
    # Under the lock only the rest is read: the finished line's record is known, not written twice.
    assert appender.append([llm(200), llm(7), llm(201)]) == 1
    assert appender.bytes_read == whole + len(half)
    ids = _ids(ledger)
    assert len(ids) == len(set(ids)) == 202


FAILING_APPENDER = r"""
import errno, resource, signal, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from ledger_samples import llm
from otel_agents.persistence.ledger import LedgerAppender
ledger = Path(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
appender = LedgerAppender(ledger)
appender.append([llm(1)])
size = ledger.stat().st_size
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 500, hard))
try:
    appender.append([llm(n) for n in range(2, 12)])
except OSError as exc:
    assert exc.errno == errno.EFBIG, exc
    assert ledger.stat().st_size == size  # the partial batch was taken back
else:
    raise SystemExit("the batch did not cross the limit")
resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
print(appender.append([llm(n) for n in range(2, 12)]))
"""


def test_a_batch_that_failed_is_offered_again_whole(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    done = subprocess.run([sys.executable, "-c", FAILING_APPENDER, str(ledger), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "10"  # none of the failed batch was taken for written
    assert _ids(ledger) == [llm(n)["record_id"] for n in range(1, 12)]


def test_no_append_reaches_a_file_that_is_not_a_ledger(tmp_path):
    # Every writer's appends go through here: the front doors' early refusal aside, none opens
    # (and makes private) or appends to another file a ledger path happens to name.
    other = tmp_path / "trace.json"
    other.write_text('{\n  "data": []\n}\n')
    other.chmod(0o644)
    with pytest.raises(LedgerError, match=f"{other} is not a billing ledger"):
        append_records(other, [llm(1)])
    assert other.read_text() == '{\n  "data": []\n}\n' and other.stat().st_mode & 0o777 == 0o644
