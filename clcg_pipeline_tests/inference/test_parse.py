from __future__ import annotations

import pytest

from clcg_pipeline.inference import parse_answers

OK3 = [("a", "ok"), ("b", "ok"), ("c", "ok")]


@pytest.mark.parametrize(
    "text",
    [
        '["a", "b", "c"]',
        '```json\n["a", "b", "c"]\n```',
        '```\n["a","b","c"]```',
        'Here are my answers:\n["a", "b", "c"]\nHope this helps.',
        '["a", "b", "c",]',
        '{"answers": ["a", "b", "c"]}',
        '{"result": ["a", "b", "c"]}',
        '[{"answer": "a"}, {"answer": "b"}, " c "]',
        'Sure!\n```json\n{"answers": ["a", "b", "c",],}\n```',
    ],
)
def test_forgiving_cases_parse(text: str) -> None:
    assert parse_answers(text, 3, finish_reason="stop") == OK3


def test_scalars_and_booleans() -> None:
    assert parse_answers('[true, 1932, "x"]', 3, finish_reason="stop") == [
        ("Yes", "ok"),
        ("1932", "ok"),
        ("x", "ok"),
    ]
    assert parse_answers('"only one"', 1, finish_reason="stop") == [("only one", "ok")]
    # A bare string is not accepted when several answers are expected.
    assert parse_answers('"only one"', 2, finish_reason="stop") == [(None, "unparseable")] * 2


def test_wrong_length_never_shifts() -> None:
    assert parse_answers('["a", "b"]', 3, finish_reason="stop") == [(None, "missing")] * 3
    assert parse_answers('["a", "b", "c", "d"]', 3, finish_reason="stop") == [(None, "unparseable")] * 3


def test_non_answers_per_element() -> None:
    got = parse_answers('["a", null, "", ["x"], {"a": 1, "b": 2}]', 5, finish_reason="stop")
    assert got == [
        ("a", "ok"),
        (None, "missing"),
        (None, "missing"),
        (None, "unparseable"),
        (None, "unparseable"),
    ]


@pytest.mark.parametrize("text", ["I cannot answer that.", "{not json", '{"a": 1}', "[1, 2", ""])
def test_unparseable_or_empty(text: str) -> None:
    expected = "missing" if not text else "unparseable"
    assert parse_answers(text, 2, finish_reason="stop") == [(None, expected)] * 2


def test_none_text_is_missing() -> None:
    assert parse_answers(None, 2, finish_reason=None) == [(None, "missing")] * 2


@pytest.mark.parametrize("reason", ["content_filter", "refusal", "SAFETY"])
def test_refusal_is_unparseable_even_with_text(reason: str) -> None:
    assert parse_answers('["a", "b"]', 2, finish_reason=reason) == [(None, "unparseable")] * 2


@pytest.mark.parametrize("reason", ["length", "max_tokens", "MAX_TOKENS"])
def test_truncation_keeps_only_complete_prefix(reason: str) -> None:
    got = parse_answers('```json\n["a", "b", "long answ', 4, finish_reason=reason)
    assert got == [("a", "ok"), ("b", "ok"), (None, "unparseable"), (None, "missing")]
    # The last complete element without a following comma may itself have been cut.
    assert parse_answers('["a", "b"', 3, finish_reason=reason) == [
        ("a", "ok"),
        (None, "unparseable"),
        (None, "missing"),
    ]
    # Cut after the closing bracket: the answer is whole.
    assert parse_answers('["a", "b"]', 2, finish_reason=reason) == [("a", "ok"), ("b", "ok")]
    assert parse_answers("I was say", 2, finish_reason=reason) == [(None, "unparseable"), (None, "missing")]


def test_always_one_entry_per_question() -> None:
    for text in ['["a"]', "junk", '["a", "b", "c"]', None]:
        for n in (0, 1, 2, 5):
            assert len(parse_answers(text, n, finish_reason="stop")) == n
