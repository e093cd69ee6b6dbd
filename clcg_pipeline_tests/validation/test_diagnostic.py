"""The diagnostic sample: pairing, the candidate-loss heuristic, caps, determinism."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.validation.taxonomy._diagnostic import candidate_pairs, diagnostic_sample, pair_id

KEY = ["model", "language", "doc_id", "item_id", "rep", "context_scope"]


def _frames(n_docs: int = 12, n_items: int = 6, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    scores, preds = [], []
    for model in ("m1", "m2"):
        for doc in range(n_docs):
            for item in range(n_items):
                for lang in ("en", "pt", "sw", "is"):
                    for scope in ("full_body", "closed_book"):
                        key = {
                            "model": model,
                            "language": lang,
                            "doc_id": f"d{doc:02d}",
                            "item_id": f"d{doc:02d}-i{item}",
                            "rep": 0,
                            "context_scope": scope,
                        }
                        score = 0.9 if lang == "en" else float(rng.choice([0.0, 0.5, 0.9]))
                        scores.append({**key, "level": "L3", "item_source": "llm", "token_f1": score})
                        preds.append(
                            {**key, "answer": f"{lang} answer {item}", "status": "ok", "call_id": "c"}
                        )
    return pd.DataFrame(preds), pd.DataFrame(scores)


def _candidates(preds: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    return candidate_pairs(preds, scores, reference="en", targets=["sw", "is"], margin=0.25, min_en_score=0.5)


def test_pairs_join_same_model_item_rep_scope_and_apply_the_heuristic() -> None:
    preds, scores = _frames()
    cands = _candidates(preds, scores)
    # 2 models x 12 docs x 6 items x 2 targets, full_body only; no pt, no en-en pair.
    assert len(cands) == 2 * 12 * 6 * 2 and set(cands["language"]) == {"sw", "is"}
    assert set(cands["context_scope"]) == {"full_body"}
    expected = (cands["en_score"] >= 0.5) & (cands["en_score"] - cands["target_score"] >= 0.25)
    assert (cands["candidate_loss"] == expected).all() and cands["candidate_loss"].any()
    row = cands.iloc[0]
    assert row["pair_id"] == pair_id(
        row.model, row.doc_id, row.item_id, row.rep, row.context_scope, row.language
    )
    assert row["en_answer"].startswith("en answer") and row["target_answer"].startswith(row["language"])
    with pytest.raises(ValueError, match="reference language 'en' cannot be a target"):
        candidate_pairs(preds, scores, reference="en", targets=["en", "sw"])


def test_missing_responses_are_not_paired_and_nothing_stored_gives_no_candidates() -> None:
    preds, scores = _frames(n_docs=2, n_items=2)
    gone = (preds["language"] == "sw") & (preds["doc_id"] == "d00")
    preds.loc[gone, ["answer", "status"]] = [None, "missing"]
    preds.loc[(preds["language"] == "is") & (preds["doc_id"] == "d00"), ["answer", "status"]] = [
        None,
        "unparseable",
    ]
    cands = _candidates(preds, scores)
    assert not ((cands["language"] == "sw") & (cands["doc_id"] == "d00")).any()
    # An unparseable response is a real response failure: it stays, to be judged.
    assert ((cands["language"] == "is") & (cands["doc_id"] == "d00")).any()
    assert candidate_pairs(pd.DataFrame(), pd.DataFrame(), reference="en", targets=["sw"]).empty


def test_sample_size_share_cap_and_determinism() -> None:
    preds, scores = _frames()
    cands = _candidates(preds, scores)
    drawn = diagnostic_sample(cands, pairs=60, seed=42, max_per_article=8, candidate_loss_share=0.4)
    sample, summary = drawn.pairs, drawn.summary
    assert len(sample) == 60 and summary["status"] == "ok"
    assert sample["doc_id"].value_counts().max() <= 8
    assert summary["candidate_loss_share_realised"] == pytest.approx(sample["candidate_loss"].mean())
    assert sample["candidate_loss"].sum() == 24  # 40% sought and available
    assert sample["pair_id"].is_unique
    # Both target languages and both models are represented (the draw cycles over cells).
    assert set(sample["language"]) == {"sw", "is"} and set(sample["model"]) == {"m1", "m2"}
    shuffled = cands.sample(frac=1.0, random_state=3)
    again = diagnostic_sample(shuffled, pairs=60, seed=42, max_per_article=8, candidate_loss_share=0.4)
    assert again.pairs["pair_id"].tolist() == sample["pair_id"].tolist()
    other = diagnostic_sample(cands, pairs=60, seed=7, max_per_article=8, candidate_loss_share=0.4)
    assert other.pairs["pair_id"].tolist() != sample["pair_id"].tolist()


def test_too_few_losses_or_pairs_is_visible() -> None:
    preds, scores = _frames(n_docs=3, n_items=2)
    cands = _candidates(preds, scores)
    drawn = diagnostic_sample(cands, pairs=100, seed=42, max_per_article=4, candidate_loss_share=0.9)
    assert drawn.summary["status"] == "short" and len(drawn.pairs) == 12  # 3 articles x cap 4
    assert "12 of 100" in drawn.summary["reason"]
    few = cands.assign(candidate_loss=False)
    only = diagnostic_sample(few, pairs=10, seed=1, max_per_article=8, candidate_loss_share=0.5)
    assert only.summary["candidate_loss_share_realised"] == 0.0 and len(only.pairs) == 10
    empty = diagnostic_sample(cands.iloc[0:0], pairs=10, seed=1, max_per_article=8, candidate_loss_share=0.4)
    assert empty.summary["status"] == "empty" and empty.pairs.empty
