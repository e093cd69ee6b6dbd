"""A small crafted world for the annotation round-trip tests: items, responses, scores, languages."""

from __future__ import annotations

import numpy as np
import pandas as pd

from clcg_pipeline.config._models import HumanValidationSettings

LANGS = {"en": 5, "pt": 4, "sw": 2, "ht": 1}
MODELS = ("model-a", "model-b")
LEVELS = ("L0", "L1", "L2", "L3", "L4", "L5", "H")


def world(seed: int = 0, docs: int = 4, models: tuple[str, ...] = MODELS) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    items = []
    for d in range(docs):
        for level in LEVELS:
            for n in (1, 2):
                items.append(
                    {
                        "item_id": f"d{d}-{level}-{n}",
                        "doc_id": f"d{d}",
                        "item_source": "human" if level == "H" else "llm",
                        "level": level,
                        "question": f"Question {n} about d{d} at {level}?",
                        "gold_answer": "Yes"
                        if level == "L0"
                        else f"The mill closed in 19{d}{n}, and the workers moved to the port town",
                        "target_pids": ["p01", "p02"],
                    }
                )
    items_f = pd.DataFrame(items)
    preds, scores = [], []
    for model in models:
        for lang, joshi in LANGS.items():
            for it in items:
                # Higher-resource languages score better on average, with noise.
                f1 = float(np.clip(rng.normal(0.25 + 0.12 * joshi, 0.3), 0, 1))
                key = {
                    "model": model,
                    "language": lang,
                    "doc_id": it["doc_id"],
                    "item_id": it["item_id"],
                    "rep": 0,
                }
                preds.append(
                    {**key, "context_scope": "full_body", "answer": f"{lang} answer {f1:.2f}", "status": "ok"}
                )
                preds.append({**key, "context_scope": "closed_book", "answer": "x", "status": "ok"})
                scores.append({**key, "context_scope": "full_body", "token_f1": f1})
                scores.append({**key, "context_scope": "closed_book", "token_f1": 0.0})
    # One unparseable response, never sampled.
    preds[0]["status"] = "unparseable"
    languages = pd.DataFrame([{"iso": k, "joshi_class": v} for k, v in LANGS.items()])
    return {
        "predictions": pd.DataFrame(preds),
        "scores": pd.DataFrame(scores),
        "items": items_f,
        "languages": languages,
    }


def settings(**changes: object) -> HumanValidationSettings:
    base = {"responses": 60, "pairs": 12, "seed": 7, "keypoint_writer": None}
    return HumanValidationSettings(**{**base, **changes})
