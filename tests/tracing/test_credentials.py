"""Credentials of the environment: which values count, and that they are replaced wherever they occur."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.tracing import credentials
from otel_agents.tracing.credentials import MARKER, credentials_in, reload_credentials, scrub_text
from otel_agents.tracing.redaction import redact_text, scrub

KEY = "sk-test-0123456789abcdefghij"
TOKEN = "plain-looking-token-42"  # matches no pattern: only the environment says it is secret


@pytest.fixture
def environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)
    reload_credentials()
    yield
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("MY_SERVICE_TOKEN")
    reload_credentials()


def test_which_environment_values_are_credentials():
    found = credentials_in({
        "OPENAI_API_KEY": KEY,
        "GITHUB_TOKEN": "ghp_shortbutlongenough",
        "DB_PASSWORD": "correct horse",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20otlp-token-123,x-tenant=acme",
        "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.1",  # where a secret is, not the secret
        "KEYCLOAK_URL": "https://auth.example.com",
        "HF_TOKEN": "short",  # a setting this short would replace ordinary words everywhere
        "HOME": "/root",
        "EDITOR": "vim-with-a-long-name",  # not a credential's name
    })
    assert set(found) == {KEY, "ghp_shortbutlongenough", "correct horse", "Bearer otlp-token-123", "otlp-token-123"}
    assert list(found) == sorted(found, key=len, reverse=True)  # longest first: a value inside another goes second


def test_credentials_are_replaced_in_text_and_structures(environment):
    text = f"key={KEY} token {TOKEN}."
    assert scrub_text(text) == f"key={MARKER} token {MARKER}."
    assert scrub({"content": text, "parts": [TOKEN, 3]}) == {"content": scrub_text(text), "parts": [MARKER, 3]}
    # Pattern-labelled secrets are content: scrub keeps them, redact (copies that leave) removes them.
    labelled = "password=hunter2-correct"
    assert scrub(labelled) == labelled and redact_text(labelled) == f"password={MARKER}"
    assert redact_text(f"call me with {TOKEN}") == f"call me with {MARKER}"  # redaction includes credentials


def test_an_added_credential_counts_until_the_environment_is_read_again(environment):
    credentials.add_credential("an-api-key-given-as-an-option")
    try:
        assert scrub_text("x an-api-key-given-as-an-option y") == f"x {MARKER} y"
        assert KEY in credentials.known_credentials()
    finally:
        credentials._added.clear()
        reload_credentials()
    assert scrub_text("an-api-key-given-as-an-option") == "an-api-key-given-as-an-option"


SLASHED = "sk-proj-AbCd/EfGh+IjKl/MnOp1234"
_PIECES = st.sampled_from([KEY, TOKEN, KEY[:10], TOKEN[:-1], MARKER, " ", "=", "sk-", "token", "\n", "Basic ", "\\",
                           SLASHED.replace("/", "\\/"), "c2stcHJvai1BYkNkL0VmR2grSWpLbC9Nbk9wMTIzN"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=10).map("".join))
def test_scrubbing_is_idempotent_and_leaves_no_credential(text):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(credentials, "_added", {KEY, TOKEN, SLASHED})
        reload_credentials()
        once = scrub_text(text)
        assert scrub_text(once) == once
        assert KEY not in once and TOKEN not in once and "MnOp1234" not in once
        assert redact_text(once) == redact_text(text)  # redaction of the source's copy equals redaction of the original
    reload_credentials()


# ---------------------------------------------------------------- credential_free: one search of a frame's bytes

import marshal  # noqa: E402
import pickle  # noqa: E402

from hypothesis import HealthCheck  # noqa: E402

_ONE_ENVIRONMENT = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # set once, read by every example


class Word(str):
    """A str subclass: marshal refuses it, so its frame goes through pickle."""


_texts = st.one_of(st.text(max_size=12), st.sampled_from([KEY, TOKEN, f"say {KEY}!", f"{TOKEN}{TOKEN}", "é" + TOKEN]))
_leaves = st.one_of(st.none(), st.integers(), st.booleans(), _texts, _texts.map(Word), _texts.map(str.encode))
_messages = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                         | st.dictionaries(_texts, inner, max_size=3), max_leaves=12)


def _texts_in(value):
    if isinstance(value, (str, bytes)):
        yield value if isinstance(value, str) else value.decode("utf-8", "surrogateescape")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _texts_in(key)
            yield from _texts_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _texts_in(item)


@settings(_ONE_ENVIRONMENT, max_examples=150)
@given(message=_messages, pickled=st.booleans())
def test_bytes_holding_a_credential_are_never_called_free_of_one(environment, message, pickled):
    try:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL) if pickled else marshal.dumps(message)
    except ValueError:  # marshal refuses a str subclass: such a frame is pickled
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    holds = any(KEY in text or TOKEN in text for text in _texts_in(message))
    if holds:
        assert not credentials.credential_free(data)
    assert credentials.credential_free(data, 0)  # nothing searched, nothing found
    prefix = b"x" * 7
    assert credentials.credential_free(prefix + data, len(prefix))  # only the bytes before ``end`` count


@_ONE_ENVIRONMENT
@given(st.lists(st.text(alphabet="0123456789 ,.", max_size=20), max_size=5))
def test_texts_that_cannot_hold_a_credential_are_free_of_one(environment, texts):
    assert credentials.credential_free(marshal.dumps(tuple(texts)))
    assert not credentials.credential_free(marshal.dumps(tuple(texts) + (f"x{KEY}",)))


# ---------------------------------------------------------------- the forms a credential takes in text

import base64  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
from urllib.parse import quote, quote_plus  # noqa: E402

QUOTED = 'pw-with"quote\\and-backslash99'


def _encodings(value):
    escaped = json.dumps(value)[1:-1]
    return [escaped, escaped.replace("/", "\\/"), json.dumps(escaped)[1:-1], quote(value, safe=""), quote(value),
            quote_plus(value), re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quote(value, safe=""))]


@pytest.mark.parametrize("value", [SLASHED, QUOTED, "pass word with spaces", "clé-secrète-ünïcode"])
def test_a_credential_is_replaced_in_the_forms_text_commonly_carries_it_in(monkeypatch, value):
    monkeypatch.setenv("MY_SERVICE_TOKEN", value)
    reload_credentials()
    try:
        for encoded in _encodings(value) + [json.dumps(value, ensure_ascii=False)[1:-1]]:
            text = f'{{"error": "Incorrect API key provided: {encoded}."}}'
            assert scrub_text(text) == f'{{"error": "Incorrect API key provided: {MARKER}."}}', encoded
            assert not credentials.credential_free(text.encode())
        for user in ("", "b", "bo", "bob"):  # each of base64's three alignments
            basic = base64.b64encode(f"{user}:{value}".encode()).decode()
            scrubbed = scrub_text(f"Authorization: Basic {basic}")
            assert MARKER in scrubbed and len(scrubbed) <= len("Authorization: Basic ") + len(MARKER) + 9, scrubbed
            assert not credentials.credential_free(basic.encode())
    finally:
        monkeypatch.delenv("MY_SERVICE_TOKEN")
        reload_credentials()


@settings(_ONE_ENVIRONMENT, max_examples=150)
@given(st.sampled_from([f"say {KEY} and {json.dumps(SLASHED)} now", f"{TOKEN}{TOKEN}", "nothing here at all", KEY]),
       st.lists(st.integers(0, 60), max_size=6))
def test_a_stream_split_anywhere_shows_what_the_whole_text_scrubbed_shows(environment, monkeypatch, text, cuts):
    monkeypatch.setattr(credentials, "_added", {SLASHED})
    reload_credentials()
    bounds = [0, *sorted(c for c in cuts if c < len(text)), len(text)]
    scrubber = credentials.StreamScrubber()
    shown = "".join(scrubber.feed(text[a:b]) for a, b in zip(bounds, bounds[1:])) + scrubber.flush()
    assert shown == scrub_text(text)


def _basic(user, value):
    return base64.b64encode(f"{user}:{value}".encode()).decode()


# Each form a credential takes, with a Basic scheme word before or after its base64 (the one word
# and the base64 a chunk apart once the dots make the text longer than the held tail).
_STREAMED_TEXTS = [
    *(f"Use the header Authorization: Basic {_basic(user, KEY)} for the proxy.{'.' * 40}" for user in ("alice", "bo", "b")),
    f"{'.' * 50} basic {_basic('', SLASHED)}{'.' * 50}",
    f"token {_basic('bob', TOKEN)} is the Basic credential",
    f"error: {json.dumps(json.dumps(SLASHED))} and {quote(SLASHED, safe='')} and {quote_plus(KEY)}{'.' * 30}",
    f"{KEY}{'.' * 40}{TOKEN}",
]


def _streamed(text, bounds):
    scrubber = credentials.StreamScrubber()
    return "".join(scrubber.feed(text[a:b]) for a, b in zip(bounds, bounds[1:])) + scrubber.flush()


@pytest.mark.parametrize("text", _STREAMED_TEXTS)
def test_a_stream_split_at_any_point_of_any_form_shows_what_the_whole_text_scrubbed_shows(environment, monkeypatch, text):
    monkeypatch.setattr(credentials, "_added", {SLASHED})
    reload_credentials()
    whole = scrub_text(text)
    assert KEY not in whole and "MnOp1234" not in whole and all(_basic(u, KEY) not in whole for u in ("alice", "bo", "b"))
    for cut in range(len(text) + 1):
        assert _streamed(text, [0, cut, len(text)]) == whole, cut
    assert _streamed(text, list(range(len(text) + 1))) == whole  # a character a chunk


@settings(_ONE_ENVIRONMENT, max_examples=300)
@given(st.sampled_from(_STREAMED_TEXTS), st.lists(st.integers(0, 200), max_size=8))
def test_a_stream_cut_into_many_chunks_shows_what_the_whole_text_scrubbed_shows(environment, monkeypatch, text, cuts):
    monkeypatch.setattr(credentials, "_added", {SLASHED})
    reload_credentials()
    bounds = [0, *sorted(c for c in cuts if c < len(text)), len(text)]
    assert _streamed(text, bounds) == scrub_text(text)
