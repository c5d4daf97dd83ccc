"""The redacted form: what the archive stores when redaction is on.

The archive must never hold a secret that redaction would mask (docs/archive.md, "Secrets").
:func:`redacted_form` turns a redactor into a :class:`~._segments.Form` that redacts each
whole line before it is compressed:

* a line that is JSON is parsed, its values redacted, and written back compactly; a line
  whose values redaction leaves as they are keeps its exact bytes (so a transcript without
  secrets is archived byte for byte);
* a line that is not JSON is redacted as text;
* the form's name carries the redactor's fingerprint, so a new ruleset stores the units whose
  source still exists again, redacted by the new rules.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from sessionquery.archive._segments import Form
from sessionquery.model.jsonvalue import compact_json

__all__ = ["LineRedactor", "redacted_form"]


class LineRedactor(Protocol):
    """What the archive needs of a redactor (``sessionquery.redact.Redactor``)."""

    @property
    def fingerprint(self) -> str:
        """Changes whenever the redactor would mask differently."""
        ...

    def redact(self, text: str) -> str:
        """``text`` with every secret masked."""
        ...

    def redact_json(self, value: Any) -> Any:
        """A JSON value with every secret in its strings masked."""
        ...


def redacted_form(redactor: LineRedactor) -> Form:
    """The form that stores each line as redaction would show it."""

    def transform(lines: bytes) -> bytes:
        out: list[bytes] = []
        for line in lines.splitlines(keepends=True):
            body = line.rstrip(b"\r\n")
            end = line[len(body) :]
            try:
                value = json.loads(body)
            except ValueError:
                text = body.decode("utf-8", "surrogateescape")
                out.append(redactor.redact(text).encode("utf-8", "surrogateescape") + end)
                continue
            masked = redactor.redact_json(value)
            if masked == value:
                out.append(line)
            else:
                dumped = compact_json(masked)
                out.append(dumped.encode("utf-8", "surrogateescape") + end)
        return b"".join(out)

    return Form(f"redacted:{redactor.fingerprint}", transform)
