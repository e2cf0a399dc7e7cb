"""Structural checks for the deployment files (no Docker, no network).

Validated files:

* ``docker-compose.yml``            - Jaeger v2 + OpenTelemetry Collector contrib + ``otel-agents collect``
* ``collector/otel-collector.yaml`` - the collector pipeline (fans traces out to Jaeger and collect)
* ``collector/otel-collector-sharded.yaml`` - the collector sharding sessions over several collect instances
* ``collector/collect.Dockerfile``  - the image of the ``collect`` service
* ``collector/jaeger.yaml``         - Jaeger v2's own (collector-style) config
* ``collector/prometheus.yml``      - Prometheus, scraping the collector's GenAI metrics
* ``collector/data/.gitignore``     - keeps the export directory, not its data

Every validator returns a list of human-readable problems instead of
asserting, so a failing test names everything that is wrong at once, and the
``*_catches_*`` tests can feed deliberately broken copies through the same
validators to show that they really fail.
"""

from __future__ import annotations

import copy
import posixpath
import re
from pathlib import Path
from typing import Any, Iterable

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO / "docker-compose.yml"
COLLECTOR_CONFIG = REPO / "collector" / "otel-collector.yaml"
JAEGER_CONFIG = REPO / "collector" / "jaeger.yaml"
PROMETHEUS_CONFIG = REPO / "collector" / "prometheus.yml"
COLLECTOR_README = REPO / "collector" / "README.md"
SHARDED_CONFIG = REPO / "collector" / "otel-collector-sharded.yaml"
COLLECT_DOCKERFILE = "collector/collect.Dockerfile"
COLLECT_DOC = REPO / "docs" / "collect.md"
DATA_GITIGNORE = REPO / "collector" / "data" / ".gitignore"

JAEGER_SERVICE = "jaeger"
COLLECTOR_SERVICE = "collector"
JAEGER_IMAGE = "jaegertracing/jaeger"
COLLECTOR_IMAGE = "otel/opentelemetry-collector-contrib"
PROMETHEUS_SERVICE = "prometheus"
PROMETHEUS_IMAGE = "prom/prometheus"
COLLECT_SERVICE = "collect"
# The attribute every span of an otel-agents session carries (semconv.GEN_AI_CONVERSATION_ID).
SESSION_ATTRIBUTE = "gen_ai.conversation.id"
# The contrib release whose loadbalancing exporter first takes routing_key: attributes
# ("loadbalancingexporter: Add support for route with composite keys", #35320).
ATTRIBUTE_ROUTING_SINCE = (0, 122, 0)

PIPELINE_SIGNALS = {"traces", "metrics", "logs", "profiles"}
COMPONENT_KINDS = ("receivers", "processors", "exporters", "connectors", "extensions")

# Heuristic for "a batch stays well under the 4 MiB gRPC limit": LLM spans
# carry prompts/completions; assume up to 16 KiB per span on average.
GRPC_DEFAULT_MAX_MSG_BYTES = 4 * 1024 * 1024
ASSUMED_AVG_SPAN_BYTES = 16 * 1024


# --------------------------------------------------------------------------
# generic helpers
# --------------------------------------------------------------------------


def load_yaml(path: Path) -> dict[str, Any]:
    assert path.is_file(), f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path} does not exist"
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    assert isinstance(data, dict), f"{path} must contain a YAML mapping at top level, got {type(data).__name__}"
    return data


def as_mapping(value: Any) -> dict[str, Any]:
    """YAML ``key:`` with no value is None; treat it as an empty mapping."""
    return value if isinstance(value, dict) else {}


def report(problems: Iterable[str]) -> str:
    return "\n  - " + "\n  - ".join(problems)


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """``registry:5000/org/name:tag@sha256:...`` -> (repository, tag, digest)."""
    digest = None
    if "@" in image:
        image, digest = image.split("@", 1)
    last_slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > last_slash:
        return image[:colon], image[colon + 1 :], digest
    return image, None, digest


def strip_registry(repository: str) -> str:
    """Drop an explicit Docker Hub prefix so ``docker.io/x/y`` matches ``x/y``."""
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if repository.startswith(prefix):
            return repository[len(prefix) :]
    return repository


def parse_port(entry: Any) -> dict[str, Any]:
    """Normalise one compose ``ports`` entry (short or long syntax).

    Returns ``{"host_ip", "published", "target", "protocol"}`` with ports as
    strings (``published`` is None when the port is not bound on the host).
    """
    if isinstance(entry, dict):
        return {
            "host_ip": entry.get("host_ip"),
            "published": None if entry.get("published") is None else str(entry["published"]),
            "target": str(entry.get("target")),
            "protocol": entry.get("protocol", "tcp"),
        }
    text = str(entry)
    protocol = "tcp"
    if "/" in text:
        text, protocol = text.rsplit("/", 1)
    parts = text.rsplit(":", 2)
    if len(parts) == 1:
        return {"host_ip": None, "published": None, "target": parts[0], "protocol": protocol}
    if len(parts) == 2:
        return {"host_ip": None, "published": parts[0], "target": parts[1], "protocol": protocol}
    host_ip = parts[0].strip("[]") or None
    return {"host_ip": host_ip, "published": parts[1], "target": parts[2], "protocol": protocol}


def parse_volume(entry: Any) -> dict[str, Any]:
    """Normalise one service ``volumes`` entry to ``{type, source, target, read_only}``."""
    if isinstance(entry, dict):
        return {
            "type": entry.get("type", "volume"),
            "source": entry.get("source"),
            "target": entry.get("target"),
            "read_only": bool(entry.get("read_only", False)),
        }
    parts = str(entry).split(":")
    if len(parts) == 1:  # anonymous volume
        return {"type": "volume", "source": None, "target": parts[0], "read_only": False}
    source, target = parts[0], parts[1]
    mode = parts[2] if len(parts) > 2 else ""
    is_path = source.startswith((".", "/", "~", "$"))
    return {
        "type": "bind" if is_path else "volume",
        "source": source,
        "target": target,
        "read_only": "ro" in mode.split(","),
    }


def parse_mem(value: Any) -> int | None:
    """Compose memory value (``512m``, ``1g``, bytes) -> bytes."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmg]?)b?\s*", str(value).lower())
    if not match:
        return None
    factor = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[match.group(2)]
    return int(float(match.group(1)) * factor)


def endpoint_host_port(endpoint: Any) -> tuple[str, str] | None:
    """``0.0.0.0:4317`` / ``[::]:4317`` / ``http://jaeger:4317`` -> (host, port)."""
    if not isinstance(endpoint, str):
        return None
    text = re.sub(r"^[a-z]+://", "", endpoint).split("/", 1)[0]
    match = re.fullmatch(r"\[?([^\]]*?)\]?:(\d+)", text)
    if not match:
        return None
    return match.group(1), match.group(2)


def config_path_from_command(command: Any) -> str | None:
    """Find the value of ``--config`` in a compose ``command`` (list or string)."""
    if command is None:
        return None
    args = command.split() if isinstance(command, str) else [str(a) for a in command]
    for i, arg in enumerate(args):
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
        if arg == "--config" and i + 1 < len(args):
            return args[i + 1]
    return None


def is_under(path: str, directory: str) -> bool:
    path = posixpath.normpath(path)
    directory = posixpath.normpath(directory)
    return path != directory and path.startswith(directory.rstrip("/") + "/")


def healthcheck_enabled(service: dict[str, Any]) -> bool:
    hc = service.get("healthcheck")
    if not isinstance(hc, dict) or hc.get("disable"):
        return False
    test = hc.get("test")
    if not test:
        return False
    if isinstance(test, list) and (test[0] == "NONE" or len(test) < 2):
        return False
    return True


# --------------------------------------------------------------------------
# validators: collector-style configs (OpenTelemetry Collector and Jaeger v2)
# --------------------------------------------------------------------------


def component_type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def validate_pipelines(cfg: dict[str, Any], label: str) -> list[str]:
    """Every reference is defined, every definition is used, order rules hold."""
    problems: list[str] = []
    defined = {kind: set(as_mapping(cfg.get(kind))) for kind in COMPONENT_KINDS}
    for kind in COMPONENT_KINDS:
        if kind in cfg and cfg[kind] is not None and not isinstance(cfg[kind], dict):
            problems.append(f"{label}: top-level '{kind}' must be a mapping")

    service = as_mapping(cfg.get("service"))
    pipelines = as_mapping(service.get("pipelines"))
    if not pipelines:
        problems.append(f"{label}: service.pipelines is missing or empty")

    used: dict[str, set[str]] = {kind: set() for kind in COMPONENT_KINDS}
    for name, pipeline in pipelines.items():
        where = f"{label}: pipeline '{name}'"
        if component_type(name) not in PIPELINE_SIGNALS:
            problems.append(f"{where}: unknown signal type '{component_type(name)}'")
        pipeline = as_mapping(pipeline)
        for section, allowed in (
            ("receivers", ("receivers", "connectors")),
            ("processors", ("processors",)),
            ("exporters", ("exporters", "connectors")),
        ):
            refs = pipeline.get(section) or []
            if not isinstance(refs, list):
                problems.append(f"{where}: '{section}' must be a list")
                continue
            if section in ("receivers", "exporters") and not refs:
                problems.append(f"{where}: has no {section}")
            if len(refs) != len(set(refs)):
                problems.append(f"{where}: duplicate entries in {section}: {refs}")
            for ref in refs:
                kinds = [k for k in allowed if ref in defined[k]]
                if not kinds:
                    problems.append(
                        f"{where}: {section} references '{ref}', which is not defined under "
                        + " or ".join(f"top-level '{k}'" for k in allowed)
                    )
                for k in kinds:
                    used[k].add(ref)
        procs = pipeline.get("processors") or []
        if isinstance(procs, list):
            limiters = [p for p in procs if component_type(p) == "memory_limiter"]
            if limiters and component_type(procs[0]) != "memory_limiter":
                problems.append(
                    f"{where}: memory_limiter must be the first processor, got order {procs}"
                )

    ext_refs = service.get("extensions") or []
    if not isinstance(ext_refs, list):
        problems.append(f"{label}: service.extensions must be a list")
        ext_refs = []
    for ref in ext_refs:
        if ref not in defined["extensions"]:
            problems.append(f"{label}: service.extensions references '{ref}', which is not defined")
        used["extensions"].add(ref)

    for kind in COMPONENT_KINDS:
        for unused in sorted(defined[kind] - used[kind]):
            where = "service.extensions" if kind == "extensions" else "any pipeline"
            problems.append(f"{label}: {kind[:-1]} '{unused}' is defined but not used in {where}")
    return problems


def validate_collector_config(
    cfg: dict[str, Any],
    *,
    data_mount_target: str = "/data",
    jaeger_service: str = JAEGER_SERVICE,
    mem_limit_bytes: int | None = None,
    collect_service: str = COLLECT_SERVICE,
    collect_port: str | None = "4317",
) -> list[str]:
    label = "collector/otel-collector.yaml"
    problems = validate_pipelines(cfg, label)
    receivers = as_mapping(cfg.get("receivers"))
    processors = as_mapping(cfg.get("processors"))
    exporters = as_mapping(cfg.get("exporters"))
    extensions = as_mapping(cfg.get("extensions"))
    service = as_mapping(cfg.get("service"))

    # receivers: OTLP on both protocols, bound to all interfaces
    protocols = as_mapping(as_mapping(receivers.get("otlp")).get("protocols"))
    for proto, port in (("grpc", "4317"), ("http", "4318")):
        hp = endpoint_host_port(as_mapping(protocols.get(proto)).get("endpoint"))
        if hp != ("0.0.0.0", port):
            problems.append(
                f"{label}: receivers.otlp.protocols.{proto}.endpoint must be 0.0.0.0:{port} "
                f"(reachable through Docker port publishing), got {hp}"
            )

    # processors
    limiter = as_mapping(processors.get("memory_limiter"))
    if not limiter:
        problems.append(f"{label}: processors.memory_limiter is not defined")
    else:
        for key in ("check_interval", "limit_mib", "spike_limit_mib"):
            if limiter.get(key) in (None, "", 0):
                problems.append(f"{label}: processors.memory_limiter.{key} is not set")
        limit, spike = limiter.get("limit_mib"), limiter.get("spike_limit_mib")
        if isinstance(limit, int) and isinstance(spike, int):
            if spike >= limit:
                problems.append(
                    f"{label}: memory_limiter.spike_limit_mib ({spike}) must be below limit_mib ({limit})"
                )
            if mem_limit_bytes is not None and limit * 1024 * 1024 >= mem_limit_bytes:
                problems.append(
                    f"{label}: memory_limiter.limit_mib ({limit}) must be below the container "
                    f"mem_limit ({mem_limit_bytes // (1024 * 1024)} MiB)"
                )
    batch = as_mapping(processors.get("batch")) if "batch" in processors else None
    if batch is None:
        problems.append(f"{label}: processors.batch is not defined")
    else:
        size, max_size = batch.get("send_batch_size"), batch.get("send_batch_max_size")
        if not isinstance(max_size, int) or max_size <= 0:
            problems.append(f"{label}: processors.batch.send_batch_max_size must be a positive integer")
        else:
            if isinstance(size, int) and max_size < size:
                problems.append(
                    f"{label}: batch.send_batch_max_size ({max_size}) is below send_batch_size ({size})"
                )
            if max_size * ASSUMED_AVG_SPAN_BYTES > GRPC_DEFAULT_MAX_MSG_BYTES:
                problems.append(
                    f"{label}: batch.send_batch_max_size ({max_size}) x {ASSUMED_AVG_SPAN_BYTES // 1024} KiB "
                    "LLM spans would exceed the 4 MiB gRPC message limit"
                )
    for name, pipeline in as_mapping(service.get("pipelines")).items():
        procs = as_mapping(pipeline).get("processors") or []
        if "memory_limiter" not in procs:
            problems.append(f"{label}: pipeline '{name}' does not use memory_limiter")

    # exporters
    jaeger_exp = as_mapping(exporters.get("otlp/jaeger"))
    if not jaeger_exp:
        problems.append(f"{label}: exporters.otlp/jaeger is not defined")
    else:
        hp = endpoint_host_port(jaeger_exp.get("endpoint"))
        if hp is None or hp[0] != jaeger_service:
            problems.append(
                f"{label}: exporters.otlp/jaeger.endpoint must point at the compose service "
                f"'{jaeger_service}', got {jaeger_exp.get('endpoint')!r}"
            )
        elif hp[1] != "4317":
            problems.append(f"{label}: exporters.otlp/jaeger.endpoint must use Jaeger's OTLP gRPC port 4317")
        if as_mapping(jaeger_exp.get("tls")).get("insecure") is not True:
            problems.append(f"{label}: exporters.otlp/jaeger.tls.insecure must be true (plain gRPC inside compose)")

    file_exp = as_mapping(exporters.get("file"))
    if not file_exp:
        problems.append(f"{label}: exporters.file is not defined")
    else:
        path = file_exp.get("path")
        if not isinstance(path, str) or not is_under(path, data_mount_target):
            problems.append(
                f"{label}: exporters.file.path {path!r} must lie under the mounted data directory "
                f"{data_mount_target!r}, otherwise the files stay inside the container"
            )
        elif not path.endswith(".jsonl"):
            problems.append(f"{label}: exporters.file.path {path!r} should end in .jsonl (one JSON object per line)")
        if file_exp.get("format", "json") != "json":
            problems.append(f"{label}: exporters.file.format must be json, got {file_exp.get('format')!r}")
        if file_exp.get("compression"):
            problems.append(f"{label}: exporters.file.compression must be unset so the .jsonl stays readable")
        rotation = file_exp.get("rotation")
        if not isinstance(rotation, dict):
            problems.append(f"{label}: exporters.file.rotation is missing (files would grow without bound)")
        else:
            for key in ("max_megabytes", "max_days", "max_backups"):
                value = rotation.get(key)
                if not isinstance(value, int) or value <= 0:
                    problems.append(f"{label}: exporters.file.rotation.{key} must be a positive integer, got {value!r}")

    # extensions
    health = extensions.get("health_check", False)
    if health is False:
        problems.append(f"{label}: extensions.health_check is not defined")
    else:
        hp = endpoint_host_port(as_mapping(health).get("endpoint"))
        if hp != ("0.0.0.0", "13133"):
            problems.append(
                f"{label}: extensions.health_check.endpoint must be 0.0.0.0:13133 "
                f"(the default is localhost, unreachable from outside the container), got {hp}"
            )
    problems += validate_metrics_pipeline(cfg)
    problems += validate_fanout(cfg, collect_service=collect_service, collect_grpc_port=collect_port)
    return problems


def exporters_to(cfg: dict[str, Any], service: str) -> list[str]:
    """The ids of the otlp exporters whose endpoint is the compose service ``service``."""
    return [
        name for name, exp in as_mapping(cfg.get("exporters")).items()
        if component_type(name) == "otlp" and (endpoint_host_port(as_mapping(exp).get("endpoint")) or ("",))[0] == service
    ]


def validate_fanout(cfg: dict[str, Any], *, collect_service: str = COLLECT_SERVICE,
                    collect_grpc_port: str | None = "4317") -> list[str]:
    """The traces pipeline sends every span to Jaeger and to ``otel-agents collect``."""
    label = "collector/otel-collector.yaml"
    problems: list[str] = []
    exporters = as_mapping(cfg.get("exporters"))
    traces = as_mapping(as_mapping(as_mapping(cfg.get("service")).get("pipelines")).get("traces"))
    wired = traces.get("exporters") or []
    to_collect = exporters_to(cfg, collect_service)
    if not to_collect:
        return [f"{label}: no otlp exporter points at the compose service '{collect_service}' (otel-agents collect)"]
    for name in to_collect:
        exp = as_mapping(exporters[name])
        port = endpoint_host_port(exp.get("endpoint"))[1]
        if collect_grpc_port is not None and port != collect_grpc_port:
            problems.append(
                f"{label}: exporters.{name}.endpoint uses port {port}, but collect listens for OTLP gRPC on {collect_grpc_port}"
            )
        if as_mapping(exp.get("tls")).get("insecure") is not True:
            problems.append(f"{label}: exporters.{name}.tls.insecure must be true (plain gRPC inside compose)")
    if not any(name in wired for name in to_collect):
        problems.append(f"{label}: the traces pipeline does not export to collect ({to_collect}), got {wired}")
    if "otlp/jaeger" not in wired:
        problems.append(f"{label}: the traces pipeline must fan out to both Jaeger and collect, got {wired}")
    return problems


def prometheus_exporter_port(cfg: dict[str, Any]) -> str | None:
    """The port of the collector's ``prometheus`` exporter (what Prometheus scrapes), if any."""
    hp = endpoint_host_port(as_mapping(as_mapping(cfg.get("exporters")).get("prometheus")).get("endpoint"))
    return hp[1] if hp else None


def validate_metrics_pipeline(cfg: dict[str, Any]) -> list[str]:
    """The GenAI metrics reach Prometheus: OTLP in, the same protection, a reachable scrape endpoint."""
    label = "collector/otel-collector.yaml"
    problems: list[str] = []
    metrics = as_mapping(as_mapping(as_mapping(cfg.get("service")).get("pipelines")).get("metrics"))
    if not metrics:
        return [f"{label}: service.pipelines.metrics is missing (otel-agents exports GenAI metrics)"]
    if "otlp" not in (metrics.get("receivers") or []):
        problems.append(f"{label}: the metrics pipeline must receive from otlp, got {metrics.get('receivers')}")
    if "prometheus" not in (metrics.get("exporters") or []):
        problems.append(f"{label}: the metrics pipeline must export to prometheus, got {metrics.get('exporters')}")
    hp = endpoint_host_port(as_mapping(as_mapping(cfg.get("exporters")).get("prometheus")).get("endpoint"))
    if hp is None or hp[0] in ("localhost", "127.0.0.1"):
        problems.append(
            f"{label}: exporters.prometheus.endpoint must listen on a non-loopback host:port "
            f"(Prometheus scrapes it over the compose network), got {hp}"
        )
    return problems


def validate_prometheus_config(cfg: dict[str, Any], *, collector_service: str = COLLECTOR_SERVICE,
                               scrape_port: str | None = None) -> list[str]:
    """Prometheus scrapes the collector's prometheus exporter, keeping the labels it sets."""
    label = "collector/prometheus.yml"
    problems: list[str] = []
    jobs = cfg.get("scrape_configs") or []
    if not isinstance(jobs, list) or not jobs:
        return [f"{label}: scrape_configs is missing or empty"]
    wanted = f"{collector_service}:{scrape_port}" if scrape_port else None
    scraping = [
        job for job in jobs
        if any(
            (wanted is None and str(t).startswith(f"{collector_service}:")) or str(t) == wanted
            for static in as_mapping(job).get("static_configs") or []
            for t in as_mapping(static).get("targets") or []
        )
    ]
    if not scraping:
        problems.append(f"{label}: no scrape job targets the collector's prometheus exporter ({wanted or collector_service})")
    for job in scraping:
        if as_mapping(job).get("honor_labels") is not True:
            problems.append(
                f"{label}: job '{job.get('job_name')}' must set honor_labels: true "
                "(each run's job/instance labels come from the collector)"
            )
    return problems


def validate_jaeger_config(
    cfg: dict[str, Any], *, volume_mount_target: str | None, healthcheck_port: str | None
) -> list[str]:
    label = "collector/jaeger.yaml"
    problems = validate_pipelines(cfg, label)
    extensions = as_mapping(cfg.get("extensions"))
    exporters = as_mapping(cfg.get("exporters"))
    backends = as_mapping(as_mapping(extensions.get("jaeger_storage")).get("backends"))
    if not backends:
        problems.append(f"{label}: extensions.jaeger_storage.backends is empty")

    query = as_mapping(extensions.get("jaeger_query"))
    traces = as_mapping(query.get("storage")).get("traces")
    if traces not in backends:
        problems.append(f"{label}: jaeger_query.storage.traces {traces!r} is not a jaeger_storage backend")
    ui = endpoint_host_port(as_mapping(query.get("http")).get("endpoint"))
    if ui is not None and ui[1] != "16686":
        problems.append(f"{label}: jaeger_query.http.endpoint must listen on 16686, got {ui}")

    store = as_mapping(exporters.get("jaeger_storage_exporter")).get("trace_storage")
    if store not in backends:
        problems.append(f"{label}: jaeger_storage_exporter.trace_storage {store!r} is not a jaeger_storage backend")

    for name, backend in backends.items():
        backend = as_mapping(backend)
        if "memory" in backend:
            continue
        badger = as_mapping(backend.get("badger"))
        if not badger:
            problems.append(f"{label}: backend '{name}' must be memory or badger")
            continue
        if badger.get("ephemeral") is not False:
            problems.append(f"{label}: badger backend '{name}' must set ephemeral: false to use the volume")
        dirs = as_mapping(badger.get("directories"))
        for key in ("keys", "values"):
            path = dirs.get(key)
            if volume_mount_target is None:
                problems.append(f"{label}: badger backend '{name}' is used but jaeger mounts no named volume")
            elif not isinstance(path, str) or not is_under(path, volume_mount_target):
                problems.append(
                    f"{label}: badger directories.{key} {path!r} is not under the named volume "
                    f"mounted at {volume_mount_target!r}; data would be lost with the container"
                )

    receivers = as_mapping(cfg.get("receivers"))
    protocols = as_mapping(as_mapping(receivers.get("otlp")).get("protocols"))
    hp = endpoint_host_port(as_mapping(protocols.get("grpc")).get("endpoint"))
    if hp is None or hp[1] != "4317" or hp[0] in ("localhost", "127.0.0.1"):
        problems.append(
            f"{label}: receivers.otlp.protocols.grpc.endpoint must listen on a non-loopback :4317 "
            f"(the collector sends to jaeger:4317), got {hp}"
        )

    hc = as_mapping(extensions.get("healthcheckv2"))
    hc_hp = endpoint_host_port(as_mapping(hc.get("http")).get("endpoint"))
    if not hc or hc_hp is None:
        problems.append(f"{label}: extensions.healthcheckv2.http.endpoint must be set")
    else:
        if healthcheck_port is not None and hc_hp[1] != healthcheck_port:
            problems.append(
                f"{label}: healthcheckv2 listens on {hc_hp[1]} but the compose healthcheck probes {healthcheck_port}"
            )
        if hc.get("use_v2") is not True:
            problems.append(f"{label}: healthcheckv2.use_v2 must be true (the /status path is a v2 feature)")
    return problems


# --------------------------------------------------------------------------
# validator: docker-compose.yml
# --------------------------------------------------------------------------


def service_volumes(service: dict[str, Any]) -> list[dict[str, Any]]:
    return [parse_volume(v) for v in service.get("volumes") or []]


def bind_target_for(service: dict[str, Any], repo_relative_source: str) -> str | None:
    wanted = posixpath.normpath(repo_relative_source)
    for vol in service_volumes(service):
        if vol["type"] == "bind" and posixpath.normpath(str(vol["source"])) == wanted:
            return vol["target"]
    return None


def named_volume_target(service: dict[str, Any], declared: set[str]) -> str | None:
    for vol in service_volumes(service):
        if vol["type"] == "volume" and vol["source"] in declared:
            return vol["target"]
    return None


def healthcheck_probe_port(service: dict[str, Any]) -> str | None:
    test = as_mapping(service.get("healthcheck")).get("test")
    text = " ".join(test) if isinstance(test, list) else str(test or "")
    match = re.search(r"https?://[^/\s:]+:(\d+)", text)
    return match.group(1) if match else None


def validate_compose(compose: dict[str, Any], project_dir: Path) -> list[str]:
    label = "docker-compose.yml"
    problems: list[str] = []
    services = as_mapping(compose.get("services"))
    for required in (JAEGER_SERVICE, COLLECTOR_SERVICE):
        if required not in services:
            problems.append(f"{label}: service '{required}' is missing")
    if problems:
        return problems

    # images: explicit tags, never latest, expected repositories and major versions
    for name, svc in services.items():
        image = as_mapping(svc).get("image")
        if not image:
            problems.append(f"{label}: service '{name}' has no image")
            continue
        if "$" in str(image):
            problems.append(
                f"{label}: service '{name}' image {image!r} must use an explicit, fixed version tag "
                "(no variable interpolation: the default would be unpinned or drift)"
            )
            continue
        repository, tag, digest = split_image(str(image))
        if tag is None and digest is None:
            problems.append(f"{label}: service '{name}' image {image!r} is untagged (implicitly :latest)")
        elif tag is not None and tag.lower() == "latest":
            problems.append(f"{label}: service '{name}' image {image!r} must use an explicit, fixed version tag")
    for name, expected_repo, version_re, what in (
        (JAEGER_SERVICE, JAEGER_IMAGE, r"2\.\d+\.\d+", "a Jaeger v2 release (2.x.y)"),
        (COLLECTOR_SERVICE, COLLECTOR_IMAGE, r"0\.\d+\.\d+", "a pinned 0.x.y release"),
    ):
        image = str(services[name].get("image") or "")
        if "$" in image:
            continue  # already reported above; cannot be parsed reliably
        repo, tag, _ = split_image(image)
        if strip_registry(repo) != expected_repo:
            problems.append(f"{label}: {name} image must be {expected_repo}, got {repo!r}")
        if not re.fullmatch(version_re, tag or ""):
            problems.append(f"{label}: {name} image tag must be {what}, got {tag!r}")

    # ports
    def published(name: str) -> dict[str, str | None]:
        ports = [parse_port(p) for p in services[name].get("ports") or []]
        return {p["target"]: p["published"] for p in ports if p["published"]}

    col_ports, jaeger_ports = published(COLLECTOR_SERVICE), published(JAEGER_SERVICE)
    for port, what in (("4317", "OTLP gRPC"), ("4318", "OTLP HTTP")):
        if col_ports.get(port) != port:
            problems.append(f"{label}: collector must publish {what} {port}:{port}, got {col_ports}")
        if port in jaeger_ports:
            problems.append(
                f"{label}: jaeger publishes {what} {port}; only the collector may receive OTLP from the host"
            )
    if jaeger_ports.get("16686") != "16686":
        problems.append(f"{label}: jaeger must publish the UI 16686:16686, got {jaeger_ports}")

    # health: every service is probed, or waits for a probed service
    for name, svc in services.items():
        if healthcheck_enabled(svc):
            continue
        deps = svc.get("depends_on")
        healthy_deps = [
            dep
            for dep, cond in (deps.items() if isinstance(deps, dict) else [])
            if as_mapping(cond).get("condition") == "service_healthy"
            and healthcheck_enabled(as_mapping(services.get(dep)))
        ]
        if not healthy_deps:
            problems.append(
                f"{label}: service '{name}' has no healthcheck and no depends_on with "
                "condition: service_healthy on a service that has one"
            )
    if healthcheck_enabled(services[JAEGER_SERVICE]) and healthcheck_probe_port(services[JAEGER_SERVICE]) is None:
        problems.append(f"{label}: jaeger healthcheck must probe an http://host:port URL")
    col_deps = services[COLLECTOR_SERVICE].get("depends_on")
    if not isinstance(col_deps, dict) or JAEGER_SERVICE not in col_deps:
        problems.append(f"{label}: collector must depend on jaeger (its otlp/jaeger exporter target)")

    # named volumes: declared at top level and actually used (and vice versa)
    declared = set(as_mapping(compose.get("volumes")))
    used: set[str] = set()
    for name, svc in services.items():
        for vol in service_volumes(svc):
            if vol["type"] != "volume" or vol["source"] is None:
                continue
            used.add(vol["source"])
            if vol["source"] not in declared:
                problems.append(f"{label}: service '{name}' uses volume '{vol['source']}' not declared at top level")
    if not declared:
        problems.append(f"{label}: no named volume is declared at top level")
    for unused in sorted(declared - used):
        problems.append(f"{label}: named volume '{unused}' is declared but no service mounts it")
    if named_volume_target(services[JAEGER_SERVICE], declared) is None:
        problems.append(f"{label}: jaeger must keep its storage on a named volume")

    # bind mounts exist in the repository
    for name, svc in services.items():
        for vol in service_volumes(svc):
            if vol["type"] != "bind":
                continue
            source = project_dir / str(vol["source"])
            if not source.exists():
                problems.append(f"{label}: service '{name}' bind-mounts {vol['source']!r}, which does not exist")

    # the collector gets its config file and the data directory
    col = services[COLLECTOR_SERVICE]
    cfg_target = bind_target_for(col, "./collector/otel-collector.yaml")
    if cfg_target is None:
        problems.append(f"{label}: collector must bind-mount ./collector/otel-collector.yaml")
    else:
        if not (project_dir / "collector" / "otel-collector.yaml").is_file():
            problems.append(f"{label}: ./collector/otel-collector.yaml must be a file in the repository")
        if config_path_from_command(col.get("command")) != cfg_target:
            problems.append(
                f"{label}: collector command must pass --config {cfg_target} (the mounted config), "
                f"got {col.get('command')!r}"
            )
    data_target = bind_target_for(col, "./collector/data")
    if data_target is None:
        problems.append(f"{label}: collector must bind-mount ./collector/data for the file exporter")
    elif not (project_dir / "collector" / "data").is_dir():
        problems.append(f"{label}: ./collector/data must be a directory in the repository")
    if any(v["read_only"] for v in service_volumes(col) if v["target"] == data_target):
        problems.append(f"{label}: ./collector/data must be mounted read-write")

    jaeger = services[JAEGER_SERVICE]
    jaeger_cfg_target = bind_target_for(jaeger, "./collector/jaeger.yaml")
    if jaeger_cfg_target is None:
        problems.append(f"{label}: jaeger must bind-mount ./collector/jaeger.yaml")
    elif config_path_from_command(jaeger.get("command")) != jaeger_cfg_target:
        problems.append(f"{label}: jaeger command must pass --config {jaeger_cfg_target}, got {jaeger.get('command')!r}")
    problems += validate_compose_prometheus(services, declared)
    problems += validate_compose_collect(services, declared, project_dir)
    return problems


def command_option(command: Any, option: str) -> str | None:
    """The value of ``--option VALUE`` / ``--option=VALUE`` in a compose ``command``."""
    args = command.split() if isinstance(command, str) else [str(a) for a in command or []]
    for i, arg in enumerate(args):
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
        if arg == option and i + 1 < len(args):
            return args[i + 1]
    return None


def collect_grpc_port(service: dict[str, Any]) -> str | None:
    hp = endpoint_host_port(command_option(service.get("command"), "--grpc"))
    return hp[1] if hp else None


def validate_compose_collect(services: dict[str, Any], declared: set[str], project_dir: Path) -> list[str]:
    """``otel-agents collect`` built from this repository, on all interfaces, its home on a named volume."""
    label = "docker-compose.yml"
    svc = as_mapping(services.get(COLLECT_SERVICE))
    if not svc:
        return [f"{label}: service '{COLLECT_SERVICE}' is missing (otel-agents collect beside Jaeger)"]
    problems: list[str] = []
    build = svc.get("build")
    build = {"context": build} if isinstance(build, str) else as_mapping(build)
    context = project_dir / str(build.get("context", "."))
    dockerfile = context / str(build.get("dockerfile", "Dockerfile"))
    if not build:
        problems.append(f"{label}: collect must be built from this repository (build:)")
    elif not (context / "pyproject.toml").is_file():
        problems.append(f"{label}: collect build context {build.get('context')!r} is not the repository root (no pyproject.toml)")
    elif not dockerfile.is_file():
        problems.append(f"{label}: collect build dockerfile {build.get('dockerfile')!r} does not exist")
    command = svc.get("command")
    args = command.split() if isinstance(command, str) else [str(a) for a in command or []]
    if not args or args[0] != "collect":
        problems.append(f"{label}: collect command must run `otel-agents collect`, got {command!r}")
    for option, port in (("--http", "4318"), ("--grpc", "4317")):
        hp = endpoint_host_port(command_option(command, option))
        if hp != ("0.0.0.0", port):
            problems.append(
                f"{label}: collect command must pass {option} 0.0.0.0:{port} (reachable from the collector), got {hp}"
            )
    published = [p for p in (parse_port(x) for x in svc.get("ports") or []) if p["published"]]
    if published:
        problems.append(
            f"{label}: collect publishes {[p['target'] for p in published]}; only the collector may receive OTLP from the host"
        )
    home = as_mapping(svc.get("environment")).get("OTEL_AGENTS_HOME")
    volume = named_volume_target(svc, declared)
    if volume is None:
        problems.append(f"{label}: collect must keep $OTEL_AGENTS_HOME on a named volume")
    elif home != volume:
        problems.append(
            f"{label}: collect OTEL_AGENTS_HOME {home!r} must be the named volume's mount point {volume!r}"
        )
    if not healthcheck_enabled(svc):
        problems.append(f"{label}: collect has no healthcheck")
    col_deps = as_mapping(services.get(COLLECTOR_SERVICE)).get("depends_on")
    if not isinstance(col_deps, dict) or COLLECT_SERVICE not in col_deps:
        problems.append(f"{label}: collector must depend on collect (its otlp/collect exporter target)")
    col_nets = as_mapping(services.get(COLLECTOR_SERVICE)).get("networks") or []
    if set(col_nets) - set(svc.get("networks") or []):
        problems.append(f"{label}: collect must be on the collector's networks {col_nets}, got {svc.get('networks')}")
    return problems


def validate_compose_prometheus(services: dict[str, Any], declared: set[str]) -> list[str]:
    """A pinned Prometheus v3 with its config mounted and passed, data on a named volume, UI published."""
    label = "docker-compose.yml"
    prom = as_mapping(services.get(PROMETHEUS_SERVICE))
    if not prom:
        return [f"{label}: service '{PROMETHEUS_SERVICE}' is missing (it graphs the GenAI metrics)"]
    problems: list[str] = []
    repo, tag, _ = split_image(str(prom.get("image") or ""))
    if strip_registry(repo) != PROMETHEUS_IMAGE or not re.fullmatch(r"v3\.\d+\.\d+", tag or ""):
        problems.append(f"{label}: prometheus image must be {PROMETHEUS_IMAGE}:v3.x.y (pinned), got {prom.get('image')!r}")
    command = prom.get("command")
    args = command.split() if isinstance(command, str) else [str(a) for a in command or []]
    cfg_target = bind_target_for(prom, "./collector/prometheus.yml")
    if cfg_target is None:
        problems.append(f"{label}: prometheus must bind-mount ./collector/prometheus.yml")
    elif f"--config.file={cfg_target}" not in args:
        problems.append(f"{label}: prometheus command must pass --config.file={cfg_target}, got {command!r}")
    data = named_volume_target(prom, declared)
    if data is None:
        problems.append(f"{label}: prometheus must keep its storage on a named volume")
    elif f"--storage.tsdb.path={data}" not in args:
        problems.append(f"{label}: prometheus command must pass --storage.tsdb.path={data} (the named volume)")
    ports = {p["target"]: p["published"] for p in (parse_port(x) for x in prom.get("ports") or []) if p["published"]}
    if ports.get("9090") != "9090":
        problems.append(f"{label}: prometheus must publish its UI 9090:9090, got {ports}")
    return problems


# --------------------------------------------------------------------------
# validator: collector/otel-collector-sharded.yaml
# --------------------------------------------------------------------------


def version_tuple(tag: str | None) -> tuple[int, ...] | None:
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", tag or "")
    return tuple(int(g) for g in match.groups()) if match else None


def documented_image_tag(path: Path, repository: str = COLLECTOR_IMAGE) -> str | None:
    """The ``repository:tag`` a config file's header comment says it runs on."""
    match = re.search(re.escape(repository) + r":(\S+?)[\s)]", path.read_text(encoding="utf-8"))
    return match.group(1) if match else None


def validate_sharded_config(cfg: dict[str, Any], *, image_tag: str | None,
                            collect_port: str | None = "4317") -> list[str]:
    """Sessions sharded over several collect instances: attribute routing on the session id, a static ring."""
    label = "collector/otel-collector-sharded.yaml"
    problems = validate_pipelines(cfg, label)
    version = version_tuple(image_tag)
    if version is None:
        problems.append(f"{label}: the collector-contrib image must be pinned to a 0.x.y release, got {image_tag!r}")
    elif version < ATTRIBUTE_ROUTING_SINCE:
        problems.append(
            f"{label}: collector-contrib {image_tag} predates routing_key: attributes "
            f"(needs {'.'.join(map(str, ATTRIBUTE_ROUTING_SINCE))} or later)"
        )
    exporters = as_mapping(cfg.get("exporters"))
    traces = as_mapping(as_mapping(as_mapping(cfg.get("service")).get("pipelines")).get("traces"))
    wired = traces.get("exporters") or []
    balancers = [n for n in wired if component_type(n) in ("loadbalancing", "load_balancing") and n in exporters]
    if not balancers:
        return problems + [f"{label}: the traces pipeline must export through a loadbalancing exporter, got {wired}"]
    if len(wired) != len(balancers):
        problems.append(f"{label}: the traces pipeline must only load-balance (a plain exporter would bypass the shards), got {wired}")
    if (traces.get("processors") or [None])[0] != "memory_limiter":
        problems.append(f"{label}: memory_limiter must be the first processor of the traces pipeline")
    for name in balancers:
        lb = as_mapping(exporters[name])
        where = f"{label}: exporters.{name}"
        if lb.get("routing_key") != "attributes":
            problems.append(f"{where}.routing_key must be attributes (route on the session id), got {lb.get('routing_key')!r}")
        if lb.get("routing_attributes") != [SESSION_ATTRIBUTE]:
            problems.append(
                f"{where}.routing_attributes must be [{SESSION_ATTRIBUTE}] (one session, one instance), "
                f"got {lb.get('routing_attributes')!r}"
            )
        otlp = as_mapping(as_mapping(lb.get("protocol")).get("otlp"))
        if "endpoint" in otlp:
            problems.append(f"{where}.protocol.otlp.endpoint must not be set (the resolver supplies each instance)")
        if as_mapping(otlp.get("tls")).get("insecure") is not True:
            problems.append(f"{where}.protocol.otlp.tls.insecure must be true (plain gRPC on the internal network)")
        resolver = as_mapping(lb.get("resolver"))
        if set(resolver) != {"static"}:
            problems.append(f"{where}.resolver must be exactly one static resolver listing the instances, got {sorted(resolver)}")
            continue
        hosts = as_mapping(resolver["static"]).get("hostnames") or []
        if len(hosts) < 2:
            problems.append(f"{where}.resolver.static.hostnames must list several collect instances, got {hosts}")
        if len(hosts) != len(set(hosts)):
            problems.append(f"{where}.resolver.static.hostnames lists an instance twice: {hosts}")
        for host in hosts:
            hp = endpoint_host_port(host)
            if hp is None or (collect_port is not None and hp[1] != collect_port):
                problems.append(f"{where}: instance {host!r} must be host:{collect_port} (collect's OTLP gRPC port)")
    return problems


# --------------------------------------------------------------------------
# glue: validate the three files together, as they are deployed
# --------------------------------------------------------------------------


def validate_all(compose: dict[str, Any], collector_cfg: dict[str, Any], jaeger_cfg: dict[str, Any],
                 prometheus_cfg: dict[str, Any] | None = None) -> list[str]:
    problems = validate_compose(compose, REPO)
    services = as_mapping(compose.get("services"))
    col = as_mapping(services.get(COLLECTOR_SERVICE))
    jaeger = as_mapping(services.get(JAEGER_SERVICE))
    declared = set(as_mapping(compose.get("volumes")))
    port = collect_grpc_port(as_mapping(services.get(COLLECT_SERVICE)))
    problems += validate_collector_config(
        collector_cfg,
        data_mount_target=bind_target_for(col, "./collector/data") or "/nonexistent-mount",
        mem_limit_bytes=parse_mem(col.get("mem_limit")),
        collect_port=port,
    )
    compose_tag = split_image(str(col.get("image") or ""))[1]
    sharded_tag = documented_image_tag(SHARDED_CONFIG)
    if sharded_tag != compose_tag:
        problems.append(
            f"collector/otel-collector-sharded.yaml: documents image tag {sharded_tag!r}, "
            f"but docker-compose.yml pins {compose_tag!r}"
        )
    problems += validate_sharded_config(load_yaml(SHARDED_CONFIG), image_tag=compose_tag, collect_port=port)
    problems += validate_jaeger_config(
        jaeger_cfg,
        volume_mount_target=named_volume_target(jaeger, declared),
        healthcheck_port=healthcheck_probe_port(jaeger),
    )
    problems += validate_prometheus_config(
        prometheus_cfg if prometheus_cfg is not None else load_yaml(PROMETHEUS_CONFIG),
        scrape_port=prometheus_exporter_port(collector_cfg) or "<no prometheus exporter>",
    )
    return problems


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_yaml(COMPOSE_FILE)


@pytest.fixture(scope="module")
def collector_cfg() -> dict[str, Any]:
    return load_yaml(COLLECTOR_CONFIG)


@pytest.fixture(scope="module")
def jaeger_cfg() -> dict[str, Any]:
    return load_yaml(JAEGER_CONFIG)


# --------------------------------------------------------------------------
# tests against the real files
# --------------------------------------------------------------------------


def test_compose_file_is_valid(compose):
    problems = validate_compose(compose, REPO)
    assert not problems, report(problems)


def test_collector_config_is_valid(compose, collector_cfg):
    col = compose["services"][COLLECTOR_SERVICE]
    data_target = bind_target_for(col, "./collector/data")
    assert data_target, "collector does not bind-mount ./collector/data"
    problems = validate_collector_config(
        collector_cfg, data_mount_target=data_target, mem_limit_bytes=parse_mem(col.get("mem_limit"))
    )
    assert not problems, report(problems)


def test_jaeger_config_is_valid(compose, jaeger_cfg):
    jaeger = compose["services"][JAEGER_SERVICE]
    problems = validate_jaeger_config(
        jaeger_cfg,
        volume_mount_target=named_volume_target(jaeger, set(as_mapping(compose.get("volumes")))),
        healthcheck_port=healthcheck_probe_port(jaeger),
    )
    assert not problems, report(problems)


def test_collector_pipeline_shape(collector_cfg):
    """The exact pipeline the project relies on, spelled out."""
    traces = collector_cfg["service"]["pipelines"]["traces"]
    assert traces["receivers"] == ["otlp"], f"traces receivers: {traces['receivers']}"
    assert traces["processors"][0] == "memory_limiter", f"memory_limiter not first: {traces['processors']}"
    assert traces["processors"] == ["memory_limiter", "batch"], f"traces processors: {traces['processors']}"
    # Issue 20: the traces fan out to otel-agents collect as well.
    assert set(traces["exporters"]) == {"otlp/jaeger", "otlp/collect", "file"}, f"traces exporters: {traces['exporters']}"
    assert "health_check" in collector_cfg["service"]["extensions"]


def test_collector_metrics_pipeline_shape(collector_cfg):
    """GenAI metrics: OTLP in, memory_limiter first, out to the prometheus scrape endpoint."""
    metrics = collector_cfg["service"]["pipelines"]["metrics"]
    assert metrics["receivers"] == ["otlp"], f"metrics receivers: {metrics['receivers']}"
    assert metrics["processors"] == ["memory_limiter", "batch"], f"metrics processors: {metrics['processors']}"
    assert metrics["exporters"] == ["prometheus"], f"metrics exporters: {metrics['exporters']}"


def test_prometheus_scrapes_the_collector(collector_cfg):
    cfg = load_yaml(PROMETHEUS_CONFIG)
    problems = validate_prometheus_config(cfg, scrape_port=prometheus_exporter_port(collector_cfg))
    assert not problems, report(problems)


def test_collector_waits_for_healthy_jaeger(compose):
    """The collector image is distroless, so it cannot carry a Docker healthcheck;
    it must instead wait for Jaeger's healthcheck."""
    services = compose["services"]
    assert healthcheck_enabled(services[JAEGER_SERVICE]), "jaeger has no usable healthcheck"
    cond = as_mapping(as_mapping(services[COLLECTOR_SERVICE].get("depends_on")).get(JAEGER_SERVICE))
    assert cond.get("condition") == "service_healthy", f"collector depends_on jaeger with {cond!r}"


def test_data_directory_is_kept_but_not_committed():
    assert DATA_GITIGNORE.is_file(), "collector/data/.gitignore is missing (the bind mount needs the directory)"
    lines = [ln.strip() for ln in DATA_GITIGNORE.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert "*" in lines, f"collector/data/.gitignore must ignore everything ('*'), has {lines}"
    assert "!.gitignore" in lines, f"collector/data/.gitignore must keep itself ('!.gitignore'), has {lines}"
    assert lines.index("*") < lines.index("!.gitignore"), "'!.gitignore' must come after '*' to take effect"


def test_collector_readme_covers_the_essentials():
    text = COLLECTOR_README.read_text(encoding="utf-8")
    for needle in (
        "receivers",
        "processors",
        "exporters",
        "extensions",
        "memory_limiter",
        "otel-agents import collector/data/*.jsonl",
        "otlp/tempo",
    ):
        assert needle in text, f"collector/README.md does not mention {needle!r}"


def test_all_files_validate_together(compose, collector_cfg, jaeger_cfg):
    problems = validate_all(compose, collector_cfg, jaeger_cfg)
    assert not problems, report(problems)


# --------------------------------------------------------------------------
# the validators catch broken copies
# --------------------------------------------------------------------------


def _set(path: str, value: Any):
    """Mutation: set a dotted path (segments split on '.'; use '|' inside a key for '/')."""

    def mutate(doc: dict[str, Any]) -> None:
        keys = [k.replace("|", "/") for k in path.split(".")]
        node = doc
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return mutate


def _delete(path: str):
    def mutate(doc: dict[str, Any]) -> None:
        keys = [k.replace("|", "/") for k in path.split(".")]
        node = doc
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return mutate


def _write_broken_copy(src: Path, tmp_path: Path, mutate) -> dict[str, Any]:
    """Copy ``src`` into tmp_path, break it, write it back, reload it from disk."""
    doc = copy.deepcopy(load_yaml(src))
    mutate(doc)
    broken = tmp_path / src.name
    broken.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return load_yaml(broken)


COLLECTOR_BREAKAGES = {
    "undefined processor": (
        _set("service.pipelines.traces.processors", ["memory_limiter", "batch", "attributes/redact"]),
        "references 'attributes/redact', which is not defined",
    ),
    "undefined exporter": (
        _set("service.pipelines.traces.exporters", ["otlp/jaeger", "file", "otlp/tempo"]),
        "references 'otlp/tempo', which is not defined",
    ),
    "undefined extension": (
        _set("service.extensions", ["health_check", "pprof"]),
        "service.extensions references 'pprof'",
    ),
    "unused exporter": (
        _set("exporters.debug", {"verbosity": "basic"}),
        "exporter 'debug' is defined but not used",
    ),
    "unused extension": (
        _set("service.extensions", []),
        "extension 'health_check' is defined but not used",
    ),
    "memory_limiter not first": (
        _set("service.pipelines.traces.processors", ["batch", "memory_limiter"]),
        "memory_limiter must be the first processor",
    ),
    "no rotation": (
        _delete("exporters.file.rotation"),
        "exporters.file.rotation is missing",
    ),
    "rotation key misspelled": (
        _set("exporters.file.rotation", {"max_megabyte": 100, "max_days": 3, "max_backups": 3}),
        "rotation.max_megabytes must be a positive integer",
    ),
    "file path outside mount": (
        _set("exporters.file.path", "/tmp/traces.jsonl"),
        "must lie under the mounted data directory",
    ),
    "exporter not pointing at jaeger": (
        _set("exporters.otlp|jaeger.endpoint", "localhost:4317"),
        "must point at the compose service 'jaeger'",
    ),
    "receiver bound to localhost": (
        _set("receivers.otlp.protocols.grpc.endpoint", "localhost:4317"),
        "receivers.otlp.protocols.grpc.endpoint must be 0.0.0.0:4317",
    ),
    "oversized batches": (
        _set("processors.batch.send_batch_max_size", 8192),
        "would exceed the 4 MiB gRPC message limit",
    ),
    "no metrics pipeline": (
        _delete("service.pipelines.metrics"),
        "service.pipelines.metrics is missing",
    ),
    "metrics not sent to prometheus": (
        _set("service.pipelines.metrics.exporters", ["file"]),
        "the metrics pipeline must export to prometheus",
    ),
    "prometheus exporter on loopback": (
        _set("exporters.prometheus.endpoint", "127.0.0.1:8889"),
        "exporters.prometheus.endpoint must listen on a non-loopback host:port",
    ),
}


@pytest.mark.parametrize("case", sorted(COLLECTOR_BREAKAGES))
def test_collector_validator_catches_broken_copy(case, tmp_path):
    mutate, expected = COLLECTOR_BREAKAGES[case]
    broken = _write_broken_copy(COLLECTOR_CONFIG, tmp_path, mutate)
    problems = validate_collector_config(broken, data_mount_target="/data")
    assert any(expected in p for p in problems), f"{case}: expected {expected!r} in{report(problems or ['<none>'])}"


JAEGER_BREAKAGES = {
    "query reads an unknown backend": (
        _set("extensions.jaeger_query.storage.traces", "nope"),
        "jaeger_query.storage.traces 'nope' is not a jaeger_storage backend",
    ),
    "badger outside the volume": (
        _set("extensions.jaeger_storage.backends.badger_main.badger.directories.keys", "/badger/keys"),
        "badger directories.keys '/badger/keys' is not under the named volume",
    ),
    "pipeline references undefined processor": (
        _set("service.pipelines.traces.processors", ["memory_limiter", "batch"]),
        "references 'memory_limiter', which is not defined",
    ),
}


@pytest.mark.parametrize("case", sorted(JAEGER_BREAKAGES))
def test_jaeger_validator_catches_broken_copy(case, tmp_path):
    mutate, expected = JAEGER_BREAKAGES[case]
    broken = _write_broken_copy(JAEGER_CONFIG, tmp_path, mutate)
    problems = validate_jaeger_config(broken, volume_mount_target="/tmp", healthcheck_port="13133")
    assert any(expected in p for p in problems), f"{case}: expected {expected!r} in{report(problems or ['<none>'])}"


COMPOSE_BREAKAGES = {
    "latest tag": (
        _set("services.collector.image", "otel/opentelemetry-collector-contrib:latest"),
        "must use an explicit, fixed version tag",
    ),
    "untagged image": (
        _set("services.jaeger.image", "jaegertracing/jaeger"),
        "is untagged",
    ),
    "jaeger v1": (
        _set("services.jaeger.image", "jaegertracing/jaeger:1.76.0"),
        "must be a Jaeger v2 release",
    ),
    "variable tag": (
        _set("services.jaeger.image", "jaegertracing/jaeger:${JAEGER_VERSION:-latest}"),
        "must use an explicit, fixed version tag",
    ),
    "jaeger publishes OTLP": (
        _set("services.jaeger.ports", ["16686:16686", "4317:4317"]),
        "jaeger publishes OTLP gRPC 4317",
    ),
    "collector lacks 4318": (
        _set("services.collector.ports", ["4317:4317"]),
        "collector must publish OTLP HTTP 4318:4318",
    ),
    "no healthcheck anywhere": (
        _delete("services.jaeger.healthcheck"),
        "service 'collector' has no healthcheck",
    ),
    "short depends_on": (
        _set("services.collector.depends_on", ["jaeger"]),
        "service 'collector' has no healthcheck and no depends_on",
    ),
    "undeclared volume": (
        _delete("volumes"),
        "no named volume is declared",
    ),
    "unused volume": (
        _set("services.jaeger.volumes", ["./collector/jaeger.yaml:/etc/jaeger/config.yaml:ro"]),
        "named volume 'jaeger-data' is declared but no service mounts it",
    ),
    "missing config file": (
        _set(
            "services.collector.volumes",
            ["./collector/otel-collector.yml:/etc/otelcol-contrib/config.yaml:ro", "./collector/data:/data"],
        ),
        "bind-mounts './collector/otel-collector.yml', which does not exist",
    ),
    "config not passed": (
        _set("services.collector.command", ["--config=/etc/otelcol/config.yaml"]),
        "collector command must pass --config /etc/otelcol-contrib/config.yaml",
    ),
    "no prometheus": (
        _delete("services.prometheus"),
        "service 'prometheus' is missing",
    ),
    "prometheus unpinned": (
        _set("services.prometheus.image", "prom/prometheus:latest"),
        "must use an explicit, fixed version tag",
    ),
    "prometheus v2": (
        _set("services.prometheus.image", "prom/prometheus:v2.53.0"),
        "prometheus image must be prom/prometheus:v3.x.y",
    ),
    "prometheus config not passed": (
        _set("services.prometheus.command", ["--storage.tsdb.path=/prometheus"]),
        "prometheus command must pass --config.file=/etc/prometheus/prometheus.yml",
    ),
    "prometheus storage in the container": (
        _set("services.prometheus.volumes", ["./collector/prometheus.yml:/etc/prometheus/prometheus.yml:ro"]),
        "prometheus must keep its storage on a named volume",
    ),
}


PROMETHEUS_BREAKAGES = {
    "scrapes something else": (
        _set("scrape_configs", [{"job_name": "x", "honor_labels": True, "static_configs": [{"targets": ["jaeger:8889"]}]}]),
        "no scrape job targets the collector's prometheus exporter (collector:8889)",
    ),
    "labels renamed": (
        _set("scrape_configs", [{"job_name": "x", "static_configs": [{"targets": ["collector:8889"]}]}]),
        "must set honor_labels: true",
    ),
    "no scrape jobs": (
        _delete("scrape_configs"),
        "scrape_configs is missing or empty",
    ),
}


@pytest.mark.parametrize("case", sorted(PROMETHEUS_BREAKAGES))
def test_prometheus_validator_catches_broken_copy(case, tmp_path):
    mutate, expected = PROMETHEUS_BREAKAGES[case]
    broken = _write_broken_copy(PROMETHEUS_CONFIG, tmp_path, mutate)
    problems = validate_prometheus_config(broken, scrape_port="8889")
    assert any(expected in p for p in problems), f"{case}: expected {expected!r} in{report(problems or ['<none>'])}"


def test_validate_all_flags_a_scrape_port_the_collector_does_not_serve(compose, collector_cfg, jaeger_cfg):
    """Cross-file check: moving the collector's prometheus exporter breaks the scrape target."""
    moved = copy.deepcopy(collector_cfg)
    moved["exporters"]["prometheus"]["endpoint"] = "0.0.0.0:9464"
    problems = validate_all(compose, moved, jaeger_cfg)
    assert any("(collector:9464)" in p for p in problems), report(problems)


@pytest.mark.parametrize("case", sorted(COMPOSE_BREAKAGES))
def test_compose_validator_catches_broken_copy(case, tmp_path):
    mutate, expected = COMPOSE_BREAKAGES[case]
    broken = _write_broken_copy(COMPOSE_FILE, tmp_path, mutate)
    problems = validate_compose(broken, REPO)
    assert any(expected in p for p in problems), f"{case}: expected {expected!r} in{report(problems or ['<none>'])}"


def test_compose_copy_outside_repo_reports_missing_mounts(tmp_path):
    """Bind-mount sources are resolved against the compose file's directory."""
    broken = _write_broken_copy(COMPOSE_FILE, tmp_path, lambda doc: None)
    problems = validate_compose(broken, tmp_path)
    assert any("'./collector/otel-collector.yaml', which does not exist" in p for p in problems), report(problems)


def test_validate_all_flags_file_path_outside_the_real_mount(compose, collector_cfg, jaeger_cfg):
    """Cross-file check: moving the data mount in compose breaks the exporter path."""
    moved = copy.deepcopy(compose)
    moved["services"][COLLECTOR_SERVICE]["volumes"] = [
        "./collector/otel-collector.yaml:/etc/otelcol-contrib/config.yaml:ro",
        "./collector/data:/var/lib/otelcol/export",
    ]
    problems = validate_all(moved, collector_cfg, jaeger_cfg)
    assert any("'/var/lib/otelcol/export'" in p for p in problems), report(problems)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("4317:4317", {"host_ip": None, "published": "4317", "target": "4317", "protocol": "tcp"}),
        ("127.0.0.1:4318:4318", {"host_ip": "127.0.0.1", "published": "4318", "target": "4318", "protocol": "tcp"}),
        ("6831:6831/udp", {"host_ip": None, "published": "6831", "target": "6831", "protocol": "udp"}),
        ("16686", {"host_ip": None, "published": None, "target": "16686", "protocol": "tcp"}),
        (
            {"target": 4317, "published": "4317", "host_ip": "0.0.0.0"},
            {"host_ip": "0.0.0.0", "published": "4317", "target": "4317", "protocol": "tcp"},
        ),
    ],
)
def test_parse_port(entry, expected):
    assert parse_port(entry) == expected


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("jaegertracing/jaeger:2.17.0", ("jaegertracing/jaeger", "2.17.0", None)),
        ("jaegertracing/jaeger", ("jaegertracing/jaeger", None, None)),
        ("localhost:5000/jaeger", ("localhost:5000/jaeger", None, None)),
        ("ghcr.io/x/y:1.2@sha256:abc", ("ghcr.io/x/y", "1.2", "sha256:abc")),
    ],
)
def test_split_image(image, expected):
    assert split_image(image) == expected


# --------------------------------------------------------------------------
# the fleet: collect beside Jaeger, and the sharded collector
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sharded_cfg() -> dict[str, Any]:
    return load_yaml(SHARDED_CONFIG)


def test_collect_service_is_valid(compose):
    problems = validate_compose_collect(compose["services"], set(as_mapping(compose.get("volumes"))), REPO)
    assert not problems, report(problems)


def test_collector_fans_traces_out_to_jaeger_and_collect(compose, collector_cfg):
    port = collect_grpc_port(compose["services"][COLLECT_SERVICE])
    assert port == "4317", f"collect's --grpc port: {port}"
    problems = validate_fanout(collector_cfg, collect_grpc_port=port)
    assert not problems, report(problems)
    assert exporters_to(collector_cfg, COLLECT_SERVICE) == ["otlp/collect"]


def test_sharded_config_is_valid(compose, sharded_cfg):
    tag = split_image(compose["services"][COLLECTOR_SERVICE]["image"])[1]
    problems = validate_sharded_config(sharded_cfg, image_tag=tag)
    assert not problems, report(problems)


def test_sharded_config_routes_on_the_session_id(sharded_cfg):
    """Spelled out: one loadbalancing exporter, keyed on gen_ai.conversation.id, over a static list."""
    lb = sharded_cfg["exporters"]["loadbalancing/collect"]
    assert lb["routing_key"] == "attributes"
    assert lb["routing_attributes"] == ["gen_ai.conversation.id"]
    assert len(lb["resolver"]["static"]["hostnames"]) >= 2
    assert sharded_cfg["service"]["pipelines"]["traces"]["exporters"] == ["loadbalancing/collect"]


def test_pinned_images_take_attribute_routing(compose):
    """The pinned contrib image (compose, and the sharded config's header) has routing_key: attributes."""
    tag = split_image(compose["services"][COLLECTOR_SERVICE]["image"])[1]
    assert version_tuple(tag) >= ATTRIBUTE_ROUTING_SINCE, tag
    assert documented_image_tag(SHARDED_CONFIG) == tag
    assert documented_image_tag(COLLECTOR_CONFIG) == tag
    repo, collect_tag, _ = split_image(compose["services"][COLLECT_SERVICE]["image"])
    assert collect_tag and collect_tag != "latest", compose["services"][COLLECT_SERVICE]["image"]


def test_collect_dockerfile_runs_collect_from_this_repository():
    text = (REPO / COLLECT_DOCKERFILE).read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M), "collect image must be python:3.11-slim"
    assert "pip install --no-cache-dir ." in text
    assert re.search(r"^ENV OTEL_AGENTS_HOME=/var/lib/otel-agents$", text, re.M)
    assert re.search(r"^USER \d+$", text, re.M), "collect must not run as root"


def test_collect_doc_has_a_fleet_section():
    text = COLLECT_DOC.read_text(encoding="utf-8")
    assert "## Fleet" in text
    fleet = text.split("## Fleet", 1)[1]
    for needle in ("otel-collector-sharded.yaml", "routing_key: attributes", "gen_ai.conversation.id",
                   "not available on this machine", "0.122.0"):
        assert needle in fleet, f"docs/collect.md, Fleet: does not mention {needle!r}"


FANOUT_BREAKAGES = {
    "collect exporter not in the pipeline": (
        _set("service.pipelines.traces.exporters", ["otlp/jaeger", "file"]),
        "the traces pipeline does not export to collect",
    ),
    "no exporter to collect": (
        _delete("exporters.otlp|collect"),
        "no otlp exporter points at the compose service 'collect'",
    ),
    "collect on its HTTP port": (
        _set("exporters.otlp|collect.endpoint", "collect:4318"),
        "uses port 4318, but collect listens for OTLP gRPC on 4317",
    ),
    "collect over TLS": (
        _set("exporters.otlp|collect.tls", {"insecure": False}),
        "exporters.otlp/collect.tls.insecure must be true",
    ),
    "jaeger dropped": (
        _set("service.pipelines.traces.exporters", ["otlp/collect", "file"]),
        "must fan out to both Jaeger and collect",
    ),
}


@pytest.mark.parametrize("case", sorted(FANOUT_BREAKAGES))
def test_fanout_validator_catches_broken_copy(case, tmp_path):
    mutate, expected = FANOUT_BREAKAGES[case]
    broken = _write_broken_copy(COLLECTOR_CONFIG, tmp_path, mutate)
    problems = validate_collector_config(broken, data_mount_target="/data")
    assert any(expected in p for p in problems), f"{case}: expected {expected!r} in{report(problems or ['<none>'])}"


COLLECT_COMPOSE_BREAKAGES = {
    "no collect service": (
        _delete("services.collect"),
        "service 'collect' is missing",
    ),
    "collect unpinned": (
        _set("services.collect.image", "otel-agents-collect:latest"),
        "must use an explicit, fixed version tag",
    ),
    "collect not built here": (
        _delete("services.collect.build"),
        "collect must be built from this repository",
    ),
    "collect dockerfile missing": (
        _set("services.collect.build", {"context": ".", "dockerfile": "collector/nope.Dockerfile"}),
        "collect build dockerfile 'collector/nope.Dockerfile' does not exist",
    ),
    "collect on loopback": (
        _set("services.collect.command", ["collect", "--http", "127.0.0.1:4318", "--grpc", "0.0.0.0:4317"]),
        "collect command must pass --http 0.0.0.0:4318",
    ),
    "collect without grpc": (
        _set("services.collect.command", ["collect", "--http", "0.0.0.0:4318"]),
        "collect command must pass --grpc 0.0.0.0:4317",
    ),
    "collect publishes OTLP": (
        _set("services.collect.ports", ["4318:4318"]),
        "collect publishes ['4318']",
    ),
    "collect home in the container": (
        _set("services.collect.volumes", []),
        "collect must keep $OTEL_AGENTS_HOME on a named volume",
    ),
    "collect home not the volume": (
        _set("services.collect.environment", {"OTEL_AGENTS_HOME": "/home/otel-agents"}),
        "collect OTEL_AGENTS_HOME '/home/otel-agents' must be the named volume's mount point",
    ),
    "collect unprobed": (
        _delete("services.collect.healthcheck"),
        "collect has no healthcheck",
    ),
    "collector does not wait for collect": (
        _set("services.collector.depends_on", {"jaeger": {"condition": "service_healthy"}}),
        "collector must depend on collect",
    ),
    "collect off the network": (
        _set("services.collect.networks", ["other"]),
        "collect must be on the collector's networks",
    ),
}


@pytest.mark.parametrize("case", sorted(COLLECT_COMPOSE_BREAKAGES))
def test_compose_validator_catches_broken_collect(case, tmp_path):
    mutate, expected = COLLECT_COMPOSE_BREAKAGES[case]
    broken = _write_broken_copy(COMPOSE_FILE, tmp_path, mutate)
    problems = validate_compose(broken, REPO)
    assert any(expected in p for p in problems), f"{case}: expected {expected!r} in{report(problems or ['<none>'])}"


SHARDED_BREAKAGES = {
    "trace id routing": (
        _set("exporters.loadbalancing|collect.routing_key", "traceID"),
        "routing_key must be attributes",
    ),
    "another attribute": (
        _set("exporters.loadbalancing|collect.routing_attributes", ["session.id"]),
        "routing_attributes must be [gen_ai.conversation.id]",
    ),
    "composite key": (
        _set("exporters.loadbalancing|collect.routing_attributes", ["gen_ai.conversation.id", "service.name"]),
        "routing_attributes must be [gen_ai.conversation.id]",
    ),
    "one instance": (
        _set("exporters.loadbalancing|collect.resolver.static.hostnames", ["collect-1:4317"]),
        "must list several collect instances",
    ),
    "instance twice": (
        _set("exporters.loadbalancing|collect.resolver.static.hostnames", ["collect-1:4317", "collect-1:4317"]),
        "lists an instance twice",
    ),
    "instance on the HTTP port": (
        _set("exporters.loadbalancing|collect.resolver.static.hostnames", ["collect-1:4317", "collect-2:4318"]),
        "instance 'collect-2:4318' must be host:4317",
    ),
    "dns as well as static": (
        _set("exporters.loadbalancing|collect.resolver.dns", {"hostname": "collect"}),
        "must be exactly one static resolver",
    ),
    "endpoint in the template": (
        _set("exporters.loadbalancing|collect.protocol.otlp.endpoint", "collect-1:4317"),
        "protocol.otlp.endpoint must not be set",
    ),
    "plain exporter beside the balancer": (
        _set("service.pipelines.traces.exporters", ["loadbalancing/collect", "debug"]),
        "references 'debug', which is not defined",
    ),
    "no balancer": (
        _set("service.pipelines.traces.exporters", []),
        "must export through a loadbalancing exporter",
    ),
    "memory_limiter not first": (
        _set("service.pipelines.traces.processors", ["batch", "memory_limiter"]),
        "memory_limiter must be the first processor",
    ),
}


@pytest.mark.parametrize("case", sorted(SHARDED_BREAKAGES))
def test_sharded_validator_catches_broken_copy(case, tmp_path):
    mutate, expected = SHARDED_BREAKAGES[case]
    broken = _write_broken_copy(SHARDED_CONFIG, tmp_path, mutate)
    problems = validate_sharded_config(broken, image_tag="0.135.0")
    assert any(expected in p for p in problems), f"{case}: expected {expected!r} in{report(problems or ['<none>'])}"


@pytest.mark.parametrize(("tag", "expected"), [
    ("0.121.0", "predates routing_key: attributes"),
    ("latest", "must be pinned to a 0.x.y release"),
    (None, "must be pinned to a 0.x.y release"),
])
def test_sharded_validator_rejects_images_without_attribute_routing(tag, expected, sharded_cfg):
    problems = validate_sharded_config(sharded_cfg, image_tag=tag)
    assert any(expected in p for p in problems), report(problems or ["<none>"])


def test_validate_all_flags_a_collector_image_the_sharded_config_does_not_name(compose, collector_cfg, jaeger_cfg):
    """Cross-file check: bumping the compose image without the sharded config's header is caught."""
    bumped = copy.deepcopy(compose)
    bumped["services"][COLLECTOR_SERVICE]["image"] = "otel/opentelemetry-collector-contrib:0.136.0"
    problems = validate_all(bumped, collector_cfg, jaeger_cfg)
    assert any("documents image tag '0.135.0'" in p for p in problems), report(problems)


def test_validate_all_flags_collect_on_another_grpc_port(compose, collector_cfg, jaeger_cfg):
    """Cross-file check: moving collect's --grpc port breaks the fan-out and the shard list."""
    moved = copy.deepcopy(compose)
    moved["services"][COLLECT_SERVICE]["command"] = ["collect", "--http", "0.0.0.0:4318", "--grpc", "0.0.0.0:5317"]
    problems = validate_all(moved, collector_cfg, jaeger_cfg)
    assert any("collect listens for OTLP gRPC on 5317" in p for p in problems), report(problems)
    assert any("must be host:5317" in p for p in problems), report(problems)
