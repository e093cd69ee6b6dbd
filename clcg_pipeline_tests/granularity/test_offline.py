"""The offline granularity reader and judges: English-centric, deterministic, strictly parseable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions, CallResult, render_judge_request, run_requests
from clcg_pipeline.calls._judge import parse_judgement
from clcg_pipeline.config import ConditionSettings
from clcg_pipeline.granularity._offline import NO_DOCUMENT, UNKNOWN, answer, judge_cloze_error, judge_fill
from clcg_pipeline.granularity._prompts import (
    CLOZE_ERROR_JUDGE,
    CLOZE_EVIDENCE_FIELDS,
    FILL_EVIDENCE_FIELDS,
    FILL_JUDGE,
    Blank,
    blank_document,
    render_task_request,
)
from clcg_pipeline_tests.granularity.g2_frames import (
    CLOZE_OPTIONS,
    EN,
    JUDGE_A,
    JUDGE_B,
    PIDS,
    PT,
    READER,
    tasks,
)

SETTINGS = ConditionSettings(temperature=0.0, max_output_tokens=64)
DOC_EN = list(zip(PIDS, EN, strict=True))
DOC_PT = list(zip(PIDS, PT, strict=True))
WORD_QUESTION = str(tasks().set_index("task_id").loc["t-word", "question"])


def _word(document: list[tuple[str, str]], context: str = "full") -> str:
    request = render_task_request(
        "word_single_qa", context=context, paragraphs=document, settings=SETTINGS, question=WORD_QUESTION
    )
    return answer(request, READER)


def test_word_reader_fills_the_gap_in_english_and_not_from_other_languages() -> None:
    assert _word(DOC_EN) == "1961"
    # The Portuguese sentence shares almost no English word with the question: a real gap.
    assert _word(DOC_PT) != "1961"
    assert _word(DOC_EN, context="none") == UNKNOWN


def test_cloze_reader_answers_every_blank_with_a_distinct_letter_deterministically() -> None:
    blanked = blank_document(DOC_EN, [Blank(1, PIDS[1], 1), Blank(2, PIDS[2], 1)])
    request = render_task_request(
        "cloze", context="full", paragraphs=blanked, settings=SETTINGS, options=CLOZE_OPTIONS, n_blanks=2
    )
    reply = json.loads(answer(request, READER))
    assert set(reply) == {"1", "2"} and len(set(reply.values())) == 2
    assert reply == {"1": "A", "2": "C"}  # the option sharing the most words with each blank's context
    assert answer(request, READER) == json.dumps(reply)
    none = render_task_request(
        "cloze", context="none", paragraphs=blanked, settings=SETTINGS, options=CLOZE_OPTIONS, n_blanks=2
    )
    assert set(json.loads(answer(none, READER))) == {"1", "2"}  # still a well-formed reply


def test_fill_echoes_the_neighbours_summary_takes_the_lead_translation_copies() -> None:
    fill = render_task_request(
        "paragraph_fill",
        context="full",
        paragraphs=blank_document(DOC_EN, [Blank(1, PIDS[2])]),
        settings=SETTINGS,
    )
    echoed = answer(fill, READER)
    assert echoed.startswith("In 2016 the cooperative") and "renewal of the pipes began" in echoed
    none = render_task_request("paragraph_fill", context="none", paragraphs=DOC_EN, settings=SETTINGS)
    assert answer(none, READER) == NO_DOCUMENT
    summary = render_task_request("summary", context="full", paragraphs=DOC_EN, settings=SETTINGS)
    assert answer(summary, READER).startswith("The Lindmere Water Cooperative was founded in 1961")
    translation = render_task_request(
        "translation", context="full", paragraphs=DOC_EN, source=[(PIDS[3], EN[3])], settings=SETTINGS
    )
    assert answer(translation, READER) == EN[3]


def _fill_fields(generated: str) -> dict[str, str]:
    return {"previous": PT[1], "reference": PT[2], "generated": generated, "next": PT[3]}


def _parsed(reply: str, template, fields: dict[str, str], evidence: tuple[str, ...]):  # type: ignore[no-untyped-def]
    result = CallResult("c", reply, "stop", "ok", None, 1, 1, 0.0, 0.0, 1, False)
    return parse_judgement(result, template, evidence_in=[fields[f] for f in evidence])


def test_fill_judge_passes_strict_parsing_and_the_strict_variant_is_harsher() -> None:
    fields = _fill_fields("As reparações custavam muito dinheiro. A direção decidiu renovar os canos.")
    request = render_judge_request(FILL_JUDGE, fields, settings=SETTINGS)
    lenient, strict = judge_fill(request, JUDGE_A), judge_fill(request, JUDGE_B)
    for reply in (lenient, strict):
        judgement = _parsed(reply, FILL_JUDGE, fields, FILL_EVIDENCE_FIELDS)
        assert judgement.status == "ok", judgement.error
    a, b = json.loads(lenient), json.loads(strict)
    assert 0 < b["total"] < a["total"] <= 100
    assert judge_fill(request, JUDGE_A) == lenient  # deterministic
    empty = json.loads(
        judge_fill(render_judge_request(FILL_JUDGE, _fill_fields(""), settings=SETTINGS), JUDGE_A)
    )
    assert empty["total"] == 0


def _cloze_fields(chosen: str) -> dict[str, str]:
    return {
        "previous": EN[0],
        "current": "The old pipes of the cooperative burst often across the town. [BLANK 1]",
        "next": EN[2],
        "gold": CLOZE_OPTIONS[0],
        "chosen": chosen,
    }


@pytest.mark.parametrize(
    ("chosen", "label", "tag"),
    [
        ("However, the board chose to renew every pipe at once.", "M2", "S3"),
        ("The town council sold the well to a private company in 1990.", "M3", "S4"),
        ("Burst mains worried residents of the town for years.", "M1", "S1"),
    ],
)
def test_cloze_error_judge_labels_by_its_rules_and_parses(chosen: str, label: str, tag: str) -> None:
    fields = _cloze_fields(chosen)
    reply = judge_cloze_error(render_judge_request(CLOZE_ERROR_JUDGE, fields, settings=SETTINGS), JUDGE_A)
    judgement = _parsed(reply, CLOZE_ERROR_JUDGE, fields, CLOZE_EVIDENCE_FIELDS)
    assert judgement.status == "ok", judgement.error
    value = json.loads(reply)
    assert value["main_class"] == label and tag in value["secondary"]


def test_the_offline_provider_routes_every_family_to_these_handlers(tmp_path: Path) -> None:
    requests = [
        render_task_request("summary", context="full", paragraphs=DOC_EN, settings=SETTINGS),
        render_judge_request(FILL_JUDGE, _fill_fields(PT[2]), settings=SETTINGS),
    ]
    (reader,) = run_requests(READER, requests[:1], CallOptions(cache_dir=str(tmp_path)))
    (judge,) = run_requests(JUDGE_A, requests[1:], CallOptions(cache_dir=str(tmp_path)))
    assert reader.outcome == judge.outcome == "ok"
    assert reader.text == answer(requests[0], READER)
    assert json.loads(judge.text or "")["topic_fidelity"] == 20  # the reference itself
