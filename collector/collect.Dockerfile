# Image for the `collect` service in ../docker-compose.yml: `otel-agents collect`, built
# from this repository (build context: the repository root).
#
#   docker compose build collect
#
# Only the files `pip install .` needs are copied, so BuildKit sends just those
# (not collector/data/ or .git) as build context.
FROM python:3.11-slim

WORKDIR /src
COPY pyproject.toml README.md ./
COPY otel_agents ./otel_agents
# A non-root user that owns $OTEL_AGENTS_HOME: Docker initialises a new named
# volume from the image directory it is mounted over, so the volume is
# writable by this uid without a root init container (as for Jaeger's /tmp).
RUN pip install --no-cache-dir . \
 && useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin otel-agents \
 && mkdir -p /var/lib/otel-agents \
 && chown 10001:10001 /var/lib/otel-agents

ENV OTEL_AGENTS_HOME=/var/lib/otel-agents
USER 10001
VOLUME /var/lib/otel-agents
EXPOSE 4317 4318
ENTRYPOINT ["otel-agents"]
# 0.0.0.0: the Collector reaches it over the compose network, not loopback.
CMD ["collect", "--http", "0.0.0.0:4318", "--grpc", "0.0.0.0:4317"]
