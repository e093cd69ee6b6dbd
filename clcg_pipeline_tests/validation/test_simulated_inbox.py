"""The demo's SIMULATED inbox files are simulated only when the inbox lacks one of them."""

import pandas as pd
import pytest

from clcg_pipeline.validation.human.demo_annotations import _simulate
from clcg_pipeline.validation.human.demo_annotations._simulate import (
    simulated_file_names,
    simulated_inbox_files,
)


def test_a_full_inbox_is_not_simulated_again(
    sample: pd.DataFrame, keypoints: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = simulated_inbox_files("demo", sample, keypoints, seed=1)
    # Every file the simulation gives is named beforehand (the check is on those names).
    assert set(files) <= set(simulated_file_names(sample))

    def fail(*args: object, **kwargs: object) -> dict[str, bytes]:
        raise AssertionError("simulated although the inbox holds every file")

    monkeypatch.setattr(_simulate, "simulate_annotations", fail)
    assert simulated_inbox_files("demo", sample, keypoints, seed=1, present=lambda name: True) == {}


def test_an_inbox_missing_one_file_gets_the_files_simulated(
    sample: pd.DataFrame, keypoints: pd.DataFrame
) -> None:
    missing = simulated_file_names(sample)[0]
    files = simulated_inbox_files("demo", sample, keypoints, seed=1, present=lambda name: name != missing)
    assert files == simulated_inbox_files("demo", sample, keypoints, seed=1)
