"""Session trees thousands of levels deep: built, stored, read, shown, verified and resumed without recursion."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.cli.session_render import MAX_INDENT
from otel_agents.persistence.store import NESTED_LEVELS, SessionStore, StoreError, decode_payload, make_payload
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_paths import node_at, position_of
from otel_agents.persistence.tree_walk import iter_nodes, iter_ops
from otel_agents.persistence.tree_encoding import encode_payload
from otel_agents.persistence.tree_flat import flatten, trees_equal, unflatten
from otel_agents.persistence.verify import check_tree
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

CHAIN = 1_000
DEEP_SPANS = 30_000  # of the generated 3,000-deep trace


def _cli(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "OTEL_AGENTS_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "otel_agents", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


# --------------------------------------------------------------------------- random deep shapes


def _random_spans(seed: int, count: int) -> list[SpanData]:
    """One run whose spans mostly nest in the last one made: a chain about ``count`` deep,
    with sub-agent sessions, turns, LLM calls (priced and not), tools and custom spans on the way."""
    rng = random.Random(seed)
    root = SpanData(trace_id="ab" * 16, span_id=f"{1:016x}", parent_span_id=None, name="invoke_agent main",
                    kind="INTERNAL", start_ns=1, end_ns=10 * count, attributes={
                        sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.SESSION_ID: "deep", sc.RUN_INDEX: 1,
                        sc.AGENT_ID: "agent_001"})
    spans = [root]
    tip = root  # the chain grows from here; the other spans hang off any earlier span
    for n in range(2, count + 1):
        grows = rng.random() < 0.85
        parent = tip if grows else rng.choice(spans)
        kind = rng.choice(["invoke_agent", "turn", "chat", "execute_tool", "step"])
        attributes: dict = {sc.GEN_AI_OPERATION_NAME: kind}
        if kind == "invoke_agent":
            attributes[sc.AGENT_ID] = f"agent_{rng.randrange(1, 6):03d}"
        if kind == "chat":
            attributes.update({sc.GEN_AI_USAGE_INPUT_TOKENS: rng.randrange(100), sc.GEN_AI_USAGE_OUTPUT_TOKENS: 3})
            if rng.random() < 0.7:
                attributes[sc.GEN_AI_USAGE_COST] = rng.randrange(1, 10**6) * 1e-9
        end = None if rng.random() < 0.05 else parent.start_ns + count * 10 - n
        spans.append(SpanData(trace_id=root.trace_id, span_id=f"{n:016x}", parent_span_id=parent.span_id,
                              name=f"{kind} {n}", kind="INTERNAL", start_ns=parent.start_ns + rng.randrange(1, 5),
                              end_ns=end, attributes=attributes))
        tip = spans[-1] if grows else tip
    return spans


def _depth(tree: dict) -> int:
    deepest, stack = 0, [(run, 1) for run in tree["runs"]]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        children = [*node.get("ops", []), *node.get("turns", [])] + ([node["session"]] if node.get("session") else [])
        stack.extend((child, level + 1) for child in children)
    return deepest


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32), count=st.integers(min_value=300, max_value=1_600))
def test_deep_trees_build_in_any_order_and_round_trip_through_tree_json_gz(seed, count):
    spans = _random_spans(seed, count)
    tree = build_tree(spans)
    shuffled = list(spans)
    random.Random(seed).shuffle(shuffled)
    assert _depth(tree) >= count * 0.7  # deeper than Python's recursion limit (1,000) most of the time
    assert trees_equal(build_tree(shuffled), tree)  # pure and order independent, at any depth
    assert {node["span_id"] for _, node in iter_nodes(tree)} == {span.span_id for span in spans}

    meta = {"id": "deep"}
    written = make_payload(tree, meta)
    assert written["version"] == 2  # nested, JSON this deep is refused
    payload = decode_payload(encode_payload(written), "tree.json.gz")
    assert trees_equal(payload["session"], tree) and payload["meta"] == meta
    assert check_tree(tree) == []  # every label is its operation's path and leads back to it
    deepest = max(iter_ops(tree), key=lambda ref: len(ref.label))
    assert node_at(deepest.run, position_of(deepest.label)) is deepest.op


def test_trees_equal_sees_a_difference_at_the_bottom_of_a_deep_tree():
    tree = build_tree(_random_spans(5, 3_000))
    other = build_tree(_random_spans(5, 3_000))
    assert _depth(tree) > 2_400 and trees_equal(tree, other)
    deepest = max((node for _, node in iter_nodes(other)), key=lambda node: len(node.get("path") or ""))
    deepest["name"] += " changed"
    assert not trees_equal(tree, other)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda flat: flat[1].update(ops=[0]), "not the index of a node further down"),
        (lambda flat: flat[0].update(ops=[*flat[0]["ops"], *flat[0]["turns"]][:1] * 2, turns=[]), "referred to twice"),
        (lambda flat: flat.append({"kind": "turn", "ops": []}), "no other node refers to"),
        (lambda flat: flat[0].update(turns=["1"]), "not the index"),
    ],
)
def test_a_damaged_flat_run_is_a_one_line_error_naming_the_node(tmp_path, damage, message):
    store = SessionStore.create(tmp_path, "deep")
    payload = make_payload(build_tree(_random_spans(3, 300)), {})
    damage(payload["session"]["runs"][0])
    store.tree_path.write_bytes(gzip.compress(orjson.dumps(payload)))
    with pytest.raises(StoreError, match=message) as info:
        store.load_tree()
    assert "\n" not in str(info.value) and "session.runs[0][" in str(info.value)


def test_shallow_trees_are_written_nested_as_version_1_and_deep_ones_flat(tmp_path):
    store = SessionStore.create(tmp_path, "deep")
    shallow = build_tree(_random_spans(9, 40))
    assert 10 < _depth(shallow) <= NESTED_LEVELS
    store.save_tree(make_payload(shallow, {}))
    assert orjson.loads(gzip.decompress(store.tree_path.read_bytes()))["version"] == 1
    assert trees_equal(store.load_tree(), shallow)
    deep = build_tree(_random_spans(9, 200))
    assert _depth(deep) > NESTED_LEVELS
    store.save_tree(make_payload(deep, {}))
    assert orjson.loads(gzip.decompress(store.tree_path.read_bytes()))["version"] == 2
    assert trees_equal(store.load_tree(), deep)


def test_flatten_and_unflatten_are_inverse():
    tree = build_tree(_random_spans(11, 200))
    run = tree["runs"][0]
    flat = flatten(run)
    assert all(isinstance(node.get("ops", []), list) for node in flat) and len(flat) >= 200
    assert trees_equal(unflatten(json.loads(json.dumps(flat)), "run"), run)


# --------------------------------------------------------------------------- a real 1,000-deep sub-agent chain


def _chain_script(depth: int) -> dict:
    """``main`` asks ``a1`` (with the task tool), ``a1`` asks ``a2``, ... ``a<depth-1>`` answers."""
    agents = {}
    for level in range(depth):
        name = "main" if level == 0 else f"a{level}"
        if level == depth - 1:
            agents[name] = ["bottom reached"]
        else:
            call = {"name": "task", "arguments": {"name": f"a{level + 1}", "system_prompt": "Pass it on.",
                                                  "user_prompt": "go deeper"}}
            agents[name] = [{"tool_calls": [call]}, f"level {level} done"]
    return {"name": "chain", "agents": agents, "prompts": ["start the chain"]}


def test_a_thousand_deep_sub_agent_chain_runs_saves_shows_verifies_views_and_resumes(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "chain.json"
    script.write_text(json.dumps(_chain_script(CHAIN)))

    run = _cli(home, "run", "--script", str(script))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "cannot save" not in run.stderr and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert "level 0 done" in run.stdout
    (session_id,) = [path.name for path in (home / "sessions").iterdir()]

    tree = SessionStore(home / "sessions" / session_id).load_tree()
    assert _depth(tree) >= 4 * CHAIN - 1  # run, turn, tool, session, turn, tool, ... the last agent only answers
    assert len(tree["agents"]) == CHAIN and tree["status"] == "ok"

    shown = _cli(home, "sessions", "show", session_id)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert f"session a{CHAIN - 1} (agent_{CHAIN:03d})" in shown.stdout
    # Lines stop moving right past MAX_INDENT levels: the labels say where they are.
    assert max(len(line) - len(line.lstrip()) for line in shown.stdout.splitlines()) == 2 * MAX_INDENT

    verified = _cli(home, "sessions", "verify", session_id)
    assert verified.returncode == 0 and "agree" in verified.stdout, verified.stdout[-2000:] + verified.stderr[-2000:]

    agents = _cli(home, "view", session_id, "agents")
    assert agents.returncode == 0, agents.stderr[-2000:]
    assert f"agent_{CHAIN:03d}" in agents.stdout and agents.stdout.count("subagent") == CHAIN - 1

    resumed = _cli(home, "resume", session_id, "Anything else?")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "cannot save" not in resumed.stderr and "Traceback" not in resumed.stderr
    assert SessionStore(home / "sessions" / session_id).read_meta()["runs"] == 2
    again = _cli(home, "sessions", "verify", session_id)
    assert again.returncode == 0, again.stdout[-2000:]


def test_a_deep_chain_killed_midway_is_recovered_from_its_journal(tmp_path):
    """A run killed mid-way left no tree (none is written while a run is open): readers
    rebuild it from spans.jsonl, and the owner's repair writes it back whole; a second
    repair compares the saved tree with the rebuilt one node by node (a deep ``==`` would fail)."""
    home = tmp_path / "home"
    script = tmp_path / "chain.json"
    script.write_text(json.dumps(_chain_script(400)))
    env = {**os.environ, "OTEL_AGENTS_HOME": str(home), "OTEL_AGENTS_RECORDER": "inline"}
    process = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--script", str(script)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        journal = None
        deadline = time.monotonic() + 240
        # Killed on the way back up the chain: every agent has started, the deepest have answered.
        while time.monotonic() < deadline and process.poll() is None:
            journal = next((home / "sessions").glob("*/spans.jsonl"), None) if (home / "sessions").is_dir() else None
            if journal is not None and journal.read_bytes().count(b'"end"') > 1_000:
                break
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before it could be killed"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    session_id = journal.parent.name

    shown = _cli(home, "sessions", "show", session_id)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Traceback" not in shown.stderr and "interrupted" in shown.stdout.splitlines()[0]
    assert not (journal.parent / "tree.json.gz").exists()  # readers never write
    repaired = _cli(home, "sessions", "repair", session_id)
    assert repaired.returncode == 0 and "Traceback" not in repaired.stderr, repaired.stderr[-2000:]
    tree = SessionStore(journal.parent).load_tree()  # written back whole
    again = _cli(home, "sessions", "repair", session_id)
    assert again.returncode == 0 and "nothing to repair" in again.stdout, again.stdout + again.stderr[-2000:]
    assert _depth(tree) > 4 * 399 and tree["runs"][0]["status"] == "interrupted"  # repair recorded its end
    verified = _cli(home, "sessions", "verify", session_id)
    assert verified.returncode == 0 and "agree" in verified.stdout, verified.stdout[-2000:] + verified.stderr[-2000:]


# --------------------------------------------------------------------------- a generated trace 3,000 deep


def _otlp_trace(spans: int, depth: int, seed: int = 7) -> dict:
    """One OTLP/JSON trace: a chain ``depth`` deep (a sub-agent every third level, custom spans
    between) with an LLM call on every level, and the other spans as LLM calls on its first 30
    levels (a label has a part per level, so wide and deep together would be gigabytes of labels)."""
    rng = random.Random(seed)
    trace, t0 = "ab" * 16, 1_700_000_000_000_000_000

    def attr(key, value):
        return {"key": key, "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}}

    chain: list[dict] = []
    for level in range(depth):
        attributes = [attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.id", f"agent_{level}")]
        if level == 0:
            attributes.append(attr("gen_ai.conversation.id", "deep-import"))
        span = {"traceId": trace, "spanId": f"{level + 1:016x}", "startTimeUnixNano": str(t0 + level),
                "endTimeUnixNano": str(t0 + 10 * spans - level),
                **({"name": f"invoke_agent a{level}", "attributes": attributes} if level % 3 == 0
                   else {"name": f"step {level}", "attributes": []})}
        if chain:
            span["parentSpanId"] = chain[-1]["spanId"]
        chain.append(span)
    leaves = []
    for n in range(spans - depth):
        parent = chain[n] if n < depth else chain[rng.randrange(30)]
        start = t0 + depth + n
        leaves.append({"traceId": trace, "spanId": f"{depth + n + 1:016x}", "parentSpanId": parent["spanId"],
                       "name": "chat m", "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1),
                       "attributes": [attr("gen_ai.operation.name", "chat"), attr("gen_ai.request.model", "m"),
                                      attr("gen_ai.usage.input_tokens", 10), attr("gen_ai.usage.output_tokens", 2)]})
    return {"resourceSpans": [{"resource": {"attributes": [attr("service.name", "deep")]},
                               "scopeSpans": [{"scope": {"name": "generator"}, "spans": chain + leaves}]}]}


def test_a_trace_three_thousand_deep_imports_shows_and_verifies(tmp_path):
    # Depth is what this file is about: 3,000 levels with 27,000 LLM calls on and around them. Import at
    # 100,000 spans is timed by benchmarks/bench_import.py, not here (it costs a minute of the suite).
    home = tmp_path / "home"
    source = tmp_path / "deep.json"
    source.write_bytes(orjson.dumps(_otlp_trace(DEEP_SPANS, 3_000)))

    imported = _cli(home, "import", str(source))
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert f"{DEEP_SPANS} span(s)" in imported.stdout and "Traceback" not in imported.stderr

    tree = SessionStore(home / "sessions" / "deep-import").load_tree()
    assert _depth(tree) >= 3_000
    calls = DEEP_SPANS - 3_000  # every span but the chain's is an LLM call of 10 input tokens
    assert tree["totals"]["inclusive"]["llm_calls"] == calls and tree["totals"]["inclusive"]["input_tokens"] == 10 * calls

    shown = _cli(home, "sessions", "show", "deep-import")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "agent_2997" in shown.stdout
    verified = _cli(home, "sessions", "verify", "deep-import")
    assert verified.returncode == 0 and "agree" in verified.stdout, verified.stdout[-2000:]
