"""Cut JSON text read back (tracing/cut_json.py): every cut of a container reads, whole text reads exactly."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from otel_agents.tracing.cut_json import loads_cut

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                             max_size=4), max_leaves=12)
_CONTAINERS = st.lists(_VALUES, max_size=4) | st.dictionaries(st.text(max_size=6), _VALUES, max_size=4)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _texts(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _texts(item)


@settings(max_examples=150, deadline=None)
@given(_CONTAINERS, st.booleans(), st.booleans())
def test_every_cut_of_a_container_reads_and_the_whole_reads_exactly(value, ascii_only, spaced):
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(", ", ": ") if spaced else (",", ":"))
    assert loads_cut(text) == value
    for end in range(1, len(text)):
        kept = loads_cut(text[:end])  # never raises
        assert isinstance(kept, type(value))  # the container the text opened
        assert not any(_LONE_SURROGATE.search(t) for t in _texts(kept))  # half an escaped pair: no file holds it


@pytest.mark.parametrize("text", ["", "x", "nope", '{"a":1}}', '{"a":1} x', "]", '["a"]]'])
def test_text_that_is_no_cut_value_raises_as_json_loads_does(text):
    with pytest.raises(ValueError) as raised:
        loads_cut(text)
    with pytest.raises(ValueError) as plain:
        json.loads(text)
    assert str(raised.value) == str(plain.value)


def test_a_cut_tool_call_keeps_its_id_and_name():
    calls = json.dumps([{"id": "call_1", "type": "function", "function": {"name": "write", "arguments": '{"t": "x"}'}}])
    cut = calls[:calls.index("arguments") + 20]
    (call,) = loads_cut(cut)
    assert call["id"] == "call_1" and call["function"]["name"] == "write"
    assert call["function"]["arguments"].startswith('{"t')


@pytest.mark.parametrize("cut", ['{"name":"probe","a', '{"name":"probe","arguments"', '{"name":"probe","arguments":',
                                 '{"name":"probe", "arguments" : '])
def test_a_key_cut_or_left_without_its_value_is_left_out_never_invented(cut):
    # A cut mid-key read back as {"name": "probe", "a": null}: a key the sender never had.
    assert loads_cut(cut) == {"name": "probe"}
