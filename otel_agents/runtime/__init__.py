"""The runtime: sessions, agents, tools and hooks (seed 001). Emits spans through tracing."""
