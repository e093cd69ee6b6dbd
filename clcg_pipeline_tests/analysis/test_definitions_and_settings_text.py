"""What the document says in words reads as words, and the estimates table holds every H2 estimate
(issue 34, items 1 and 4).

Before: ``definitions.<family>_metric.metric`` was the raw template ``"{group}"`` (printed as
such in the report's appendix), a model's simulated note ended mid-sentence ("...; no real
model's"), and H2's per-model memorizable and new groups were in the document but not in the
estimates table, so the document's caveat ("5 of 93 estimate(s) ...") counted fewer withheld
estimates than the document holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from clcg_pipeline import analysis
from clcg_pipeline.analysis._definitions import DEFINITIONS, definition_of, definitions_for
from clcg_pipeline.analysis._settings import _simulated
from clcg_pipeline_tests.analysis.test_suite_golden import golden_document

_GROUPED = [name for name, entry in DEFINITIONS.items() if "{group}" in entry["metric"]]


def test_a_familys_definition_names_where_its_metric_is() -> None:
    assert _GROUPED  # the metric-sensitivity families
    definitions = definitions_for([*_GROUPED, "h1_micro"], "token_f1")
    for name in _GROUPED:
        assert definitions[name]["metric"] == analysis.GROUP_METRIC, name
        assert "{" not in definitions[name]["metric"]
    assert definitions["h1_micro"]["metric"] == "token_f1"
    # A row still gets its own group's metric.
    assert definition_of(_GROUPED[0], "rouge_l", "token_f1")["metric"] == "rouge_l"


def test_the_simulated_note_is_a_whole_sentence() -> None:
    note = _simulated({"simulated_drop_ht": 0.75, "simulated_drop_sw": 0.65, "temperature": 0})["simulated"]
    assert note.startswith("SIMULATED per-language gap on the demo corpus (drop rates ht 0.75, sw 0.65)")
    assert note.endswith("so its gap describes no real model") and "model's" not in note
    assert _simulated({"temperature": 0}) == {}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return golden_document()


def test_every_h2_estimate_of_the_document_is_a_row_of_the_estimates_table(document: dict[str, Any]) -> None:
    rows = {(r["estimand"], r["group"]): r for r in document["estimates"]}
    h2 = document["results"]["h2"]
    blocks = {("h2_clcg_memorizable", "all"): h2["pooled"]["memorizable"]}
    blocks[("h2_clcg_new", "all")] = h2["pooled"]["new"]
    for model, entry in h2["by_model"].items():
        if "memorizable" in entry:
            blocks[("h2_clcg_memorizable_model", model)] = entry["memorizable"]
            blocks[("h2_clcg_new_model", model)] = entry["new"]
    assert len(blocks) > 2  # the panel's models have both groups
    for key, block in blocks.items():
        assert key in rows, key
        assert rows[key]["identifiable"] == block["identifiable"], key
        assert rows[key]["estimate"] == pytest.approx(block["estimate"]), key
    # The panel has withheld per-model groups: the caveat counts them with the table's other rows
    # withheld for too few articles.
    withheld = sum("too few articles" in str(r["status"]) for r in document["estimates"])
    assert any(not b["identifiable"] for k, b in blocks.items() if k[1] != "all")
    assert f"estimates: {withheld} of {len(rows)} estimate(s)" in " ".join(document["results"]["warnings"])
