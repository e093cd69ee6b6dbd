"""Every figure of spend equals the provider's bill: ``clcg run``'s closing line and study
total, ``clcg plan``'s spend so far and ``clcg query --named call_costs`` all read one spend
view; and a study budget that stops calls is said once, even in the parallel workers' path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from clcg_pipeline.calls import COORDINATION_TAG
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.cli import main
from clcg_pipeline.orchestration import plan_spent, run_study
from clcg_pipeline.storage import call_spend, default_catalog_path, run_named_query, spend
from clcg_pipeline_tests.conftest import add_fake_model, fake_provider_bill, paid_cli_env

pytestmark = pytest.mark.slow

KEY_ENV = "CLCG_SPEND_FAKE_KEY"
LANGUAGES = ["en", "pt"]


def _cents(usd: float) -> int:
    return round(usd * 100)


def test_every_spend_figure_equals_the_providers_bill(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(KEY_ENV, "fake-spend-not-real")
    data = tmp_path / "data"
    charges = fake_provider_bill(monkeypatch)
    with FakeServer(Faults()) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=4)
        summary = run_study(
            config_dir=str(demo_config_dir), data_dir=str(data), models=["fake-gpt"], languages=LANGUAGES
        )
    bill = sum(charges)
    assert bill > 0 and summary.task_calls > 0  # the granularity tasks are paid calls too
    # Every answered request is one paid call in the record (the offline judges' calls are free).
    rows = call_spend(data)
    assert int((rows["paid"].astype(bool) & (rows["model"] == "fake-gpt")).sum()) == len(charges)
    # The closing line (this command's runs), the study total, the owner and plan's actual.
    figures = {
        "closing line": summary.new_cost_usd,
        "study total": getattr(summary, "study_paid_usd", None),
        "spend view": spend(data).paid_usd,
        "plan": float(plan_spent(data_dir=str(data)).set_index("model").loc["TOTAL", "paid_usd"]),
        "call_costs": float(
            run_named_query(default_catalog_path(data), "call_costs", {}, data_dir=data)["paid_usd"].sum()
        ),
    }
    assert {name: _cents(usd or 0.0) for name, usd in figures.items()} == dict.fromkeys(figures, _cents(bill))
    assert figures["spend view"] == pytest.approx(bill)
    # Every run says how it coordinates its calls (here: this host's file locks).
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
    assert runs and {run.tags.get(COORDINATION_TAG) for run in runs} == {"files"}


def test_a_study_budget_that_stops_calls_is_said_once(
    demo_config_dir: Path,
    tmp_path: Path,
    edit_yaml: Callable,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    data = paid_cli_env(monkeypatch, tmp_path, KEY_ENV, "fake-spend-not-real")
    charges = fake_provider_bill(monkeypatch)
    edit_yaml(demo_config_dir / "study.yaml", lambda doc: doc.update(budget_usd=0.05))
    with FakeServer(Faults()) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=4)
        # No --budget, two languages: the partitions run in parallel workers.
        code = main(
            [
                "run",
                "--config",
                str(demo_config_dir),
                "--data",
                str(data),
                "--models",
                "fake-gpt",
                "--languages",
                ",".join(LANGUAGES),
            ]
        )
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert out.count("coordination: local file locks in ") == 1, out[-3000:]
    lines = [line for line in out.splitlines() if "budget reached" in line]
    assert len(lines) == 1, out[-3000:]
    skipped = spend(data).skipped_budget
    assert skipped.get("study", 0) > 0 and 0 < spend(data).paid_usd <= 0.05
    assert "the study budget (study.yaml budget_usd $0.0500)" in lines[0]
    assert f"${spend(data).paid_usd:.4f} spent by the study" in lines[0]
    assert f"{skipped['study']} calls left unmade" in lines[0]
    assert "raise budget_usd in study.yaml and run `clcg run` again" in lines[0]
    assert _cents(spend(data).paid_usd) == _cents(sum(charges))
