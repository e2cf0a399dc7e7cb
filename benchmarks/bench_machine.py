"""What machine the figures were measured on: CPU, memory, load, package and browser versions."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import bench_ui


def machine() -> dict[str, Any]:
    from importlib import metadata

    cpu = "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or "?"
    memory_gb = None
    try:
        memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    versions = {}
    for package in ("otel-agents", "opentelemetry-sdk", "litellm", "orjson", "starlette", "uvicorn", "playwright"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    browser = None
    try:  # the UI figures' browser
        browser = subprocess.run([bench_ui.CHROMIUM, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "browser": browser,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_gb": memory_gb,
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "versions": versions,
    }
