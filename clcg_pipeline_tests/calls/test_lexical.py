from __future__ import annotations

import asyncio
import json
import random

import pytest

from clcg_pipeline.calls import content_words
from clcg_pipeline.calls._providers.offline import OfflineAPI
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.inference import Question, render_request

EN = [
    ("p1", "The Golden Bridge was built in 1932 by the city council. It crosses the river Avon."),
    ("p2", "Local fishermen opposed the bridge because it blocked their boats. The mayor ignored them."),
]
# The same paragraphs in Portuguese: same pids, no shared English content words to speak of.
PT = [
    ("p1", "A Ponte Dourada foi construída em 1932 pela câmara municipal. Atravessa o rio Avon."),
    (
        "p2",
        "Os pescadores locais opuseram-se à ponte porque bloqueava os seus barcos. O presidente ignorou-os.",
    ),
]
QS = [
    Question("i1", "When was the Golden Bridge built by the city council?"),
    Question("i2", "Did local fishermen oppose the bridge?", polar=True),
    Question(
        "i3",
        "Why did fishermen oppose the bridge?",
        options=("The mayor ignored them", "It blocked their boats"),
    ),
    Question("i4", "What colour is the volcano on Mars?"),
]
SPEC = ModelSpec(id="lex", provider="offline", model="lexical-overlap-v1", options={"threshold": 0.2})


def _answers(paragraphs: list[tuple[str, str]], scope: str = "full_body") -> list[str]:
    req = render_request(
        scope,  # type: ignore[arg-type]
        questions=QS,
        paragraphs=paragraphs if scope != "closed_book" else (),
        settings=ConditionSettings(temperature=0.2, seed=42),
        rep=0,
    )
    out = asyncio.run(OfflineAPI(SPEC, None).generate(req, timeout_s=1))
    assert out.input_tokens > 50 and out.output_tokens > 0 and out.finish_reason == "stop"
    return json.loads(out.text or "")


def test_content_words_normalise() -> None:
    assert content_words("The Bridge's  (arches), were BUILT!") == ["bridge", "arches", "built"]


def test_answers_english_passage_questions() -> None:
    got = _answers(EN)
    assert got[0] == "The Golden Bridge was built in 1932 by the city council."
    assert got[1] == "Yes"
    assert got[2] == "It blocked their boats"
    assert got[3] == "Not stated"


def test_other_language_or_shuffled_passage_scores_lower() -> None:
    got = _answers(PT)
    # Only "Avon"/"1932"/"Golden"-like tokens could match; English questions find little.
    assert got[1] == "Not stated"
    assert sum(a == "Not stated" for a in got) > sum(a == "Not stated" for a in _answers(EN))
    rng = random.Random(0)
    shuffled = []
    for pid, text in EN:
        words = text.split()
        rng.shuffle(words)
        shuffled.append((pid, " ".join(w[::-1] for w in words)))
    assert _answers(shuffled) == ["Not stated"] * 4


def test_closed_book_is_always_not_stated_and_deterministic() -> None:
    assert _answers(EN, "closed_book") == ["Not stated"] * 4
    assert _answers(EN) == _answers(EN)


@pytest.mark.parametrize("bad", [{"threshold": 2}, {"threshold": "x"}])
def test_bad_threshold_is_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="threshold"):
        OfflineAPI(SPEC.model_copy(update={"options": bad}), None)


def test_passage_containing_the_header_word_is_not_confused() -> None:
    tricky = [("p0", "Frequently asked Questions:"), *EN]
    assert _answers(tricky) == _answers(EN)
