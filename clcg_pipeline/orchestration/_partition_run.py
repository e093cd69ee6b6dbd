"""Running one job partition in process, and the one line that says why a run failed.

The CLI prints its own progress and one root-cause line per failure; every event (stack
traces included) is still stored on the instance and shown in the UI.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from clcg_pipeline.orchestration._jobs import runs_under_code_location

# The console logger stays silent: ``clcg run`` prints its own progress (see above).
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
INTERRUPTS = ("KeyboardInterrupt", "DagsterExecutionInterruptedError")


class StudyRunError(RuntimeError):
    """A job of the study failed; the message names the job and partition."""


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
