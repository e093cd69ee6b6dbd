"""H1: the primary-band CLCG family (micro, macro, PT gap, nets; per language and model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import summarize, valid_replicates
from clcg_pipeline.analysis._context import withheld_reason, withhold_fields
from clcg_pipeline.analysis._gaps import GapPanel, Roles, build_panel
from clcg_pipeline.analysis._prepare import KEY_COLUMNS, Rule, analysis_rows, check_columns
from clcg_pipeline.config import LanguagesConfig, StudyConfig

#: The H1 family's pooled estimands, in the order of the results.
H1_KEYS = ("h1_micro", "macro", "pt_gap", "macro_net", "micro_net")


def roles_of(languages: LanguagesConfig) -> Roles:
    return Roles(languages.reference, languages.baseline, tuple(languages.targets))


@dataclass
class H1Core:
    """The H1 dict plus the raw replicate vectors (point first) that part 2 reuses for p values."""

    result: dict[str, Any]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    panel: GapPanel | None = None


def band_rows(scores: pd.DataFrame, study: StudyConfig, rule: Rule) -> pd.DataFrame:
    """Primary-band rows with ``y`` under ``rule``."""
    band = study.band
    check_columns(scores, [*KEY_COLUMNS, band.metric])
    return analysis_rows(
        scores,
        metric=band.metric,
        rule=rule,
        levels=band.levels,
        item_source=band.item_source,
        context_scope=band.context_scope,
    )


def h1_core(
    scores: pd.DataFrame,
    languages: LanguagesConfig,
    study: StudyConfig,
    *,
    replicates: int | None = None,
    seed: int | None = None,
    rule: Rule = "A",
    rows: pd.DataFrame | None = None,
    presorted: bool = False,
) -> H1Core:
    """Compute the H1 family; ``rows`` may pass already-prepared band rows (with ``y``).

    ``presorted``: ``rows`` are in the suite's canonical order (see ``cluster_table``).
    """
    b = int(replicates if replicates is not None else study.bootstrap_replicates)
    s = int(seed if seed is not None else study.seed)
    conf = study.confidence
    roles = roles_of(languages)
    if rows is None:
        rows = band_rows(scores, study, rule)
    panel_langs = [roles.reference, roles.baseline, *roles.targets]
    in_panel = rows["language"].isin(panel_langs).to_numpy()
    if not in_panel.all():  # the suite passes panel rows only: no copy of them then
        rows = rows.loc[in_panel]
    panel, articles = build_panel(
        rows, roles, cell_cols=["model", "language"], replicates=b, seed=s, presorted=presorted
    )

    vectors: dict[str, np.ndarray] = {}
    vectors["h1_micro"] = panel.micro()
    vectors["macro"] = panel.macro()
    vectors["pt_gap"] = panel.pt_gap()
    vectors["macro_net"] = vectors["macro"] - vectors["pt_gap"]
    vectors["micro_net"] = vectors["h1_micro"] - vectors["pt_gap"]
    result: dict[str, Any] = {k: summarize(v, conf) for k, v in vectors.items()}

    by_language: dict[str, Any] = {}
    for lang in panel.present_targets():
        vec = panel.clcg(lang)
        vectors[f"clcg/{lang}"] = vec
        # n: rows entering CLCG_l (English plus the language), as everywhere in the suite.
        pair = [roles.reference, lang]
        by_language[lang] = {
            **summarize(vec, conf),
            "n": panel.n(language=pair),
            "n_articles": panel.n_articles(language=pair),
        }
    result["by_language"] = by_language

    by_model: dict[str, Any] = {}
    models = sorted(set(panel.rep.cells["model"])) if len(panel.rep.cells) else []
    for model in models:
        if panel.n(model=model) == 0:
            continue
        micro = panel.micro(model=model)
        pt = panel.pt_gap(model=model)
        macro_net = panel.macro(model=model) - pt
        vectors[f"h1_micro/{model}"] = micro
        vectors[f"pt_gap/{model}"] = pt
        vectors[f"macro_net/{model}"] = macro_net
        by_model[str(model)] = {
            "h1_micro": summarize(micro, conf),
            "pt_gap": summarize(pt, conf),
            "macro_net": summarize(macro_net, conf),
        }
    result["by_model"] = by_model
    result["settings"] = {
        "seed": s,
        "replicates": b,
        "confidence": conf,
        "band": study.band.model_dump(),
        "rule": rule,
    }
    result["n"] = {
        "english": panel.n(language=roles.reference),
        "target": panel.n(language=list(roles.targets)),
        "baseline": panel.n(language=roles.baseline),
        "articles": len(articles),
    }
    return H1Core(result, vectors, panel)


def estimate_h1(
    scores: pd.DataFrame,
    languages: LanguagesConfig,
    study: StudyConfig,
    *,
    replicates: int | None = None,
    seed: int | None = None,
    rule: Rule = "A",
) -> dict[str, Any]:
    """The H1 family on the primary band with article-cluster bootstrap intervals.

    Keys: ``h1_micro``, ``macro``, ``pt_gap``, ``macro_net``, ``micro_net`` (each
    ``{estimate, ci_low, ci_high}``), ``by_language``, ``by_model``, ``settings``, ``n``.
    Estimands that cannot be computed are ``None``; languages/models without rows are omitted.
    """
    core = h1_core(scores, languages, study, replicates=replicates, seed=seed, rule=rule)
    withhold_unidentifiable(core, roles_of(languages), int(getattr(study, "min_articles", 10)))
    return core.result


def contrast_languages(roles: Roles, key: str) -> list[str]:
    """Languages whose rows enter an H1-family contrast (the reference is always one)."""
    en, pt, tg = roles.reference, roles.baseline, list(roles.targets)
    if key == "pt_gap":
        return [en, pt]
    if key in ("macro_net", "micro_net"):
        return [en, pt, *tg]
    return [en, *tg]


def withhold_unidentifiable(core: H1Core, roles: Roles, min_articles: int) -> None:
    """Ask the suite's rule (``withheld_reason``) about each estimand of ``core`` with the same
    counts the suite gives it (the articles of the languages it contrasts, in its model, and its
    valid replicates), and withhold the interval of each it withholds, with the rule's reason.

    So ``clcg estimate`` without ``--full`` shows an interval exactly where the full suite does.
    A block without an estimate (``None``) has nothing to withhold and keeps its shape.
    """
    result, vectors, panel = core.result, core.vectors, core.panel
    if panel is None:
        return
    blocks: list[tuple[dict[str, Any], str, list[str], dict[str, Any]]] = [
        (result[key], key, contrast_languages(roles, key), {}) for key in H1_KEYS
    ]
    blocks += [
        (entry, f"clcg/{iso}", [roles.reference, iso], {}) for iso, entry in result["by_language"].items()
    ]
    for model, entry in result["by_model"].items():
        blocks += [
            (entry[key], f"{key}/{model}", contrast_languages(roles, key), {"model": model})
            for key in ("h1_micro", "pt_gap", "macro_net")
        ]
    for block, vector, langs, where in blocks:
        estimate = block.get("estimate")
        n_articles = panel.n_articles(language=langs, **where)
        reason = withheld_reason(estimate, n_articles, min_articles, valid_replicates(vectors[vector]))
        if estimate is not None and reason is not None:
            withhold_fields(block)
            block.update(identifiable=False, reason=reason)
