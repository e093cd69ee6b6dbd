"""The paired preference: exact binomial, crossed-random-intercept model, annotator bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from clcg_pipeline.validation.human._preference import MIXED_METHOD, decisive, exact, preference


def test_exact_reproduces_the_study_figures() -> None:
    # Study seed 0.5.8: 85 of 138 decisive judgments, 0.616, exact 95% CI [0.529, 0.697], p = 0.004.
    out = exact(85, 138, 0.95)
    assert out["proportion"] == pytest.approx(0.616, abs=5e-4)
    assert (round(out["exact_ci_low"], 3), round(out["exact_ci_high"], 3)) == (0.529, 0.697)
    assert round(out["p_one_sided"], 3) == 0.004


def simulate(p: float, *, annotators: int, pairs: int, per_pair: int, sd: float, seed: int) -> pd.DataFrame:
    """Judgments with a known conditional probability ``p`` of preferring the higher-resource side."""
    rng = np.random.default_rng(seed)
    a_eff, p_eff = rng.normal(0, sd, annotators), rng.normal(0, sd, pairs)
    rows = []
    for j in range(pairs):
        higher_side = "A" if rng.integers(2) else "B"
        for a in rng.choice(annotators, size=per_pair, replace=False):
            chose_higher = rng.random() < expit(logit(p) + a_eff[a] + p_eff[j])
            pick = higher_side if chose_higher else ("B" if higher_side == "A" else "A")
            rows.append(
                {
                    "annotator_id": f"a{a}",
                    "task_id": f"p{j}",
                    "higher_side": higher_side,
                    "preference": "none" if rng.random() < 0.1 else pick,
                }
            )
    return pd.DataFrame(rows)


def test_recovers_a_known_preference_probability() -> None:
    frame = simulate(0.7, annotators=40, pairs=60, per_pair=4, sd=0.3, seed=5)
    out = preference(frame, replicates=500, seed=1, confidence=0.95, min_clusters=10)
    assert out["judgments"] == len(frame) and out["decisive"] == len(frame) - out["non_decisive"]
    assert out["exact_ci_low"] < 0.7 < out["exact_ci_high"]
    assert out["p_one_sided"] < 0.001
    mixed = out["mixed"]
    assert mixed["method"] == MIXED_METHOD and mixed["status"] == "ok"
    assert mixed["ci_low"] < 0.7 < mixed["ci_high"]
    assert mixed["odds_ratio"] == pytest.approx(mixed["probability"] / (1 - mixed["probability"]))
    assert mixed["or_ci_low"] < mixed["odds_ratio"] < mixed["or_ci_high"] and mixed["p_one_sided"] < 0.001
    boot = out["bootstrap"]
    assert boot["estimate"] == pytest.approx(out["proportion"])
    assert boot["ci_low"] < 0.7 < boot["ci_high"]
    assert boot["annotators"] == decisive(frame)["annotator_id"].nunique()


def test_no_preference_is_not_significant() -> None:
    frame = simulate(0.5, annotators=30, pairs=30, per_pair=3, sd=0.2, seed=9)
    out = preference(frame, replicates=300, seed=1, confidence=0.95, min_clusters=10)
    assert out["p_one_sided"] > 0.05 and out["mixed"]["ci_low"] < 0.5 < out["mixed"]["ci_high"]


def test_only_decisive_judgments_count_and_orientation_is_by_side() -> None:
    frame = pd.DataFrame(
        {
            "annotator_id": ["a", "b", "c", "d"],
            "task_id": ["p1", "p1", "p2", "p2"],
            "higher_side": ["A", "A", "B", "B"],
            "preference": ["A", "none", "A", "B"],
        }
    )
    rows = decisive(frame)
    assert rows["higher"].tolist() == [1, 0, 1]
    bad = frame.assign(higher_side=["A", "A", None, None])
    with pytest.raises(ValueError, match="pair task 'p2': higher_side None"):
        decisive(bad)


def test_degenerate_inputs_say_so() -> None:
    frame = pd.DataFrame({"annotator_id": ["a"], "task_id": ["p"], "higher_side": ["A"], "preference": ["A"]})
    out = preference(frame, replicates=10, seed=1, confidence=0.95, min_clusters=10)
    assert out["mixed"]["status"].startswith("not fitted") and out["mixed"]["probability"] is None
    assert out["bootstrap"]["ci_low"] is None and "1 < study.min_articles" in out["bootstrap"]["reason"]
    assert exact(0, 0, 0.95)["proportion"] is None
