"""Krippendorff's alpha and Cohen's kappa against known values and independent implementations."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import binary_distance, interval_distance
from statsmodels.stats.inter_rater import cohens_kappa

from clcg_pipeline.analysis import withheld_reason
from clcg_pipeline.validation.human import _agreement
from clcg_pipeline.validation.human._agreement import (
    _kappa_rows,
    alpha_replicates,
    cohen_kappa,
    krippendorff_alpha,
    value_counts,
)
from clcg_pipeline.validation.human._estimands import spearman_bootstrap

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4 coders x 12 units
# example with missing values; published alphas: nominal .743, ordinal .815, interval .849.
TEXTBOOK = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


def long_frame(matrix: list[list[float]]) -> pd.DataFrame:
    rows = [
        {"annotator_id": f"c{c}", "task_id": f"u{u:02d}", "x": v}
        for c, coder in enumerate(matrix)
        for u, v in enumerate(coder)
        if v == v
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_reproduces_the_textbook_example(level: str, published: float) -> None:
    out = krippendorff_alpha(long_frame(TEXTBOOK), value="x", level=level, replicates=50, min_units=5)
    assert out["alpha"] == pytest.approx(published, abs=5e-4)
    # Unit 12 has one value only: alpha is defined on the 11 pairable units.
    assert out["items"] == 11 and out["ratings"] == 40
    assert out["status"] == "ok" and out["ci_low"] <= out["alpha"] <= out["ci_high"]


def test_alpha_hand_computed() -> None:
    # Two coders, units (a,a) (a,b) (b,b) (b,b): coincidences o_aa=2, o_ab=o_ba=1, o_bb=4;
    # n_a=3, n_b=5, n=8; alpha = 1 - (n-1) * (o_ab+o_ba) / (2 n_a n_b) = 1 - 14/30 = 8/15.
    frame = pd.DataFrame(
        {
            "annotator_id": ["x", "y"] * 4,
            "task_id": ["1", "1", "2", "2", "3", "3", "4", "4"],
            "v": ["a", "a", "a", "b", "b", "b", "b", "b"],
        }
    )
    out = krippendorff_alpha(frame, value="v", level="nominal", replicates=10, min_units=1)
    assert out["alpha"] == pytest.approx(8 / 15)


def _random_ratings(seed: int, units: int = 40, coders: int = 6, values: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, values + 1, units)
    rows = []
    for u in range(units):
        for c in rng.choice(coders, size=int(rng.integers(1, 4)), replace=False):
            v = int(np.clip(truth[u] + rng.integers(-1, 2), 1, values))
            rows.append({"annotator_id": f"c{c}", "task_id": f"u{u:02d}", "x": v})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    ("level", "distance"), [("nominal", binary_distance), ("interval", interval_distance)]
)
def test_alpha_matches_nltk(seed: int, level: str, distance: object) -> None:
    frame = _random_ratings(seed)
    pairable = frame.groupby("task_id")["x"].transform("size") >= 2
    triples = [(r.annotator_id, r.task_id, r.x) for r in frame[pairable].itertuples()]
    expected = AnnotationTask(data=triples, distance=distance).alpha()
    out = krippendorff_alpha(frame, value="x", level=level, replicates=10, min_units=1)
    assert out["alpha"] == pytest.approx(expected, abs=1e-9)


def test_vectorized_replicates_equal_the_package_on_resampled_data() -> None:
    """Every replicate (ordinal: distances from the replicate's own marginals) equals the package."""
    import krippendorff

    frame = _random_ratings(7)
    units, domain, counts = value_counts(frame, unit="task_id", value="x", coder="annotator_id")
    rng = np.random.default_rng(0)
    weights = np.zeros((3, len(units)))
    for r in range(3):
        np.add.at(weights[r], rng.integers(0, len(units), len(units)), 1.0)
    for level in ("nominal", "ordinal", "interval"):
        vec = alpha_replicates(counts, domain, level, weights)
        for r in range(3):
            # The replicate's data, written out: each unit repeated by its multiplicity.
            expanded = np.repeat(counts, weights[r].astype(int), axis=0)
            seen = expanded.sum(axis=0) > 0
            expected = krippendorff.alpha(
                value_counts=expanded[:, seen],
                value_domain=domain[seen].astype(float),
                level_of_measurement=level,
            )
            assert vec[r + 1] == pytest.approx(expected, abs=1e-9), (level, r)


def test_alpha_guards() -> None:
    frame = pd.DataFrame({"annotator_id": ["a", "a"], "task_id": ["1", "1"], "x": [1, 2]})
    with pytest.raises(ValueError, match="coder 'a' rated unit '1' more than once"):
        krippendorff_alpha(frame, value="x", level="nominal")
    one = pd.DataFrame({"annotator_id": ["a", "b"], "task_id": ["1", "1"], "x": [3, 3]})
    assert krippendorff_alpha(one, value="x", level="ordinal")["status"].startswith("undefined")
    lonely = pd.DataFrame({"annotator_id": ["a", "b"], "task_id": ["1", "2"], "x": [3, 4]})
    assert krippendorff_alpha(lonely, value="x", level="ordinal")["items"] == 0
    with pytest.raises(ValueError, match="outside the domain"):
        krippendorff_alpha(
            pd.DataFrame({"annotator_id": ["a", "b"], "task_id": ["1", "1"], "x": ["high", "top"]}),
            value="x",
            level="ordinal",
            domain=["low", "high"],
        )


def test_alpha_interval_withheld_below_min_units() -> None:
    out = krippendorff_alpha(long_frame(TEXTBOOK), value="x", level="interval", replicates=20, min_units=12)
    assert out["alpha"] == pytest.approx(0.849, abs=5e-4)
    assert out["ci_low"] is None and out["ci_high"] is None
    assert out["identifiable"] is False and "11 < study.min_articles = 12" in out["reason"]


def test_kappa_known_value_and_vectorized_form() -> None:
    # 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po = .70, pe = .50, kappa = .40.
    first = ["yes"] * 25 + ["no"] * 25
    second = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    out = cohen_kappa(first, second, replicates=200, min_clusters=10)
    assert out["kappa"] == pytest.approx(0.4) and out["percent"] == pytest.approx(0.7)
    assert out["ci_low"] < 0.4 < out["ci_high"]
    rng = np.random.default_rng(3)
    tables = rng.integers(0, 20, size=(5, 4, 4)).astype(float)
    expected = [cohens_kappa(t).kappa for t in tables]
    assert _kappa_rows(tables) == pytest.approx(expected)


def test_kappa_clusters_items() -> None:
    """Rows of one item move together: fewer clusters than rows, and too few withhold the interval."""
    out = cohen_kappa(
        ["a", "b", "a", "b"], ["a", "b", "b", "b"], clusters=["i1", "i1", "i2", "i2"], replicates=20
    )
    assert out["clusters"] == 2 and out["ci_low"] is None and "2 < study.min_articles" in out["reason"]


def test_the_suites_rule_decides_and_its_words_name_the_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: ``analysis.withheld_reason`` decides (no copy of the threshold here); its reason,
    with the resampled unit named, is the block's reason."""
    first, second = list("abab" * 10), list("abba" * 10)
    few = cohen_kappa(first, second, replicates=50, min_clusters=50)
    assert few["identifiable"] is False and few["kappa"] is not None  # the value stays, as a description
    assert few["reason"] == withheld_reason(0.0, 40, 50, unit="items")
    asked: list[tuple[int | None, int]] = []

    def rule(
        estimate: float | None, n: int | None, minimum: int, valid: int | None = None, *, unit: str = ""
    ) -> str | None:
        asked.append((n, minimum))
        return None

    monkeypatch.setattr(_agreement, "withheld_reason", rule)
    shown = cohen_kappa(first, second, replicates=50, min_clusters=50)
    assert asked == [(40, 50)] and shown["identifiable"] is True and shown["ci_low"] is not None


def test_the_rule_withholds_every_p_with_the_interval() -> None:
    """Below study.min_articles the rule withholds p values with the interval (``WITHHELD_FIELDS``)."""
    rng = np.random.default_rng(0)
    x = rng.random(6)
    few = spearman_bootstrap(
        x, x + rng.normal(0, 0.3, 6), replicates=50, seed=1, confidence=0.95, min_clusters=10
    )
    assert few["rho"] is not None and few["p"] is None and few["ci_low"] is None
    assert few["reason"] == "too few rated responses: 6 < study.min_articles = 10"


@pytest.mark.parametrize(
    ("first", "second", "kappa"),
    [
        (["yes"] * 12, ["no"] * 12, 0.0),  # an empty row and column: statsmodels' z value was 0/0
        (["yes"] * 12, ["yes"] * 9 + ["no"] * 3, 0.0),  # one side a single category
        (["yes"] * 12, ["yes"] * 12, None),  # one cell (pe = 1): undefined, not a warning
    ],
)
def test_degenerate_kappa_tables_raise_no_runtime_warning(
    first: list[str], second: list[str], kappa: float | None
) -> None:
    """A judge agreeing on one label per language printed numpy's "invalid value encountered in
    scalar divide" on every ``clcg run``; the kappa is the same, and an undefined one is None."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = cohen_kappa(first, second, replicates=20, min_clusters=10)
    assert out["kappa"] == kappa
    assert out["status"] == ("ok" if kappa is not None else "undefined: a single category on both sides")


def test_kappa_is_statsmodels_full_result_on_ordinary_tables() -> None:
    """The point estimate alone equals the one the full statsmodels result gave before."""
    rng = np.random.default_rng(11)
    for _ in range(5):
        first, second = rng.choice(list("abc"), 60), rng.choice(list("abc"), 60)
        cats = sorted(set(first) | set(second))
        table = np.zeros((len(cats), len(cats)))
        np.add.at(table, ([cats.index(x) for x in first], [cats.index(y) for y in second]), 1.0)
        out = cohen_kappa(list(first), list(second), replicates=0)
        assert out["kappa"] == pytest.approx(cohens_kappa(table, return_results=True).kappa, abs=1e-12)


def test_a_statistic_that_cannot_be_computed_says_why_as_its_reason() -> None:
    """Issue 34: every block marked not identifiable carries a reason the report can state once
    (these said it only in their status, and the report printed "no reason recorded")."""
    one = pd.DataFrame({"annotator_id": ["a", "b"], "task_id": ["1", "1"], "x": [3, 3]})
    lonely = pd.DataFrame({"annotator_id": ["a", "b"], "task_id": ["1", "2"], "x": [3, 4]})
    blocks = [
        krippendorff_alpha(one, value="x", level="ordinal"),
        krippendorff_alpha(lonely, value="x", level="ordinal"),
        cohen_kappa([], []),
    ]
    for block in blocks:
        assert block["identifiable"] is False and block["reason"] == block["status"] and block["reason"]
