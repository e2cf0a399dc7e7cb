"""load_app: a `module:factory` reference made into the root agent and hooks, or one clear AppError."""

from __future__ import annotations

import sys

import pytest

from otel_agents.apps import AppError, load_app


@pytest.fixture
def app_dir(tmp_path, monkeypatch):
    """A fresh module in the current directory (not on sys.path), forgotten afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield tmp_path
    for name in ("plain_app", "odd_app"):
        sys.modules.pop(name, None)


def test_an_app_in_the_current_directory_returning_a_bare_agent_has_no_hooks(app_dir):
    (app_dir / "plain_app.py").write_text(
        "from otel_agents import Agent, approval, Decision\n"
        "def make():\n    return Agent('solo', 'Be brief.')\n"
        "@approval\ndef never(request):\n    return Decision(False, 'no')\n"
        "class Factories:\n    @staticmethod\n    def with_hooks():\n        return Agent('pair'), [never]\n"
    )
    app = load_app("plain_app:make")
    assert (app.reference, app.agent.name, app.agent.system_prompt, app.hooks) == ("plain_app:make", "solo",
                                                                                   "Be brief.", ())
    nested = load_app("plain_app:Factories.with_hooks")  # a dotted attribute path reaches the factory
    assert nested.agent.name == "pair" and [h.name for h in nested.hooks] == ["never"]


@pytest.mark.parametrize("body, says", [
    ("def make():\n    return 'researcher'\n", "its factory returned str, not an otel_agents.Agent"),
    ("make = 3\n", "odd_app has no callable 'make'"),
    ("raise ImportError('needs\\nnumpy')\n", "cannot import app 'odd_app:make': ImportError: needs numpy"),
])
def test_what_is_not_an_app_is_one_line_naming_the_reference(app_dir, body, says):
    (app_dir / "odd_app.py").write_text(body)
    with pytest.raises(AppError) as caught:
        load_app("odd_app:make")
    message = str(caught.value)
    assert says in message and "odd_app:make" in message and "\n" not in message
