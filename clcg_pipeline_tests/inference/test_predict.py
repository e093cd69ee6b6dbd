"""predict_partition / plan_partition: rows per slot, contracts, statuses, no key leak."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.config import ConditionSettings, ModelSpec, PriceTier
from clcg_pipeline.inference import plan_partition, predict_partition
from clcg_pipeline.storage._tables import conform
from clcg_pipeline_tests.calls.conftest import FAST, spec_for

OFFLINE = ModelSpec(
    id="lexical-reader", provider="offline", model="lexical-overlap-v1", options={"threshold": 0.2}
)
CONDITIONS = {
    "full_body": ConditionSettings(temperature=0.2, seed=42),
    "closed_book": ConditionSettings(temperature=0.0, seed=20260322),
    "item_grounded": ConditionSettings(),
}
KEYS = ["model", "language", "doc_id", "item_id", "rep", "context_scope"]


def _paragraphs(language: str, docs: list[str]) -> pd.DataFrame:
    texts = {
        "en": [
            "The bridge was built in 1932 by the council.",
            "Fishermen opposed the bridge because of boats.",
        ],
        "pt": [
            "A ponte foi construída em 1932 pela câmara.",
            "Os pescadores opuseram-se à ponte por causa dos barcos.",
        ],
    }[language]
    rows = [
        {"doc_id": d, "language": language, "pid": f"p{i}", "ordinal": i, "text": t}
        for d in docs
        for i, t in enumerate(texts)
    ]
    return pd.DataFrame(rows)


def _items(docs: list[str], marker: str = "") -> pd.DataFrame:
    rows = []
    for d in docs:
        rows += [
            {
                "item_id": f"{d}-b",
                "doc_id": d,
                "level": "L0",
                "question": f"Did fishermen oppose the bridge? {marker}",
                "options": [],
                "supporting_pids": ["p1"],
                "target_pids": [],
            },
            {
                "item_id": f"{d}-a",
                "doc_id": d,
                "level": "L1",
                "question": "When was the bridge built by the council?",
                "options": [],
                "supporting_pids": ["p0"],
                "target_pids": ["p0"],
            },
            {
                "item_id": f"{d}-c",
                "doc_id": d,
                "level": "L5",
                "question": f"What is article {d} about?",
                "options": [],
                "supporting_pids": [],
                "target_pids": [],
            },
        ]
    return pd.DataFrame(rows)


def test_offline_partition_rows_and_contracts(tmp_path: Path) -> None:
    docs = ["d1", "d2", "d3"]
    reps = {"d1": 3, "d2": 1, "d3": 1, "d_absent": 1}
    seen: list[tuple[int, int]] = []
    result = predict_partition(
        model=OFFLINE,
        language="en",
        paragraphs=_paragraphs("en", docs[:2]),
        items=_items(docs),
        reps=reps,
        conditions=CONDITIONS,
        options=CallOptions(cache_dir=str(tmp_path), progress=lambda done, total: seen.append((done, total))),
    )
    conform("predictions", result.predictions)
    conform("calls", result.calls)
    preds = result.predictions
    # d3 has no paragraphs in this language and d_absent no items: neither is planned.
    assert set(preds["doc_id"]) == {"d1", "d2"}
    # 3 items x (3 + 1) reps x 3 conditions, each slot exactly once.
    assert len(preds) == 3 * 4 * 3 and not preds.duplicated(KEYS).any()
    assert (preds["status"] == "ok").all()
    calls = result.calls
    per_scope = calls.groupby("context_scope").size().to_dict()
    assert per_scope == {"full_body": 4, "closed_book": 4, "item_grounded": 12}
    assert set(preds["call_id"]) <= set(calls["call_id"])
    fb = preds[(preds.context_scope == "full_body") & (preds.doc_id == "d1") & (preds.rep == 0)]
    assert fb.set_index("item_id")["answer"].to_dict()["d1-b"] == "Yes"
    assert "1932" in fb.set_index("item_id")["answer"].to_dict()["d1-a"]
    assert calls["prompt_version"].isin({"full_body-v1", "closed_book-v1", "item_grounded-v1"}).all()
    assert seen[0] == (0, 20) and seen[-1] == (20, 20)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_other_language_gets_fewer_answers_than_english(tmp_path: Path) -> None:
    args = {
        "items": _items(["d1"]),
        "reps": {"d1": 1},
        "conditions": {"full_body": CONDITIONS["full_body"]},
        "options": CallOptions(cache_dir=str(tmp_path)),
        "model": OFFLINE,
    }
    en = predict_partition(language="en", paragraphs=_paragraphs("en", ["d1"]), **args).predictions
    pt = predict_partition(language="pt", paragraphs=_paragraphs("pt", ["d1"]), **args).predictions
    assert (pt["answer"] == "Not stated").sum() > (en["answer"] == "Not stated").sum()


def test_plan_counts_calls_tokens_and_cache_without_calling(tmp_path: Path) -> None:
    args = {
        "model": OFFLINE.model_copy(update={"price_input_per_mtok": 2.0, "price_output_per_mtok": 8.0}),
        "language": "en",
        "paragraphs": _paragraphs("en", ["d1", "d2"]),
        "items": _items(["d1", "d2"]),
        "reps": {"d1": 3, "d2": 1},
        "conditions": CONDITIONS,
    }
    plan = plan_partition(**args, cache_dir=str(tmp_path)).set_index("context_scope")
    assert plan.loc["full_body", "calls"] == 4 and plan.loc["item_grounded", "calls"] == 12
    assert (plan["cached_calls"] == 0).all() and (plan["tokenizer"] == "cl100k_base").all()
    assert (plan["input_tokens"] > 0).all() and (plan["cost_usd"] > 0).all()
    assert not any(tmp_path.rglob("*.json"))  # planning wrote nothing and called nothing
    predict_partition(**args, options=CallOptions(cache_dir=str(tmp_path)))
    replan = plan_partition(**args, cache_dir=str(tmp_path)).set_index("context_scope")
    assert (replan["cached_calls"] == replan["calls"]).all() and (replan["cost_usd"] == 0).all()


def test_faulty_provider_every_slot_accounted_and_no_key_leak(
    tmp_path: Path, fake_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    data = tmp_path / "data"
    docs = [f"d{i}" for i in range(12)]
    items = pd.concat(
        [
            _items(docs[:3]),
            _items(docs[3:5], "[[answer:truncated]]"),
            _items(docs[5:7], "[[answer:refusal]]"),
            _items(docs[7:9], "[[answer:wrong_length]]"),
            _items(docs[9:10], "[[fault:500x99]]"),
            _items(docs[10:], "[[answer:non_json]]"),
        ]
    )
    with FakeServer(Faults(p429=0.1, p5xx=0.05, pmalformed=0.05, retry_after_s=0.001, seed=1)) as server:
        spec = spec_for("openai", server.url, max_attempts=8)
        result = predict_partition(
            model=spec,
            language="en",
            paragraphs=_paragraphs("en", docs),
            items=items,
            reps=dict.fromkeys(docs, 1),
            conditions={"full_body": CONDITIONS["full_body"]},
            options=CallOptions(cache_dir=str(data / "cache"), policy=FAST),
        )
    preds = result.predictions.set_index("doc_id")
    assert len(result.predictions) == 36 and not result.predictions.duplicated(KEYS).any()
    status = preds.groupby(level=0)["status"].apply(list).to_dict()
    assert all(s == ["ok"] * 3 for d, s in status.items() if d in docs[:3])
    assert status["d3"] == ["ok", "ok", "unparseable"]  # truncated: complete prefix only
    assert status["d5"] == ["unparseable"] * 3  # refusal
    assert status["d7"] == ["missing"] * 3  # too short: nothing shifted
    assert status["d9"] == ["missing"] * 3  # call failed after retries
    assert status["d10"] == ["unparseable"] * 3  # non-JSON
    calls = result.calls.set_index("doc_id")
    assert calls.loc["d9", "outcome"] == "error" and calls.loc["d9", "attempts"] == 8
    assert calls.loc["d5", "outcome"] == "refused" and calls.loc["d3", "outcome"] == "truncated"
    conform("calls", result.calls).to_pandas().to_parquet(data / "calls.parquet")
    conform("predictions", result.predictions).to_pandas().to_parquet(data / "predictions.parquet")
    needle = fake_key.encode()
    files = [p for p in data.rglob("*") if p.is_file()]
    assert len(files) > 10
    assert not [p for p in files if needle in p.read_bytes()]
    assert fake_key not in caplog.text


def test_duplicate_items_and_empty_questions_are_rejected(tmp_path: Path) -> None:
    items = _items(["d1"])
    args = {
        "model": OFFLINE,
        "language": "en",
        "paragraphs": _paragraphs("en", ["d1"]),
        "reps": {"d1": 1},
        "conditions": CONDITIONS,
    }
    with pytest.raises(ValueError, match="'d1-a' of doc_id 'd1' appears more than once"):
        plan_partition(items=pd.concat([items, items.iloc[[1]]]), cache_dir=str(tmp_path), **args)
    items.loc[0, "question"] = " "
    with pytest.raises(ValueError, match="item 'd1-b' field 'question' is empty"):
        predict_partition(items=items, options=CallOptions(cache_dir=str(tmp_path)), **args)


def test_items_read_back_from_parquet_are_accepted(tmp_path: Path) -> None:
    """List cells come back as numpy arrays and missing strings as None after a Parquet trip."""
    items = _items(["d1"])
    items["options"] = [[], [], ["An essay", "A bridge report"]]
    for column, value in {
        "item_source": "llm",
        "gold_answer": "x",
        "answer_format": None,
        "gold_answerable": True,
        "generator": None,
        "prompt_hash": None,
        "level_label_validated": False,
    }.items():
        items[column] = value
    path = tmp_path / "items.parquet"
    conform("items", items).to_pandas().to_parquet(path)
    back = pd.read_parquet(path)
    args = {
        "model": OFFLINE,
        "language": "en",
        "paragraphs": _paragraphs("en", ["d1"]),
        "reps": {"d1": 1},
        "conditions": CONDITIONS,
        "options": CallOptions(cache_dir=str(tmp_path / "cache")),
    }
    direct = predict_partition(items=items, **args).predictions
    trip = predict_partition(items=back, **args).predictions
    assert trip["answer"].tolist() == direct["answer"].tolist()
    assert trip["call_id"].tolist() == direct["call_id"].tolist()  # identical rendered requests


def test_plan_prices_each_call_at_its_own_tier(tmp_path: Path) -> None:
    # A tier just above one call's prompt: summing the tokens first would price every call there.
    base = OFFLINE.model_copy(update={"price_input_per_mtok": 1.0, "price_output_per_mtok": 4.0})
    args = {
        "language": "en",
        "paragraphs": _paragraphs("en", ["d1", "d2"]),
        "items": _items(["d1", "d2"]),
        "reps": {"d1": 1, "d2": 1},
        "conditions": {"full_body": CONDITIONS["full_body"]},
        "cache_dir": str(tmp_path),
    }
    flat = plan_partition(model=base, **args).iloc[0]
    per_call = flat["input_tokens"] // flat["calls"]
    tier = {
        "above_input_tokens": int(per_call * 1.5),
        "price_input_per_mtok": 10.0,
        "price_output_per_mtok": 40.0,
    }
    tiered = plan_partition(model=base.model_copy(update={"price_tiers": (PriceTier(**tier),)}), **args).iloc[
        0
    ]
    assert flat["input_tokens"] > tier["above_input_tokens"]  # the sum is past the tier, no call is
    assert tiered["cost_usd"] == pytest.approx(flat["cost_usd"])
    above = {**tier, "above_input_tokens": 1}
    dearer = plan_partition(
        model=base.model_copy(update={"price_tiers": (PriceTier(**above),)}), **args
    ).iloc[0]
    assert dearer["cost_usd"] == pytest.approx(10 * flat["cost_usd"])
