"""The per-answer metrics against hand-computed SQuAD / ROUGE-L values."""

from __future__ import annotations

import numpy as np
import pytest

from clcg_pipeline.scoring import (
    choice_accuracy,
    choice_index,
    exact_match,
    harmonic_mean,
    normalize_answer,
    polar_accuracy,
    polar_label,
    rouge_l,
    token_f1,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Cat", "cat"),
        ("  an   Apple, a day! ", "apple day"),
        ("Theatre of the absurd", "theatre of absurd"),  # "the" only as a whole word
        ("“Quoted”—text…", "quoted text"),  # Unicode punctuation; a dash separates words
        ("well-known", "wellknown"),  # SQuAD deletes ASCII punctuation
        ("", ""),
        ("ÁRVORE Ñandú", "árvore ñandú"),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_exact_match_ignores_case_punctuation_and_articles() -> None:
    assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert exact_match("Eiffel", "eiffel tower") == 0.0
    assert exact_match("", "") == 1.0


def test_token_f1_squad_definition() -> None:
    # pred tokens: cat sat ; gold: cat sat down -> P=1, R=2/3, F1=0.8
    assert token_f1("the cat sat", "a cat sat down") == pytest.approx(0.8)
    # Bag-of-tokens: a repeated token counts at most as often as in the gold.
    # pred: cat cat cat ; gold: cat dog -> common 1, P=1/3, R=1/2, F1=0.4
    assert token_f1("cat cat cat", "cat dog") == pytest.approx(0.4)
    assert token_f1("dog", "cat") == 0.0
    assert token_f1("", "cat") == 0.0
    assert token_f1("cat", "") == 0.0
    assert token_f1("", "") == 1.0
    assert token_f1("The", "a") == 1.0  # both normalize to nothing


def test_rouge_l_f_measure() -> None:
    # LCS("a cat sat down" vs "the cat sat") tokens: [a cat sat down] / [the cat sat] -> LCS 2
    # P = 2/3, R = 2/4 -> F = 2PR/(P+R) = 4/7
    assert rouge_l("the cat sat", "a cat sat down") == pytest.approx(4 / 7)
    assert rouge_l("", "x") == 0.0
    assert rouge_l("same words here", "same words here") == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("yes", "yes"),
        ("Yes.", "yes"),
        ("YES - the passage says so", "yes"),
        ("No", "no"),
        ("no, it was rebuilt", "no"),
        ("Not stated", "not_stated"),
        ("not mentioned.", "not_stated"),
        ("The passage does not say.", "not_stated"),
        ("The passage doesn't say", "not_stated"),
        ("unknown", "not_stated"),
        ("Cannot be determined", "not_stated"),
        ("No information is given", "not_stated"),
        ("Maybe", "invalid"),
        ("Nope", "invalid"),
        ("yesterday", "invalid"),
        ("", "invalid"),
    ],
)
def test_polar_label(text: str, label: str) -> None:
    assert polar_label(text) == label


def test_polar_accuracy() -> None:
    assert polar_accuracy("Yes, it does.", "Yes") == 1.0
    assert polar_accuracy("The passage does not say", "Not stated") == 1.0
    assert polar_accuracy("No", "Not stated") == 0.0
    assert polar_accuracy("perhaps", "perhaps") == 0.0  # invalid is always wrong


OPTIONS = ["Paris", "London", "Rome", "Berlin"]


@pytest.mark.parametrize(
    ("answer", "index"),
    [
        ("London", 1),
        ("the london.", 1),
        ("B", 1),
        ("b", 1),
        ("(B)", 1),
        ("B) London", 1),
        ("2", 1),
        ("Option 3", 2),
        ("Answer: D", 3),
        ("A dog", None),  # the article "A" is not option A
        ("E", None),
        ("5", None),
        ("Madrid", None),
        ("", None),
    ],
)
def test_choice_index(answer: str, index: int | None) -> None:
    assert choice_index(answer, OPTIONS) == index


def test_choice_accuracy_gold_as_text_or_letter() -> None:
    assert choice_accuracy("B", "London", OPTIONS) == 1.0
    assert choice_accuracy("london", "B", OPTIONS) == 1.0
    assert choice_accuracy("C", "London", OPTIONS) == 0.0
    assert choice_accuracy("B", "London", []) == 0.0


def test_harmonic_mean_is_the_scalar_f_measure_to_the_bit() -> None:
    hits = np.array([0, 1, 2, 3, 0])
    n_pred = np.array([3, 4, 2, 7, 0])
    n_gold = np.array([2, 1, 5, 3, 0])
    got = harmonic_mean(hits, n_pred, n_gold)
    for h, p, g, value in zip(hits, n_pred, n_gold, got, strict=True):
        if h == 0:
            assert value == 0.0
            continue
        precision, recall = h / p, h / g  # SQuAD's scalar code
        assert value == 2 * precision * recall / (precision + recall)
