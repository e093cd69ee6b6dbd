"""Annotation exchange, export: tasks for annotators (STUDY.md section 7).

Export, in the formats annotators' tools read:
- Label Studio: two projects (individual responses with the planted attention checks, and
  contrastive pairs), each a task list ``[{"data": {...}}]`` plus its labelling config XML. Two
  projects because a Label Studio config is one per project and the two arms ask different
  questions; attention checks go with the individual tasks, which they must look like.
- a third project, paragraph filling (issue 11; only when the sample has ``fill`` rows): the
  previous, original and next paragraph and the generated one, rated on the fill judge's five
  0-20 dimensions (Label Studio ``Number`` controls);
- a flat CSV, one row per assignment (annotator, position in their form, task) with empty
  answer columns, for spreadsheets and crowd platforms.
Annotators see the question, gold answer and response(s) only: never the model, language,
resource class, score or task kind (blinding; an attention check must not announce itself).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

import pandas as pd

from clcg_pipeline.validation.human._exchange_format import (
    ANSWER_COLUMNS,
    ATTRIBUTION,
    CONSISTENCY,
    CSV_COLUMNS,
    CSV_TASKS,
    EQUIVALENCE,
    FILL_CSV_COLUMNS,
    FILL_FIELDS,
    FILL_MAX,
    LS_FILL_CONFIG,
    LS_FILL_TASKS,
    LS_PAIR_CONFIG,
    LS_PAIR_TASKS,
    LS_SINGLE_CONFIG,
    LS_SINGLE_TASKS,
    PREFERENCE,
    QUESTION_VALID,
    cell_text,
)
from clcg_pipeline.validation.human._keypoints import keypoints_by_item


def _choices(name: str, to: str, options: Sequence[tuple[str, str]], *, required: bool = True) -> str:
    body = "".join(f"<Choice value={quoteattr(v)} hint={quoteattr(h)}/>" for v, h in options)
    req = ' required="true"' if required else ""
    return f'<Choices name="{name}" toName="{to}" choice="single-radio"{req}>{body}</Choices>'


def label_config_single(error_categories: Sequence[str]) -> str:
    """Label Studio config of the individual arm: validity, adequacy, checklist, ..., error category last."""
    return "\n".join(
        [
            "<View>",
            '  <Header value="Question"/>',
            '  <Text name="question" value="$question"/>',
            '  <Header value="Gold answer"/>',
            '  <Text name="gold_answer" value="$gold_answer"/>',
            '  <Header value="Response"/>',
            '  <Text name="response" value="$response"/>',
            '  <Header value="Is the question valid?"/>',
            "  " + _choices("question_valid", "question", QUESTION_VALID),
            '  <Header value="Adequacy: how well does the response answer the question? '
            '(1 = not at all, 5 = fully)"/>',
            '  <Rating name="adequacy" toName="response" maxRating="5" required="true"/>',
            '  <Header value="$keypoint_prompt"/>',
            '  <Choices name="keypoints" toName="response" choice="multiple" value="$keypoint_options"/>',
            '  <Header value="Equivalence to the gold answer"/>',
            "  " + _choices("equivalence", "response", EQUIVALENCE),
            '  <Header value="Attribution"/>',
            "  " + _choices("attribution", "response", ATTRIBUTION),
            '  <Header value="Consistency"/>',
            "  " + _choices("consistency", "response", CONSISTENCY),
            '  <Header value="$error_category_prompt"/>',
            "  "
            + _choices(
                "primary_error_category",
                "response",
                [(c, c.replace("_", " ")) for c in error_categories],
                required=False,
            ),
            '  <TextArea name="comment" toName="response" placeholder="Optional comment"/>',
            "</View>",
            "",
        ]
    )


def label_config_pair() -> str:
    """Label Studio config of the contrastive arm: A / B / no preference, with a confidence rating."""
    return "\n".join(
        [
            "<View>",
            '  <Header value="Question"/>',
            '  <Text name="question" value="$question"/>',
            '  <Header value="Gold answer"/>',
            '  <Text name="gold_answer" value="$gold_answer"/>',
            '  <Header value="Answer A"/>',
            '  <Text name="response_a" value="$response_a"/>',
            '  <Header value="Answer B"/>',
            '  <Text name="response_b" value="$response_b"/>',
            '  <Header value="Which answer is better?"/>',
            "  " + _choices("preference", "question", PREFERENCE),
            '  <Header value="How confident are you? (1 = guess, 5 = certain)"/>',
            '  <Rating name="confidence" toName="question" maxRating="5" required="true"/>',
            '  <TextArea name="comment" toName="question" placeholder="Optional comment"/>',
            "</View>",
            "",
        ]
    )


def label_config_fill() -> str:
    """Label Studio config of the paragraph-filling arm: the fill judge's five dimensions, 0-20 each."""
    hints = {
        "topic_fidelity": "Topic fidelity: same topic and points as the original paragraph",
        "local_coherence": "Local coherence: follows the previous and leads into the next paragraph",
        "entity_consistency": "Entity consistency: names, numbers and entities agree with the context",
        "instruction_following": "Instruction following: one paragraph that fills the gap",
        "format_compliance": "Format compliance: plain paragraph text, no headings or commentary",
    }
    lines = [
        "<View>",
        '  <Header value="$question"/>',
        '  <Header value="Previous paragraph"/>',
        '  <Text name="previous_text" value="$previous_text"/>',
        '  <Header value="Original paragraph (removed)"/>',
        '  <Text name="gold_answer" value="$gold_answer"/>',
        '  <Header value="Generated paragraph"/>',
        '  <Text name="response" value="$response"/>',
        '  <Header value="Next paragraph"/>',
        '  <Text name="next_text" value="$next_text"/>',
    ]
    for name in FILL_FIELDS:
        lines.append(f"  <Header value={quoteattr(hints[name] + ' (0-20)')}/>")
        lines.append(
            f'  <Number name="{name}" toName="response" min="0" max="{FILL_MAX}" step="1" required="true"/>'
        )
    lines += ['  <TextArea name="comment" toName="response" placeholder="Optional comment"/>', "</View>", ""]
    return "\n".join(lines)


def _ls_single(row: Mapping[str, Any], checklist: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "data": {
            "task_id": row["task_id"],
            "question": cell_text(row["question"]),
            "gold_answer": cell_text(row["gold_answer"]),
            "response": cell_text(row["response"]),
            "keypoint_prompt": (
                "Tick every fact of the gold answer that the response contains"
                if checklist
                else "(no fact checklist for this item)"
            ),
            "keypoint_options": [
                {"value": kid, "hint": text, "html": f"{kid}: {text}"} for kid, text in checklist
            ],
            "error_category_prompt": (
                "Last: the primary error category of the response (choose correct if there is none)"
                if row["ask_error_category"]
                else "(no error category for this item: leave it blank)"
            ),
            "annotators": ", ".join(row["annotators"]),
        }
    }


def _ls_pair(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "data": {
            "task_id": row["task_id"],
            "question": cell_text(row["question"]),
            "gold_answer": cell_text(row["gold_answer"]),
            "response_a": cell_text(row["response_a"]),
            "response_b": cell_text(row["response_b"]),
            "annotators": ", ".join(row["annotators"]),
        }
    }


def _ls_fill(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "data": {
            "task_id": row["task_id"],
            "question": cell_text(row["question"]),
            "previous_text": cell_text(row.get("previous_text")),
            "gold_answer": cell_text(row["gold_answer"]),
            "response": cell_text(row["response"]),
            "next_text": cell_text(row.get("next_text")),
            "annotators": ", ".join(row["annotators"]),
        }
    }


def export_files(
    sample: pd.DataFrame, keypoints: pd.DataFrame, error_categories: Sequence[str]
) -> dict[str, bytes]:
    """File name -> bytes of every export file (the caller writes them atomically)."""
    checklists = keypoints_by_item(keypoints)
    rows = [
        {**r, "annotators": list(r["annotators"]), "positions": list(r["positions"])}
        for r in sample.to_dict("records")
    ]
    singles = [
        _ls_single(r, checklists.get(r["item_id"], []) if r["kind"] == "single" else [])
        for r in rows
        if r["kind"] in ("single", "attention")
    ]
    pairs = [_ls_pair(r) for r in rows if r["kind"] == "pair"]
    fills = [_ls_fill(r) for r in rows if r["kind"] == "fill"]
    buffer = io.StringIO()
    columns = [*CSV_COLUMNS, *FILL_CSV_COLUMNS] if fills else CSV_COLUMNS
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    assignments = sorted(
        ((a, int(p), r) for r in rows for a, p in zip(r["annotators"], r["positions"], strict=True)),
        key=lambda x: (x[0], x[1]),
    )
    for annotator, position, r in assignments:
        checklist = checklists.get(r["item_id"], []) if r["kind"] == "single" else []
        writer.writerow(
            {
                "annotator_id": annotator,
                "position": position,
                "task_id": r["task_id"],
                "question": cell_text(r["question"]),
                "gold_answer": cell_text(r["gold_answer"]),
                "response": cell_text(r["response"]),
                "response_a": cell_text(r["response_a"]),
                "response_b": cell_text(r["response_b"]),
                "keypoints": " | ".join(f"{kid}: {text}" for kid, text in checklist),
                "ask_error_category": "yes" if r["ask_error_category"] else "no",
                **dict.fromkeys(ANSWER_COLUMNS, ""),
                "previous_text": cell_text(r.get("previous_text")),
                "next_text": cell_text(r.get("next_text")),
                **dict.fromkeys(FILL_FIELDS, ""),
            }
        )
    dump = lambda obj: (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")  # noqa: E731
    files = {
        LS_SINGLE_TASKS: dump(singles),
        LS_SINGLE_CONFIG: label_config_single(error_categories).encode("utf-8"),
        LS_PAIR_TASKS: dump(pairs),
        LS_PAIR_CONFIG: label_config_pair().encode("utf-8"),
        CSV_TASKS: buffer.getvalue().encode("utf-8"),
    }
    if fills:
        files[LS_FILL_TASKS] = dump(fills)
        files[LS_FILL_CONFIG] = label_config_fill().encode("utf-8")
    return files
