"""SessionViewer: the seed-001 perspectives on a saved session.

Built from a list of records (pure; tests and benchmarks) or from a session
directory. Agent arguments accept an id, a name (when unique) or a path of
names from the root (``main/Jill/Inner``). Every operation is linear in what it
returns or in the records of the agents it concerns; the indexes are built once.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from otel_agents.persistence.events_file import EVENTS_FILE
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_from_record
from otel_agents.views.agent_infos import agent_infos
from otel_agents.views.chat_spans import ChatSpans, check_context_attributes, tool_schemas
from otel_agents.views.errors import AmbiguousAgent, SessionDataError, UnknownAgent, UnknownMessage, UnknownSpan
from otel_agents.views.hook_marks import hook_events, hook_marks
from otel_agents.views.index import SessionIndex, is_utterance, paused, tool_calls_of
from otel_agents.views.loading import (
    TREE_FILE, checkpoint_to_compare, read_events, read_tree, records_from_tree, records_lacking,
)
from otel_agents.views.message_ids import resolve_message_id
from otel_agents.views.model import (
    AgentInfo,
    CauseLink,
    ChatContext,
    DialogItem,
    FlowStep,
    HookMark,
    PerspectiveItem,
    Reference,
    Speaker,
    TranscriptLine,
)

_LIST_LIMIT = 12  # names listed in an "unknown agent" message


class SessionViewer:
    """Read-only views of one session's records (and, for chat contexts, its span tree), or of a path's."""

    def __init__(
        self,
        records: Iterable[Mapping[str, Any]] | str | os.PathLike[str],
        tree: Mapping[str, Any] | None = None,
        *,
        session_id: str | None = None,
        tree_path: Path | None = None,
    ):
        if isinstance(records, (str, os.PathLike)):  # seed 001 writes SessionViewer(session_file): a path, not records
            self.__dict__.update(self._of_path(Path(records), tree, session_id, tree_path).__dict__)
            return
        self._setup(SessionIndex.build(records), tree, session_id, tree_path)

    @classmethod
    def _of_path(cls, path: Path, *rest: Any) -> "SessionViewer":  # a session directory, or a file of one
        if any(arg is not None for arg in rest):
            raise TypeError("SessionViewer(path) takes a session directory alone: tree, session_id and "
                            "tree_path are for SessionViewer(records); or use SessionViewer.from_session_dir(path)")
        if path.name in (EVENTS_FILE, TREE_FILE) and path.is_file():
            path = path.parent
        return cls.from_session_dir(path)

    def _setup(
        self, index: SessionIndex, tree: Mapping[str, Any] | None, session_id: str | None, tree_path: Path | None
    ) -> None:
        self.session_id = session_id
        self._index = index
        self._chat_spans = ChatSpans(tree, tree_path)
        self._agents = agent_infos(index)
        self._tree, self._tree_path = tree, tree_path  # hook events, read when a dialog first needs them
        self._hook_marks: dict[str, list[HookMark]] | None = None

    @classmethod
    def _of_index(cls, index: SessionIndex, session_id: str, tree_path: Path) -> "SessionViewer":
        viewer = cls.__new__(cls)
        viewer._setup(index, None, session_id, tree_path)
        return viewer

    @classmethod
    def from_session_dir(
        cls, path: Path | str, warn: Warn = stderr_warning, *, cache_dir: Path | None = None
    ) -> "SessionViewer":
        """A saved session: ``events.jsonl`` (else, or when it lacks records it holds, ``tree.json.gz``'s).

        With ``cache_dir``, a large events.jsonl's index is saved there and reused
        while the file is unchanged, so that views parse only the lines they show
        (``views.cache``; the session directory itself is never written).
        """
        path = Path(path)
        if not path.is_dir():
            raise SessionDataError(f"{path} is not a session directory")
        events, tree_path = path / EVENTS_FILE, path / TREE_FILE
        if events.is_file():
            checkpoint = checkpoint_to_compare(path)  # None (undecoded) while meta.json's mark vouches for events
            if cache_dir is not None:
                from otel_agents.views.cache import cached_index

                viewer = cls._of_index(cached_index(events, warn, Path(cache_dir)), path.name, tree_path)
            else:
                viewer = cls(read_events(events, warn), session_id=path.name, tree_path=tree_path)
            if checkpoint is None or not records_lacking(checkpoint, viewer._index.by_id, events, warn):
                return viewer
            tree = checkpoint  # events.jsonl cut short: the checkpoint's records are the session's
        elif tree_path.is_file():
            tree = read_tree(tree_path)
        else:
            raise SessionDataError(f"{path} holds neither {EVENTS_FILE} nor {TREE_FILE}")
        return cls(records_from_tree(tree), tree, session_id=path.name, tree_path=tree_path)


    @property
    def records(self) -> list[dict[str, Any]]:
        """Every record, in message-id order."""
        return self._index.records

    # --- agents ---
    def list_agents(self) -> list[AgentInfo]:
        return list(self._agents.values())

    def agent(self, name_or_id: str) -> AgentInfo:
        return self._agents[self.resolve_agent(name_or_id)]

    def resolve_agent(self, name_or_id: str) -> str:
        """An agent id from an id, a unique name, or a path of names from the root."""
        if name_or_id in self._agents:
            return name_or_id
        by_name = [a for a in self._agents.values() if a.name == name_or_id]
        if len(by_name) == 1:
            return by_name[0].agent_id
        if len(by_name) > 1:  # a few, each path's end: a chain of one name made a line of hundreds of megabytes
            options = _listed([f"{a.agent_id} ({a.path if len(a.path) <= 60 else '…' + a.path[-59:]})"
                               for a in by_name])
            raise AmbiguousAgent(f"agent name {name_or_id!r} is ambiguous: {options}; give an id or a path")
        by_path = [a for a in self._agents.values() if a.path == name_or_id]
        if len(by_path) == 1:
            return by_path[0].agent_id
        if len(by_path) > 1:
            raise AmbiguousAgent(f"agent path {name_or_id!r} is ambiguous: {_listed([a.agent_id for a in by_path])}; "
                                 "give an id")
        known = _listed([a.display_name for a in self._agents.values()])
        raise UnknownAgent(f"unknown agent {name_or_id!r} (agents: {known or 'none'})")

    def name_of(self, agent_id: str | None) -> str:
        if agent_id is None:
            return "unknown"
        info = self._agents.get(agent_id)
        return info.display_name if info else agent_id

    # --- messages ---
    def record(self, message_id: str) -> dict[str, Any]:
        record = self._index.by_id.get(message_id)
        if record is None:
            raise UnknownMessage(f"unknown message {message_id!r}")
        return record

    def resolve_message(self, message_id: str) -> str:
        """The message id ``message_id`` is, or the one it is a unique prefix of (AmbiguousMessage otherwise)."""
        return resolve_message_id(self._index.by_id, message_id)

    def speaker_of(self, message_id: str) -> Speaker:
        """Who originally said or wrote the content ``message_id`` stands for."""
        origin = self._index.by_id.get(self._index.origin(message_id))
        if origin is None:
            return Speaker("unknown")
        role = origin.get("role")
        if origin["event_type"] == sc.EVENT_TRANSCRIPT_ENTRY and role in ("user", "system"):
            return Speaker(origin.get("source") or role)
        agent_id = origin.get("agent_id")
        info = self._agents.get(agent_id) if agent_id is not None else None
        return Speaker(self.name_of(agent_id), agent_id, (info.name or agent_id) if info else agent_id)

    def tool_name(self, record: Mapping[str, Any]) -> str | None:
        return self._index.tool_name(record)

    # --- transcript ---
    def get_transcript(self, agent: str, *, after: str | None = None) -> list[dict[str, Any]]:
        """The agent's transcript records now, or as it stood right after entry ``after``.

        Truncations are applied; the chat message for each is ``message_from_record``.
        """
        agent_id = self.resolve_agent(agent)
        if after is None:
            return [self._index.by_id[m] for m in self._index.log(agent_id).current]
        return self._transcript_after(agent_id, self.resolve_message(after))

    def _transcript_after(self, agent_id: str, after: str) -> list[dict[str, Any]]:
        record = self.record(after)  # the whole id: a span's recorded id is never a prefix
        if record["event_type"] != sc.EVENT_TRANSCRIPT_ENTRY or record.get("agent_id") != agent_id:
            raise UnknownMessage(f"{after} is not a transcript entry of {self.name_of(agent_id)}")
        return [self._index.by_id[m] for m in self._index.transcript_after(after)]

    @paused
    def transcript(self, agent: str, *, after: str | None = None) -> list[TranscriptLine]:
        return [
            TranscriptLine(
                r["message_id"], r.get("ts"), message_from_record(r), r.get("substance"), r.get("source"),
                self.tool_name(r) if r.get("role") == "tool" else None,
            )
            for r in self.get_transcript(agent, after=after)
        ]

    # --- dialog ---
    @paused
    def extract_dialog(self, agents: Sequence[str]) -> list[DialogItem]:
        """Distinct content heard or said by the selected agents, once each, in order of first appearance.

        Entries are grouped by substance (followed to the original), so the same
        utterance delivered in different formatted forms appears once, with its
        speaker and its original content. Tool calls, tool results and system
        prompts are actions and set-up, not dialog (see ``extract_agent_perspective``).
        """
        selected = list(dict.fromkeys(self.resolve_agent(a) for a in agents))
        index = self._index
        groups: dict[str, tuple[list[str], list[str]]] = {}  # origin -> (entries, hearers)
        for record in index.records_of(selected):
            if record["event_type"] != sc.EVENT_TRANSCRIPT_ENTRY:
                continue
            heard = record.get("role") == "user"
            if not heard and not is_utterance(record):
                continue
            entries, hearers = groups.setdefault(index.origin(record["message_id"]), ([], []))
            entries.append(record["message_id"])
            if heard and record["agent_id"] not in hearers:
                hearers.append(record["agent_id"])
        marks = self._marks()
        items = []
        for origin, (entries, hearers) in groups.items():
            source = index.by_id.get(origin)
            content = source.get("content") if source is not None else index.by_id[entries[0]].get("content")
            hooks = tuple(m for e in entries for m in marks.get(e, ()))
            items.append(DialogItem(origin, self.speaker_of(origin), content, tuple(hearers), tuple(entries), hooks))
        return items

    def _marks(self) -> dict[str, list[HookMark]]:
        """Entry id -> what review and transform hooks did to it (hook events on the spans; none known: {})."""
        if self._hook_marks is None:
            events = hook_events(self._tree, self._tree_path)
            index = self._index

            def previous(message_id: str) -> str | None:
                return index.log(index.by_id[message_id]["agent_id"]).previous.get(message_id)

            found = hook_marks(events, index.records if events else (), previous)
            self._hook_marks = {
                entry: [replace(m, agent=self.name_of(m.agent_id) if m.agent_id else None) for m in marks]
                for entry, marks in found.items()
            }
        return self._hook_marks

    # --- perspective ---
    @paused
    def extract_agent_perspective(self, agent: str) -> list[PerspectiveItem]:
        """What the agent heard, thought, said, did and received, entry by entry (truncations included)."""
        agent_id = self.resolve_agent(agent)
        items: list[PerspectiveItem] = []
        append = items.append  # hot loop: one item per entry
        for r in self._index.agent_records(agent_id):
            event_type = r["event_type"]
            message_id, ts = r["message_id"], r.get("ts")
            if event_type == sc.EVENT_TRANSCRIPT_TRUNCATED:
                append(PerspectiveItem(message_id, "truncated", ts, keep=int(r.get("keep", 0))))
                continue
            if event_type == sc.EVENT_HOST_NOTICE:  # shown apart: the agent never heard it
                append(PerspectiveItem(message_id, "host", ts, r.get("content"), notice=r.get("notice")))
                continue
            if event_type != sc.EVENT_TRANSCRIPT_ENTRY:
                continue  # its creation, pieces of text: not entries it had
            role = r.get("role")
            if role in ("user", "system"):
                speaker = self.speaker_of(message_id)
                append(PerspectiveItem(message_id, "heard", ts, r.get("content"), speaker, r.get("substance")))
            elif role == "tool":
                append(
                    PerspectiveItem(
                        message_id, "received", ts, r.get("content"),
                        tool=self.tool_name(r), tool_call_id=r.get("tool_call_id"),
                    )
                )
            else:
                if r.get("reasoning_content"):
                    append(PerspectiveItem(message_id, "thought", ts, r["reasoning_content"]))
                calls = tool_calls_of(r)
                kind = "action" if calls else "said"
                append(PerspectiveItem(message_id, kind, ts, r.get("content"), tool_calls=calls))
        return items

    # --- causality ---
    @paused
    def build_causality_index(self) -> dict[str, CauseLink]:
        """message id -> its parent: cause (first of a list), else substance, else the tool call."""
        return self._index.causality()

    def step(self, message_id: str) -> FlowStep:
        """One record with its causal link and who/what it concerns."""
        message_id = self.resolve_message(message_id)
        record = self.record(message_id)
        link = self._index.link(message_id)
        agent_id = record.get("agent_id")
        is_entry = record["event_type"] == sc.EVENT_TRANSCRIPT_ENTRY
        role = record.get("role")
        return FlowStep(
            message_id=message_id,
            event_type=record["event_type"],
            agent_id=agent_id,
            agent=self.name_of(agent_id),
            link=link.link,
            parent=link.parent,
            parent_known=link.parent in self._index.by_id if link.parent else False,
            record=record,
            speaker=self.speaker_of(message_id) if is_entry and role in ("user", "system") else None,
            tool=self.tool_name(record) if is_entry and role == "tool" else None,
        )

    def trace_message_flow(self, message_id: str) -> list[FlowStep]:
        """The causality chain from its root to ``message_id``, oldest first."""
        message_id = self.resolve_message(message_id)
        chain: list[FlowStep] = []
        seen: set[str] = set()
        cursor: str | None = message_id
        while cursor is not None and cursor in self._index.by_id and cursor not in seen:
            seen.add(cursor)
            step = self.step(cursor)
            chain.append(step)
            cursor = step.parent
        chain.reverse()
        return chain

    def trace_content_references(self, message_id: str) -> list[Reference]:
        """Every transcript entry whose substance is ``message_id``: who heard it, when, in what form."""
        message_id = self.resolve_message(message_id)
        refs = []
        for ref_id in self._index.references(message_id):
            r = self._index.by_id[ref_id]
            refs.append(
                Reference(ref_id, r["agent_id"], self.name_of(r["agent_id"]), r.get("ts"), r.get("role"), r.get("content"))
            )
        return refs

    # --- exact LLM context ---
    @paused
    def chat_context(self, span_id: str) -> ChatContext:
        """The message list sent on a ``chat`` span, rebuilt from the records, byte-identical to what was sent.

        ``span_id`` may also be an assistant entry's message id: the context that produced it.
        """
        record = self._index.by_id.get(span_id.strip())
        answered = record is not None and record.get("role") == "assistant"
        node = None if record is not None and not answered else self._chat_spans.node(span_id)  # no span answers it
        if node is None:
            if record is not None:
                raise UnknownSpan(f"{span_id} is not an assistant entry answered by a chat span of this session")
            raise UnknownSpan(f"no span {span_id!r} in this session")
        attrs = node["attributes"]
        agent_id = attrs.get(sc.CONTEXT_AGENT_ID)
        if agent_id is None:
            if attrs.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT:  # e.g. imported from another instrumentation
                raise UnknownSpan(f"span {node['span_id']} ({node.get('name', '?')}) is a model call recorded without "
                                  "its context (no otel_agents.context.* attributes, no transcript records): "
                                  "the messages it sent cannot be rebuilt")
            raise UnknownSpan(f"span {node['span_id']} ({node.get('name', '?')}) is not a chat span")
        check_context_attributes(span_id, attrs)
        count = attrs.get(sc.CONTEXT_MESSAGE_COUNT, 0)
        last = attrs.get(sc.CONTEXT_LAST_MESSAGE_ID)
        if last is None:
            records = []
        else:
            try:
                records = self._transcript_after(self.resolve_agent(agent_id), last)
            except (UnknownAgent, UnknownMessage) as exc:
                raise SessionDataError(f"chat span {span_id}: {exc}") from None
        if len(records) != count:
            raise SessionDataError(
                f"chat span {span_id} sent {count} messages but the records give {len(records)} up to {last}"
            )
        tools = attrs.get(sc.REQUEST_TOOLS)
        if tools is None and attrs.get(sc.REQUEST_TOOLS_ID) is not None:
            tools = self._chat_spans.tool_definitions(attrs[sc.REQUEST_TOOLS_ID])
            if tools is None:
                raise SessionDataError(
                    f"chat span {span_id} sent tool definitions {attrs[sc.REQUEST_TOOLS_ID]}, "
                    "which no span of this session holds"
                )
        attempt = attrs.get(sc.LLM_ATTEMPT)
        return ChatContext(
            span_id=node["span_id"],
            name=node.get("name"),
            agent_id=agent_id,
            agent=self.name_of(agent_id),
            last_message_id=last,
            message_count=count,
            attempt=attempt,
            messages=[message_from_record(r) for r in records],
            tools=tool_schemas(span_id, tools),
        )


def _listed(items: list[str]) -> str:
    """The first few of ``items``, joined; ``...`` and the count when there are more."""
    return ", ".join(items[:_LIST_LIMIT]) + (f", ... ({len(items)} in all)" if len(items) > _LIST_LIMIT else "")
