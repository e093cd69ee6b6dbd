"""A model added to a built study redraws the diagnostic sample; no payment is lost (issue 33).

The judges' ``judge_calls`` and the keypoint writer's ``keypoint_calls`` are unpartitioned: the
asset is recomputed whole on the new sample, so the calls of pairs (items) the new sample left
out are not in its output. Those calls were paid; the call spend must still record them under
their table and run, not as "not yet recorded in a partition" (a run killed after paying).
The analysis reads the judgements, which hold the new sample only: its figures are a fresh
build's on that sample.

Three ``run_study`` builds of a three-language panel (one target language, so the sample is
not empty): reader A, then reader B added (the redraw); and A and B from scratch.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.orchestration import run_study
from clcg_pipeline.storage import read_frame
from clcg_pipeline.storage._paid import UNRECORDED_STEP, call_spend
from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, _edit_yaml, cut_to_demo

PANEL = ("en", "pt", "sw")  # pt is the baseline: sw is the sample's one target language
SAMPLED_TABLES = ("judge_calls", "keypoint_calls")


def _study(root: Path, *, with_b: bool) -> Path:
    """The demo config cut to ``PANEL`` and ``_lean`` in ``root/config`` (reader B added)."""
    config = root / "config"
    shutil.copytree(DEFAULT_CONFIG, config)
    cut_to_demo(config)
    _edit_yaml(
        config / "languages.yaml",
        lambda doc: doc.update(languages=[lang for lang in doc["languages"] if lang["iso"] in PANEL]),
    )
    _edit_yaml(config / "study.yaml", _lean)
    if with_b:
        _add_reader_b(config)
    return config


def _lean(doc: dict[str, Any]) -> None:
    """The study cut to what the tests read, for speed (about a fifth of the three builds).

    Left out, as they make no judge_calls nor keypoint_calls: the granularity tasks, the
    closed-book condition (the sample draws from the band's full_body only), the stability
    repetitions and the fill ratings. Fewer annotation responses and pairs (the writer still
    pays for checklists, asserted) and 10 replicates: the figures are compared between builds.
    Not fewer languages: the sample's targets are neither the reference nor the baseline, so
    en and pt alone give an empty sample (nor the shared ``small_study``, which is just that).
    """
    doc.update(bootstrap_replicates=10)
    doc["granularity"].update(enabled=False)
    doc["conditions"] = {"full_body": doc["conditions"]["full_body"]}
    doc["sampling"].update(stability_size=0)
    doc["human_validation"].update(fill_ratings=0, responses=60, pairs=6)


def _add_reader_b(config: Path) -> None:
    """A copy of the demo's offline reader under a new id (what the user added)."""

    def add(doc: dict[str, Any]) -> None:
        first = doc["models"][0]
        doc["models"].append({**first, "id": "reader-b", "options": {**first["options"], "threshold": 0.3}})

    _edit_yaml(config / "models.yaml", add)


def _build(root: Path, config: Path) -> None:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(root / "dagster_home"))
        (root / "dagster_home").mkdir(exist_ok=True)
        run_study(config_dir=str(config), data_dir=str(root / "data"))


def _paid_ids(data: Path, table: str) -> set[str]:
    frame = read_frame(data / table / "data.parquet")
    return set(frame.loc[~frame["cached"].astype(bool), "call_id"])


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    added = tmp_path_factory.mktemp("added")
    config = _study(added, with_b=False)
    _build(added, config)
    out: dict[str, Any] = {
        "first": {table: _paid_ids(added / "data", table) for table in SAMPLED_TABLES},
        "first_sample": read_frame(added / "data" / "diagnostic_sample" / "data.parquet"),
    }
    _add_reader_b(config)
    _build(added, config)
    fresh = tmp_path_factory.mktemp("fresh")
    _build(fresh, _study(fresh, with_b=True))
    out.update(added=added / "data", fresh=fresh / "data")
    yield out


@pytest.mark.slow
def test_the_sample_is_redrawn_and_no_payment_is_left_unrecorded(builds: dict[str, Any]) -> None:
    data = builds["added"]
    sample = read_frame(data / "diagnostic_sample" / "data.parquet")
    first = builds["first_sample"]
    assert len(first) and len(sample)
    assert set(first["pair_id"]) - set(sample["pair_id"]), "the sample was not redrawn: nothing to test"
    rows = call_spend(data)
    unrecorded = rows[rows["paid"].astype(bool) & (rows["step"] == UNRECORDED_STEP)]
    assert unrecorded.empty, unrecorded.groupby("model").size().to_dict()


@pytest.mark.slow
def test_the_paid_calls_of_both_samples_stay_in_the_record(builds: dict[str, Any]) -> None:
    data, fresh = builds["added"], builds["fresh"]
    for table in SAMPLED_TABLES:
        # The first build's payments (the keypoint writer asks again only for items with no
        # checklist: the calls of the others are in no new output).
        assert builds["first"][table], f"the first build paid no {table}: nothing to test"
        assert builds["first"][table] <= _paid_ids(data, table), table
    # And the new sample's judge calls: a fresh build on that sample pays exactly those.
    assert _paid_ids(fresh, "judge_calls") <= _paid_ids(data, "judge_calls")
    rows = call_spend(data)
    paid = rows[rows["paid"].astype(bool) & rows["calls_table"].isin(SAMPLED_TABLES)]
    assert paid["call_id"].is_unique  # each payment counted once


@pytest.mark.slow
def test_the_judge_figures_are_a_fresh_builds_on_the_new_sample(builds: dict[str, Any]) -> None:
    data, fresh = builds["added"], builds["fresh"]
    key = ["pair_id", "side", "judge"]
    for table in ("diagnostic_sample", "error_judgements"):
        ours, theirs = (read_frame(d / table / "data.parquet") for d in (data, fresh))
        columns = [c for c in key if c in ours.columns] or ["pair_id"]
        pd.testing.assert_frame_equal(
            ours.sort_values(columns).reset_index(drop=True),
            theirs.sort_values(columns).reset_index(drop=True),
            check_like=True,
        )
    ours, theirs = (json.loads((d / "error_taxonomy_results.json").read_text()) for d in (data, fresh))
    assert ours == theirs
