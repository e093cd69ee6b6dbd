"""Analysis of the automatic error taxonomy.

From the diagnostic sample and the two judges' labels: label frequencies per side, the
transition matrix EN label -> target label, the pair condition ``crosslingual_loss``,
agreement between the judges, each target label's contribution to the EN-target score delta,
and, beyond the study, order bias and self-preference of the judges, pooled and per language
and script (``_by_language``).

Every interval is the project's article-cluster bootstrap (``analysis/_bootstrap.py``): one
matrix of article multiplicities is drawn for the whole analysis, so every estimand is
resampled with the same articles, and below ``study.min_articles`` articles the interval is
withheld by the suite's rule (``SuiteContext.qualify``). Unparseable, refused or missing
judgements are left out of every estimate and counted, never read as a label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from clcg_pipeline.analysis import ClusterBootstrap, SuiteContext, roles_of, withheld_reason
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.storage import ErrorTaxonomyResults, finite, jsonable
from clcg_pipeline.validation.taxonomy._by_language import BY_GROUP_KEYS, judge_checks_by_group, scripts_of
from clcg_pipeline.validation.taxonomy._inputs import (
    ESTIMATE_COLUMNS,
    ORDER_COLUMNS,
    AnalysisInputs,
    check_inputs,
    family_of_name,
    inputs_from_config,
)
from clcg_pipeline.validation.taxonomy._judges import (
    agreement_rows,
    order_bias_rows,
    order_flips,
    self_preference_rows,
)
from clcg_pipeline.validation.taxonomy._label_set import Taxonomy, load_taxonomy
from clcg_pipeline.validation.taxonomy._labels import (
    crosslingual_loss_rows,
    delta_contribution,
    label_frequencies,
    transition_rows,
)


@dataclass
class TaxonomyAnalysis:
    results: ErrorTaxonomyResults
    estimates: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ESTIMATE_COLUMNS))


def skipped(reason: str, taxonomy: Taxonomy | None = None, **extra: Any) -> TaxonomyAnalysis:
    """The results of a study that did not run, with the reason (never an empty success)."""
    doc: dict[str, Any] = {
        "status": "skipped",
        "reason": reason,
        "taxonomy": taxonomy.id if taxonomy else None,
        "judges": [],
        "pairs": 0,
        "candidate_loss_share_realised": None,
        **{key: [] for key in _LIST_KEYS},
        "caveats": [reason],
    }
    doc.update(extra)
    # Keys come from _LIST_KEYS and the caller's ``extra``: ErrorTaxonomyResults' own, unprovable here.
    return TaxonomyAnalysis(cast(ErrorTaxonomyResults, doc))


_LIST_KEYS = (
    "excluded",
    "label_frequencies",
    "transitions",
    "crosslingual_loss",
    "agreement",
    "delta",
    "delta_contribution",
    "order_bias",
    "self_preference",
    *BY_GROUP_KEYS,
)


# --------------------------------------------------------------------------- input checks


# --------------------------------------------------------------------------- bootstrap helper


# --------------------------------------------------------------------------- the analysis


def analyse_error_taxonomy(
    sample: pd.DataFrame,
    judgements: pd.DataFrame,
    order_bias: pd.DataFrame | None,
    taxonomy: Taxonomy,
    inputs: AnalysisInputs,
    config: ProjectConfig,
) -> TaxonomyAnalysis:
    """Every estimand of the error-taxonomy study, as the results dict and the long estimates table.

    ``config`` supplies the suite's identifiability rule (``SuiteContext.qualify``); the numbers
    themselves come from ``inputs``.
    """
    nothing = _nothing_to_analyse(sample, judgements, inputs, taxonomy)
    if nothing is not None:
        return nothing
    order_bias = order_bias if order_bias is not None else pd.DataFrame(columns=list(ORDER_COLUMNS))
    check_inputs(sample, judgements, order_bias, taxonomy)
    sample = sample.assign(doc_id=sample["doc_id"].astype(str), pair_id=sample["pair_id"].astype(str))
    judgements = judgements.assign(pair_id=judgements["pair_id"].astype(str))
    judgements_all_judges = judgements["judge"].astype(str).unique()
    judgements = judgements[judgements["judge"].isin(inputs.judges)]

    articles = np.array(sorted(sample["doc_id"].unique()), dtype=object)
    boot = ClusterBootstrap(articles, _suite_context(config, inputs))
    est: list[dict[str, Any]] = []
    caveats: list[str] = []

    ok = judgements[judgements["status"] == "ok"]
    excluded = (
        judgements[judgements["status"] != "ok"]
        .groupby(["judge", "side", "status"], as_index=False)
        .size()
        .rename(columns={"size": "n"})
    )
    judges_doc = _judges_doc(judgements, inputs, len(sample))
    caveats.extend(_exclusion_caveats(excluded, judges_doc))
    if ok.empty:
        return skipped(
            f"no usable judgement: all {len(judgements)} were unparseable, refused or missing",
            taxonomy,
            judges=judges_doc,
            pairs=len(sample),
            excluded=excluded.to_dict("records"),
        )
    n_art = len(articles)
    status, reason = _identifiability(n_art, inputs.min_articles)
    if reason is not None:
        caveats.append(reason)

    sides = _labelled_sides(ok, sample, taxonomy)
    wide = _pairs_wide(sides, sample)
    doc: dict[str, Any] = {
        "status": status,
        "reason": reason,
        "taxonomy": taxonomy.id,
        "judges": judges_doc,
        "pairs": len(sample),
        "articles": n_art,
        "candidate_loss_share_realised": finite(sample["candidate_loss"].astype(bool).mean()),
        "candidate_loss_share_target": inputs.candidate_loss_target,
        "excluded": excluded.to_dict("records"),
        "label_frequencies": label_frequencies(sides, taxonomy, inputs.judges, boot, est),
        "transitions": transition_rows(wide),
        "crosslingual_loss": crosslingual_loss_rows(wide, taxonomy, inputs, boot, est),
        "agreement": agreement_rows(sides, wide, taxonomy, inputs.judges, boot, est, caveats),
    }
    delta, contributions = delta_contribution(sides, taxonomy, inputs.judges, boot, est, caveats)
    doc["delta"] = delta
    doc["delta_contribution"] = contributions
    flips = order_flips(order_bias, sample, caveats)
    doc["order_bias"] = order_bias_rows(flips, inputs.judges, boot, est)
    doc["self_preference"] = self_preference_rows(sides, taxonomy, inputs, boot, est, caveats)
    scripts = scripts_of(config)
    pooled = doc["self_preference"]
    doc.update(judge_checks_by_group(flips, sides, taxonomy, inputs, scripts, boot, est, caveats, pooled))
    doc["decomposition"] = DECOMPOSITION
    doc["caveats"] = [*caveats, *STUDY_CAVEATS]
    other = sorted(set(judgements_all_judges) - set(inputs.judges))
    if other:
        doc["caveats"].append(f"judgements by {other}, not among study.error_taxonomy.judges, were left out")
    estimates = pd.DataFrame(est, columns=ESTIMATE_COLUMNS)
    estimates = estimates.astype({"n": "Int64", "n_articles": "Int64"})
    return TaxonomyAnalysis(jsonable(doc, unknown="keep"), estimates)


DECOMPOSITION = (
    "For each judge, over the pairs whose target side it labelled: "
    "delta = mean(en_score - target_score) = sum over target labels l of frequency_l * mean_loss_l, "
    "where frequency_l = n_l / n and mean_loss_l = the mean delta of the n_l pairs labelled l; "
    "contribution_l = frequency_l * mean_loss_l = (sum of their deltas) / n, so the contributions "
    "sum to delta exactly (in every bootstrap replicate too)."
)
#: Said of every analysed study, after the caveats of the data at hand.
STUDY_CAVEATS = (
    "Frequencies describe the stratified diagnostic sample (candidate losses oversampled), not the "
    "prevalence of errors in the scored data; the labels are associative, not causal.",
    "Agreement between two LLM judges is coding consistency, not validity: neither judge is gold.",
    "Judges see the passage, so language is blinded only as metadata (model, language code and resource "
    "class are withheld), not in the text.",
)


def _identifiability(n_articles: int, min_articles: int) -> tuple[str, str | None]:
    """``ok``, or ``not_identifiable`` with the reason when too few articles carry the sample.

    The decision and its words are the suite's rule (``analysis.withheld_reason``), so the study's
    status says exactly what each of its withheld estimands says. Only the article count can
    withhold the whole study here: it has usable judgements, hence estimates (``_COMPUTED``).
    """
    reason = withheld_reason(_COMPUTED, n_articles, min_articles)
    return ("ok", None) if reason is None else ("not_identifiable", reason)


#: Stands for "the study has estimates" when the rule is asked about the study as a whole.
_COMPUTED = 0.0


def _nothing_to_analyse(
    sample: pd.DataFrame, judgements: pd.DataFrame, inputs: AnalysisInputs, taxonomy: Taxonomy
) -> TaxonomyAnalysis | None:
    """The skipped results when there are no judges, no pairs or no judgements; else None."""
    if not inputs.judges:
        return skipped("no judges configured (study.error_taxonomy.judges is empty)", taxonomy)
    if len(sample) == 0:
        return skipped("the diagnostic sample has no English/target pair", taxonomy)
    if len(judgements) == 0:
        return skipped(
            "no error judgements stored (error_judgements has no rows)", taxonomy, pairs=len(sample)
        )
    return None


def _suite_context(config: ProjectConfig, inputs: AnalysisInputs) -> SuiteContext:
    """The suite's identifiability rule, with this analysis's bootstrap settings."""
    return SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=inputs.replicates,
        seed=inputs.seed,
        confidence=inputs.confidence,
        min_articles=inputs.min_articles,
    )


def _exclusion_caveats(excluded: pd.DataFrame, judges_doc: list[dict[str, Any]]) -> list[str]:
    """What was left out: judgements not ok, judges with nothing usable, sides never judged."""
    caveats = []
    if len(excluded):
        caveats.append(
            f"{int(excluded['n'].sum())} judgement(s) unparseable, refused or missing were left out of every "
            "estimate (see excluded); they are never read as a label"
        )
    idle = [j["judge"] for j in judges_doc if j["ok"] == 0]
    if idle:
        caveats.append(f"no usable judgement from {idle}: they enter no estimate")
    absent = sum(j["absent"] for j in judges_doc)
    if absent:
        caveats.append(f"{absent} response side(s) have no judgement row at all; they are counted as absent")
    return caveats


def _labelled_sides(ok: pd.DataFrame, sample: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    """The usable labels with their pair's facts, collapsed label and semantic-error flag."""
    # The sample is the authority for a pair's model, language and article (judgement rows repeat them).
    facts = ["doc_id", "model", "language", "score_delta"]
    sides = ok.drop(columns=[c for c in facts if c in ok.columns]).merge(
        sample[["pair_id", *facts]], on="pair_id"
    )
    return sides.assign(
        collapsed=sides["label"].map(taxonomy.collapsed),
        semantic=sides["label"].isin(taxonomy.semantic_errors),
    )


def run_error_taxonomy_analysis(
    config: ProjectConfig,
    sample: pd.DataFrame,
    judgements: pd.DataFrame,
    order_bias: pd.DataFrame | None,
    *,
    replicates: int | None = None,
) -> TaxonomyAnalysis:
    """The analysis as the asset runs it: taxonomy, judges and bootstrap settings from ``config``."""
    taxonomy = load_taxonomy(config.study.error_taxonomy.taxonomy)
    inputs = inputs_from_config(config, replicates=replicates)
    return analyse_error_taxonomy(sample, judgements, order_bias, taxonomy, inputs, config)


def _judges_doc(judgements: pd.DataFrame, inputs: AnalysisInputs, pairs: int) -> list[dict[str, Any]]:
    """Per judge: family, judgements stored, usable, excluded by status, and sides never judged."""
    out = []
    for judge in inputs.judges:
        rows = judgements[judgements["judge"] == judge]
        counts = rows["status"].value_counts()
        out.append(
            {
                "judge": judge,
                "family": inputs.families.get(judge, family_of_name(judge)),
                "judgements": len(rows),
                "ok": int(counts.get("ok", 0)),
                "excluded": {str(k): int(v) for k, v in counts.items() if k != "ok"},
                "absent": 2 * pairs - len(rows),
            }
        )
    return out


def _pairs_wide(sides: pd.DataFrame, sample: pd.DataFrame) -> pd.DataFrame:
    """One row per (pair, judge) with both sides labelled: en_label, target_label and the pair's facts."""
    keep = ["pair_id", "judge", "label", "collapsed", "semantic"]
    en = sides.loc[sides["side"] == "en", keep]
    tg = sides.loc[sides["side"] == "target", keep]
    wide = en.merge(tg, on=["pair_id", "judge"], suffixes=("_en", "_target"))
    wide = wide.rename(columns={"label_en": "en_label", "label_target": "target_label"})
    return wide.merge(sample[["pair_id", "doc_id", "model", "language", "score_delta"]], on="pair_id")
