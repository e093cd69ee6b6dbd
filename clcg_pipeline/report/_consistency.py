"""A section's status says what its rows show (issue 34).

H2 carried ``"status": "estimated"`` while every one of its rows was not identifiable; the
status fact then read as a success above a table of withheld intervals. Here a status that
names success is rewritten when every estimate row of the section is marked not identifiable.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from clcg_pipeline.report._format import MISSING
from clcg_pipeline.report._page import _OK_STATUSES, Part, Row, Section
from clcg_pipeline.report._studies import CI_WITHHELD, WITHHELD_MARK

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
            text=f"\u201c{CI_WITHHELD}\u201d: the row's interval is withheld; why is said once, in the "
            "section's status line or the note on its flags.",
        ),
    )
    return section


#: After ``WITHHELD_MARK`` in the cell of a row with no lettered reason.
_NO_LETTER = "*"
#: Cells of a section saying "CI withheld" before they turn into the short mark (one is read as is).
_SHARED_CELLS = 2


def _withheld_cells(section: Section) -> list[tuple[Row, int]]:
    """Each (row, cell index) of the section's tables whose cell is a withheld interval."""
    return [
        (row, index)
        for part in section.parts
        if part.kind == "table"
        for row in part.rows
        for index, cell in enumerate(row.cells)
        if cell == CI_WITHHELD
    ]


def _reason_letters(row: Row) -> str:
    """The note's letters of the row's flags that say why its interval is withheld ("a", "a, c")."""
    letters: list[str] = []
    for flag, shown in row.marks.items():
        if "not identifiable" in flag or "withheld" in flag:
            # "score: a, b" (a labelled flag) -> "a", "b"
            letters += [x for x in shown.rpartition(": ")[2].split(", ") if x not in letters]
    return ", ".join(letters)


def _mark_cell(row: Row, index: int) -> str:
    """Give the cell its short mark and spoken name; return the letters of its row's reason."""
    letters = _reason_letters(row)
    shown = f"{WITHHELD_MARK} {letters or _NO_LETTER}"
    spoken = f"{CI_WITHHELD} (note {letters})" if letters else CI_WITHHELD
    row.cell_marks[index] = (shown, spoken)
    return letters


#: Marks a status line or note lists by name ("“— a”, “— b” or
#: “— c”"); with more it says "a letter".
_LISTED = 4


def _lettered_marks(letters: list[str]) -> str:
    """The lettered marks the cells show, quoted as a reader sees them, each letter once: a status
    line that said "“— a”" above rows showing "— b" read as if only "a" meant withheld."""
    used = list(dict.fromkeys(x for shown in letters for x in shown.split(", ") if x))
    if len(used) > _LISTED:
        return f"“{WITHHELD_MARK}” and a letter"
    quoted = [f"“{WITHHELD_MARK} {x}”" for x in used]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _marks_said(letters: list[str]) -> str:
    """What the cells' short marks stand for (``letters``: each cell's, "" for none), with
    "CI withheld" said once."""
    by_letter = "for the reason under its letter in the note on the rows' flags"
    by_row = "for the reason on the row's own flag or in the section's status line"
    unlettered = f"“{WITHHELD_MARK} {_NO_LETTER}”"
    if not any(letters):
        return f"{unlettered}: {CI_WITHHELD}, {by_row}"
    lettered = f"{_lettered_marks(letters)}: {CI_WITHHELD}, {by_letter}"
    return f"{lettered}; {unlettered}: {by_row}" if not all(letters) else lettered


def withheld_once(section: Section) -> Section:
    """``section`` with "CI withheld" said once and each withheld interval's cell a short mark.

    The demo's error taxonomy printed "CI withheld" in 24 cells and the granularity section in
    12, beside the rows' flags that already say why (issue 34). A cell now shows "\u2014 a" (the
    letter of its row's reason in the note on the flags; "\u2014 *" when the row has none), is
    spoken and hovered as "CI withheld", and keeps the words in ``cells`` for the checks that read
    them. The marks are explained where the words were: in the status line of a not-identifiable
    study ("shown as ..."), else in a note above the first table. One such cell in a section
    keeps its words (``withheld_note``).
    """
    cells = _withheld_cells(section)
    if len(cells) < _SHARED_CELLS:
        return withheld_note(section)
    said = _marks_said([_mark_cell(row, index) for row, index in cells])
    quoted = f"\u201c{CI_WITHHELD}\u201d"
    statuses = [part for part in section.parts if part.kind == "status" and quoted in part.text]
    for part in statuses:
        part.text = part.text.replace(quoted, said)
    if not statuses:
        _insert_above_first(
            section,
            lambda part: bool(part.kind == "table" and any(r.cell_marks for r in part.rows)),
            Part("note", text=f"In an interval column, {said}."),
        )
    return section


def _insert_above_first(section: Section, found: Callable[[Part], bool], note: Part) -> None:
    """``note`` put above the first part ``found`` accepts (above its heading, if it has one)."""
    first = next(i for i, part in enumerate(section.parts) if found(part))
    if first > 0 and section.parts[first - 1].kind == "heading":
        first -= 1
    section.parts.insert(first, note)


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
            "the long tables below; why is said once, in the section's status line or the note on the "
            "rows' flags.",
        ),
    )
    return section
