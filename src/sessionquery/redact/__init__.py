"""Secrets never leave: masking credentials before anything derived from a session is written
or shown (SPEC §14.3).

* :class:`Redactor` masks the rules of a versioned ruleset kept as data (``rules.toml``:
  vendor key formats, private keys, JWTs, credentials in URLs, Authorization headers,
  password/secret/token assignments) and the user's known values (in their common
  escapings) as ``[REDACTED:<rule>]``; :func:`default_redactor` builds one over the bundled
  ruleset, whose version is :data:`RULES_VERSION`;
* :class:`RedactingPersistence` wraps any session persistence so that every event, title and
  search document read through it is redacted, and its revisions carry the ruleset's
  fingerprint (an index written through an older ruleset is re-redacted by its next
  reconciliation);
* :class:`Finding` says where a secret is without holding it (``sessionquery secrets``).

The library never reads the environment: the command line and the MCP server pass the known
values they read (:func:`known_values_from_env`, :func:`read_known_values`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from sessionquery.redact._known import (
    MIN_KNOWN_LENGTH,
    SECRET_NAME,
    encodings,
    known_values_from_env,
    read_known_values,
)
from sessionquery.redact._live import RedactingLiveStore
from sessionquery.redact._persistence import RedactingPersistence, redacted_event
from sessionquery.redact._redactor import MASK_PREFIX, Finding, Redactor, preview
from sessionquery.redact._rules import (
    KNOWN_VALUE_RULE,
    MIN_SECRET_LENGTH,
    Rule,
    Ruleset,
    default_ruleset,
    load_ruleset,
)
from sessionquery.redact._scan import SecretSighting, UnreadableSession, scan_sessions

__all__ = [
    "KNOWN_VALUE_RULE",
    "MASK_PREFIX",
    "MIN_KNOWN_LENGTH",
    "MIN_SECRET_LENGTH",
    "RULES_VERSION",
    "SECRET_NAME",
    "Finding",
    "RedactingLiveStore",
    "RedactingPersistence",
    "Redactor",
    "Rule",
    "Ruleset",
    "SecretSighting",
    "UnreadableSession",
    "default_redactor",
    "default_ruleset",
    "encodings",
    "known_values_from_env",
    "load_ruleset",
    "preview",
    "read_known_values",
    "redacted_event",
    "scan_sessions",
]

RULES_VERSION: Final = default_ruleset().version
"""The version of the bundled ruleset (``rules.toml``); bumped whenever a rule changes."""


def default_redactor(known_values: Mapping[str, str] | Iterable[str] = ()) -> Redactor:
    """A redactor over the bundled ruleset and ``known_values`` (``{label: value}`` or plain
    values, e.g. :func:`known_values_from_env` of the environment the caller read)."""
    return Redactor(default_ruleset(), known_values)
