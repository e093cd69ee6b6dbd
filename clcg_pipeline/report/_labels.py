"""Display names, captions and caveat texts of the report: what the reader sees, in one place."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._format import MISSING

# The five H1 summary estimands, in the order docs/ESTIMANDS.md lists them.
H1_SUMMARY: tuple[tuple[str, str], ...] = (
    ("h1_micro", "H1 micro CLCG"),
    ("macro", "Macro CLCG"),
    ("pt_gap", "Portuguese gap"),
    ("macro_net", "Macro net"),
    ("micro_net", "Micro net"),
)
MODEL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("h1_micro", "H1 micro"),
    ("pt_gap", "PT gap"),
    ("macro_net", "Macro net"),
)

# Sections for the other parts of the results document, by every name the analysis stage
# may use for them; keys not listed here still render, under their own name.
KNOWN_SECTIONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("language_net", "net_by_language"), "Net gap per language (vs Portuguese)"),
    (("joshi_class", "by_class", "per_class", "classes"), "Per Joshi class"),
    (("model_contrasts",), "Model contrasts and ranks"),
    (("h2", "memorability"), "H2: memorability"),
    (("h3", "level_profile"), "H3: level profile"),
    (("h4", "item_source"), "H4: item source"),
    (("multiplicity", "bh", "bh_family"), "Multiplicity (Benjamini-Hochberg)"),
    (("equivalence", "tost"), "Equivalence (TOST, EN-PT)"),
    (("mixed_effects", "mixed_models", "mixed", "mixed_model"), "Mixed-effects models (convergent check)"),
    (("parse_rule", "rule_sensitivity", "rules", "rule_b"), "Parse-failure rule A vs B"),
    (("metric_sensitivity", "metrics"), "Metric sensitivity"),
    (("repetitions",), "Repetitions"),
    (("context_gain",), "Context gain"),
    (("nomological", "nomological_network"), "Nomological network (exploratory)"),
    (("context_scope", "scope_probe", "context_scope_probe"), "Context-scope probe"),
    (("replication", "cross_corpus"), "Cross-corpus replication"),
    (("excluded_versions",), "Excluded article versions"),
)
# The studies of issues 10 and 11: always a section each, saying "not run" when the key is absent.
STUDY_SECTIONS = ("error_taxonomy", "human_validation", "granularity")
# Rendered elsewhere: metadata, the drill-down, definitions, and "estimands" (a flat copy of
# the estimates table, shown once as "All estimates").
NOT_SECTIONS = {
    "h1",
    "languages",
    "languages_without_data",
    "languages_with_data",
    "warnings",
    "settings",
    "config_hash",
    "title",
    "generated_at",
    "code_version",
    "estimands",
    "definitions",
    "drilldown",
    *STUDY_SECTIONS,
}
# Readable names for keys the analysis stage uses; other keys are turned into words.
LABELS: dict[str, str] = {
    "h1_micro": "H1 micro CLCG",
    "macro": "Macro CLCG",
    "pt_gap": "Portuguese gap (EN \u2212 PT)",
    "macro_net": "Macro net",
    "micro_net": "Micro net",
    "by_model": "Per model",
    "by_language": "Per language",
    "by_class": "Per Joshi class",
    "by_class_sensitivity": "Per Joshi class (primary mapping, pooled class rows)",
    "pooled": "Pooled over models",
    "memorizable": "Memorizable articles",
    "new": "New articles",
    "difference": "Difference",
    "raw_descriptive": "Raw CLCG per level (descriptive)",
    "standardized": "Standardized CLCG per level",
    "standardization": "Standardization (per level)",
    "slope": "Slope over levels",
    "human": "Human-written items",
    "llm": "LLM-generated items",
    "primary": "Primary class mapping",
    "sensitivity": "Sensitivity class mapping",
    "raw": "Raw CLCG",
    "net": "Net CLCG",
    "per_repetition": "Per repetition",
    "pairwise_spearman": "Pairwise Spearman between repetitions",
    "kendalls_w": "Kendall's W",
    "kendall_w": "Kendall's W",
    "p_adj": "p (adj.)",
    "p_value": "p",
    "sd": "SD",
    "se": "SE",
    "n_cells": "cells",
    "n_models": "models",
    "p_sided": "p sidedness",
    "n_pairs": "pairs",
    "non_latin": "Non-Latin script",
    "valid_resamples": "valid resamples",
    "mean_pairwise_spearman": "Mean pairwise Spearman",
    "spearman": "Spearman correlation with the language CLCG",
    "partial_spearman_on_joshi": "Partial Spearman, controlling for Joshi class",
    "spearman_joshi_sensitivity": "Spearman with Joshi class (sensitivity mapping)",
    "standardized_ols": "Standardized OLS (descriptive)",
    "paired_article_means": "Paired article means (t-based TOST)",
    "bootstrap": "Bootstrap TOST",
    "closed_book_mean": "Closed-book mean",
    "matched_rows": "Matched rows",
    "selector": "Item selection",
    "n": "n",
    "n_articles": "articles",
    "ci_90": "90% CI",
    "p_lower": "p (lower bound test)",
    "p_upper": "p (upper bound test)",
    "rows_without_date_or_cutoff": "Rows without a date or cutoff",
    "A": "Rule A (parse failures score 0)",
    "B": "Rule B (parse failures dropped)",
    "difference_h1_micro": "Difference in H1 micro (A \u2212 B)",
    "variance_components": "Variance components",
    "band_metric": "metric of the band",
    "token_f1": "Token-F1",
    "rouge_l": "ROUGE-L",
    "semsim": "semantic similarity",
    "english_score": "English score per model",
    "pairs": "Paired contrasts (first model minus second)",
    "ranks": "Rank per model (1 = smallest gap)",
    "n_common_items": "items answered by both",
    "model_a": "first model",
    "model_b": "second model",
    "h1": "H1 model",
    "h2": "H2 model",
}

# Automatic metrics by name: the metric-sensitivity section and the human-validation Spearman table.
METRIC_NAMES = {
    "token_f1": "Token-F1",
    "rouge_l": "ROUGE-L",
    "semsim": "semantic similarity",
    "exact_match": "exact match",
    "clcg_class": "class CLCG",  # class-level rank correlation of adequacy with the class gap
}
# Metric names of the granularity heat maps and curves.
GRANULARITY_METRICS = {
    "accuracy": "accuracy",
    "rouge_l": "ROUGE-L",
    "bleu": "BLEU",
    "chrf": "chrF",
    "judge_total": "judge total",
}

SIMULATED_BANNER = (
    "SIMULATED annotations: the ratings in this section come from the simulated demo set shipped with "
    "the code, not from human annotators. They exercise the import, quality control and statistics "
    "end to end; no number here is evidence about any model."
)


SIMULATED_CAVEAT = (
    "Human validation uses SIMULATED annotations (the demo set shipped with the code), not ratings by "
    "people: its numbers exercise the pipeline and are no evidence about any model."
)


# The language groups of the granularity study (Joshi class groups, and English as the reference).
GRANULARITY_GROUP_NAMES = {
    "high": "high-resource (Joshi 4\u20135)",
    "mid": "mid-resource (Joshi 2\u20133)",
    "low": "low-resource (Joshi 0\u20131)",
    "targets": "all target languages",
    "reference": "reference (English)",
}


def granularity_group_label(group: object) -> str:
    """A language group of the granularity study in words."""
    text = str(group)
    return GRANULARITY_GROUP_NAMES.get(text, text)


def granularity_row_key(record: Mapping[str, Any]) -> str:
    """A heat-map row and curve panel: the granularity and its metric, e.g. "sentence \u00b7 accuracy"."""
    return row_key_of(record.get("granularity"), record.get("metric"))


def row_key_of(granularity: object, metric: object) -> str:
    """:func:`granularity_row_key` of a typed row's two fields."""
    name = str(granularity or MISSING)
    return f"{name} \u00b7 {GRANULARITY_METRICS.get(str(metric), str(metric))}" if metric else name
