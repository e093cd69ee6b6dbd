"""H3 and the context scope pool every model's rows: their panels' cells leave the model out (issue 37).

Their replicate arrays are then languages x levels (or scopes) wide at any number of models,
instead of models x languages x levels. The numbers are pinned to the suite as it was by
``test_suite_golden.py`` (1e-12); here the width of the panels is pinned.
"""

from __future__ import annotations

from typing import Any

import pytest

from clcg_pipeline.analysis import _gaps, run_suite
from clcg_pipeline.config import LEVELS, StudyConfig
from clcg_pipeline.synthetic import synthetic_config, synthetic_scores

N_MODELS = 3


@pytest.fixture(scope="module")
def panels(project, small_langs) -> list[tuple[list[str], int]]:
    """Each panel the suite built, as (its cell columns, its replicate arrays' width)."""
    config = synthetic_config(project, n_models=N_MODELS).model_copy(
        update={"languages": small_langs, "study": StudyConfig(bootstrap_replicates=20)}
    )
    scores = synthetic_scores(
        config.languages, n_models=N_MODELS, n_articles=12, n_stability=0, probe_articles=4, seed=3
    )
    seen: list[tuple[list[str], int]] = []
    original = _gaps.GapPanel.__init__

    def recording(self: Any, rep: Any, *args: Any, **kwargs: Any) -> None:
        seen.append((list(rep.cells.columns), int(rep.sums.shape[1])))
        original(self, rep, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_gaps.GapPanel, "__init__", recording)
        run_suite(scores, config)
    return seen


def test_h3_panels_hold_language_by_level_cells(panels) -> None:
    h3 = [(cols, width) for cols, width in panels if "level" in cols]
    assert len(h3) == 2  # the standardized and the raw panel
    for cols, width in h3:
        assert cols == ["language", "level"]
        # At most the five languages at each level, whatever the number of models.
        assert width <= 5 * len(LEVELS)


def test_context_scope_panel_holds_language_by_scope_cells(panels) -> None:
    scope = [(cols, width) for cols, width in panels if "context_scope" in cols]
    assert len(scope) == 1
    cols, width = scope[0]
    assert cols == ["language", "context_scope"]
    assert width <= 5 * 2  # five languages, the primary scope and item_grounded
