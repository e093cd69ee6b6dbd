"""Granularity task prompts: versioned and hashed, English instructions, blanks in place, ablation."""

from __future__ import annotations

import json

import pytest

from clcg_pipeline.calls._providers.offline import _ROUTES, prompt_family
from clcg_pipeline.config import ConditionSettings
from clcg_pipeline.granularity._prompts import (
    CLOZE_ERROR_JUDGE,
    FILL_JUDGE,
    PROMPT_VERSIONS,
    TEMPLATE_HASHES,
    WITHHELD,
    Blank,
    blank_document,
    render_task_request,
)
from clcg_pipeline_tests.granularity.g2_frames import EN, PIDS, PT

SETTINGS = ConditionSettings(temperature=0.0, seed=42, max_output_tokens=100)
DOC_PT = list(zip(PIDS, PT, strict=True))


def test_versions_are_the_offline_routed_families_and_their_wording_is_pinned() -> None:
    assert set(PROMPT_VERSIONS.values()) == {
        "gran-word-qa-v1",
        "gran-cloze-v1",
        "gran-fill-v1",
        "gran-summary-v1",
        "gran-translate-v1",
    }
    routed = _ROUTES["lexical-overlap-v1"]
    assert all(
        routed[prompt_family(v)] == "clcg_pipeline.granularity._offline:answer"
        for v in PROMPT_VERSIONS.values()
    )
    judges = _ROUTES["rule-judge-v1"]
    assert judges[FILL_JUDGE.family] == "clcg_pipeline.granularity._offline:judge_fill"
    assert judges[CLOZE_ERROR_JUDGE.family] == "clcg_pipeline.granularity._offline:judge_cloze_error"
    # Pinned: changing a template's wording must come with a new version (and new pins).
    assert TEMPLATE_HASHES == {
        "gran-cloze-v1": "aeef80ae7bbf2c98e0e2874371b267c14e71e0eb5f300c045956d388df6f2a9b",
        "gran-fill-v1": "d11a27796aa2e259d889a4cd698b146711102da870706dafa9f48949cfa75d19",
        "gran-summary-v1": "ac43dc9ecd02e55254692d907d359545f44df5ae6267523ba9d962c4730ae460",
        "gran-translate-v1": "d152d295c545d1b512dadd20cf95b59fc56396a081db63cb71ab258b8cff515c",
        "gran-word-qa-v1": "b614055b8682169aa7f2676ada1ad768a4376f32659023a5ed77acb4808a02ea",
    }
    assert FILL_JUDGE.version == "fill-judge-v1"
    assert FILL_JUDGE.template_hash == "25076b571107edcdc758383aa157956bf32daa70bedf7f9172f68c55bb92689c"
    assert CLOZE_ERROR_JUDGE.version == "cloze-error-judge-v1"
    assert (
        CLOZE_ERROR_JUDGE.template_hash == "0c6a20cfa702b54025937c3979011d569a543e64530e7c3c73b6e4bed69eaf8e"
    )


def test_word_prompt_has_the_document_in_its_language_english_instructions_and_no_tools() -> None:
    request = render_task_request(
        "word_single_qa", context="full", paragraphs=DOC_PT, settings=SETTINGS, question="Which year?"
    )
    system, user = (m["content"] for m in request.messages)
    assert "rely solely on the text" in system.lower() and "tools" in system
    assert f"¶{PIDS[0]} {PT[0]}" in user
    assert "Question: Which year?" in user
    assert "Answer format: one English word" in user
    assert request.prompt_version == "gran-word-qa-v1"
    assert request.settings.max_output_tokens == 100


def test_no_context_ablation_withholds_the_document_and_never_shares_a_call_id() -> None:
    full = render_task_request("summary", context="full", paragraphs=DOC_PT, settings=SETTINGS)
    none = render_task_request("summary", context="none", paragraphs=DOC_PT, settings=SETTINGS)
    assert none.prompt_version == full.prompt_version == "gran-summary-v1"
    assert WITHHELD in none.messages[1]["content"]
    assert all(text not in none.text for text in PT)
    assert none.request_hash != full.request_hash
    assert "not shown to you" in none.messages[0]["content"]
    # The word limit follows the task's output cap (0.6 words a token).
    assert "at most 60 words" in full.messages[1]["content"]


def test_cloze_blanks_sit_in_place_and_options_are_lettered_with_a_json_format() -> None:
    doc = list(zip(PIDS, EN, strict=True))
    blanked = blank_document(doc, [Blank(2, PIDS[2], 1), Blank(1, PIDS[1], 1)])
    assert blanked[1][1] == "The old pipes of the cooperative burst often across the town. [BLANK 1]"
    assert blanked[2][1] == "Repairs were costing about 95,000 euros a year. [BLANK 2]"
    request = render_task_request(
        "cloze",
        context="full",
        paragraphs=blanked,
        settings=SETTINGS,
        options=["First.", "Second."],
        n_blanks=2,
    )
    user = request.messages[1]["content"]
    assert "Options:\nA. First.\nB. Second." in user
    assert 'mapping each blank number (1 to 2) to one option letter, e.g. {"1": "A", "2": "B"}' in user
    json.loads(user.split("e.g. ")[1].split(", with")[0])  # the example is valid JSON


def test_two_blanks_in_one_paragraph_keep_their_sentences() -> None:
    text = "First sentence here. Second sentence here. Third sentence here."
    out = blank_document([("p", text)], [Blank(1, "p", 0), Blank(2, "p", 2)])
    assert out == [("p", "[BLANK 1] Second sentence here. [BLANK 2]")]


def test_fill_removes_the_whole_paragraph_and_translation_shows_its_source_in_both_contexts() -> None:
    fill = render_task_request(
        "paragraph_fill",
        context="full",
        paragraphs=blank_document(DOC_PT, [Blank(1, PIDS[2])]),
        settings=SETTINGS,
    )
    assert f"¶{PIDS[2]} [BLANK 1]" in fill.messages[1]["content"] and PT[2] not in fill.text
    source = [(PIDS[3], EN[3])]
    for context in ("full", "none"):
        request = render_task_request(
            "translation",
            context=context,
            paragraphs=list(zip(PIDS, EN, strict=True)),
            source=source,
            target_language="Portuguese",
            settings=SETTINGS,
        )
        assert "into Portuguese" in request.text and f"Text to translate:\n¶{PIDS[3]} {EN[3]}" in request.text
    assert EN[0] not in request.text  # the none context withholds the English document


def test_bad_requests_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="unknown task 'essay'"):
        render_task_request("essay", context="full", paragraphs=DOC_PT, settings=SETTINGS)
    with pytest.raises(ValueError, match="context must be one of"):
        render_task_request("summary", context="partial", paragraphs=DOC_PT, settings=SETTINGS)
    with pytest.raises(ValueError, match="has no question"):
        render_task_request("word_single_qa", context="full", paragraphs=DOC_PT, settings=SETTINGS)
    with pytest.raises(ValueError, match=r"paragraph 'd1:p1': blank 1: sentence 5"):
        blank_document(DOC_PT, [Blank(1, PIDS[0], 5)])
    with pytest.raises(ValueError, match="not in the document"):
        blank_document(DOC_PT, [Blank(1, "nope")])
