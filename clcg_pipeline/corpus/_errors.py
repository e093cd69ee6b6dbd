"""Errors and warnings raised while reading corpus sources."""

from __future__ import annotations


class CorpusError(ValueError):
    """A corpus source is malformed; the message names the file, the line or record, and the field."""


class CorpusWarning(UserWarning):
    """Something in a source was skipped (e.g. a language outside the panel)."""


def where(file: str, line: int | None = None, field: str | None = None) -> str:
    """``file:line: field`` prefix shared by every corpus error message."""
    out = str(file)
    if line is not None:
        out += f":{line}"
    if field:
        out += f": field {field!r}"
    return out
