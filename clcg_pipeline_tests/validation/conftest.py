"""The validation tests' shared annotation sample and its fact checklists (built once per module)."""

from __future__ import annotations

import pandas as pd
import pytest

from clcg_pipeline_tests.validation.annotation_world import checklist_keypoints, small_sample


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    return small_sample()


@pytest.fixture(scope="module")
def keypoints(sample: pd.DataFrame) -> pd.DataFrame:
    return checklist_keypoints(sample)
