"""score_predictions: contract, rule A, drops, label metrics, caching and errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.scoring import ScoringResult, exact_match, rouge_l, score_predictions, token_f1
from clcg_pipeline.storage._tables import TABLES, conform


def _items() -> pd.DataFrame:
    return pd.DataFrame(
        [
            # item_id, level, source, gold, format, options, answerable
            ("i-span", "L1", "llm", "the old stone bridge", "span", None, True),
            ("i-free", "L5", "human", "to argue for reform", "free", None, True),
            ("i-polar", "L0", "llm", "Not stated", "polar", None, True),
            ("i-mc", "L2", "llm", "Rome", "mc", ["Paris", "London", "Rome", "Berlin"], True),
            ("i-drop", "L3", "human", "", "free", None, False),
        ],
        columns=[
            "item_id",
            "level",
            "item_source",
            "gold_answer",
            "answer_format",
            "options",
            "gold_answerable",
        ],
    )


def _preds(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    """rows: (item_id, answer, status)."""
    return pd.DataFrame(
        [
            {
                "model": "m1",
                "language": "sw",
                "doc_id": "d1",
                "item_id": item_id,
                "rep": 1 + i,
                "context_scope": "full_body",
                "answer": answer,
                "status": status,
                "call_id": f"c{i}",
            }
            for i, (item_id, answer, status) in enumerate(rows)
        ]
    )


def test_scores_follow_contract_and_metrics() -> None:
    preds = _preds(
        [
            ("i-span", "The old bridge.", "ok"),
            ("i-free", "It argues for reform", "ok"),
            ("i-polar", "The passage does not say.", "ok"),
            ("i-mc", "C", "ok"),
            ("i-drop", "whatever", "ok"),
        ]
    )
    result = score_predictions(preds, _items())
    assert isinstance(result, ScoringResult)
    scores = result.scores
    assert list(scores.columns) == TABLES["scores"].names
    conform("scores", scores)  # types are compatible with the contract
    assert result.dropped == {"not_gold_answerable": 1}
    assert "i-drop" not in set(scores["item_id"])
    by_item = scores.set_index("item_id")
    assert by_item.loc["i-span", "token_f1"] == pytest.approx(
        token_f1("The old bridge.", "the old stone bridge")
    )
    assert by_item.loc["i-span", "exact_match"] == 0.0
    assert np.isnan(by_item.loc["i-span", "accuracy"])  # accuracy only for polar and mc
    assert by_item.loc["i-free", "item_source"] == "human"
    assert by_item.loc["i-free", "level"] == "L5"
    # Polar: accuracy on the label; F1/EM on the normalized label text.
    assert by_item.loc["i-polar", "accuracy"] == 1.0
    assert by_item.loc["i-polar", "token_f1"] == 1.0
    assert by_item.loc["i-polar", "exact_match"] == 1.0
    # mc: "C" names option Rome, the gold.
    assert by_item.loc["i-mc", "accuracy"] == 1.0
    assert by_item.loc["i-mc", "exact_match"] == 1.0
    assert scores["semsim"].isna().all()
    assert scores["rep"].tolist() == [1, 2, 3, 4]  # key columns carried through in order


def test_wrong_labels_score_zero() -> None:
    preds = _preds([("i-polar", "No", "ok"), ("i-polar", "Maybe so", "ok"), ("i-mc", "Paris", "ok")])
    scores = score_predictions(preds, _items()).scores
    assert scores["accuracy"].tolist() == [0.0, 0.0, 0.0]
    assert scores["exact_match"].tolist() == [0.0, 0.0, 0.0]
    assert scores["token_f1"].tolist() == [0.0, 0.0, 0.0]


def test_rule_a_failed_rows_keep_zero_scores() -> None:
    preds = _preds(
        [
            # A failed row whose answer text would score perfectly must still score 0.
            ("i-span", "the old stone bridge", "unparseable"),
            ("i-polar", "Not stated", "missing"),
            ("i-free", None, "missing"),
            ("i-span", "the old stone bridge", "ok"),
        ]
    )
    scores = score_predictions(preds, _items(), semsim=lambda a, b: [0.9] * len(a)).scores
    failed = scores.iloc[:3]
    for column in ("token_f1", "exact_match", "rouge_l", "semsim"):
        assert failed[column].tolist() == [0.0, 0.0, 0.0], column
    assert failed["accuracy"].iloc[1] == 0.0  # polar: accuracy applies, so it is 0
    assert np.isnan(failed["accuracy"].iloc[0])  # span: accuracy does not apply
    assert failed["status"].tolist() == ["unparseable", "missing", "missing"]
    ok = scores.iloc[3]
    assert (ok["token_f1"], ok["exact_match"], ok["rouge_l"], ok["semsim"]) == (1.0, 1.0, 1.0, 0.9)


def test_semsim_called_once_per_unique_pair() -> None:
    calls: list[int] = []

    def semsim(preds: list[str], golds: list[str]) -> list[float]:
        calls.append(len(preds))
        return [float(len(p)) for p in preds]

    preds = _preds([("i-span", "bridge", "ok")] * 5 + [("i-span", "stone", "ok")] * 3)
    scores = score_predictions(preds, _items(), semsim=semsim).scores
    assert calls == [2]
    assert scores["semsim"].tolist() == [6.0] * 5 + [5.0] * 3


def test_semsim_wrong_length_raises() -> None:
    with pytest.raises(ValueError, match="semsim returned"):
        score_predictions(_preds([("i-span", "x", "ok")]), _items(), semsim=lambda a, b: [])


def test_cached_scores_equal_direct_computation() -> None:
    rng = np.random.default_rng(0)
    words = ["old", "stone", "bridge", "the", "river", "a"]
    answers = [" ".join(rng.choice(words, int(rng.integers(0, 5)))) for _ in range(300)]
    preds = _preds([("i-span", a, "ok") for a in answers])
    scores = score_predictions(preds, _items()).scores
    expected = [token_f1(a, "the old stone bridge") for a in answers]
    assert scores["token_f1"].to_numpy() == pytest.approx(expected)


def test_empty_predictions() -> None:
    result = score_predictions(_preds([]).reindex(columns=TABLES["predictions"].names), _items())
    assert result.scores.empty
    assert list(result.scores.columns) == TABLES["scores"].names
    assert result.dropped == {"not_gold_answerable": 0}


def test_unknown_item_ids_raise_naming_them() -> None:
    preds = _preds([(f"ghost-{i:02d}", "x", "ok") for i in range(12)])
    with pytest.raises(ValueError, match=r"item_id.*ghost-00.*ghost-09.*and 2 more") as info:
        score_predictions(preds, _items())
    assert "ghost-10" not in str(info.value)


def test_bad_status_raises() -> None:
    with pytest.raises(ValueError, match=r"status.*'?pending"):
        score_predictions(_preds([("i-span", "x", "pending")]), _items())


def test_bad_items_raise_naming_item_and_field() -> None:
    items = _items()
    items.loc[items["item_id"] == "i-polar", "gold_answer"] = "perhaps"
    with pytest.raises(ValueError, match=r"gold_answer.*i-polar"):
        score_predictions(_preds([("i-polar", "Yes", "ok")]), items)
    items = _items()
    items.loc[items["item_id"] == "i-mc", "gold_answer"] = "Madrid"
    with pytest.raises(ValueError, match=r"gold_answer.*i-mc"):
        score_predictions(_preds([("i-mc", "A", "ok")]), items)
    items = _items()
    items.loc[items["item_id"] == "i-span", "answer_format"] = "essay"
    with pytest.raises(ValueError, match=r"answer_format.*i-span"):
        score_predictions(_preds([("i-span", "x", "ok")]), items)
    with pytest.raises(ValueError, match=r"duplicate item_id.*i-span"):
        score_predictions(_preds([("i-span", "x", "ok")]), pd.concat([_items(), _items().iloc[:1]]))
    with pytest.raises(ValueError, match=r"predictions: missing column.*status"):
        score_predictions(_preds([("i-span", "x", "ok")]).drop(columns="status"), _items())


def test_options_as_numpy_arrays_from_parquet() -> None:
    items = _items()
    items["options"] = items["options"].map(lambda o: None if o is None else np.array(o, dtype=object))
    scores = score_predictions(_preds([("i-mc", "3", "ok")]), items).scores
    assert scores["accuracy"].tolist() == [1.0]


def test_batch_scoring_equals_per_pair_functions() -> None:
    rng = np.random.default_rng(1)
    words = ["old", "stone", "bridge", "the", "river", "town", "built", "Bridge."]
    answers = [" ".join(rng.choice(words, int(rng.integers(0, 7)))) for _ in range(300)]
    preds = _preds([("i-span" if i % 2 else "i-free", a, "ok") for i, a in enumerate(answers)])
    scores = score_predictions(preds, _items()).scores
    golds = ["the old stone bridge" if i % 2 else "to argue for reform" for i in range(300)]
    pairs = list(zip(answers, golds, strict=True))
    assert scores["token_f1"].tolist() == pytest.approx([token_f1(a, g) for a, g in pairs])
    assert scores["exact_match"].tolist() == [exact_match(a, g) for a, g in pairs]
    assert scores["rouge_l"].tolist() == pytest.approx([rouge_l(a, g) for a, g in pairs])
    assert scores["rouge_l"].gt(0).any() and scores["exact_match"].eq(0).any()


def test_mc_rows_map_back_in_order() -> None:
    answers = ["C", "A", "Rome", "B", "C", "(c)", "rome because it is"]
    preds = _preds([("i-mc", a, "ok") for a in answers] + [("i-span", "stone bridge", "ok")])
    scores = score_predictions(preds, _items()).scores
    assert scores["accuracy"].tolist()[:7] == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    assert scores["exact_match"].tolist()[:7] == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    assert np.isnan(scores["accuracy"].iloc[7])


def test_answers_with_lone_surrogates_are_not_merged() -> None:
    # pandas' factorize treats every string holding a lone surrogate as one value; answers
    # decoded from JSON can hold them, and two different answers must keep their own scores.
    answers = ["stone bridge \ud800", "river \ud800", "old \udfff", "river \udfff"]
    scores = score_predictions(_preds([("i-span", a, "ok") for a in answers]), _items()).scores
    expected = [token_f1(a, "the old stone bridge") for a in answers]
    assert scores["token_f1"].tolist() == pytest.approx(expected)
    assert expected[0] > 0 and expected[1] == 0
