"""A flag shared by several rows of a section is said once, above the section's tables.

On a small study nearly every estimate carries the same "not identifiable: too few articles:
6 < study.min_articles = 10"; repeated as a two-line badge on each row it buries the rows that
differ. The rows keep a short mark ("not identifiable", "raw: not identifiable") so a reader
still sees which rows it concerns, and the whole reason stands once at the top.
"""

from __future__ import annotations

from collections import Counter

from clcg_pipeline.report._page import Part, Row, Section

# The states a flag opens with; the row's short mark ends after the state's name.
_STATES = ("not identifiable", "not converged", "not available", "not computed")
# A flag on fewer rows than this stays where it is, in full.
_SHARED = 2


def _reason(flag: str) -> str:
    """The flag without the label some tables put before it ("raw: not identifiable: ..." -> "not ...")."""
    at = min((i for i in (flag.find(state) for state in _STATES) if i >= 0), default=0)
    return flag[at:]


def short_flag(flag: str) -> str:
    """The mark a row keeps when its flag is said once for the section."""
    for state in _STATES:
        at = flag.find(state)
        if at >= 0:
            return flag[: at + len(state)]
    head = flag.split(" (", 1)[0].split(": ", 1)[0]
    return head if len(head) < len(flag) else "see the note above"


def _said_at_top(reason: str, said: str) -> bool:
    return bool(said) and reason.endswith(said) and short_flag(reason) != reason


def shared_flags_note(parts: list[Part], said: str = "") -> Part | None:
    """Shorten each flag found twice or more in the tables of ``parts``; return the note saying it.

    ``said`` is a reason the report's first screen gives once for everything: a flag ending in
    it is shortened even on one row, and the note points to the top instead of repeating it.
    """
    rows = [row for part in parts if part.kind == "table" for row in part.rows]
    counts = Counter(_reason(flag) for row in rows for flag in dict.fromkeys(row.flags))
    shared = [
        reason
        for reason, n in counts.items()
        if (n >= _SHARED and short_flag(reason) != reason) or _said_at_top(reason, said)
    ]
    if not shared:
        return None
    for row in rows:
        row.flags = list(dict.fromkeys(short_flag(f) if _reason(f) in shared else f for f in row.flags))
    marked = [
        f"{short_flag(reason)}: the reason given once at the top of the report (rows marked "
        f"\u201c{short_flag(reason)}\u201d)"
        if _said_at_top(reason, said)
        else f"{reason} (rows marked \u201c{short_flag(reason)}\u201d)"
        for reason in shared
    ]
    return Part("flags", rows=[Row(cells=[], flags=list(dict.fromkeys(marked)))])


def flags_once(section: Section, said: str = "") -> Section:
    """``section`` with each flag shared by several rows said once, above its first table."""
    note = shared_flags_note(section.parts, said)
    if note is not None:
        first_flagged = next(
            i
            for i, part in enumerate(section.parts)
            if part.kind == "table" and any(r.flags for r in part.rows)
        )
        section.parts.insert(first_flagged, note)
        said_here = note.rows[0].flags
        for part in section.parts:
            if part.kind == "list":  # a caveat opening with a reason the note gives says the rest only
                part.items = [_without_said_reason(item, said_here) for item in part.items]
    return section


def _without_said_reason(item: str, said: list[str]) -> str:
    """``item`` less a leading "<reason>; " that the section's flag note already says."""
    head, sep, rest = item.partition("; ")
    return rest if sep and any(head in flag for flag in said) else item
