"""``clcg run``'s study budget line says what processes that died mid-call were charged (issue 33)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from clcg_pipeline.calls import COORD_URL_ENV
from clcg_pipeline.calls._coord import COORD_ENV
from clcg_pipeline.orchestration._summary import RunSummary, study_total

DIED = "reserved by processes that died mid-call"


def test_the_study_budget_line_adds_once_what_dead_processes_were_charged() -> None:
    summary = RunSummary(
        study_budget_usd=0.05,
        budget_exhausted=True,
        budget_left={"study": 2},
        study_paid_usd=0.0275,
        study_charged_usd=0.02,
    )
    line = summary.budget_line()
    assert line is not None
    assert (
        "$0.0275 spent by the study in all, plus $0.0200 reserved by processes that died mid-call, " in line
    )
    assert line.count("$0.0200") == 1 and line.count(DIED) == 1
    assert "2 calls left unmade" in line
    summary.study_charged_usd = 0.0
    assert DIED not in (summary.budget_line() or "")


@pytest.fixture
def file_ledger(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file ledger under the data folder's cache, whatever the machine's settings."""
    for name in (COORD_ENV, COORD_URL_ENV, "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("file_ledger")
def test_the_study_total_reads_what_dead_processes_were_charged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    coord = data / "cache" / "calls" / "_coord"
    coord.mkdir(parents=True)
    # A reservation of another host, older than its TTL: charged at death, no answer cached.
    line = {
        "op": "reserve",
        "id": "gone",
        "usd": 0.02,
        "host": "another-host",
        "pid": 1,
        "t": time.time() - 7200,
    }
    (coord / "spend.jsonl").write_text(json.dumps(line) + "\n")
    summary = RunSummary(study_budget_usd=0.05)
    study_total(summary, str(data))
    assert summary.study_charged_usd == pytest.approx(0.02)


@pytest.mark.usefixtures("file_ledger")
def test_a_study_without_a_budget_opens_no_ledger_for_its_total(tmp_path: Path) -> None:
    data = tmp_path / "data"
    summary = RunSummary()
    study_total(summary, str(data))
    assert summary.study_charged_usd == 0.0
    assert not (data / "cache" / "calls" / "_coord").exists()
