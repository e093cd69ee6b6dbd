"""Power from pilot data: the articles needed from the bootstrap SE, checked by resampling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from clcg_pipeline.analysis import PowerQuestion, power_from_pilot
from clcg_pipeline.analysis._bootstrap import draw_multiplicities
from clcg_pipeline.synthetic import synthetic_scores
from clcg_pipeline_tests.analysis.conftest import small_config

N_ART = 30


@pytest.fixture(scope="module")
def cfg(project, small_langs):
    return small_config(project, small_langs, 2, replicates=400)


@pytest.fixture(scope="module")
def scores(cfg) -> pd.DataFrame:
    return synthetic_scores(cfg.languages, n_models=2, n_articles=N_ART, n_stability=0, seed=5)


def _independent_se(scores: pd.DataFrame, cfg) -> float:
    """The micro gap's bootstrap SE from per-article sums, written out with plain numpy."""
    band = cfg.study.band
    rows = scores[
        scores["level"].isin(band.levels)
        & (scores["item_source"] == band.item_source)
        & (scores["context_scope"] == band.context_scope)
    ]
    y = np.where(rows["status"] == "ok", rows[band.metric], 0.0)
    frame = pd.DataFrame({"doc_id": rows["doc_id"].astype(str), "language": rows["language"], "y": y})
    articles = sorted(frame["doc_id"].unique())
    targets = list(cfg.languages.targets)

    def per_article(languages: list[str]) -> tuple[np.ndarray, np.ndarray]:
        part = frame[frame["language"].isin(languages)].groupby("doc_id")["y"].agg(["sum", "count"])
        part = part.reindex(articles, fill_value=0)
        return part["sum"].to_numpy(float), part["count"].to_numpy(float)

    (s_en, n_en), (s_t, n_t) = per_article(["en"]), per_article(targets)
    w = draw_multiplicities(len(articles), cfg.study.bootstrap_replicates, cfg.study.seed)
    gaps = (w @ s_en) / (w @ n_en) - (w @ s_t) / (w @ n_t)
    return float(np.std(gaps, ddof=1))


def test_articles_needed_follow_the_bootstrap_se(scores, cfg) -> None:
    question = PowerQuestion(effect=0.02)
    plan = power_from_pilot(scores, cfg, question)
    assert plan["status"] == "ok" and plan["pilot_articles"] == N_ART and plan["caveat"] is None
    se = _independent_se(scores, cfg)
    assert plan["pilot_se"] == pytest.approx(se, rel=1e-9)
    z = stats.norm.ppf(0.95) + stats.norm.ppf(0.8)  # one-sided: H1 says English scores higher
    assert plan["articles_needed"] == int(np.ceil(N_ART * (z * se / 0.02) ** 2))
    # Resampling that many articles, the effect in place, delivers about the power asked for.
    assert plan["simulated_power"] == pytest.approx(0.8, abs=0.06)
    # Half the effect needs four times the articles.
    half = power_from_pilot(scores, cfg, PowerQuestion(effect=0.01))
    assert half["articles_needed"] == pytest.approx(4 * plan["articles_needed"], rel=0.03)  # ceil


def test_a_difference_between_two_models_is_two_sided_and_paired(scores, cfg) -> None:
    # Model "twin" answers as the first model does, with a little noise: the articles drive both.
    first = scores[scores["model"] == scores["model"].iloc[0]]
    rng = np.random.default_rng(3)
    metric = cfg.study.band.metric
    twin = first.assign(
        model="twin", **{metric: np.clip(first[metric] + rng.normal(0, 0.02, len(first)), 0, 1)}
    )
    pair = pd.concat([first, twin], ignore_index=True)
    models = (str(first["model"].iloc[0]), "twin")
    plan = power_from_pilot(pair, cfg, PowerQuestion(effect=0.02, models=models))
    assert plan["status"] == "ok" and plan["sided"] == "two-sided" and plan["models"] == list(models)
    # Paired: the same article draws for both models, so what the articles share cancels; two
    # gaps drawn apart would add their variances.
    apart = [
        power_from_pilot(pair[pair["model"] == m], cfg, PowerQuestion(effect=0.02))["pilot_se"]
        for m in models
    ]
    assert plan["pilot_se"] < 0.5 * np.hypot(*apart)
    with pytest.raises(ValueError, match="no primary-band scores for model"):
        power_from_pilot(pair, cfg, PowerQuestion(effect=0.02, models=(models[0], "nope")))


def test_bad_questions_and_too_little_pilot_data_say_so(scores, cfg) -> None:
    with pytest.raises(ValueError, match="--effect"):
        PowerQuestion(effect=0.0)
    with pytest.raises(ValueError, match="--alpha and --power"):
        PowerQuestion(effect=0.1, power=1.0)
    few = scores[scores["doc_id"].isin(sorted(scores["doc_id"].unique())[:4])]
    assert "rough" in power_from_pilot(few, cfg, PowerQuestion(effect=0.02))["caveat"]
    one = scores[scores["doc_id"] == scores["doc_id"].iloc[0]]
    plan = power_from_pilot(one, cfg, PowerQuestion(effect=0.02))
    assert plan["status"].startswith("not identifiable") and "articles_needed" not in plan


def test_a_large_effect_never_plans_fewer_articles_than_the_analysis_needs(scores, cfg) -> None:
    """`--effect 0.05` answered 4 articles where study.min_articles is 10 (issue 34 item 6)."""
    minimum = cfg.study.min_articles
    plan = power_from_pilot(scores, cfg, PowerQuestion(effect=0.5))
    assert plan["articles_needed"] == minimum
    assert plan["articles_for_power"] < minimum and plan["minimum_binds"] is True  # the power alone: fewer
    assert plan["min_articles"] == minimum and f"study.min_articles = {minimum} binds" in plan["note"]
    # Where the power asks for more than the minimum, the minimum says nothing.
    small = power_from_pilot(scores, cfg, PowerQuestion(effect=0.005))
    assert small["articles_needed"] == small["articles_for_power"] > minimum
    assert small["minimum_binds"] is False and small["note"] is None


def _skipping_pair(scores: pd.DataFrame, cfg) -> tuple[pd.DataFrame, tuple[str, str]]:
    """Two models; the second skipped its hardest third of target-language items (no row at all)."""
    first, second = (str(m) for m in scores["model"].unique()[:2])
    metric = cfg.study.band.metric
    targets = set(cfg.languages.targets)
    theirs = scores[scores["model"] == second]
    hard = theirs["language"].isin(targets) & (theirs[metric] < theirs[metric].quantile(0.33))
    kept = pd.concat([scores[scores["model"] == first], theirs[~hard.to_numpy()]], ignore_index=True)
    return kept, (first, second)


def _paired_difference_se(scores: pd.DataFrame, cfg, models: tuple[str, str]) -> tuple[float, int, int]:
    """SE of the micro-gap difference on the units both models answered, in plain numpy/pandas."""
    band = cfg.study.band
    rows = scores[
        scores["level"].isin(band.levels)
        & (scores["item_source"] == band.item_source)
        & (scores["context_scope"] == band.context_scope)
        & scores["model"].isin(models)
    ]
    y = np.where(rows["status"] == "ok", rows[band.metric], 0.0)
    frame = pd.DataFrame(
        {
            "model": rows["model"].astype(str),
            "doc_id": rows["doc_id"].astype(str),
            "language": rows["language"].astype(str),
            "item_id": rows["item_id"].astype(str),
            "y": y,
        }
    )
    unit_models = frame.groupby(["language", "doc_id", "item_id"])["model"].nunique()
    common = unit_models[unit_models == 2].index
    frame = frame.set_index(["language", "doc_id", "item_id"]).loc[common].reset_index()
    articles = sorted(frame["doc_id"].unique())
    w = draw_multiplicities(len(articles), cfg.study.bootstrap_replicates, cfg.study.seed)
    targets = list(cfg.languages.targets)

    def gap(model: str) -> np.ndarray:
        own = frame[frame["model"] == model]

        def mean(languages: list[str]) -> np.ndarray:
            part = own[own["language"].isin(languages)].groupby("doc_id")["y"].agg(["sum", "count"])
            part = part.reindex(articles, fill_value=0)
            return (w @ part["sum"].to_numpy(float)) / (w @ part["count"].to_numpy(float))

        return mean(["en"]) - mean(targets)

    difference = gap(models[0]) - gap(models[1])
    return float(np.std(difference, ddof=1)), len(common), len(articles)


def test_a_model_difference_is_planned_on_the_items_both_models_answered(scores, cfg) -> None:
    """Planned from each model's own rows, it used an SE the model contrast never sees."""
    pair, models = _skipping_pair(scores, cfg)
    plan = power_from_pilot(pair, cfg, PowerQuestion(effect=0.02, models=models))
    se, common, articles = _paired_difference_se(pair, cfg, models)
    assert plan["pilot_se"] == pytest.approx(se, rel=1e-9)
    assert plan["pilot_common_items"] == common and plan["pilot_articles"] == articles
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)  # two-sided
    expected = max(int(np.ceil(articles * (z * se / 0.02) ** 2)), cfg.study.min_articles)
    assert plan["articles_needed"] == expected
    # Two models with no item in common have no difference to plan.
    first, second = models
    apart = pd.concat([pair[pair["model"] == first], pair[pair["model"] == second].assign(item_id="other")])
    with pytest.raises(ValueError, match="answered no item in common"):
        power_from_pilot(apart, cfg, PowerQuestion(effect=0.02, models=models))


def test_two_identical_models_have_no_power_to_plan(scores, cfg) -> None:
    """Two models with the same answers planned "pilot SE 0, 2 articles, simulated power 1"."""
    first = scores[scores["model"] == scores["model"].iloc[0]]
    pair = pd.concat([first, first.assign(model="copy")], ignore_index=True)
    models = (str(first["model"].iloc[0]), "copy")
    plan = power_from_pilot(pair, cfg, PowerQuestion(effect=0.01, models=models))
    assert plan["status"].startswith("not estimable") and "no variance" in plan["status"]
    assert "power cannot be estimated" in plan["status"] and models[0] in plan["status"]
    assert not {"articles_needed", "articles_for_power", "simulated_power", "pilot_se"} & set(plan)
