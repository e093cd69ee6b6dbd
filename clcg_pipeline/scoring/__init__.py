"""Scoring stage: per-prediction metrics."""

from clcg_pipeline.scoring._metrics import (
    PolarLabel,
    choice_accuracy,
    choice_index,
    exact_match,
    harmonic_mean,
    normalize_answer,
    polar_accuracy,
    polar_label,
    rouge_l,
    score_pairs,
    token_f1,
)
from clcg_pipeline.scoring._score import ANSWER_FORMATS, ScoringResult, SemSim, score_predictions
from clcg_pipeline.scoring._semsim import SemSimUnavailable, make_minilm_semsim, semsim_for

__all__ = [
    "ANSWER_FORMATS",
    "PolarLabel",
    "ScoringResult",
    "SemSim",
    "SemSimUnavailable",
    "choice_accuracy",
    "choice_index",
    "exact_match",
    "harmonic_mean",
    "make_minilm_semsim",
    "normalize_answer",
    "polar_accuracy",
    "polar_label",
    "rouge_l",
    "score_pairs",
    "score_predictions",
    "semsim_for",
    "token_f1",
]
