"""The read handles' shared bodies: ``LogHandle`` and ``WrappingHandle``."""

from __future__ import annotations

from builders import log
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.model.skeleton import EventSkeleton
from sessionquery.persistence.base import ReadHandle, SkeletonHandle
from sessionquery.persistence.handles import LogHandle, WrappingHandle


class _Plain(LogHandle):
    """A handle without skeletons that records whether it was closed."""

    def __init__(self, header: SessionHeader, events: list[SessionEvent]) -> None:
        super().__init__(header, 0)
        self.events = events
        self.closed = False

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        end = None if length is None else offset + length
        return self.events[offset:end]

    def close(self) -> None:
        self.closed = True


class _Outlined(_Plain):
    """A handle that gives skeletons of its own (marked, to tell them from built ones)."""

    def skeletons(self) -> list[EventSkeleton]:
        return [EventSkeleton.of(event)._replace(type="outlined") for event in self.events]


def _header(session_id: str = "s1") -> SessionHeader:
    return SessionHeader(id=session_id, created_at=0, cwd="/w")


def test_a_wrapping_handle_passes_header_prefix_events_and_close_through() -> None:
    inner = _Plain(_header(), log("one", "two", "three"))
    with WrappingHandle(inner) as handle:
        assert isinstance(handle, ReadHandle)
        assert handle.header is inner.header
        assert handle.inherited_event_count == 0
        assert handle.read(1, 1) == inner.events[1:2]
        assert not inner.closed
    assert inner.closed


def test_a_wrapping_handle_may_name_another_header() -> None:
    renamed = _header("claude:s1")
    handle = WrappingHandle(_Plain(_header(), log("one")), renamed)
    assert handle.header is renamed


def test_a_wrapping_handle_offers_skeletons_whether_or_not_the_inner_handle_does() -> None:
    events = log("one", "two")
    plain = WrappingHandle(_Plain(_header(), events))
    outlined = WrappingHandle(_Outlined(_header(), events))
    assert isinstance(plain, SkeletonHandle)
    assert plain.skeletons() == [EventSkeleton.of(event) for event in events]
    assert [skeleton.type for skeleton in outlined.skeletons()] == ["outlined", "outlined"]
