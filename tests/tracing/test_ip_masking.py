"""IP masking: addresses found by shape and confirmed by ipaddress; idempotent; OTEL_AGENTS_KEEP_IPS keeps them."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, strategies as st

from otel_agents.tracing import ip_masking
from otel_agents.tracing.ip_masking import IP_MARKER, mask_ips


@pytest.fixture
def keep_ips(monkeypatch):
    def set_keep(value: str | None):
        if value is None:
            monkeypatch.delenv(ip_masking.KEEP_IPS_ENV, raising=False)
        else:
            monkeypatch.setenv(ip_masking.KEEP_IPS_ENV, value)
        ip_masking.reload_ip_setting()

    set_keep(None)
    yield set_keep
    monkeypatch.delenv(ip_masking.KEEP_IPS_ENV, raising=False)
    ip_masking.reload_ip_setting()


@pytest.mark.parametrize(
    "text, masked",
    [
        ("client 203.0.113.7 connected", f"client {IP_MARKER} connected"),
        ("http://127.0.0.1:8000/v1", f"http://{IP_MARKER}:8000/v1"),
        ("peer=[2001:db8::8a2e:370:7334]:443", f"peer=[{IP_MARKER}]:443"),
        ("loopback ::1 only", f"loopback {IP_MARKER} only"),
        ("fe80::1ff:fe23:4567:890a", IP_MARKER),
    ],
)
def test_addresses_are_masked(keep_ips, text, masked):
    assert mask_ips(text) == masked


@pytest.mark.parametrize(
    "text",
    ["sdk 1.45.2", "release 1.2.3.4.5", "999.1.1.1", "at 12:04:13", "2026-11-25T12:04:13.123Z", "std::map", "a::b"],
)
def test_look_alikes_are_left_alone(keep_ips, text):
    assert mask_ips(text) == text


def test_the_switch_keeps_addresses(keep_ips):
    keep_ips("true")
    assert mask_ips("from 10.0.0.1") == "from 10.0.0.1"
    keep_ips("false")
    assert mask_ips("from 10.0.0.1") == f"from {IP_MARKER}"


# IPv6 written with hex letters only (``::``, ``a::b``) is left alone: code is full of such scopes.
@given(st.ip_addresses().filter(lambda a: any(c.isdigit() for c in str(a))), st.text(alphabet=" ,;()[]<>\"'=", min_size=1, max_size=3), st.text(alphabet=" ,;()[]<>\"'=", min_size=1, max_size=3))
def test_any_address_between_separators_is_masked_and_masking_is_idempotent(address, before, after):
    ip_masking.reload_ip_setting()
    text = f"x{before}{address}{after}y"
    masked = mask_ips(text)
    assert str(address) not in masked and masked == f"x{before}{IP_MARKER}{after}y"
    assert mask_ips(masked) == masked
    # what is left holds no address anyone could parse back
    for word in masked.replace("[", " ").replace("]", " ").split():
        with pytest.raises(ValueError):
            ipaddress.ip_address(word.strip(" ,;()<>\"'=xy"))
