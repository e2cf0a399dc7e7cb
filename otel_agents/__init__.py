"""otel-agents: a multi-agent LLM runtime in which everything that happens is an OpenTelemetry span.

Importing this package is cheap: litellm is imported only where an LLM is called.
"""

__version__ = "0.1.0"
