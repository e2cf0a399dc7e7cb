"""LLM test fixtures: one local OpenAI-compatible server per test (litellm caches clients per api_base)."""

from __future__ import annotations

import pytest


@pytest.fixture
def server():
    from support.openai_server import OpenAIServer

    with OpenAIServer() as srv:
        yield srv


@pytest.fixture
def http_session(server, memory_tracing, no_sleep):
    """A session whose agents talk to ``server`` through litellm's real ``openai/`` HTTP path."""
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.retry import RetryPolicy
    from otel_agents.runtime.session import AgentSpec, Session

    def make(*, tools=(), max_attempts: int = 3, timeout_s: float = 5.0, model: str = "openai/test-model", **kw):
        llm = LLMClient(
            memory_tracing.telemetry,
            retry=RetryPolicy(max_attempts=max_attempts),
            api_base=server.api_base,
            api_key="sk-test",
            timeout_s=timeout_s,
            sleep=no_sleep,
            **kw,
        )
        root = AgentSpec("main", model, "You are a test agent.", tuple(tools))
        return Session(telemetry=memory_tracing.telemetry, llm=llm, root=root)

    return make
