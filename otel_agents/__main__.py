from otel_agents.cli import main

main()
