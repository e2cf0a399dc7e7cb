"""Reliability fixtures: an isolated home for the real CLI, a local OpenAI-compatible server."""

from __future__ import annotations

import pytest


@pytest.fixture
def rel_home(home, monkeypatch):
    """Nothing exported over the network, bundled prices, a key for the local server, an isolated home."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OTEL_AGENTS_PRICES", raising=False)
    return home


@pytest.fixture
def model_server():
    """One server per test: litellm caches its HTTP client per api_base."""
    from support.openai_server import OpenAIServer

    with OpenAIServer() as server:
        yield server
