"""Judge validity per language and per script (issue 19, item 7), on crafted frames.

Human vs judge kappa, the judges' order-bias flip rate and self-preference are split by the rated
language and by its script (``Language.script`` of the panel: sw and ht Latn, ka Geor, ne Deva).
The crafted agreement is perfect in one language and at chance in another, so the per-language
estimates must differ as built; every number is checked against a computation in the test, and a
language carried by too few clusters keeps its estimate with the interval withheld.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.config import ProjectConfig, default_config_dir, load_config
from clcg_pipeline.report import render_report
from clcg_pipeline.storage import ErrorTaxonomyResults, HumanValidationResults, document_keys
from clcg_pipeline.validation.human._analysis import _judge_section
from clcg_pipeline.validation.human._judge_validity import UNKNOWN_SCRIPT, scripts_of
from clcg_pipeline.validation.taxonomy import AnalysisInputs, analyse_error_taxonomy, load_taxonomy
from clcg_pipeline_tests.report.test_documents import _assert_conforms
from clcg_pipeline_tests.report.test_report import _full
from clcg_pipeline_tests.report.test_studies import _section, _text

C, P = "correct", "partial_or_omission"
BOOT = {"replicates": 200, "seed": 3, "confidence": 0.95}
TAXONOMY = load_taxonomy("clcg-error-v1")


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    return load_config(default_config_dir())


def hand_kappa(first: list[str], second: list[str]) -> float:
    """Cohen's kappa from its definition: (po - pe) / (1 - pe) over the joint table."""
    cats = sorted(set(first) | set(second))
    table = np.zeros((len(cats), len(cats)))
    for a, b in zip(first, second, strict=True):
        table[cats.index(a), cats.index(b)] += 1
    n = table.sum()
    po = np.trace(table) / n
    pe = float((table.sum(axis=1) * table.sum(axis=0)).sum() / n**2)
    return float((po - pe) / (1 - pe))


# --------------------------------------------------------------------------- human vs judge


def human_frames(tasks: dict[str, tuple[int, str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ratings and one judge's labels: per language ``(tasks, agreement)``, two annotators a task.

    ``perfect``: both annotators give the judge's label. ``chance``: one says correct, one partial,
    whatever the judge says (alternating), so the joint table is flat and kappa is exactly 0.
    """
    ratings, judgements = [], []
    for language, (n, agreement) in tasks.items():
        for t in range(n):
            key = {
                "model": "m",
                "language": language,
                "doc_id": f"d{t}",
                "item_id": f"{language}{t}",
                "rep": 0,
            }
            judge_label = C if t % 2 == 0 else P
            humans = [judge_label] * 2 if agreement == "perfect" else [C, P]
            for annotator, human in zip(("a1", "a2"), humans, strict=True):
                ratings.append(
                    {
                        **key,
                        "annotation_id": f"{language}-{t}-{annotator}",
                        "task_id": f"{language}-t{t}",
                        "annotator_id": annotator,
                        "primary_error_category": human,
                    }
                )
            judgements.append(
                {
                    **key,
                    "pair_id": f"{language}-p{t}",
                    "side": "target",
                    "judge": "j1",
                    "label": judge_label,
                    "collapsed_label": judge_label,
                    "status": "ok",
                }
            )
    return pd.DataFrame(ratings), pd.DataFrame(judgements)


TASKS = {"sw": (12, "perfect"), "ht": (12, "chance"), "ka": (12, "chance"), "ne": (3, "perfect")}


def run_judge_section(config: ProjectConfig, tasks: dict[str, tuple[int, str]]) -> dict[str, Any]:
    singles, judgements = human_frames(tasks)
    results: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    caveats: list[str] = []
    min_n = config.study.min_articles
    _judge_section(singles, judgements, "en", scripts_of(config), min_n, BOOT, results, rows, caveats)
    return {"results": results, "rows": rows, "caveats": caveats, "singles": singles, "judge": judgements}


@pytest.fixture(scope="module")
def human(config: ProjectConfig) -> dict[str, Any]:
    return run_judge_section(config, TASKS)


def _hand_by(out: dict[str, Any], languages: set[str]) -> float:
    """The independent kappa of the ratings of ``languages`` against the judge's label of their item."""
    singles = out["singles"][out["singles"]["language"].isin(languages)]
    label = out["judge"].set_index("item_id")["label"]
    return hand_kappa(singles["primary_error_category"].tolist(), singles["item_id"].map(label).tolist())


def test_human_judge_kappa_per_language_differs_as_built(human: dict[str, Any]) -> None:
    by = {r["language"]: r for r in human["results"]["judge_kappa_by_language"]}
    assert set(by) == set(TASKS)
    assert {lang: by[lang]["script"] for lang in by} == {
        "sw": "Latn",
        "ht": "Latn",
        "ka": "Geor",
        "ne": "Deva",
    }
    for language in by:
        assert by[language]["kappa"] == pytest.approx(_hand_by(human, {language}))
        assert by[language]["n"] == 2 * TASKS[language][0]
        assert by[language]["clusters"] == TASKS[language][0]
    # Perfect in Swahili, chance in Georgian: the pooled kappa would hide the difference.
    assert by["sw"]["kappa"] == pytest.approx(1.0) and by["ka"]["kappa"] == pytest.approx(0.0)
    assert by["sw"]["identifiable"] and by["ka"]["identifiable"]
    assert by["sw"]["ci_low"] == pytest.approx(1.0)
    # Chance by construction in every resampled table too (each item adds one agreeing and one
    # disagreeing rating), so the Georgian interval sits at 0, far below the Swahili one.
    assert by["ka"]["ci_low"] <= 0.0 <= by["ka"]["ci_high"] < by["sw"]["ci_low"]
    pooled = human["results"]["judge_agreement"][0]["kappa"]
    assert pooled == pytest.approx(_hand_by(human, set(TASKS)))
    assert by["ka"]["kappa"] < pooled < by["sw"]["kappa"]


def test_human_judge_kappa_per_script_pools_its_languages(human: dict[str, Any]) -> None:
    by = {r["script"]: r for r in human["results"]["judge_kappa_by_script"]}
    assert {s: by[s]["languages"] for s in by} == {"Deva": ["ne"], "Geor": ["ka"], "Latn": ["ht", "sw"]}
    assert by["Latn"]["kappa"] == pytest.approx(_hand_by(human, {"sw", "ht"}))
    assert by["Geor"]["kappa"] == pytest.approx(_hand_by(human, {"ka"}))
    assert 0.0 < by["Latn"]["kappa"] < 1.0 and by["Latn"]["clusters"] == 24


def test_too_few_items_is_a_description_without_interval(
    human: dict[str, Any], config: ProjectConfig
) -> None:
    ne = next(r for r in human["results"]["judge_kappa_by_language"] if r["language"] == "ne")
    assert ne["kappa"] == pytest.approx(1.0)  # kept, as a description
    assert ne["ci_low"] is None and ne["ci_high"] is None and ne["identifiable"] is False
    assert ne["reason"] == f"too few items: 3 < study.min_articles = {config.study.min_articles}"
    deva = next(r for r in human["results"]["judge_kappa_by_script"] if r["script"] == "Deva")
    assert deva["identifiable"] is False and deva["ci_low"] is None
    assert any("1 of 4 judge x language group(s)" in c for c in human["caveats"])
    # The estimates table carries every breakdown row, the withheld ones named as such.
    rows = {(r["estimand"], r["group"]): r for r in human["rows"]}
    assert rows[("judge_kappa", "j1|language=ne")]["status"].startswith("not identifiable: too few items")
    assert rows[("judge_kappa", "j1|language=ne")]["ci_low"] is None
    assert rows[("judge_kappa", "j1|language=sw")]["status"] == "estimated"
    assert rows[("judge_kappa", "j1|script=Latn")]["n_clusters"] == 24
    assert ("judge_percent", "j1|language=ka") in rows


def test_a_language_off_the_panel_is_named(config: ProjectConfig) -> None:
    out = run_judge_section(config, {"sw": (12, "perfect"), "zz": (12, "chance")})
    by = {r["language"]: r for r in out["results"]["judge_kappa_by_language"]}
    assert by["zz"]["script"] == UNKNOWN_SCRIPT
    assert any("['zz'] are not in the panel config" in c for c in out["caveats"])


def test_no_overlap_rows_give_empty_breakdowns(config: ProjectConfig) -> None:
    singles, _ = human_frames({"sw": (4, "perfect")})
    results: dict[str, Any] = {}
    _judge_section(singles, None, "en", scripts_of(config), 10, BOOT, results, [], [])
    assert results["judge_kappa_by_language"] == [] and results["judge_kappa_by_script"] == []


def test_report_shows_the_per_language_and_per_script_kappa(human: dict[str, Any]) -> None:
    block = {"status": "ok", "simulated": False, **human["results"]}
    results = _full()
    results["human_validation"] = block
    text = _text(_section(render_report(results, None), "human_validation"))
    assert "Human vs LLM-judge agreement by language" in text
    assert "Human vs LLM-judge agreement by script" in text
    assert "j1 sw Latn 100.0% 1.000 [1.000, 1.000] 24 12" in text
    assert "j1 ka Geor 50.0% 0.000" in text
    # A withheld interval's cell is a short mark, "CI withheld" said once for the section (issue 34).
    assert "j1 ne Deva 100.0% 1.000 \u2014 a 6 3" in text and "\u201c\u2014 a\u201d: CI withheld" in text
    assert "too few items: 3 < study.min_articles = 10" in text
    assert "j1 Latn ht, sw" in text


# --------------------------------------------------------------------------- the taxonomy judges

# Per language: pairs, articles, whether judge A flips, whether A favours its own family.
LANGS = {"sw": (24, 12, "never", True), "ht": (24, 12, "half", False), "ka": (24, 12, "always", False)}
LANGS_FEW = {**LANGS, "ne": (6, 3, "always", True)}


def taxonomy_frames(langs: dict[str, tuple[int, int, str, bool]]) -> tuple[pd.DataFrame, ...]:
    """Pairs of models ``own`` (judge A's family) and ``mx`` alternating; judge B calls all correct.

    Judge A calls every side correct, except where it favours its own family: there the target
    side of an ``mx`` pair is partial. Order bias: A changes its mind on every pair (``always``),
    every other pair (``half``) or none; B never does.
    """
    sample, judgements, order = [], [], []
    for language, (n, articles, flips, favours) in langs.items():
        for i in range(n):
            pid, model = f"{language}{i:02d}", "own" if i % 2 == 0 else "mx"
            sample.append(
                {
                    "pair_id": pid,
                    "model": model,
                    "doc_id": f"{language}-d{i % articles:02d}",
                    "language": language,
                    "score_delta": 0.1,
                    "candidate_loss": False,
                }
            )
            target_a = P if favours and model == "mx" else C
            for judge, target in (("ja", target_a), ("jb", C)):
                for side, label in (("en", C), ("target", target)):
                    judgements.append(
                        {"pair_id": pid, "side": side, "judge": judge, "label": label, "status": "ok"}
                    )
            flipped = flips == "always" or (flips == "half" and i % 2 == 0)
            for judge, flip in (("ja", flipped), ("jb", False)):
                order.append(
                    {"pair_id": pid, "judge": judge, "order": "en_first", "preferred": "en", "status": "ok"}
                )
                second = "target" if flip else "en"
                order.append(
                    {
                        "pair_id": pid,
                        "judge": judge,
                        "order": "target_first",
                        "preferred": second,
                        "status": "ok",
                    }
                )
    return pd.DataFrame(sample), pd.DataFrame(judgements), pd.DataFrame(order)


def _inputs() -> AnalysisInputs:
    return AnalysisInputs(
        judges=("ja", "jb"),
        families={"ja": "alpha", "jb": "beta", "own": "alpha", "mx": "gamma"},
        joshi={"sw": 2, "ht": 2, "ka": 3, "ne": 1},
        replicates=200,
        seed=7,
        confidence=0.95,
        min_articles=10,
    )


@pytest.fixture(scope="module")
def taxonomy(config: ProjectConfig) -> Any:
    frames = taxonomy_frames(LANGS_FEW)
    return analyse_error_taxonomy(*frames, TAXONOMY, _inputs(), config), frames


def _hand_flip_rate(order: pd.DataFrame, sample: pd.DataFrame, judge: str, languages: set[str]) -> float:
    """Share of the judge's pairs of ``languages`` whose preferred response differs between orders."""
    mine = order[order["judge"] == judge].merge(sample[["pair_id", "language"]], on="pair_id")
    wide = mine[mine["language"].isin(languages)].pivot(index="pair_id", columns="order", values="preferred")
    return float((wide["en_first"] != wide["target_first"]).mean())


def test_order_bias_per_language_and_script_as_built(taxonomy: Any) -> None:
    analysis, (sample, _, order) = taxonomy
    doc = analysis.results
    by = {(r["judge"], r["language"]): r for r in doc["order_bias_by_language"]}
    for language in LANGS_FEW:
        for judge in ("ja", "jb"):
            assert by[(judge, language)]["flip_rate"] == pytest.approx(
                _hand_flip_rate(order, sample, judge, {language})
            )
    assert by[("ja", "sw")]["flip_rate"] == 0.0 and by[("ja", "ka")]["flip_rate"] == 1.0
    assert by[("ja", "ka")]["script"] == "Geor" and by[("ja", "ka")]["n_articles"] == 12
    assert by[("ja", "ka")]["identifiable"] and by[("ja", "ka")]["ci_low"] == pytest.approx(1.0)
    assert by[("ja", "ht")]["ci_low"] < 0.5 < by[("ja", "ht")]["ci_high"]
    scripts = {(r["judge"], r["script"]): r for r in doc["order_bias_by_script"]}
    assert scripts[("ja", "Latn")]["languages"] == ["ht", "sw"]
    assert scripts[("ja", "Latn")]["flip_rate"] == pytest.approx(
        _hand_flip_rate(order, sample, "ja", {"sw", "ht"})
    )
    assert scripts[("ja", "Latn")]["pairs"] == 48
    pooled = {r["judge"]: r for r in doc["order_bias"]}
    assert pooled["ja"]["flip_rate"] == pytest.approx(_hand_flip_rate(order, sample, "ja", set(LANGS_FEW)))


def test_order_bias_of_a_language_with_few_articles_is_withheld(taxonomy: Any) -> None:
    analysis, _ = taxonomy
    ne = next(
        r for r in analysis.results["order_bias_by_language"] if (r["judge"], r["language"]) == ("ja", "ne")
    )
    assert ne["flip_rate"] == 1.0 and ne["n_articles"] == 3  # kept, as a description
    assert ne["ci_low"] is None and ne["ci_high"] is None and ne["identifiable"] is False
    assert ne["reason"] == "too few articles: 3 < study.min_articles = 10"
    deva = next(
        r for r in analysis.results["order_bias_by_script"] if (r["judge"], r["script"]) == ("ja", "Deva")
    )
    assert deva["identifiable"] is False
    est = analysis.estimates
    row = est[
        (est["estimand"] == "order_bias_flip_rate") & (est["judge"] == "ja") & (est["group"] == "language=ne")
    ]
    assert len(row) == 1 and row["status"].iloc[0].startswith("not identifiable: too few articles")
    ok = est[(est["estimand"] == "order_bias_flip_rate") & (est["group"] == "script=Geor")]
    assert (ok["status"] == "estimated").all() and len(ok) == 2
    assert any("order bias by language: 2 of 8" in c for c in analysis.results["caveats"])


def test_self_preference_per_language_as_built(taxonomy: Any) -> None:
    analysis, (sample, judgements, _) = taxonomy
    by = {(r["judge"], r["language"]): r for r in analysis.results["self_preference_by_language"]}
    labels = judgements.merge(sample, on="pair_id")
    for language in LANGS_FEW:
        mine = labels[(labels["judge"] == "ja") & (labels["language"] == language)]
        correct = (mine["label"] == C).astype(float)
        own = mine["model"] == "own"
        expected = correct[own].mean() - correct[~own].mean()
        assert by[("ja", language)]["difference"] == pytest.approx(expected)
    # Judge A favours its own family in Swahili only (difference 0.5), not in Georgian.
    assert by[("ja", "sw")]["difference"] == pytest.approx(0.5) and by[("ja", "ka")]["difference"] == 0.0
    assert by[("ja", "sw")]["excess"] == pytest.approx(0.5)  # B's own-vs-other contrast is 0
    assert by[("ja", "ne")]["identifiable"] is False and by[("ja", "ne")]["ci_low"] is None
    assert by[("ja", "sw")]["identifiable"] and by[("ja", "sw")]["n_articles"] == 12
    # Judge B's family evaluated no model: unidentified in every group, so left to the pooled table.
    assert {judge for judge, _ in by} == {"ja"}
    est = analysis.estimates
    mine = est[(est["estimand"] == "self_preference") & (est["group"] == "language=sw")]
    assert mine["judge"].tolist() == ["ja"] and mine["estimate"].iloc[0] == pytest.approx(0.5)
    scripts = {(r["judge"], r["script"]): r for r in analysis.results["self_preference_by_script"]}
    latn = labels[(labels["judge"] == "ja") & labels["language"].isin(["sw", "ht"])]
    correct, own = (latn["label"] == C).astype(float), latn["model"] == "own"
    assert scripts[("ja", "Latn")]["difference"] == pytest.approx(correct[own].mean() - correct[~own].mean())


def test_skipped_results_carry_the_breakdown_keys(config: ProjectConfig) -> None:
    sample, judgements, order = taxonomy_frames(LANGS)
    doc = analyse_error_taxonomy(sample, judgements.iloc[0:0], order, TAXONOMY, _inputs(), config).results
    assert (
        doc["status"] == "skipped"
        and doc["order_bias_by_language"] == []
        and doc["self_preference_by_script"] == []
    )


def test_report_shows_the_judge_checks_per_language(taxonomy: Any) -> None:
    results = _full()
    results["error_taxonomy"] = taxonomy[0].results
    text = _text(_section(render_report(results, None), "error_taxonomy"))
    for title in ("Order bias by language", "Order bias by script", "Self-preference by language"):
        assert title in text
    assert "ja ka Geor 24 24 100.0% [100.0%, 100.0%] 12" in text
    # A withheld interval's cell is a short mark, "CI withheld" said once for the section (issue 34).
    # Every withheld row carries the rule's reason, so the note's first letter is that reason,
    # not "no reason recorded" (the loss and agreement rows gave none before).
    assert "ja ne Deva 6 6 100.0% \u2014 a 3" in text and text.count("CI withheld") == 1
    assert "no reason recorded" not in text
    assert "not identifiable: not identifiable" not in text
    assert "ja sw Latn 100.0% 50.0% 0.500" in text


def test_breakdown_records_fit_the_document_contracts(human: dict[str, Any], taxonomy: Any) -> None:
    doc = taxonomy[0].results
    assert document_keys(ErrorTaxonomyResults) == set(doc)
    _assert_conforms(doc, ErrorTaxonomyResults, "error_taxonomy")
    block = {"status": "ok", **human["results"]}
    assert {"judge_kappa_by_language", "judge_kappa_by_script"} <= document_keys(HumanValidationResults)
    _assert_conforms(block, HumanValidationResults, "human_validation")
