"""The one rule for article text outside its home columns (``release._spans``), on small strings."""

from __future__ import annotations

import hashlib

import pytest

from clcg_pipeline.release._redact import restore_text
from clcg_pipeline.release._spans import SpanFinder

PARAGRAPH = "Several shop owners on Bridge Street said that the second phase reduced the number of customers."
TITLE = "Bridge Street works"
DIGEST = hashlib.sha256(PARAGRAPH.encode()).hexdigest()


@pytest.fixture
def finder() -> SpanFinder:
    return SpanFinder.of([PARAGRAPH, TITLE], 20)


def test_a_run_of_the_threshold_becomes_a_reference_to_its_offsets(finder: SpanFinder) -> None:
    answer = f'They said "{PARAGRAPH[8:60]}", as reported.'
    assert finder.replace(answer) == f'They said "[[clcg-quote:{DIGEST}:8-60]]", as reported.'


def test_a_shorter_run_stays_and_a_whole_copy_is_the_texts_hash(finder: SpanFinder) -> None:
    assert finder.replace(f"<{PARAGRAPH[8:27]}>") == f"<{PARAGRAPH[8:27]}>"  # 19 < 20 characters
    assert (
        finder.replace(f"{PARAGRAPH} {PARAGRAPH}") == f"[[clcg-redacted:{DIGEST}]] [[clcg-redacted:{DIGEST}]]"
    )
    # A whole short text copied as a value (a title), and not when it is a part of a longer value.
    title = hashlib.sha256(TITLE.encode()).hexdigest()
    assert finder.replace(TITLE) == f"[[clcg-redacted:{title}]]"


def test_near_verbatim_copies_leave_no_run_of_the_threshold(finder: SpanFinder) -> None:
    """A paragraph copied with small changes (a paragraph-fill answer): every run of 20 or more
    characters is referenced, the changed words and short tails stay."""
    near = PARAGRAPH.replace("said that", "said, that").replace("number of", "count of")
    hidden = finder.replace(near)
    assert hidden.endswith("]],[[clcg-quote:" + DIGEST + ":41-76]]count of customers.")
    assert finder.runs(hidden) == []


@pytest.mark.parametrize(
    "value",
    [
        f"They said: {PARAGRAPH[8:60]}, as reported.",
        f"{PARAGRAPH}\n\n{PARAGRAPH[30:]} and {TITLE}.",
        "nothing from the article here, only a long and unrelated sentence",
    ],
)
def test_reconstruction_restores_every_reference(finder: SpanFinder, value: str) -> None:
    missing: list[str] = []
    texts = {hashlib.sha256(t.encode()).hexdigest(): t for t in (PARAGRAPH, TITLE)}
    assert restore_text(finder.replace(value), texts, missing) == value
    assert missing == []
