"""A section's status says what its rows show (issue 34).

H2 carried ``"status": "estimated"`` while every one of its rows was not identifiable; the
status fact then read as a success above a table of withheld intervals. Here a status that
names success is rewritten when every estimate row of the section is marked not identifiable.
"""

from __future__ import annotations

import re

from clcg_pipeline.report._format import MISSING
from clcg_pipeline.report._page import _OK_STATUSES, Part, Section
from clcg_pipeline.report._studies import CI_WITHHELD

_STATUS_NAMES = ("Status", "status")


def _every_row_not_identifiable(section: Section) -> bool:
    rows = [row for part in section.parts if part.kind == "table" for row in part.rows]
    return bool(rows) and all(any("not identifiable" in flag for flag in row.flags) for row in rows)


def simulated_status(section: Section, simulated_models: list[str]) -> Section:
    """``section`` with no green status when the study's answers are simulated (the demo's reader).

    Every number of such a study derives from invented answers, which the page's banner says at
    the top; a green "ok" below it would read as a result to believe. The line turns amber and
    says why, once.
    """
    if not simulated_models:
        return section
    for part in section.parts:
        if part.kind != "status" or part.level != "ok":
            continue
        part.level = "warn"
        if part.text.startswith("Status: ok (computed)."):
            part.text = part.text.replace("Status: ok (computed).", _SIMULATED_STATUS, 1)
        else:
            part.text = f"{part.text.rstrip()} (on simulated data)"
    return section


_SIMULATED_STATUS = (
    "Status: computed on simulated answers (see the banner at the top): no evidence about a real model."
)


def consistent_status(section: Section) -> Section:
    """``section`` with a success status fact replaced when none of its rows is identifiable."""
    if not _every_row_not_identifiable(section):
        return section
    for part in section.parts:
        if part.kind != "facts":
            continue
        part.facts = [
            (
                name,
                f"not identifiable (recorded as \u201c{value}\u201d, "
                "but no row of this section is identifiable)",
            )
            if name in _STATUS_NAMES and value.strip().lower() in _OK_STATUSES
            else (name, value)
            for name, value in part.facts
        ]
    return section


_HINT = 160


def with_hint(section: Section) -> Section:
    """``section`` with its status line (or its status fact) as the line beside its folded title."""
    status = next((part.text for part in section.parts if part.kind == "status"), "")
    if not status:
        facts = [value for part in section.parts if part.kind == "facts" for name, value in part.facts]
        names = [name for part in section.parts if part.kind == "facts" for name, value in part.facts]
        status = next((f"Status: {v}" for n, v in zip(names, facts, strict=True) if n in _STATUS_NAMES), "")
    section.hint = _state(status)
    return section


def _state(status: str) -> str:
    """The state a status line opens with ("Not identifiable", "Status: simulated"), not its reason:
    the reason is said once, inside the section. "Status: descriptive only. Every interval is
    withheld ..." gives its second sentence, which is what the section shows."""
    ok = re.match(r"Status: (?:ok(?: \(computed\))?|descriptive only)\.\s+(\S.*)", status)
    text = ok.group(1) if ok else status
    prefix = "Status: " if text.startswith("Status: ") else ""
    # A recorded status keeps its own words ("one model: no pair to compare"); a status line's
    # words stop before its reason.
    stop = r"\s*[(;]|\.(?:\s|$)" if prefix else r"\s*[(:;]|\.(?:\s|$)"
    head = re.split(stop, text.removeprefix(prefix), maxsplit=1)[0].strip()
    head = prefix + head
    return head if len(head) <= _HINT else head[: _HINT - 1] + "\u2026"


def withheld_note(section: Section) -> Section:
    """``section`` with the meaning of the withheld-interval mark said once, above its first use.

    Left out when the status line already says it (a not-identifiable study's status does)."""
    said = any(part.kind == "status" and CI_WITHHELD in part.text for part in section.parts)
    first = next(
        (
            i
            for i, part in enumerate(section.parts)
            if part.kind == "table" and any(CI_WITHHELD in row.cells for row in part.rows)
        ),
        None,
    )
    if said or first is None:
        return section
    if first > 0 and section.parts[first - 1].kind == "heading":
        first -= 1  # above the table's heading, not between the heading and its table
    section.parts.insert(
        first,
        Part(
            "note",
            text=f"\u201c{CI_WITHHELD}\u201d: the interval is not identifiable; why is said once, in the "
            "section's status line or the row's flags.",
        ),
    )
    return section


#: A table this long with a column of nothing but "CI withheld" drops it; a short one keeps the mark
#: where it is read at a glance.
_LONG_TABLE = 10


def _withheld_columns(part: Part) -> list[int]:
    """The columns of a table in which every cell is a withheld interval (or empty), never the first."""
    if part.kind != "table" or len(part.rows) < _LONG_TABLE:
        return []
    found = []
    for index in range(1, len(part.columns)):
        cells = [row.cells[index] for row in part.rows if index < len(row.cells)]
        if cells and all(c in (CI_WITHHELD, MISSING) for c in cells) and CI_WITHHELD in cells:
            found.append(index)
    return found


def drop_withheld_columns(section: Section) -> Section:
    """``section`` without the long tables' columns in which every interval is withheld, said once.

    The demo's granularity section printed "CI withheld" 642 times, a column of it in each table:
    the rows' flags and the status line already say the intervals are not identifiable and why.
    """
    first: int | None = None
    for position, part in enumerate(section.parts):
        drop = set(_withheld_columns(part))
        if not drop:
            continue
        first = position if first is None else first
        part.columns = [c for i, c in enumerate(part.columns) if i not in drop]
        for row in part.rows:
            row.cells = [c for i, c in enumerate(row.cells) if i not in drop]
    if first is None:
        return section
    if first > 0 and section.parts[first - 1].kind == "heading":
        first -= 1
    section.parts.insert(
        first,
        Part(
            "note",
            text="Interval columns in which every interval is withheld (not identifiable) are left out of "
            "the long tables below; why is said once, in the section's status line or the rows' flags.",
        ),
    )
    return section
