"""Running one job partition in process, and the one line that says why a run failed.

The CLI prints its own progress and one root-cause line per failure; every event (stack
traces included) is still stored on the instance and shown in the UI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from clcg_pipeline.orchestration._jobs import runs_under_code_location
from clcg_pipeline.partitions import LANGUAGE_DIMENSION, RANGE_END_TAG, RANGE_START_TAG, response_key

# The console logger stays silent: ``clcg run`` prints its own progress (see above).
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
INTERRUPTS = ("KeyboardInterrupt", "DagsterExecutionInterruptedError")


class StudyRunError(RuntimeError):
    """A job of the study failed; the message names the job and partition (or range)."""


@dataclass(frozen=True)
class LanguageRange:
    """Languages of one model, contiguous in the partitions definition's order: one
    ``responses_job`` run, as the daemon's backfill or the UI's Materialize launches it."""

    model_id: str
    isos: tuple[str, ...]

    @property
    def keys(self) -> list[str]:
        return [str(response_key(iso, self.model_id)) for iso in self.isos]

    @property
    def partition(self) -> str | None:
        """The partition key of a range of one language (a run of one partition), else None."""
        return self.keys[0] if len(self.isos) == 1 else None

    @property
    def tags(self) -> dict[str, str]:
        """The range tags of a run over several languages (a one-language run has its key)."""
        return range_tags(self.keys)

    @property
    def name(self) -> str:
        """How a failure names it: ``en|m`` or ``en|m..sw|m``."""
        return span_name(self.keys)

    @property
    def label(self) -> str:
        """Its progress line."""
        count = f" ({len(self.isos)} languages)" if len(self.isos) > 1 else ""
        return f"{self.model_id} / {span_name(self.isos)}{count}"


def span_name(keys: Sequence[str]) -> str:
    """A run's keys as a failure or progress line names them: ``en`` or ``en..sw``."""
    return keys[0] if len(keys) == 1 else f"{keys[0]}..{keys[-1]}"


def partition_order(defs: dg.Definitions, job: str) -> list[str]:
    """The languages of ``job``'s partitions definition in its order, which a range run spans."""
    partitions = defs.resolve_job_def(job).partitions_def
    if isinstance(partitions, dg.MultiPartitionsDefinition):
        partitions = partitions.get_partitions_def_for_dimension(LANGUAGE_DIMENSION)
    assert partitions is not None
    return list(partitions.get_partition_keys())


def range_tags(keys: Sequence[str]) -> dict[str, str]:
    """The tags of a run over ``keys`` (contiguous): none for one key (a partition run)."""
    return {} if len(keys) == 1 else {RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]}


def stretches(order: Sequence[str], stale: Sequence[str]) -> list[tuple[str, ...]]:
    """The contiguous stretches of ``stale`` (partition keys to run) in ``order``: one run each,
    so a key between them that was left out, or is up to date, is not run again (prepared,
    scored and rewritten for nothing). A new model or new items: one run per model.
    """
    wanted = set(stale)
    found: list[list[str]] = [[]]
    for key in order:
        if key in wanted:
            found[-1].append(key)
        elif found[-1]:
            found.append([])
    return [tuple(keys) for keys in found if keys]


def execute_job(
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    job: str,
    partition: str | None,
    run_config: dict[str, Any],
    tags: dict[str, str],
    run_id: str | None = None,
) -> dg.ExecuteInProcessResult:
    """One quiet run of ``job[partition]`` on ``instance``, listed under the code location."""
    with runs_under_code_location(instance):
        return defs.resolve_job_def(job).execute_in_process(
            instance=instance,
            partition_key=partition,
            run_config={**QUIET, **run_config},
            tags=tags,
            raise_on_error=False,
            run_id=run_id,
        )


def clean_message(error: Any) -> tuple[str, bool]:
    """The error's message without Python's ``module.path.ClassName:`` prefix; True if ours.

    ``SerializableErrorInfo.message`` is ``traceback.format_exception_only`` output, which
    starts with the fully qualified class name; a user needs the sentence, not the class.
    """
    message = str(error.message).strip()
    head, sep, rest = message.partition(": ")
    qualified = head.split(".")[-1] == error.cls_name and " " not in head
    # dg.Failure carries a sentence written for the user (its description).
    ours = qualified and (head.startswith("clcg_pipeline.") or error.cls_name == "Failure")
    if qualified and sep:
        message = rest.strip()
    elif qualified:
        message = ""
    if ours:
        return message, True
    return (f"{error.cls_name}: {message}" if message else error.cls_name), False


def failure_of(result: dg.ExecuteInProcessResult) -> tuple[str, bool, bool]:
    """(root-cause line, raised by this project's code, was an interrupt) of a failed run."""
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None) if event.is_failure else None
        if error is None:
            continue
        chain = [error]
        while chain[-1].cause is not None:
            chain.append(chain[-1].cause)
        if any(e.cls_name in INTERRUPTS for e in chain):
            return "interrupted", False, True
        message, ours = clean_message(chain[-1])
        return message, ours, False
    return "see the run in the Dagster UI (make dev)", False, False
