"""The page model shared by every section builder: rows, parts, sections, and row flags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from clcg_pipeline.report._format import MISSING, as_float

_VALUE_KEYS = ("estimate", "rho", "gain", "w")
_OK_STATUSES = {"ok", "estimated", "converged", "fitted", "available", "done"}


@dataclass
class Row:
    """One table row; ``flags`` mark it visibly, ``title`` is a tooltip on its first cell.

    ``marks`` maps a flag to the short mark the row shows for it ("a", "score: a") when the
    section's note says the flag's reason once under that mark (``report._flag_notes``); the flag's
    words stay the mark's spoken name and tooltip, and in ``flags`` for the checks that read them.
    ``cell_marks`` does the same for cells: a cell's index to the short mark it shows ("\u2014 a")
    and its spoken name, when the section says the cell's words ("CI withheld") once
    (``report._consistency.withheld_once``); ``cells`` keep the words for the checks.
    """

    cells: list[str]
    flags: list[str] = field(default_factory=list)
    title: str = ""
    marks: dict[str, str] = field(default_factory=dict)
    cell_marks: dict[int, tuple[str, str]] = field(default_factory=dict)


@dataclass
class Part:
    # "heading" | "facts" | "table" | "chart" | "text" | "note" | "status" | "banner" | "list"
    kind: str
    text: str = ""
    facts: list[tuple[str, str]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    chart: Markup = field(default_factory=Markup)
    level: str = ""  # a status part's level: ok | warn | missing
    items: list[str] = field(default_factory=list)  # a list part's entries
    numeric: list[str] = field(default_factory=list)  # table columns aligned right (besides the usual)
    summary: str = ""  # a table behind a <details> disclosure with this summary line (long tables)
    whole: bool = False  # a table never cut to the section's row budget (the ranks: the leaderboard)


@dataclass
class Section:
    key: str
    title: str
    caption: str = ""
    parts: list[Part] = field(default_factory=list)
    truncated: int = 0
    hint: str = ""  # one line beside a folded section's title: its status, so it is read unopened


def flags_of(block: Mapping[str, Any]) -> list[str]:
    """Why an estimate should not be read at face value (empty when nothing is wrong)."""
    flags: list[str] = []
    if block.get("identifiable") is False:
        reason = block.get("reason")
        flags.append("not identifiable" + (f": {reason}" if reason else ""))
    if block.get("converged") is False:
        flags.append("not converged")
    status = block.get("status")
    known = isinstance(status, str) and status.strip().lower() in _OK_STATUSES
    if isinstance(status, str) and not known and not any(status.lower() in f.lower() for f in flags):
        # "not converged: no support" says more than the bare "not converged": keep the longer one.
        flags = [f for f in flags if f.lower() not in status.lower()]
        flags.append(status)
    raw = block.get("flags")
    if isinstance(raw, str | list | tuple):
        # A p at the bootstrap's floor is shown as "<=p" in its cell: a label, not a reason to distrust.
        bound = bool(block.get("p_bound"))
        flags.extend(f for f in split_flags(raw) if f not in flags and not (bound and _is_p_bound_note(f)))
    value = next((as_float(block.get(k)) for k in _VALUE_KEYS if k in block), None)
    low, high = as_float(block.get("ci_low")), as_float(block.get("ci_high"))
    if value is not None and low is not None and high is not None:
        tol = 1e-9 * max(1.0, abs(value))
        if (value < low - tol or value > high + tol) and not any("outside" in f for f in flags):
            flags.append("estimate outside its interval")
    return flags


def split_flags(raw: str | list[Any] | tuple[Any, ...]) -> list[str]:
    """Each flag of ``raw`` once, whole: a table's flags column joins a row's flags with "; ", and
    a flag may say "; " inside its parentheses ("198 of 200 bootstrap replicates valid (a replicate
    ... is dropped; the set ... is fixed by the full sample)").

    The pieces are joined and cut again at each "; " outside parentheses, so the estimates table's
    string and the document's list (cut at every "; ", its pieces unbalanced) give the same flags,
    and the appendix letters one reason once (issue 34), not the whole flag and its two halves.
    """
    text = "; ".join(str(piece) for piece in ([raw] if isinstance(raw, str) else raw) if str(piece))
    flags: list[str] = []
    depth, start = 0, 0
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth <= 0 and text.startswith("; ", at):
            flags.append(text[start:at])
            start, depth = at + 2, 0
    flags.append(text[start:])
    return list(dict.fromkeys(flag.strip() for flag in flags if flag.strip()))


def _is_p_bound_note(flag: str) -> bool:
    text = flag.lower()
    return ("smallest" in text and "p" in text) or "1/(b+1)" in text


def _pruned(part: Part) -> Part:
    """Drop columns with nothing in them (every cell empty or a dash), except the first two."""
    keep = [
        i
        for i, column in enumerate(part.columns)
        if i < 2
        or column == "estimate"
        or column.endswith("CI")  # an empty interval column says "withheld", keep it
        or any(row.cells[i] not in ("", MISSING) for row in part.rows)
        or (column.startswith("flags") and any(row.flags for row in part.rows))
    ]
    if len(keep) == len(part.columns):
        return part
    part.columns = [part.columns[i] for i in keep]
    for row in part.rows:
        row.cells = [row.cells[i] for i in keep]
    return part
