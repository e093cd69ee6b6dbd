"""The whole suite pinned to a golden document computed by the suite as it was before issue 37.

Issue 37 rewrote how the suite aggregates and resamples (per-article sufficient statistics,
one weights matrix for every model and pair). The estimands must not move: every number of
``study_results.json`` and of the ``estimates`` table is compared with ``golden_suite.json``
(written by the old code on the small deterministic panel below: four models, failed answers,
items one model skipped) to 1e-12, and everything else (labels, statuses, counts) exactly.

Regenerate only on purpose (a deliberate change of an estimand), with the code that is meant
to be the reference: ``.venv/bin/python -m clcg_pipeline_tests.analysis.test_suite_golden``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import read_scores, run_suite
from clcg_pipeline.config import LanguagesConfig, StudyConfig, load_config
from clcg_pipeline.storage import jsonable

GOLDEN = Path(__file__).with_name("golden_suite.json")
N_MODELS = 4
N_ARTICLES = 24
REPLICATES = 200
TOLERANCE = 1e-12
# Differ between runs by design (clock, checkout), not estimands; ``config_hash`` hashes the
# repository's assets_config/ the panel's config starts from, which changes with any edit there.
VOLATILE = ("generated_at", "code_version", "config_hash")


def _languages() -> LanguagesConfig:
    return LanguagesConfig.model_validate(
        {
            "languages": [
                {"iso": "en", "name": "English", "script": "Latn", "joshi_class": 5, "role": "reference"},
                {"iso": "pt", "name": "Portuguese", "script": "Latn", "joshi_class": 4, "role": "baseline"},
                {"iso": "sw", "name": "Swahili", "script": "Latn", "joshi_class": 2, "role": "target"},
                {"iso": "am", "name": "Amharic", "script": "Ethi", "joshi_class": 2, "role": "target"},
                {"iso": "fon", "name": "Fon", "script": "Latn", "joshi_class": 0, "role": "target"},
            ]
        }
    )


def golden_inputs() -> tuple[Any, dict[str, Any]]:
    """The config and the ``run_suite`` inputs of the golden panel (all seeded)."""
    from clcg_pipeline.synthetic import (
        synthetic_articles,
        synthetic_config,
        synthetic_fertility,
        synthetic_scores,
    )

    config = synthetic_config(load_config("assets_config"), n_models=N_MODELS).model_copy(
        update={"languages": _languages(), "study": StudyConfig(bootstrap_replicates=REPLICATES, seed=7)}
    )
    scores = synthetic_scores(
        config.languages,
        n_models=N_MODELS,
        n_articles=N_ARTICLES,
        n_stability=6,
        items_per_level=2,
        human_per_article=4,
        probe_articles=5,
        failure_rate=0.08,
        seed=21,
    )
    other = synthetic_scores(config.languages, n_models=N_MODELS, n_articles=12, n_stability=0, seed=22)
    inputs = {
        "scores": _skip_items(scores),
        "articles": synthetic_articles(N_ARTICLES, seed=21),
        "fertility": synthetic_fertility(config.languages),
        "replication_scores": other,
    }
    return config, inputs


def _skip_items(scores: pd.DataFrame) -> pd.DataFrame:
    """Items some models never answered, so pairs compare different common units.

    model-b skips a seeded tenth of its rows; model-d skips every Amharic row of the first
    eight articles (a language-article hole, as a model that refused a script would leave).
    """
    rng = np.random.default_rng(5)
    model = scores["model"].astype(str).to_numpy()
    lang = scores["language"].astype(str).to_numpy()
    doc = scores["doc_id"].astype(str).astype(int).to_numpy()
    skip_b = (model == "model-b") & (rng.random(len(scores)) < 0.1)
    skip_d = (model == "model-d") & (lang == "am") & (doc <= 8)
    return scores.loc[~(skip_b | skip_d)].reset_index(drop=True)


def golden_document(parquet_dir: Path | None = None) -> dict[str, Any]:
    """The suite's document and estimates table on the golden panel, as JSON values.

    With ``parquet_dir`` the scores go through a Parquet file and ``read_scores`` first, as
    ``clcg estimate --full`` reads them (string columns as categoricals).
    """
    config, inputs = golden_inputs()
    if parquet_dir is not None:
        path = parquet_dir / "scores.parquet"
        inputs["scores"].to_parquet(path, index=False)
        inputs["scores"] = read_scores(str(path))
    result = run_suite(config=config, **inputs)
    doc = jsonable(result.results)
    for key in VOLATILE:
        doc["settings"].pop(key, None)
    estimates = result.estimates.astype(object).where(result.estimates.notna(), None)
    return {"results": doc, "estimates": jsonable(estimates.to_dict(orient="records"))}


def _differences(got: Any, want: Any, path: str = "") -> list[str]:
    """Every place where ``got`` differs from ``want`` (numbers beyond the tolerance)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}: keys {sorted(set(got) ^ set(want))}"] if set(got) != set(want) else []
        if list(got) != list(want) and not out:
            out.append(f"{path}: key order differs")
        for key in want:
            if key in got:
                out.extend(_differences(got[key], want[key], f"{path}/{key}"))
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{path}: {len(got)} items, golden {len(want)}"]
        return [
            d
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            for d in _differences(g, w, f"{path}[{i}]")
        ]
    if _number(want) and _number(got):
        close = math.isclose(float(got), float(want), rel_tol=TOLERANCE, abs_tol=TOLERANCE)
        return [] if close else [f"{path}: {got!r} != golden {want!r}"]
    return [] if got == want else [f"{path}: {got!r} != golden {want!r}"]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def current() -> dict[str, Any]:
    # Through JSON like the golden file, so both sides have the same types (tuples as lists...).
    return json.loads(json.dumps(golden_document()))


def test_every_estimand_equals_the_golden_document(current, golden):
    diffs = _differences(current["results"], golden["results"])
    assert not diffs, f"{len(diffs)} difference(s) from {GOLDEN.name}, first: {diffs[:10]}"


def test_estimates_table_equals_the_golden_table(current, golden):
    diffs = _differences(current["estimates"], golden["estimates"])
    assert not diffs, f"{len(diffs)} difference(s) from {GOLDEN.name}, first: {diffs[:10]}"


def test_pairwise_contrasts_and_ranks_equal_the_golden_ones(current, golden):
    got, want = current["results"]["model_contrasts"], golden["results"]["model_contrasts"]
    assert len(want["pairs"]) == N_MODELS * (N_MODELS - 1) // 2
    # The skipped items make pairs differ in their common units: the panel tests pairing.
    assert len({p["n_common_items"] for p in want["pairs"].values()}) > 1
    for part in ("pairs", "ranks", "multiplicity", "english_score", "models"):
        diffs = _differences(got[part], want[part], part)
        assert not diffs, f"model_contrasts {part}: {diffs[:10]}"


def test_the_panel_read_from_parquet_gives_the_golden_document(golden, tmp_path):
    """Categorical columns (as read from Parquet) take other code paths than the in-memory strings."""
    current = json.loads(json.dumps(golden_document(tmp_path)))
    for part in ("results", "estimates"):
        diffs = _differences(current[part], golden[part])
        assert not diffs, f"{part}: {len(diffs)} difference(s) from {GOLDEN.name}, first: {diffs[:10]}"


def test_the_comparison_sees_a_changed_estimand(golden):
    """The comparison itself fails on a number moved by more than the tolerance."""
    moved = json.loads(json.dumps(golden["results"]))
    entry = moved["h1"]["h1_micro"]
    entry["estimate"] += 1e-9
    want = golden["results"]["h1"]["h1_micro"]["estimate"]
    assert _differences(moved, golden["results"]) == [
        f"/h1/h1_micro/estimate: {entry['estimate']!r} != golden {want!r}"
    ]


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(golden_document(), indent=1, sort_keys=False, allow_nan=False) + "\n")
    print(f"wrote {GOLDEN}")
