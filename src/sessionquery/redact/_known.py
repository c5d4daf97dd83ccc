"""Known values: secrets the user has (environment variables, a file), in every common escaping.

The library never reads the environment: :func:`known_values_from_env` is handed the mapping
that :meth:`sessionquery.config.Config.from_env` read, and :func:`read_known_values` the path
it resolved. A known value is at least :data:`MIN_KNOWN_LENGTH` characters long (shorter
values would mask ordinary words); :func:`encodings` gives the forms in which it is looked
for: as it is, JSON-escaped (once and twice, ASCII and not, with ``\\/``), URL-encoded (upper-
and lower-case hex, ``+`` for spaces or not) and base64 (standard and URL-safe, at each of the
three byte alignments, so a value inside a larger encoded blob is found too).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final
from urllib.parse import quote, quote_plus

from sessionquery.errors import ErrorCode, SessionQueryError

__all__ = [
    "MIN_KNOWN_LENGTH",
    "SECRET_NAME",
    "encodings",
    "known_values_from_env",
    "read_known_values",
]

MIN_KNOWN_LENGTH: Final = 8
"""The shortest value taken as a known secret."""

SECRET_NAME: Final = re.compile(r"(?i).*(?:_KEY|_TOKEN|_SECRET)|.*PASSWORD.*")
"""Environment variable names whose values are secrets: ``*_KEY``, ``*_TOKEN``, ``*_SECRET``
and ``*PASSWORD*`` (any case)."""

_HEX = re.compile(r"%[0-9A-F]{2}")


def known_values_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The values of ``environ`` whose names look secret (:data:`SECRET_NAME`), keyed by name;
    blanks around a value are dropped, and values shorter than :data:`MIN_KNOWN_LENGTH` are
    left out."""
    return {
        name: value.strip()
        for name, value in sorted(environ.items())
        if SECRET_NAME.fullmatch(name) and len(value.strip()) >= MIN_KNOWN_LENGTH
    }


def read_known_values(path: Path) -> dict[str, str]:
    """The values listed in a known-secrets file: one per line, blanks around it dropped;
    empty lines and lines starting with ``#`` are skipped, as are values shorter than
    :data:`MIN_KNOWN_LENGTH`. Keyed ``"<file name> line <n>"``. A missing file lists nothing.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when the file exists but cannot be read as UTF-8.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG, f"known-secrets file {path}: {error}"
        ) from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        value = line.strip()
        if value and not value.startswith("#") and len(value) >= MIN_KNOWN_LENGTH:
            values[f"{path.name} line {number}"] = value
    return values


def _json_forms(value: str) -> set[str]:
    forms = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    forms |= {form.replace("/", "\\/") for form in forms}
    forms |= {json.dumps(form)[1:-1] for form in list(forms)}
    return forms


def _url_forms(value: str) -> set[str]:
    forms = {quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="/")}
    return forms | {_HEX.sub(lambda m: m.group(0).lower(), form) for form in forms}


def _base64_forms(raw: bytes) -> set[str]:
    """The base64 characters that depend on ``raw`` alone, for each alignment of ``raw``
    inside a larger encoded string (character ``i`` encodes bits ``6i .. 6i+5``)."""
    forms: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw + b"\0\0").decode("ascii")
        first = -(-8 * shift // 6)
        last = 8 * (shift + len(raw)) // 6
        core = encoded[first:last]
        forms |= {core, core.replace("+", "-").replace("/", "_")}
    return forms


def encodings(value: str) -> frozenset[str]:
    """Every form in which ``value`` is looked for (itself included), each at least
    :data:`MIN_KNOWN_LENGTH` characters long."""
    forms = {value} | _json_forms(value) | _url_forms(value)
    forms |= _base64_forms(value.encode("utf-8", "surrogatepass"))
    return frozenset(form for form in forms if len(form) >= MIN_KNOWN_LENGTH)
