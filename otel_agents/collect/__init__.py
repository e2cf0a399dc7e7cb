"""`otel-agents collect`: an OTLP trace receiver (HTTP and gRPC) writing otel-agents sessions and the ledger."""
