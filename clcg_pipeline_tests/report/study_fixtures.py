"""Crafted ``error_taxonomy``, ``human_validation`` and ``granularity`` dicts, as the contracts shape them.

Shared by the report tests and the browser test. Numbers are arbitrary but consistent (shares
of one judge and side sum to one, transition counts match the pairs).
"""

from __future__ import annotations

from typing import Any

LABELS = (
    "correct",
    "partial_or_omission",
    "unsupported_addition",
    "contradiction",
    "format_or_parse_failure",
    "refusal",
    "wrong_language",
    "outside_passage",
    "other",
)
JUDGES = ("judge-a", "judge-b")
# EN label -> target label -> pairs, per judge (judge-b sees a little more loss).
TRANSITIONS = {
    "judge-a": {
        ("correct", "correct"): 40,
        ("correct", "contradiction"): 12,
        ("correct", "partial_or_omission"): 8,
        ("partial_or_omission", "partial_or_omission"): 10,
        ("contradiction", "correct"): 3,
        ("refusal", "wrong_language"): 2,
    },
    "judge-b": {
        ("correct", "correct"): 36,
        ("correct", "contradiction"): 15,
        ("correct", "partial_or_omission"): 9,
        ("partial_or_omission", "partial_or_omission"): 11,
        ("contradiction", "correct"): 2,
        ("outside_passage", "other"): 2,
    },
}


def _ci(value: float, width: float, identifiable: bool) -> dict[str, Any]:
    if identifiable:
        return {"ci_low": round(value - width, 4), "ci_high": round(value + width, 4), "identifiable": True}
    return {
        "ci_low": None,
        "ci_high": None,
        "identifiable": False,
        "reason": "too few articles: 6 < study.min_articles = 10",
    }


def taxonomy(status: str = "ok") -> dict[str, Any]:
    ident = status == "ok"
    pairs = sum(TRANSITIONS["judge-a"].values())
    frequencies = []
    for judge in JUDGES:
        for side, index in (("en", 0), ("target", 1)):
            counts: dict[str, int] = {}
            for key, n in TRANSITIONS[judge].items():
                counts[key[index]] = counts.get(key[index], 0) + n
            total = sum(counts.values())
            for label in LABELS:
                share = counts.get(label, 0) / total
                frequencies.append(
                    {
                        "judge": judge,
                        "side": side,
                        "label": label,
                        "n": counts.get(label, 0),
                        "total": total,
                        "share": share,
                        **_ci(share, 0.04 if share else 0.0, ident),
                    }
                )
    transitions = [
        {"judge": judge, "en_label": en, "target_label": target, "n": n, "share": n / sum(t.values())}
        for judge, t in TRANSITIONS.items()
        for (en, target), n in t.items()
    ]
    loss = []
    for judge, overall in (("judge-a", 0.16), ("judge-b", 0.2)):
        for group, value in (
            ("all", overall),
            ("joshi_class=1", overall + 0.05),
            ("joshi_class=4", overall - 0.06),
            ("language=sw", overall + 0.02),
        ):
            loss.append(
                {
                    "judge": judge,
                    "group": group,
                    "estimate": value,
                    "n": 75,
                    "n_articles": 30,
                    **_ci(value, 0.05, ident),
                }
            )
    return {
        "status": status,
        "reason": None
        if ident
        else "too few articles: 6 < study.min_articles = 10",  # the rule's words (analysis.withheld_reason)
        "taxonomy": "clcg-error-v1",
        "judges": [
            {
                "judge": j,
                "family": j.split("-")[0],
                "judgements": 150,
                "ok": 148,
                "excluded": {"unparseable": 2},
                "absent": 0,
            }
            for j in JUDGES
        ],
        "pairs": pairs,
        "articles": 30 if ident else 6,
        "candidate_loss_share_realised": 0.38,
        "candidate_loss_share_target": 0.4,
        "excluded": [{"judge": "judge-a", "side": "target", "status": "unparseable", "n": 2}],
        "label_frequencies": frequencies,
        "transitions": transitions,
        "crosslingual_loss": loss,
        "agreement": [
            {
                "level": level,
                "judge_a": "judge-a",
                "judge_b": "judge-b",
                "percent": pct,
                "percent_ci_low": pct - 0.05,
                "percent_ci_high": pct + 0.05,
                "kappa": kappa,
                "n": 150,
                "n_articles": 30,
                **_ci(kappa, 0.08, ident),
            }
            for level, pct, kappa in (("fine", 0.81, 0.62), ("collapsed", 0.85, 0.68), ("binary", 0.93, 0.79))
        ],
        "delta": [
            {"judge": "judge-a", "estimate": 0.12, "n": 75, "n_articles": 30, **_ci(0.12, 0.03, ident)}
        ],
        "delta_contribution": [
            {
                "judge": "judge-a",
                "label": label,
                "n": n,
                "frequency": f,
                "mean_loss": m,
                "contribution": f * m,
                **_ci(f * m, 0.01, ident),
            }
            for label, n, f, m in (
                ("contradiction", 12, 0.16, 0.55),
                ("partial_or_omission", 18, 0.24, 0.12),
                ("correct", 45, 0.6, 0.01),
            )
        ],
        "order_bias": [
            {"judge": "judge-a", "pairs": 40, "flips": 6, "flip_rate": 0.15, **_ci(0.15, 0.06, ident)},
            {
                "judge": "judge-b",
                "pairs": 0,
                "flip_rate": None,
                "ci_low": None,
                "ci_high": None,
                "reason": "no pair judged both ways round with both judgements usable",
            },
        ],
        "self_preference": [
            {
                "judge": "judge-a",
                "judge_family": "judge",
                "own_rate": None,
                "other_rate": None,
                "difference": None,
                "ci_low": None,
                "ci_high": None,
                "n": 150,
                "identifiable": False,
                "reason": "not identifiable: no evaluated model of the judge's family 'judge'",
            },
        ],
        "caveats": ["Frequencies describe the stratified diagnostic sample, not prevalence."],
    }


def human(status: str = "ok", *, simulated: bool = True) -> dict[str, Any]:
    if status == "awaiting":
        return {
            "status": "awaiting",
            "reason": "no annotation file imported (inbox clcg_data/annotations/inbox is empty)",
            "simulated": False,
            "qc_funnel": [],
            "alpha": [],
            "spearman": [],
            "class_adequacy": [],
            "preference": {},
            "ceiling": {},
            "judge_agreement": [],
            "caveats": [],
        }
    ident = status == "ok"
    return {
        "status": status,
        "reason": None if ident else "only 4 items with two valid ratings",
        "simulated": simulated,
        "qc_funnel": [
            {
                "step": "imported",
                "excluded_annotators": 0,
                "excluded_ratings": 0,
                "remaining_annotators": 12,
                "remaining_ratings": 900,
            },
            {
                "step": "attention_check",
                "excluded_annotators": 2,
                "excluded_ratings": 150,
                "remaining_annotators": 10,
                "remaining_ratings": 750,
            },
            {
                "step": "contradiction_rule",
                "excluded_annotators": 0,
                "excluded_ratings": 31,
                "remaining_annotators": 10,
                "remaining_ratings": 719,
            },
            {
                "step": "speed_outliers",
                "excluded_annotators": 1,
                "excluded_ratings": 60,
                "remaining_annotators": 9,
                "remaining_ratings": 659,
            },
        ],
        "alpha": [
            {
                "dimension": "adequacy",
                "level": "ordinal",
                "alpha": 0.74,
                "items": 200,
                **_ci(0.74, 0.05, ident),
            },
            {
                "dimension": "keypoint_recall",
                "level": "interval",
                "alpha": 0.58,
                "items": 180,
                **_ci(0.58, 0.07, ident),
            },
            {
                "dimension": "primary_error_category",
                "level": "nominal",
                "alpha": 0.49,
                "items": 120,
                **_ci(0.49, 0.09, ident),
            },
        ],
        "spearman": [
            {
                "metric": "token_f1",
                "human": "adequacy",
                "rho": 0.61,
                "p": 0.0001,
                "n": 200,
                **_ci(0.61, 0.06, ident),
            },
            {
                "metric": "token_f1",
                "human": "keypoint_recall",
                "rho": 0.55,
                "p": 0.0004,
                "n": 180,
                **_ci(0.55, 0.07, ident),
            },
        ],
        "class_adequacy": [
            {"joshi_class": 1, "adequacy_mean": 3.6, "adequacy_median": 4.0, "clcg": 0.14, "n": 120},
            {"joshi_class": 4, "adequacy_mean": 4.3, "adequacy_median": 4.5, "clcg": 0.05, "n": 130},
        ],
        "preference": {
            "decisive": 88,
            "higher_preferred": 57,
            "proportion": 0.648,
            "exact_ci_low": 0.539,
            "exact_ci_high": 0.747,
            "p_one_sided": 0.0036,
            "mixed": {
                "probability": 0.66,
                "ci_low": 0.55,
                "ci_high": 0.76,
                "odds_ratio": 1.94,
                "or_ci_low": 1.22,
                "or_ci_high": 3.1,
                "p_one_sided": 0.003,
                "method": "statsmodels BinomialBayesMixedGLM (VB)",
            },
            "bootstrap": {"estimate": 0.648, "ci_low": 0.55, "ci_high": 0.74}
            if ident
            else {"estimate": 0.648, "ci_low": None, "ci_high": None},
        },
        "ceiling": {"triggered": False, "min_class_adequacy_median": 4.0, "high_low_difference": 0.7},
        "judge_agreement": [{"judge": "judge-a", "percent": 0.78, "kappa": 0.55, "n": 60}],
        "caveats": ["These annotations are simulated (validation/demo_annotations)."],
    }


def granularity(status: str = "ok") -> dict[str, Any]:
    if status in ("skipped", "empty"):
        return {
            "status": status,
            "reason": "study.granularity.enabled is false: the granularity task family is off",
            "documents": [],
            "scores": [],
            "gaps": [],
            "position_curve": [],
            "heatmap": [],
            "no_context": [],
            "cloze_errors": [],
            "judge_agreement": None,
            "human_judge_correlation": None,
            "human_judge_correlation_reason": "study.granularity.enabled is false",
            "prompt_tokens_by_task": [],
            "caveats": ["study.granularity.enabled is false: the granularity task family is off"],
        }
    ident = status == "ok"
    heat = []
    curve = []
    base_gap = {"high": 0.02, "mid": 0.06, "low": 0.11}
    for group, base in base_gap.items():
        for gran, metric, scale in (
            ("word", "accuracy", 1.0),
            ("sentence", "accuracy", 1.0),
            ("paragraph", "rouge_l", 0.5),
        ):
            for region, bump in (("begin", 0.0), ("middle", 0.04), ("end", 0.01)):
                gap = round((base + bump) * scale, 4)
                heat.append(
                    {
                        "language_group": group,
                        "granularity": gran,
                        "metric": metric,
                        "region": region,
                        "gap": gap,
                        "n": 40,
                        **_ci(gap, 0.02, ident),
                    }
                )
        for region, bump in (("begin", 0.0), ("middle", 0.05), ("end", 0.01)):
            for position, pbump in (("begin", 0.0), ("middle", 0.01), ("end", 0.0)):
                gap = round(base + bump + pbump, 4)
                curve.append(
                    {
                        "granularity": "word",
                        "metric": "accuracy",
                        "region": region,
                        "position": position,
                        "language_group": group,
                        "score": 0.8 - gap,
                        "gap": gap,
                        "n": 20,
                        **_ci(gap, 0.03, ident),
                    }
                )
    # A group with no gap (English itself) must not be drawn as a line.
    curve.append(
        {
            "granularity": "word",
            "metric": "accuracy",
            "region": "begin",
            "position": "begin",
            "language_group": "reference",
            "score": 0.82,
            "gap": None,
            "ci_low": None,
            "ci_high": None,
        }
    )
    return {
        "status": status,
        "reason": None if ident else "too few documents: 2 < study.min_articles = 10",
        "documents": [{"bucket": "8K-16K", "n_documents": 2, "languages": ["en", "sw", "yo"]}],
        "scores": [
            {
                "task": "word_single_qa",
                "granularity": "word",
                "region": "middle",
                "position": "begin",
                "language": lang,
                "model": "lexical-reader",
                "metric": "accuracy",
                "estimate": est,
                "n": 30,
                "n_documents": 2,
                **_ci(est, 0.05, ident),
            }
            for lang, est in (("en", 0.9), ("sw", 0.7))
        ],
        "gaps": [
            {
                "granularity": "word",
                "metric": "accuracy",
                "region": "middle",
                "position": "begin",
                "language": "sw",
                "joshi_class": 2,
                "model": "lexical-reader",
                "gap": 0.2,
                "n": 30,
                **_ci(0.2, 0.05, ident),
            }
        ],
        "position_curve": curve,
        "heatmap": heat,
        "no_context": [
            {
                "task": "cloze",
                "metric": "accuracy",
                "language": "sw",
                "model": "lexical-reader",
                "with_context": 0.7,
                "without_context": 0.2,
                "drop": 0.5,
                **_ci(0.5, 0.1, ident),
            }
        ],
        "cloze_errors": [
            {"judge": "judge-a", "kind": "main", "label": "M1", "n": 5, "share": 0.5},
            {"judge": "judge-a", "kind": "main", "label": "M3", "n": 5, "share": 0.5},
            {"judge": "judge-a", "kind": "tag", "label": "S2", "n": 3, "share": 0.3},
        ],
        "judge_agreement": {
            "alpha_ordinal": 0.71,
            "alpha_ordinal_by_dimension": {"topic_fidelity": 0.66},
            "icc": None,
            "icc_reason": "no maintained ICC implementation installed",
            "n": 24,
            "judges": ["judge-a", "judge-b"],
            "spread_mean": 7.5,
        },
        "human_judge_correlation": None,
        "human_judge_correlation_reason": "no human ratings imported",
        "prompt_tokens_by_task": [
            {
                "task": "cloze",
                "calls": 40,
                "prompt_tokens_total": 480000,
                "prompt_tokens_mean": 12000,
                "prompt_tokens_max": 15000,
            },
            {
                "task": "word_single_qa",
                "calls": 90,
                "prompt_tokens_total": 990000,
                "prompt_tokens_mean": 11000,
                "prompt_tokens_max": 14000,
            },
        ],
        "caveats": ["metrics differ across granularities: compare gaps within a metric"],
    }
