"""A flag shared by several rows of a section is said once, above the section's tables.

On a small study nearly every estimate carries the same "not identifiable: too few articles:
6 < study.min_articles = 10"; repeated as a two-line badge on each row it buries the rows that
differ. Each such reason gets a letter: the note above the section's first flagged table says
each state once and each reason once under its letter ("not identifiable \u2014 a: too few
articles: 6 < study.min_articles = 10; b: ..."), and a row shows the letter in its flag badge
("\u26a0 a", "\u26a0 score: a"), so a reader still sees which rows it concerns and why. The badge
is spoken (``aria-label``) and hovered (``title``) as the row's short flag ("not identifiable").
"""

from __future__ import annotations

import string
from collections import Counter

from clcg_pipeline.report._page import Part, Row, Section

# The states a flag opens with; the row's short mark ends after the state's name.
_STATES = ("not identifiable", "not converged", "not available", "not computed")
# A flag on fewer rows than this stays where it is, in full.
_SHARED = 2


def _reason(flag: str) -> str:
    """The flag without the label some tables put before it ("raw: not identifiable: ..." -> "not ...")."""
    at = min((i for i in (flag.find(state) for state in _STATES) if i >= 0), default=0)
    reason = flag[at:]
    for state in _STATES:
        # "not identifiable: not identifiable: ..." (a reason that names its state) is one reason.
        while reason.startswith(f"{state}: {state}"):
            reason = reason[len(state) + 2 :]
    return reason


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


def _letter(index: int) -> str:
    """The note's mark for its ``index``-th reason: a, b, ..., z, then 27, 28, ..."""
    return string.ascii_lowercase[index] if index < len(string.ascii_lowercase) else str(index + 1)


def _state(reason: str) -> str:
    """The state ``reason`` opens with ("not identifiable"), or "" for a flag of another kind."""
    return next((state for state in _STATES if reason.startswith(state)), "")


def _rest(reason: str, state: str) -> str:
    """What ``reason`` says after its state (a state said twice, "not identifiable: not
    identifiable: ...", once)."""
    rest = reason
    while state and rest.startswith(state):
        rest = rest[len(state) :].removeprefix(":").strip()
    return rest


def _shown(flag: str, letters: str) -> str:
    """The row's mark: the flag's label, if any ("score: "), and the note's letters."""
    state = short_flag(flag)
    label = next((state[: state.find(s)] for s in _STATES if state.endswith(s)), "")
    return f"{label}{letters}"


def _by_state(shared: list[str]) -> dict[str, list[str]]:
    """``shared`` grouped by the state each opens with ("" for flags of another kind)."""
    by_state: dict[str, list[str]] = {}
    for reason in shared:
        by_state.setdefault(_state(reason), []).append(reason)
    return by_state


_NO_REASON = "no reason recorded with the estimate"
# A not-identifiable study's rows carry the bare state: its status line gives their reason once.
_IN_STATUS = "the reason given in the section's status line"


def _told(reason: str, state: str, said: str, bare: str = _NO_REASON) -> str:
    """What the note says of one reason, after its state (``bare`` for a state without one)."""
    if _said_at_top(reason, said):
        return "the reason given once at the top of the report"
    if not state:
        return reason
    return _rest(reason, state) or bare


def _note_lines(
    by_state: dict[str, list[str]], letters: dict[str, str], said: str, bare: str = _NO_REASON
) -> list[str]:
    """The section's note: each state named once, then each of its reasons under its letter."""
    lines = []
    for state, reasons in by_state.items():
        told = [f"{letters[r]}: {_told(r, state, said, bare)}" for r in reasons]
        if state:
            lines.append(f"{state} \u2014 " + "; ".join(told))
        else:
            lines.extend(told)
    return lines


def shared_flags_note(parts: list[Part], said: str = "") -> Part | None:
    """Mark each flag found twice or more in the tables of ``parts`` with a letter; return the
    note saying each reason once, under its letter.

    ``said`` is a reason the report's first screen gives once for everything: a flag ending in
    it is marked even on one row, and the note points to the top instead of repeating it. A row
    keeps its shortened flag ("not identifiable") in ``flags`` (its spoken name and tooltip, and
    what the section's checks read) and shows the letter (``Row.marks``): on the demo, "not
    identifiable" was printed 732 times, once per row of the granularity and validation tables.
    """
    rows = [row for part in parts if part.kind == "table" for row in part.rows]
    counts = Counter(_reason(flag) for row in rows for flag in dict.fromkeys(row.flags))
    shared = [
        reason
        for reason, n in counts.items()
        # A bare state ("not identifiable", no reason recorded) on several rows is a repetition too.
        if (n >= _SHARED and (short_flag(reason) != reason or reason in _STATES))
        or _said_at_top(reason, said)
    ]
    if not shared:
        return None
    by_state = _by_state(shared)
    ordered = [reason for reasons in by_state.values() for reason in reasons]
    letters = {reason: _letter(i) for i, reason in enumerate(ordered)}
    for row in rows:
        _mark(row, letters)
    # "Not identifiable: too few articles: 6 < ..." above rows flagged "not identifiable": their
    # reason is that line's, not "no reason recorded".
    in_status = any(part.kind == "status" and part.text.startswith("Not identifiable:") for part in parts)
    bare = _IN_STATUS if in_status else _NO_REASON
    return Part("flags", rows=[Row(cells=[], flags=_note_lines(by_state, letters, said, bare))])


def _mark(row: Row, letters: dict[str, str]) -> None:
    """``row`` with its shared flags shortened and each shown as its note's letters."""
    found: dict[str, list[str]] = {}
    for flag in row.flags:
        reason = _reason(flag)
        short = short_flag(flag) if reason in letters else flag
        found.setdefault(short, [])
        if reason in letters and letters[reason] not in found[short]:
            found[short].append(letters[reason])
    row.flags = list(found)
    row.marks.update({short: _shown(short, ", ".join(marks)) for short, marks in found.items() if marks})


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
