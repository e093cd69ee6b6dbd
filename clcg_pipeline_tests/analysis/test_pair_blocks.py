"""The pairs' blocks at hundreds of models (issue 37): small arrays, the same bits.

A block of pairs holds (pairs x replicates) arrays; they are kept under numpy's 4 MiB huge-page
threshold (``BLOCK_BYTES``), and each pair's statistics run along a contiguous row of its
replicates: the numbers must be those of the column-wise statistics, bit for bit.
"""

from __future__ import annotations

import numpy as np

from clcg_pipeline.analysis._bootstrap import draw_multiplicities
from clcg_pipeline.analysis._pairwise import (
    BLOCK_BYTES,
    AllPairs,
    PairRows,
    column_statistics,
    row_statistics,
)


def _rows(n_models: int, n_articles: int = 12, n_langs: int = 5, items: int = 2) -> PairRows:
    """Every model answers every (language, article, item) unit but model 0, which skips some."""
    rng = np.random.default_rng(2)
    art = np.repeat(np.arange(n_articles), n_langs * items)
    lang = np.tile(np.repeat(np.arange(n_langs), items), n_articles)
    unit = (lang * n_articles + art) * items + np.tile(np.arange(items), n_articles * n_langs)
    model = np.repeat(np.arange(n_models), len(art))
    art, lang, unit = (np.tile(a, n_models) for a in (art, lang, unit))
    keep = ~((model == 0) & (unit % 7 == 0))
    art, lang, unit, model = art[keep], lang[keep], unit[keep], model[keep]
    answered = np.zeros((int(unit.max()) + 1, n_models), dtype=bool)
    answered[unit, model] = True
    y = rng.random(len(art))
    return PairRows(n_articles, n_models, n_langs, art, model, lang, unit, y, answered)


def test_row_statistics_equal_column_statistics_bit_for_bit() -> None:
    rng = np.random.default_rng(4)
    values = rng.normal(size=(301, 40))
    values[5:40, 3] = np.nan  # a contrast with dropped replicates
    values[1:, 4] = np.nan  # one without any valid replicate
    values[7, 5] = 0.0
    by_row = row_statistics(np.ascontiguousarray(values.T), 0.95)
    reference = _column_reference(values, 0.95)
    for got, want in zip(by_row, reference, strict=True):
        assert np.array_equal(got, want, equal_nan=True)


def _column_reference(values: np.ndarray, confidence: float) -> tuple[np.ndarray, ...]:
    """The column-wise statistics as written before the rows (percentile_ci and bootstrap_p)."""
    from clcg_pipeline.analysis._bootstrap import bootstrap_p, percentile_ci

    reps = values[1:]
    valid = np.isfinite(reps).sum(axis=0)
    low, high, p = [], [], []
    for j in range(values.shape[1]):
        lo, hi = percentile_ci(reps[:, j], confidence)
        low.append(lo)
        high.append(hi)
        p.append(bootstrap_p(reps[:, j], "two-sided") if valid[j] else np.nan)
    return values[0], np.array(low), np.array(high), np.array(p), valid


def test_blocks_stay_under_the_huge_page_threshold_and_give_the_same_pairs() -> None:
    rows = _rows(n_models=30)
    weights = draw_multiplicities(rows.n_articles, 2000, seed=5)
    pairs = AllPairs(rows, weights, 0.95)
    blocks = list(pairs.blocks())
    assert max(len(b.first) for b in blocks) * 2001 * 8 <= BLOCK_BYTES < 4 << 20
    whole = next(iter(pairs.blocks(chunk=10_000)))
    assert sum(len(b.first) for b in blocks) == len(whole.first) == 30 * 29 // 2
    for field in ("estimate", "low", "high", "p", "valid", "n", "n_articles"):
        for key, want in getattr(whole, field).items():
            got = np.concatenate([getattr(b, field)[key] for b in blocks])
            assert np.array_equal(got, want, equal_nan=True), (field, key)


def test_column_statistics_keep_their_layout() -> None:
    values = np.random.default_rng(6).normal(size=(51, 7))
    for got, want in zip(
        column_statistics(values, 0.9), row_statistics(np.ascontiguousarray(values.T), 0.9), strict=True
    ):
        assert np.array_equal(got, want, equal_nan=True)
