"""The four concrete examples of seed 001, verbatim (one JSON record per line)."""

from __future__ import annotations

import json
from typing import Any

SEED_EXAMPLES: dict[int, str] = {
    1: r"""
{"message_id": "msg_001", "event_type": "agent_created", "agent_id": "agent_root", "language_model": "anthropic/claude-sonnet-4-5-20250929"}
{"message_id": "msg_002", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "user", "content": "Create Jack and Jill for a cafe discussion"}
{"message_id": "msg_003", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "task", "arguments": "{\"name\": \"Jack\", \"system_prompt\": \"You work in HR...\"}"}}]}
{"message_id": "msg_004", "event_type": "agent_created", "agent_id": "agent_jack", "cause": "msg_003", "name": "Jack", "language_model": "anthropic/claude-sonnet-4-5-20250929"}
{"message_id": "msg_005", "event_type": "transcript_entry", "agent_id": "agent_jack", "role": "system", "content": "You work in HR..."}
{"message_id": "msg_006", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "tool", "tool_call_id": "c1", "content": "Created subagent: Jack"}
{"message_id": "msg_007", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "assistant", "tool_calls": [{"id": "c2", "function": {"name": "task", "arguments": "{\"name\": \"Jill\", \"system_prompt\": \"You are an aspiring author...\"}"}}]}
{"message_id": "msg_008", "event_type": "agent_created", "agent_id": "agent_jill", "cause": "msg_007", "name": "Jill", "language_model": "anthropic/claude-sonnet-4-5-20250929"}
{"message_id": "msg_009", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "system", "content": "You are an aspiring author..."}
{"message_id": "msg_010", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "tool", "tool_call_id": "c2", "content": "Created subagent: Jill"}
{"message_id": "msg_011", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "assistant", "tool_calls": [{"id": "c3", "function": {"name": "discuss", "arguments": "{\"prompt\": \"You meet in a cafe. Introduce yourselves.\", \"speakers\": [\"Jack\", \"Jill\"]}"}}]}
{"message_id": "msg_012", "event_type": "piece_of_text", "agent_id": "agent_root", "content": "You meet in a cafe. Introduce yourselves.", "cause": "msg_011"}
{"message_id": "msg_013", "event_type": "transcript_entry", "agent_id": "agent_jack", "role": "user", "content": "You meet in a cafe. Introduce yourselves.", "substance": "msg_012"}
{"message_id": "msg_014", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "user", "content": "You meet in a cafe. Introduce yourselves.", "substance": "msg_012"}
{"message_id": "msg_015", "event_type": "transcript_entry", "agent_id": "agent_jack", "role": "assistant", "content": "Hi, I'm Jack. *extends hand*"}
{"message_id": "msg_016", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "tool", "tool_call_id": "c3", "content": "Hi, I'm Jack. *extends hand*"}
{"message_id": "msg_017", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "user", "content": "[Jack]: Hi, I'm Jack. *extends hand*", "substance": "msg_015"}
{"message_id": "msg_018", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "assistant", "content": "*smiles* Hello Jack, I'm Jill."}
{"message_id": "msg_019", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "tool", "tool_call_id": "c3", "content": "*smiles* Hello Jack, I'm Jill."}
{"message_id": "msg_020", "event_type": "transcript_entry", "agent_id": "agent_jack", "role": "user", "content": "[Jill]: *smiles* Hello Jack, I'm Jill.", "substance": "msg_018"}
""",
    2: r"""
{"message_id": "msg_030", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "assistant", "tool_calls": [{"id": "c4", "function": {"name": "task", "arguments": "{\"name\": \"Inner\", \"system_prompt\": \"You are Jill's inner voice...\"}"}}]}
{"message_id": "msg_031", "event_type": "agent_created", "agent_id": "agent_jill_inner", "cause": "msg_030", "name": "Inner", "language_model": "anthropic/claude-sonnet-4-5-20250929"}
{"message_id": "msg_032", "event_type": "transcript_entry", "agent_id": "agent_jill_inner", "role": "system", "content": "You are Jill's inner voice..."}
{"message_id": "msg_033", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "user", "content": "[Jack]: Hi, I'm Jack. *extends hand*", "substance": "msg_015"}
{"message_id": "msg_034", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "assistant", "tool_calls": [{"id": "c5", "function": {"name": "discuss", "arguments": "{\"speakers\": [\"Inner\"], \"prompt\": \"Jack just introduced himself. What should I say?\"}"}}]}
{"message_id": "msg_035", "event_type": "piece_of_text", "agent_id": "agent_jill", "content": "Jack just introduced himself. What should I say?", "cause": "msg_034"}
{"message_id": "msg_036", "event_type": "transcript_entry", "agent_id": "agent_jill_inner", "role": "user", "content": "Jack just introduced himself. What should I say?", "substance": "msg_035"}
{"message_id": "msg_037", "event_type": "transcript_entry", "agent_id": "agent_jill_inner", "role": "assistant", "content": "Be friendly but not over-eager. A simple greeting with a smile."}
{"message_id": "msg_038", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "tool", "tool_call_id": "c5", "content": "Be friendly but not over-eager. A simple greeting with a smile."}
{"message_id": "msg_039", "event_type": "transcript_entry", "agent_id": "agent_jill", "role": "assistant", "content": "*smiles* Hello Jack, I'm Jill."}
""",
    3: r"""
{"message_id": "msg_100", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "assistant", "tool_calls": [{"id": "c9", "function": {"name": "task", "arguments": "{\"name\": \"ResourceMonitor\", \"system_prompt\": \"Monitor resource usage...\"}"}}]}
{"message_id": "msg_101", "event_type": "agent_created", "agent_id": "agent_resource_hook", "cause": "msg_100", "name": "ResourceMonitor", "language_model": "anthropic/claude-sonnet-4-5-20250929"}
{"message_id": "msg_102", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "assistant", "tool_calls": [{"id": "c10", "function": {"name": "task", "arguments": "{\"name\": \"Searcher4\"}"}}]}
{"message_id": "msg_103", "event_type": "transcript_entry", "agent_id": "agent_resource_hook", "role": "user", "content": "Agent 'agent_root' is attempting to create subagent 'Searcher4'. Current subagent count: 3. Approve?"}
{"message_id": "msg_104", "event_type": "transcript_entry", "agent_id": "agent_resource_hook", "role": "assistant", "content": "DENY. Maximum subagents (3) already reached."}
{"message_id": "msg_105", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "tool", "tool_call_id": "c10", "content": "Error: Action blocked by hook 'ResourceMonitor': Maximum subagents (3) already reached."}
""",
    4: r"""
{"message_id": "msg_200", "event_type": "transcript_entry", "agent_id": "agent_watcher", "role": "user", "content": "File changed: data.json"}
{"message_id": "msg_201", "event_type": "transcript_entry", "agent_id": "agent_watcher", "role": "assistant", "content": "I'll reload the data and notify the main agent."}
""",
}


def seed_records(number: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in SEED_EXAMPLES[number].splitlines() if line.strip()]
