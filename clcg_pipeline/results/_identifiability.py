"""One identifiability rule for every number in study_results.json.

The estimator suite decides, per estimand, whether its interval and p may be shown (the rule is
``analysis.withheld_reason``, its one owner: below ``study.min_articles`` articles they are
degenerate) and writes that decision into the
``estimates`` table, indexed in the document as ``estimands`` (``"<estimand>/<group>"`` ->
``identifiable``, ``reason``). Some sections carry the same estimand a second time, in their own
shape, and were written before (or apart from) that decision: Rule B of the parse-failure rule,
the EN-PT equivalence tests. This module applies the estimates table's decision to them, and
withholds the intervals and p values of every block already marked not identifiable, so the
document never shows a number the estimates table withholds. The point estimates stay, as in the
estimates table: they describe the sample, and the reason says why nothing more is shown.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar, cast

# The rule itself (thresholds, reasons, the fields it withholds) has one owner, the analysis
# package: this module only carries its decision to the blocks the suite did not qualify.
from clcg_pipeline.analysis import WITHHELD_FIELDS, withhold_fields

_Document = TypeVar("_Document", bound=Mapping[str, Any])

# Rule B's gaps (``parse_rule.B.<gap>``) are the estimates rows ``<gap>_rule_b/all``.
_RULE_B_GAPS = ("h1_micro", "macro", "pt_gap", "macro_net", "micro_net")


def withheld_reasons(estimands: Mapping[str, Any]) -> dict[str, str]:
    """``"<estimand>/<group>"`` -> why it is not identifiable, for each such row of the index."""
    out: dict[str, str] = {}
    for key, row in estimands.items():
        if isinstance(row, Mapping) and row.get("identifiable") is False:
            out[str(key)] = str(row.get("reason") or row.get("status") or "not identifiable")
    return out


def estimand_locations(document: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], str]]:
    """Each block of ``document`` that restates an estimates row, with that row's key.

    Blocks that ran through the suite's own rule (H1, the model contrasts and ranks, ...) carry
    ``identifiable`` themselves; these are the ones that do not.
    """
    parse_rule = document.get("parse_rule")
    rule_b = parse_rule.get("B") if isinstance(parse_rule, Mapping) else None
    if isinstance(rule_b, Mapping):
        for gap in _RULE_B_GAPS:
            if isinstance(rule_b.get(gap), Mapping):
                yield ("parse_rule", "B", gap), f"{gap}_rule_b/all"
    if isinstance(document.get("equivalence"), Mapping):
        yield ("equivalence",), "tost_en_pt/all"


def withhold_unidentifiable(document: _Document) -> _Document:
    """A copy of ``document`` with every not identifiable estimand's intervals, p values and
    test verdicts set to null and the block marked ``identifiable: false`` with its reason.

    The decision is the estimates table's (``document["estimands"]``); identifiable blocks are
    returned unchanged.
    """
    copied = copy.deepcopy(document)
    out = cast(dict[str, Any], copied)
    estimands = out.get("estimands")
    reasons = withheld_reasons(estimands if isinstance(estimands, Mapping) else {})
    for path, key in estimand_locations(out):
        if key in reasons:
            _withhold(_at(out, path), reasons[key])
    _withhold_marked(out)
    return copied


def _at(document: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    node: Any = document
    for key in path:
        node = node[key]
    return node


def _withhold(block: dict[str, Any], reason: str | None) -> None:
    """Mark ``block`` and each sub-block holding a test (e.g. the two TOST variants) withheld.

    The reason is the estimand's, said on its block; its tests are marked without repeating
    it, so a reader (and the report) meets it once.
    """
    block["identifiable"] = False
    if reason is not None:
        block["reason"] = reason
    withhold_fields(block)
    for value in block.values():
        if isinstance(value, dict) and any(field in value for field in WITHHELD_FIELDS):
            _withhold(value, None)


def _withhold_marked(node: object) -> None:
    """Every block already marked not identifiable keeps no interval, p or verdict (e.g. a ``p_adj``
    filled in after the suite withheld the block's p)."""
    if isinstance(node, dict):
        if node.get("identifiable") is False:
            withhold_fields(node)
        for value in node.values():
            _withhold_marked(value)
    elif isinstance(node, list):
        for value in node:
            _withhold_marked(value)
