"""The ``clcg`` command: run, plan, query, estimate, report.

Heavy imports (Dagster, SDKs, statsmodels) happen inside each subcommand so that, for
example, ``clcg estimate`` starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from rich.console import Console

if TYPE_CHECKING:
    from clcg_pipeline.orchestration import RunSummary

# A fixed minimum width keeps tables readable when stdout is a pipe or a CI log.
console = Console(stderr=False, width=max(Console().width, 140))


def _say(line: str) -> None:
    """One line on stderr, never wrapped (rich would break a long path over several lines)."""
    sys.stderr.write(line.rstrip("\n") + "\n")


class UsageError(ValueError):
    """A bad value on the command line: one ``error:`` line, exit code 2, before anything runs."""


class _Parser(argparse.ArgumentParser):
    """argparse's errors as one line (its default adds the whole usage above it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _at_least(kind: type[int] | type[float], least: int, what: str) -> Callable[[str], int | float]:
    """An argparse ``type=``: a finite ``kind`` of at least ``least``, else a usage error."""

    def parse(text: str) -> int | float:
        value: int | float
        try:
            value = kind(text)
        except ValueError:
            value = math.nan  # fails the check below, with the same message
        if not (math.isfinite(value) and value >= least):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


POSITIVE_INT = _at_least(int, 1, "a whole number of 1 or more")
NON_NEGATIVE_INT = _at_least(int, 0, "a whole number of 0 or more")
NON_NEGATIVE_FLOAT = _at_least(float, 0, "a number of 0 or more")


def check_data_folder(data_dir: str) -> None:
    """A local data folder that cannot be created or written is a usage error, said up front.

    Probed with a folder made and removed at once, so nothing is left when it fails (or before
    the run writes). Remote URLs are not checked: that would cost a request.
    """
    from upath import UPath

    from clcg_pipeline.storage import is_local

    if not is_local(data_dir):
        return
    folder = Path(UPath(data_dir).path).absolute()
    # os.path.exists, not Path.exists: a folder we may not search is "not there", not an error.
    existing = next(path for path in (folder, *folder.parents) if os.path.exists(path))
    if not existing.is_dir():
        where = "it" if existing == folder else str(existing)
        raise UsageError(f"cannot write the data folder {data_dir}: {where} is not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".clcg-probe-", dir=existing))
    except OSError as exc:
        reason = exc.strerror if existing == folder else f"cannot create it in {existing} ({exc.strerror})"
        raise UsageError(f"cannot write the data folder {data_dir}: {reason}") from None


def _dirs(args: argparse.Namespace) -> tuple[str, str]:
    from clcg_pipeline.config import default_config_dir, default_data_dir

    config_dir = str(args.config) if args.config else str(default_config_dir())
    data_dir = str(args.data) if args.data else default_data_dir()
    return config_dir, data_dir


def _csv(value: str | None) -> list[str] | None:
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


def _cell(value: Any) -> str:
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


def _print_frame(frame: Any, title: str | None = None) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, show_lines=False)
    for column in frame.columns:
        table.add_column(str(column), justify="right" if frame[column].dtype.kind in "iuf" else "left")
    for row in frame.itertuples(index=False):
        # Text, not str: data such as "[L3]" must not be read as rich markup.
        table.add_row(*(Text(_cell(v)) for v in row))
    console.print(table)


def cmd_run(args: argparse.Namespace) -> int:
    from clcg_pipeline.config import load_config

    config_dir, data_dir = _dirs(args)
    check_data_folder(data_dir)
    # Bad config or an unknown model/language is reported before any progress bar is drawn.
    config = load_config(config_dir)
    _check_selection("--models", _csv(args.models), [model.id for model in config.models.evaluated])
    _check_selection("--languages", _csv(args.languages), config.languages.isos)
    _check_sources_exist(config, config_dir)
    partitions = (
        None
        if args.force or args.regenerate_items
        else _complete_run_holds(args, config, config_dir, data_dir)
    )
    if partitions is not None:
        # The folder is as the last complete run for this request left it: no Dagster needed.
        console.print(
            f"everything is up to date ({partitions} partitions): no Dagster run, 0 new model calls"
        )
    else:
        _print_run_summary(_run_with_progress(args, config_dir, data_dir))
    _print_study_results(data_dir)
    return 0


UP_TO_DATE = "everything is up to date ({partitions} partitions): no Dagster run, 0 new model calls"


def _complete_run_holds(args: argparse.Namespace, config: Any, config_dir: str, data_dir: str) -> int | None:
    """The partitions up to date when the data folder is as a complete run asked the same left it."""
    from clcg_pipeline.config import code_versions, ensure_dagster_home
    from clcg_pipeline.storage import complete_run_holds, complete_run_request

    ensure_dagster_home()  # where the source files' content hashes are kept between runs
    asked = complete_run_request(
        config_dir=config_dir,
        versions=code_versions(config),
        models=_csv(args.models),
        languages=_csv(args.languages),
        mode=args.mode,
        budget_usd=args.budget,
    )
    return complete_run_holds(data_dir, asked)


def _run_with_progress(args: argparse.Namespace, config_dir: str, data_dir: str) -> RunSummary:
    """``run_study`` under one progress bar that names the step being run."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from clcg_pipeline.orchestration import DEFAULT_PARALLEL, run_study

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
            parallel=DEFAULT_PARALLEL if args.parallel is None else args.parallel,
            calls_ahead=not args.no_calls_ahead,
        )
        progress.update(task, description="done", completed=progress.tasks[0].total)
    return summary


def _print_run_summary(summary: RunSummary) -> None:
    """What ran, what was up to date, the new calls and their cost, and budget stops."""
    if summary.runs == 0 and summary.new_calls == 0 and not summary.budget_exhausted:
        console.print(UP_TO_DATE.format(partitions=summary.skipped))
        return
    console.print(
        f"{summary.runs} Dagster runs, {summary.skipped} partitions already up to date; "
        f"{summary.new_calls} new model calls ({summary.response_calls} responses, "
        f"{summary.task_calls} granularity tasks, {summary.judge_calls} judges and writers) "
        f"costing ${summary.new_cost_usd:.4f}"
    )
    ahead = summary.calls_ahead
    if ahead is not None and ahead.sent:
        console.print(
            f"{ahead.sent} of them sent ahead of their partitions' runs, one stream per model, in "
            f"{ahead.seconds:.1f}s ({ahead.sent / max(ahead.seconds, 1e-9):.1f} calls/s)"
        )
    if ahead is not None and ahead.refused:
        for model_id, reason in ahead.refused.items():
            console.print(f"[yellow]{model_id}: calls not sent ahead: {reason}[/yellow]")
    if summary.budget_exhausted:
        console.print(
            "[yellow]budget reached: the calls and partitions past it were not run "
            "(partial results kept; the next run resumes them)[/yellow]"
        )


def _print_study_results(data_dir: str) -> None:
    """The H1 table of study_results.json, and where the outputs are."""
    from upath import UPath

    from clcg_pipeline.report import format_h1_table
    from clcg_pipeline.storage import default_catalog_path, read_json

    root = UPath(data_dir)
    results = read_json(root / "study_results.json")
    languages = results.get("languages")
    console.print(format_h1_table(results["h1"], languages, results=results))
    console.print(f"data:    {data_dir}")
    console.print(f"report:  {root / 'report.html'}")
    console.print(f"results: {root / 'study_results.json'}")
    console.print(f"catalog: {default_catalog_path(data_dir)}  (try: clcg query --named clcg_by_language)")


def _check_selection(option: str, chosen: list[str] | None, known: list[str]) -> None:
    unknown = [value for value in chosen or [] if value not in known]
    if unknown:
        raise ValueError(f"{option}: unknown {', '.join(unknown)}; the config has {', '.join(known)}")


def _check_sources_exist(config: Any, config_dir: str) -> None:
    """A source path that is not there is a config error, said before any progress bar is drawn."""
    from upath import UPath

    for index, source in enumerate(config.sources.sources):
        if source.path and not UPath(source.path).exists():
            raise ValueError(
                f"{config_dir}/sources.yaml: sources[{index}] ({source.name}).path: "
                f"{source.path} does not exist"
            )


def cmd_plan(args: argparse.Namespace) -> int:
    from rich.text import Text

    from clcg_pipeline.config import load_config
    from clcg_pipeline.orchestration import plan_granularity, plan_study

    config_dir, data_dir = _dirs(args)
    config = load_config(config_dir)
    _check_selection("--models", _csv(args.models), [model.id for model in config.models.evaluated])
    plan = plan_study(config_dir=config_dir, data_dir=data_dir, models=_csv(args.models))
    _print_frame(plan, title="Planned calls (nothing has been called)")
    # Granularity tasks (long documents): their own table, per task, since their prompts dominate cost.
    tasks, notes = plan_granularity(config_dir=config_dir, data_dir=data_dir, models=_csv(args.models))
    if tasks is not None:
        _print_frame(tasks, title="Planned granularity task calls (nothing has been called)")
    for note in notes:
        console.print(Text(f"note: {note}"))
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from clcg_pipeline.config import load_config
    from clcg_pipeline.storage import default_catalog_path, named_queries, query, run_named_query

    config_dir, data_dir = _dirs(args)
    catalog = args.catalog or default_catalog_path(data_dir)
    # With --catalog alone, its views read the tables beside it.
    tables_dir = data_dir if (args.data or not args.catalog) else None
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
        frame = run_named_query(catalog, args.named, params, data_dir=tables_dir)
    elif args.sql:
        frame = query(catalog, args.sql, data_dir=tables_dir)
    else:
        raise UsageError("give a SQL string, --named NAME or --list")
    if args.format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif args.format == "json":
        sys.stdout.write(frame.to_json(orient="records", date_format="iso") + "\n")
    else:
        _print_frame(frame)
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    from upath import UPath

    from clcg_pipeline.analysis import estimate_file
    from clcg_pipeline.config import load_config
    from clcg_pipeline.storage import is_local, write_bytes_atomic

    config_dir, _ = _dirs(args)
    config = load_config(config_dir)
    with tempfile.TemporaryDirectory(prefix="clcg-estimate-") as scratch:
        work = Path(scratch)
        scores = UPath(args.scores)
        extra: dict[str, str | None] = {
            "articles_path": _local_file(args.articles, work / "articles.parquet"),
            "fertility_path": _local_file(args.fertility, work / "fertility.parquet"),
            "replication_path": _local_file(args.replication, work / "replication.parquet"),
        }
        if scores.is_dir():
            scores_file = _data_folder_scores(scores, config, work, extra, full=args.full)
        else:
            scores_file = _local_file(args.scores, work / "scores.parquet")
        out = UPath(args.out)
        local_out = str(Path(out.path)) if is_local(out) else str(work / "out.json")
        result = estimate_file(
            str(scores_file),
            local_out,
            config,
            replicates=args.replicates,
            seed=args.seed,
            full=args.full,
            **extra,
        )
        # Name what the user gave, not the temporary copy the estimators read.
        if isinstance(result.get("settings"), dict) and "scores_path" in result["settings"]:
            result["settings"]["scores_path"] = str(args.scores)
        payload = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        write_bytes_atomic(out if not is_local(out) else Path(local_out), payload.encode("utf-8"))
    h1 = result.get("h1", result)
    micro = h1["h1_micro"]
    if micro and micro.get("estimate") is not None and micro.get("ci_low") is not None:
        console.print(
            f"H1 micro {micro['estimate']:.4f} [{micro['ci_low']:.4f}, {micro['ci_high']:.4f}] -> {args.out}"
        )
    elif micro and micro.get("estimate") is not None:
        # --full withholds the interval below study.min_articles; say why instead of failing.
        console.print(
            f"H1 micro {micro['estimate']:.4f} not identifiable ({micro.get('reason')}) -> {args.out}"
        )
    else:
        console.print(f"H1 micro not identifiable -> {args.out}")
    return 0


def _local_file(location: str | None, copy: Path) -> str | None:
    """A local path for a Parquet file given as a path or URL (remote files are copied to ``copy``)."""
    from upath import UPath

    from clcg_pipeline.storage import is_local

    if location is None:
        return None
    source = UPath(location)
    if source.is_dir():
        raise ValueError(f"{location}: is a folder; give a Parquet file (only --scores takes a data folder)")
    if not source.exists():
        raise FileNotFoundError(f"{location}: file not found")
    if is_local(source):
        return str(Path(source.path))
    copy.write_bytes(source.read_bytes())
    return str(copy)


def _data_folder_scores(
    folder: Any, config: Any, work: Path, extra: dict[str, str | None], *, full: bool
) -> Path:
    """Every scores partition of a data folder, filtered as the ``analysis`` asset does.

    Partitions of models or languages not in the config are left out, and so are the article x
    language versions the corpus audit marks incomplete. With ``--full``, the folder's
    reference-language articles and tokenizer fertility feed H2 and the nomological network
    unless given explicitly.
    """
    from clcg_pipeline.results import drop_incomplete_versions
    from clcg_pipeline.storage import read_all_partitions, stored_tables

    # Accept the data folder itself or its scores/ subfolder.
    root = folder.parent if folder.name == "scores" and "scores" not in stored_tables(folder) else folder
    scores = read_all_partitions(root, "scores")
    if scores.empty:
        raise ValueError(
            f"{folder}: no scores here; give a scores Parquet file or a data folder written by "
            "`clcg run` (with scores/language=*/model=*/data.parquet)"
        )
    scores = scores[
        scores["model"].isin([model.id for model in config.models.evaluated])
        & scores["language"].isin(config.languages.isos)
    ].reset_index(drop=True)
    scores, excluded = drop_incomplete_versions(scores, read_all_partitions(root, "corpus_audit"))
    if scores.empty:
        raise ValueError(f"{folder}: no scores for the models and languages of the config")
    if len(excluded):
        _say(f"note: {len(excluded)} article x language version(s) below the completeness threshold left out")
    path = work / "scores.parquet"
    scores.to_parquet(path, index=False)
    if full and extra["articles_path"] is None:
        articles = read_all_partitions(root, "articles")
        if not articles.empty:
            reference = articles[articles["language"] == config.languages.reference]
            extra["articles_path"] = str(work / "articles.parquet")
            reference[["doc_id", "published"]].to_parquet(extra["articles_path"], index=False)
    if full and extra["fertility_path"] is None:
        fertility = read_all_partitions(root, "tokenizer_fertility_by_language")
        if not fertility.empty:
            extra["fertility_path"] = str(work / "fertility.parquet")
            fertility.to_parquet(extra["fertility_path"], index=False)
    return path


def cmd_report(args: argparse.Namespace) -> int:
    from upath import UPath

    from clcg_pipeline.report import render_report, write_report
    from clcg_pipeline.storage import partition_dir, read_frame, read_json

    _, data_dir = _dirs(args)
    results_path = UPath(data_dir) / "study_results.json"
    if not results_path.exists():
        _say(f"error: {results_path}: not found - run `clcg run` first")
        return 1
    estimates_path = partition_dir(data_dir, "estimates", None) / "data.parquet"
    if not estimates_path.exists():
        _say(f"error: {estimates_path}: not found - run `clcg run` first")
        return 1
    estimates = read_frame(estimates_path)
    out = UPath(args.out) if args.out else UPath(data_dir) / "report.html"
    write_report(render_report(read_json(results_path), estimates), str(out))
    console.print(f"report: {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="clcg", description=__doc__.splitlines()[0])
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
    run.add_argument("--budget", type=NON_NEGATIVE_FLOAT, help="stop before new spend exceeds this many USD")
    run.add_argument(
        "--mode", choices=["online", "batch"], default="online", help="provider batch APIs for backfills"
    )
    run.add_argument("--force", action="store_true", help="re-run partitions that are up to date")
    run.add_argument(
        "--parallel",
        type=POSITIVE_INT,
        default=None,
        help="responses partitions run at once, in worker processes (default 2; 1 = one after another)",
    )
    run.add_argument(
        "--no-calls-ahead",
        action="store_true",
        help="make each partition's calls inside its own Dagster run, as UI backfills do, instead of "
        "sending every hosted model's calls first in one stream (the default; see docs/DEPLOY.md)",
    )
    run.add_argument(
        "--regenerate-items",
        action="store_true",
        help="write the item bank (with the generator) and the granularity task bank again",
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
    est.add_argument(
        "--scores",
        required=True,
        help="Parquet file with the scores columns, or a data folder written by `clcg run` (path or URL)",
    )
    est.add_argument("--out", required=True, help="JSON file to write (path or URL)")
    est.add_argument("--replicates", type=POSITIVE_INT, help="bootstrap replicates (default: study.yaml)")
    est.add_argument("--seed", type=NON_NEGATIVE_INT, help="bootstrap seed (default: study.yaml)")
    est.add_argument("--full", action="store_true", help="the whole suite (study_results.json), not only H1")
    est.add_argument("--articles", help="Parquet with doc_id, published (for H2 with --full)")
    est.add_argument("--fertility", help="Parquet with language, fertility (with --full)")
    est.add_argument("--replication", help="scores Parquet of a run on another corpus (with --full)")
    est.set_defaults(func=cmd_estimate)

    rep = sub.add_parser("report", help="render the HTML report from study_results.json")
    common(rep)
    rep.add_argument("--out", help="HTML file to write (default <data>/report.html)")
    rep.set_defaults(func=cmd_report)
    return parser


# ``pkg.module.SomeError: `` prefixes (from Dagster failures or chained errors) say nothing to a
# user; the message after them does.
_CLASS_PATH = re.compile(r"\b(?:[A-Za-z_]\w*\.)+[A-Z]\w*(?:Error|Exception|Interrupt)\b:?\s*")


def error_message(exc: BaseException) -> str:
    """One line naming what is wrong, without internal class paths."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc) or type(exc).__name__
    text = _CLASS_PATH.sub("", text)
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


INTERRUPTED = "interrupted; run again to resume (completed calls are cached)"


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A warning as one ``warning:`` line: Python's default names our source file and code line."""
    text = _CLASS_PATH.sub("", str(message))
    _say("warning: " + " ".join(part.strip() for part in text.splitlines() if part.strip()))


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    args = build_parser().parse_args(argv)
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        _say(INTERRUPTED)
        return 130
    except BaseException as exc:
        # Dagster turns Ctrl-C inside a run into its own BaseException; it means the same.
        if type(exc).__name__ == "DagsterExecutionInterruptedError":
            _say(INTERRUPTED)
            return 130
        if not isinstance(exc, Exception):
            raise
        return _fail(exc, args)
    finally:
        warnings.showwarning = previous


def _fail(exc: Exception, args: argparse.Namespace) -> int:
    """One clear line instead of a traceback for expected failures; anything else is a bug."""
    from clcg_pipeline.config import ConfigError

    expected = (ConfigError, OSError, ValueError, RuntimeError)
    if isinstance(exc, expected) and not getattr(args, "debug", False):
        _say(f"error: {error_message(exc)}")
        return 2 if isinstance(exc, UsageError) else 1
    raise exc


if __name__ == "__main__":
    sys.exit(main())
