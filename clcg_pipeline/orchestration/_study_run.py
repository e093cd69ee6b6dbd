"""Running a whole study through Dagster on the persistent instance (what ``clcg run`` does).

Each job runs in process against ``DAGSTER_HOME``'s instance, so every run, materialization
and asset check shows in the UI (``make dev``) exactly as if launched from there.

A partition is skipped only when it is up to date *in this data folder* (``_freshness``).
Each model's stale responses partitions are one Dagster run over their language range (the run
the daemon's backfill and the UI's Materialize launch); several models' runs go at a time
(``parallel``), each in a forked worker process (``_workers``). The steps themselves are in
``_study_steps``.
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

from clcg_pipeline.config import ProjectConfig, ensure_dagster_home, load_config
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.orchestration._partition_run import INTERRUPTS, StudyRunError
from clcg_pipeline.orchestration._plan import select_models
from clcg_pipeline.orchestration._study_steps import StudyRequest, StudyRun
from clcg_pipeline.orchestration._summary import RunSummary
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
    """Between Dagster runs, note Ctrl-C instead of raising it wherever the program happens to be.

    A KeyboardInterrupt raised inside a database finalizer prints a stray traceback; the run
    loop checks the flag at safe points and stops cleanly. Inside a run Dagster installs its own
    handler and fails the run, which ``StudyRun.execute`` turns into the same clean stop.

    Dagster's handler raises wherever the main thread happens to be; inside a garbage
    collector callback (SQLAlchemy has some) Python prints "Exception ignored" and the run goes
    on as if nothing happened. The signal's wakeup pipe records every signal at C level,
    whichever Python handler then runs, so such a Ctrl-C still stops the study at the next
    safe point; the lost exception's "Exception ignored" traceback is not printed (the one
    line ``clcg run`` prints says it).
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

    Each model's stale responses partitions are one Dagster run over their languages (one per
    contiguous stretch of them). Up to ``parallel`` models' runs go at once, each in a worker
    process (forked, so nothing is imported again) on the same instance, while the claims,
    concurrency slots and spend ledger of ``calls/_coord.py`` hold across the workers: no
    call is paid twice, a model's limit binds its calls. With ``budget_usd`` the runs go one
    after another, each capped by what the previous ones left (a limit for this command
    only, which the study-wide ledger does not express). Every paid op gets it, not only the
    responses: the confusion writer (study inputs), the granularity tasks and their judges
    (each responses run shares one budget: ``calls.run_budget``), and the
    error-taxonomy judges and keypoint writer (analysis), which get whatever is left.

    With ``calls_ahead`` (online, no ``budget_usd``), each hosted model's calls of its stale
    partitions are sent first in one stream: its ``model_calls`` run, the one the daemon and
    a backfill launch (``_model_calls``), in a worker of its own, every model's at once; the
    model's runs then find them cached and record them as their own, paid by the stream's run.
    """
    if parallel < 1:
        raise StudyRunError(f"parallel must be at least 1, got {parallel}")
    config = load_config(config_dir)
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
        summary = _run_steps(run)
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


def _run_steps(run: StudyRun) -> RunSummary:
    """The study, step by step: what is stale, corpus and inputs, the models' streams and
    responses runs, the analysis and report; the summary of what ran and was paid."""
    run.check_keys()  # what is stale decides which models need a key
    run.run_corpus()
    run.run_study_inputs()
    run.run_responses()  # planned after the inputs: new items make every partition stale
    run.run_analysis()
    return run.summary
