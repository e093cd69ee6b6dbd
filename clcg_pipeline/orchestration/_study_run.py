"""Running a whole study through Dagster on the persistent instance (what ``clcg run`` does).

Each job runs in process against ``DAGSTER_HOME``'s instance, so every run, materialization
and asset check shows in the UI (``make dev``) exactly as if launched from there. The steps
are in ``_study_steps``; several models' runs go at a time in forked workers (``_workers``).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import dagster as dg

from clcg_pipeline.config import ProjectConfig, ensure_dagster_home
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.orchestration._partition_run import INTERRUPTS, StudyRunError
from clcg_pipeline.orchestration._plan import select_models
from clcg_pipeline.orchestration._records_sync import report_folder_records, runs_in_progress
from clcg_pipeline.orchestration._study_steps import StudyRequest, StudyRun
from clcg_pipeline.orchestration._summary import RunSummary
from clcg_pipeline.resources import load_study_config
from clcg_pipeline.storage import complete_run_request, write_complete_run

# Models' responses runs go this many at a time (``clcg run --parallel``): two keep one model
# calling while another's run starts, prepares or scores, and use both cores of a small
# machine for the offline provider. A study of one model is one run: nothing to run beside it.
DEFAULT_PARALLEL = 2


def _check_selection(config: ProjectConfig, languages: Sequence[str] | None) -> list[str]:
    isos = list(languages) if languages else config.languages.isos
    unknown = [iso for iso in isos if iso not in config.languages.isos]
    if unknown:
        raise StudyRunError(
            f"unknown language(s) {', '.join(unknown)}: languages.yaml has {', '.join(config.languages.isos)}"
        )
    return isos


def covered_languages(config: ProjectConfig, isos: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the selected languages some source has a file for, the others), in selection order.

    The others have no partition (``corpus.study_coverage``): nothing to load or ask there. If
    no selected language is covered, nothing can run and the request is refused.
    """
    uncovered = set(study_coverage(config).uncovered)
    covered = [iso for iso in isos if iso not in uncovered]
    if not covered:
        source = config.sources.primary
        raise StudyRunError(
            f"no source has a file for {', '.join(isos)}: the corpus source {source.name!r} "
            f"({source.path or source.kind}) covers none of the selected languages"
        )
    return covered, [iso for iso in isos if iso in uncovered]


# Signals that stop a study: Ctrl-C, and SIGTERM, which Dagster points at the same handler.
_STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def _deferred_interrupts() -> Iterator[Callable[[], bool]]:
    """Between Dagster runs, note Ctrl-C instead of raising it wherever the program happens to be
    (inside a database finalizer it prints a stray traceback); the steps check it at safe points.

    Inside a run, Dagster's handler raises wherever the main thread is; inside a garbage
    collector callback (SQLAlchemy has some) Python prints "Exception ignored" and goes on. The
    signal's wakeup pipe records every signal at C level, whichever handler runs, so such a
    Ctrl-C still stops the study at the next safe point, and its traceback is not printed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    received = {"interrupt": False}

    def note(_signum: int, _frame: object) -> None:
        received["interrupt"] = True

    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)

    def interrupted() -> bool:
        with contextlib.suppress(BlockingIOError):
            while chunk := reader.recv(64):
                received["interrupt"] |= any(signum in _STOP_SIGNALS for signum in chunk)
        return received["interrupt"]

    previous_hook = sys.unraisablehook

    def quiet_lost_interrupts(unraisable: Any) -> None:
        if type(unraisable.exc_value).__name__ in INTERRUPTS:
            received["interrupt"] = True
            return
        previous_hook(unraisable)

    previous = signal.signal(signal.SIGINT, note)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    sys.unraisablehook = quiet_lost_interrupts
    try:
        yield interrupted
    finally:
        sys.unraisablehook = previous_hook
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous)
        reader.close()
        writer.close()


def _report_what_was_current(
    instance: dg.DagsterInstance, run: StudyRun, data_dir: str, config: ProjectConfig
) -> int:
    """Tell the instance the partitions this run found current by the folder's records and
    skipped, if it has never materialized them (a copied folder, another ``DAGSTER_HOME``): else
    its UI shows them missing and its daemon would rebuild them. A run of another process still
    going may be writing records: the daemon's sensor reports them once it is done. Returns how
    many it told (``clcg run`` says so once)."""
    if runs_in_progress(instance):
        return 0
    return len(report_folder_records(instance, run.defs, data_dir, config))


def run_study(
    *,
    config_dir: str,
    data_dir: str,
    models: Sequence[str] | None = None,
    languages: Sequence[str] | None = None,
    budget_usd: float | None = None,
    mode: str = "online",
    force: bool = False,
    regenerate_items: bool = False,
    on_step: Callable[[str, int, int], None] | None = None,
    parallel: int = DEFAULT_PARALLEL,
    calls_ahead: bool = True,
) -> RunSummary:
    """Materialize the whole graph: corpus, study inputs, responses, analysis.

    Partitions up to date in ``data_dir`` are skipped (``force`` re-runs them); model calls
    are never repeated either way, thanks to the cache. Ctrl-C stops after cleaning up and
    raises a plain ``KeyboardInterrupt``; what was stored stays, and the next run resumes.

    Each model's stale responses partitions are one Dagster run per contiguous stretch of
    languages; up to ``parallel`` models' runs go at once in forked workers, while
    ``calls/_coord.py`` keeps any call from being paid twice. With ``budget_usd`` the runs go
    one after another, every paid op capped by what the previous ones left. With
    ``calls_ahead`` (online, no budget), each hosted model's calls are first sent in one stream,
    its ``model_calls`` run, whose answers its runs then find cached.
    """
    if parallel < 1:
        raise StudyRunError(f"parallel must be at least 1, got {parallel}")
    config = load_study_config(config_dir)
    try:
        model_ids = select_models(config, models)
    except ValueError as exc:
        raise StudyRunError(str(exc)) from None
    isos, uncovered = covered_languages(config, _check_selection(config, languages))

    request = StudyRequest(
        config_dir=config_dir,
        data_dir=data_dir,
        model_ids=model_ids,
        isos=isos,
        budget_usd=budget_usd,
        mode=mode,
        force=force,
        regenerate_items=regenerate_items,
        parallel=parallel,
        calls_ahead=calls_ahead,
    )
    ensure_dagster_home()
    with _deferred_interrupts() as interrupted, dg.DagsterInstance.get() as instance:
        run = StudyRun(instance, config, request, on_step=on_step, interrupted=interrupted)
        run.check_keys()  # what is stale decides which models need a key
        run.run_corpus()
        run.run_study_inputs()
        run.run_responses()  # planned after the inputs: new items make every partition stale
        run.run_analysis()
        reported = _report_what_was_current(instance, run, data_dir, config)
        summary = run.summary
        summary.reported_current = reported
        summary.uncovered_languages = uncovered
        if run.everything_current():
            # The next run asked the same finds the folder as it is and needs no Dagster at all.
            asked = complete_run_request(
                config_dir=config_dir,
                versions=run.versions,
                models=list(models) if models else None,
                languages=list(languages) if languages else None,
                mode=mode,
                budget_usd=budget_usd,
                inbox=config.study.human_validation.inbox,
            )
            write_complete_run(data_dir, asked, run.partition_count)
        return summary
