"""A synthetic corpus in the canonical JSONL layout, with a frozen item bank (seeded).

    .venv/bin/python bench/synthetic_corpus.py [OUT] [--articles 600] [--languages en,pt,is,mt,sw,ka,ht]

Writes ``OUT/articles/<iso>.jsonl`` (every article in every language, the same paragraph ids)
and ``OUT/items.jsonl`` (``--items-per-level`` items per level L0-L5 and article), which a
source ``{kind: jsonl, path: OUT}`` reads like any real corpus. The text is made-up but varied
(names, numbers, dates drawn from a seeded generator) so prompts differ in length and content
like real ones; the same seed gives the same bytes. Gold answers follow the fake provider's
convention and some language versions carry its failure marker, so a study run against it
has real variation to analyse. For benchmarks and scale tests only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import tempfile
import time
from pathlib import Path

LANGUAGES = ("en", "pt", "is", "mt", "sw", "ka", "ht")
LEVELS = ("L0", "L1", "L2", "L3", "L4", "L5")
_PLACES = ("Lindmere", "Harrow Bay", "Oskvale", "Brennick", "Tarrow", "Ellisford", "Morwen", "Quillan")
_BODIES = ("council", "cooperative", "school board", "harbour trust", "library", "clinic", "club")
_TOPICS = ("bridge", "water pipes", "ferry route", "wind farm", "market hall", "rail link", "museum")
_VERBS = ("opened", "rebuilt", "closed", "expanded", "renamed", "moved", "funded")
# Per-language markers keep each language version's text (and so its prompts) distinct.
_MARKERS = {
    "en": "",
    "pt": "[pt] ",
    "is": "[is] ",
    "mt": "[mt] ",
    "sw": "[sw] ",
    "ka": "[ka] ",
    "ht": "[ht] ",
}
# Share of articles whose version in a language the fake provider answers in prose (unparseable):
# a made-up gap that grows away from English, so the analysis has something to estimate.
_FAILURE_RATE = {"en": 0.05, "pt": 0.1, "is": 0.3, "mt": 0.3, "sw": 0.35, "ka": 0.4, "ht": 0.35}
_FAULT = " [[answer:non_json]]"


def _paragraphs(rng: random.Random, n: int) -> list[str]:
    place, body, topic = rng.choice(_PLACES), rng.choice(_BODIES), rng.choice(_TOPICS)
    texts = []
    for i in range(n):
        year = rng.randint(1950, 2023)
        amount = rng.randint(2, 900)
        sentences = [
            f"In {year} the {body} of {place} {rng.choice(_VERBS)} the {topic} after a vote of "
            f"{rng.randint(10, 500)} to {rng.randint(1, 300)}.",
            f"The work cost about {amount} thousand euros and took {rng.randint(2, 40)} months.",
            f"Residents said the {topic} had been a problem since {year - rng.randint(1, 30)}.",
        ]
        texts.append(" ".join(sentences[: 2 + (i % 2)]))
    return texts


def _item(doc_id: str, level: str, k: int, pid: str, position: int) -> dict[str, object]:
    polar = level == "L0"
    return {
        "item_id": f"{doc_id}-{level}-{k}",
        "doc_id": doc_id,
        "level": level,
        "question": (
            f"Did the vote in paragraph {pid} pass? ({level}.{k})"
            if polar
            else f"What does paragraph {pid} say about the cost or the year? ({level}.{k})"
        ),
        # The fake provider (clcg_pipeline.calls.fake_server) answers the n-th question of a
        # prompt with "answer n": these golds make its answers right, so scores vary only where
        # a language version makes it fail (below), as a real gap would.
        "gold_answer": "Yes" if polar else f"answer {position}",
        "answer_format": "polar" if polar else ("span" if level == "L1" else "free"),
        "target_pids": [pid],
        "supporting_pids": [pid],
        "gold_answerable": True,
    }


def write_corpus(
    out: Path,
    *,
    articles: int = 600,
    languages: tuple[str, ...] = LANGUAGES,
    paragraphs: int = 6,
    items_per_level: int = 2,
    seed: int = 42,
) -> dict[str, int]:
    """Write the corpus under ``out``; returns counts of what was written."""
    unknown = [iso for iso in languages if iso not in _MARKERS]
    if unknown:
        raise ValueError(f"--languages: no synthetic text for {unknown}; choose from {list(_MARKERS)}")
    rng = random.Random(seed)
    (out / "articles").mkdir(parents=True, exist_ok=True)
    docs = []
    items = []
    start = dt.date(2016, 1, 1)
    for a in range(articles):
        doc_id = f"syn-{a:05d}"
        texts = _paragraphs(rng, paragraphs)
        published = start + dt.timedelta(days=rng.randint(0, 3000))
        docs.append((doc_id, f"Article {a} on local works", published.isoformat(), texts))
        for li, level in enumerate(LEVELS):
            for k in range(1, items_per_level + 1):
                # Questions are asked in item_id order: this item is number `position` of the prompt.
                position = li * items_per_level + k
                items.append(_item(doc_id, level, k, f"p{rng.randint(1, paragraphs):02d}", position))
        # Which language versions the fake provider will fail on (a marker it reads in the passage).
        broken = {iso for iso in languages if rng.random() < _FAILURE_RATE.get(iso, 0.3)}
        docs[-1] = (*docs[-1], broken)
    for iso in languages:
        with open(out / "articles" / f"{iso}.jsonl", "w", encoding="utf-8") as handle:
            for doc_id, title, published, texts, broken in docs:
                fault = _FAULT if iso in broken else ""
                record = {
                    "doc_id": doc_id,
                    "language": iso,
                    "title": _MARKERS[iso] + title,
                    "published": published,
                    "paragraphs": [
                        {"pid": f"p{i + 1:02d}", "text": _MARKERS[iso] + t + (fault if i == 0 else "")}
                        for i, t in enumerate(texts)
                    ],
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(out / "items.jsonl", "w", encoding="utf-8") as handle:
        for item in items:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    return {"articles": articles, "languages": len(languages), "items": len(items)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # Optional so that `make bench` (which runs every script bare) checks the generator too.
    parser.add_argument("out", type=Path, nargs="?", help="output folder (default: a temporary one)")
    parser.add_argument("--articles", type=int, default=600)
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--paragraphs", type=int, default=6)
    parser.add_argument("--items-per-level", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        started = time.perf_counter()
        counts = write_corpus(
            out,
            articles=args.articles,
            languages=tuple(args.languages.split(",")),
            paragraphs=args.paragraphs,
            items_per_level=args.items_per_level,
            seed=args.seed,
        )
        print(json.dumps({**counts, "folder": str(out), "seconds": round(time.perf_counter() - started, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
