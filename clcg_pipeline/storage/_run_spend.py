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
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from upath import UPath

from clcg_pipeline.storage._files import data_root, write_json
from clcg_pipeline.storage._paid import CALL_TABLE_STEPS, STUDY_BUDGET_ERROR, call_spend, this_host

LEDGER = "closing_lines"
UNKNOWN_MODEL = "unknown model"  # a cache entry from before entries named their model id


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
class StudySpend:
    """The study's spend in all, and what earlier runs no closing line reported paid."""

    paid_usd: float = 0.0  # every calls table and the call cache's unrecorded payments
    #: Earlier runs whose payments no closing line had said (said now, by this command's).
    unsaid_runs: tuple[str, ...] = ()
    #: model -> (paid calls, USD) of those runs.
    unsaid_by_model: dict[str, tuple[int, float]] = field(default_factory=dict)

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
    study totals of their time); nothing when it has one (one listing)."""
    if _said(data_dir) is None:
        _write_entry(data_dir, before=_paid_runs(_paid(call_spend(data_dir))))


def study_spend(data_dir: str | os.PathLike[str], own_runs: Iterable[str]) -> StudySpend:
    """The study's spend, and what earlier runs (not ``own_runs``) paid that no closing line
    said; those and the ``own_runs`` that paid are written to the ledger as said, so the next
    closing line does not say them again. Nothing is written when there is nothing new to say
    (a rerun with nothing to do leaves the folder as it was)."""
    paid = _paid(call_spend(data_dir))
    runs, own = _paid_runs(paid), set(own_runs)
    said = _said(data_dir)
    if said is None:  # a folder from before the ledger: what was paid before is not news
        if own:  # a run started it; a rerun with nothing to do writes nothing
            _write_entry(data_dir, own=runs & own, before=runs - own)
        unsaid: set[str] = set()
    else:
        unsaid = runs - said - own
        if unsaid or (runs & own) - said:
            _write_entry(data_dir, own=(runs & own) - said, unsaid=unsaid)
    earlier = paid[paid["run"].isin(unsaid)]
    by_model = {model: calls for (model,), calls in _paid_by(earlier, ["model"]).items()}
    return StudySpend(
        paid_usd=float(paid["paid_usd"].sum()), unsaid_runs=tuple(sorted(unsaid)), unsaid_by_model=by_model
    )


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
            float(group["paid_usd"].sum()),
        )
        for key, group in paid.groupby(keys)
    }


def _said(data_dir: str | os.PathLike[str]) -> set[str] | None:
    """Every run some closing line (or the ledger's start) said; None when there is no ledger."""
    root = ledger_dir(data_dir)
    if not root.exists():
        return None
    said: set[str] = set()
    for path in root.iterdir():
        if not path.name.endswith(".json"):
            continue  # a file being written (``write_json`` writes beside it, then renames)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a closing-line ledger entry ({exc}); remove it") from None
        for key in ("own", "unsaid", "before"):
            said.update(str(run) for run in entry.get(key, []))
    return said


def _write_entry(
    data_dir: str | os.PathLike[str],
    *,
    own: Iterable[str] = (),
    unsaid: Iterable[str] = (),
    before: Iterable[str] = (),
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
    }
    write_json(ledger_dir(data_dir) / name, entry)
