"""Long-document buckets up to 128K English tokens, end to end (issue 20, item 5).

A 128K-token document is counted exactly in every script, sent whole through the real SDKs to
the fake provider server and scored; a version too long for the model's ``context_window``
(a Georgian version takes several times the English tokens) is refused before any call and
named, in the run and in ``clcg plan``; a long prompt is priced at its tier.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError

from clcg_pipeline.calls import CallOptions, count_tokens, estimate_input_tokens
from clcg_pipeline.calls.fake_server import FakeServer, reply_marker
from clcg_pipeline.config import GranularitySettings, ModelSpec
from clcg_pipeline.granularity._predict import TOO_LONG, TooLong, plan_task_calls, plan_tasks, predict_tasks
from clcg_pipeline.granularity._scoring import score_tasks
from clcg_pipeline.orchestration._plan import plan_granularity
from clcg_pipeline_tests.calls.conftest import FAKE_KEY, FAKE_KEY_ENV, FAST, spec_for

ENGLISH_TOKENS = 128_000
#: Code points of made-up words per script (ISO 15924), for the panel's scripts and a few more.
SCRIPTS = {
    "Cyrl": (0x430, 0x44F),
    "Arab": (0x627, 0x64A),
    "Deva": (0x915, 0x939),
    "Ethi": (0x1200, 0x1357),
    "Geor": (0x10D0, 0x10F0),
    "Hani": (0x4E00, 0x9FFF),
    "Thai": (0xE01, 0xE2E),
}
_ENGLISH = (
    "the council voted to rebuild the old bridge after years of complaints from farmers and "
    "fishermen who crossed the river every morning with their goods for the market in town"
)
GOLD = "Lindmere"
SETTINGS = GranularitySettings(enabled=True, contexts=["full"])
TIERS = [{"above_input_tokens": 100_000, "price_input_per_mtok": 3.0, "price_output_per_mtok": 12.0}]


def _paragraph(rng: random.Random, script: str, n_words: int) -> str:
    if script == "Latn":
        vocabulary = _ENGLISH.split()
        return " ".join(rng.choice(vocabulary) for _ in range(n_words)) + "."
    low, high = SCRIPTS[script]
    words = ["".join(chr(rng.randint(low, high)) for _ in range(rng.randint(2, 7))) for _ in range(n_words)]
    return ("" if script == "Hani" else " ").join(words) + ("。" if script == "Hani" else ".")


def long_document(scripts: dict[str, str], english_tokens: int = ENGLISH_TOKENS) -> pd.DataFrame:
    """``long_paragraphs`` rows of one document of about ``english_tokens`` English tokens, with a
    version per language (same pids, as many words) and the fake server's reply marker at the
    very end of each version: the reply is right only if the whole document arrived."""
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    total, k = 0, 0
    while total < english_tokens:
        k += 1
        n_words = rng.randint(60, 140)
        english = _paragraph(rng, "Latn", n_words)
        total += count_tokens(english)
        for language, script in scripts.items():
            text = english if script == "Latn" else _paragraph(rng, script, n_words)
            rows.append(
                {"doc_id": "long-1", "language": language, "pid": f"p{k:04d}", "ordinal": k, "text": text}
            )
    frame = pd.DataFrame(rows)
    last = frame["ordinal"] == k
    frame.loc[last, "text"] = frame.loc[last, "text"] + " " + reply_marker(GOLD)
    return frame


def word_task(bucket: str = "120K-128K") -> pd.DataFrame:
    row = {
        "task_id": "t-word",
        "group_id": "t-word",
        "doc_id": "long-1",
        "task": "word_single_qa",
        "granularity": "word",
        "region": "end",
        "position": "end",
        "question": "Which town's market did the farmers cross the river for?",
        "gold": GOLD,
        "options": [],
        "blank_pids": [],
        "evidence_pids": [],
        "max_output_tokens": 16,
        "bucket": bucket,
        "sentence_index": None,
        "sentence_position": None,
    }
    return pd.DataFrame([row])


@pytest.fixture(scope="module")
def document() -> pd.DataFrame:
    return long_document({"en": "Latn", "ka": "Geor"})


def test_a_128k_prompt_is_counted_exactly_in_every_script() -> None:
    scripts = {"en": "Latn"} | {script.lower(): script for script in SCRIPTS}
    frame = long_document(scripts, english_tokens=12_000)
    for language in scripts:
        (slot,) = plan_tasks(
            model=spec_for("openai", "http://unused"),
            language=language,
            paragraphs=frame,
            tasks=word_task(),
            settings=SETTINGS,
        )
        messages = slot.request.messages
        exact = sum(count_tokens(m["content"]) + 4 for m in messages)
        assert estimate_input_tokens(messages) == exact, language
        assert estimate_input_tokens(messages) == exact  # the remembered paragraphs give the same


def test_a_context_window_must_leave_room_for_the_output() -> None:
    spec = ModelSpec(id="long", provider="offline", model="lexical-overlap-v1", context_window=200_000)
    assert spec.context_window == 200_000
    with pytest.raises(ValidationError, match="context_window 4096 must exceed max_output_tokens 8192"):
        ModelSpec(id="x", provider="offline", model="m", context_window=4096, max_output_tokens=8192)
    with pytest.raises(ValidationError, match="context_window"):
        ModelSpec(id="x", provider="offline", model="m", context_window=0)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_128k_document_reaches_the_fake_server_whole_and_its_answer_is_scored(
    provider: str, document: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY)
    english = document[document["language"] == "en"]
    with FakeServer() as server:
        spec = spec_for(provider, server.url, timeout_s=60, price_tiers=TIERS, context_window=1_000_000)
        (slot,) = plan_tasks(
            model=spec, language="en", paragraphs=english, tasks=word_task(), settings=SETTINGS
        )
        prompt = estimate_input_tokens(slot.request.messages)
        assert ENGLISH_TOKENS < prompt < ENGLISH_TOKENS + 8_000  # the document and its pid marks
        options = CallOptions(cache_dir=str(tmp_path), policy=FAST)
        result = predict_tasks(
            model=spec,
            language="en",
            paragraphs=english,
            tasks=word_task(),
            settings=SETTINGS,
            options=options,
        )
        body = server.state.bodies[slot.request.call_id]
    received = _received_text(provider, body)
    assert slot.request.messages[1]["content"] in received  # every character of the document arrived
    (call,) = result.calls.to_dict("records")
    # The server counts cl100k_base tokens of what it received: the whole prompt, past the tier.
    # (Gemini's count leaves out the system instruction, which travels beside the contents.)
    user = estimate_input_tokens(slot.request.messages[1:])
    assert user - 8 <= call["input_tokens"] <= prompt
    assert call["cost_usd"] == pytest.approx(
        (call["input_tokens"] * 3.0 + call["output_tokens"] * 12.0) / 1e6
    )
    (prediction,) = result.predictions.to_dict("records")
    assert prediction["status"] == "ok" and prediction["answer"] == GOLD
    scores = score_tasks(result.predictions, word_task(), english)
    assert scores["score"].tolist() == [1.0]


def _received_text(provider: str, body: dict[str, Any]) -> str:
    if provider == "gemini":
        return "\n".join(p.get("text", "") for c in body["contents"] for p in c["parts"])
    return "\n".join(_content(m["content"]) for m in body["messages"])


def _content(content: Any) -> str:
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def test_a_version_too_long_for_the_model_is_refused_before_any_call_and_named(
    document: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY)
    with FakeServer() as server:
        spec = spec_for("openai", server.url, timeout_s=60, context_window=200_000)
        options = CallOptions(cache_dir=str(tmp_path), policy=FAST)
        args = {
            "model": spec,
            "paragraphs": document,
            "tasks": word_task(),
            "settings": SETTINGS,
            "options": options,
        }
        english = predict_tasks(language="en", **args)
        with caplog.at_level("WARNING", logger="clcg_pipeline.granularity._predict"):
            georgian = predict_tasks(language="ka", **args)
        assert sum(server.state.requests.values()) == 1  # English only: nothing was sent for Georgian
    assert english.predictions["status"].tolist() == ["ok"]
    assert georgian.calls.empty
    (row,) = georgian.predictions.to_dict("records")
    assert row["status"] == TOO_LONG and row["answer"] is None
    error = row["error"]
    assert "'long-1'" in error and "'ka'" in error and "'120K-128K'" in error and "fake-openai" in error
    needed = int(re.search(r"about ([\d,]+) prompt tokens", error).group(1).replace(",", ""))
    assert needed > 3 * ENGLISH_TOKENS  # the Georgian version, counted in its own tokens
    assert "context_window 200,000" in error
    assert any("not sent" in r.getMessage() and "long-1" in r.getMessage() for r in caplog.records)


def test_the_plan_counts_the_language_s_own_tokens_prices_the_tier_and_names_what_cannot_fit(
    document: pd.DataFrame, tmp_path: Path
) -> None:
    spec = spec_for("openai", "http://unused", price_tiers=TIERS, context_window=200_000)
    too_long: list[TooLong] = []
    args = {"model": spec, "paragraphs": document, "tasks": word_task(), "settings": SETTINGS}
    en = plan_task_calls(language="en", cache_dir=str(tmp_path), too_long=too_long, **args).iloc[0]
    ka = plan_task_calls(language="ka", cache_dir=str(tmp_path), too_long=too_long, **args).iloc[0]
    assert en["too_long_calls"] == 0 and en["max_input_tokens"] > ENGLISH_TOKENS
    assert en["cost_usd"] == pytest.approx((en["input_tokens"] * 3.0 + en["output_tokens"] * 12.0) / 1e6)
    assert ka["calls"] == ka["too_long_calls"] == 1
    assert ka["input_tokens"] == 0 and ka["cost_usd"] == 0.0  # never sent, never paid
    (refusal,) = too_long
    assert (refusal.language, refusal.doc_id, refusal.bucket, refusal.task) == (
        "ka",
        "long-1",
        "120K-128K",
        "word_single_qa",
    )
    assert refusal.size.input_tokens > 3 * en["input_tokens"] and not refusal.size.fits


@pytest.mark.filterwarnings("ignore:languages not in the panel were dropped")
def test_clcg_plan_says_which_tasks_cannot_run_on_which_model(
    document: pd.DataFrame,
    config_dir: Path,
    edit_yaml: Callable[[Path, Callable[[dict], None]], None],
    tmp_path: Path,
) -> None:
    def panel(doc: dict) -> None:
        doc["languages"] = [lang for lang in doc["languages"] if lang["iso"] in ("en", "pt", "ka")]

    def long_context_model(doc: dict) -> None:
        doc["models"].append(
            {
                "id": "long-ctx",
                "provider": "openai_compatible",
                "model": "long-ctx-v1",
                "base_url": "http://127.0.0.1:9/v1",
                "context_window": 200_000,
                "price_input_per_mtok": 1.0,
                "price_output_per_mtok": 4.0,
                "price_tiers": TIERS,
            }
        )

    edit_yaml(config_dir / "languages.yaml", panel)
    edit_yaml(config_dir / "models.yaml", long_context_model)
    edit_yaml(config_dir / "study.yaml", lambda doc: doc["granularity"].update(enabled=True))
    data = tmp_path / "data"
    for name, frame in (("long_paragraphs", document), ("granularity_tasks", word_task())):
        (data / name).mkdir(parents=True)
        frame.to_parquet(data / name / "data.parquet")
    plan, notes = plan_granularity(config_dir=str(config_dir), data_dir=str(data), models=["long-ctx"])
    assert plan is not None
    row = plan[plan["model"] == "long-ctx"].iloc[0]
    assert row["calls"] == 2 and row["too_long_calls"] == 1  # English fits, Georgian does not
    assert ENGLISH_TOKENS < row["input_tokens_per_call"] == row["input_tokens"] < 200_000
    assert row["cost_usd"] == pytest.approx((row["input_tokens"] * 3.0 + row["output_tokens"] * 12.0) / 1e6)
    [note] = [n for n in notes if n.startswith("cannot run on long-ctx")]
    assert "context_window 200,000" in note and "word_single_qa" in note and " in ka " in note
    assert "120K-128K" in note and "status too_long" in note
