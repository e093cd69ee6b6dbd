"""score_pairs (the fast batch path) against rouge-score's own RougeScorer and the SQuAD functions."""

from __future__ import annotations

import time

import numpy as np
import pytest
from rouge_score import rouge_scorer

from clcg_pipeline.scoring import _metrics, exact_match, rouge_l, score_pairs, token_f1

# Tricky pieces: articles, punctuation (ASCII and Unicode), characters whose lowercase is ASCII
# (Kelvin sign, dotted capital I), final sigma, combining marks, digits, whitespace variants,
# the batch separator itself, and repeated tokens.
_PIECES = [
    "the", "a", "an", "The", "A", "cat", "Cat", "cats", "sat", "on", "mat", "mat.", "mat,",
    "dog", "dogs", "ran", "2024", "x1", "co-op", "well-known", "don't", "U.S.", "e-mail",
    "\u212a", "\u0130stanbul", "\u0130", "\u039f\u0394\u039f\u03a3", "\u03a3", "stra\u00dfe",
    "caf\u00e9", "cafe\u0301", "na\u00efve", "\u201cquoted\u201d", "cat\u2014ran", "wait\u2026",
    "\u00bfqu\u00e9?", "\u4e2d\u6587", "\u0928\u092e\u0938\u094d\u0924\u0947", "ma\u0142o",
    "\t", "\n", "  ", "\u00a0", "\u2003", "!", "?!", "--", "'", "\x00", "a\x00b", "\x01", "_", "__init__",
    "cat cat cat", "the the", "\U0001f600", "\ud800",
]  # fmt: skip


def _random_texts(rng: np.random.Generator, n: int) -> list[str]:
    texts = []
    for _ in range(n):
        k = int(rng.integers(0, 12))
        joiners = rng.choice([" ", "", "  ", "\n", "-"], k)
        parts = rng.choice(_PIECES, k)
        texts.append("".join(str(p) + str(j) for p, j in zip(parts, joiners, strict=True)))
    return texts


def _reference(preds: list[str], golds: list[str]) -> tuple[list[float], list[float], list[float]]:
    scorer = rouge_scorer.RougeScorer(["rougeL"])  # rouge-score's own defaults: no stemmer
    return (
        [token_f1(p, g) for p, g in zip(preds, golds, strict=True)],
        [exact_match(p, g) for p, g in zip(preds, golds, strict=True)],
        [scorer.score(g, p)["rougeL"].fmeasure for p, g in zip(preds, golds, strict=True)],
    )


def _assert_equal(preds: list[str], golds: list[str]) -> None:
    got = score_pairs(preds, golds)
    want = _reference(preds, golds)
    for name, g, w in zip(("token_f1", "exact_match", "rouge_l"), got, want, strict=True):
        diff = np.abs(np.asarray(g) - np.asarray(w, dtype=float))
        worst = int(diff.argmax()) if len(diff) else 0
        assert len(g) == len(w)
        assert not len(diff) or diff.max() <= 1e-12, (name, preds[worst], golds[worst], g[worst], w[worst])


def test_random_and_tricky_strings_equal_rouge_score_and_squad() -> None:
    rng = np.random.default_rng(12)
    golds = _random_texts(rng, 150)
    preds = _random_texts(rng, 1500)
    # Each prediction against a random gold, against itself, and variants of its own gold.
    pair_golds = [golds[int(i)] for i in rng.integers(0, len(golds), len(preds))]
    _assert_equal(preds, pair_golds)
    _assert_equal(pair_golds, pair_golds)
    _assert_equal([g.upper() + " extra" for g in pair_golds], pair_golds)
    _assert_equal(pair_golds, [g[: len(g) // 2] for g in pair_golds])


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("", ""),
        ("", "the cat"),
        ("the cat", ""),
        ("the", "a"),  # both normalize to nothing: F1 = EM = 1, ROUGE-L tokens "the" vs "a" = 0
        ("!!!", "???"),
        ("cat cat cat", "cat dog"),
        ("cat dog cat dog", "dog cat dog cat"),
        ("a b c d e f", "f e d c b a"),
        ("\u212aelvin", "kelvin"),  # rouge-score lowers the Kelvin sign to k
        ("\u0130stanbul", "i stanbul"),
        ("caf\u00e9", "cafe"),
        ("\x00", "\x00"),
        ("a\x00b", "a b"),
        ("\ud800 x", "x"),
    ],
)
def test_edge_cases_equal_reference(pred: str, gold: str) -> None:
    _assert_equal([pred], [gold])
    assert rouge_l(pred, gold) == _reference([pred], [gold])[2][0]


def test_separator_in_some_text_takes_exact_path() -> None:
    rng = np.random.default_rng(3)
    preds = [*_random_texts(rng, 200), "cat\x00sat"]
    golds = ["cat sat", *_random_texts(rng, 200)]
    _assert_equal(preds, golds)


def test_more_gold_tokens_than_codes_scores_in_halves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_metrics, "_MAX_CODES", 6)
    preds = ["one two three", "four five", "six seven", "x", "one"]
    golds = ["one two three", "four five six", "six seven eight", "nine ten", "one two"]
    _assert_equal(preds, golds)
    with pytest.raises(ValueError, match="more than 6 distinct tokens"):
        score_pairs(["a"], ["a b c d e f g"])


def test_prediction_tokens_outside_golds_never_match() -> None:
    # Distinct non-gold tokens share one code; they must not count as matching each other.
    _assert_equal(["zz yy zz", "zz"], ["qq", "zz"])
    _assert_equal(["alpha beta", "gamma alpha"], ["beta alpha", "alpha"])


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="2 predictions but 1 golds"):
        score_pairs(["a", "b"], ["a"])
    assert score_pairs([], []) == ([], [], [])


def test_lcs_not_computed_by_rouge_scores_python_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12: rouge-score's pure-Python LCS table dominated scoring of distinct answers."""

    def forbidden(*_: object) -> None:
        raise AssertionError("rouge-score's pure-Python LCS table was used")

    monkeypatch.setattr(rouge_scorer, "_lcs_table", forbidden)
    _, _, rl = score_pairs(["the old stone bridge fell"], ["an old bridge of stone"])
    assert rl[0] == pytest.approx(0.4)  # LCS "old bridge": P = R = 2/5


def test_distinct_long_answers_much_faster_than_per_row_loop() -> None:
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(300)]
    golds = [" ".join(rng.choice(words, 30)) for _ in range(50)]
    pairs = [(" ".join(rng.choice(words, 40)) + f" r{i}", golds[i % 50]) for i in range(1500)]
    preds, pair_golds = [p for p, _ in pairs], [g for _, g in pairs]
    start = time.process_time()
    want = _reference(preds, pair_golds)
    naive = time.process_time() - start
    start = time.process_time()
    got = score_pairs(preds, pair_golds)
    fast = time.process_time() - start
    assert np.allclose(got[2], want[2], rtol=0, atol=1e-12)
    assert naive / fast >= 3, f"batch scoring only {naive / fast:.1f}x the per-row loop"


def test_vocabulary_beyond_the_basic_plane_and_surrogate_gap() -> None:
    # 80,000 distinct gold tokens: codes pass 0xD800-0xDFFF (skipped) and 0xFFFF. Every gold is
    # in a pair (most with an empty, cheap-to-check prediction) so all of them get a code.
    rng = np.random.default_rng(8)
    golds = [" ".join(f"t{i * 40 + k}" for k in range(40)) for i in range(2000)]
    picks = [int(i) for i in rng.integers(0, 2000, 300)]
    preds = [" ".join(rng.choice([*golds[i].split(), "zz", "t79999"], 25)) for i in picks]
    _assert_equal([*preds, *[""] * len(golds)], [*[golds[i] for i in picks], *golds])
    _assert_equal([*preds, *golds], [*[golds[i] for i in picks], *golds[::-1]])
