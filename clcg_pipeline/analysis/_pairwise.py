"""Every pair of models at once: the paired contrasts of issue 21 at hundreds of models (issue 37).

A pair's contrast compares the two models' gaps on the (language, article, item) units both
answered. When one model answered every unit the other did (the usual panel), its side of the
pair is simply its own rows, so its per-article sums, their bootstrap replicates (one product
with the suite's weights matrix for all models together) and its gaps are computed once per
model and reused by every pair. Only a side that loses units to the pairing is summed again,
from its own rows in the same order as before, so every sum is the one the per-pair code gave.
The pairs' differences, intervals and p values are then whole-matrix operations over chunks of
pairs, so memory stays bounded at any number of models.

Layout convention: the language axis is ``[reference, baseline, *targets]`` (the suite's order).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from clcg_pipeline.analysis._bootstrap import percentile_ci, ratio

#: The gaps compared, each with the positions of the languages whose rows enter it.
GAP_KEYS = ("h1_micro", "macro", "macro_net")
# Bytes of one (pairs x replicates) array of a block of pairs: under numpy's 4 MiB threshold for
# huge pages, whose first touch costs far more kernel time on a shared virtual machine than the
# small pages they replace (``_timing.small_pages``): blocks of 16 MB (1,000 pairs at B=2,000)
# spent most of their time in fresh pages (issue 37: 2x the pairs' time at 200 models).
BLOCK_BYTES = 3 << 20


def key_languages(key: str, n_langs: int) -> list[int]:
    """Positions of the languages entering ``key`` (as ``sections.h1.languages_of``)."""
    if key == "macro_net":
        return list(range(n_langs))
    return [0, *range(2, n_langs)]


@dataclass(frozen=True)
class Sides:
    """Gaps of several model sides (point first, then replicates), with their row and article counts.

    ``vectors[key]`` is ``(B+1) x sides``; ``n[key]`` the full-sample rows entering the gap;
    ``presence[key]`` is ``articles x sides``: the article has a row in the gap's languages.
    """

    vectors: dict[str, np.ndarray]
    n: dict[str, np.ndarray]
    presence: dict[str, np.ndarray]


def side_gaps(sums: np.ndarray, counts: np.ndarray, weights: np.ndarray) -> Sides:
    """The gaps of every side from its ``articles x sides x languages`` sums and counts."""
    n_langs = sums.shape[2]
    rep_s = _replicated(sums, weights)
    # Counts are whole numbers: their products are exact in any order, so one product serves all.
    rep_c = _replicated(counts, weights, whole=True)
    means = ratio(rep_s, rep_c)
    english = means[:, :, 0]
    pooled = ratio(rep_s[:, :, 2:].sum(axis=-1), rep_c[:, :, 2:].sum(axis=-1))
    pt_gap = english - means[:, :, 1]
    macro = _macro(english[:, :, None] - means[:, :, 2:], rep_c[0, :, 2:] > 0)
    vectors = {"h1_micro": english - pooled, "macro": macro, "macro_net": macro - pt_gap}
    n, presence = {}, {}
    for key in GAP_KEYS:
        langs = key_languages(key, n_langs)
        n[key] = rep_c[0][:, langs].sum(axis=1)
        presence[key] = counts[:, :, langs].sum(axis=2) > 0
    return Sides(vectors, n, presence)


def _replicated(values: np.ndarray, weights: np.ndarray, *, whole: bool = False) -> np.ndarray:
    """Full-sample sums, then one row per replicate (``weights @ values``, as ``replicate``), per side.

    ``values`` is ``articles x sides x languages``; the result ``(B+1) x sides x languages``.
    One product per side, always of the same shape: BLAS sums a column of a product in an
    order that depends on the width of the matrix it is in, so a side computed among other
    sides would differ in its last bits from the same side computed alone. Per side, a
    model's replicates are the same whatever other models or pairs are computed with it, so
    a pair kept from an earlier run (``_pair_store``) equals the pair recomputed (issue 37).
    ``whole``: the values are whole numbers (row counts), whose sums are exact in any order
    below 2**53, so one product for all sides gives the same bits and is several times faster.
    """
    n_articles, n_sides, n_langs = values.shape
    out = np.zeros((weights.shape[0] + 1, n_sides, n_langs))
    if n_articles == 0:
        return out
    if whole:
        flat = values.reshape(n_articles, -1)
        out[0] = flat.sum(axis=0).reshape(n_sides, n_langs)
        np.matmul(weights, flat, out=out[1:].reshape(weights.shape[0], -1))  # a view: no copy
        return out
    for side in range(n_sides):
        part = np.ascontiguousarray(values[:, side, :])
        out[0, side] = part.sum(axis=0)
        out[1:, side] = weights @ part
    return out


def _macro(diffs: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Mean of each side's target gaps over the targets it has rows in (NaN when none).

    Sides are grouped by their set of targets, so each mean is over exactly that set's
    columns, as ``GapPanel.macro`` takes it (a replicate missing one of them is NaN).
    """
    out = np.full(diffs.shape[:2], np.nan)
    patterns, which = np.unique(present, axis=0, return_inverse=True)
    for k, pattern in enumerate(patterns):
        chosen = np.flatnonzero(pattern)
        if len(chosen) == 0:
            continue
        members = np.flatnonzero(which.ravel() == k)
        out[:, members] = diffs[:, members][:, :, chosen].mean(axis=2)
    return out


@dataclass(frozen=True)
class PairRows:
    """Band rows as codes, in an order fixed by their content (the suite's canonical order).

    ``answered`` is ``units x models``: the model has a row for the (language, article, item) unit.
    """

    n_articles: int
    n_models: int
    n_langs: int
    art: np.ndarray
    model: np.ndarray
    lang: np.ndarray
    unit: np.ndarray
    y: np.ndarray
    answered: np.ndarray
    articles: np.ndarray | None = None  # the article ids, in code order


@dataclass(frozen=True)
class PairBlock:
    """Statistics of a block of pairs: ``first``/``second`` model indices; per key, one value per pair."""

    first: np.ndarray
    second: np.ndarray
    common: np.ndarray  # units both models answered
    estimate: dict[str, np.ndarray]
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    p: dict[str, np.ndarray]
    valid: dict[str, np.ndarray]
    n: dict[str, np.ndarray]
    n_articles: dict[str, np.ndarray]


class AllPairs:
    """Every pair ``i < j`` of the models of ``rows``, block by block, with shared draws ``weights``."""

    def __init__(self, rows: PairRows, weights: np.ndarray, confidence: float) -> None:
        self.rows = rows
        self.weights = weights
        self.confidence = confidence
        shape = (rows.n_articles, rows.n_models, rows.n_langs)
        flat = (rows.art * rows.n_models + rows.model) * rows.n_langs + rows.lang
        size = int(np.prod(shape))
        sums = np.bincount(flat, weights=rows.y, minlength=size).reshape(shape)
        counts = np.bincount(flat, minlength=size).reshape(shape).astype(np.float64)
        self.own = side_gaps(sums, counts, weights)
        # Each model's gaps as a row (models x replicates): a block of pairs gathers whole rows
        # and its statistics run along contiguous rows (see ``row_statistics``).
        self._own_rows = {k: np.ascontiguousarray(self.own.vectors[k].T) for k in GAP_KEYS}
        # Each model's rows in the sorted order (a stable sort keeps it within a model).
        by_model = np.argsort(rows.model, kind="stable")
        bounds = np.searchsorted(rows.model[by_model], np.arange(rows.n_models + 1))
        self._rows_of = [by_model[bounds[m] : bounds[m + 1]] for m in range(rows.n_models)]
        self._pattern, self._shared, self._answered = _coverage(rows.answered)

    def blocks(
        self, chunk: int | None = None, pairs: tuple[np.ndarray, np.ndarray] | None = None
    ) -> Iterator[PairBlock]:
        """The pairs in ``itertools.combinations`` order, ``chunk`` pairs at a time (by default
        as many as fit ``BLOCK_BYTES`` per array).

        ``pairs``: only these ``(first, second)`` model indices (the pairs a reuse store lacks);
        a pair's statistics do not depend on the other pairs of its block.
        """
        if chunk is None:
            chunk = max(16, BLOCK_BYTES // (8 * (self.weights.shape[0] + 1)))
        first, second = np.triu_indices(self.rows.n_models, k=1) if pairs is None else pairs
        for start in range(0, len(first), chunk):
            yield self._block(first[start : start + chunk], second[start : start + chunk])

    def _block(self, first: np.ndarray, second: np.ndarray) -> PairBlock:
        common = self._shared[self._pattern[first], self._pattern[second]]
        side_a, side_b = self._sides(first, second, common), self._sides(second, first, common)
        out: dict[str, dict[str, np.ndarray]] = {f: {} for f in ("estimate", "low", "high", "p", "valid")}
        n, n_articles = {}, {}
        for key in GAP_KEYS:
            with np.errstate(invalid="ignore"):
                diff = side_a.vectors[key] - side_b.vectors[key]  # pairs x replicates (rows)
            for name, values in zip(out, row_statistics(diff, self.confidence), strict=True):
                out[name][key] = values
            n[key] = side_a.n[key] + side_b.n[key]
            n_articles[key] = (side_a.presence[key] | side_b.presence[key]).sum(axis=0)
        return PairBlock(first, second, common, n=n, n_articles=n_articles, **out)

    def _sides(self, models: np.ndarray, others: np.ndarray, common: np.ndarray) -> Sides:
        """Each model's side in its pair: its own gaps, or its gaps on the units shared with the other.

        Its ``vectors`` are transposed (one row per side: ``sides x replicates``), unlike
        ``side_gaps``'s: gathering a model's row is one contiguous copy, and gathering a column
        of every replicate row was most of the pairs' time at hundreds of models (issue 37).
        """
        own = self.own
        vectors = {k: self._own_rows[k][models] for k in GAP_KEYS}
        n = {k: own.n[k][models] for k in GAP_KEYS}
        presence = {k: own.presence[k][:, models] for k in GAP_KEYS}
        # A model keeps all its rows when the pair shares every unit it answered.
        restricted = np.flatnonzero(common != self._answered[models])
        for start in range(0, len(restricted), 256):
            part = restricted[start : start + 256]
            sides = self._restricted(models[part], others[part])
            for k in GAP_KEYS:
                vectors[k][part] = sides.vectors[k].T
                n[k][part] = sides.n[k]
                presence[k][:, part] = sides.presence[k]
        return Sides(vectors, n, presence)

    def _restricted(self, models: np.ndarray, others: np.ndarray) -> Sides:
        """Gaps of ``models[k]`` on the units ``others[k]`` also answered, summed from its rows."""
        r = self.rows
        shape = (r.n_articles, len(models), r.n_langs)
        sums, counts = np.zeros(shape), np.zeros(shape)
        for k, (m, o) in enumerate(zip(models, others, strict=True)):
            idx = self._rows_of[m]
            idx = idx[r.answered[r.unit[idx], o]]
            flat = r.art[idx] * r.n_langs + r.lang[idx]
            size = r.n_articles * r.n_langs
            sums[:, k, :] = np.bincount(flat, weights=r.y[idx], minlength=size).reshape(
                r.n_articles, r.n_langs
            )
            counts[:, k, :] = np.bincount(flat, minlength=size).reshape(r.n_articles, r.n_langs)
        return side_gaps(sums, counts, self.weights)


def _coverage(answered: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each model's coverage pattern, units shared between patterns, and units each model answered.

    Models with the same answered units share a pattern (usually all of them), so the
    ``patterns x patterns`` product of shared units stays small.
    """
    packed = np.packbits(answered, axis=0).T
    patterns, which = np.unique(packed, axis=0, return_inverse=True)
    columns = np.unpackbits(patterns, axis=1, count=answered.shape[0]).T.astype(np.float64)
    shared = np.rint(columns.T @ columns).astype(np.int64)
    which = which.ravel()
    return which, shared, np.diag(shared)[which]


def column_statistics(
    values: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column of a point-then-replicates matrix: estimate, interval, two-sided p, valid replicates.

    The same values as ``percentile_ci`` and ``bootstrap_p(..., "two-sided")`` column by column.
    """
    return row_statistics(np.ascontiguousarray(values.T), confidence)


def row_statistics(
    values: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`column_statistics` of ``values.T``: one row per contrast, the point then its replicates.

    The same values bit for bit: a percentile is an order statistic of a row's values, whatever
    their layout, and its interpolation is element by element; the counts are whole numbers.
    """
    reps = values[:, 1:]
    finite = np.isfinite(reps)
    valid = finite.sum(axis=1)
    low, high = _row_intervals(reps, valid, confidence)
    with np.errstate(invalid="ignore"):
        below = (1 + np.count_nonzero(finite & (reps <= 0), axis=1)) / (valid + 1)
        above = (1 + np.count_nonzero(finite & (reps >= 0), axis=1)) / (valid + 1)
    p = np.where(valid > 0, np.minimum(1.0, 2 * np.minimum(below, above)), np.nan)
    return values[:, 0], low, high, p, valid


def _row_intervals(reps: np.ndarray, valid: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of every row of ``reps`` over its finite replicates (NaN if none);
    ``_column_intervals`` (the same interpolation as ``percentile_ci``) along rows."""
    lows = np.full(reps.shape[0], np.nan)
    highs = np.full(reps.shape[0], np.nan)
    whole = valid == reps.shape[1]
    if whole.any() and reps.shape[1]:
        q = [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2]
        rows = reps if whole.all() else reps[whole]
        lows[whole], highs[whole] = np.percentile(rows, q, axis=1)
    for j in np.flatnonzero(~whole & (valid > 0)):
        lows[j], highs[j] = percentile_ci(reps[j], confidence)
    return lows, highs
