"""The ``clcg`` command: run, plan, query, estimate, report.

Heavy imports (Dagster, SDKs, statsmodels) happen inside each subcommand so that, for
example, ``clcg estimate`` starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

# A fixed minimum width keeps tables readable when stdout is a pipe or a CI log.
console = Console(stderr=False, width=max(Console().width, 140))
errors = Console(stderr=True)


def _dirs(args: argparse.Namespace) -> tuple[str, str]:
    from clcg_pipeline.config import default_config_dir, default_data_dir

    config_dir = str(args.config) if args.config else str(default_config_dir())
    data_dir = str(args.data) if args.data else default_data_dir()
    return config_dir, data_dir


def _csv(value: str | None) -> list[str] | None:
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


def _print_frame(frame: Any, title: str | None = None) -> None:
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in frame.columns:
        table.add_column(str(column), justify="right" if frame[column].dtype.kind in "iuf" else "left")
    for row in frame.itertuples(index=False):
        table.add_row(
            *("" if v is None or v != v else (f"{v:.4f}" if isinstance(v, float) else str(v)) for v in row)
        )
    console.print(table)


def cmd_run(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from clcg_pipeline.report import format_h1_table
    from clcg_pipeline.storage import default_catalog_path, read_json
    from clcg_pipeline.study_run import run_study

    config_dir, data_dir = _dirs(args)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("starting", total=None)

        def on_step(label: str, step: int, total: int) -> None:
            progress.update(task, description=label, completed=step - 1, total=total)

        summary = run_study(
            config_dir=config_dir,
            data_dir=data_dir,
            models=_csv(args.models),
            languages=_csv(args.languages),
            budget_usd=args.budget,
            mode=args.mode,
            force=args.force,
            regenerate_items=args.regenerate_items,
            on_step=on_step,
        )
        progress.update(task, description="done", completed=progress.tasks[0].total)
    console.print(
        f"{summary.runs} Dagster runs, {summary.skipped} partitions already up to date; "
        f"{summary.new_calls} new model calls costing ${summary.new_cost_usd:.4f}"
    )
    if summary.budget_exhausted:
        console.print(
            "[yellow]budget reached: remaining partitions were not run (partial results kept)[/yellow]"
        )
    results = read_json(Path(data_dir) / "study_results.json")
    languages = results.get("languages")
    console.print(format_h1_table(results["h1"], languages))
    console.print(f"data:    {data_dir}")
    console.print(f"report:  {Path(data_dir) / 'report.html'}")
    console.print(f"results: {Path(data_dir) / 'study_results.json'}")
    console.print(f"catalog: {default_catalog_path(data_dir)}  (try: clcg query --named clcg_by_language)")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from clcg_pipeline.study_plan import plan_study

    config_dir, data_dir = _dirs(args)
    plan = plan_study(config_dir=config_dir, data_dir=data_dir, models=_csv(args.models))
    _print_frame(plan, title="Planned calls (nothing has been called)")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from clcg_pipeline.config import load_config
    from clcg_pipeline.storage import default_catalog_path, named_queries, query, run_named_query

    config_dir, data_dir = _dirs(args)
    catalog = Path(args.catalog) if args.catalog else default_catalog_path(data_dir)
    if args.list:
        for name, path in named_queries().items():
            first = path.read_text(encoding="utf-8").splitlines()[0].lstrip("- ")
            console.print(f"[bold]{name}[/bold]  {first}")
        return 0
    if args.named:
        band = load_config(config_dir).study.band
        params = {
            "context_scope": band.context_scope,
            "item_source": band.item_source,
            "levels": list(band.levels),
        }
        frame = run_named_query(catalog, args.named, params)
    elif args.sql:
        frame = query(catalog, args.sql)
    else:
        errors.print("give a SQL string, --named NAME or --list")
        return 2
    if args.format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif args.format == "json":
        sys.stdout.write(frame.to_json(orient="records", date_format="iso") + "\n")
    else:
        _print_frame(frame)
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    from clcg_pipeline.analysis import estimate_file
    from clcg_pipeline.config import load_config

    config_dir, _ = _dirs(args)
    result = estimate_file(
        str(args.scores),
        str(args.out),
        load_config(config_dir),
        replicates=args.replicates,
        seed=args.seed,
        full=args.full,
        articles_path=str(args.articles) if args.articles else None,
        fertility_path=str(args.fertility) if args.fertility else None,
        replication_path=str(args.replication) if args.replication else None,
    )
    h1 = result.get("h1", result)
    micro = h1["h1_micro"]
    if micro and micro.get("estimate") is not None:
        console.print(
            f"H1 micro {micro['estimate']:.4f} [{micro['ci_low']:.4f}, {micro['ci_high']:.4f}] -> {args.out}"
        )
    else:
        console.print(f"H1 micro not identifiable -> {args.out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from clcg_pipeline.report import render_report, write_report
    from clcg_pipeline.storage import partition_dir, read_frame, read_json

    _, data_dir = _dirs(args)
    results_path = Path(data_dir) / "study_results.json"
    if not results_path.exists():
        errors.print(f"{results_path}: not found - run `clcg run` first")
        return 1
    estimates = read_frame(partition_dir(data_dir, "estimates", None) / "data.parquet")
    out = Path(args.out) if args.out else Path(data_dir) / "report.html"
    write_report(render_report(read_json(results_path), estimates), str(out))
    console.print(f"report: {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clcg", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--config", type=Path, help="config folder (default $CLCG_CONFIG_DIR or ./assets_config)"
        )
        p.add_argument("--data", help="data folder or URL (default $CLCG_DATA_DIR or ./clcg_data)")

    run = sub.add_parser("run", help="materialize the whole study through Dagster, then print the H1 table")
    common(run)
    run.add_argument("--models", help="comma-separated model ids (default: all in models.yaml)")
    run.add_argument("--languages", help="comma-separated ISO codes (default: the whole panel)")
    run.add_argument("--budget", type=float, help="stop before new spend exceeds this many USD")
    run.add_argument(
        "--mode", choices=["online", "batch"], default="online", help="provider batch APIs for backfills"
    )
    run.add_argument("--force", action="store_true", help="re-run partitions that are up to date")
    run.add_argument(
        "--regenerate-items", action="store_true", help="write the item bank again with the generator"
    )
    run.set_defaults(func=cmd_run)

    plan = sub.add_parser("plan", help="calls, tokens and cost a run would need; calls nothing")
    common(plan)
    plan.add_argument("--models", help="comma-separated model ids")
    plan.set_defaults(func=cmd_plan)

    q = sub.add_parser("query", help="read-only SQL over the DuckDB catalog")
    common(q)
    q.add_argument("sql", nargs="?", help="a SQL query")
    q.add_argument("--named", help="run a query of sql/queries/ with the band's parameters bound")
    q.add_argument("--list", action="store_true", help="list the named queries")
    q.add_argument("--catalog", help="catalog file (default <data>/clcg.duckdb)")
    q.add_argument("--format", choices=["table", "csv", "json"], default="table")
    q.set_defaults(func=cmd_query)

    est = sub.add_parser("estimate", help="run the estimators on any scores Parquet file")
    est.add_argument("--config", type=Path, help="config folder (language roles, band, seed)")
    est.add_argument("--data", help=argparse.SUPPRESS)
    est.add_argument("--scores", type=Path, required=True, help="Parquet file with the scores columns")
    est.add_argument("--out", type=Path, required=True, help="JSON file to write")
    est.add_argument("--replicates", type=int, help="bootstrap replicates (default: study.yaml)")
    est.add_argument("--seed", type=int, help="bootstrap seed (default: study.yaml)")
    est.add_argument("--full", action="store_true", help="the whole suite (study_results.json), not only H1")
    est.add_argument("--articles", type=Path, help="Parquet with doc_id, published (for H2 with --full)")
    est.add_argument("--fertility", type=Path, help="Parquet with language, fertility (with --full)")
    est.add_argument(
        "--replication", type=Path, help="scores Parquet of a run on another corpus (with --full)"
    )
    est.set_defaults(func=cmd_estimate)

    rep = sub.add_parser("report", help="render the HTML report from study_results.json")
    common(rep)
    rep.add_argument("--out", help="HTML file to write (default <data>/report.html)")
    rep.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        errors.print("interrupted: completed calls are cached; run again to resume")
        return 130
    except Exception as exc:  # one clear line instead of a traceback for expected failures
        from clcg_pipeline.config import ConfigError

        expected = (ConfigError, FileNotFoundError, ValueError, RuntimeError)
        if isinstance(exc, expected) and not getattr(args, "debug", False):
            errors.print(f"error: {exc}", markup=False, highlight=False)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
