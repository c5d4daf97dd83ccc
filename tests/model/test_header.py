"""The session header (SPEC §3.1): validation, verbatim cwd, compatibility, wire form."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given

from sessionquery.model import FORMAT_VERSION, SessionHeader, validate_session_id
from strategies import valid_headers


def test_only_id_and_created_at_are_required_and_the_rest_default() -> None:
    header = SessionHeader(id="s1", created_at=0)
    assert header.cwd is None
    assert header.parent_session is None
    assert header.is_seeded is False
    assert header.origin is None
    assert header.delegation_depth == 0
    assert header.agent_preset is None
    assert header.version == FORMAT_VERSION == 3


@pytest.mark.parametrize("missing", ["id", "created_at"])
def test_constructing_a_header_without_a_required_field_fails(missing: str) -> None:
    kwargs: dict[str, Any] = {"id": "s1", "created_at": 1}
    del kwargs[missing]
    with pytest.raises(TypeError, match=missing):
        SessionHeader(**kwargs)


def test_header_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        SessionHeader("s1", 0)  # type: ignore[call-arg]


def test_a_header_is_frozen() -> None:
    header = SessionHeader(id="s1", created_at=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        header.cwd = "/x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("id", ""),
        ("id", "a\x00b"),
        ("id", "a\nb"),
        ("id", "tab\there"),
        ("id", "esc\x1b"),
        ("id", "del\x7f"),
        ("id", "c1\x85"),
        ("id", "x" * 513),
        ("id", "lone\ud800"),
        ("id", 5),
        ("id", None),
        ("created_at", -1),
        ("created_at", 1.5),
        ("created_at", True),
        ("created_at", "0"),
        ("cwd", "relative/path"),
        ("cwd", ""),
        ("cwd", "/a\x00b"),
        ("cwd", 7),
        ("parent_session", ""),
        ("parent_session", "p\x00"),
        ("parent_session", "x" * 513),
        ("is_seeded", 1),
        ("is_seeded", "yes"),
        ("origin", 3),
        ("delegation_depth", -1),
        ("delegation_depth", False),
        ("delegation_depth", 2.0),
        ("agent_preset", ["a"]),
        ("version", 2),
        ("version", 4),
        ("version", 3.0),
    ],
)
def test_an_invalid_field_raises_value_error_naming_it(field: str, value: object) -> None:
    kwargs: dict[str, Any] = {"id": "s1", "created_at": 0, field: value}
    with pytest.raises(ValueError, match=field):
        SessionHeader(**kwargs)


@pytest.mark.parametrize("field", ["cwd", "origin", "agent_preset"])
def test_a_lone_surrogate_in_a_text_field_raises_value_error_naming_it(field: str) -> None:
    # The header is written as UTF-8 JSON; text that cannot be encoded must be refused up front.
    kwargs: dict[str, Any] = {"id": "s1", "created_at": 0, field: "/a\udc80"}
    with pytest.raises(ValueError, match=field):
        SessionHeader(**kwargs)


@pytest.mark.parametrize(
    "session_id",
    ["a/b", "..", "../../etc/passwd", "日本語", "émoji-🙂", "with space", "x" * 512, "\u200b"],
)
def test_slashes_dot_dot_and_non_ascii_are_valid_ids(session_id: str) -> None:
    header = SessionHeader(id=session_id, created_at=0, parent_session=session_id)
    assert header.id == session_id
    assert validate_session_id(session_id) == session_id


def test_the_id_length_limit_is_512_characters_not_bytes() -> None:
    assert SessionHeader(id="é" * 512, created_at=0).id == "é" * 512
    with pytest.raises(ValueError, match="id"):
        SessionHeader(id="é" * 513, created_at=0)


@pytest.mark.parametrize("cwd", ["/a", "/a/", "/a/../a", "/does/not/exist", "//double", "/ü"])
def test_cwd_is_kept_verbatim(cwd: str) -> None:
    assert SessionHeader(id="s", created_at=0, cwd=cwd).cwd == cwd


def test_cwds_differing_only_by_trailing_slash_or_dot_dot_are_different_workspaces() -> None:
    headers = [SessionHeader(id="s", created_at=0, cwd=cwd) for cwd in ("/a", "/a/", "/a/../a")]
    assert len({h.cwd for h in headers}) == 3
    assert not headers[0].is_compatible(headers[1])
    assert not headers[0].is_compatible(headers[2])


def test_headers_differing_only_in_origin_and_agent_preset_are_compatible() -> None:
    first = SessionHeader(id="s", created_at=5, cwd="/w", origin="subagent", agent_preset="a")
    second = SessionHeader(id="s", created_at=5, cwd="/w", origin=None, agent_preset="b")
    assert first.is_compatible(second)
    assert second.is_compatible(first)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("id", "other"),
        ("created_at", 6),
        ("cwd", "/elsewhere"),
        ("parent_session", "p"),
        ("is_seeded", True),
        ("delegation_depth", 1),
    ],
)
def test_headers_differing_in_a_compared_field_are_incompatible(field: str, value: Any) -> None:
    base = SessionHeader(id="s", created_at=5, cwd="/w")
    other = dataclasses.replace(base, **{field: value})
    assert not base.is_compatible(other)
    assert not other.is_compatible(base)


def test_to_json_writes_camel_case_keys_and_omits_unset_optionals() -> None:
    header = SessionHeader(id="s", created_at=5)
    assert header.to_json() == {
        "version": 3,
        "id": "s",
        "createdAt": 5,
        "isSeeded": False,
        "delegationDepth": 0,
    }
    full = SessionHeader(
        id="s",
        created_at=5,
        cwd="/w",
        parent_session="p",
        is_seeded=True,
        origin="fork",
        delegation_depth=2,
        agent_preset="coder",
    )
    assert full.to_json() == {
        "version": 3,
        "id": "s",
        "createdAt": 5,
        "cwd": "/w",
        "parentSession": "p",
        "isSeeded": True,
        "origin": "fork",
        "delegationDepth": 2,
        "agentPreset": "coder",
    }


@given(valid_headers())
def test_header_round_trips_through_its_json_text(header: SessionHeader) -> None:
    wire = json.loads(json.dumps(header.to_json(), ensure_ascii=False))
    assert SessionHeader.from_json(wire) == header


def test_from_json_fills_defaults_for_absent_optional_keys() -> None:
    header = SessionHeader.from_json({"id": "s", "createdAt": 1})
    assert header == SessionHeader(id="s", created_at=1)


@pytest.mark.parametrize("missing", ["id", "createdAt"])
def test_from_json_rejects_a_missing_required_key(missing: str) -> None:
    wire: dict[str, Any] = {"version": 3, "id": "s", "createdAt": 1}
    del wire[missing]
    with pytest.raises(ValueError, match=missing):
        SessionHeader.from_json(wire)


def test_from_json_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match="seedLength"):
        SessionHeader.from_json({"id": "s", "createdAt": 1, "seedLength": 3})


@pytest.mark.parametrize("version", [0, 2, 4, "3", 3.0, True, None])
def test_from_json_rejects_any_other_format_version(version: object) -> None:
    with pytest.raises(ValueError, match="version"):
        SessionHeader.from_json({"version": version, "id": "s", "createdAt": 1})


@pytest.mark.parametrize("wire", [[], "s", None, 3])
def test_from_json_rejects_a_non_object(wire: object) -> None:
    with pytest.raises(ValueError, match="object"):
        SessionHeader.from_json(wire)


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("cwd", "rel", "cwd"),
        ("createdAt", -1, "created_at"),
        ("isSeeded", "true", "is_seeded"),
        ("delegationDepth", -2, "delegation_depth"),
        ("id", "", "id"),
    ],
)
def test_from_json_rejects_invalid_values_naming_the_field(
    key: str, value: object, field: str
) -> None:
    wire: dict[str, Any] = {"id": "s", "createdAt": 1, key: value}
    with pytest.raises(ValueError, match=field):
        SessionHeader.from_json(wire)
