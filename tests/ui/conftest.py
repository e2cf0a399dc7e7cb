"""UI API fixtures: one real demo run plus the seed-001 examples, shared read-only; a private copy for tests that change files."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from otel_agents.ui.app import create_app
from support.ui_sessions import LOCAL, Home, copy_home, make_home


@pytest.fixture(scope="session")
def ui_home(tmp_path_factory) -> Home:
    """Read-only for the tests: copy it (``own_home``) to change anything."""
    return make_home(tmp_path_factory.mktemp("ui-home"))


@pytest.fixture
def own_home(ui_home, tmp_path) -> Home:
    return copy_home(ui_home, tmp_path)


@pytest.fixture(scope="session")
def client(ui_home) -> TestClient:
    return TestClient(create_app(ui_home.sessions, [ui_home.billing]), base_url=LOCAL)
