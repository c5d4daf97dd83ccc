"""The redaction ruleset: rules kept as data (``rules.toml``), loaded and checked here.

A rule finds one kind of secret. Its ``keywords`` are literal strings, matched
case-insensitively, at which its ``pattern`` is tried (``re.match`` at that position): every
match starts with a keyword, so one multi-string scan for all keywords of all rules (the
prefilter of :mod:`sessionquery.redact._redactor`) decides which patterns run, and where.

Invariants (checked when a ruleset is loaded, so a broken rule never ships):

* names are unique, lower case letters, digits and ``-``, and are not the known-value rule's;
* every pattern compiles, has keywords, finds something in its ``example`` at a keyword
  and nothing in its ``counterexample``;
* the ruleset's :attr:`Ruleset.digest` covers every field of every rule and the version, so
  any edit of the data changes it.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

from sessionquery.errors import ErrorCode, SessionQueryError

__all__ = [
    "KNOWN_VALUE_RULE",
    "MIN_SECRET_LENGTH",
    "Rule",
    "Ruleset",
    "default_ruleset",
    "load_ruleset",
    "rule_spans",
]

KNOWN_VALUE_RULE: Final = "known-value"
"""The rule name of a known value (``[REDACTED:known-value]``)."""

MIN_SECRET_LENGTH: Final = 8
"""Every match is at least this long; shorter strings are never scanned."""

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FIELDS = frozenset(
    {"name", "description", "keywords", "pattern", "ignore", "json_keys", "example"}
    | {"counterexample"}
)


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret.

    Attributes:
        name: the masked form is ``[REDACTED:<name>]``.
        description: what it finds, for people.
        keywords: lower-case literals; every match of :attr:`pattern` starts with one.
        pattern: tried at each keyword occurrence; the masked part is the first group whose
            name starts with ``secret`` that took part, else the whole match.
        ignore: a masked part that fully matches it is left alone (placeholders), or ``None``.
        json_keys: JSON string values under these keys (lower case, ``_`` for ``-``) are
            masked whole.
        example: a string in which the rule finds something.
        counterexample: a close string in which it finds nothing.
    """

    name: str
    description: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    ignore: re.Pattern[str] | None
    json_keys: frozenset[str]
    example: str
    counterexample: str

    def secret_span(self, match: re.Match[str]) -> tuple[int, int] | None:
        """The span to mask of one match of :attr:`pattern`, or ``None`` when it is ignored."""
        span = match.span()
        for group, value in match.groupdict().items():
            if group.startswith("secret") and value is not None:
                span = match.span(group)
                break
        start, end = span
        if end <= start:
            return None
        if self.ignore is not None and self.ignore.fullmatch(match.string, start, end):
            return None
        return span


@dataclass(frozen=True, slots=True)
class Ruleset:
    """A versioned list of rules.

    Attributes:
        version: bumped whenever the rules change (part of every redacted revision).
        rules: in priority order: of two matches with the same span, the earlier rule's wins.
        digest: a hex digest of the version and every field of every rule.
    """

    version: int
    rules: tuple[Rule, ...]
    digest: str


def _invalid(where: str, message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_CONFIG, f"redaction ruleset {where}: {message}")


def _string(raw: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise _invalid(where, f"{key!r} must be a non-empty string")
    return value


def _strings(raw: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _invalid(where, f"{key!r} must be a list of non-empty strings")
    return tuple(value)


def _compile(pattern: str, where: str, key: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise _invalid(where, f"{key!r} is not a valid regular expression: {error}") from None


def rule_spans(rule: Rule, text: str) -> list[tuple[int, int]]:
    """The spans ``rule`` masks in ``text``, trying its pattern at every keyword occurrence
    (the reference behaviour the prefiltered scan reproduces)."""
    lowered = text.lower()
    starts: set[int] = set()
    for keyword in rule.keywords:
        at = lowered.find(keyword)
        while at >= 0:
            starts.add(at)
            at = lowered.find(keyword, at + 1)
    spans: list[tuple[int, int]] = []
    for start in sorted(starts):
        match = rule.pattern.match(text, start)
        span = None if match is None else rule.secret_span(match)
        if span is not None:
            spans.append(span)
    return spans


def _rule(raw: object, index: int, seen: set[str]) -> Rule:
    where = f"rule {index + 1}"
    if not isinstance(raw, dict):
        raise _invalid(where, "must be a table")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise _invalid(where, f"unknown field(s) {', '.join(unknown)}")
    name = _string(raw, "name", where)
    assert name is not None
    where = f"rule {name!r}"
    if not _NAME.fullmatch(name) or name == KNOWN_VALUE_RULE or name in seen:
        raise _invalid(where, "names are unique, lower case letters, digits and '-'")
    seen.add(name)
    keywords = _strings(raw, "keywords", where)
    if not keywords:
        raise _invalid(where, "needs at least one keyword")
    ignore = _string(raw, "ignore", where, required=False)
    rule = Rule(
        name=name,
        description=_string(raw, "description", where) or "",
        keywords=tuple(keyword.lower() for keyword in keywords),
        pattern=_compile(_string(raw, "pattern", where) or "", where, "pattern"),
        ignore=None if ignore is None else _compile(ignore, where, "ignore"),
        json_keys=frozenset(k.lower().replace("-", "_") for k in _strings(raw, "json_keys", where)),
        example=_string(raw, "example", where) or "",
        counterexample=_string(raw, "counterexample", where) or "",
    )
    if not rule_spans(rule, rule.example):
        raise _invalid(where, "finds nothing in its example")
    if rule_spans(rule, rule.counterexample):
        raise _invalid(where, "finds something in its counterexample")
    return rule


def load_ruleset(text: str) -> Ruleset:
    """Parse and check a ruleset written as TOML (the format of the bundled ``rules.toml``).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` naming the first problem (bad TOML, a missing
            or unknown field, a pattern that does not compile, an example it does not find).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _invalid("file", f"is not valid TOML: {error}") from None
    version = data.get("version")
    if type(version) is not int or version < 1:
        raise _invalid("file", "'version' must be a positive integer")
    raw_rules = data.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise _invalid("file", "needs a non-empty [[rules]] list")
    unknown = sorted(set(data) - {"version", "rules"})
    if unknown:
        raise _invalid("file", f"unknown key(s) {', '.join(unknown)}")
    seen: set[str] = set()
    rules = tuple(_rule(raw, index, seen) for index, raw in enumerate(raw_rules))
    canonical = json.dumps(
        {"version": version, "rules": raw_rules}, sort_keys=True, ensure_ascii=False
    )
    return Ruleset(version, rules, hashlib.sha256(canonical.encode("utf-8")).hexdigest())


@cache
def default_ruleset() -> Ruleset:
    """The bundled ruleset (``sessionquery/redact/rules.toml``), loaded once."""
    text = resources.files("sessionquery.redact").joinpath("rules.toml").read_text("utf-8")
    return load_ruleset(text)
