"""The suite's rows reduced once to per-article cell sums shared by several panels (issue 37).

Each piece gives exactly what it replaced (bit for bit), with less work or memory: the tables of
several score columns over the same rows, their shared replicate counts, the H3 panels built one
after the other, the canonical order's uniqueness check a chunk at a time, a categorical whose
categories are already in string order, the H2 mixed model fitted as soon as H2 is done, and the
collector between parts that skips the objects alive before the sections.
"""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis._bootstrap import (
    cluster_table,
    cluster_tables,
    draw_multiplicities,
    replicate,
    sorted_factorize,
)
from clcg_pipeline.analysis._gaps import Roles, build_panel, build_panels
from clcg_pipeline.analysis._suite import _key_order, _strictly_increasing
from clcg_pipeline.analysis._timing import frozen
from clcg_pipeline.analysis.sections import mixed as mixed_section
from clcg_pipeline_tests.analysis.test_suite_scale import _rows

CELLS = ["model", "language", "level"]
ROLES = Roles("en", "pt", ("sw", "am"))


def _same_table(got, want) -> None:  # type: ignore[no-untyped-def]
    assert list(got.articles) == list(want.articles)
    pd.testing.assert_frame_equal(got.cells, want.cells)
    assert np.array_equal(got.sums, want.sums) and np.array_equal(got.counts, want.counts)


def test_tables_of_several_scores_are_each_scores_own_table_bit_for_bit() -> None:
    """Before: one ``cluster_table`` per score column, each factorizing the rows again."""
    rows = _rows(3000)
    z = np.random.default_rng(3).normal(size=len(rows))
    tables = cluster_tables(rows, CELLS, [rows["y"].to_numpy(), z])
    _same_table(tables[0], cluster_table(rows, CELLS, presorted=True))
    _same_table(tables[1], cluster_table(rows.assign(y=z), CELLS, presorted=True))
    assert tables[0].counts is tables[1].counts  # one count matrix for the same rows
    assert [t.sums.shape for t in cluster_tables(rows.iloc[:0], CELLS, [z[:0]])] == [(0, 0)]


def test_replicate_counts_are_taken_when_given() -> None:
    rows = _rows(2000)
    table = cluster_table(rows, CELLS, presorted=True)
    weights = draw_multiplicities(len(table.articles), 40, 7)
    first = replicate(table, weights)
    again = replicate(table, weights, counts=first.counts)
    assert again.counts is first.counts and np.array_equal(again.sums, first.sums)


def test_the_panels_built_in_turn_equal_one_panel_per_score() -> None:
    """H3's standardized and raw panels: the same estimands as two ``build_panel`` calls."""
    rows = _rows(3000)
    y = rows["y"].to_numpy()
    z = (y - y.mean()) / y.std()
    panels = build_panels(rows.drop(columns="y"), ROLES, [z, y], cell_cols=CELLS, replicates=60, seed=3)
    for values in (z, y):
        got = next(panels)
        want, _ = build_panel(
            rows.assign(y=values), ROLES, cell_cols=CELLS, replicates=60, seed=3, presorted=True
        )
        assert np.array_equal(got.rep.sums, want.rep.sums) and np.array_equal(got.rep.counts, want.rep.counts)
        assert np.array_equal(got.article_counts, want.article_counts)
        assert np.array_equal(got.micro(level="L3"), want.micro(level="L3"), equal_nan=True)
    with pytest.raises(StopIteration):
        next(panels)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 20])
def test_the_uniqueness_check_holds_across_chunk_boundaries(chunk: int) -> None:
    """The sorted keys are compared a chunk at a time, each chunk overlapping the next by one key."""
    keys = np.array([5, 1, 9, 3, 7, 2, 8], dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    assert _strictly_increasing(keys, order, chunk)
    for dup in range(1, len(keys)):  # a repeated key anywhere, including across a boundary
        repeated = np.sort(keys)
        repeated[dup] = repeated[dup - 1]
        assert not _strictly_increasing(repeated, np.arange(len(keys)), chunk)
    values = np.array([0.5, 0.1, 0.3, 0.2])
    with_ties = np.array([4, 2, 2, 1], dtype=np.int64)
    assert _key_order(with_ties, values).tolist() == np.lexsort((values, with_ties)).tolist()


def test_a_categorical_already_in_string_order_keeps_its_codes() -> None:
    ids = [f"m{i:03d}" for i in range(12)]
    series = pd.Series(pd.Categorical(np.random.default_rng(2).choice(ids, 400), categories=ids))
    for narrow in (False, True):
        codes, uniques = sorted_factorize(series, narrow=narrow)
        want = pd.factorize(series.astype(str), sort=True)
        assert codes.tolist() == want[0].tolist() and list(uniques) == list(want[1])
        assert codes.flags.writeable  # a copy: never the categorical's own (read-only) codes


def test_the_h2_mixed_model_fitted_early_is_the_sections_own() -> None:
    """The suite fits H2's mixed model as soon as H2 is done and lets its rows go."""
    from clcg_pipeline.analysis import SuiteContext

    rows = _rows(4000)
    rows["language"] = rows["language"].astype(str).replace({"pt": "am"})
    rows["doc_id"] = np.random.default_rng(4).choice([f"d{i}" for i in range(15)], len(rows))
    ctx = SuiteContext(config=None, roles=ROLES, replicates=20, seed=1, confidence=0.95)  # type: ignore[arg-type]
    again = SuiteContext(config=None, roles=ROLES, replicates=20, seed=1, confidence=0.95)  # type: ignore[arg-type]
    early = mixed_section.h2_fit(ctx, rows)
    assert early.fit.get("estimate") is not None
    assert mixed_section.mixed(ctx, rows, early) == mixed_section.mixed(again, rows, rows)
    assert ctx.rows == again.rows
    none = mixed_section.h2_fit(ctx, None)
    assert none.counts == (0, 0) and none.fit["status"].startswith("not identifiable")


def test_the_collections_between_sections_skip_what_was_alive_before() -> None:
    """Frozen while the sections run, unfrozen after, even when a section raises; a process that
    froze objects itself (this test session does) keeps them frozen, the suite touching nothing."""
    before = gc.get_freeze_count()
    gc.unfreeze()
    try:
        with frozen(True):
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() == 0
        with pytest.raises(RuntimeError), frozen(True):
            raise RuntimeError("a section failed")
        assert gc.get_freeze_count() == 0
        with frozen(False):
            assert gc.get_freeze_count() == 0
    finally:
        gc.freeze()  # the session's own freeze, as it was (now with what this test left alive)
    frozen_before = gc.get_freeze_count()
    assert frozen_before >= before
    # Neither unfrozen (0) nor frozen again (a freeze would take in the context manager's own
    # generator, made since): at most the same count. Not equal: a frozen object that another
    # thread (xdist's) lets go of leaves the permanent generation by reference counting.
    with frozen(True):
        assert 0 < gc.get_freeze_count() <= frozen_before
    assert 0 < gc.get_freeze_count() <= frozen_before


def test_repetition_numbers_are_coded_by_counting() -> None:
    """``np.unique``'s values and inverse, with codes narrow enough to fold (no hash of every row)."""
    from clcg_pipeline.analysis._suite import _sorted_codes

    for values in (np.array([3, 0, 0, 7, 3]), np.array([1, 1, 2], dtype=np.int32), np.array([-1, 2, 2])):
        reps, codes = _sorted_codes(values)
        want, inverse = np.unique(values, return_inverse=True)
        assert reps.tolist() == want.tolist() and codes.tolist() == inverse.ravel().tolist()
    assert _sorted_codes(np.array([3, 0, 0, 7, 3]))[1].dtype == np.int32
