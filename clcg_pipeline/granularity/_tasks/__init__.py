"""The granularity task bank: built once from English, validated, frozen (docs/GRANULARITY.md).

Every task is built from the English version of a long document and refers to paragraphs by
``pid``, which is the same in every language, so one bank serves every language. One row per
task; a cloze document prompt has one row per blank sharing a ``group_id``.

Rules (rule-based builders unless a writer is configured):

- **word tasks written by a model**: with ``study.granularity.word_question_writer`` set, the
  word tasks below are written by that model per MGAL category (Single-QA, Multi-QA) with
  their evidence and validated (``_word_writer``); without one they are the rule-based gap
  questions described next.

- **word_single_qa** (word level), one per region x position cell: a sentence of a paragraph
  in the cell with one distinctive word removed (a number first, else a capitalised name that
  does not open the sentence); the question is the sentence with the gap; the answer is the
  word. The answer must occur in the aligned paragraph of every language (numbers compared by
  digits), which keeps mostly numbers and names that survive translation.
- **word_multi_qa** (word level), one per region: two sentences from two different paragraphs
  of the region, each with a number removed; the question asks for the larger missing number,
  so both evidence paragraphs are needed; the answer is that number as English writes it.
- **cloze** (sentence level): target sentences blanked in place, at most one per paragraph,
  spread over region x paragraph position (the diagonal cells first, so three targets cover
  every region and every position) and cycling the sentence's place in its paragraph. Gold
  targets per document: 9 for 8K-16K English tokens, 12 above 16K; confusions: 1 and 2
  (MGAL). Below 8K (the demo) the gold count scales with length, ``max(3, round(9 x
  tokens / 12000))`` (12K is the middle of 8K-16K), with 1 confusion. The blank is the
  paragraph's ``sentence_index``-th sentence (``granularity._documents.blank_sentence``); a
  paragraph whose sentence count differs in any language is not used. Options are the
  English gold sentences plus the confusions, shuffled with the seed (English options for
  every language, as the study's questions are English). Confusions are written by
  ``study.granularity.confusion_writer`` through the judge runner (template
  ``cloze-confusion-v1``) and validated against every gold option (``granularity._validate``).
- **paragraph_fill** (paragraph level): per region 1 paragraph below 8K tokens, 2 for
  8K-16K, 3 above; a paragraph with a neighbour on each side (``context_pids``), never next
  to another target; the reference in a language is that language's paragraph.
- **summary** (document level): only when the source document has its own summary (the JSONL
  source's ``summary``). Assembled documents have none, and their articles' titles or leads
  summarise a member article, not the document, so the task is skipped with the rule
  ``no_source_summary``.
- **translation** (document level): one excerpt per region, consecutive English paragraphs
  within the region of at most ``translation_excerpt_tokens`` tokens; the question is the
  English excerpt, the reference the aligned paragraphs of the target language (gold is null:
  it depends on the language); not asked in English.

**Roles** (``_roles``, docs/GRANULARITY.md): every cloze target sentence and filling paragraph
has a ``role``, ``core``, ``transitional`` or ``summary``, by a deterministic English rule
(discourse markers, restating earlier content). Within a cell (cloze) or region (filling) the
target is chosen by role first (the role fewest targets have so far, the document's rarer role
first), then by position; a role no target of a document has is a ``role_not_covered``
rejection (saying whether the document has any unit of that role) and a note.

``task_id`` is a hash of what identifies the task (document, kind, pids, sentence); the
``frozen_hash`` covers its full content, so a rebuild from the same inputs gives identical ids
and hashes, and a changed task is visible.

One module per task type (``_word``, ``_word_writer``, ``_cloze``, ``_fill``, ``_document_level``)
over a shared base (``_base``: the columns and one document's rows) and the role rule
(``_roles``); ``_bank`` builds the bank in a fixed order, ``_freeze`` keeps it frozen,
``_offline_writer`` holds the offline confusion and word-question writers.
"""

from clcg_pipeline.granularity._tasks._bank import BoundWriter, TaskBank, Writer, build_tasks, judge_writer
from clcg_pipeline.granularity._tasks._base import GAP, TASK_COLUMNS, cloze_counts, fill_per_region
from clcg_pipeline.granularity._tasks._cloze import CONFUSION_TEMPLATE
from clcg_pipeline.granularity._tasks._freeze import freeze, frozen_hash
from clcg_pipeline.granularity._tasks._offline_writer import (
    write_confusion_offline,
    write_word_questions_offline,
)
from clcg_pipeline.granularity._tasks._roles import ROLE_RULE, ROLES
from clcg_pipeline.granularity._tasks._word_writer import WORD_QUESTION_TEMPLATE

__all__ = [
    "CONFUSION_TEMPLATE",
    "GAP",
    "ROLES",
    "ROLE_RULE",
    "TASK_COLUMNS",
    "WORD_QUESTION_TEMPLATE",
    "BoundWriter",
    "TaskBank",
    "Writer",
    "build_tasks",
    "cloze_counts",
    "fill_per_region",
    "freeze",
    "frozen_hash",
    "judge_writer",
    "write_confusion_offline",
    "write_word_questions_offline",
]
