"""Do the tree, events.jsonl and the ledger tell the same story? Pure comparisons.

Each check returns a list of one-line disagreements (empty: they agree):

- records: the multiset of seed-001 records held in the tree equals the lines
  of events.jsonl (same content, same span, same timestamp);
- ledger: every LLM attempt and tool call of every run that is over has exactly
  one ledger record, equal to the one derived from the tree, and the ledger
  holds no record for this session that the tree cannot explain;
- tree: stored path labels match tree positions, and the totals computed from
  the accounting entries match the totals the runtime put on the spans.

The values quoted are redacted, as every console line is.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from otel_agents.persistence.events_file import EventLine
from otel_agents.persistence.ledger_records import as_recorded
from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.timestamps import iso_ts
from otel_agents.persistence.tree_kinds import STATUS_IN_PROGRESS
from otel_agents.persistence.tree_paths import label_of, node_at, position_of
from otel_agents.persistence.tree_walk import iter_ops, iter_records, iter_sessions
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.redaction import redact, redact_text

COST_TOLERANCE = 1e-9


def _short(value: Any, limit: int = 60) -> str:
    """A value as the console may quote it: redacted like every console line (docs/spans.md "Secrets"),
    before it is cut, so a cut secret is never left unrecognised."""
    text = redact_text(repr(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field_diffs(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    out = []
    for key in list(expected) + [k for k in actual if k not in expected]:
        if expected.get(key) != actual.get(key) or (key in expected) != (key in actual):
            out.append(f"{key}: {_short(expected.get(key))} vs {_short(actual.get(key))}")
    return out


def compare_records(tree: Mapping[str, Any], lines: Sequence[EventLine], *, missing_said: bool = False) -> list[str]:
    """``missing_said``: the records of the tree events.jsonl lacks were counted in one line already (a stream
    cut short), not named again one by one."""
    problems: list[str] = []
    in_tree: dict[str, Any] = {}
    for ref in iter_records(tree):
        mid = ref.record.get("message_id")
        if mid in in_tree:
            problems.append(f"tree: message id {mid} appears on two spans ({in_tree[mid].span_id}, {ref.span_id})")
        in_tree[mid] = ref
    in_events: dict[str, tuple[int, EventLine]] = {}
    for number, line in enumerate(lines, start=1):
        mid = line.record.get("message_id")
        if mid in in_events:
            problems.append(f"events.jsonl: message id {mid} appears twice (records {in_events[mid][0]} and {number})")
        in_events[mid] = (number, line)
    for mid, ref in in_tree.items():
        if mid not in in_events:
            if missing_said:
                continue
            kind = ref.record.get("event_type")
            problems.append(f"{mid} ({kind} of {ref.record.get('agent_id')}) is in the tree but not in events.jsonl")
            continue
        number, line = in_events[mid]
        diffs = _field_diffs(ref.record, line.record)
        if diffs:
            problems.append(f"{mid}: tree vs events.jsonl record {number} differ: " + "; ".join(diffs))
        if (ref.span_id, ref.trace_id) != (line.span_id, line.trace_id):
            problems.append(
                f"{mid}: emitted on span {ref.span_id} in the tree but on span {line.span_id} in events.jsonl"
            )
        if iso_ts(ref.ts_ns) != line.ts:
            problems.append(f"{mid}: time {iso_ts(ref.ts_ns)} in the tree but {line.ts} in events.jsonl")
    for mid, (number, line) in in_events.items():
        if mid not in in_tree:
            problems.append(
                f"{mid} ({line.record.get('event_type')} of {line.record.get('agent_id')}, events.jsonl record {number}) "
                "is not in the tree"
            )
    return problems


def compare_ledger(
    tree: Mapping[str, Any], ledger: Iterable[Mapping[str, Any]], *, live: bool = False, recoverable: bool = False
) -> list[str]:
    """``ledger``: every ledger record (other sessions' are ignored). ``live``: a process is
    still writing this session, so its unfinished runs are not billed yet. ``recoverable``:
    its writer died, so what it had not billed yet is billed by the recovery (not a disagreement)."""
    session_id = tree.get("id")
    mine = [r for r in ledger if r.get("session_id") == session_id]
    problems: list[str] = []
    counts = Counter(r.get("record_id") for r in mine)
    for record_id, count in counts.items():
        if count > 1:
            problems.append(f"ledger: record {record_id} is written {count} times")
    by_id = {r.get("record_id"): r for r in mine}
    unfinished = {run["index"] for run in tree.get("runs", []) if run["status"] == STATUS_IN_PROGRESS}
    expected = ledger_records(tree)
    expected_ids = set()
    for record in expected:
        rid = record["record_id"]
        expected_ids.add(rid)
        actual = by_id.get(rid)
        if actual is None:
            if (live and record["run"] in unfinished) or recoverable:
                continue
            problems.append(
                f"ledger lacks {record['type']} record {rid} (run {record['run']}, path {record['path']}, "
                f"{record['agent_name']})"
                + (" — its run never finished; `sessions repair` bills it" if record["run"] in unfinished else "")
            )
            continue
        diffs = _field_diffs(redact(record), as_recorded(actual))  # a re-priced record still matches its span
        if diffs:
            problems.append(f"ledger record {rid} (path {record['path']}) differs from the tree: " + "; ".join(diffs))
    for rid in by_id:
        if rid not in expected_ids:
            problems.append(f"ledger record {rid} names session {session_id} but no operation of the tree")
    return problems


def check_tree(tree: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    seen: set[tuple[Any, str]] = set()
    found: dict[tuple[int, str], Any] = {}  # (id of the run, label) -> the node that label led to
    for ref in iter_ops(tree):
        key = (ref.run["index"] if ref.run else None, ref.label)
        if key in seen:
            problems.append(f"tree: label {ref.label} is used twice in run {key[0]}")
        seen.add(key)
        if ref.op.get("path") != ref.label:
            problems.append(f"tree: operation {ref.op['span_id']} is labelled {ref.op.get('path')} at {ref.label}")
        if ref.run is not None and _follow(ref.run, ref.label, found) is not ref.op:
            problems.append(f"tree: label {ref.label} does not lead back to operation {ref.op['span_id']}")
    for run in tree.get("runs", []):
        for t, turn in enumerate(run.get("turns", []), start=1):
            if turn.get("path") != label_of(((t,),)):
                problems.append(f"tree: run {run['index']} turn {t} is labelled {turn.get('path')}")
    for node in iter_sessions(tree):
        problems += _check_totals(node, f"{node['name']} ({node['span_id']})")
        for turn in node.get("turns", []):
            problems += _check_totals(turn, f"turn {turn.get('path')} of {node['name']} ({turn['span_id']})")
    return problems


def _follow(run: Mapping[str, Any], label: str, found: dict[tuple[int, str], Any]) -> Any:
    """``node_at(run, position_of(label))``, taking the last step from where the label's parent
    led (labels come parents first): each step once, however deep the tree (None: leads nowhere)."""
    last = label.rpartition(".")[2]
    try:
        if last.count("-") >= 2:  # an operation nested in an operation
            parent, _, k = label.rpartition("-")
            ops = found.get((id(run), parent))["ops"]
            index = int(k)
            node = ops[index - 1] if 1 <= index <= len(ops) else None
        elif len(last) < len(label):  # an operation of a sub-agent's session
            parent = found.get((id(run), label[: len(label) - len(last) - 1]))
            node = node_at(parent["session"], position_of(last))
        else:
            node = node_at(run, position_of(label))
    except (KeyError, ValueError, TypeError):
        node = None
    found[(id(run), label)] = node
    return node


def _check_totals(node: Mapping[str, Any], where: str) -> list[str]:
    problems = []
    attrs = node.get("attributes", {})
    for scope in ("self", "inclusive"):
        computed = node["totals"][scope]
        for key in sc.TOTAL_KEYS:
            recorded = attrs.get(sc.total_attr(scope, key))
            if recorded is None:
                continue  # unfinished, or a trace from elsewhere: nothing to compare
            value = computed[key]
            if isinstance(recorded, bool) or not isinstance(recorded, (int, float)):
                same = False  # a span attribute that is not a number never agrees (said below, not raised)
            else:
                same = abs(value - recorded) <= COST_TOLERANCE if key == "cost_usd" else value == recorded
            if not same:
                shown = recorded if isinstance(recorded, (int, float)) else _short(recorded)
                problems.append(f"tree: {where} {scope} {key} is {value} from its operations but {shown} on its span")
    return problems


def verify_session(
    tree: Mapping[str, Any],
    lines: Sequence[EventLine] | None,
    ledger: Iterable[Mapping[str, Any]] | None,
    *,
    live: bool = False,
    recoverable: bool = False,
    missing_said: bool = False,
) -> list[str]:
    """All disagreements among the three; ``ledger`` None skips the ledger check, ``lines`` None the records'
    (``missing_said``: as :func:`compare_records` takes it)."""
    problems = check_tree(tree) + (compare_records(tree, lines, missing_said=missing_said) if lines is not None else [])
    if ledger is not None:
        problems += compare_ledger(tree, ledger, live=live, recoverable=recoverable)
    return problems
