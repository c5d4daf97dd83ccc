"""Known values: which environment variables count, the known-secrets file, the escapings."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.redact import (
    MIN_KNOWN_LENGTH,
    encodings,
    known_values_from_env,
    read_known_values,
)


def test_secret_looking_variables_of_eight_characters_or_more_are_known_values() -> None:
    environ = {
        "OPENAI_API_KEY": "sk-abcdefgh",
        "GITHUB_TOKEN": " ghp_12345678 ",
        "APP_SECRET": "s3cr3t-value",
        "PGPASSWORD": "hunter2hunter2",
        "db_password_file": "/run/secrets/db",
        "SHORT_TOKEN": "1234567",
        "HOME": "/home/dev/somewhere",
        "KEYBOARD": "us-international",
        "TOKENIZERS_PARALLELISM": "false-ish-value",
    }
    assert known_values_from_env(environ) == {
        "APP_SECRET": "s3cr3t-value",
        "GITHUB_TOKEN": "ghp_12345678",
        "OPENAI_API_KEY": "sk-abcdefgh",
        "PGPASSWORD": "hunter2hunter2",
        "db_password_file": "/run/secrets/db",
    }


def test_the_known_secrets_file_lists_one_value_per_line(tmp_path: Path) -> None:
    path = tmp_path / "secrets.txt"
    path.write_text("# rotated monthly\n\n  vault-root-token-1  \nshort\nsecond value here\n")
    assert read_known_values(path) == {
        "secrets.txt line 3": "vault-root-token-1",
        "secrets.txt line 5": "second value here",
    }


def test_a_missing_known_secrets_file_lists_nothing(tmp_path: Path) -> None:
    assert read_known_values(tmp_path / "absent.txt") == {}


def test_an_unreadable_known_secrets_file_is_invalid_config(tmp_path: Path) -> None:
    path = tmp_path / "secrets.txt"
    path.write_bytes(b"\xff\xfe not utf-8")
    with raises_code(ErrorCode.INVALID_CONFIG):
        read_known_values(path)


@pytest.mark.parametrize("value", ['q"uote\\back/slash9', "s3rv!ce/secret?x=1&y z", "pässwörd-Ωm"])
def test_encodings_hold_the_json_url_and_base64_forms(value: str) -> None:
    forms = encodings(value)
    assert value in forms
    assert json.dumps(value)[1:-1] in forms
    assert json.dumps(value, ensure_ascii=False)[1:-1] in forms
    assert quote(value, safe="") in forms
    assert quote_plus(value) in forms
    raw = value.encode()
    for prefix in (b"", b"a", b"ab"):
        blob = base64.b64encode(prefix + raw + b"!!").decode()
        assert any(form in blob for form in forms if form not in (value,))
    assert all(len(form) >= MIN_KNOWN_LENGTH for form in forms)
