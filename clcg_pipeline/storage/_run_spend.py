"""What one command's runs paid, by calls table and model, and what earlier runs paid that no
closing line has said.

``clcg run``'s closing line says what this command's runs paid (:func:`run_spend`: by table and
by model, so that the offline models' calls, which no provider bills, can be said apart) and,
once, what earlier runs paid that no closing line said (:func:`study_spend`): a run killed with
kill -9 (its payments are in the study total, from the call cache or from the tables that later
record them), or a run the daemon or the UI started. Both read the one spend view
(``storage/_paid.py``); what is new here is the ledger that tells those runs apart.

The ledger: ``<data>/cache/closing_lines/``, one JSON file per closing line that said a run
(its own runs, the earlier ones it reported), written once and never rewritten, so hosts
sharing the folder cannot lose each other's entries. It lives under ``cache/`` because the
complete-run memo (``_snapshot``) and releases leave that folder out, and the catalog finds no
table there: a no-op rerun that reports something does not spoil the memo.

A folder with no ledger yet (from before it was kept) starts one that holds every run paid
so far, reported by no line: their spend was in the study totals of their time. ``clcg run``
starts it before its first run pays (:func:`start_ledger`), so a first run killed in a new
folder is reported by the next one.

Only a run that has ended is an earlier one (:func:`ended_runs`): one the Dagster instance
says finished, or this host's whose process is gone (kill -9), and not one of a ``clcg run``
still under way (``closing_lines/under_way/``: one mark per command, from its start to its
closing line). Another host's run still going is said by that host's own closing line.

The calls a killed process had in flight (sent, never answered: outcome ``lost_at_kill``, from
the intent logs, ``storage/_intents.py``) are said apart, once each (:class:`LostCalls`, the
ledger's ``lost`` keys): the provider may have billed them, at a cost only estimated. They
belong to the run that sent them, are in the study total, and are not in the earlier runs'
figure (that one says what the record holds as answered and paid).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from upath import UPath

if TYPE_CHECKING:
    import dagster as dg

from clcg_pipeline.storage._files import data_root, write_json
from clcg_pipeline.storage._intents import COST_UNKNOWN, ESTIMATED_FROM_ANSWER, LOST_OUTCOME
from clcg_pipeline.storage._paid import CALL_TABLE_STEPS, STUDY_BUDGET_ERROR, call_spend, this_host, usd_sum

LEDGER = "closing_lines"
COMMANDS = "under_way"  # in the ledger's folder: one mark per ``clcg run`` under way
UNKNOWN_MODEL = "unknown model"  # a cache entry from before entries named their model id
# DagsterRunStatus values of a run that can pay no more.
_FINISHED = frozenset({"SUCCESS", "FAILURE", "CANCELED"})


@dataclass(frozen=True)
class RunSpend:
    """What a set of runs paid in some calls tables, as the spend view counts it."""

    #: (calls table, model) -> (paid calls, USD).
    by_model: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)
    #: Calls a budget left unmade, by budget ("run": --budget or a run's budget_usd; "study").
    skipped_budget: dict[str, int] = field(default_factory=dict)

    @property
    def paid_usd(self) -> float:
        return sum(usd for _, usd in self.by_model.values())


@dataclass(frozen=True)
class LostCalls:
    """The calls one killed run had in flight, not said before: the provider may have billed them."""

    run: str | None  # the run that sent them (None: a send that named none)
    calls: int
    usd: float  # the estimate the spend counts for them
    from_answer: int = 0  # priced at the usage of the same call's answer, cached since (a rerun's)
    worst_case: int = 0  # priced at the worst case the run's budget reserved for it
    unknown: int = 0  # neither: cost unknown, $0 counted


@dataclass(frozen=True)
class StudySpend:
    """The study's spend in all, and what earlier runs no closing line reported paid."""

    paid_usd: float = 0.0  # every calls table and the call cache's unrecorded payments
    #: Earlier runs whose payments no closing line had said (said now, by this command's).
    unsaid_runs: tuple[str, ...] = ()
    #: model -> (paid calls, USD) of those runs.
    unsaid_by_model: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: The calls in flight when a run was killed that no closing line said, by run (said now).
    lost: tuple[LostCalls, ...] = ()

    @property
    def unsaid_usd(self) -> float:
        return sum(usd for _, usd in self.unsaid_by_model.values())


def ledger_dir(data_dir: str | os.PathLike[str]) -> UPath:
    """``<data>/cache/closing_lines``: the runs some closing line has said."""
    return data_root(data_dir) / "cache" / LEDGER


def run_spend(
    data_dir: str | os.PathLike[str],
    *,
    tables: Iterable[str] = tuple(CALL_TABLE_STEPS),
    partition: Mapping[str, str] | None = None,
    runs: Iterable[str],
) -> RunSpend:
    """What the Dagster ``runs`` paid in ``tables`` (one ``partition``'s, if given), by table and model."""
    rows = call_spend(data_dir, tables=tables, partition=partition)
    rows = rows[rows["run"].isin(set(runs))]
    skipped = rows[rows["outcome"] == "skipped_budget"]
    budgets = skipped["error"].map(lambda e: "study" if e == STUDY_BUDGET_ERROR else "run")
    return RunSpend(
        by_model=_paid_by(rows, ["calls_table", "model"]),
        skipped_budget={str(k): int(v) for k, v in budgets.value_counts().items()},
    )


def start_ledger(data_dir: str | os.PathLike[str]) -> None:
    """Start the ledger of a folder that has none, with every run paid so far (said by the
    study totals of their time), and mark this command as under way (:func:`_mark_command`)."""
    if _ledger(data_dir) is None:
        paid = _paid(call_spend(data_dir))
        _write_entry(data_dir, before=_paid_runs(paid), lost=_lost_keys(paid))
    _mark_command(data_dir)


def study_spend(
    data_dir: str | os.PathLike[str], own_runs: Iterable[str], instance: dg.DagsterInstance | None = None
) -> StudySpend:
    """The study's spend, and what earlier runs (not ``own_runs``) paid that no closing line
    said; those and the ``own_runs`` that paid are written to the ledger as said, so the next
    closing line does not say them again. Nothing is written when there is nothing new to say
    (a rerun with nothing to do leaves the folder as it was).

    An earlier run is one that has ended (:func:`ended_runs`, asking ``instance`` or the one
    ``DAGSTER_HOME`` names): a run still going, on another host say, is left to its own
    closing line, which says it as its own.

    The calls lost at a kill that no closing line said are said apart (``lost``), whoever's run
    sent them (its process is gone: that is how they are known), and left out of the earlier
    runs' figure.

    On an object store the study's rows are remembered while nothing they come from changes
    (``call_spend``'s ``memo``): a rerun with nothing to do reads no calls table nor cache segment."""
    paid = _paid(call_spend(data_dir, memo=True))
    runs, own = _paid_runs(paid), set(own_runs)
    ledger = _ledger(data_dir)
    lost = paid[paid["outcome"] == LOST_OUTCOME]
    if ledger is None:  # a folder from before the ledger: what was paid before is not news
        if own:  # a run started it; a rerun with nothing to do writes nothing
            _write_entry(data_dir, own=runs & own, before=runs - own, lost=_lost_keys(lost))
        unsaid: set[str] = set()
        lost = lost.iloc[:0]
    else:
        said = _said_in(ledger, _RUN_KEYS)
        unsaid = ended_runs(paid, runs - said - own, instance, _commands_under_way(data_dir))
        lost = lost[~_row_keys(lost).isin(_said_in(ledger, ("lost",)))]
        if unsaid or (runs & own) - said or len(lost):
            _write_entry(data_dir, own=(runs & own) - said, unsaid=unsaid, lost=_lost_keys(lost))
    _unmark_command()  # after the entry: another host finds this command's runs said or under way
    earlier = paid[paid["run"].isin(unsaid) & (paid["outcome"] != LOST_OUTCOME)]
    by_model = {model: calls for (model,), calls in _paid_by(earlier, ["model"]).items()}
    return StudySpend(
        paid_usd=usd_sum(paid["paid_usd"]),
        unsaid_runs=tuple(sorted(_paid_runs(earlier))),
        unsaid_by_model=by_model,
        lost=_lost_by_run(lost),
    )


def _row_keys(rows: pd.DataFrame) -> pd.Series:
    """One key per lost call's row (its run, call id and send time: a call sent again after a
    kill, and lost again, is another payment)."""
    if not len(rows):
        return pd.Series([], dtype=object)
    return rows["run"].astype(str) + "|" + rows["call_id"].astype(str) + "|" + rows["paid_at"].astype(str)


def _lost_keys(paid: pd.DataFrame) -> list[str]:
    return sorted(_row_keys(paid[paid["outcome"] == LOST_OUTCOME]))


def _lost_by_run(lost: pd.DataFrame) -> tuple[LostCalls, ...]:
    """``lost``'s calls by the run that sent them, with how each one's cost is known."""
    found = []
    for run, group in lost.groupby(lost["run"].fillna(""), sort=True):
        notes = group["error"]
        answered, unknown = int((notes == ESTIMATED_FROM_ANSWER).sum()), int((notes == COST_UNKNOWN).sum())
        found.append(
            LostCalls(
                run=str(run) or None,
                calls=len(group),
                usd=usd_sum(group["paid_usd"]),
                from_answer=answered,
                worst_case=len(group) - answered - unknown,
                unknown=unknown,
            )
        )
    return tuple(found)


def ended_runs(
    paid: pd.DataFrame,
    candidates: set[str],
    instance: dg.DagsterInstance | None = None,
    commands: Iterable[Command] = (),
) -> set[str]:
    """The ``candidates`` (runs that paid ``paid``'s rows) that can pay no more.

    A run has ended when the Dagster instance says it finished (succeeded, failed, canceled),
    or when it is still ``STARTED`` there but its process is gone: a run of this host (every
    payment names this host) whose process is not running (kill -9 leaves a run ``STARTED``
    for ever; it is marked failed here, as Dagster's run monitoring would). Another host's
    run still ``STARTED`` is that host's to say: its own closing line, or its rerun after a
    kill. A run the instance does not know (another Dagster home, a copied data folder) is
    taken as ended: nothing tells otherwise. Without an instance (no ``DAGSTER_HOME``, the
    up-to-date path of a project that never ran Dagster) every candidate is taken as ended.

    A run that ended while the ``clcg run`` that started it goes on (one of ``commands``, of
    the run's host, started before it) is that command's: its closing line says it.
    """
    if not candidates:
        return set()
    commands = tuple(commands)
    with _opened(instance) as found:
        if found is None:
            return set(candidates)
        ended = set()
        for run in candidates:
            hosts = _hosts(paid, run)
            created = _has_ended(found, run, hosts)
            if created is not None and not any(c.host in hosts and c.started_at <= created for c in commands):
                ended.add(run)
        return ended


@contextlib.contextmanager
def _opened(instance: dg.DagsterInstance | None) -> Iterator[dg.DagsterInstance | None]:
    """``instance``, or the one ``DAGSTER_HOME`` names (None when it names no folder)."""
    if instance is not None:
        yield instance
        return
    home = os.environ.get("DAGSTER_HOME")
    if not home or not os.path.isdir(home):
        yield None
        return
    import dagster as dg  # here: a closing line with no earlier run to tell apart imports no Dagster

    with dg.DagsterInstance.get() as opened:
        yield opened


def _hosts(paid: pd.DataFrame, run: str) -> set[str]:
    return {str(host) for host in paid.loc[paid["run"] == run, "host"].dropna()}


def _has_ended(instance: dg.DagsterInstance, run_id: str, hosts: set[str]) -> float | None:
    """When Dagster run ``run_id``, whose payments name ``hosts``, was created, if it can pay
    no more (0.0 for a run the instance does not know); None while it may."""
    import dagster as dg

    record = instance.get_run_record_by_id(run_id)
    if record is None:
        return 0.0
    created = record.create_timestamp.timestamp()
    if record.dagster_run.status.value in _FINISHED:
        return created
    if hosts != {this_host()}:
        return None  # another host's (or nobody's) process: this host cannot see it
    starts = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_START)
    started = [(e.dagster_event.pid, e.timestamp) for e in starts if e.dagster_event and e.dagster_event.pid]
    if not started or any(_running(pid, since) for pid, since in started):
        return None
    pid = started[-1][0]
    instance.report_run_failed(
        record.dagster_run,
        message=f"its process ({pid} on {this_host()}) is gone: killed (kill -9?) or crashed",
    )
    return created


def _running(pid: int, since: float) -> bool:
    """Whether process ``pid``, started by ``since`` (not a later one given the same id), runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    try:  # Linux: a zombie has ended, and a process started after ``since`` is another one
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime")
        )
    except (OSError, IndexError, StopIteration, ValueError):
        return True
    started = boot + int(stat[19]) / os.sysconf("SC_CLK_TCK")
    return stat[0] != "Z" and started <= since + 2.0  # btime and the clock ticks are coarse


@dataclass(frozen=True)
class Command:
    """A ``clcg run`` under way on ``host`` (process ``pid``) since ``started_at`` (Unix time)."""

    host: str
    pid: int
    started_at: float


_OWN_MARKS: list[UPath] = []  # this process's marks (one per ``clcg run`` it started)


def _commands_dir(data_dir: str | os.PathLike[str]) -> UPath:
    return ledger_dir(data_dir) / COMMANDS


def _mark_command(data_dir: str | os.PathLike[str]) -> None:
    """Say this ``clcg run`` is under way, before its first run pays: its runs that end
    before its closing line are its own, not earlier runs for another host's line to say."""
    mark = Command(this_host(), os.getpid(), time.time())
    path = _commands_dir(data_dir) / f"{mark.host}-{mark.pid}-{uuid.uuid4().hex[:12]}.json"
    write_json(path, {"host": mark.host, "pid": mark.pid, "started_at": mark.started_at})
    _OWN_MARKS.append(path)


def _unmark_command() -> None:
    while _OWN_MARKS:
        with contextlib.suppress(FileNotFoundError):
            _OWN_MARKS.pop().unlink()


def _commands_under_way(data_dir: str | os.PathLike[str]) -> list[Command]:
    """Other ``clcg run`` commands under way on the data folder. This host's whose process is
    gone (killed) are removed; another host's are kept (this host cannot see its processes:
    that host's next run removes them)."""
    root = _commands_dir(data_dir)
    if not root.exists():
        return []
    found = []
    for path in root.iterdir():
        if not path.name.endswith(".json"):
            continue  # a file being written
        try:
            mark = Command(**json.loads(path.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
            raise ValueError(f"{path}: not a mark of a clcg run under way ({exc}); remove it") from None
        if mark.host == this_host() and mark.pid == os.getpid():
            continue  # this command
        if mark.host == this_host() and not _running(mark.pid, mark.started_at):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        found.append(mark)
    return found


def _paid(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows["paid"].astype(bool)]


def _paid_runs(paid: pd.DataFrame) -> set[str]:
    """The runs that paid (a payment recorded before payers were kept names none)."""
    return {str(run) for run in paid["run"].dropna()}


def _paid_by(rows: pd.DataFrame, keys: list[str]) -> dict[Any, tuple[int, float]]:
    """(paid calls, USD) of ``rows`` by ``keys`` (a model the record does not name: UNKNOWN_MODEL)."""
    paid = _paid(rows).assign(model=lambda f: f["model"].fillna(UNKNOWN_MODEL))
    return {
        tuple(str(k) for k in (key if isinstance(key, tuple) else (key,))): (
            len(group),
            usd_sum(group["paid_usd"]),
        )
        for key, group in paid.groupby(keys)
    }


_RUN_KEYS = ("own", "unsaid", "before")  # the ledger entries' lists of runs said


def _said_in(ledger: list[dict[str, Any]], keys: Iterable[str]) -> set[str]:
    """What the ``ledger``'s entries list under ``keys`` (runs; "lost": lost calls' row keys)."""
    return {str(item) for entry in ledger for key in keys for item in entry.get(key, [])}


def _ledger(data_dir: str | os.PathLike[str]) -> list[dict[str, Any]] | None:
    """Every entry of the ledger (each a closing line's, or its start); None when there is none."""
    root = ledger_dir(data_dir)
    if not root.exists():
        return None
    entries = []
    for path in root.iterdir():
        if not path.name.endswith(".json"):
            continue  # a file being written (``write_json`` writes beside it, then renames)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a closing-line ledger entry ({exc}); remove it") from None
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: not a closing-line ledger entry (not an object); remove it")
        entries.append(entry)
    return entries


def _write_entry(
    data_dir: str | os.PathLike[str],
    *,
    own: Iterable[str] = (),
    unsaid: Iterable[str] = (),
    before: Iterable[str] = (),
    lost: Iterable[str] = (),
) -> None:
    """One new ledger file: never an existing one rewritten (hosts share the folder)."""
    now = pd.Timestamp.now(tz="UTC")
    name = f"{now.strftime('%Y%m%dT%H%M%S%f')}-{uuid.uuid4().hex[:12]}.json"
    entry = {
        "written_at": now.isoformat(),
        "host": this_host(),
        "own": sorted(own),
        "unsaid": sorted(unsaid),
        "before": sorted(before),
        "lost": sorted(lost),
    }
    write_json(ledger_dir(data_dir) / name, entry)
