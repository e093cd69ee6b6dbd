"""Planning and answering one language x model partition of the granularity tasks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.calls.fake_server import FakeServer, reply_marker
from clcg_pipeline.granularity._parse import parse_cloze, parse_text, parse_word
from clcg_pipeline.granularity._predict import (
    plan_task_calls,
    plan_tasks,
    predict_tasks,
)
from clcg_pipeline.orchestration._plan import plan_granularity
from clcg_pipeline.storage._tables import conform
from clcg_pipeline_tests.calls.conftest import FAKE_KEY, FAKE_KEY_ENV, FAST, spec_for
from clcg_pipeline_tests.granularity.g2_frames import CLOZE_OPTIONS, READER, SETTINGS, paragraphs, tasks

KEY = ["model", "language", "doc_id", "task_id", "context", "rep"]


def test_plan_groups_cloze_blanks_caps_output_and_skips_translation_in_english() -> None:
    en = plan_tasks(model=READER, language="en", paragraphs=paragraphs(), tasks=tasks(), settings=SETTINGS)
    pt = plan_tasks(
        model=READER,
        language="pt",
        paragraphs=paragraphs(),
        tasks=tasks(),
        settings=SETTINGS,
        language_name="Portuguese",
    )
    # word, one cloze group, fill, summary (+ translation outside English), in both contexts
    assert len(en) == 4 * 2 and len(pt) == 5 * 2
    cloze = next(s for s in pt if s.task == "cloze" and s.context == "full")
    assert cloze.task_ids == ("t-cloze-1", "t-cloze-2")  # reading order = blank numbers
    assert cloze.request.settings.max_output_tokens == 32  # 16 per blank
    assert "[BLANK 1]" in cloze.request.text and "Em 2016" not in cloze.request.text
    translation = next(s for s in pt if s.task == "translation" and s.context == "full")
    assert "into Portuguese" in translation.request.text
    assert {s.request.model_key for s in pt} == {pt[0].request.model_key} != {""}
    # A document absent in the language has no request (as a missing article has no response).
    assert (
        plan_tasks(model=READER, language="sw", paragraphs=paragraphs(), tasks=tasks(), settings=SETTINGS)
        == []
    )


def test_offline_partition_rows_contracts_and_a_cached_rerun(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    args = {
        "model": READER,
        "language": "pt",
        "paragraphs": paragraphs(),
        "tasks": tasks(),
        "settings": SETTINGS,
    }
    options = CallOptions(cache_dir=str(tmp_path))
    first = predict_tasks(**args, options=options.with_progress(lambda d, t: seen.append((d, t))))
    conform("task_predictions", first.predictions)
    conform("task_calls", first.calls)
    preds = first.predictions
    assert len(preds) == 6 * 2 and not preds.duplicated(KEY).any()
    assert (preds["status"] == "ok").all() and set(preds["context"]) == {"full", "none"}
    assert len(first.calls) == 10 and not first.calls["cached"].any()
    assert seen[-1] == (10, 10)
    again = predict_tasks(**args, options=options)
    assert again.calls["cached"].all()
    pd.testing.assert_frame_equal(again.predictions, first.predictions)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("1961", ("1961", "ok")),
        ("Answer: 1961.", ("1961", "ok")),
        ('"Hollin"', ("Hollin", "ok")),
        ('["1,961"]', ("1,961", "ok")),
        ('{"answer": "Lindmere"}', ("Lindmere", "ok")),
        ("```\n1961\n```", ("1961", "ok")),
        ("The cooperative was founded in the year 1961.", (None, "unparseable")),
        ("", (None, "unparseable")),
    ],
)
def test_word_answers_are_normalised_or_refused(reply: str, expected: tuple[str | None, str]) -> None:
    assert parse_word(reply) == expected


def test_cloze_letters_are_normalised_and_never_shifted() -> None:
    options = ["One.", "Two.", "Three."]
    assert parse_cloze('{"1": "b", "2": "(C)"}', 2, options) == [("B", "ok"), ("C", "ok")]
    assert parse_cloze('```json\n{"blank 1": "Option A", "[BLANK 2]": "C."}\n```', 2, options) == [
        ("A", "ok"),
        ("C", "ok"),
    ]
    assert parse_cloze('["two.", "A"]', 2, options) == [("B", "ok"), ("A", "ok")]  # option text, in order
    assert parse_cloze('{"1": "Z", "3": "A"}', 2, options) == [(None, "unparseable"), (None, "unparseable")]
    assert parse_cloze('["A"]', 2, options) == [(None, "unparseable"), (None, "unparseable")]
    assert parse_cloze("A and then C", 2, options) == [(None, "unparseable")] * 2
    assert parse_text("```\nA paragraph.\n```") == ("A paragraph.", "ok")
    assert parse_text("  ") == (None, "unparseable")


def _hosted_tasks() -> pd.DataFrame:
    frame = tasks()
    frame = frame[frame["task"].isin(["word_single_qa", "cloze"])].copy()
    word = frame["task"] == "word_single_qa"
    frame.loc[word, "question"] = frame.loc[word, "question"] + " " + reply_marker("Answer: 1961.")
    # The cloze prompt alone shows the options; the marker there scripts its reply.
    marked = [
        *CLOZE_OPTIONS[:1],
        CLOZE_OPTIONS[1] + " " + reply_marker('{"1": "a", "2": "(B)"}'),
        CLOZE_OPTIONS[2],
    ]
    frame.loc[~word, "options"] = pd.Series([marked] * int((~word).sum()), index=frame.index[~word])
    frame.loc[~word, "gold"] = frame.loc[~word, "gold"].map(lambda g: marked[CLOZE_OPTIONS.index(g)])
    return frame


def test_hosted_model_through_the_real_sdk_then_a_cached_rerun_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY)
    with FakeServer() as server:
        spec = spec_for("openai", server.url)
        args = {
            "model": spec,
            "language": "pt",
            "paragraphs": paragraphs(),
            "tasks": _hosted_tasks(),
            "settings": SETTINGS,
            "options": CallOptions(cache_dir=str(tmp_path), policy=FAST),
        }
        first = predict_tasks(**args)
        sent = sum(server.state.requests.values())
        again = predict_tasks(**args)
        assert sum(server.state.requests.values()) == sent == 4  # (word + cloze group) x 2 contexts
    answers = first.predictions.set_index(["task_id", "context"])["answer"].to_dict()
    assert answers[("t-word", "full")] == "1961"
    assert answers[("t-cloze-1", "full")] == "A" and answers[("t-cloze-2", "none")] == "B"
    assert (first.predictions["status"] == "ok").all()
    assert first.calls["cost_usd"].gt(0).all() and not first.calls["cached"].any()
    assert again.calls["cached"].all() and again.calls["cost_usd"].sum() == first.calls["cost_usd"].sum()
    assert FAKE_KEY not in first.calls.to_json() + first.predictions.to_json()


def test_a_partition_budget_stops_calls_and_marks_answers_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY)
    with FakeServer() as server:
        spec = spec_for("openai", server.url)
        result = predict_tasks(
            model=spec,
            language="pt",
            paragraphs=paragraphs(),
            tasks=_hosted_tasks(),
            settings=SETTINGS,
            options=CallOptions(cache_dir=str(tmp_path), budget_usd=1e-9, policy=FAST),
        )
        assert sum(server.state.requests.values()) == 0
    assert set(result.calls["outcome"]) == {"skipped_budget"}
    assert set(result.predictions["status"]) == {"missing"}
    assert result.predictions["error"].str.startswith("skipped_budget").all()


def test_plan_prices_long_prompts_per_task_and_counts_cache_and_shared_calls(tmp_path: Path) -> None:
    priced = READER.model_copy(update={"price_input_per_mtok": 2.0, "price_output_per_mtok": 8.0})
    planned: set[str] = set()
    args = {"model": priced, "paragraphs": paragraphs(), "tasks": tasks(), "settings": SETTINGS}
    en = plan_task_calls(language="en", cache_dir=str(tmp_path), planned=planned, **args)
    pt = plan_task_calls(language="pt", cache_dir=str(tmp_path), planned=planned, **args).set_index(
        ["task", "context"]
    )
    assert (en["input_tokens"] > 0).all() and (en["cost_usd"] > 0).all()
    full, none = pt.loc[("summary", "full")], pt.loc[("summary", "none")]
    en_none = en.set_index(["task", "context"]).loc[("summary", "none"), "input_tokens"]
    assert full["input_tokens"] > 2 * en_none > 0  # the document dominates, even this short one
    # Without the document, the word and summary prompts are the same in every language: sent once.
    assert none["shared_calls"] == 1 and none["cost_usd"] == 0.0
    assert pt.loc[("translation", "full"), "calls"] == 1
    predict_tasks(language="pt", options=CallOptions(cache_dir=str(tmp_path)), **args)
    cached = plan_task_calls(language="pt", cache_dir=str(tmp_path), **args)
    assert (cached["cached_calls"] == cached["calls"]).all() and cached["cost_usd"].sum() == 0.0


@pytest.mark.filterwarnings("ignore:languages not in the panel were dropped")
def test_clcg_plan_counts_granularity_task_calls_or_says_why_not(
    config_dir: Path, edit_yaml: Callable[[Path, Callable[[dict], None]], None], tmp_path: Path
) -> None:
    def two_languages(doc: dict) -> None:
        doc["languages"] = [lang for lang in doc["languages"] if lang["iso"] in ("en", "pt")]

    def one_small_document(doc: dict) -> None:
        doc["granularity"]["buckets"] = [
            {"name": "1K-2K", "min_tokens": 1000, "max_tokens": 2000, "documents": 1}
        ]

    edit_yaml(config_dir / "languages.yaml", two_languages)
    edit_yaml(config_dir / "study.yaml", one_small_document)
    plan, notes = plan_granularity(config_dir=str(config_dir), data_dir=str(tmp_path / "data"))
    assert plan is not None
    rows = plan.set_index(["task", "context"])
    assert rows.loc[("cloze", "full"), "calls"] == 2  # one group per language: the offline writer was used
    assert rows.loc[("translation", "full"), "calls"] == 3  # one excerpt per region, Portuguese only
    word = rows.loc[("word_single_qa", "full")]
    assert (
        word["input_tokens_per_call"] > 1000
        and word["input_tokens"] > 10 * rows.loc[("word_single_qa", "none"), "input_tokens"]
    )
    total = plan[plan["model"] == "TOTAL"].iloc[0]
    assert total["calls"] == plan[plan["model"] != "TOTAL"]["calls"].sum()
    assert any("judge calls" in n for n in notes)

    edit_yaml(config_dir / "study.yaml", lambda doc: doc["granularity"].update(enabled=False))
    assert plan_granularity(config_dir=str(config_dir), data_dir=str(tmp_path / "data")) == (
        None,
        ["granularity tasks: skipped (study.granularity.enabled is false)"],
    )


def test_a_capped_reply_is_kept_for_text_but_never_guessed_for_classification() -> None:
    from clcg_pipeline.calls._results import CallResult
    from clcg_pipeline.config import GranularitySettings
    from clcg_pipeline.granularity._predict import rows_from_results

    slots = [
        s
        for s in plan_tasks(
            model=READER, language="pt", paragraphs=paragraphs(), tasks=tasks(), settings=SETTINGS
        )
        if s.context == "full" and s.task in ("cloze", "summary")
    ]
    replies = {"cloze": '{"1": "A", "2": "C"', "summary": "A cooperativa renovou os"}
    results = [
        CallResult(
            s.request.call_id, replies[s.task], "length", "truncated", None, 10, 10, 0.0, 0.1, 1, False
        )
        for s in slots
    ]
    rows = rows_from_results(model=READER, language="pt", slots=slots, results=results).predictions
    by_task = rows.groupby("task")["status"].agg(set).to_dict()
    assert by_task == {"cloze": {"unparseable"}, "summary": {"ok"}}
    assert rows["truncated"].all()
    assert rows.loc[rows["task"] == "summary", "answer"].item() == "A cooperativa renovou os"
    with pytest.raises(ValueError, match="repeat"):
        GranularitySettings(contexts=["full", "full"])


def test_text_task_caps_grow_with_the_language_s_tokens_but_classification_caps_do_not() -> None:
    """Caps are set in English tokens; Georgian takes several times as many for the same text, and
    an unscaled cap cut its paragraph fills and translations off."""
    frame = paragraphs()
    english = frame[frame["language"] == "en"]
    # The same document in a script cl100k_base spends many more tokens on.
    georgian = english.assign(
        language="ka", text=["საქართველოს დედაქალაქი თბილისი მდებარეობს მტკვრის ნაპირზე. " * 3] * len(english)
    )
    both = pd.concat([english, georgian], ignore_index=True)
    en = plan_tasks(model=READER, language="en", paragraphs=both, tasks=tasks(), settings=SETTINGS)
    ka = plan_tasks(model=READER, language="ka", paragraphs=both, tasks=tasks(), settings=SETTINGS)

    def cap(slots: list, task: str) -> int:
        slot = next(s for s in slots if s.task == task and s.context == "full")
        return slot.request.settings.max_output_tokens

    assert cap(ka, "paragraph_fill") > 2 * cap(en, "paragraph_fill")
    assert cap(ka, "word_single_qa") == cap(en, "word_single_qa")  # one word is one word
    assert cap(ka, "cloze") == cap(en, "cloze")  # option letters
