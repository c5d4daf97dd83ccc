"""The redactor: finds secrets in text and JSON values and masks them as ``[REDACTED:<rule>]``.

One scan per string finds, with an Aho-Corasick automaton (``ahocorasick_rs``), every
occurrence of every rule keyword (case-insensitively) and every encoding of every known value;
only then are the patterns of the rules whose keywords occur tried, each at its keywords'
positions. A string without any occurrence costs one lowering and one automaton pass; a
string shorter than :data:`~sessionquery.redact._rules.MIN_SECRET_LENGTH` costs nothing.

Invariants:

* a string without secrets is returned unchanged (the same object), so are JSON values;
* masking is idempotent: text inside an existing ``[REDACTED:...]`` is never matched again,
  and the result of one call is a fixed point of the next;
* overlapping matches are merged and masked as one, so no character of any match survives;
  the mask names the rule of the longest match (ties: known values, then rule order);
* :attr:`Redactor.fingerprint` depends only on the ruleset (version and digest): it is what an
  index written through the redactor depends on. Known values are deliberately not part of
  it: they differ between shells and rotate, and every read path applies the current ones;
* a :class:`Finding` never holds the secret: only its rule, place, length and a preview of its
  first and last characters.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import ahocorasick_rs

from sessionquery.model.jsonvalue import JsonValue
from sessionquery.redact._known import MIN_KNOWN_LENGTH, encodings
from sessionquery.redact._rules import (
    KNOWN_VALUE_RULE,
    MIN_SECRET_LENGTH,
    Rule,
    Ruleset,
    default_ruleset,
)

__all__ = ["MASK_PREFIX", "Finding", "Redactor", "preview"]

MASK_PREFIX: Final = "[REDACTED:"
"""How every mask starts; a mask is ``[REDACTED:<rule name>]``."""

_MASK = re.compile(r"\[REDACTED:[a-z0-9]+(?:-[a-z0-9]+)*\]")
_FIXPOINT_PASSES = 4


def preview(value: str) -> str:
    """The first and last characters of ``value`` around an ellipsis: one each below 16
    characters, two below 32, four from 32 on (a few characters of a long random secret say
    which one it is without giving it away)."""
    keep = 4 if len(value) >= 32 else 2 if len(value) >= 16 else 1
    return f"{value[:keep]}…{value[-keep:]}"


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret found (never the secret itself).

    Attributes:
        rule: the rule's name, or ``"known-value"``.
        start: where the masked span starts in the string it was found in.
        end: where it ends (exclusive).
        length: ``end - start``.
        preview: its first and last characters (:func:`preview`).
        path: where in a JSON value the string is (``message.content[0].text``); ``""`` for
            plain text.
        known_as: for a known value, which one (an environment variable's name, or
            ``"<file> line <n>"``); else ``None``.
    """

    rule: str
    start: int
    end: int
    length: int
    preview: str
    path: str = ""
    known_as: str | None = None


@dataclass(frozen=True, slots=True)
class _Known:
    form: str
    label: str


# What an automaton pattern stands for: the indexes of the rules it is a keyword of, and the
# known values' forms whose lowered form it is.
_Action = tuple[tuple[int, ...], tuple[_Known, ...]]
# (start, end, priority, label): the lower priority wins a tie of equal spans (0: a known value,
# labelled; n: rule n - 1).
_Span = tuple[int, int, int, str | None]


def _lower(text: str) -> str:
    """``text`` lowered, position for position (a character whose lower case is longer than
    one character is kept as it is)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _scannable(text: str) -> str:
    """``text`` lowered (:func:`_lower`), with any lone surrogate (bytes decoded with
    ``surrogateescape``, a broken ``\\ud800`` escape) shown as U+FFFD, which keeps every
    position: the automaton reads UTF-8, which has no lone surrogates."""
    lowered = _lower(text)
    return _SURROGATE.sub("\ufffd", lowered) if _SURROGATE.search(lowered) else lowered


def _sigma_forms(lowered: str) -> set[str]:
    # str.lower() writes a capital sigma as final or medial depending on what follows it, so a
    # value lowered alone may differ from the same value lowered inside a longer text.
    final, medial = "\u03c2", "\u03c3"
    return {lowered, lowered.replace(final, medial), lowered.replace(medial, final)}


def _mask_spans(text: str) -> list[tuple[int, int]]:
    if MASK_PREFIX not in text:
        return []
    return [match.span() for match in _MASK.finditer(text)]


class Redactor:
    """Masks secrets: the rules of a ruleset and the user's known values.

    Args:
        ruleset: the rules (default: the bundled ruleset, :func:`default_ruleset`).
        known_values: secrets the user has, as ``{label: value}`` (labels such as an
            environment variable's name say where a value came from) or as plain values;
            values shorter than 8 characters are ignored.
    """

    __slots__ = (
        "_actions",
        "_ascii_automaton",
        "_automaton",
        "_json_keys",
        "_known",
        "_names",
        "_ruleset",
    )

    def __init__(
        self,
        ruleset: Ruleset | None = None,
        known_values: Mapping[str, str] | Iterable[str] = (),
    ) -> None:
        self._ruleset = ruleset if ruleset is not None else default_ruleset()
        rules = self._ruleset.rules
        if isinstance(known_values, Mapping):
            labelled = dict(known_values)
        else:
            labelled = {f"known value {n}": v for n, v in enumerate(known_values, 1)}
        self._known = {
            label: value for label, value in labelled.items() if len(value) >= MIN_KNOWN_LENGTH
        }
        self._names = (KNOWN_VALUE_RULE, *(rule.name for rule in rules))
        self._json_keys = {key: index for index, rule in enumerate(rules) for key in rule.json_keys}
        patterns: dict[str, tuple[list[int], list[_Known]]] = {}
        for index, rule in enumerate(rules):
            for keyword in rule.keywords:
                patterns.setdefault(keyword, ([], []))[0].append(index)
        for label, value in self._known.items():
            for form in sorted(encodings(value)):
                for lowered in _sigma_forms(_lower(form)):
                    patterns.setdefault(lowered, ([], []))[1].append(_Known(form, label))
        self._actions: tuple[_Action, ...] = tuple(
            (tuple(sorted(set(indexes))), tuple(known)) for indexes, known in patterns.values()
        )
        self._automaton = ahocorasick_rs.AhoCorasick(list(patterns))
        # ASCII text (most of it) is scanned as bytes: a byte offset is then a character
        # offset, and the bytes automaton is faster than the one over str.
        self._ascii_automaton = ahocorasick_rs.BytesAhoCorasick(
            [pattern.encode("utf-8", "surrogatepass") for pattern in patterns]
        )

    # -- identity ------------------------------------------------------------------------

    @property
    def ruleset(self) -> Ruleset:
        """The rules this redactor applies."""
        return self._ruleset

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The rules, in priority order."""
        return self._ruleset.rules

    @property
    def known_labels(self) -> tuple[str, ...]:
        """Where the known values came from (never the values)."""
        return tuple(self._known)

    @property
    def fingerprint(self) -> str:
        """``redact-<version>-<digest>``: changes whenever the ruleset does (not with the
        known values)."""
        return f"redact-{self._ruleset.version}-{self._ruleset.digest[:16]}"

    def __repr__(self) -> str:
        return f"Redactor({self.fingerprint}, {len(self._known)} known values)"

    # -- text ----------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` with every secret masked as ``[REDACTED:<rule>]``; ``text`` itself when it
        holds none."""
        if len(text) < MIN_SECRET_LENGTH:
            return text
        for _ in range(_FIXPOINT_PASSES):
            spans = self._spans(text)
            if not spans:
                return text
            text = self._masked(text, spans)
        return text

    def find(self, text: str) -> list[Finding]:
        """Every secret in ``text``, in order (what :meth:`redact` masks in its first pass)."""
        return list(self._findings(text, ""))

    def is_clean(self, text: str) -> bool:
        """Whether ``text`` holds no secret."""
        return not self._spans(text)

    def redact_all(self, texts: Sequence[str], key: str | None = None) -> list[str]:
        """Each of ``texts`` as :meth:`redact_json` gives a string stored under ``key`` (as
        :meth:`redact` gives it when ``key`` is ``None``): the same object when it holds no
        secret.

        Made for many short strings (the call ids and tool names of a huge log): the ASCII
        ones are scanned for the rules' keywords and the known values in one pass over them
        all, and only a string that holds one is redacted on its own; a string without any
        can hold no secret, so it is returned as it is.
        """
        if key is not None and self._json_keys.get(key.lower().replace("-", "_")) is not None:
            return [self._under_key(key, text) for text in texts]
        out = list(texts)
        batch = [
            index
            for index, text in enumerate(texts)
            if len(text) >= MIN_SECRET_LENGTH and text.isascii()
        ]
        for index, text in enumerate(texts):
            if len(text) >= MIN_SECRET_LENGTH and not text.isascii():
                out[index] = self.redact(text)
        if not batch:
            return out
        joined = b"\n".join(texts[index].encode("ascii") for index in batch).lower()
        hits = self._ascii_automaton.find_matches_as_indexes(joined, overlapping=True)
        if not hits:
            return out
        starts = list(itertools.accumulate((len(texts[i]) + 1 for i in batch[:-1]), initial=0))
        touched: set[int] = set()
        for _pattern, start, end in hits:
            first = bisect.bisect_right(starts, start) - 1
            last = bisect.bisect_right(starts, end - 1) - 1
            touched.update(range(first, last + 1))
        for position in touched:
            index = batch[position]
            out[index] = self.redact(texts[index])
        return out

    def _under_key(self, key: str, text: str) -> str:
        """``text`` as :meth:`_redact_object` redacts a string value under ``key``."""
        rule = self._json_rule(key, text)
        return self.redact(text) if rule is None else f"[REDACTED:{self._names[rule + 1]}]"

    # -- JSON ----------------------------------------------------------------------------

    def redact_json(self, value: JsonValue) -> JsonValue:
        """``value`` with every string (keys too) redacted, and every string of at least 8
        characters under a secret-looking key (``"password"``, ``"api_key"``,
        ``"authorization"``...) masked whole. Unchanged parts are the same objects; a value
        without secrets is returned as it is."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return self._redact_object(value)
        if isinstance(value, list):
            items = [self.redact_json(item) for item in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return items
        return value

    def find_json(self, value: JsonValue, path: str = "") -> list[Finding]:
        """Every secret in ``value`` (:meth:`redact_json`'s matches), each with its
        :attr:`Finding.path`."""
        return list(self._json_findings(value, path))

    # -- internals -----------------------------------------------------------------------

    def _redact_object(self, value: dict[str, JsonValue]) -> JsonValue:
        out: dict[str, JsonValue] = {}
        changed = False
        short = MIN_SECRET_LENGTH
        for key, item in value.items():
            new_key = key if len(key) < short else self.redact(key)
            if isinstance(item, str):
                rule = None if len(item) < short else self._json_rule(key, item)
                if rule is not None:
                    new_item: JsonValue = f"[REDACTED:{self._names[rule + 1]}]"
                else:
                    new_item = item if len(item) < short else self.redact(item)
            elif isinstance(item, dict | list):
                new_item = self.redact_json(item)
            else:
                new_item = item
            changed = changed or new_key is not key or new_item is not item
            while new_key in out:  # two masked keys never overwrite each other
                new_key += "'"
            out[new_key] = new_item
        return out if changed else value

    def _json_rule(self, key: str, item: JsonValue) -> int | None:
        """The index of the rule that masks ``item`` whole for its ``key``, if any."""
        if not isinstance(item, str) or len(item) < MIN_SECRET_LENGTH:
            return None
        index = self._json_keys.get(key.lower().replace("-", "_"))
        if index is None or MASK_PREFIX in item:
            return None
        ignore = self._ruleset.rules[index].ignore
        if ignore is not None and ignore.fullmatch(item.strip()):
            return None
        return index

    def _json_findings(self, value: JsonValue, path: str) -> Iterator[Finding]:
        if isinstance(value, str):
            yield from self._findings(value, path)
        elif isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else key
                yield from self._findings(key, where)
                rule = self._json_rule(key, item)
                if rule is not None and isinstance(item, str):
                    name = self._names[rule + 1]
                    yield Finding(name, 0, len(item), len(item), preview(item), where)
                else:
                    yield from self._json_findings(item, where)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from self._json_findings(item, f"{path}[{index}]")

    def _findings(self, text: str, path: str) -> Iterator[Finding]:
        for start, end, priority, label in self._spans(text):
            secret = text[start:end]
            name = self._names[priority]
            yield Finding(name, start, end, end - start, preview(secret), path, label)

    def _spans(self, text: str) -> list[_Span]:
        """The merged spans to mask, in order; the priority names the mask's rule."""
        if len(text) < MIN_SECRET_LENGTH:
            return []
        if text.isascii():
            lowered_bytes = text.encode("ascii").lower()
            hits = self._ascii_automaton.find_matches_as_indexes(lowered_bytes, overlapping=True)
        else:
            hits = self._automaton.find_matches_as_indexes(_scannable(text), overlapping=True)
        if not hits:
            return []
        candidates = self._candidates(text, hits)
        if not candidates:
            return []
        masks = _mask_spans(text)
        if masks:
            candidates = [c for c in candidates if not any(c[0] < e and b < c[1] for b, e in masks)]
        return _merged(candidates)

    def _candidates(self, text: str, hits: list[tuple[int, int, int]]) -> list[_Span]:
        rules = self._ruleset.rules
        tried: set[tuple[int, int]] = set()
        found: list[_Span] = []
        for pattern, start, _end in hits:
            indexes, known = self._actions[pattern]
            for entry in known:
                if text.startswith(entry.form, start):
                    found.append((start, start + len(entry.form), 0, entry.label))
            for index in indexes:
                if (index, start) in tried:
                    continue
                tried.add((index, start))
                rule = rules[index]
                match = rule.pattern.match(text, start)
                span = None if match is None else rule.secret_span(match)
                if span is not None:
                    found.append((span[0], span[1], index + 1, None))
        return found

    def _masked(self, text: str, spans: list[_Span]) -> str:
        parts: list[str] = []
        at = 0
        for start, end, priority, _label in spans:
            parts.append(text[at:start])
            parts.append(f"[REDACTED:{self._names[priority]}]")
            at = end
        parts.append(text[at:])
        return "".join(parts)


def _merged(candidates: list[_Span]) -> list[_Span]:
    """Overlapping candidates merged into one span each, named by the longest (then the
    lowest priority) of the candidates it covers."""
    candidates.sort(key=lambda c: (c[0], -c[1], c[2]))
    merged: list[_Span] = []
    best: _Span | None = None
    start = end = -1
    for candidate in candidates:
        if best is not None and candidate[0] < end:
            end = max(end, candidate[1])
            if (candidate[1] - candidate[0], -candidate[2]) > (best[1] - best[0], -best[2]):
                best = candidate
            continue
        if best is not None:
            merged.append((start, end, best[2], best[3]))
        best, start, end = candidate, candidate[0], candidate[1]
    if best is not None:
        merged.append((start, end, best[2], best[3]))
    return merged
