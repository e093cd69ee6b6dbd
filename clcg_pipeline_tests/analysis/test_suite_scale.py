"""Issue 37's scale work on the suite: fewer copies of the scored rows, the same numbers.

Each faster or leaner path is compared with the slower one it replaced (kept here as the
reference) on data built to catch the orderings it must preserve: categories stored in an
order other than their strings', articles with one and with several repetitions.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis._bootstrap import ClusterTable, replicate
from clcg_pipeline.analysis._mixed import _labelled_cell_means, cell_means, fit_crossed
from clcg_pipeline.analysis._prepare import as_str, select_rows
from clcg_pipeline.analysis.sections.mixed import _distinct_strings
from clcg_pipeline.analysis.sections.repetitions import _stable_articles


def _rows(n: int = 4000, seed: int = 5) -> pd.DataFrame:
    """Band-like rows whose categoricals list their categories out of string order."""
    rng = np.random.default_rng(seed)
    models = ["m10", "m2", "m1", "m30"]  # string order: m1, m10, m2, m30
    docs = [str(d) for d in (12, 3, 7, 100, 25, 9)]
    langs = ["sw", "en", "am", "pt"]
    return pd.DataFrame(
        {
            "model": pd.Categorical(rng.choice(models, n), categories=models),
            "language": pd.Categorical(rng.choice(langs, n), categories=langs),
            "doc_id": pd.Categorical(rng.choice(docs, n), categories=docs),
            "item_id": pd.Categorical(rng.choice(["q1", "q2", "q3"], n)),
            "rep": rng.choice([0, 0, 0, 1, 2], n),
            "level": pd.Categorical(rng.choice(["L3", "L4", "L5"], n)),
            "y": rng.random(n),
            "memo": np.where(rng.random(n) < 0.5, "memorizable", "new").astype(object),
        }
    )


def _string_cells(rows: pd.DataFrame, keep: np.ndarray, flags: dict[str, np.ndarray]) -> pd.DataFrame:
    """The cells as the suite built them before: one string per row, grouped by strings."""
    sub = rows.loc[keep, ["doc_id", "model", "y"]]
    sub = sub.assign(
        doc_id=as_str(sub["doc_id"]), model=as_str(sub["model"]), **{k: v[keep] for k, v in flags.items()}
    )
    return cell_means(sub, ["doc_id", "model", *flags])


def test_labelled_cell_means_equal_the_string_grouping_bit_for_bit() -> None:
    rows = _rows()
    keep = rows["language"].isin(["en", "sw", "am"]).to_numpy()
    flags = {
        "english": (rows["language"] == "en").to_numpy().astype(np.int64),
        "memorizable": (rows["memo"] == "memorizable").to_numpy().astype(np.int64),
    }
    got = _labelled_cell_means(rows, keep, flags)
    want = _string_cells(rows, keep, flags)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # And so is the fit the mixed section reports from them.
    fit_got = fit_crossed(got, "y ~ english * memorizable", "english:memorizable")
    fit_want = fit_crossed(want, "y ~ english * memorizable", "english:memorizable")
    assert fit_got["estimate"] == fit_want["estimate"]
    assert fit_got["se"] == fit_want["se"]


def test_labelled_cell_means_fall_back_to_strings_for_a_missing_article() -> None:
    rows = _rows(600)
    rows.loc[5, "doc_id"] = np.nan  # read as the string "nan", a cell of its own, as before
    keep = np.ones(len(rows), dtype=bool)
    flags = {"english": (rows["language"] == "en").to_numpy().astype(np.int64)}
    got = _labelled_cell_means(rows, keep, flags)
    pd.testing.assert_frame_equal(got, _string_cells(rows, keep, flags), check_exact=True)
    assert "nan" in set(got["doc_id"])


def test_distinct_strings_counts_like_the_strings_of_every_row() -> None:
    rows = _rows(500)
    assert _distinct_strings(rows["doc_id"]) == as_str(rows["doc_id"]).nunique() == 6
    rows.loc[3, "doc_id"] = np.nan
    assert _distinct_strings(rows["doc_id"]) == as_str(rows["doc_id"]).nunique() == 7


@pytest.mark.parametrize("missing_rep", [False, True])
def test_stable_articles_match_the_string_grouping(missing_rep: bool) -> None:
    rows = _rows(300)
    rows.loc[rows["doc_id"].isin(["12", "7"]), "rep"] = 0  # two articles with one repetition
    if missing_rep:
        rows["rep"] = rows["rep"].astype(float)
        rows.loc[0, "rep"] = np.nan
    per_doc = rows.groupby(as_str(rows["doc_id"]), observed=True)["rep"].nunique()
    stable = per_doc.index[per_doc > 1]
    n_stable, in_stable = _stable_articles(rows)
    assert n_stable == len(stable) == 4
    np.testing.assert_array_equal(in_stable, as_str(rows["doc_id"]).isin(stable).to_numpy())


def test_select_rows_copies_only_the_columns_asked_for() -> None:
    rows = _rows(200)
    got = select_rows(rows, levels=["L3", "L5"], languages=["en"], columns=["doc_id", "y"])
    want = select_rows(rows, levels=["L3", "L5"], languages=["en"])[["doc_id", "y"]]
    assert list(got.columns) == ["doc_id", "y"]
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_replicate_holds_one_replicates_matrix_per_statistic_at_a_time() -> None:
    """The replicates x cells products are a panel's largest arrays: stacking the point row
    onto each copied it once more (three such matrices at once instead of two)."""
    rng = np.random.default_rng(1)
    n_articles, n_cells, n_reps = 40, 2000, 1000
    table = ClusterTable(
        np.arange(n_articles).astype(str).astype(object),
        pd.DataFrame({"cell": np.arange(n_cells)}),
        rng.random((n_articles, n_cells)),
        rng.integers(0, 4, (n_articles, n_cells)).astype(np.float64),
    )
    weights = rng.integers(0, 3, (n_reps, n_articles)).astype(np.float64)
    tracemalloc.start()
    try:
        out = replicate(table, weights)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    one = (n_reps + 1) * n_cells * 8
    assert peak < 2.5 * one
    np.testing.assert_array_equal(out.sums[1:], weights @ table.sums)
    np.testing.assert_array_equal(out.sums[0], table.sums.sum(axis=0))
    np.testing.assert_array_equal(out.counts[1:], weights @ table.counts)


def test_the_reml_fit_runs_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its small products, split over threads on a busy 2-core machine, made the mixed section
    of a hundred models about 25 times slower; one thread also fixes its numbers, which the
    BLAS's thread count otherwise moves (about 1e-8 relative at a hundred models)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import clcg_pipeline.analysis._mixed as mixed

    seen: list[int] = []
    real = mixed._reml_theta

    def spy(reml: object, n_theta: int) -> object:
        seen.extend(p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas")
        return real(reml, n_theta)  # type: ignore[arg-type]

    monkeypatch.setattr(mixed, "_reml_theta", spy)
    rows = _rows()
    keep = np.ones(len(rows), dtype=bool)
    cells = _labelled_cell_means(
        rows, keep, {"english": (rows["language"] == "en").to_numpy().astype(np.int64)}
    )
    fit_crossed(cells, "y ~ english", "english")
    assert seen and set(seen) == {1}


def test_gap_panel_means_are_cached_yet_fresh() -> None:
    """A mean asked for twice is computed once, and writing into one never changes the next."""
    from clcg_pipeline.analysis._bootstrap import cluster_table, draw_multiplicities
    from clcg_pipeline.analysis._gaps import GapPanel, Roles

    rows = _rows(800)
    table = cluster_table(rows, ["model", "language"])
    panel = GapPanel(
        replicate(table, draw_multiplicities(len(table.articles), 30, 3)), Roles("en", "pt", ("sw", "am"))
    )
    first = panel.mean(["sw", "am"], model="m1")
    kept = first.copy()
    first[:] = -1.0
    np.testing.assert_array_equal(panel.mean(("am", "sw"), model="m1"), kept)
    assert len(panel._means) == 1  # the same cells by a list or a tuple in another order


def _scores_file(tmp_path, rows: int = 5000, row_group: int = 1500) -> str:  # type: ignore[no-untyped-def]
    """A scores-like Parquet file of several row groups whose dictionaries differ."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = _rows(rows, seed=9).drop(columns=["memo", "level"])
    frame = frame.assign(
        **{c: frame[c].astype(str) for c in ("model", "language", "doc_id", "item_id")},
        level=np.where(np.arange(rows) < rows // 2, "L3", "L4"),
        context_scope="full_body",
        item_source="llm",
        status="ok",
        token_f1=frame["y"],
        accuracy=frame["y"],
    ).drop(columns=["y"])
    path = str(tmp_path / "scores.parquet")
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=row_group)
    return path


def test_scores_are_read_column_by_column_with_the_frame_of_a_whole_read(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """One column's Arrow data at a time (issue 37: the read was the suite's peak memory), with
    the frame, categories and their order of a whole-table read; filters decided in Arrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import clcg_pipeline.analysis._io as io

    path = _scores_file(tmp_path)
    read_columns = []
    real_read = pq.ParquetFile.read

    def counted(self, columns=None, **kwargs):  # type: ignore[no-untyped-def]
        read_columns.append(list(columns or []))
        return real_read(self, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", counted)
    got = io.read_scores(path, metrics=("token_f1", "accuracy"))
    assert all(len(c) == 1 for c in read_columns) and len(read_columns) == len(got.columns)
    columns = list(got.columns)
    want = pq.read_table(path, columns=columns, read_dictionary=list(io._STRING_COLS)).to_pandas()
    pd.testing.assert_frame_equal(got, want, check_exact=True)  # categories in the same order too

    kept = io.read_scores(path, metrics=("token_f1",), filters={"level": ["L4"], "model": ["m1", "m30"]})
    table = pq.read_table(path, columns=list(kept.columns), read_dictionary=list(io._STRING_COLS))
    mask = np.isin(np.asarray(table.column("level").to_pylist()), ["L4"])
    mask &= np.isin(np.asarray(table.column("model").to_pylist()), ["m1", "m30"])
    assert 0 < mask.sum() < len(mask)
    pd.testing.assert_frame_equal(kept, table.filter(pa.array(mask)).to_pandas(), check_exact=True)


def test_an_empty_scores_file_reads_as_an_empty_frame_of_its_columns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pyarrow.parquet as pq

    import clcg_pipeline.analysis._io as io

    path = _scores_file(tmp_path)
    empty = str(tmp_path / "empty.parquet")
    pq.write_table(pq.read_table(path).slice(0, 0), empty)
    got = io.read_scores(empty, metrics=("token_f1",))
    assert len(got) == 0 and list(got.columns) == [*io.KEY_COLUMNS, "token_f1"]


def test_prepare_keeps_the_other_metrics_on_the_band_rows_only() -> None:
    """rouge_l and semsim are read for metric sensitivity, on band rows: not kept for every row."""
    from clcg_pipeline.analysis import roles_of
    from clcg_pipeline.analysis._context import SuiteContext
    from clcg_pipeline.analysis._suite import _prepare
    from clcg_pipeline.config import load_config
    from clcg_pipeline.synthetic import synthetic_config, synthetic_scores

    config = synthetic_config(load_config("assets_config"), n_models=2)
    frame = synthetic_scores(config.languages, n_models=2, n_articles=12, n_stability=0, seed=4)
    raw = frame.copy()
    ctx = SuiteContext(
        config=config, roles=roles_of(config.languages), replicates=10, seed=1, confidence=0.95
    )
    rows = _prepare(ctx, [frame])
    assert "rouge_l" in rows.band_raw.columns and "rouge_l" not in rows.scores.columns
    # Every row's primary score (L0 rows by accuracy) in the metric's column, no accuracy column
    # over every row (issue 37); the band rows keep both, as read.
    assert "token_f1" in rows.scores.columns and not {"accuracy", "rep"} & set(rows.scores.columns)
    assert "accuracy" in rows.band_raw.columns
    from clcg_pipeline.analysis._prepare import score_values

    assert len(rows.scores) == len(raw) and (raw["level"] == "L0").any()
    got = np.sort(rows.scores["token_f1"].to_numpy())
    np.testing.assert_array_equal(got, np.sort(score_values(raw, "token_f1")))
    np.testing.assert_array_equal(score_values(rows.scores, "token_f1"), rows.scores["token_f1"].to_numpy())


def test_rule_a_rows_of_a_section_equal_a_selection_of_every_rule_a_row() -> None:
    """No rule-A score over every row is held (issue 37): a section's rule-A rows are computed on
    its selection, equal to selecting them from every row's rule-A frame (the frame it replaces)."""
    from clcg_pipeline.analysis import roles_of
    from clcg_pipeline.analysis._context import SuiteContext
    from clcg_pipeline.analysis._prepare import apply_rule, score_values, select_rows
    from clcg_pipeline.analysis._suite import _PANEL_COLUMNS, _prepare, _rule_a_rows
    from clcg_pipeline.config import load_config
    from clcg_pipeline.synthetic import synthetic_config, synthetic_scores

    config = synthetic_config(load_config("assets_config"), n_models=2)
    frame = synthetic_scores(config.languages, n_models=2, n_articles=12, n_stability=0, seed=4)
    frame.loc[frame.index[::7], "status"] = "unparseable"  # rule A scores them 0
    ctx = SuiteContext(
        config=config, roles=roles_of(config.languages), replicates=10, seed=1, confidence=0.95
    )
    rows = _prepare(ctx, [frame])
    assert rows.rows_a is None  # every row kept: no rule-A frame over every row
    every = apply_rule(rows.scores, score_values(rows.scores, "token_f1"), "A")
    for selection in ({"item_source": "human", "context_scope": "full_body"}, {"levels": ["L0", "L3"]}):
        got = _rule_a_rows(ctx, rows, [*_PANEL_COLUMNS, "level"], **selection)
        want = select_rows(every, **selection, columns=[*_PANEL_COLUMNS, "level"])
        assert 0 < len(got) < len(rows.scores) and (got["y"] == 0).any()
        pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_take_columns_is_iloc_with_a_fresh_index() -> None:
    from clcg_pipeline.analysis._suite import _take_columns

    rows = _rows(700)
    order = np.random.default_rng(2).permutation(len(rows))
    want = rows.iloc[order]
    want.index = pd.RangeIndex(len(want))
    holder = [rows.copy()]
    got = _take_columns(holder, order)
    assert holder == []  # the frame was taken out: the caller keeps no reference to it
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_narrow_codes_are_the_codes_in_a_smaller_type() -> None:
    """``narrow``: the same codes in the smallest signed type (issue 37: int64 over every row)."""
    from clcg_pipeline.analysis._bootstrap import dense_unique, sorted_factorize

    rows = _rows(900)
    for col in ("model", "doc_id", "item_id"):
        wide, uniques = sorted_factorize(rows[col])
        narrow, narrow_uniques = sorted_factorize(rows[col], narrow=True)
        assert narrow.dtype == np.int8 and wide.dtype == np.int64
        assert narrow.tolist() == wide.tolist() and list(narrow_uniques) == list(uniques)
    codes = np.random.default_rng(1).integers(0, 60, size=500)
    _, inverse = dense_unique(codes, 60, narrow=True)
    assert inverse.dtype == np.int32 and inverse.tolist() == dense_unique(codes, 60)[1].tolist()


def test_a_timed_part_frees_the_frames_it_left_in_reference_cycles() -> None:
    """The cyclic collector runs by object counts, not bytes: the suite collects after each part."""
    import gc
    import weakref

    from clcg_pipeline.analysis._suite import _Timer

    class Holder:
        pass

    timer = _Timer()
    gc.disable()  # only the timer's own collection may free the cycle
    try:
        with timer("part"):
            holder = Holder()
            holder.self = holder  # type: ignore[attr-defined]
            holder.frame = _rows(50)  # type: ignore[attr-defined]
            alive = weakref.ref(holder)
            del holder
            assert alive() is not None
        assert alive() is None and "part" in timer.seconds
    finally:
        gc.enable()


def test_a_small_panel_is_not_collected_between_parts() -> None:
    """A full collection costs a tenth of a second with Dagster loaded, seventeen times per
    analysis: only panels of ``COLLECT_FROM_ROWS`` rows and more pay it."""
    import gc
    import weakref

    from clcg_pipeline.analysis._suite import COLLECT_FROM_ROWS, _Timer

    class Holder:
        pass

    assert COLLECT_FROM_ROWS >= 100_000  # the suite's own tests and the demo stay below it
    timer = _Timer(collect=False)
    gc.disable()
    try:
        with timer("part"):
            holder = Holder()
            holder.self = holder  # type: ignore[attr-defined]
            alive = weakref.ref(holder)
            del holder
        assert alive() is not None and "part" in timer.seconds
    finally:
        gc.enable()
        gc.collect()
