"""The discourse role of a cloze target sentence and a filling paragraph: core, transitional, summary.

MGAL picks key sentences and paragraphs by position and checks the role each plays (core,
transitional or summary). Offline, the role is given by the rule below (``rule-role-v1``);
docs/GRANULARITY.md ("Roles") states it. First match wins:

- **summary**: the unit opens with a concluding marker (``in short``, ``overall``, ``thus``,
  ``as a result`` ...); or it restates what came before: a sentence that closes a paragraph of
  three or more sentences with at least :data:`RESTATE_SHARE` of its content words already in
  the paragraph's earlier sentences, or a paragraph that closes its source article with that
  share of its content words in the article's earlier paragraphs;
- **transitional**: the unit turns or links the text: a sentence that opens with a contrast,
  concession or shift marker (``however``, ``but``, ``instead``, ``meanwhile``, ``not
  everyone`` ...) or carries a contrastive connective after a comma (``, however,``, ``, but``,
  ``, although``); a paragraph whose first sentence does. Lexical overlap with the previous
  paragraph is not used: in news text it marks continuation as often as a link;
- **core**: otherwise, the unit carries content of its own.

Content words are the validator's (``granularity._validate.content_tokens``), compared as sets;
markers are English (tasks are built from the English version).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from clcg_pipeline.granularity._documents import split_sentences
from clcg_pipeline.granularity._validate import content_tokens

Role = Literal["core", "transitional", "summary"]
ROLES: tuple[Role, ...] = ("core", "transitional", "summary")
ROLE_RULE = "rule-role-v1"
RESTATE_SHARE = 0.5

_SUMMARY_MARKERS = (
    "in summary",
    "in short",
    "in brief",
    "in conclusion",
    "in the end",
    "in all",
    "overall",
    "altogether",
    "all in all",
    "to sum up",
    "to summarise",
    "to summarize",
    "taken together",
    "as a result",
    "consequently",
    "therefore",
    "thus",
    "hence",
    "ultimately",
    "finally",
)
_TRANSITION_MARKERS = (
    "however",
    "but",
    "yet",
    "still",
    "although",
    "though",
    "even so",
    "despite",
    "nevertheless",
    "nonetheless",
    "instead",
    "meanwhile",
    "in contrast",
    "by contrast",
    "on the other hand",
    "at the same time",
    "not everyone",
    "not all",
    "whereas",
    "then",
    "later",
    "afterwards",
    "since then",
    "next",
    "moreover",
    "furthermore",
    "in addition",
    "besides",
)


def _opener(markers: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True))
    return re.compile(rf"^[\W_]*(?:{alternatives})\b", re.IGNORECASE)


_OPENS_SUMMARY = _opener(_SUMMARY_MARKERS)
_OPENS_TRANSITION = _opener(_TRANSITION_MARKERS)
_CONTRAST_AFTER_COMMA = re.compile(
    r",\s*(?:however|but|although|though|yet|whereas|instead|nevertheless|nonetheless)\b", re.IGNORECASE
)


def _words(texts: Sequence[str]) -> set[str]:
    return {w for t in texts for w in content_tokens(t)}


def share(text: str, others: Sequence[str]) -> float:
    """Share of ``text``'s content words (as a set) that occur in ``others`` (0 when it has none)."""
    own = _words([text])
    return len(own & _words(others)) / len(own) if own else 0.0


def marker_role(sentence: str) -> Role | None:
    """summary / transitional when the sentence opens with one of their markers, else None."""
    if _OPENS_SUMMARY.search(sentence):
        return "summary"
    if _OPENS_TRANSITION.search(sentence) or _CONTRAST_AFTER_COMMA.search(sentence):
        return "transitional"
    return None


def sentence_role(sentences: Sequence[str], index: int) -> Role:
    """The role of ``sentences[index]`` in its paragraph (see the module doc)."""
    sentence = sentences[index]
    marked = marker_role(sentence)
    if marked is not None:
        return marked
    last = index == len(sentences) - 1
    if last and len(sentences) >= 3 and share(sentence, sentences[:index]) >= RESTATE_SHARE:
        return "summary"
    return "core"


def paragraph_role(paragraph: dict[str, Any], article: Sequence[dict[str, Any]]) -> Role:
    """The role of one English paragraph row; ``article``: its source article's rows by ordinal."""
    sentences = split_sentences(str(paragraph["text"])) or [str(paragraph["text"])]
    earlier = [str(r["text"]) for r in article if int(r["ordinal"]) < int(paragraph["ordinal"])]
    closes_article = bool(article) and int(article[-1]["ordinal"]) == int(paragraph["ordinal"])
    marked = marker_role(sentences[0])
    if marked == "summary" or (
        closes_article and earlier and share(str(paragraph["text"]), earlier) >= RESTATE_SHARE
    ):
        return "summary"
    return "transitional" if marked == "transitional" else "core"


def missing_roles(roles: Sequence[str]) -> list[Role]:
    """The roles none of ``roles`` has, in :data:`ROLES` order."""
    return [r for r in ROLES if r not in set(roles)]
