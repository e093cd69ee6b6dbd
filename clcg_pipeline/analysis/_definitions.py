"""What every estimand of ``study_results.json`` means: the one source of the definitions.

``run_suite`` copies the entries of the estimands it emits into ``definitions``; the page
docs/ESTIMANDS.md describes the same families (a test keeps the two in step). ``metric`` is a
template: ``{band}`` becomes the band metric of the run, ``{group}`` the row's group (a
family's own entry, read apart from its rows, says ``GROUP_METRIC`` there instead).

Directions: for gap estimands a higher value means a larger loss outside English (or outside
Portuguese for nets); ``sided`` is how the reported p was computed (``none``: no p).
"""

from __future__ import annotations

from typing import Any

#: Scored rows entering the contrast (every cell whose mean enters: the reference rows plus
#: the rows of each language or group compared), full sample, one count per estimand.
N_ROWS = "scored rows entering the contrast"
N_LANGUAGES = "languages (the resampled unit)"

_GAP = "higher = larger loss outside English"
_NET = "higher = larger loss beyond the Portuguese baseline"
_PAIRED = "two-sided: paired article-cluster bootstrap; BH across the pairs (p_adj)"
_RANK = "lower = smaller gap than the other models (1 = smallest)"

DEFINITIONS: dict[str, dict[str, str]] = {
    "h1_micro": {
        "definition": "H1 micro CLCG: mean of all English rows minus mean of all pooled target rows "
        "(Portuguese excluded)",
        "direction": _GAP,
        "sided": "one-sided (greater): article-cluster bootstrap",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "macro": {
        "definition": "macro CLCG: average over the targets with data of CLCG_l = mean_en - mean_l",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "pt_gap": {
        "definition": "Portuguese gap: mean_en - mean_pt",
        "direction": "higher = larger loss in Portuguese",
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "macro_net": {
        "definition": "macro net: macro CLCG - Portuguese gap, within each bootstrap replicate",
        "direction": _NET,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "micro_net": {
        "definition": "micro net: H1 micro CLCG - Portuguese gap, within each bootstrap replicate",
        "direction": _NET,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "clcg_language": {
        "definition": "language CLCG_l = mean_en - mean_l for the target language in `group`",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "net_language": {
        "definition": "net_l = CLCG_l - Portuguese gap (= mean_pt - mean_l) for the language in `group`",
        "direction": _NET,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h1_micro_model": {
        "definition": "H1 micro CLCG of the model in `group`",
        "direction": _GAP,
        "sided": "one-sided (greater): article-cluster bootstrap",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "pt_gap_model": {
        "definition": "Portuguese gap of the model in `group`",
        "direction": "higher = larger loss in Portuguese",
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "macro_net_model": {
        "definition": "macro net of the model in `group`",
        "direction": _NET,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "model_contrast_micro": {
        "definition": "paired contrast of two models (`group` = first vs second): the first model's H1 "
        "micro CLCG minus the second's, on the (language, article, item) units both answered, with the "
        "same article draws for both",
        "direction": "positive = the first model loses more outside English",
        "sided": _PAIRED,
        "metric": "{band}",
        "n": N_ROWS,
    },
    "model_contrast_macro": {
        "definition": "paired contrast of two models (`group` = first vs second): difference of their "
        "macro CLCG on the units both answered, same article draws",
        "direction": "positive = the first model loses more outside English",
        "sided": _PAIRED,
        "metric": "{band}",
        "n": N_ROWS,
    },
    "model_contrast_net": {
        "definition": "paired contrast of two models (`group` = first vs second): difference of their "
        "macro net on the units both answered, same article draws",
        "direction": "positive = the first model loses more beyond the Portuguese baseline",
        "sided": _PAIRED,
        "metric": "{band}",
        "n": N_ROWS,
    },
    "model_rank_micro": {
        "definition": "rank of the model in `group` among the models by H1 micro CLCG (1 = smallest "
        "gap, ties share the better rank); interval: whole-rank percentiles of its rank over the "
        "bootstrap replicates (one set of article draws for all models)",
        "direction": _RANK,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "model_rank_macro": {
        "definition": "rank of the model in `group` among the models by macro CLCG (1 = smallest gap)",
        "direction": _RANK,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "model_rank_net": {
        "definition": "rank of the model in `group` among the models by macro net (1 = smallest gap)",
        "direction": _RANK,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "english_score_model": {
        "definition": "mean English score of the model in `group` in the study band: the level its "
        "gaps are measured from",
        "direction": "higher = better comprehension in English",
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "class_raw_primary": {
        "definition": "Joshi class mean of language CLCGs (Portuguese in class 4 with its PT gap; "
        "unclassified languages left out)",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "class_net_primary": {
        "definition": "Joshi class mean of language CLCGs minus the Portuguese gap",
        "direction": _NET,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "class_raw_sensitivity": {
        "definition": "class mean of language CLCGs under the sensitivity mapping (unclassified "
        "languages such as Ayacucho Quechua take their sensitivity class)",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "class_net_sensitivity": {
        "definition": "sensitivity-mapping class mean minus the Portuguese gap",
        "direction": _NET,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h3_standardized_clcg": {
        "definition": "CLCG at the level in `group` on scores z-standardized within that level",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band} (L0: accuracy), z-scored within level",
        "n": N_ROWS,
    },
    "h3_raw_clcg_descriptive": {
        "definition": "raw CLCG at the level in `group` (descriptive only)",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band} (L0: accuracy)",
        "n": N_ROWS,
    },
    "h3_slope": {
        "definition": "H3: slope of the standardized per-level CLCG on ordered level (L0..L5)",
        "direction": "higher = the gap grows with item level",
        "sided": "one-sided (greater): article-cluster bootstrap",
        "metric": "{band} (L0: accuracy), z-scored within level",
        "n": N_ROWS,
    },
    "h2_difference": {
        "definition": "H2: CLCG(memorizable) - CLCG(new); memorizable when the article was published "
        "before the model's knowledge cutoff",
        "direction": "lower (negative) = memorization narrows the gap",
        "sided": "one-sided (less): article-cluster bootstrap",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h2_clcg_memorizable": {
        "definition": "H1 micro CLCG on memorizable model x article pairs",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h2_clcg_new": {
        "definition": "H1 micro CLCG on new (post-cutoff) model x article pairs",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h2_difference_model": {
        "definition": "H2 contrast for the model in `group`",
        "direction": "lower (negative) = memorization narrows the gap",
        "sided": "one-sided (less): article-cluster bootstrap",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h2_clcg_memorizable_model": {
        "definition": "H1 micro CLCG on the memorizable article pairs of the model in `group`",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h2_clcg_new_model": {
        "definition": "H1 micro CLCG on the new (post-cutoff) article pairs of the model in `group`",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h2_difference_class": {
        "definition": "H2 contrast within the Joshi class in `group` (pooled class rows)",
        "direction": "lower (negative) = memorization narrows the gap",
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h4_difference": {
        "definition": "H4: CLCG on human items - CLCG on llm items (primary band)",
        "direction": "higher = larger gap on human-written items",
        "sided": "two-sided: article-cluster bootstrap",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h4_clcg": {
        "definition": "H1 micro CLCG on the item source in `group`",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "h1_micro_rule_b": {
        "definition": "H1 micro CLCG under parse rule B (failed responses dropped, not scored 0)",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "macro_rule_b": {
        "definition": "macro CLCG under parse rule B",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "pt_gap_rule_b": {
        "definition": "Portuguese gap under parse rule B",
        "direction": "higher = larger loss in Portuguese",
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "macro_net_rule_b": {
        "definition": "macro net under parse rule B",
        "direction": _NET,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "micro_net_rule_b": {
        "definition": "micro net under parse rule B",
        "direction": _NET,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "tost_en_pt": {
        "definition": "TOST equivalence of English and Portuguese: estimate is the PT gap, p the larger "
        "of the two one-sided bootstrap p values against the configured bounds",
        "direction": "lower p = stronger evidence of equivalence",
        "sided": "two one-sided tests (bootstrap)",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "mixed_h1": {
        "definition": "mixed-effects check of H1: coefficient of English in y ~ english with crossed "
        "random intercepts for article and model, on cell means",
        "direction": _GAP,
        "sided": "two-sided (Wald z)",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "mixed_h2": {
        "definition": "mixed-effects check of H2: english x memorizable interaction with crossed random "
        "intercepts; p in the estimates table is the one-sided (less) p",
        "direction": "lower (negative) = memorization narrows the gap",
        "sided": "one-sided (less), from the two-sided Wald z",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "clcg_repetition": {
        "definition": "H1 micro CLCG of the repetition in `group` on the stability articles",
        "direction": _GAP,
        "sided": "none",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "context_gain_language": {
        "definition": "context gain: full_body minus closed_book score on the study's selector items, "
        "mean over matched model x item pairs of the language in `group` (descriptive)",
        "direction": "higher = the article helps more",
        "sided": "none",
        "metric": "{band} (status ok responses only)",
        "n": "full_body rows of the language plus closed_book rows of the matched pairs",
    },
    "context_gain_class": {
        "definition": "context gain of the Joshi class in `group`: mean of the context gains of its "
        "languages with data (Portuguese in class 4; unclassified left out)",
        "direction": "higher = the article helps more",
        "sided": "none",
        "metric": "{band} (status ok responses only)",
        "n": "full_body rows of the class languages plus closed_book rows of the matched pairs",
    },
    "nomological_spearman": {
        "definition": "Spearman of language CLCG (Portuguese: PT gap) with the correlate in `group` "
        "(exploratory; language-level bootstrap interval, withheld with p, as for every estimand, when "
        "the language CLCGs rest on fewer than `study.min_articles` articles)",
        "direction": "positive = higher correlate, larger gap",
        "sided": "two-sided (scipy Spearman)",
        "metric": "{band}",
        "n": N_LANGUAGES,
    },
    "nomological_spearman_sensitivity": {
        "definition": "Spearman of language CLCG with Joshi class, unclassified languages mapped to their "
        "sensitivity class",
        "direction": "positive = higher class, larger gap",
        "sided": "two-sided (scipy Spearman)",
        "metric": "{band}",
        "n": N_LANGUAGES,
    },
    "context_scope_difference": {
        "definition": "CLCG under the primary context scope minus CLCG under item_grounded, on the "
        "articles that have item_grounded rows",
        "direction": "higher = the full article widens the gap",
        "sided": "two-sided: article-cluster bootstrap",
        "metric": "{band}",
        "n": N_ROWS,
    },
    "replication_spearman": {
        "definition": "Spearman of the language CLCG rankings of the study corpus and the replication "
        "corpus (languages with data in both)",
        "direction": "higher = the rankings agree",
        "sided": "two-sided (scipy Spearman)",
        "metric": "{band} (study) / replication band metric",
        "n": N_LANGUAGES,
    },
    "replication_h1_micro": {
        "definition": "H1 micro CLCG on the replication corpus, in its replication band",
        "direction": _GAP,
        "sided": "none",
        "metric": "replication band metric (results.replication.band)",
        "n": N_ROWS,
    },
    "h1_micro_metric": {
        "definition": "H1 micro CLCG under the metric in `group` (metric sensitivity)",
        "direction": _GAP,
        "sided": "none",
        "metric": "{group}",
        "n": N_ROWS,
    },
    "macro_metric": {
        "definition": "macro CLCG under the metric in `group`",
        "direction": _GAP,
        "sided": "none",
        "metric": "{group}",
        "n": N_ROWS,
    },
    "macro_net_metric": {
        "definition": "macro net under the metric in `group`",
        "direction": _NET,
        "sided": "none",
        "metric": "{group}",
        "n": N_ROWS,
    },
    "pt_gap_metric": {
        "definition": "Portuguese gap under the metric in `group`",
        "direction": "higher = larger loss in Portuguese",
        "sided": "none",
        "metric": "{group}",
        "n": N_ROWS,
    },
    "micro_net_metric": {
        "definition": "micro net under the metric in `group`",
        "direction": _NET,
        "sided": "none",
        "metric": "{group}",
        "n": N_ROWS,
    },
}


# Which rows ``n`` counts, per family (``N_ROWS`` made concrete); the rest keep their own text.
_EN_TG = "scored rows entering the contrast: English rows plus target-language rows"
_EN_PT = "scored rows entering the contrast: English rows plus Portuguese rows"
_EN_PT_TG = "scored rows entering the contrast: English, Portuguese and target-language rows"
_EN_CLASS = "scored rows entering the contrast: English rows plus the class languages' rows"
_EN_PT_CLASS = "scored rows entering the contrast: English, Portuguese and the class languages' rows"
_PAIR_ROWS = "scored rows entering the contrast: both models' {langs} rows on the units both answered"
_RANK_ROWS = (
    "scored rows entering the contrast: every ranked model's {langs} rows (articles: those of the "
    "least covered model)"
)
_ROWS = {
    **dict.fromkeys(
        [
            "h1_micro",
            "macro",
            "h1_micro_model",
            "clcg_repetition",
            "h4_clcg",
            "h4_difference",
            "h2_clcg_memorizable",
            "h2_clcg_new",
            "h2_difference",
            "h2_difference_model",
            "h2_clcg_memorizable_model",
            "h2_clcg_new_model",
            "h3_standardized_clcg",
            "h3_raw_clcg_descriptive",
            "h3_slope",
            "context_scope_difference",
            "h1_micro_rule_b",
            "macro_rule_b",
            "h1_micro_metric",
            "macro_metric",
            "mixed_h1",
            "mixed_h2",
            "replication_h1_micro",
        ],
        _EN_TG,
    ),
    **dict.fromkeys(["pt_gap", "pt_gap_model", "pt_gap_rule_b", "pt_gap_metric", "tost_en_pt"], _EN_PT),
    **dict.fromkeys(
        [
            "macro_net",
            "micro_net",
            "macro_net_model",
            "macro_net_rule_b",
            "micro_net_rule_b",
            "macro_net_metric",
            "micro_net_metric",
        ],
        _EN_PT_TG,
    ),
    "clcg_language": "scored rows entering the contrast: English rows plus the language's rows",
    "net_language": "scored rows entering the contrast: English, Portuguese and the language's rows",
    "model_contrast_micro": _PAIR_ROWS.format(langs="English and target-language"),
    "model_contrast_macro": _PAIR_ROWS.format(langs="English and target-language"),
    "model_contrast_net": _PAIR_ROWS.format(langs="English, Portuguese and target-language"),
    "model_rank_micro": _RANK_ROWS.format(langs="English and target-language"),
    "model_rank_macro": _RANK_ROWS.format(langs="English and target-language"),
    "model_rank_net": _RANK_ROWS.format(langs="English, Portuguese and target-language"),
    "english_score_model": "scored rows entering the contrast: the model's English rows",
    **dict.fromkeys(["class_raw_primary", "class_raw_sensitivity", "h2_difference_class"], _EN_CLASS),
    **dict.fromkeys(["class_net_primary", "class_net_sensitivity"], _EN_PT_CLASS),
}
for _name, _text in _ROWS.items():
    DEFINITIONS[_name]["n"] = _text


def definition_of(estimand: str, group: str, band_metric: str) -> dict[str, str]:
    """The definition entry of ``estimand`` with its metric resolved for one row."""
    if estimand not in DEFINITIONS:
        raise KeyError(f"estimand {estimand!r} has no definition in analysis/_definitions.py")
    entry = DEFINITIONS[estimand]
    return {**entry, "metric": entry["metric"].format(band=band_metric, group=group)}


#: A family's metric when each of its rows names its own (``metric: "{group}"``): the family's
#: definition is read apart from its rows, so it says where the metric is, not a raw placeholder.
GROUP_METRIC = "the metric named in each row's group (estimates table)"


def definitions_for(estimands: list[str], band_metric: str) -> dict[str, dict[str, Any]]:
    """Definitions of the estimand families emitted by a run, in emission order."""
    out: dict[str, dict[str, Any]] = {}
    for name in estimands:
        if name not in out:
            out[name] = definition_of(name, GROUP_METRIC, band_metric)
    return out
