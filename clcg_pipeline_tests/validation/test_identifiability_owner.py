"""The studies' caveats on withheld breakdowns are the one rule's (issue 34, item 1).

The judge checks by language and script (error taxonomy) and the judges' error overlap (human
validation) each counted the records the rule withheld by searching their reasons and wrote the
consequence in words of their own; both now ask ``analysis.withheld_caveat``.
"""

from __future__ import annotations

from clcg_pipeline.analysis import withheld_caveat, withheld_reason
from clcg_pipeline.validation.human._judge_overlap import Overlap
from clcg_pipeline.validation.human._judge_overlap import _caveats as overlap_caveats
from clcg_pipeline.validation.taxonomy import AnalysisInputs
from clcg_pipeline.validation.taxonomy._by_language import _caveats as by_group_caveats

FEW = withheld_reason(0.2, 3, 10)
RECORDS = [{"judge": "ja", "reason": FEW}, {"judge": "jb", "reason": None}]
WORDS = "they are descriptions and their intervals and p values are withheld"


def test_the_judge_checks_by_group_say_the_rules_caveat() -> None:
    inputs = AnalysisInputs(
        judges=("ja", "jb"),
        families={"ja": "alpha", "jb": "beta"},
        joshi={"sw": 2},
        replicates=10,
        seed=1,
        confidence=0.95,
        min_articles=10,
    )
    out = {"order_bias_by_language": RECORDS, "self_preference_by_script": RECORDS[1:]}
    notes = by_group_caveats(out, ["sw"], {"sw": "Latn"}, inputs)
    assert notes == [withheld_caveat("order bias by language", RECORDS, 10)]
    assert notes[0].endswith(WORDS) and "1 of 2 estimate(s)" in notes[0]


def test_the_judge_error_overlap_says_the_rules_caveat() -> None:
    overlap = Overlap(correlations=[{**r, "judge_a": r["judge"], "judge_b": "jc"} for r in RECORDS])
    notes = overlap_caveats(overlap, 10, ())
    assert notes[0] == withheld_caveat("judge error overlap", overlap.correlations, 10)
    assert notes[0].endswith(WORDS)
