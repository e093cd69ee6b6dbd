"""Issue 37: at N models study_results.json keeps the pairs a reader needs; every pair is a table
beside it (``model_pairs``), in the catalog and behind a named query."""

from __future__ import annotations

import copy
import json
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import leaderboard, run_suite
from clcg_pipeline.config import ModelsConfig, ModelSpec, StudyConfig, load_config
from clcg_pipeline.results import (
    PAIRS_TABLE,
    SIGNIFICANT_KEPT,
    index_without_models,
    new_model_block,
    pairs_frame,
    read_model_pairs,
    split_model_pairs,
    withhold_unidentifiable,
    write_model_pairs,
)
from clcg_pipeline.storage import TABLES, build_catalog, default_catalog_path, jsonable, run_named_query
from clcg_pipeline_tests.analysis.conftest import band_scores
from clcg_pipeline_tests.analysis.test_suite_golden import _languages

N_MODELS = 30
GAPS = ("h1_micro", "macro", "macro_net")
TARGETS = ["sw", "am", "fon"]


def model_ids(n: int) -> list[str]:
    return [f"m{k:02d}" for k in range(n)]


@cache
def wide_study(n_models: int = N_MODELS) -> tuple[dict[str, Any], pd.DataFrame]:
    """The suite's document (as JSON values, withheld as the asset does) and estimates table on a
    panel of ``n_models`` models whose target gaps rise 0.01 apart, each with its own noise: the
    adjacent pairs mostly cannot be separated, far pairs can (hundreds significant after BH)."""
    from clcg_pipeline.synthetic import synthetic_config

    languages = _languages()
    base = band_scores(languages, 1, 24, seed=3)
    target = base.language.isin(TARGETS).to_numpy()
    frames = []
    for k, model in enumerate(model_ids(n_models)):
        noise = np.random.default_rng(k).normal(0.0, 0.05, len(base))
        frames.append(
            base.assign(model=model, token_f1=base.token_f1 - np.where(target, 0.01 * k, 0.0) + noise)
        )
    models = ModelsConfig(
        models=[ModelSpec(id=m, provider="offline", model="synthetic") for m in model_ids(n_models)]
    )
    cfg = synthetic_config(load_config("assets_config")).model_copy(
        update={
            "languages": languages,
            "models": models,
            "study": StudyConfig(bootstrap_replicates=200, seed=5),
        }
    )
    result = run_suite(pd.concat(frames, ignore_index=True), cfg)
    return jsonable(withhold_unidentifiable(result.results)), result.estimates


def split(document: dict[str, Any]) -> tuple[dict[str, Any], pd.DataFrame]:
    """What ``assemble_study_results`` does last: the pairs split off, the index cut to size."""
    slim = copy.deepcopy(document)
    frame = split_model_pairs(slim)
    index_without_models(slim, 1234)
    return slim, frame


def _size(document: dict[str, Any]) -> int:
    """Bytes as the IO manager writes it (indented, sorted keys)."""
    return len(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False).encode())


def test_the_document_keeps_only_the_pairs_a_reader_needs() -> None:
    full, _ = wide_study()
    pairs = full["model_contrasts"]["pairs"]
    assert len(pairs) == N_MODELS * (N_MODELS - 1) // 2
    slim, _ = split(full)
    block = slim["model_contrasts"]
    order = list(leaderboard(full).model)
    adjacent = {frozenset(p) for p in pairwise(order)}
    kept = {frozenset((p["model_a"], p["model_b"])) for p in block["pairs"].values()}
    significant = [
        n
        for n, p in pairs.items()
        if any((p[g].get("p_adj") if p[g].get("p_adj") is not None else 1) < 0.05 for g in GAPS)
    ]
    assert len(significant) > SIGNIFICANT_KEPT  # the panel makes the cap bite
    # Every adjacent pair, at most SIGNIFICANT_KEPT more, the same blocks as before.
    assert adjacent <= kept and len(kept) <= len(adjacent) + SIGNIFICANT_KEPT
    assert all(block["pairs"][name] == pairs[name] for name in block["pairs"])
    assert block["pairs_table"] == {
        "table": PAIRS_TABLE,
        "path": "model_pairs/data.parquet",
        "rows": 3 * len(pairs),
        "pairs": len(pairs),
        "shown": len(block["pairs"]),
        "significant": len(significant),
        "query": "clcg query --named model_pairs",
        "rule": block["pairs_table"]["rule"],
    }
    # Nothing else grows with the pairs: the BH families are counts, the flat index has no pair.
    for family in block["multiplicity"].values():
        assert "tests" not in family and family["m"] == len(pairs) and family["tests_in"] == PAIRS_TABLE
    assert not [key for key in slim["estimands"] if " vs " in key or "/m0" in key or "/m1" in key]
    assert slim["estimands_table"]["rows"] == 1234 and slim["estimands_table"]["indexed"] == len(
        slim["estimands"]
    )
    assert _size(slim) * 5 < _size(full)  # 0.28 MB of 2.0 MB at 30 models


def test_the_new_models_pairs_are_in_its_block_not_repeated_in_the_pairs() -> None:
    """Its difference from every other model is ``new_model.differences``; ``model_contrasts.pairs``
    keeps its pairs only as any other's (adjacent or significant), not all N - 1 again."""
    full, _ = wide_study()
    new = model_ids(N_MODELS)[7]
    document = copy.deepcopy(full)
    document["new_model"] = new_model_block(document, new)
    alone, _ = split(full)
    slim, _ = split(document)
    assert slim["model_contrasts"]["pairs"] == alone["model_contrasts"]["pairs"]
    kept = slim["model_contrasts"]["pairs"].values()
    assert sum(1 for p in kept if new in (p["model_a"], p["model_b"])) < N_MODELS - 1
    differences = slim["new_model"]["differences"]
    assert {d["other"] for d in differences} == set(model_ids(N_MODELS)) - {new}


def _same(stored: object, written: object) -> bool:
    """A value read back from Parquet equals the document's (null as NaN or None)."""
    if written is None:
        return stored is None or bool(pd.isna(stored))
    return bool(stored == written)


def test_the_table_holds_every_pair_with_the_same_numbers(tmp_path: Path) -> None:
    full, _ = wide_study()
    slim, frame = split(full)
    write_model_pairs(frame, str(tmp_path))
    stored = read_model_pairs(slim, str(tmp_path))  # read back from the Parquet file
    pairs = full["model_contrasts"]["pairs"]
    assert len(stored) == 3 * len(pairs) and stored["pair"].nunique() == len(pairs)
    assert set(stored.loc[stored["shown"], "pair"]) == set(slim["model_contrasts"]["pairs"])
    fields = ("estimate", "ci_low", "ci_high", "p", "p_adj", "n", "n_articles", "valid_replicates")
    for row in stored.to_dict(orient="records"):
        entry = pairs[row["pair"]]
        assert (row["model_a"], row["model_b"], row["n_common_items"]) == (
            entry["model_a"],
            entry["model_b"],
            entry["n_common_items"],
        )
        block = entry[row["gap"]]
        for field in (*fields, "p_bound", "identifiable", "reason"):
            assert _same(row[field], block[field]), (row["pair"], row["gap"], field)
        assert list(row["flags"]) == block["flags"]


def test_the_table_is_written_read_back_and_queried_through_the_catalog(tmp_path: Path) -> None:
    full, _ = wide_study()
    slim, frame = split(full)
    path = write_model_pairs(frame, str(tmp_path))
    assert Path(path) == tmp_path / "model_pairs" / "data.parquet"
    stored = read_model_pairs(slim, str(tmp_path))
    assert list(stored.columns[: len(TABLES[PAIRS_TABLE].names)]) == TABLES[PAIRS_TABLE].names
    assert len(stored) == len(frame)
    # A document written before the pairs moved out holds them all inline: read from there.
    assert len(read_model_pairs(full, str(tmp_path / "elsewhere"))) == len(frame)
    counts = build_catalog(str(tmp_path))
    assert counts[PAIRS_TABLE] == len(frame)
    listed = run_named_query(default_catalog_path(str(tmp_path)), "model_pairs", {}, data_dir=str(tmp_path))
    assert len(listed) == len(frame)
    assert set(zip(listed.model_a, listed.model_b, strict=True)) == {
        (p["model_a"], p["model_b"]) for p in full["model_contrasts"]["pairs"].values()
    }
    one = listed[(listed.gap == "h1_micro")].iloc[0]
    entry = full["model_contrasts"]["pairs"][f"{one.model_a} vs {one.model_b}"]["h1_micro"]
    assert one.estimate == pytest.approx(entry["estimate"], abs=5e-5)


def test_a_referenced_table_that_is_missing_is_named(tmp_path: Path) -> None:
    slim, _ = split(wide_study()[0])
    with pytest.raises(FileNotFoundError, match=r"model_pairs/data.parquet: not found .*435 pairs"):
        read_model_pairs(slim, str(tmp_path))


def test_one_model_keeps_its_block_and_writes_an_empty_table(tmp_path: Path) -> None:
    document = {
        "model_contrasts": {"status": "one model: no pair to compare", "models": ["m00"], "pairs": {}}
    }
    frame = split_model_pairs(document)
    assert frame.empty and "pairs_table" not in document["model_contrasts"]
    write_model_pairs(frame, str(tmp_path))
    assert build_catalog(str(tmp_path))[PAIRS_TABLE] == 0


def _rows_frame(pairs: dict[str, Any], shown: list[str]) -> pd.DataFrame:
    """``pairs_frame`` as it was built before (c7790a2): one dict per row, then ``pd.DataFrame``."""
    return pd.DataFrame(
        [
            {
                "pair": name,
                "model_a": pair.get("model_a"),
                "model_b": pair.get("model_b"),
                "n_common_items": pair.get("n_common_items"),
                "gap": gap,
                **pair[gap],
                "shown": name in set(shown),
            }
            for name, pair in pairs.items()
            if isinstance(pair, dict)
            for gap in GAPS
            if isinstance(pair.get(gap), dict)
        ]
    )


def _identical(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Same columns in the same order, dtypes, values, and the Python type of every cell."""
    assert list(got.columns) == list(want.columns) and list(got.dtypes) == list(want.dtypes)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    for column, values in want.to_dict("list").items():
        assert [type(v) for v in got[column].tolist()] == [type(v) for v in values], column


def test_the_pairs_table_is_built_as_one_row_per_dict_built_it() -> None:
    """Column by column (issue 37), with the same frame: fields a gap lacks, a field first seen
    in a later row, nulls in number and flag columns, an entry that is not a pair."""
    full, _ = wide_study()
    pairs = full["model_contrasts"]["pairs"]
    shown = list(pairs)[::7]
    _identical(pairs_frame(pairs, shown), _rows_frame(pairs, shown))
    odd: dict[str, Any] = {
        "a vs b": {
            "model_a": "a",
            "model_b": "b",
            "n_common_items": 3,
            "h1_micro": {"estimate": 1.0, "n": 5, "flags": []},
            "macro": {"estimate": None, "n": None, "identifiable": True, "flags": ["x"]},
        },
        "a vs c": {
            "model_a": "a",
            "model_b": "c",
            "h1_micro": {"estimate": float("nan"), "n": 7, "identifiable": None, "reason": "r"},
            "macro_net": {"estimate": 2, "n": 3},
        },
        "b vs c": "not a pair",
    }
    _identical(pairs_frame(odd, ["a vs c"]), _rows_frame(odd, ["a vs c"]))
