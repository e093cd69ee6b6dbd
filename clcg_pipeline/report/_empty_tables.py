"""A table with no value in it is one line, not a block of dashes.

A multiplicity family with m = 0, repetitions compared on two articles, mixed models that did
not converge: their tables hold a label per row and dashes. Such a table (with the heading
just above it) becomes one line naming its rows and why they are empty.
"""

from __future__ import annotations

from clcg_pipeline.report._format import MISSING
from clcg_pipeline.report._page import Part, Section

# Columns that count what went in, not what came out: filled even when nothing was estimated.
_COUNT_COLUMNS = ("n", "articles", "documents", "pairs")


def _filled(cells: list[str], columns: list[str]) -> list[str]:
    """The cells of a row holding something, counts and flags aside."""
    return [
        cell
        for cell, column in zip(cells, columns, strict=False)
        if cell not in ("", MISSING) and column not in _COUNT_COLUMNS and not column.startswith("flags")
    ]


def is_empty_table(part: Part) -> bool:
    """A table of values whose every row holds nothing but its label and dashes."""
    if part.kind != "table" or not part.rows:
        return False
    value_columns = [c for c in part.columns if c not in _COUNT_COLUMNS and not c.startswith("flags")]
    return len(value_columns) >= 2 and all(
        len(_filled(row.cells, part.columns)) <= 1 and MISSING in row.cells for row in part.rows
    )


def _line(part: Part, heading: str) -> Part:
    labels = [next(iter(_filled(row.cells, part.columns)), "") for row in part.rows]
    flags = list(dict.fromkeys(flag for row in part.rows for flag in row.flags))
    why = f" ({'; '.join(flags)})" if flags else ""
    lead = f"{heading}: no value" if heading else "No value"
    return Part("note", text=f"{lead} for {', '.join(label for label in labels if label) or 'any row'}{why}.")


def collapse_empty_tables(section: Section) -> Section:
    """``section`` with each valueless table (and its heading) said in one line."""
    parts: list[Part] = []
    for part in section.parts:
        if is_empty_table(part):
            heading = parts.pop().text if parts and parts[-1].kind == "heading" else ""
            parts.append(_line(part, heading))
        else:
            parts.append(part)
    section.parts = parts
    return section
