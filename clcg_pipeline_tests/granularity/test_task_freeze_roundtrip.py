"""A task bank read back from Parquet still matches its frozen hashes (no false drift note)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from clcg_pipeline.granularity._tasks import TASK_COLUMNS, freeze, frozen_hash
from clcg_pipeline.storage import read_frame, write_frame


def _bank() -> pd.DataFrame:
    rows = [
        {
            "task_id": "d:cloze:1",
            "group_id": "d:cloze",
            "doc_id": "d",
            "task": "cloze",
            "granularity": "sentence",
            "region": "begin",
            "position": "middle",
            "question": "Which option fills [BLANK 1]?",
            "gold": "The gold sentence.",
            "options": ["The gold sentence.", "A confusion."],
            "blank_pids": ["d:p01"],
            "evidence_pids": ["d:p01"],
            "max_output_tokens": 16,
            "builder": "rule-cloze-v1",
            "bucket": "1K-2K",
            "sentence_index": 2,
            "sentence_position": "end",
            "marker": "[BLANK 1]",
            "context_pids": [],
            "answer_type": "sentence",
            "doc_hash": "h",
        },
        {
            "task_id": "d:translation:1",
            "group_id": "d:translation:1",
            "doc_id": "d",
            "task": "translation",
            "granularity": "document",
            "region": "end",
            "position": None,
            "question": "Source text.",
            "gold": None,
            "options": [],
            "blank_pids": [],
            "evidence_pids": ["d:p02", "d:p03"],
            "max_output_tokens": 400,
            "builder": "rule-translation-v1",
            "bucket": "1K-2K",
            "sentence_index": None,
            "sentence_position": None,
            "marker": None,
            "context_pids": [],
            "answer_type": "translation",
            "doc_hash": "h",
        },
    ]
    for row in rows:
        row["frozen_hash"] = frozen_hash(row)
    tasks = pd.DataFrame(rows, columns=TASK_COLUMNS)
    tasks["sentence_index"] = tasks["sentence_index"].astype("Int64")
    return tasks


def test_a_stored_bank_read_back_matches_its_hashes(tmp_path: Path) -> None:
    bank = _bank()
    path = tmp_path / "granularity_tasks" / "data.parquet"
    write_frame(path, bank, contract="granularity_tasks")
    stored = read_frame(path)
    assert [frozen_hash(r) for r in stored.to_dict("records")] == list(bank["frozen_hash"])
    kept, notes = freeze(stored, bank)
    assert notes == []
    assert list(kept["task_id"]) == list(bank["task_id"])
