"""The redactor: every planted secret masked wherever it sits, ordinary text left alone, and
the invariants (idempotent, unchanged objects without secrets, no value in a finding)."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from secret_history import KNOWN_ENV, PLANTED, Planted
from sessionquery.redact import (
    KNOWN_VALUE_RULE,
    Redactor,
    default_redactor,
    default_ruleset,
    load_ruleset,
)

REDACTOR = default_redactor(KNOWN_ENV)

NEGATIVES = [
    # ordinary code
    "token = tokenizer.next_token()",
    "password = getpass.getpass('Password: ')",
    "def check_password(password: str, password_hash: str) -> bool:",
    "self.secret = secret",
    "api_key = os.environ['OPENAI_API_KEY']",
    "if token_count > max_tokens: raise ValueError('too many tokens')",
    "const token: string = await auth.getToken();",
    'headers["Authorization"] = f"Bearer {token}"',
    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user',
    "export API_KEY=${API_KEY:-}",
    "password: ${{ secrets.DB_PASSWORD }}",
    "from huggingface_hub import hf_hub_download",
    "npm_config_cache=/tmp/npm npm_package_version=1.2.3",
    "for task in tasks: disk-sk-usage(task)",
    "The Asia-Pacific region and AKIA-style ids",
    "PWD=/home/dev/src/app OLDPWD=/home/dev",
    "postgres://app:${DB_PASSWORD}@db.internal/app",
    "https://github.com/org/repo/blob/main/src/token.py#L10",
    "secret_name = prod-db",
    "a bearer token is sent as Bearer YOUR_ACCESS_TOKEN",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    # identifiers
    "c0ffee00-1111-2222-3333-444444444444",
    "session 5f0c8a1e-9b7d-4c2a-8e3f-1a2b3c4d5e6f resumed",
    "commit e83c5163316f89bfbde7d9ab23ca2e25604af290 (HEAD -> main)",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "git checkout 1a2b3c4 && git log --oneline -5",
    # base64 of things that are not secrets
    base64.b64encode(b"hello world, this is not a secret at all").decode(),
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    base64.b64encode(json.dumps({"user": "dev", "role": "reader"}).encode()).decode(),
    # prose
    "The secret to fast builds is caching; the token budget is 4096 tokens.",
    "Enter your password below. Password: (hidden)",
]


def _json_forms(value: str) -> list[str]:
    return [value, json.dumps(value)[1:-1], quote(value, safe="")]


@pytest.mark.parametrize("planted", PLANTED, ids=[p.rule for p in PLANTED])
def test_every_planted_secret_is_masked_by_its_rule(planted: Planted) -> None:
    masked = REDACTOR.redact(planted.context)
    assert planted.value not in masked
    assert f"[REDACTED:{planted.rule}]" in masked
    assert {finding.rule for finding in REDACTOR.find(planted.context)} == {planted.rule}


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert REDACTOR.find(text) == []
    assert REDACTOR.redact(text) is text


def test_the_text_around_a_mask_stays_as_it_was() -> None:
    (planted,) = (p for p in PLANTED if p.rule == "github-token")
    text = f"before {planted.context} after"
    assert REDACTOR.redact(text) == "before GITHUB_TOKEN=[REDACTED:github-token] after"


@pytest.mark.parametrize("name", sorted(KNOWN_ENV))
def test_a_known_value_is_masked_plain_json_escaped_and_url_encoded(name: str) -> None:
    value = KNOWN_ENV[name]
    for form in _json_forms(value):
        masked = REDACTOR.redact(f"x {form} y")
        assert masked == f"x [REDACTED:{KNOWN_VALUE_RULE}] y"
        (finding,) = REDACTOR.find(f"x {form} y")
        assert finding.known_as == name


@pytest.mark.parametrize("offset", range(3))
def test_a_known_value_inside_a_base64_blob_is_masked_at_every_alignment(offset: int) -> None:
    value = KNOWN_ENV["FIXTURE_SERVICE_TOKEN"]
    blob = base64.b64encode(b"x" * offset + f"KEY={value};rest".encode()).decode()
    masked = REDACTOR.redact(blob)
    assert "[REDACTED:known-value]" in masked
    core = base64.b64encode(value.encode()).decode()[2:-2]
    assert core not in masked


def test_a_non_ascii_known_value_is_found_in_ascii_json() -> None:
    redactor = Redactor(known_values={"P": "pässwörd-Ωmega"})
    assert redactor.redact(json.dumps({"p": "pässwörd-Ωmega"})) == '{"p": "[REDACTED:known-value]"}'


def test_a_known_value_shorter_than_eight_characters_is_ignored() -> None:
    redactor = Redactor(known_values={"SHORT_TOKEN": "abc1234"})
    assert redactor.known_labels == ()
    assert redactor.redact("abc1234 abc1234") == "abc1234 abc1234"


def test_positions_stay_right_after_characters_whose_lower_case_is_longer() -> None:
    (planted,) = (p for p in PLANTED if p.rule == "stripe-live-key")
    text = "İİİ " + planted.context + " İ"
    masked = REDACTOR.redact(text)
    assert masked == 'İİİ stripe.api_key = "[REDACTED:stripe-live-key]" İ'


def test_a_finding_says_where_without_holding_the_secret() -> None:
    (planted,) = (p for p in PLANTED if p.rule == "anthropic-api-key")
    (finding,) = REDACTOR.find(planted.context)
    assert planted.context[finding.start : finding.end] == planted.value
    assert finding.length == len(planted.value)
    assert finding.preview == f"{planted.value[:4]}…{planted.value[-4:]}"
    assert planted.value not in repr(finding)


def test_overlapping_matches_are_masked_as_one() -> None:
    (planted,) = (p for p in PLANTED if p.rule == "github-token")
    text = f"https://x:{planted.value}@github.com/o/r"
    assert REDACTOR.redact(text) == "https://x:[REDACTED:github-token]@github.com/o/r"


def test_json_values_are_redacted_keys_included_and_clean_parts_kept() -> None:
    (github,) = (p for p in PLANTED if p.rule == "github-token")
    clean = {"path": "src/app.py", "lines": [1, 2, 3]}
    data: dict[str, Any] = {
        "clean": clean,
        "password": "c0rrect-h0rse-battery",
        "Authorization": "Basic dXNlcjpwYXNz",
        "notes": [f"uses {github.value}", None, 3.5],
        github.value: "a key as a key",
    }
    redacted = REDACTOR.redact_json(data)
    assert redacted["clean"] is clean
    assert redacted["password"] == "[REDACTED:secret-assignment]"
    assert redacted["Authorization"] == "[REDACTED:authorization-header]"
    assert redacted["notes"] == ["uses [REDACTED:github-token]", None, 3.5]
    assert "[REDACTED:github-token]" in redacted
    assert github.value not in json.dumps(redacted)
    assert REDACTOR.redact_json(clean) is clean


def test_placeholders_under_secret_keys_stay() -> None:
    data = {"password": "********", "token": "${GITHUB_TOKEN}", "api_key": "short"}
    assert REDACTOR.redact_json(data) is data


def test_two_masked_keys_never_overwrite_each_other() -> None:
    first, second = "ghp_" + "a" * 36, "ghp_" + "b" * 36
    redacted = REDACTOR.redact_json({first: 1, second: 2})
    assert sorted(redacted.values()) == [1, 2]


def test_find_json_names_the_path_of_each_secret() -> None:
    (npm,) = (p for p in PLANTED if p.rule == "npm-token")
    findings = REDACTOR.find_json({"a": [{"b": npm.context}], "password": "hunter2hunter2"}, "data")
    assert [(f.rule, f.path) for f in findings] == [
        ("npm-token", "data.a[0].b"),
        ("secret-assignment", "data.password"),
    ]


def test_the_fingerprint_follows_the_ruleset_not_the_known_values() -> None:
    assert default_redactor().fingerprint == default_redactor({"A_TOKEN": "x" * 20}).fingerprint
    ruleset = default_ruleset()
    assert str(ruleset.version) in default_redactor().fingerprint
    other = load_ruleset(
        "version = 2\n[[rules]]\nname = 'demo'\ndescription = 'd'\nkeywords = ['demo_']\n"
        "pattern = '''demo_[0-9]{8}'''\nexample = 'demo_12345678'\ncounterexample = 'demo'\n"
    )
    assert Redactor(other).fingerprint != default_redactor().fingerprint
    assert "x" * 20 not in repr(default_redactor({"A_TOKEN": "x" * 20}))


# -- invariants ----------------------------------------------------------------------------

_TEXT = st.text(
    st.characters(codec="utf-8") | st.sampled_from(list(" \n=:\"'")),
    max_size=80,
)
_SECRET = st.sampled_from([p.context for p in PLANTED] + list(KNOWN_ENV.values()))


@st.composite
def _planted_text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(_TEXT, _SECRET.map(lambda s: f" {s}\n")), max_size=6))
    return "".join(parts)


@given(_planted_text())
def test_redaction_is_idempotent(text: str) -> None:
    once = REDACTOR.redact(text)
    assert REDACTOR.redact(once) == once


@given(_TEXT)
def test_text_without_findings_is_returned_unchanged(text: str) -> None:
    if not REDACTOR.find(text):
        assert REDACTOR.redact(text) is text
    assert len(REDACTOR.redact(text)) <= len(text) or REDACTOR.find(text)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


def _plant(value: Any, secret: str, path: list[int]) -> Any:
    """``value`` with ``secret`` put into one string (or key) chosen by ``path``."""
    if isinstance(value, str):
        cut = path[0] % (len(value) + 1) if path else 0
        return f"{value[:cut]} {secret}\n{value[cut:]}"
    if isinstance(value, list) and value:
        index = (path[0] if path else 0) % len(value)
        return [_plant(v, secret, path[1:]) if i == index else v for i, v in enumerate(value)]
    if isinstance(value, dict) and value:
        keys = list(value)
        key = keys[(path[0] if path else 0) % len(keys)]
        if len(path) > 1 and path[1] % 3 == 0:
            return {(f"{k} {secret}\n" if k == key else k): v for k, v in value.items()}
        return {k: _plant(v, secret, path[1:]) if k == key else v for k, v in value.items()}
    return [value, f" {secret}\n"]


@given(_JSON, st.sampled_from(list(PLANTED)), st.lists(st.integers(0, 50), max_size=6))
def test_a_planted_secret_is_masked_wherever_it_sits_in_json(
    value: Any, planted: Planted, path: list[int]
) -> None:
    document = _plant(value, planted.context, path)
    redacted = REDACTOR.redact_json(document)
    assert planted.value not in json.dumps(redacted, ensure_ascii=False)
    assert planted.value not in REDACTOR.redact(json.dumps(document, ensure_ascii=False))
    assert planted.value not in REDACTOR.redact(json.dumps(document))


def test_text_with_lone_surrogates_is_scanned_position_for_position() -> None:
    (planted,) = (p for p in PLANTED if p.rule == "gitlab-token")
    raw = b"\xff\xfe " + planted.context.encode() + b" \x80"
    text = raw.decode("utf-8", "surrogateescape")
    masked = REDACTOR.redact(text)
    assert masked == "\udcff\udcfe PRIVATE-TOKEN: [REDACTED:gitlab-token] \udc80"
    assert REDACTOR.redact("\udcff\udcfe plain text only") == "\udcff\udcfe plain text only"


@given(
    st.lists(_planted_text() | _SECRET, max_size=8),
    st.sampled_from([None, "id", "name", "password", "API-Key"]),
)
def test_many_strings_are_redacted_each_as_one_under_its_key(
    texts: list[str], key: str | None
) -> None:
    expected = [
        REDACTOR.redact(text) if key is None else REDACTOR.redact_json({key: text})[key]
        for text in texts
    ]
    found = REDACTOR.redact_all(texts, key)
    assert found == expected
    assert all(new is old for new, old in zip(found, texts, strict=True) if new == old)
