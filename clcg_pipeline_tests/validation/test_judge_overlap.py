"""How far the judges' errors overlap (issue 36, item 3), on planted panels where it is known.

Judges with identical errors correlate 1 and count as one judge; independent errors correlate
about 0 and count as about k; every correlation is checked against a hand computation (phi from
the 2x2 table, numpy's corrcoef), and a language carried by too few articles keeps its value
with the interval withheld, in the document, the estimates rows, the report and the named query.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import SuiteContext, roles_of
from clcg_pipeline.config import ProjectConfig, default_config_dir, load_config
from clcg_pipeline.report import render_report
from clcg_pipeline.storage import (
    HumanValidationResults,
    build_catalog,
    partition_dir,
    run_named_query,
    write_frame,
)
from clcg_pipeline.validation.human import ErrorPanel, fill_errors, judge_error_overlap, taxonomy_errors
from clcg_pipeline.validation.human._judge_overlap import RULE_BASED, estimate_rows
from clcg_pipeline.validation.human._judge_validity import scripts_of
from clcg_pipeline_tests.report.test_documents import _assert_conforms
from clcg_pipeline_tests.report.test_report import _full
from clcg_pipeline_tests.report.test_studies import _section, _text


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    return load_config(default_config_dir())


@pytest.fixture(scope="module")
def ctx(config: ProjectConfig) -> SuiteContext:
    return SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=200,
        seed=5,
        confidence=0.95,
        min_articles=10,
    )


def planted(errors: dict[str, np.ndarray], *, language: str = "sw", articles: int = 20) -> pd.DataFrame:
    """One row per judge x response: response i of ``language`` sits in article ``i % articles``."""
    rows = []
    for judge, values in errors.items():
        for i, value in enumerate(values):
            rows.append(
                {
                    "response": f"{language}-{i}",
                    "doc_id": f"{language}-d{i % articles:02d}",
                    "language": language,
                    "judge": judge,
                    "error": float(value),
                }
            )
    return pd.DataFrame(rows)


def overlap_of(frame: pd.DataFrame, ctx: SuiteContext, config: ProjectConfig, **kw: Any) -> Any:
    return judge_error_overlap([ErrorPanel("error_taxonomy", frame)], ctx, scripts_of(config), **kw)


def pooled(records: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    hits = [r for r in records if r["by"] == "all" and all(r[k] == v for k, v in match.items())]
    assert len(hits) == 1, hits
    return hits[0]


def hand_phi(x: np.ndarray, y: np.ndarray) -> float:
    """Phi from its 2x2 table: (n11 n00 - n10 n01) / sqrt(n1. n0. n.1 n.0)."""
    n11, n00 = np.sum((x == 1) & (y == 1)), np.sum((x == 0) & (y == 0))
    n10, n01 = np.sum((x == 1) & (y == 0)), np.sum((x == 0) & (y == 1))
    return float((n11 * n00 - n10 * n01) / np.sqrt((n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00)))


def test_identical_errors_correlate_one_and_count_as_one_judge(
    ctx: SuiteContext, config: ProjectConfig
) -> None:
    errors = (np.random.default_rng(1).random(60) < 0.3).astype(float)
    out = overlap_of(planted({"ja": errors, "jb": errors, "jc": errors}), ctx, config)
    for a, b in (("ja", "jb"), ("ja", "jc"), ("jb", "jc")):
        r = pooled(out.correlations, judge_a=a, judge_b=b)
        assert r["correlation"] == pytest.approx(1.0)
        assert r["ci_low"] == pytest.approx(1.0) and r["ci_high"] == pytest.approx(1.0)
        assert r["identifiable"] and r["n"] == 60 and r["n_articles"] == 20
    eff = pooled(out.effective)
    assert eff["k"] == 3 and eff["judges"] == ["ja", "jb", "jc"]
    assert eff["effective_judges"] == pytest.approx(1.0) and eff["mean_correlation"] == pytest.approx(1.0)
    assert eff["ci_low"] == pytest.approx(1.0) and eff["ci_high"] == pytest.approx(1.0)


def test_independent_errors_correlate_about_zero_and_count_as_about_k(
    ctx: SuiteContext, config: ProjectConfig
) -> None:
    rng = np.random.default_rng(2)
    errors = {j: (rng.random(3000) < 0.3).astype(float) for j in ("ja", "jb", "jc")}
    out = overlap_of(planted(errors, articles=150), ctx, config)
    rs = []
    for a, b in (("ja", "jb"), ("ja", "jc"), ("jb", "jc")):
        r = pooled(out.correlations, judge_a=a, judge_b=b)
        # Pearson of 0/1 indicators is phi: both match the hand computations exactly.
        assert r["correlation"] == pytest.approx(hand_phi(errors[a], errors[b]))
        assert r["correlation"] == pytest.approx(np.corrcoef(errors[a], errors[b])[0, 1])
        assert abs(r["correlation"]) < 0.06 and r["ci_low"] < 0.0 < r["ci_high"]
        assert r["mean_error_a"] == pytest.approx(errors[a].mean())
        rs.append(r["correlation"])
    eff = pooled(out.effective)
    assert eff["effective_judges"] == pytest.approx(3 / (1 + 2 * np.mean(rs)))
    assert eff["effective_judges"] == pytest.approx(3.0, abs=0.3)
    assert eff["ci_low"] < 3.0 < eff["ci_high"] and eff["identifiable"]


def test_partly_shared_errors_and_opposite_errors(ctx: SuiteContext, config: ProjectConfig) -> None:
    rng = np.random.default_rng(3)
    a = (rng.random(400) < 0.4).astype(float)
    b = np.where(rng.random(400) < 0.5, a, (rng.random(400) < 0.4).astype(float))  # half copied
    out = overlap_of(planted({"ja": a, "jb": b, "jx": 1 - a}), ctx, config)
    shared = pooled(out.correlations, judge_a="ja", judge_b="jb")["correlation"]
    assert shared == pytest.approx(hand_phi(a, b)) and 0.3 < shared < 0.8
    assert pooled(out.correlations, judge_a="ja", judge_b="jx")["correlation"] == pytest.approx(-1.0)
    # Two judges always wrong in turn: the formula's denominator is 0, so n_eff is undefined, not infinite.
    two = overlap_of(planted({"ja": a, "jx": 1 - a}), ctx, config)
    eff = pooled(two.effective)
    assert eff["effective_judges"] is None and eff["mean_correlation"] == pytest.approx(-1.0)
    assert eff["reason"].startswith("undefined: the mean error correlation is at or below -1 / (k - 1)")


def test_a_judge_never_wrong_has_no_correlation(ctx: SuiteContext, config: ProjectConfig) -> None:
    out = overlap_of(planted({"ja": np.zeros(30), "jb": np.arange(30) % 2}), ctx, config)
    r = pooled(out.correlations)
    assert r["correlation"] is None and r["ci_low"] is None and r["identifiable"] is False
    assert (
        r["reason"]
        == "undefined: the error of ja does not vary on these 30 response(s) (always or never wrong)"
    )


@pytest.fixture(scope="module")
def few(ctx: SuiteContext, config: ProjectConfig) -> Any:
    """Swahili on 12 articles, Nepali (Deva) on 3: the same shared-error pattern in both."""
    errors = np.tile([1.0, 0.0, 1.0, 0.0, 0.0, 1.0], 6)
    other = np.tile([1.0, 0.0, 0.0, 0.0, 0.0, 1.0], 6)
    frame = pd.concat(
        [
            planted({"offline-judge-a": errors, "jb": other}, language="sw", articles=12),
            planted({"offline-judge-a": errors, "jb": other}, language="ne", articles=3),
        ],
        ignore_index=True,
    )
    return overlap_of(frame, ctx, config, rule_based=["offline-judge-a", "offline-writer"])


def test_too_few_articles_keep_the_value_and_withhold_the_interval(few: Any) -> None:
    by = {(r["by"], r.get("language") or r.get("script")): r for r in few.correlations}
    ne, sw = by[("language", "ne")], by[("language", "sw")]
    assert ne["correlation"] == pytest.approx(sw["correlation"])  # kept, as a description
    assert ne["ci_low"] is None and ne["ci_high"] is None and ne["identifiable"] is False
    assert ne["reason"] == "too few articles: 3 < study.min_articles = 10" and ne["script"] == "Deva"
    assert sw["identifiable"] and sw["ci_low"] is not None and sw["n_articles"] == 12
    deva = by[("script", "Deva")]
    assert deva["languages"] == ["ne"] and deva["ci_low"] is None and deva["identifiable"] is False
    eff = {(r["by"], r.get("language") or r.get("script")): r for r in few.effective}
    assert (
        eff[("language", "ne")]["ci_low"] is None and eff[("language", "ne")]["effective_judges"] is not None
    )
    assert any("4 of 10 estimate(s) rest on fewer than study.min_articles = 10" in c for c in few.caveats)
    # Only the judges that appear are named as rule-based (not every offline model of the config).
    assert any(c.endswith(f"{RULE_BASED}: offline-judge-a") for c in few.caveats)
    rows = {(r["estimand"], r["group"]): r for r in estimate_rows(few)}
    withheld = rows[("judge_error_correlation", "error_taxonomy|jb~offline-judge-a|language=ne")]
    assert withheld["status"].startswith("not identifiable: too few articles") and withheld["ci_low"] is None
    assert RULE_BASED in withheld["flags"]
    assert rows[("judge_effective_number", "error_taxonomy|jb~offline-judge-a|all")]["status"] == "estimated"


def test_taxonomy_errors_against_the_majority_human_label() -> None:
    def rating(annotation: str, task: str, human: str, labels: dict[str, str]) -> list[dict[str, Any]]:
        where = {"task_id": task, "doc_id": f"d-{task}", "language": "sw", "human": human}
        return [
            {"annotation_id": annotation, "judge": j, "judge_label": lab, **where}
            for j, lab in labels.items()
        ]

    labels = {"t1": {"ja": "wrong", "jb": "correct"}, "t2": {"ja": "wrong", "jb": "wrong"}}
    rows = [
        *rating("r1", "t1", "correct", labels["t1"]),
        *rating("r2", "t1", "correct", labels["t1"]),
        *rating("r3", "t1", "wrong", labels["t1"]),
        *rating("r4", "t2", "correct", labels["t2"]),  # t2 ties: no consensus
        *rating("r5", "t2", "wrong", labels["t2"]),
    ]
    panel = taxonomy_errors(pd.DataFrame(rows))
    got = {(r.response, r.judge): r.error for r in panel.errors.itertuples()}
    assert got == {("t1", "ja"): 1.0, ("t1", "jb"): 0.0} and panel.dropped == 1


def test_fill_errors_are_judge_minus_mean_human_total() -> None:
    unit = {"model": "m", "language": "ka", "doc_id": "d1", "context": "full", "rep": 0}
    sample = pd.DataFrame([{"task_id": "f1", "kind": "fill", "gran_task_id": "g1", **unit}])
    annotations = pd.DataFrame(
        [
            {"task_id": "f1", "kind": "fill", "fill_total": t, "annotator_id": a}
            for a, t in (("a", 40), ("b", 60))
        ]
    )
    judged = pd.DataFrame(
        [
            {**unit, "task_id": "g1", "judge": j, "total": t, "status": s, "rep": np.int64(0)}
            for j, t, s in (("ja", 70, "ok"), ("jb", 45, "ok"), ("jc", 99, "unparseable"))
        ]
    )
    panel = fill_errors(annotations, sample, judged)
    assert dict(zip(panel.errors["judge"], panel.errors["error"], strict=True)) == {"ja": 20.0, "jb": -5.0}
    assert set(panel.errors["language"]) == {"ka"} and panel.family == "granularity"
    assert fill_errors(annotations.iloc[0:0], sample, judged).errors.empty


def test_document_report_and_named_query(few: Any, tmp_path: Any) -> None:
    block = {
        "status": "ok",
        "simulated": True,
        "judge_error_correlation": few.correlations,
        "judge_effective_number": few.effective,
    }
    _assert_conforms(block, HumanValidationResults, "human_validation")
    results = _full()
    results["human_validation"] = block
    text = _text(_section(render_report(results, None), "human_validation"))
    assert "Judge error overlap: correlation of the judges' errors" in text
    assert "Effective number of independent judges" in text
    assert "jb vs offline-judge-a (rule-based offline stand-ins, simulated; not LLMs) ne (Deva)" in text
    assert "CI withheld" in text and "n_eff = k / (1 + (k" in text
    data = tmp_path / "data"
    write_frame(
        partition_dir(data, "human_validation_estimates", None) / "data.parquet",
        pd.DataFrame(estimate_rows(few)),
        contract="human_validation_estimates",
    )
    build_catalog(data)
    out = run_named_query(data / "clcg.duckdb", "judge_error_overlap", {}, data_dir=data)
    assert len(out) == len(few.correlations) + len(few.effective) and out["rule_based_judges"].all()
    ne = out[(out["measure"] == "error_correlation") & (out["breakdown"] == "language=ne")].iloc[0]
    assert ne["family"] == "error_taxonomy" and ne["judges"] == "jb~offline-judge-a" and ne["articles"] == 3
    assert pd.isna(ne["ci_low"]) and ne["status"].startswith("not identifiable: too few articles")
    assert out["breakdown"].iloc[0] == "all" and out["measure"].iloc[0] == "error_correlation"


def test_differences_correlate_as_numpy_says_despite_a_large_offset(
    ctx: SuiteContext, config: ProjectConfig
) -> None:
    rng = np.random.default_rng(4)
    shared = rng.normal(0, 5, 200)
    a, b = 70 + shared + rng.normal(0, 5, 200), 1e6 + shared + rng.normal(0, 5, 200)
    frame = planted({"ja": a, "jb": b, "jc": np.full(200, 12.5)})
    out = judge_error_overlap([ErrorPanel("granularity", frame)], ctx, scripts_of(config))
    r = pooled(out.correlations, judge_a="ja", judge_b="jb")
    assert (
        r["correlation"] == pytest.approx(np.corrcoef(a, b)[0, 1], abs=1e-9) and 0.3 < r["correlation"] < 0.7
    )
    assert r["error_definition"].startswith("the judge's paragraph total") and r["ci_low"] < r["correlation"]
    assert pooled(out.correlations, judge_a="ja", judge_b="jc")["correlation"] is None  # jc never varies
