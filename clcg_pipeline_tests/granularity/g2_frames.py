"""Crafted long documents and tasks for the G2 tests (task prompts, reader, predict, scoring).

Two languages (English and a Portuguese version with the same pids) and one task of every
kind, shaped like ``granularity_tasks`` rows from the task builder (granularity/_tasks.py).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from clcg_pipeline.config import GranularitySettings, ModelSpec

READER = ModelSpec(
    id="lexical-reader", provider="offline", model="lexical-overlap-v1", options={"threshold": 0.2}
)
JUDGE_A = ModelSpec(id="offline-judge-a", provider="offline", model="rule-judge-v1", evaluated=False)
JUDGE_B = ModelSpec(
    id="offline-judge-b",
    provider="offline",
    model="rule-judge-v1",
    evaluated=False,
    options={"variant": "strict"},
)
SETTINGS = GranularitySettings(enabled=True, judges=["offline-judge-a", "offline-judge-b"])

EN = [
    "The Lindmere Water Cooperative was founded in 1961 by local farmers. "
    "It drilled its first well on Hollin Hill.",
    "The old pipes of the cooperative burst often across the town. "
    "In 2016 the cooperative recorded 41 burst mains across the town.",
    "Repairs were costing about 95,000 euros a year. "
    "The board therefore chose to renew all the pipes at once.",
    "The board's renewal of the pipes began in March 2018. The new pipes should last at least 80 years.",
]
PT = [
    "A Cooperativa de Água de Lindmere foi fundada em 1961 por agricultores locais. "
    "Abriu o primeiro poço em Hollin Hill.",
    "Os canos antigos tinham-se tornado um problema sério. "
    "Em 2016 a cooperativa registou 41 roturas na cidade.",
    "As reparações custavam cerca de 95.000 euros por ano. "
    "A direção decidiu por isso renovar todos os canos.",
    "As obras começaram em março de 2018 e terminaram em outubro de 2019. "
    "Os novos canos devem durar 80 anos.",
]
PIDS = ["d1:p1", "d1:p2", "d1:p3", "d1:p4"]
REGIONS = ["begin", "middle", "middle", "end"]


def paragraphs() -> pd.DataFrame:
    rows = [
        {
            "doc_id": "doc-1",
            "language": lang,
            "pid": pid,
            "ordinal": k + 1,
            "region": REGIONS[k],
            "position": "middle",
            "text": text,
        }
        for lang, texts in (("en", EN), ("pt", PT))
        for k, (pid, text) in enumerate(zip(PIDS, texts, strict=True))
    ]
    return pd.DataFrame(rows)


def documents() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "doc_id": "doc-1",
                "language": "en",
                "bucket": "tiny",
                "summary": "A cooperative renewed its pipes.",
            },
            {"doc_id": "doc-1", "language": "pt", "bucket": "tiny", "summary": None},
        ]
    )


def _task(task_id: str, task: str, granularity: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task_id": task_id,
        "group_id": task_id,
        "doc_id": "doc-1",
        "task": task,
        "granularity": granularity,
        "region": "middle",
        "position": "middle",
        "question": "",
        "gold": None,
        "options": [],
        "blank_pids": [],
        "evidence_pids": [],
        "max_output_tokens": 16,
        "bucket": "tiny",
        "sentence_index": None,
        "sentence_position": None,
    }
    row.update(fields)
    return row


CLOZE_OPTIONS = [
    "In 2016 the cooperative recorded 41 burst mains across the town.",
    "The town council sold the well to a private company in 1990.",
    "The board therefore chose to renew all the pipes at once.",
]


def tasks() -> pd.DataFrame:
    rows = [
        _task(
            "t-word",
            "word_single_qa",
            "word",
            question='Which single word fills the gap in this sentence of the document: "The Lindmere Water '
            'Cooperative was founded in ____ by local farmers."',
            gold="1961",
            evidence_pids=["d1:p1"],
        ),
        _task(
            "t-cloze-1",
            "cloze",
            "sentence",
            group_id="g-cloze",
            gold=CLOZE_OPTIONS[0],
            options=CLOZE_OPTIONS,
            blank_pids=["d1:p2"],
            sentence_index=1,
        ),
        _task(
            "t-cloze-2",
            "cloze",
            "sentence",
            group_id="g-cloze",
            region="middle",
            gold=CLOZE_OPTIONS[2],
            options=CLOZE_OPTIONS,
            blank_pids=["d1:p3"],
            sentence_index=1,
        ),
        _task(
            "t-fill",
            "paragraph_fill",
            "paragraph",
            gold=EN[2],
            blank_pids=["d1:p3"],
            evidence_pids=["d1:p3"],
            max_output_tokens=128,
        ),
        _task(
            "t-summary",
            "summary",
            "document",
            region=None,
            position=None,
            gold="A cooperative renewed its pipes.",
        ),
        _task(
            "t-trans",
            "translation",
            "document",
            question=EN[3],
            evidence_pids=["d1:p4"],
            max_output_tokens=128,
        ),
    ]
    frame = pd.DataFrame(rows)
    frame["sentence_index"] = frame["sentence_index"].astype("Int64")
    return frame
