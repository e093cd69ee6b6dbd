"""Errors and warnings raised while reading corpus sources."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class CorpusError(ValueError):
    """A corpus source is malformed; the message names the language, file, line or record, and field.

    ``language`` is set once the error is known to belong to one language's file, so the
    corpus asset can say which language is bad whichever partition happened to load the source.
    """

    def __init__(self, message: str, *, language: str | None = None, file: str | None = None) -> None:
        super().__init__(message)
        self.language = language
        self.file = file


class CorpusWarning(UserWarning):
    """Something in a source was skipped or repaired (a language outside the panel, undecodable bytes)."""


def where(file: str, line: int | None = None, field: str | None = None) -> str:
    """``file:line: field`` prefix shared by every corpus error message."""
    out = str(file)
    if line is not None:
        out += f":{line}"
    if field:
        out += f": field {field!r}"
    return out


@contextmanager
def language_file(language: str, file: str) -> Iterator[None]:
    """Name ``language`` in any CorpusError raised while reading its ``file`` (once, innermost wins)."""
    try:
        yield
    except CorpusError as exc:
        if exc.language is not None:
            raise
        raise CorpusError(f"language {language!r}: {exc}", language=language, file=file) from None


def empty_language_file(
    file: str,
    language: str,
    size: int,
    *,
    left: str = "uncovered",
    error: type[CorpusError] = CorpusError,
) -> CorpusError:
    """The one rule for every source kind: a language file that exists must hold records.

    ``left`` says where deleting the file leaves the language; ``error`` is the caller's own
    subclass (the long-document source raises its ``DocumentError``).

    A present-but-empty file is almost always a broken export; treating it as "language not
    covered" would silently replace that language's stored data with nothing. A language with
    no file at all is simply not covered.
    """
    what = "is empty (0 bytes)" if size == 0 else f"holds no records ({size} bytes, blank lines only)"
    return error(
        f"language {language!r}: {file} {what}; a language file that is present must hold records. "
        f"Re-export it, or delete it to leave {language!r} {left}",
        language=language,
        file=file,
    )
