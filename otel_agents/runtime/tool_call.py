"""One tool call of an agent's turn: its span, its approval, the call, and the result it always gets."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_agents.llm.accounting import charge_tool
from otel_agents.llm.budget import BudgetExhausted, in_force
from otel_agents.runtime.hooks import ToolRequest
from otel_agents.runtime.tools import InvalidToolArguments, ToolContext, plain_result, result_problem
from otel_agents.tracing import content_capture, semconv as sc
from otel_agents.tracing.records import storable_text
from otel_agents.tracing.telemetry import marks_cancellation

if TYPE_CHECKING:
    from otel_agents.runtime.agent import Agent

# The result of a tool call the run stopped in (Ctrl-C, a cancelled task), and of one a crash left
# open, which resume gives the same words (restore.py).
INTERRUPTED_RESULT = "Error: the run was interrupted before this tool call finished; its outcome is unknown."
# What stops a run without being an error of the call it passes through: a cancelled task, a second
# Ctrl-C raised inside a tool's own code, a tool's sys.exit(). Each call it stops still gets a result,
# as does one any other BaseException (not an Exception: no failure of the call) passes through.
INTERRUPTIONS = (asyncio.CancelledError, KeyboardInterrupt, SystemExit)


async def run_tool_call(agent: "Agent", call: dict[str, Any], call_message_id: str) -> None:
    """One call of ``agent``'s turn in its ``execute_tool`` span. Arguments that do not fit never reach a
    hook or the tool; a denial, a failure or a stop is the call's result, so every call gets one. What
    stops the run (a budget in force, an interruption) is raised once the result is recorded."""
    name = call["function"]["name"]
    raw_args = call["function"].get("arguments") or ""
    tool = agent.tools.get(name)
    attrs = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_CALL_ID: call["id"],
        sc.GEN_AI_TOOL_TYPE: tool.tool_type if tool else "function",
        sc.GEN_AI_TOOL_DESCRIPTION: tool.description if tool else None,
        sc.TOOL_PROVIDER: tool.provider if tool else None,
        sc.GEN_AI_AGENT_NAME: agent.name,
        sc.GEN_AI_CONVERSATION_ID: agent.session.id,
        sc.AGENT_ID: agent.agent_id,
        sc.TOOL_CALL_MESSAGE_ID: call_message_id,
        sc.TOOL_CHARS_IN: len(raw_args),
    }
    capture = agent.session.llm.capture_input_messages
    if capture:
        attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = content_capture.as_json(content_capture.tool_call_arguments(raw_args))
    attrs = {k: v for k, v in attrs.items() if v is not None}
    telemetry = agent.session.telemetry
    with telemetry.tracer.start_as_current_span(
        sc.span_name(sc.OP_EXECUTE_TOOL, name), kind=SpanKind.INTERNAL, attributes=attrs,
        record_exception=False, set_status_on_exception=False,
    ) as span, marks_cancellation(span):
        started = time.perf_counter()
        ctx = ToolContext(agent, call["id"], call_message_id, name)
        status, result = "ok", None
        stop: BaseException | None = None  # what ends the run, raised once the call has its result
        if tool is None:
            status, result = "failed", f"Error: unknown tool '{name}'"
        else:
            try:
                # Arguments that do not fit the signature never reach a hook or the tool.
                arguments = tool.parse_arguments(raw_args)
            except InvalidToolArguments as exc:
                status, result = "failed", str(exc)
            else:
                try:
                    denial = await agent.session.hooks.approve(ToolRequest(agent, name, arguments.sent, call["id"]))
                except (BudgetExhausted, *INTERRUPTIONS) as exc:
                    denial, stop = None, exc
                except Exception:
                    raise  # approve answers a failed hook itself: one escaping it is a bug, not a stop
                except BaseException as exc:
                    denial, stop = None, exc
                if stop is not None:
                    status, result = _stopped(span, stop)
                elif denial is not None:
                    hook_name, decision = denial
                    status, result = "denied", decision.told(f"Error: Action blocked by hook '{hook_name}'")
                    # Caused by the hook agent's answer, when an agent judged, and by the call it judged.
                    cause = [decision.message_id, call_message_id] if decision.message_id else [call_message_id]
                    agent.host_notice("denial", decision.told(f"{agent.name} may not run {name}: hook '{hook_name}' "
                                                             "denied it"), cause)
                else:
                    try:
                        result = await tool.invoke(ctx, arguments.values)
                    except BudgetExhausted as exc:
                        if in_force(exc.meter):  # this agent's budget or an enclosing one: it stops too
                            stop = exc
                            status, result = _stopped(span, exc)
                        else:
                            status, result = "failed", f"Error: {exc}"  # a sub-agent's: its caller carries on
                    except INTERRUPTIONS as exc:
                        stop = exc
                        status, result = _stopped(span, exc)
                    except Exception as exc:  # a failing tool is a result, not a crash
                        status = "failed"
                        result = f"Error: tool '{name}' failed: {type(exc).__name__}: {exc}"
                    except BaseException as exc:  # stops the run as an interruption does
                        stop = exc
                        status, result = _stopped(span, exc)
                    else:
                        result = plain_result(result)
                        problem = result_problem(name, result)
                        if problem is not None:  # the model is told, as of any failed call
                            status, result = "failed", problem
        ctx.ended = True  # the tool returned or raised: a reply it kept the context for is refused
        if isinstance(result, str):  # a tool's or a hook's text, as UTF-8 can hold it: the span is saved too
            result = storable_text(result)
        if status != "ok" and not _interrupts(stop):  # an interruption is no error
            if stop is None:
                span.set_status(Status(StatusCode.ERROR, result))
                span.set_attribute(sc.ERROR_TYPE, "tool_" + status)
            telemetry.log("WRN", str(result), span=span)
        if ctx.replies and result is None and stop is None:
            # The tool replied as it went (discuss) and finished: its call has its results. One stopped
            # midway gets its stop's result after the replies, so the model knows the call was cut off.
            content = None
            out_chars = sum(len(r) for r in ctx.replies)
            agent.session.hooks.tool_used(agent, name, ctx.last_reply_id)  # it ran: remind hooks hear of it
        else:
            content = result if isinstance(result, str) else storable_text(
                json.dumps(result, ensure_ascii=False))  # text or JSON alone get here (result_problem)
            if result is None:
                content = ""
            out_chars = len(content)
            result_id = agent.harken_tool_result(call["id"], name, content)
            span.set_attribute(sc.TOOL_RESULT_MESSAGE_ID, result_id)
            agent.session.hooks.tool_used(agent, name, result_id)
            if capture and status == "ok":  # the registry's result is a successful execution's
                telemetry.set_attributes(
                    span, {sc.GEN_AI_TOOL_CALL_RESULT: content_capture.as_json(content_capture.tool_call_result(content))}
                )
        span.set_attributes(
            {
                sc.TOOL_STATUS: status,
                sc.TOOL_CHARS_OUT: out_chars,
                sc.TOOL_LATENCY_MS: round((time.perf_counter() - started) * 1000, 3),
            }
        )
        if _interrupts(stop):
            raise stop  # not charged: the tree and the ledger count only calls that completed
        charge_tool()
        if stop is not None:
            raise stop


def _stopped(span: Any, stop: BaseException) -> tuple[str, str]:
    """The status and result of a tool call the run stopped in: the call still gets a result, so the
    transcript stays one a provider accepts when the session goes on (seed 004: nothing hidden)."""
    if _interrupts(stop):
        return "failed", INTERRUPTED_RESULT
    span.set_status(Status(StatusCode.ERROR, str(stop)))
    span.set_attribute(sc.ERROR_TYPE, "budget_exhausted")
    return "failed", f"Error: {stop}"


def _interrupts(stop: BaseException | None) -> bool:
    """Whether ``stop`` ends the run as an interruption does: anything but a budget in force."""
    return stop is not None and not isinstance(stop, BudgetExhausted)
