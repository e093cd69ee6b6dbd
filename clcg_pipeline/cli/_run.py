"""``clcg run``: the checks made before anything runs, the up-to-date fast path, the run itself
under a progress bar, and what is printed after it."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from clcg_pipeline.cli._closing import closing_line, study_lines
from clcg_pipeline.cli._common import (
    UsageError,
    auxiliary_ids,
    check_config_in_reach,
    check_selection,
    console,
    csv,
    dirs,
    outside_project,
    say,
)

if TYPE_CHECKING:
    from clcg_pipeline.orchestration import RunSummary

UP_TO_DATE = "everything is up to date ({partitions} partitions): no Dagster run, 0 new model calls"


def cmd_run(args: argparse.Namespace) -> int:
    """Check the request, then run what is not up to date and print the H1 table."""
    from clcg_pipeline.config import load_config

    config_dir, data_dir = dirs(args)
    check_config_in_reach(args, config_dir)
    check_data_folder(data_dir)
    # Bad config or an unknown model/language is reported before any progress bar is drawn.
    config = load_config(config_dir)
    check_selection(
        "--models", csv(args.models), [m.id for m in config.models.evaluated], auxiliary_ids(config.models)
    )
    check_selection("--languages", csv(args.languages), config.languages.isos)
    _check_languages_covered(config, csv(args.languages))
    _check_sources_exist(config, config_dir)
    if outside_project(args):
        _say_where(config_dir, data_dir)
    partitions = (
        None
        if args.force or args.regenerate_items
        else _complete_run_holds(args, config, config_dir, data_dir)
    )
    offline = [model.id for model in config.models.models if model.provider == "offline"]
    if partitions is not None:
        # The folder is as the last complete run for this request, in this folder, left it (its
        # catalog too): no Dagster needed, and no catalog fetched (on s3://, a download).
        console.print(UP_TO_DATE.format(partitions=partitions))
        _print_study_spend(data_dir, offline)
    else:
        # A copy misses the memo (it names its folder); its catalog is rebuilt before the full
        # check, which then writes the memo for this folder.
        _refresh_copied_catalog(data_dir)
        _say_coordination(data_dir)
        _start_ledger(data_dir)
        _print_run_summary(_run_with_progress(args, config_dir, data_dir), offline)
    _print_study_results(data_dir)
    return 0


def _refresh_copied_catalog(data_dir: str) -> None:
    """A copied folder (an ``s3://`` one copied to disk) keeps a catalog that reads the original:
    rebuilt here, as a run with nothing to do will not (only ``clcg.duckdb`` is rewritten)."""
    from clcg_pipeline.storage import default_catalog_path, refresh_catalog

    if refresh_catalog(data_dir):
        console.print(f"catalog rebuilt for this folder: {default_catalog_path(data_dir)}")


def _say_coordination(data_dir: str) -> None:
    """Say once how this run's calls coordinate; a shared cache with local file locks is a
    usage error here, before any run or call (``calls.check_coordination``)."""
    from upath import UPath

    from clcg_pipeline.calls import CoordinationRefused, check_coordination

    try:
        backend = check_coordination(str(UPath(data_dir) / "cache" / "calls"))
    except CoordinationRefused as exc:
        raise UsageError(str(exc)) from None
    console.print(backend.line(), markup=False, highlight=False, soft_wrap=True)


def _say_where(config_dir: str, data_dir: str) -> None:
    """Outside a project, name the config, data folder and Dagster instance the run will use."""
    from clcg_pipeline.config import ensure_dagster_home

    say(
        f"note: no assets_config/ in {Path.cwd()} and no --config or $CLCG_CONFIG_DIR: using the "
        f"config {config_dir}, the data folder {data_dir} and the Dagster instance {ensure_dagster_home()}"
    )


def _check_languages_covered(config: Any, languages: list[str] | None) -> None:
    """Selected languages that no source has a file for, and nothing else: a usage error."""
    if languages:
        # Imported only here: the up-to-date fast path imports no Dagster (storage/_snapshot.py).
        from clcg_pipeline.orchestration import StudyRunError, covered_languages

        try:
            covered_languages(config, languages)
        except StudyRunError as exc:
            raise UsageError(f"--languages: {exc}") from None


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


def _check_sources_exist(config: Any, config_dir: str) -> None:
    """A source path that is not there is a config error, said before any progress bar is drawn."""
    from upath import UPath

    for index, source in enumerate(config.sources.sources):
        if source.path and not UPath(source.path).exists():
            raise ValueError(
                f"{config_dir}/sources.yaml: sources[{index}] ({source.name}).path: "
                f"{source.path} does not exist"
            )


def _complete_run_holds(args: argparse.Namespace, config: Any, config_dir: str, data_dir: str) -> int | None:
    """The partitions up to date when the data folder is as a complete run asked the same left it."""
    from clcg_pipeline.config import code_versions, ensure_dagster_home
    from clcg_pipeline.storage import complete_run_holds, complete_run_request

    ensure_dagster_home()  # where the source files' content hashes are kept between runs
    asked = complete_run_request(
        config_dir=config_dir,
        versions=code_versions(config),
        models=csv(args.models),
        languages=csv(args.languages),
        mode=args.mode,
        budget_usd=args.budget,
        inbox=config.study.human_validation.inbox,
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
            models=csv(args.models),
            languages=csv(args.languages),
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


def _start_ledger(data_dir: str) -> None:
    """Before any run pays: a folder without the ledger of runs its closing lines said gets
    one, so that if this command is killed, the next one says what it paid (``storage._run_spend``)."""
    from clcg_pipeline.storage import start_ledger

    start_ledger(data_dir)


def _print_study_spend(data_dir: str, offline: list[str]) -> None:
    """A run with nothing to do still says what earlier runs paid unsaid, and the study total."""
    from clcg_pipeline.storage import study_spend

    study = study_spend(data_dir, ())
    unsaid = len(study.unsaid_runs)
    for line in study_lines(study.paid_usd, study.unsaid_by_model, unsaid, offline, study.lost):
        console.print(line, markup=False, highlight=False)


def _print_run_summary(summary: RunSummary, offline: list[str]) -> None:
    """What ran, what was up to date, the new calls and their cost, earlier runs' unsaid spend,
    the study total, and budget stops."""
    for note in summary.annotation_files:
        console.print(f"annotation import: {note}", markup=False, highlight=False)
    if summary.annotation_files_refused:
        console.print(
            f"[yellow]{summary.annotation_files_refused} annotation file(s) not imported "
            "(reasons above; a refused file changes nothing)[/yellow]"
        )
    if summary.reported_current:
        console.print(reported_line(summary.reported_current), markup=False, highlight=False)
    study = study_lines(
        summary.study_paid_usd, summary.unsaid_by_model, summary.unsaid_runs, offline, summary.lost_at_kill
    )
    if summary.runs == 0 and summary.new_calls == 0 and not summary.budget_exhausted:
        console.print(UP_TO_DATE.format(partitions=summary.skipped))
        for line in study:
            console.print(line, markup=False, highlight=False)
        return
    console.print(closing_line(summary, offline), markup=False, highlight=False)
    ahead = summary.calls_ahead
    if ahead is not None and ahead.sent:
        console.print(
            f"{ahead.sent} of them sent ahead of their partitions' runs, one stream per model, in "
            f"{ahead.seconds:.1f}s ({ahead.sent / max(ahead.seconds, 1e-9):.1f} calls/s)"
        )
    if ahead is not None and ahead.refused:
        for model_id, reason in ahead.refused.items():
            console.print(f"[yellow]{model_id}: calls not sent ahead: {reason}[/yellow]")
    # Then what others paid, and the study's total: each labelled, none added to this run's.
    for text in study:
        console.print(text, markup=False, highlight=False)
    if budget := summary.budget_line():
        console.print(f"[yellow]{escape(budget)}[/yellow]")


def reported_line(count: int) -> str:
    """The line saying ``run_study`` told the Dagster instance what the folder already had."""
    return (
        f"told the Dagster instance about {count} partitions and assets already current in this "
        "folder (a copied folder or a new DAGSTER_HOME): its UI and daemon now see them built"
    )


def _print_study_results(data_dir: str) -> None:
    """The H1 table of study_results.json, and where the outputs are."""
    from upath import UPath

    from clcg_pipeline.cli._tables import leaderboard_table
    from clcg_pipeline.report import format_h1_table, new_model_lines
    from clcg_pipeline.storage import default_catalog_path, read_json

    root = UPath(data_dir)
    results = read_json(root / "study_results.json")
    languages = results.get("languages")
    # The model just added first: what its owner asks next; its query reads this folder.
    # Not wrapped and no markup: the last line ends with a command to copy as it is.
    for line in new_model_lines(results, data_option=data_option(data_dir)):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if (board := leaderboard_table(results)) is not None:  # then the models ranked, tie groups
        console.print(board)
    table = format_h1_table(results["h1"], languages, results=results)
    # The caption goes under the table as whole lines: inside it, it wrapped at the table's width.
    caption, table.caption = table.caption, None
    console.print(table)
    if isinstance(caption, str):
        console.print(caption, highlight=False)
    console.print(f"data:    {data_dir}")
    console.print(f"report:  {root / 'report.html'}")
    console.print(f"results: {root / 'study_results.json'}")
    console.print(f"catalog: {default_catalog_path(data_dir)}  (try: {query_hint(data_dir)})", markup=False)


def query_hint(data_dir: str) -> str:
    """The ``clcg query`` command that reads ``data_dir``'s catalog, typed as shown: ``--data`` is
    named unless the folder is the one a bare ``clcg query`` reads (``$CLCG_DATA_DIR`` or ./clcg_data)."""
    data = data_option(data_dir)
    return f"clcg query{' ' if data else ''}{data} --named clcg_by_language"


def data_option(data_dir: str) -> str:
    """``--data <folder>`` (shell-quoted) for a ``clcg`` command to read ``data_dir``; "" when
    it is the folder a bare command reads (``$CLCG_DATA_DIR`` or ./clcg_data)."""
    import shlex

    from clcg_pipeline.config import default_data_dir

    return "" if _same_folder(data_dir, default_data_dir()) else f"--data {shlex.quote(data_dir)}"


def _same_folder(left: str, right: str) -> bool:
    """Whether two data folders are one (a local one however written: relative, absolute, ``file://``)."""
    from upath import UPath

    from clcg_pipeline.storage import is_local

    if is_local(left) and is_local(right):
        return os.path.abspath(UPath(left).path) == os.path.abspath(UPath(right).path)
    return left.rstrip("/") == right.rstrip("/")
