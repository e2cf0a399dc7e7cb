"""LLM calls through litellm: attempts, retries, prices and the offline scripted provider."""
