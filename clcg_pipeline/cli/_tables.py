"""The tables ``clcg`` prints: query results, the plan (one table per model, short headers) and
the list of named queries, laid out to fit an 80-column terminal without cutting names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

# Short, distinct headers for the plan's columns: the column names themselves (both
# ``input_tokens…``) were cut to the same ``input_tok…`` on a normal terminal.
PLAN_HEADERS = {
    "context_scope": "context",
    "cached_calls": "cached\ncalls",
    "shared_calls": "shared\ncalls",
    "input_tokens": "input\ntokens",
    "input_tokens_per_call": "in tok\nper call",
    "output_tokens": "output\ntokens",
    "cost_usd": "cost\nUSD",
}


def cell(value: Any) -> str:
    """One table cell: lists (``items.options``) as lists, missing as blank, floats to 4 places."""
    import numpy as np

    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    if value is None:
        return ""
    try:
        import pandas as pd

        if pd.isna(value):
            return ""
    except (TypeError, ValueError):  # pd.isna of an unusual scalar; it is not missing
        pass
    if isinstance(value, float | np.floating):
        return f"{value:.4f}"
    return str(value)


def frame_table(frame: Any, title: str | None = None) -> Table:
    """A query result as a table, one column a field, numbers right-aligned."""
    table = Table(title=title, show_lines=False)
    for column in frame.columns:
        table.add_column(str(column), justify="right" if frame[column].dtype.kind in "iuf" else "left")
    for row in frame.itertuples(index=False):
        # Text, not str: data such as "[L3]" must not be read as rich markup.
        table.add_row(*(Text(cell(v)) for v in row))
    return table


def plan_tables(plan: Any, title: str) -> Group:
    """A plan frame (``model``, ``tokenizer``, a ``TOTAL`` row) as one compact table per model.

    The model and its tokenizer go in each table's title, not in columns, and the headers are
    two short lines: that is what lets the task and model names show whole at 80 columns.
    """
    shown = [column for column in plan.columns if column not in ("model", "tokenizer")]
    parts: list[RenderableType] = [Text(title, style="bold")]
    for model, rows in plan.groupby("model", sort=False):
        if model == "TOTAL":
            continue
        tokenizers = ", ".join(dict.fromkeys(cell(value) for value in rows["tokenizer"]))
        parts.append(_compact_table(rows[shown], f"{model} (tokens counted with {tokenizers})"))
    total = plan[plan["model"] == "TOTAL"][shown]
    if len(total):
        # The first name column says what the row is; the other name columns stay blank.
        total = total.assign(**{shown[0]: "TOTAL"})
        parts.append(_compact_table(total, "all models"))
    return Group(*parts)


def _compact_table(frame: Any, title: str) -> Table:
    """No vertical rules and one space between columns; names and numbers are never cut."""
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 0),
    )
    for column in frame.columns:
        numeric = frame[column].dtype.kind in "iuf"
        table.add_column(
            PLAN_HEADERS.get(str(column), str(column)),
            justify="right" if numeric else "left",
            no_wrap=True,
            overflow="fold",  # past the last resort a name folds onto a second line, whole
        )
    for row in frame.itertuples(index=False):
        table.add_row(*(Text(cell(v)) for v in row))
    return table


def query_list_table(queries: dict[str, Path]) -> Table:
    """Each named query beside its whole description (its leading ``--`` comment), wrapped."""
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("description", overflow="fold")
    for name, path in queries.items():
        table.add_row(name, Text(query_description(path)))
    return table


def query_description(path: Path) -> str:
    """The comment lines that open a ``.sql`` file, joined into one paragraph."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("--"):
            break
        lines.append(line.removeprefix("--").strip())
    return " ".join(line for line in lines if line)


#: Rows of the terminal's leaderboard; the rest are in leaderboard.csv beside the results.
LEADERBOARD_ROWS = 20


def leaderboard_table(results: dict[str, Any]) -> Group | None:
    """The models ranked (1 = smallest H1 micro gap) with rank interval and tie group, best first.

    None without models. A blank interval, rank interval or tie group is the identifiability
    rule's doing: one line under the table per reason says what it withheld and why.
    """
    from clcg_pipeline.analysis import leaderboard

    frame = leaderboard(results)
    if not len(frame):
        return None
    table = Table(title="Leaderboard (1 = smallest gap)", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("rank", "model", "rank interval", "tie group", "H1 micro", "interval"):
        model = column == "model"  # a long model id folds onto a second line, whole, never cut
        table.add_column(column, justify="left" if model else "right", no_wrap=not model, overflow="fold")
    shown = frame.head(LEADERBOARD_ROWS).to_dict(orient="records")
    for row in shown:
        table.add_row(
            Text(_whole(row["rank"])),
            # The leaderboard's ``simulated`` column (analysis: ``settings.models[].simulated``).
            Text(str(row["model"]) + (" (SIMULATED)" if row["simulated"] else "")),
            Text(_span(row["rank_ci_low"], row["rank_ci_high"], "{:.0f}\u2013{:.0f}")),
            Text(_whole(row["tie_group"])),
            Text(cell(row["h1_micro"])),
            Text(_span(row["h1_micro_ci_low"], row["h1_micro_ci_high"], "[{:.4f}, {:.4f}]")),
        )
    parts: list[RenderableType] = [table]
    if len(frame) > LEADERBOARD_ROWS:
        parts.append(Text(f"... and {len(frame) - LEADERBOARD_ROWS} more models in leaderboard.csv"))
    parts += [Text(line) for line in withheld_lines(shown, results)]
    return Group(*parts)


#: A blank H1 interval whose row gives no reason (an older or hand-made results document).
_NO_REASON = "no reason recorded in study_results.json"


def withheld_lines(rows: list[dict[str, Any]], results: dict[str, Any]) -> list[str]:
    """One line per reason: the leaderboard columns it left blank, then the reason, said once.

    The reasons are the suite's (the rows' H1 micro, the ranks' and the tie groups' ``reason``):
    below study.min_articles every model's interval, rank interval and the tie groups share one.
    """
    contrasts = results.get("model_contrasts") or {}
    ranks = contrasts.get("ranks") or {}
    blank: dict[str, list[str]] = {}
    for row in rows:
        if _blank(row["h1_micro_ci_low"], row["h1_micro_ci_high"]):
            blank.setdefault(str(row["reason"] or _NO_REASON), []).append("interval")
        rank = (ranks.get(row["model"]) or {}).get("h1_micro") or {}
        if rank.get("reason") and _blank(row["rank_ci_low"], row["rank_ci_high"]):
            blank.setdefault(str(rank["reason"]), []).append("rank interval")
    ties = contrasts.get("tie_groups") or {}
    if ties.get("reason"):
        blank.setdefault(str(ties["reason"]), []).append("tie group")
    return [f"{', '.join(dict.fromkeys(columns))} withheld: {reason}" for reason, columns in blank.items()]


def _whole(value: Any) -> str:
    return "" if cell(value) == "" else f"{float(value):.0f}"


def _span(low: Any, high: Any, form: str) -> str:
    """An interval, or blank when withheld (the reason is said once, not per row)."""
    if _blank(low, high):
        return ""
    return form.format(float(low), float(high))


def _blank(low: Any, high: Any) -> bool:
    return cell(low) == "" or cell(high) == ""
