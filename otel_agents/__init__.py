"""otel-agents: a multi-agent LLM runtime in which everything that happens is an OpenTelemetry span.

Importing this package is cheap: litellm is imported only where an LLM is called.
"""

from otel_agents.version import __version__

__all__ = ["__version__"]
