"""Browser tests of otel-agents ui: a package, so their Chromium (package-scoped) closes before later tests."""
