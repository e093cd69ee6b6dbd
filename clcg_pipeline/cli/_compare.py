"""``clcg compare A B`` and ``clcg plan --power``: what the scores at hand say about the next step."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from clcg_pipeline.cli._common import UsageError, console, csv, dirs, say
from clcg_pipeline.cli._tables import frame_table

if TYPE_CHECKING:
    import pandas as pd


def cmd_plan_power(args: argparse.Namespace) -> int:
    """How many articles a study needs for the asked effect, from this data folder's scores."""
    from rich.table import Table

    from clcg_pipeline.analysis import PowerQuestion
    from clcg_pipeline.orchestration import plan_power

    if args.effect is None:
        raise UsageError("--power needs --effect (the score difference to detect, e.g. 0.02)")
    models = power_models(args.compare_models)
    try:
        question = PowerQuestion(effect=args.effect, alpha=args.alpha, power=args.target_power, models=models)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    config_dir, data_dir = dirs(args)
    plan = plan_power(config_dir=config_dir, data_dir=data_dir, question=question)
    if args.format == "json":
        print(json.dumps(plan, indent=2))
        return 0
    what = "the H1 gap" if models is None else f"the difference {models[0]} - {models[1]}"
    table = Table(title=f"Articles needed to detect {what} of {args.effect:g} (nothing has been called)")
    table.add_column("quantity", overflow="fold")
    table.add_column("value", overflow="fold")
    for key, value in plan.items():
        if value is not None:
            table.add_row(key.replace("_", " "), f"{value:.4g}" if isinstance(value, float) else str(value))
    console.print(table)
    return 0


def power_models(value: str | None) -> tuple[str, str] | None:
    """``--compare-models A,B`` as two different model ids; anything else is a usage error that
    shows the A,B form (checked before the ids are looked up, so one id is not called unknown)."""
    models = csv(value)
    if models is None:
        return None
    if len(models) != 2 or models[0] == models[1]:
        got = f"{models[0]} twice" if len(models) == 2 else f"{len(models)}: {', '.join(models)}"
        raise UsageError(
            f"--compare-models takes two different model ids as A,B (e.g. --compare-models "
            f"model-a,model-b: the difference A - B), got {got}"
        )
    return models[0], models[1]


def _interval_cells(table: pd.DataFrame) -> tuple[list[str], list[str]]:
    """B - A's interval per row, and the lines that say why a row has none: each reason once,
    under the table, not on every row it applies to.

    One reason for every row without an interval: the cell says ``none`` and one line the reason.
    Several: each reason is numbered once and the cell names its number (``none [2]``).
    """
    records = table.to_dict("records")
    reasons: dict[str, list[int]] = {}  # reason -> the rows it applies to, in table order
    cells = []
    for index, row in enumerate(records):
        low, high = row["difference_ci_low"], row["difference_ci_high"]
        if low is not None and high is not None:
            cells.append(f"[{low:.4f}, {high:.4f}]")
            continue
        reasons.setdefault(str(row["reason"] or "not given"), []).append(index)
        cells.append("none")
    if len(reasons) == 1:
        ((reason, rows),) = reasons.items()
        which = "any row" if len(rows) == len(records) else f"{len(rows)} of {len(records)} rows"
        return cells, [f"no interval on {which}: {reason}"]
    lines = []
    for number, (reason, rows) in enumerate(reasons.items(), start=1):
        for index in rows:
            cells[index] = f"none [{number}]"
        lines.append(f"[{number}] no interval ({len(rows)} row{'s' if len(rows) > 1 else ''}): {reason}")
    return cells, lines


def cmd_compare(args: argparse.Namespace) -> int:
    """Run B minus run A per estimand, paired on the items both answered; table, JSON, HTML."""
    from clcg_pipeline.config import load_config
    from clcg_pipeline.results import (
        compare_runs,
        comparison_lines,
        load_run,
        write_comparison_html,
        write_comparison_json,
    )

    config_dir, _ = dirs(args)
    config = load_config(config_dir)
    a, b = load_run(args.run_a), load_run(args.run_b)
    table, info = compare_runs(a, b, config)
    if args.json:
        write_comparison_json(table, info, args.json)
        say(f"comparison written: {args.json}")
    if args.html:
        write_comparison_html(table, info, args.html)
        say(f"comparison page written: {args.html}")
    say("\n".join([f"A: {a.label}", f"B: {b.label}", *comparison_lines(info)]))
    numbers = ["a_estimate", "b_estimate", "difference", "p"]
    intervals, reasons = _interval_cells(table)
    shown = table[["estimand", "group", *numbers[:3]]].assign(
        interval=intervals,
        p=table["p"],
        pairing=table["pairing"],
        source=table["source"],
    )
    # Numbers as numbers (right-aligned; a missing one blank), whatever the table's dtype.
    shown[numbers] = shown[numbers].astype(float)
    console.print(frame_table(shown))
    for line in reasons:  # each reason once, under the table (its p is withheld with it)
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return 0


def add_compare_parser(sub: argparse._SubParsersAction, common: object) -> None:
    cmp = sub.add_parser("compare", help="two runs side by side: B - A per estimand, paired where it can")
    common(cmp)  # type: ignore[operator]
    cmp.add_argument("run_a", help="run A: a data folder, a scores Parquet file or a study_results.json")
    cmp.add_argument("run_b", help="run B: a data folder, a scores Parquet file or a study_results.json")
    cmp.add_argument("--json", help="also write the comparison as JSON to this file")
    cmp.add_argument("--html", help="also write it as one offline HTML page")
    cmp.set_defaults(func=cmd_compare)


def add_power_options(plan: argparse.ArgumentParser, fraction: object, positive: object) -> None:
    group = plan.add_argument_group("power (--power: articles needed, from the scores in --data)")
    group.add_argument("--power", action="store_true", help="plan articles from the scores at hand")
    group.add_argument("--effect", type=positive, help="the score difference to detect, e.g. 0.02")  # type: ignore[arg-type]
    group.add_argument("--compare-models", help="A,B: a difference between two models (two-sided)")
    group.add_argument("--alpha", type=fraction, default=0.05, help="test level (default 0.05)")  # type: ignore[arg-type]
    group.add_argument("--target-power", type=fraction, default=0.8, help="power wanted (default 0.8)")  # type: ignore[arg-type]
    group.add_argument("--format", choices=["table", "json"], default="table")
