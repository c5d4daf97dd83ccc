"""A history full of secrets: one of every redaction rule and three known values.

``make_secret_history(home)`` writes a Claude Code transcript and a Codex rollout under
``home`` (where those tools keep them). The secrets sit where real ones do: a prompt, the
assistant's text and its reasoning, tool-call inputs (a Bash command, structured arguments
with a ``password`` key), tool results (an ``.env`` dump, a PEM key, JSON output), a session
title and Codex function-call arguments. The known values appear as they are, JSON-escaped
inside a tool's JSON output, and URL-encoded in a URL; their variables are in
:data:`KNOWN_ENV` (the command line reads them from its environment).

:func:`forbidden` lists every string that must never appear in any output: each secret, and
each known value with its JSON-escaped and URL-encoded forms.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

__all__ = [
    "CLAUDE_SESSION",
    "CODEX_SESSION",
    "KNOWN_ENV",
    "PLANTED",
    "WORKSPACE",
    "Planted",
    "forbidden",
    "make_secret_history",
]

CLAUDE_SESSION = "5ec7e700-1111-2222-3333-444444444444"
CODEX_SESSION = "0195bbbb-cccc-7ddd-8eee-ffffffffffff"
WORKSPACE = "/home/dev/payments"

_rng = random.Random(26)
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "_-"


def _random(alphabet: str, length: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(length))


@dataclass(frozen=True, slots=True)
class Planted:
    """One secret: the rule that must find it, the value, and the text it sits in."""

    rule: str
    value: str
    context: str


def _pem() -> tuple[str, str]:
    lines = [_random(_B64, 64) for _ in range(4)]
    block = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines)
    return lines[1], block + "\n-----END RSA PRIVATE KEY-----"


def _jwt() -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    payload = base64.urlsafe_b64encode(b'{"sub":"svc-payments","exp":1893456000}')
    return f"{header}.{payload.rstrip(b'=').decode()}.{_random(_URLSAFE, 43)}"


_PEM_LINE, _PEM_BLOCK = _pem()
_BASIC = base64.b64encode(f"deploy:{_random(_ALNUM, 18)}".encode()).decode()

PLANTED: tuple[Planted, ...] = tuple(
    Planted(rule, value, context.format(v=value))
    for rule, value, context in (
        ("aws-access-key-id", "AKIA" + _random(string.ascii_uppercase + string.digits, 16),
         "aws_access_key_id = {v}"),
        ("aws-secret-access-key", _random(_B64, 40), "aws_secret_access_key = {v}"),
        ("anthropic-api-key", "sk-ant-api03-" + _random(_URLSAFE, 93) + "AA",
         "export ANTHROPIC_API_KEY={v}"),
        ("openai-api-key", "sk-proj-" + _random(_URLSAFE, 48), "OPENAI_API_KEY={v}"),
        ("openai-legacy-key", "sk-" + _random(_ALNUM, 48), "the old key {v} still works"),
        ("github-token", "ghp_" + _random(_ALNUM, 36), "GITHUB_TOKEN={v}"),
        ("github-fine-grained-token",
         "github_pat_" + _random(_ALNUM, 22) + "_" + _random(_ALNUM, 59),
         "Rotate {v} after the release"),
        ("gitlab-token", "glpat-" + _random(_URLSAFE, 20), "PRIVATE-TOKEN: {v}"),
        ("slack-token", f"xoxb-{_random(string.digits, 12)}-{_random(string.digits, 13)}-"
         + _random(_ALNUM, 24), "posting to #deploys with {v}"),
        ("stripe-live-key", "sk_live_" + _random(_ALNUM, 24), 'stripe.api_key = "{v}"'),
        ("google-api-key", "AIza" + _random(_URLSAFE, 35), "MAPS_URL=https://maps.example/js?k={v}"),
        ("npm-token", "npm_" + _random(_ALNUM, 36), "//registry.npmjs.org/:_authToken={v}"),
        ("pypi-token", "pypi-AgEIcHlwaS5vcmc" + _random(_URLSAFE, 70), "TWINE_PASSWORD={v}"),
        ("huggingface-token", "hf_" + _random(string.ascii_letters, 34),
         "huggingface-cli login --token {v}"),
        ("sendgrid-api-key", f"SG.{_random(_URLSAFE, 22)}.{_random(_URLSAFE, 43)}",
         "SENDGRID_API_KEY={v}"),
        ("twilio-auth-token", _random("0123456789abcdef", 32), "TWILIO_AUTH_TOKEN={v}"),
        ("private-key", _PEM_LINE, _PEM_BLOCK),
        ("jwt", _jwt(), "the session cookie is {v}"),
        ("url-credentials", "u7Hk2-pQ9zL4", "DATABASE_URL=postgresql://app:{v}@db.internal/app"),
        ("authorization-header", _BASIC, "curl -H 'Authorization: Basic {v}' https://api.internal"),
        ("bearer-token", _random(_ALNUM, 40), "headers = {{'X-Api': 'Bearer {v}'}}"),
        ("secret-assignment", "Tr0ub4dor&3-horse", "DB_PASSWORD={v}"),
    )
)  # fmt: skip
"""One secret of every rule of the bundled ruleset, each in the text it sits in."""

_BY_RULE = {planted.rule: planted for planted in PLANTED}
_JSON_PASSWORD = "c0rrect-h0rse-battery"
"""A password given as structured tool input (``{"password": ...}``)."""

KNOWN_ENV = {
    "FIXTURE_SERVICE_TOKEN": "kv-plain-7Hq2Lm9Xz",
    "FIXTURE_DB_PASSWORD": 'q"uote\\back-slash9Z',
    "FIXTURE_HOOK_SECRET": "s3rv!ce/secret?x=1&y",
}
"""Three known values, as the environment holds them."""

_PLAIN, _ESCAPED, _ENCODED = KNOWN_ENV.values()


def forbidden() -> list[str]:
    """Every string that must never appear in any output, index or database row."""
    values = [planted.value for planted in PLANTED] + [_JSON_PASSWORD]
    for value in KNOWN_ENV.values():
        values += [value, json.dumps(value)[1:-1], quote(value, safe=""), quote(value)]
    return sorted(set(values))


def _claude_lines() -> list[dict[str, object]]:
    common = {"sessionId": CLAUDE_SESSION, "cwd": WORKSPACE, "version": "2.0.14"}

    def line(
        uuid: str, parent: str | None, second: int, kind: str, message: object
    ) -> dict[str, object]:
        return {
            **common,
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "timestamp": f"2025-06-02T10:00:{second:02d}.000Z",
            "message": message,
        }

    env_dump = "\n".join(
        _BY_RULE[rule].context
        for rule in (
            "aws-secret-access-key", "gitlab-token", "slack-token", "stripe-live-key",
            "google-api-key", "npm-token", "pypi-token", "huggingface-token",
            "sendgrid-api-key", "twilio-auth-token", "url-credentials", "secret-assignment",
        )
    )  # fmt: skip
    prompt = (
        f"The payments deploy fails. {_BY_RULE['openai-api-key'].context} and "
        f"{_BY_RULE['aws-access-key-id'].context}; staging uses {_PLAIN} for the webhook."
    )
    bash = (
        "cat .env && " + _BY_RULE["authorization-header"].context
        + " && " + _BY_RULE["huggingface-token"].context
    )  # fmt: skip
    return [
        line("u1", None, 0, "user", {"role": "user", "content": prompt}),
        line("a1", "u1", 5, "assistant", {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "They pasted "
                 + _BY_RULE["anthropic-api-key"].context + " earlier; never repeat it."},
                {"type": "text", "text": f"Checking the deploy. {_BY_RULE['github-token'].context}"
                 f" is set, and {_BY_RULE['jwt'].context}."},
                {"type": "tool_use", "id": "toolu_env", "name": "Bash",
                 "input": {"command": bash, "description": "show the environment"}},
                {"type": "tool_use", "id": "toolu_login", "name": "login",
                 "input": {"username": "deploy", "password": _JSON_PASSWORD}},
            ],
        }),
        line("u2", "a1", 9, "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_env", "content": env_dump},
        ]}),
        line("u3", "u2", 11, "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_login",
             "content": json.dumps({"status": "ok", "db_pass": _ESCAPED})},
        ]}),
        line("a2", "u3", 14, "assistant", {"role": "assistant", "content": [
            {"type": "text", "text": "The key file holds:\n" + _BY_RULE["private-key"].context},
        ]}),
        {"type": "summary", "summary": _BY_RULE["github-fine-grained-token"].context,
         "leafUuid": "a2"},
    ]  # fmt: skip


def _codex_lines() -> list[dict[str, object]]:
    def record(second: int, kind: str, payload: Mapping[str, object]) -> dict[str, object]:
        return {
            "timestamp": f"2025-06-03T09:00:{second:02d}.000Z",
            "type": kind,
            "payload": payload,
        }

    def message(role: str, kind: str, text: str) -> dict[str, object]:
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    hook = f"https://hooks.internal/notify?sig={quote(_ENCODED, safe='')}"
    arguments = json.dumps({"command": ["bash", "-lc", _BY_RULE["bearer-token"].context]})
    meta = {"id": CODEX_SESSION, "timestamp": "2025-06-03T09:00:00.000Z", "cwd": WORKSPACE}
    return [
        record(0, "session_meta", meta),
        record(1, "response_item", message(
            "user", "input_text",
            f"{_BY_RULE['openai-legacy-key'].context}; the webhook is {hook}",
        )),
        record(2, "response_item", {
            "type": "function_call", "name": "shell", "arguments": arguments, "call_id": "c1",
        }),
        record(3, "response_item", {
            "type": "function_call_output", "call_id": "c1",
            "output": json.dumps({"output": "200 OK", "metadata": {"exit_code": 0}}),
        }),
        record(4, "response_item", message("assistant", "output_text", "The hook answers.")),
    ]  # fmt: skip


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def make_secret_history(home: Path) -> list[Path]:
    """Write the two transcripts under ``home``; returns their paths."""
    claude = home / ".claude" / "projects" / "-home-dev-payments" / f"{CLAUDE_SESSION}.jsonl"
    day = home / ".codex" / "sessions" / "2025" / "06" / "03"
    codex = day / f"rollout-2025-06-03T09-00-00-{CODEX_SESSION}.jsonl"
    return [_write(claude, _claude_lines()), _write(codex, _codex_lines())]
