from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, replace

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions, CallResult
from clcg_pipeline.config import ModelSpec, StudyConfig
from clcg_pipeline.items import (
    GENERATION_VERSION,
    PROVENANCE_COLUMNS,
    _generate,
    generate_bank,
    generate_items,
    generate_items_with_calls,
    generation_requests,
    parse_generated,
    template_hash,
    validate_items,
)
from clcg_pipeline.storage import conform

ARTICLES = pd.DataFrame({"doc_id": ["d2", "d1"], "language": ["en", "en"], "title": ["Ferry", None]})
PARAS = pd.DataFrame(
    {
        "doc_id": ["d1", "d1", "d2"],
        "language": ["en"] * 3,
        "pid": ["p2", "p1", "x1"],
        "ordinal": [2, 1, 1],
        "text": ["It carries 40 cars.", "The ferry leaves at seven.", "A bridge opened."],
    }
)
STUDY = StudyConfig(items_per_level=2, seed=7)
WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def result(text: str | None, outcome: str = "ok", call_id: str = "c") -> CallResult:
    return CallResult(
        call_id=call_id,
        text=text,
        finish_reason="stop",
        outcome=outcome,
        error=None if outcome == "ok" else "boom",
        input_tokens=1,
        output_tokens=1,
        cost_usd=0.0,
        latency_s=0.0,
        attempts=1,
        cached=False,
    )


def test_requests_one_per_article_and_level_in_stable_order():
    reqs = generation_requests(ARTICLES, PARAS, STUDY)
    assert [(r.metadata["doc_id"], r.metadata["level"]) for r in reqs][:7] == [
        ("d1", lv) for lv in ("L0", "L1", "L2", "L3", "L4", "L5")
    ] + [("d2", "L0")]
    assert len(reqs) == 12
    first = reqs[0]
    user = first.messages[-1]["content"]
    assert user.index("¶p1 The ferry") < user.index("¶p2 It carries")  # ordinal order
    assert "Title:" not in user and "Title: Ferry" in reqs[6].messages[-1]["content"]
    assert "at most 2 items" in first.messages[0]["content"]
    assert first.prompt_version == f"{GENERATION_VERSION}-L0"
    assert first.metadata["template_hash"] == template_hash("L0") != template_hash("L1")
    assert first.settings.temperature == 0.0 and first.settings.seed == 7
    shuffled = generation_requests(ARTICLES.iloc[::-1], PARAS.sample(frac=1, random_state=1), STUDY)
    assert [r.request_hash for r in shuffled] == [r.request_hash for r in reqs]


def test_parse_generated_rows_and_failures():
    reqs = generation_requests(ARTICLES, PARAS, STUDY)[:3]  # d1: L0, L1, L2
    replies = [
        result(
            '```json\n{"items": [{"question": "Does it leave at seven?", "answer": "yes.", '
            '"target_pids": ["p1"], "supporting_pids": ["p1"]}, {"question": "Is it red?", '
            '"answer": "not stated", "target_pids": "p1", "supporting_pids": []}]}\n```',
            call_id="a",
        ),
        result(
            'Here you go: [{"question": "When?", "answer": "at seven", "supporting_pids": ["p1"]}]',
            call_id="b",
        ),
        result(None, outcome="error", call_id="c"),
    ]
    frame = parse_generated(replies, reqs, generator="gen-model", created_at=WHEN)
    conform("items", frame)
    rows = frame.set_index("item_id")
    assert list(rows.index) == ["d1-L0-1", "d1-L0-2", "d1-L1-1", "d1-L2-0"]
    assert rows.loc["d1-L0-1", "gold_answer"] == "Yes" and rows.loc["d1-L0-2", "gold_answer"] == "Not stated"
    assert rows.loc["d1-L0-2", "gold_answerable"]  # "Not stated" is the L0 item's answer
    assert list(rows.loc["d1-L0-2", "target_pids"]) == ["p1"]
    assert rows.loc["d1-L1-1", "answer_format"] == "span" and rows.loc["d1-L0-1", "answer_format"] == "polar"
    assert "call error" in rows.loc["d1-L2-0", "parse_error"]
    assert rows.loc["d1-L0-1", "prompt_hash"] == reqs[0].request_hash
    assert rows.loc["d1-L1-1", "generation_call_id"] == "b"
    assert rows.loc["d1-L0-1", "created_at"] == WHEN.isoformat()
    assert (frame["generator"] == "gen-model").all() and not frame["level_label_validated"].any()
    assert set(PROVENANCE_COLUMNS) <= set(frame.columns)
    with pytest.raises(ValueError, match="2 results for 3 requests"):
        parse_generated(replies[:2], reqs, generator="g")


def test_generate_items_validates_and_counts(monkeypatch, tmp_path):
    def reply(level: str, doc: str) -> str:
        good = {
            "L0": [{"question": "Does it leave at seven?", "answer": "Yes", "supporting_pids": ["p1"]}],
            "L1": [
                {"question": "When?", "answer": "at seven", "supporting_pids": ["p1"]},
                {"question": "What time?", "answer": "at nine", "supporting_pids": ["p1"]},
            ],
            "L4": [
                {"question": "When and how many?", "answer": "seven, 40", "supporting_pids": ["p1", "p2"]},
                {"question": "Only one pid?", "answer": "x", "supporting_pids": ["p1"]},
                {"question": "Third?", "answer": "y", "supporting_pids": ["p1", "p2"]},
            ],
        }
        return json.dumps({"items": good.get(level, []) if doc == "d1" else []})

    seen = {}

    def fake_run(model, requests, options):
        seen["cache_dir"], seen["n"] = options.cache_dir, len(requests)
        return [
            result(reply(r.metadata["level"], r.metadata["doc_id"]), call_id=f"id{i}")
            for i, r in enumerate(requests)
        ]

    monkeypatch.setattr(_generate, "run_requests", fake_run)
    model = ModelSpec(id="gen", provider="offline", model="lexical-overlap-v1")
    bank = generate_bank(model, ARTICLES, PARAS, STUDY, CallOptions(cache_dir=str(tmp_path)), created_at=WHEN)
    assert seen == {"cache_dir": str(tmp_path), "n": 12}
    assert sorted(bank.items["item_id"]) == ["d1-L0-1", "d1-L1-1", "d1-L4-1", "d1-L4-3"]
    assert dict(zip(bank.rejections["item_id"], bank.rejections["rule"], strict=True)) == {
        "d1-L1-2": "span_not_found",
        "d1-L4-2": "l4_two_pids",
    }
    conform("items", bank.items)
    assert (bank.items["generator"] == "gen").all()
    y = bank.yield_.set_index(["doc_id", "level"])
    assert y.loc[("d1", "L4"), "n_returned"] == 3 and y.loc[("d1", "L4"), "n_valid"] == 2
    assert y.loc[("d2", "L0"), "n_returned"] == 0  # no padding: the article just has no items


def test_generate_items_through_the_real_runner(tmp_path):
    # The offline reader is no item writer: it answers "[]", so nothing is invented or padded.
    model = ModelSpec(id="lex", provider="offline", model="lexical-overlap-v1")
    bank = generate_bank(model, ARTICLES, PARAS, STUDY, CallOptions(cache_dir=str(tmp_path)))
    assert len(bank.results) == 12 and bank.items.empty
    assert int(bank.yield_["n_valid"].sum()) == 0
    again = generate_bank(model, ARTICLES, PARAS, STUDY, CallOptions(cache_dir=str(tmp_path)))
    assert all(r.cached for r in again.results)  # the cache makes a re-run free


@dataclass
class _R:
    call_id: str
    text: str | None
    outcome: str
    error: str | None


def test_parse_accepts_duck_typed_results():
    reqs = generation_requests(ARTICLES, PARAS, STUDY)[:1]
    frame = parse_generated([_R("x", "not json at all", "ok", None)], reqs, generator="g")
    assert frame["parse_error"].iloc[0].startswith("unreadable reply")


def test_generate_items_returns_unvalidated_rows_for_whole_bank_validation(monkeypatch, tmp_path):
    def fake_run(model, requests, options):
        out = []
        for r in requests:
            if r.metadata["level"] == "L4":
                out.append(
                    result(json.dumps([{"question": "One pid?", "answer": "x", "supporting_pids": ["p1"]}]))
                )
            elif r.metadata["level"] == "L5":
                out.append(result(None, outcome="refused"))
            else:
                out.append(result("[]"))
        return out

    monkeypatch.setattr(_generate, "run_requests", fake_run)
    model = ModelSpec(id="gen", provider="offline", model="lexical-overlap-v1")
    raw = generate_items(model, ARTICLES, PARAS, STUDY, CallOptions(cache_dir=str(tmp_path)))
    assert sorted(raw["item_id"]) == ["d1-L4-1", "d1-L5-0", "d2-L4-1", "d2-L5-0"]
    human = pd.DataFrame(
        [
            {
                "item_id": "h1",
                "doc_id": "d1",
                "item_source": "human",
                "level": "H",
                "question": "Who?",
                "gold_answer": None,
                "answer_format": "free",
                "target_pids": ["p1"],
                "supporting_pids": ["p1"],
                "gold_answerable": False,
            }
        ]
    )
    valid, rejected = validate_items(pd.concat([human, raw], ignore_index=True), PARAS, items_per_level=2)
    assert valid["item_id"].tolist() == ["h1"]
    assert sorted(zip(rejected["item_id"], rejected["rule"], strict=True)) == [
        ("d1-L4-1", "l4_two_pids"),
        ("d1-L5-0", "unparseable"),
        ("d2-L4-1", "unknown_pid"),  # p1 is not a paragraph of d2
        ("d2-L5-0", "unparseable"),
    ]


def test_the_generators_calls_are_rows_of_item_calls(monkeypatch, tmp_path):
    """What each generation call paid is kept, one ``item_calls`` row per article x level."""

    def fake_run(model, requests, options):
        return [
            replace(result("[]", call_id=f"id{i}"), cost_usd=0.01 * (i + 1), cached=i % 2 == 1)
            for i, _ in enumerate(requests)
        ]

    monkeypatch.setattr(_generate, "run_requests", fake_run)
    model = ModelSpec(id="gen", provider="openai", model="gpt-x", api_key_env="CLCG_TEST_UNUSED_KEY")
    _, calls = generate_items_with_calls(model, ARTICLES, PARAS, STUDY, CallOptions(cache_dir=str(tmp_path)))
    conform("item_calls", calls)
    assert len(calls) == 12 and list(calls["call_id"]) == [f"id{i}" for i in range(12)]
    assert (calls["model"] == "gen").all() and set(calls["level"]) == {"L0", "L1", "L2", "L3", "L4", "L5"}
    assert list(calls["cached"]) == [i % 2 == 1 for i in range(12)]
    assert calls["cost_usd"].sum() == pytest.approx(0.01 * sum(range(1, 13)))
    bank = generate_bank(model, ARTICLES, PARAS, STUDY, CallOptions(cache_dir=str(tmp_path)))
    assert bank.calls.equals(calls)
