"""How archived bytes are compressed: standard-library codecs, named in every blob.

Each blob records its codec, so a later version may compress new blobs differently and still
read every old one. Today's choice is LZMA2 (``lzma``, preset 1, raw stream without the xz
container): on real Claude Code and Codex transcripts it stores about 4.5x smaller than the
raw bytes, against 3.4x for ``zlib`` level 6, at about a third of zlib's speed and five times
xz's default preset; the raw stream saves the ~60 bytes of container a one-line segment would
otherwise carry. A blob that would not shrink is stored as it is (``none``).
"""

from __future__ import annotations

import lzma
import zlib

__all__ = ["CODECS", "compress", "decompress"]

_COMPRESS_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 1}]
_DECOMPRESS_FILTERS = [{"id": lzma.FILTER_LZMA2, "dict_size": 1 << 20}]

CODECS = ("lzma2-1", "zlib", "none")
"""Codec names a blob may carry (``zlib`` is read, never written today)."""


def compress(raw: bytes) -> tuple[str, bytes]:
    """``(codec name, stored bytes)`` for ``raw``."""
    packed = lzma.compress(raw, format=lzma.FORMAT_RAW, filters=_COMPRESS_FILTERS)
    if len(packed) >= len(raw):
        return "none", raw
    return "lzma2-1", packed


def decompress(codec: str, stored: bytes) -> bytes:
    """The raw bytes of a stored blob.

    Raises:
        ValueError: an unknown codec or damaged data.
    """
    if codec == "none":
        return stored
    try:
        if codec == "lzma2-1":
            return lzma.decompress(stored, format=lzma.FORMAT_RAW, filters=_DECOMPRESS_FILTERS)
        if codec == "zlib":
            return zlib.decompress(stored)
    except (lzma.LZMAError, zlib.error) as exc:
        raise ValueError(f"damaged {codec} blob: {exc}") from None
    raise ValueError(f"unknown codec {codec!r}")
