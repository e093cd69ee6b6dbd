"""``leaderboard.json`` has one typed shape, ``storage.LeaderboardDocument`` (issue 34, item 2):
the results asset reads the leaderboard back against it after writing it, and a field of
another type is refused with the file and the field named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.analysis import LEADERBOARD_COLUMNS, leaderboard, write_leaderboard
from clcg_pipeline.storage import DocumentError, LeaderboardDocument, LeaderboardRow, read_leaderboard
from clcg_pipeline_tests.analysis.test_tie_groups import run_planted
from clcg_pipeline_tests.results.conftest import assert_refused_naming, tampered


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    """Three models, two of them tied: ranks, rank intervals and tie groups filled."""
    return run_planted([0.0, 0.0, 0.1])


@pytest.fixture
def written(tmp_path: Path, results) -> Path:
    return Path(write_leaderboard(results, tmp_path)["json"])


def test_the_producers_columns_are_the_shapes_fields() -> None:
    assert list(LeaderboardRow.model_fields) == LEADERBOARD_COLUMNS


def test_a_written_leaderboard_reads_back_as_its_typed_document(written: Path, results) -> None:
    document = read_leaderboard(written)
    assert isinstance(document, LeaderboardDocument)
    frame = leaderboard(results)
    assert [row.model for row in document.models] == list(frame["model"])
    assert [row.tie_group for row in document.models] == [1, 1, 2]
    assert document.tie_groups.groups is not None and len(document.tie_groups.groups) == 2


@pytest.mark.parametrize(
    "source",
    [
        {},  # no model_contrasts block: no ranking, tie groups said absent
        {"h1": {"by_model": {"m1": {"h1_micro": {"estimate": 0.1}}}}},  # an older document
    ],
    ids=["empty", "older"],
)
def test_a_leaderboard_of_a_partial_document_fits_its_shape(tmp_path: Path, source) -> None:
    document = read_leaderboard(write_leaderboard(source, tmp_path)["json"])
    assert document.ranking is None and document.tie_groups.reason


WRONG = [
    (lambda d: d["models"][0].update(rank="1"), "models[0].rank"),
    (lambda d: d["models"][1].update(tie_group=1.5), "models[1].tie_group"),
    (lambda d: d["models"][2].update(identifiable="true"), "models[2].identifiable"),
    (lambda d: d["models"][1].update(simulated="yes"), "models[1].simulated"),
    (lambda d: d["models"][0].pop("reason"), "models[0].reason"),
    (lambda d: d["tie_groups"].update(level="0.05"), "tie_groups.level"),
    (lambda d: d.update(status=None), "status"),
    (lambda d: d.update(winner="model-a"), "winner"),
    (lambda d: d["columns"].append("score"), "columns"),
]


@pytest.mark.parametrize(("change", "field"), WRONG, ids=[w[1] for w in WRONG])
def test_a_leaderboard_with_a_wrong_field_is_refused_naming_it(written: Path, change, field) -> None:
    assert_refused_naming(
        read_leaderboard, written, change, field, "LeaderboardDocument, clcg_pipeline.storage"
    )


def test_a_leaderboard_that_does_not_fit_is_refused_before_it_is_written(tmp_path: Path, results) -> None:
    """The producer checks the document against its shape first: the previous files stay."""
    (tmp_path / "leaderboard.json").write_text("previous\n")
    bad = {**results, "model_contrasts": {**results["model_contrasts"], "status": 12}}
    with pytest.raises(DocumentError, match=r"leaderboard\.json.*status"):
        write_leaderboard(bad, tmp_path)
    assert (tmp_path / "leaderboard.json").read_text() == "previous\n"
    assert not (tmp_path / "leaderboard.csv").exists()


def test_a_simulated_model_is_marked_in_both_files(tmp_path: Path, results) -> None:
    """leaderboard.csv/.json carried no mark of a simulated model (the terminal and the report
    did): the ``simulated`` column reads ``settings.models[].simulated``, the terminal's source."""
    models = [{"id": m, "provider": "offline", "model": "m"} for m in results["h1"]["by_model"]]
    models[0]["simulated"] = "SIMULATED per-language gap"
    paths = write_leaderboard({**results, "settings": {"models": models}}, tmp_path)
    expected = {m["id"]: "simulated" in m for m in models}
    document = read_leaderboard(paths["json"])
    assert {row.model: row.simulated for row in document.models} == expected
    csv = pd.read_csv(paths["csv"])
    assert dict(zip(csv["model"], csv["simulated"], strict=True)) == expected
    assert csv["simulated"].dtype == bool  # "True"/"False", not blank


def test_a_leaderboard_without_models_settings_marks_none_simulated(written: Path) -> None:
    assert [row.simulated for row in read_leaderboard(written).models] == [False, False, False]


def test_an_older_leaderboard_without_the_simulated_column_still_reads(written: Path) -> None:
    def older(document: dict[str, Any]) -> None:
        document["columns"].remove("simulated")
        for row in document["models"]:
            row.pop("simulated")

    document = read_leaderboard(tampered(written, older))
    assert [row.simulated for row in document.models] == [None, None, None]  # not recorded, not False
