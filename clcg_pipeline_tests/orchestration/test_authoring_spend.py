"""The calls that author the study's inputs (the item generator, the granularity writers) are
paid calls like any other: in the one record of what was paid, with their step, and in every
figure of spend, each equal to the provider's bill."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from clcg_pipeline.calls import study_spent
from clcg_pipeline.calls.fake_server import FakeServer, Faults, reply_marker
from clcg_pipeline.cli import main
from clcg_pipeline.orchestration import plan_spent, run_study
from clcg_pipeline.storage import call_spend, default_catalog_path, run_named_query, spend
from clcg_pipeline_tests.conftest import add_fake_model, fake_provider_bill, paid_cli_env

pytestmark = pytest.mark.slow

KEY_ENV = "CLCG_AUTHORING_FAKE_KEY"


GENERATOR_SYSTEM = "You write reading-comprehension test items"
_PARAGRAPH = re.compile(r"^¶(\S+) (.+)$", re.MULTILINE)


def _items_reply(prompt: str) -> str:
    """A generator's reply the item bank keeps: one item on the article's first two paragraphs
    (an L1 answer is a span of its paragraph, an L0 one a polar label)."""
    paragraphs = _PARAGRAPH.findall(prompt)
    pids = [pid for pid, _ in paragraphs[:2]]
    level = re.findall(r"items of level (L\d)", prompt)[-1]
    answer = "Yes" if level == "L0" else " ".join(paragraphs[0][1].split()[:3])
    item = {"question": f"What does the article say at level {level}?", "answer": answer}
    return json.dumps({"items": [{**item, "target_pids": pids[:1], "supporting_pids": pids}]})


def _answer_the_generator_with_items(body: dict) -> None:
    """The item generator's requests are answered with items (the server's default reply is not)."""
    if GENERATOR_SYSTEM in str(body["messages"][0]["content"]):
        user = body["messages"][-1]
        user["content"] += "\n" + reply_marker(_items_reply(user["content"]))


def test_the_item_generator_and_the_writers_are_in_every_spend_figure(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(KEY_ENV, "fake-authoring-not-real")
    data = tmp_path / "data"
    charges = fake_provider_bill(monkeypatch, _answer_the_generator_with_items)

    def authors(doc: dict) -> None:
        doc["item_generator"] = "fake-gpt"
        doc["granularity"]["confusion_writer"] = "fake-gpt"

    edit_yaml(demo_config_dir / "study.yaml", authors)
    with FakeServer(Faults()) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=4)
        # Only the offline model answers: every paid call is the generator's or the writer's.
        summary = run_study(
            config_dir=str(demo_config_dir),
            data_dir=str(data),
            models=["lexical-reader"],
            languages=["en", "pt"],
        )
    bill = sum(charges)
    rows = call_spend(data)
    paid = rows[rows["paid"].astype(bool) & (rows["model"] == "fake-gpt")]
    # Every answered request is one paid call in the record, under its step and table.
    assert len(charges) > 0 and len(paid) == len(charges)
    assert set(paid["step"]) == {"item generation", "writers"}
    assert set(paid["calls_table"]) == {"item_calls", "task_writer_calls"}
    figures = {
        "closing line": summary.new_cost_usd,
        "study total": summary.study_paid_usd,
        "spend view": spend(data).paid_usd,
        "plan": float(plan_spent(data_dir=str(data)).set_index("model").loc["TOTAL", "paid_usd"]),
        "call_costs": float(
            run_named_query(default_catalog_path(data), "call_costs", {}, data_dir=data)["paid_usd"].sum()
        ),
    }
    # call_costs rounds each group's USD to 4 places.
    assert {name: round(usd or 0.0, 4) for name, usd in figures.items()} == dict.fromkeys(
        figures, round(bill, 4)
    )
    assert figures["spend view"] == pytest.approx(bill)


def _paid_authors(budget_usd: float | None) -> Callable[[dict], None]:
    """study.yaml with the item generator and the confusion writer a paid model, and a budget."""

    def authors(doc: dict) -> None:
        doc["item_generator"] = "fake-gpt"
        doc["granularity"]["confusion_writer"] = "fake-gpt"
        doc["budget_usd"] = budget_usd

    return authors


# What the study budget stopped, as its one line says it (calls.budget_stop_line).
_STUDY_STOP = re.compile(
    r"budget reached: the study budget \(study\.yaml budget_usd \$(?P<limit>[\d.]+)\) stopped "
    r"(?P<left>\d+) of (?P<calls>\d+) calls of (?P<who>the item generator|the task bank's writers .*?): "
    r"\$(?P<spent>[\d.]+) spent by the study in all, (?P=left) calls left unmade; raise budget_usd in "
    r"study\.yaml and run `clcg run` again to resume \(paid calls are kept\)"
)


def test_a_study_budget_stops_the_authoring_calls_and_says_so_once(
    demo_config_dir: Path,
    tmp_path: Path,
    edit_yaml: Callable,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    data = paid_cli_env(monkeypatch, tmp_path, KEY_ENV, "fake-authoring-not-real")
    charges = fake_provider_bill(monkeypatch, _answer_the_generator_with_items)
    budget = 0.03  # under half of what the generator and the writer cost unbounded (about $0.069)
    edit_yaml(demo_config_dir / "study.yaml", _paid_authors(budget))
    with FakeServer(Faults()) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=4)
        args = ["--config", str(demo_config_dir), "--data", str(data), "--languages", "en,pt"]
        code = main(["run", *args, "--models", "lexical-reader"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    # The ledger (the study's spend, every process sharing the cache) is the provider's bill,
    # and a call is made only when its worst case fits: never past the budget by a call in flight.
    ledger = study_spent(str(data / "cache" / "calls"))
    assert ledger == pytest.approx(sum(charges)) and 0 < ledger <= budget + max(charges)
    lines = [line for line in (out + err).splitlines() if "budget reached" in line]
    assert len(lines) == 1, out + err
    said = _STUDY_STOP.search(lines[0])
    assert said is not None, lines[0]
    assert float(said["limit"]) == budget and float(said["spent"]) == round(ledger, 4)
    table = "item_calls" if said["who"] == "the item generator" else "task_writer_calls"
    rows = call_spend(data, tables=[table])
    assert int(said["left"]) == int((rows["outcome"] == "skipped_budget").sum()) > 0
    assert int(said["calls"]) == len(rows)
    # What was paid is in the record; the bank stopped short is not frozen (the rerun writes it).
    paid = call_spend(data)
    assert int(paid["paid"].astype(bool).sum()) == len(charges)
    assert not (data / "items" / "data.parquet").exists()
