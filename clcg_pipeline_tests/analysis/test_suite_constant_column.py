"""The suite's reordering keeps an all-null score column as one value (issue 37).

``read_scores`` gives ``semsim`` of a study run without it as a zero-stride view; taking it row
by row in ``_take_columns`` would give it eight bytes per scored row again.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from clcg_pipeline.analysis import read_scores
from clcg_pipeline_tests.analysis.conftest import write_score_file


def _file(tmp_path: Path, rows: int) -> str:
    return str(write_score_file(tmp_path / "scores.parquet", rows))


def test_take_columns_keeps_an_all_null_column_as_one_value(tmp_path: Path) -> None:
    from clcg_pipeline.analysis._suite import _take_columns

    frame = read_scores(_file(tmp_path, 600))
    assert frame["semsim"].to_numpy().strides == (0,)  # what read_scores gives (precondition)
    order = np.random.default_rng(3).permutation(len(frame))
    want = frame.iloc[order].copy()
    want.index = pd.RangeIndex(len(want))
    got = _take_columns([frame], order)
    semsim = got["semsim"].to_numpy()
    assert semsim.strides == (0,) and len(semsim) == len(order)  # no byte per row of its own
    assert not semsim.flags.writeable and np.isnan(semsim).all()
    assert got["token_f1"].to_numpy().strides == (8,)  # other columns are still taken
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_take_columns_of_an_empty_order_keeps_the_column_empty(tmp_path: Path) -> None:
    from clcg_pipeline.analysis._suite import _take_columns

    frame = read_scores(_file(tmp_path, 10))
    got = _take_columns([frame], np.array([], dtype=np.intp))
    assert len(got) == 0 and got["semsim"].dtype == np.float64
