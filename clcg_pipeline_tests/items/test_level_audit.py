from __future__ import annotations

import pandas as pd
import pytest

from clcg_pipeline.calls import CallResult
from clcg_pipeline.items import LEVEL_AUDIT_VERSION, level_agreement, level_audit_requests, parse_level_audit

PARAS = pd.DataFrame(
    {
        "doc_id": ["d1", "d1"],
        "language": ["en", "en"],
        "pid": ["p1", "p2"],
        "ordinal": [1, 2],
        "text": ["The ferry leaves at seven.", "It carries 40 cars."],
    }
)
ITEMS = pd.DataFrame(
    {
        "item_id": ["d1-L1-1", "d1-L4-1", "d1-L0-1", "h1"],
        "doc_id": ["d1"] * 4,
        "level": ["L1", "L4", "L0", "H"],
        "question": ["When?", "When and how many?", "At seven?", "Human?"],
        "gold_answer": ["at seven", "seven; 40", "Yes", "x"],
        "supporting_pids": [["p2"], ["p1", "p2"], [], ["p1"]],
    }
)


def _res(text, outcome="ok"):
    return CallResult("c", text, "stop", outcome, None, 1, 1, 0.0, 0.0, 1, False)


def test_requests_show_evidence_not_the_requested_level():
    reqs = level_audit_requests(ITEMS, PARAS)
    assert [r.metadata["item_id"] for r in reqs] == ["d1-L0-1", "d1-L1-1", "d1-L4-1"]  # no H item
    l1 = reqs[1].messages[-1]["content"]
    assert "¶p2 It carries" in l1 and "¶p1" not in l1  # only its supporting paragraph
    assert "¶p1" in reqs[0].messages[-1]["content"]  # no pids: the whole article
    assert all("L1" not in r.messages[-1]["content"] for r in reqs)
    assert reqs[0].prompt_version == LEVEL_AUDIT_VERSION


def test_parse_and_agreement():
    reqs = level_audit_requests(ITEMS, PARAS)
    audit = parse_level_audit(
        [_res('{"level": "L0", "evidence": "seven"}'), _res('Sure: {"level": "l2"}'), _res(None, "error")],
        reqs,
    )
    assert audit["judged_level"].tolist() == ["L0", "L2", None]
    assert audit["status"].tolist() == ["ok", "ok", "missing"]
    agree = level_agreement(audit).set_index("requested_level")
    assert agree.loc["L0", "agreement"] == 1.0 and agree.loc["L1", "agreement"] == 0.0
    assert agree.loc["all", "n"] == 3 and agree.loc["all", "n_judged"] == 2
    assert agree.loc["all", "agreement"] == pytest.approx(0.5)
    assert pd.isna(agree.loc["L4", "agreement"])  # asked, never judged
    assert "L3" not in agree.index


def test_kappa_is_one_for_perfect_agreement():
    audit = pd.DataFrame(
        {
            "item_id": list("abcd"),
            "doc_id": ["d"] * 4,
            "requested_level": ["L0", "L1", "L3", "L5"],
            "judged_level": ["L0", "L1", "L3", "L5"],
            "status": ["ok"] * 4,
            "call_id": list("abcd"),
        }
    )
    assert level_agreement(audit).set_index("requested_level").loc["all", "kappa"] == pytest.approx(1.0)
