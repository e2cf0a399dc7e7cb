"""tree.json.gz bytes: members cut at run boundaries, the same bytes whatever was remembered, only changes compressed."""

from __future__ import annotations

import gzip
import random
import zlib

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_agents.persistence.tree_encoding import (
    GROUP_BYTES,
    PART_BYTES,
    TreeEncoder,
    encode_payload,
    payload_pieces,
    run_groups,
)

GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00"  # deflate, no flags, mtime 0: one per member

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@given(objects, st.lists(objects, max_size=5), objects, st.integers(0, 4), objects)
def test_the_pieces_join_into_the_payloads_json(before, runs, after, at, meta):
    items = list(before.items())
    session = dict(items[:at] + [("runs", runs)] + [i for i in items[at:] if i[0] != "runs"])
    session.update({k: v for k, v in after.items() if k != "runs"})
    payload = {"version": 1, "session": session, "meta": meta}
    head, run_texts, tail = payload_pieces(payload)
    assert head + b",".join(run_texts) + tail == orjson.dumps(payload)
    assert gzip.decompress(encode_payload(payload)) == orjson.dumps(payload)


def test_a_payload_without_runs_is_one_piece_and_still_reads_back():
    payload = {"version": 1, "session": {"notes": ["a"] * 10}, "meta": {}}
    assert payload_pieces(payload) is None
    assert gzip.decompress(encode_payload(payload)) == orjson.dumps(payload)


def _session(runs: int, *, seed: int = 1, size: int = 2_000) -> dict:
    rng = random.Random(seed)
    return {
        "version": 1,
        "session": {
            "id": "s", "agents": {"agent_001": {"name": "main"}},
            "runs": [
                {"span_id": f"{i:016x}", "index": i + 1,
                 "turns": [f"turn {i}.{k}: {rng.getrandbits(64):x} " + "words " * rng.randint(1, size // 6)
                           for k in range(10)]}
                for i in range(runs)
            ],
            "ops": [], "totals": {"llm_calls": runs},
        },
        "meta": {"title": "t", "updated": f"2026-01-01T00:00:{runs:02d}Z"},
    }


def test_large_runs_are_cut_into_parts_and_read_as_one_stream(tmp_path):
    payload = _session(3, size=500_000)  # runs of about 1.5 MiB of JSON each
    data = encode_payload(payload)
    assert len(orjson.dumps(payload)) > 3 * PART_BYTES
    assert data.count(GZIP_HEADER) >= 3 + 2 + 3  # head, tail, and at least two parts per run
    assert data == encode_payload(payload)  # the same bytes every time, whatever the threads did
    path = tmp_path / "tree.json.gz"
    path.write_bytes(data)
    with gzip.open(path) as handle:  # a streaming reader reads every member too
        assert orjson.loads(handle.read()) == payload


def test_small_runs_share_members():
    payload = _session(400, size=2_000)
    head, runs, tail = payload_pieces(payload)
    groups = list(run_groups(runs))
    assert 1 < len(groups) < len(runs) / 20
    assert all(len(group) >= GROUP_BYTES for group in groups[:-1])
    assert b",".join(runs) == b"".join(groups)
    assert encode_payload(payload).count(GZIP_HEADER) == len(groups) + 2


def test_a_growing_session_compresses_only_what_changed_and_writes_what_a_fresh_encoder_writes():
    encoder = TreeEncoder()
    payload = _session(300)
    first = encoder.encode(payload)
    assert first == encode_payload(payload)
    whole = encoder.compressed_bytes
    assert whole == len(orjson.dumps(payload))
    # A run more, and the summary and meta changed: the earlier full groups are copied.
    payload = _session(301)
    assert encoder.encode(payload) == encode_payload(payload)
    again = encoder.compressed_bytes - whole
    assert again < 3 * GROUP_BYTES < whole / 2
    # A run changed in place (the same object): its group is compressed afresh, never copied stale.
    payload["session"]["runs"][5]["turns"][0] = "changed"
    before = encoder.compressed_bytes
    data = encoder.encode(payload)
    assert orjson.loads(gzip.decompress(data))["session"]["runs"][5]["turns"][0] == "changed"
    assert data == encode_payload(payload)
    assert encoder.compressed_bytes - before >= GROUP_BYTES


def test_a_file_read_back_lends_its_members_to_the_next_write():
    """A resumed session reads its tree through its writer's encoder: the saved runs are not compressed again."""
    saved = _session(200)
    data = encode_payload(saved)
    encoder = TreeEncoder()
    assert encoder.decompress(data) == gzip.decompress(data) == orjson.dumps(saved)
    resumed = _session(202)  # the saved runs and two new ones
    assert encoder.encode(resumed) == encode_payload(resumed)
    assert encoder.compressed_bytes < 3 * GROUP_BYTES < len(orjson.dumps(saved)) / 2


def test_members_written_elsewhere_are_read_but_not_lent():
    payload = _session(50)
    text = orjson.dumps(payload)
    foreign = gzip.compress(text[:1000], compresslevel=9) + gzip.compress(text[1000:], mtime=12345)
    encoder = TreeEncoder()
    assert encoder.decompress(foreign) == text
    assert encoder.encode(payload) == encode_payload(payload)
    assert encoder.compressed_bytes == len(text)  # everything compressed afresh


@pytest.mark.parametrize("damage", [
    lambda data: data[:-5],  # cut short
    lambda data: data[:40] + b"\x00" * 8 + data[48:],  # a compressed byte damaged
    lambda data: data + b"not gzip",
])
def test_a_damaged_file_fails_as_gzip_fails(damage):
    data = damage(encode_payload(_session(3)))
    with pytest.raises((EOFError, OSError, zlib.error)) as by_gzip:
        gzip.decompress(data)
    with pytest.raises(by_gzip.type):
        TreeEncoder().decompress(data)


def test_zero_padding_after_a_member_is_read_as_gzip_reads_it():
    data = encode_payload(_session(3)) + b"\x00" * 16
    assert TreeEncoder().decompress(data) == gzip.decompress(data)


def test_a_reserved_header_flag_is_read_as_gzip_reads_it():
    """zlib refuses a gzip header with a reserved flag bit set; the gzip module reads past it
    (found by the property below in CI). The encoder's reader gives gzip's answer."""
    data = bytearray(encode_payload(_session(3)))
    data[3] ^= 0x20  # FLG of the first member: a reserved bit
    assert TreeEncoder().decompress(bytes(data)) == gzip.decompress(bytes(data))


@given(st.data())
def test_any_damage_is_read_as_gzip_reads_it(data):
    """Whatever happens to the bytes, the encoder's reader gives what gzip gives, or fails where gzip fails."""
    original = encode_payload(_session(4, size=300))
    damaged = bytearray(original)
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(["flip", "cut", "append"]))
        if kind == "flip" and damaged:
            at = data.draw(st.integers(0, len(damaged) - 1))
            damaged[at] ^= data.draw(st.integers(1, 255))
        elif kind == "cut":
            del damaged[data.draw(st.integers(0, len(damaged))):]
        else:
            damaged += data.draw(st.binary(max_size=40))
    try:
        expected = gzip.decompress(bytes(damaged))
    except (OSError, EOFError, zlib.error):
        expected = None
    try:
        got = TreeEncoder().decompress(bytes(damaged))
    except (OSError, EOFError, zlib.error):
        got = None
    assert got == expected
