"""Issue 37: the main study_results.json, as the IO manager writes it, is under 2 MB at 500 models;
the document keeps the new model's difference from every other model, and the report's section
shows the ones a reader needs and names the query with all of them."""

from __future__ import annotations

import copy
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from clcg_pipeline.analysis.sections.model_contrasts import pair_label
from clcg_pipeline.report import render_report
from clcg_pipeline.results import index_without_models, new_model_block, split_model_pairs
from clcg_pipeline.storage import read_json
from clcg_pipeline_tests.report.test_report import _section_html, _text
from clcg_pipeline_tests.results.test_model_pairs import wide_study
from clcg_pipeline_tests.storage.conftest import write_output

LIMIT = 2_000_000  # bytes at 500 models (issue 37 item 3)
# The new model's section at any size: its CLCG, its two neighbours in rank, 10 significant ones.
SECTION_ROWS = 1 + 2 + 10


def _per_model(value: Any, base: list[str], ids: list[str]) -> Any:
    """``value`` with every mapping keyed by the base models (``h1.by_model``, ``ranks``...) and
    every list of them (``models``, ``settings.models``) given one entry per model of ``ids``,
    each a copy of the base model's in turn."""
    source = {new: base[k % len(base)] for k, new in enumerate(ids)}
    if isinstance(value, dict):
        if set(base) <= set(value):
            return {new: copy.deepcopy(value[old]) for new, old in source.items()}
        return {key: _per_model(item, base, ids) for key, item in value.items()}
    if isinstance(value, list) and value and value == base:
        return list(ids)
    if (
        isinstance(value, list)
        and len(value) == len(base)
        and all(isinstance(item, dict) and item.get("id") in base for item in value)
    ):
        return [{**copy.deepcopy(value[k % len(base)]), "id": new} for k, new in enumerate(ids)]
    return value


def scaled_document(base: dict[str, Any], n: int) -> dict[str, Any]:
    """The suite's document of ``base`` (its 30 models) grown to ``n`` models: every per-model
    entry repeated for the new ids, every pair of them (the base pair of their base models'
    numbers), the BH families' lists as long as the pairs, the index without per-model entries
    (as ``index_without_models`` leaves it)."""
    contrasts = base["model_contrasts"]
    models = [str(m) for m in contrasts["models"]]
    ids = [f"s{k:03d}" for k in range(n)]
    pairs, tests = contrasts["pairs"], contrasts["multiplicity"]
    slim = {key: value for key, value in base.items() if key not in ("model_contrasts", "estimands")}
    document = _per_model(copy.deepcopy(slim), models, ids)
    block = {key: value for key, value in contrasts.items() if key not in ("pairs", "multiplicity")}
    document["model_contrasts"] = _per_model(copy.deepcopy(block), models, ids)
    template = list(pairs.values())
    grown = {}
    for k, ((i, a), (j, b)) in enumerate(combinations(enumerate(ids), 2)):
        old_a, old_b = models[i % len(models)], models[j % len(models)]
        pair = pairs.get(pair_label(old_a, old_b)) or pairs.get(pair_label(old_b, old_a)) or template[k % 7]
        grown[pair_label(a, b)] = {**pair, "model_a": a, "model_b": b}  # the gap blocks shared
    document["model_contrasts"]["pairs"] = grown
    document["model_contrasts"]["multiplicity"] = {
        gap: {**family, "m": len(grown), "tests": [family["tests"][k % 7] for k in range(len(grown))]}
        for gap, family in tests.items()
    }
    groups = set(models) | {pair_label(a, b) for a in models for b in models if a != b}
    document["estimands"] = {
        key: value for key, value in base["estimands"].items() if key.partition("/")[2] not in groups
    }
    return document


def as_stored(document: dict[str, Any], tmp_path: Path) -> Path:
    """What the ``analysis`` asset does last (the new model, the pairs split off, the index cut),
    then written by the IO manager as ``study_results.json``; its path."""
    models = document["model_contrasts"]["models"]
    document["new_model"] = new_model_block(document, models[len(models) // 2])
    split_model_pairs(document)
    index_without_models(document, 1234)
    write_output(tmp_path, "study_results", document)
    return tmp_path / "study_results.json"


@pytest.fixture(scope="module")
def at_500(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    document = scaled_document(wide_study()[0], 500)
    return document, as_stored(document, tmp_path_factory.mktemp("at_500"))


def test_the_main_document_is_under_2_mb_at_500_models(at_500: tuple[dict[str, Any], Path]) -> None:
    document, path = at_500
    block = document["model_contrasts"]
    assert block["pairs_table"]["pairs"] == 500 * 499 // 2
    assert path.stat().st_size < LIMIT  # 1.57 MB; 3.37 MB with c7790a2
    # The adjacent pairs and at most 50 significant ones: not the new model's 499 on top.
    assert len(block["pairs"]) <= 499 + 50
    assert read_json(path) == document  # the same values, whatever the layout


def test_the_new_model_section_is_bounded_and_names_the_query(at_500: tuple[dict[str, Any], Path]) -> None:
    document, path = at_500
    new = document["new_model"]["model"]
    others = {d["other"] for d in document["new_model"]["differences"]}
    assert others == set(document["model_contrasts"]["models"]) - {new}  # the document keeps all 499
    html = _section_html(render_report(read_json(path), None), "new-model")
    # Its CLCG and the rows a reader needs (its two neighbours, at most 10 significant ones): the
    # section listed all 499 differences (500 rows) before.
    rows = html.count("<tr") - html.count("<thead")
    assert 1 + 2 <= rows <= SECTION_ROWS
    section = _text(html).replace("( ", "(").replace(" )", ")")  # the commands are <code> elements
    assert sum(f"{new} minus {other} " in section for other in others) == rows - 1
    assert "Against the other 499 models (H1 micro; p (adj.) <" in section
    assert "more; every pair is in the catalog view model_pairs (clcg query --named model_pairs)" in section
    assert f"'{new}' IN (model_a, model_b)" in section
