"""Faults of the model endpoint, through the real CLI and litellm's real HTTP path.

Each fault ends in its documented outcome (docs/reliability.md): retried and
succeeded, or one clear error. Every attempt is an ``llm`` operation in the tree
and a ledger record (failed ones with zero tokens and a null cost), and the
session resumes afterwards with ``sessions verify`` agreeing.

The runtime never asks for a streamed response, so "a stream cut short" is the
nearest thing a non-streaming client meets: a response body that ends early
(the connection closed mid body, or a body that stops without its end).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from reliability_helpers import MODEL, invoke, ledger, llm_ops, load_tree, session_id_of, verify
from support.openai_server import Reply
from support.stderr_lines import error_lines

TIMEOUT_S = 0.5


@dataclass(frozen=True)
class Fault:
    replies: tuple[Reply, ...]
    failed_types: tuple[str, ...]  # error.type of each failed attempt, in order
    succeeds: bool
    max_attempts: int = 3
    stderr_hint: str | None = None
    unplanned_left: int = 0  # planned replies never asked for (a non-retryable error stops at once)
    extra: dict = field(default_factory=dict)


FAULTS = {
    "429 with Retry-After": Fault(
        (Reply.error(429, retry_after=0.3), Reply(content="answer")), ("RateLimitError",), True,
        stderr_hint="retrying in 0.30s",  # the server's hint, not the jittered backoff
    ),
    "500": Fault((Reply.error(500), Reply(content="answer")), ("InternalServerError",), True),
    "503 twice": Fault(
        (Reply.error(503), Reply.error(503), Reply(content="answer")),
        ("ServiceUnavailableError", "ServiceUnavailableError"), True,
    ),
    "slow past the timeout": Fault((Reply.slow(3.0), Reply(content="answer")), ("Timeout",), True),
    "connection reset mid-response": Fault((Reply.reset(), Reply(content="answer")), ("InternalServerError",), True),
    "malformed JSON": Fault((Reply.malformed(), Reply(content="answer")), ("InternalServerError",), True),
    "body cut short (connection closed)": Fault(
        (Reply.cut_stream(), Reply(content="answer")), ("InternalServerError",), True
    ),
    "body cut short (clean end, no finish)": Fault(
        (Reply.cut_stream(abrupt=False), Reply(content="answer")), ("InternalServerError",), True
    ),
    "auth error": Fault(
        (Reply.error(401), Reply(content="never asked")), ("AuthenticationError",), False,
        stderr_hint="failed after 1 attempt: AuthenticationError", unplanned_left=1,
    ),
    "context window": Fault(
        (Reply.context_window(), Reply(content="never asked")), ("ContextWindowExceededError",), False,
        stderr_hint="failed after 1 attempt: ContextWindowExceededError", unplanned_left=1,
    ),
    "transient faults until attempts run out": Fault(
        (Reply.error(500), Reply.reset(), Reply.error(502)),
        ("InternalServerError", "InternalServerError", "BadGatewayError"), False,
        stderr_hint="failed after 3 attempts: BadGatewayError",
    ),
}


def model_args(server, max_attempts: int = 3) -> list[str]:
    return ["--model", MODEL, "--api-base", server.api_base, "--timeout", str(TIMEOUT_S),
            "--max-attempts", str(max_attempts)]


@pytest.mark.parametrize("name", list(FAULTS))
def test_a_model_fault_ends_as_documented_with_every_attempt_kept(name, rel_home, model_server):
    fault = FAULTS[name]
    model_server.plan(*fault.replies)
    result = invoke(["run", *model_args(model_server, fault.max_attempts), "hello"])
    attempts = len(fault.failed_types) + (1 if fault.succeeds else 0)

    # The outcome: an answer on stdout, or exit 1 with one clear line (no traceback).
    assert "Traceback" not in result.output
    if fault.succeeds:
        assert result.exit_code == 0, result.output
        assert result.stdout == "answer\n"
    else:
        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        errors = error_lines(result.stderr)
        assert len(errors) == 1 and errors[0].startswith(f"error: model '{MODEL}' failed after"), result.stderr
    if fault.stderr_hint:
        assert fault.stderr_hint in result.stderr
    assert len(model_server.requests) == attempts
    assert model_server.pending == fault.unplanned_left
    session_id = session_id_of(result.stderr)

    # The tree: one llm operation per attempt, in one turn, failed ones with their error.
    tree = load_tree(rel_home, session_id)
    (run,) = tree["runs"]
    ops = llm_ops(run)
    assert [op["attributes"]["otel_agents.llm.attempt"] for op in ops] == list(range(1, attempts + 1))
    assert len({op["path"].split("-")[0] for op in ops}) == 1  # all attempts in the same turn
    for op, error_type in zip(ops, fault.failed_types):
        assert op["status"] == "error" and op["error"].startswith(f"{error_type}: "), op["error"]
        assert op["attributes"]["error.type"] == error_type
    if fault.succeeds:
        assert ops[-1]["status"] == "ok" and ops[-1]["error"] is None
        assert run["status"] == "ok"
    else:
        assert run["status"] == "error"

    # The ledger: the same attempts, once each, failed ones billed as failed with nothing charged.
    records = [r for r in ledger(rel_home / "billing.jsonl", session_id) if r["type"] == "llm"]
    assert [r["span_id"] for r in records] == [op["span_id"] for op in ops]
    assert [r["attempt"] for r in records] == list(range(1, attempts + 1))
    for record, op in zip(records, ops):
        assert record["status"] == ("ok" if op["status"] == "ok" else "failed")
        assert record["error"] == op["error"]
        assert record["path"] == op["path"] and record["run"] == 1
    for record in records[: len(fault.failed_types)]:
        assert record["tokens"]["total"] == 0 and record["cost_usd"] is None
    if fault.succeeds:
        assert records[-1]["tokens"]["total"] > 0
    assert verify(session_id).exit_code == 0

    # The session goes on: a resumed run answers, nothing billed twice, all files agree.
    model_server.reset_state()
    model_server.plan(Reply(content="resumed answer"))
    resumed = invoke(["resume", session_id, "next", *model_args(model_server)])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == "resumed answer\n"
    (body,) = model_server.bodies
    assert body["messages"][-1] == {"role": "user", "content": "next"}
    if fault.succeeds:  # the retried answer is in the context; failed attempts left nothing behind
        assistant = [m for m in body["messages"] if m["role"] == "assistant"]
        assert [m["content"] for m in assistant] == ["answer"]
    else:
        assert [m["role"] for m in body["messages"]] == ["system", "user", "user"]
    after = [r for r in ledger(rel_home / "billing.jsonl", session_id) if r["type"] == "llm"]
    assert len(after) == attempts + 1 and len({r["record_id"] for r in after}) == attempts + 1
    assert [r["run"] for r in after] == [1] * attempts + [2]
    checked = verify(session_id)
    assert checked.exit_code == 0, checked.output
    assert len(load_tree(rel_home, session_id)["runs"]) == 2


def test_a_fault_inside_a_sub_agent_is_kept_at_its_place(rel_home, model_server):
    """A 500 in a sub-agent's call: retried there, the attempt nested under the task tool's invocation."""
    model_server.plan(
        Reply(tool_calls=[("task", {"name": "Helper", "system_prompt": "You help.", "user_prompt": "Say hi"})]),
        Reply.error(500),
        Reply(content="hi from the helper"),
        Reply(content="The helper said hi."),
    )
    result = invoke(["run", *model_args(model_server), "delegate"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "The helper said hi.\n"
    session_id = session_id_of(result.stderr)
    tree = load_tree(rel_home, session_id)
    ops = llm_ops(tree)
    failed = [op for op in ops if op["status"] == "error"]
    assert len(failed) == 1 and failed[0]["attributes"]["gen_ai.agent.name"] == "Helper"
    # Label: main's turn 1, its 2nd op (task), the invocation inside it, Helper's turn 1, 1st attempt.
    assert failed[0]["path"] == "1-2-2.1-1"
    retry = next(op for op in ops if op["path"] == "1-2-2.1-2")
    assert retry["status"] == "ok" and retry["attributes"]["otel_agents.llm.attempt"] == 2
    records = {r["path"]: r for r in ledger(rel_home / "billing.jsonl", session_id) if r["type"] == "llm"}
    assert records["1-2-2.1-1"]["status"] == "failed" and records["1-2-2.1-1"]["agent_name"] == "Helper"
    assert records["1-2-2.1-1"]["call_path"] == "main/Helper"
    assert records["1-2-2.1-2"]["status"] == "ok"
    assert len(records) == len(ops) == 4
    assert verify(session_id).exit_code == 0
