"""The api base a run records (secrets out, the rest kept) and the one a resumed session goes on with."""

from __future__ import annotations

import base64

import pytest

from otel_agents.llm.api_base import ApiBaseError, carried_api_base, recorded_api_base


def test_a_plain_base_is_recorded_as_given_its_address_included():
    assert recorded_api_base("http://127.0.0.1:8123/v1") == "http://127.0.0.1:8123/v1"
    assert recorded_api_base("https://example.openai.azure.com/openai?api-version=2024-02-01") == (
        "https://example.openai.azure.com/openai?api-version=2024-02-01")


def test_a_user_info_password_and_secret_query_values_are_not_recorded():
    recorded = recorded_api_base("https://bob:hunter2hunter2@proxy.example/v1?key=abc123&region=eu&sig=zz#frag")
    assert "hunter2" not in recorded and "abc123" not in recorded and "zz" not in recorded
    assert recorded == "https://bob:[REDACTED]@proxy.example/v1?key=[REDACTED]&region=eu&sig=[REDACTED]"
    assert recorded_api_base(recorded) == recorded  # recording a recorded one changes nothing


def test_a_user_without_a_password_is_kept():
    assert recorded_api_base("https://bob@proxy.example/v1") == "https://bob@proxy.example/v1"


def test_the_given_base_wins_and_an_empty_one_means_the_providers_default():
    assert carried_api_base("http://new/v1", "http://old/v1", "s") == "http://new/v1"
    assert carried_api_base("", "http://old/v1", "s") is None
    assert carried_api_base(None, "http://old/v1", "s") == "http://old/v1"
    assert carried_api_base(None, None, "s") is None


def test_a_recorded_base_missing_its_secret_is_refused_unless_one_is_given():
    recorded = recorded_api_base("https://bob:pw@proxy.example/v1")
    with pytest.raises(ApiBaseError, match="session s ran on api base .*recorded without its secret: pass --api-base"):
        carried_api_base(None, recorded, "s")
    assert carried_api_base("https://bob:pw@proxy.example/v1", recorded, "s") == "https://bob:pw@proxy.example/v1"


def test_a_base_whose_address_was_masked_on_export_is_refused_too():
    with pytest.raises(ApiBaseError, match=r"ran on api base http://\[IP\]:8000/v1, recorded without its address"):
        carried_api_base(None, "http://[IP]:8000/v1", "s")


def test_a_url_s_user_info_is_sent_as_basic_auth_and_the_rest_as_given():
    from otel_agents.llm.api_base import sent_api_base

    assert sent_api_base("http://h:1/v1?x=1") == ("http://h:1/v1?x=1", {})
    base, headers = sent_api_base("https://al%20ice:p%40ss@h.example:8443/v1?x=1")
    assert base == "https://h.example:8443/v1?x=1"
    assert headers == {"Authorization": "Basic " + base64.b64encode(b"al ice:p@ss").decode()}
    assert sent_api_base("http://bob@h/v1")[1] == {"Authorization": "Basic " + base64.b64encode(b"bob:").decode()}
