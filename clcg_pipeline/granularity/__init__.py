"""The granularity- and position-aware task family (docs/GRANULARITY.md; after the MGAL benchmark).

Long documents assembled or loaded in every language with the same paragraph ids; word,
sentence (cloze), paragraph (filling) and document (summary, translation) tasks built once
from English; answered through the same runner, cache and budget as the responses; scored
and analysed by granularity, region and position across languages.
"""

from clcg_pipeline.granularity._analysis import EXTRA_METRICS, POSITIONS, analyse_granularity
from clcg_pipeline.granularity._analysis_inputs import (
    GRANULARITY_TABLES,
    current_rows,
    granularity_from_tables,
)
from clcg_pipeline.granularity._documents import build_long_documents, split_sentences
from clcg_pipeline.granularity._predict import partition_paragraphs, plan_task_calls, plan_tasks
from clcg_pipeline.granularity._scoring import fill_subjects, rouge_l
from clcg_pipeline.granularity._tasks import WORD_QUESTION_TEMPLATE, BoundWriter, build_tasks, judge_writer

__all__ = [
    "EXTRA_METRICS",
    "GRANULARITY_TABLES",
    "POSITIONS",
    "WORD_QUESTION_TEMPLATE",
    "BoundWriter",
    "analyse_granularity",
    "build_long_documents",
    "build_tasks",
    "current_rows",
    "fill_subjects",
    "granularity_from_tables",
    "judge_writer",
    "partition_paragraphs",
    "plan_task_calls",
    "plan_tasks",
    "rouge_l",
    "split_sentences",
]
