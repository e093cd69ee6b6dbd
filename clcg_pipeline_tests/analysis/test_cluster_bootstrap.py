"""ClusterBootstrap gives bit-for-bit the numbers of the two wrappers it replaced.

The error-taxonomy analysis (articles) and the granularity analysis (documents) each wrapped
the article-cluster bootstrap; ``_old_wrappers`` keeps both as they were, and these tests run
them and ``ClusterBootstrap`` on the same data and compare every number and key.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import ClusterBootstrap, SuiteContext, concat_cells, roles_of
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline_tests.analysis import _old_wrappers as old_wrappers

REPLICATES = 60
SEED = 7


def _ctx(project: ProjectConfig, min_articles: int = 10) -> SuiteContext:
    return SuiteContext(
        config=project,
        roles=roles_of(project.languages),
        replicates=REPLICATES,
        seed=SEED,
        confidence=0.95,
        min_articles=min_articles,
    )


def _rows(n_docs: int = 24, seed: int = 3) -> pd.DataFrame:
    """Rows over ``n_docs`` documents and judge x side x label cells, some cells rare."""
    rng = np.random.default_rng(seed)
    n = 900
    return pd.DataFrame(
        {
            "doc_id": rng.integers(1, n_docs + 1, n).astype(str),
            "judge": rng.choice(["j1", "j2"], n),
            "side": rng.choice(["en", "target"], n),
            "label": rng.choice(["a", "b", "c", "rare"], n, p=[0.4, 0.3, 0.28, 0.02]),
            "y": rng.random(n),
        }
    )


def _assert_same(new: Any, old: Any) -> None:
    if isinstance(old, dict):
        assert list(new) == list(old)  # same keys in the same order (JSON and table columns)
        for key in old:
            _assert_same(new[key], old[key])
    elif isinstance(old, float) and np.isnan(old):
        assert np.isnan(new)
    else:
        assert new == old and type(new) is type(old)


# --------------------------------------------------------------------------- articles (taxonomy)


def test_cells_and_summaries_match_the_taxonomy_wrapper(project: ProjectConfig) -> None:
    OldBoot = old_wrappers._Boot
    rows = _rows()
    articles = np.array(sorted(rows["doc_id"].unique()), dtype=object)
    ctx = _ctx(project)
    old = OldBoot(articles, SimpleNamespace(replicates=REPLICATES, seed=SEED), ctx)
    new = ClusterBootstrap(articles, ctx)
    np.testing.assert_array_equal(new.weights, old.weights)

    # A subset of the articles: the table takes the matching multiplicity columns.
    subset = rows[rows["doc_id"].isin(articles[::2])]
    for frame in (rows, subset, rows.iloc[:0]):
        o = old.cells(frame, ["judge", "side", "label"], "y")
        n = new.cells(frame, ["judge", "side", "label"], "y")
        pd.testing.assert_frame_equal(n.cells, o.cells)
        np.testing.assert_array_equal(n.sums, o.rep.sums)
        np.testing.assert_array_equal(n.counts, o.rep.counts)
        for match in ({"judge": "j1"}, {"judge": "j2", "label": "rare"}, {"label": "none"}):
            idx = o.where(**match)
            np.testing.assert_array_equal(n.where(**match), idx)
            np.testing.assert_array_equal(n.sum_over(idx), o.sums(idx))
            np.testing.assert_array_equal(n.count_over(idx), o.counts(idx))
            assert n.n_clusters(idx) == o.n_articles(idx)
            if len(frame):
                vec = n.sum_over(idx) / np.where(n.count_over(idx) > 0, n.count_over(idx), np.nan)
                kwargs = {"n": int(o.counts(idx)[0]), "n_articles": o.n_articles(idx)}
                old_summary = old.summ(vec, **kwargs)
                new_summary = new.summary(vec, n=kwargs["n"], n_clusters=kwargs["n_articles"])
                _assert_same(new_summary, old_summary)


def test_too_few_articles_keeps_the_suite_wording(project: ProjectConfig) -> None:
    OldBoot = old_wrappers._Boot
    rows = _rows(n_docs=5)
    articles = np.array(sorted(rows["doc_id"].unique()), dtype=object)
    ctx = _ctx(project, min_articles=10)
    old = OldBoot(articles, SimpleNamespace(replicates=REPLICATES, seed=SEED), ctx)
    new = ClusterBootstrap(articles, ctx)
    cells = new.cells(rows, ["judge"], "y")
    vec = cells.means[:, 0]
    out = new.summary(vec, n=int(cells.n[0]), n_clusters=5)
    _assert_same(out, old.summ(vec, n=int(cells.n[0]), n_articles=5))
    assert out["reason"].startswith("too few articles") and "n_articles" in out


# --------------------------------------------------------------------------- documents (granularity)


@pytest.mark.parametrize("min_articles", [10, 40])
def test_fine_tables_match_the_granularity_wrapper(project: ProjectConfig, min_articles: int) -> None:
    OldBoot = old_wrappers.DocumentBootstrap
    rows = _rows(n_docs=30)
    ctx = _ctx(project, min_articles=min_articles)
    old = OldBoot(rows["doc_id"], ctx)
    new = ClusterBootstrap(rows["doc_id"], ctx, unit="documents")
    np.testing.assert_array_equal(new.weights, old.weights)
    dims = ["judge", "side", "label"]
    subset = rows[rows["doc_id"].astype(int) % 3 != 0]
    for frame in (rows, subset):
        o_fine, n_fine = old.fine(frame, dims, "y"), new.fine(frame, dims, "y")
        np.testing.assert_array_equal(n_fine.weights, o_fine.weights)
        for keep, kwargs in (
            (["judge"], {}),
            (["judge", "label"], {"where": {"side": ["target"]}}),
            (["side"], {"relabel": {"label": {"a": "common", "b": "common"}}, "constant": {"scope": "ab"}}),
            ([], {}),
            (["judge"], {"where": {"label": []}}),
        ):
            o, n = o_fine.cells(keep, **kwargs), n_fine.cells(keep, **kwargs)
            pd.testing.assert_frame_equal(n.cells, o.cells)
            np.testing.assert_array_equal(n.means, o.means)
            np.testing.assert_array_equal(n.n, o.n)
            np.testing.assert_array_equal(n.cluster_counts, o.doc_counts)
            pd.testing.assert_frame_equal(new.table(n), old.summarise(o), check_exact=True)
            if len(o.cells):
                cols = list(range(len(o.cells)))
                assert n.n_clusters(cols) == o.n_documents(cols)
                first = o.cells.iloc[0].to_dict()
                assert n.column(**first) == o.column(**first)


def test_many_column_summaries_and_concatenation_match(project: ProjectConfig) -> None:
    OldBoot = old_wrappers.DocumentBootstrap
    old_concat = old_wrappers.concat_cells
    rows = _rows(n_docs=12)
    ctx = _ctx(project, min_articles=20)  # every estimand "too few documents"
    old = OldBoot(rows["doc_id"], ctx)
    new = ClusterBootstrap(rows["doc_id"], ctx, unit="documents")
    o_fine, n_fine = old.fine(rows, ["judge", "label"], "y"), new.fine(rows, ["judge", "label"], "y")
    o = old_concat([o_fine.cells(["judge"]), o_fine.cells(["label"])])
    n = concat_cells([n_fine.cells(["judge"]), n_fine.cells(["label"])])
    np.testing.assert_array_equal(n.means, o.means)
    vectors = n.means.copy()
    vectors[1::4, 0] = np.nan  # some replicates undefined: the per-column path
    counts = [int(v) for v in n.n]
    clusters = [n.n_clusters([j]) for j in range(len(n.cells))]
    new_stats = new.summaries(vectors, counts, clusters)
    old_stats = old.summarise_vectors(vectors, counts, clusters)
    for a, b in zip(new_stats, old_stats, strict=True):
        _assert_same(a, b)
    assert new_stats[0]["reason"].startswith("too few documents")
    assert list(new_stats[0])[-1] == "n_documents" and "n_articles" not in new_stats[0]


def test_a_cluster_outside_the_bootstrap_is_an_error(project: ProjectConfig) -> None:
    boot = ClusterBootstrap(["1", "2", "3"], _ctx(project))
    frame = pd.DataFrame({"doc_id": ["1", "4"], "judge": ["j", "j"], "y": [1.0, 0.0]})
    with pytest.raises(ValueError, match="not among the bootstrap's articles"):
        boot.cells(frame, ["judge"], "y")
