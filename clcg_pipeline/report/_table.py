"""The H1 table for the terminal (rich), as the CLI prints it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from clcg_pipeline.report._format import MISSING, as_float, estimate_of, fmt_ci, fmt_int, fmt_num
from clcg_pipeline.report._render import H1_SUMMARY


def format_h1_table(h1: Mapping[str, Any], languages: Sequence[Mapping[str, Any]] | None = None) -> Table:
    """Rows per target language (largest CLCG first), then the five summary estimands."""
    meta = {str(m.get("iso")): m for m in languages or [] if isinstance(m, Mapping)}
    table = Table(title="Cross-Lingual Comprehension Gap (H1)")
    table.add_column("iso")
    table.add_column("language")
    table.add_column("class", justify="right")
    table.add_column("CLCG", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("n", justify="right")
    rows = []
    for iso, block in (h1.get("by_language") or {}).items():
        est = estimate_of(block)
        info = meta.get(str(iso), {})
        joshi = as_float(info.get("joshi_class"))
        rows.append(
            (
                as_float(est.get("estimate")),
                [
                    str(iso),
                    str(info.get("name") or ""),
                    MISSING if joshi is None else str(int(joshi)),
                    fmt_num(est.get("estimate")),
                    fmt_ci(est.get("ci_low"), est.get("ci_high")),
                    fmt_int(est.get("n")),
                ],
            )
        )
    rows.sort(key=lambda r: (r[0] is None, -(r[0] or 0.0), r[1][0]))
    for _, cells in rows:
        # Names come from data: escape rich markup so "[bold]" in a name prints literally.
        table.add_row(*(escape(c) for c in cells))
    table.add_section()
    for key, label in H1_SUMMARY:
        est = estimate_of(h1.get(key))
        table.add_row(
            "",
            label,
            "",
            fmt_num(est.get("estimate")),
            escape(fmt_ci(est.get("ci_low"), est.get("ci_high"))),
            "",
        )
    return table
