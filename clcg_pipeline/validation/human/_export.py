"""Annotation exchange, export: tasks for annotators (docs/LABEL_STUDIO.md).

Export, in the formats annotators' tools read:
- Label Studio: two projects (individual responses with the planted attention checks, and
  contrastive pairs), each a task list ``[{"data": {...}}]`` plus its labelling config XML. Two
  projects because a Label Studio config is one per project and the two arms ask different
  questions; attention checks go with the individual tasks, which they must look like. The
  individual project's tasks are laid out as the design's forms (``served_order``): blocks of a
  form's length, an attention check at the form's check place in each, because Label Studio
  serves every annotator a stretch of that order (docs/LABEL_STUDIO.md);
- a third project, paragraph filling (issue 11; only when the sample has ``fill`` rows): the
  previous, original and next paragraph and the generated one, rated on the fill judge's five
  0-20 dimensions (Label Studio ``Number`` controls);
- a flat CSV, one row per assignment (annotator, position in their form, task) with empty
  answer columns, for spreadsheets and crowd platforms, and its codebook (``_codebook.py``).
Annotators see the question, gold answer, the passage the item was written from (individual
arm) and the response(s) only: never the model, language, resource class, score or task kind
(blinding). Choices show a readable label and store the canonical value (Label Studio
``alias``).
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

import pandas as pd

from clcg_pipeline.validation.human._codebook import codebook
from clcg_pipeline.validation.human._exchange_format import (
    ANSWER_COLUMNS,
    ATTRIBUTION,
    CODEBOOK,
    CONSISTENCY,
    CSV_COLUMNS,
    CSV_TASKS,
    EQUIVALENCE,
    FILL_CSV_COLUMNS,
    FILL_FIELDS,
    FILL_MAX,
    KEYPOINTS_NONE,
    LS_FILL_CONFIG,
    LS_FILL_TASKS,
    LS_PAIR_CONFIG,
    LS_PAIR_TASKS,
    LS_SINGLE_CONFIG,
    LS_SINGLE_TASKS,
    NOT_APPLICABLE,
    PREFERENCE,
    QUESTION_VALID,
    cell_text,
)
from clcg_pipeline.validation.human._keypoints import keypoints_by_item

#: doc_id -> the article's paragraphs ``(pid, text)`` in order, in the language the items were
#: written in (the study's reference language).
Passages = Mapping[str, Sequence[tuple[str, str]]]
#: The rubric questions whose options come from the task (``$<name>_options``): an attention
#: check offers only "not applicable" there, so Label Studio's required answer is a true one.
TASK_OPTIONS = {"equivalence": EQUIVALENCE, "attribution": ATTRIBUTION, "consistency": CONSISTENCY}
NO_PASSAGE = "(the passage is not available)"


def _choice(value: str, label: str) -> str:
    # The label is shown, the alias (the canonical value) is what Label Studio stores.
    return f"<Choice value={quoteattr(label)} alias={quoteattr(value)}/>"


def _choices(name: str, to: str, options: Sequence[tuple[str, str]], *, required: bool = True) -> str:
    body = "".join(_choice(v, label) for v, label in options)
    req = ' required="true"' if required else ""
    return f'<Choices name="{name}" toName="{to}" choice="single-radio"{req}>{body}</Choices>'


def _task_choices(name: str) -> str:
    """A required single choice whose options are the task's ``$<name>_options``."""
    return (
        f'<Choices name="{name}" toName="response" choice="single-radio" required="true" '
        f'value="${name}_options"/>'
    )


def option_list(options: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """Label Studio dynamic options (every key becomes an attribute of the ``<Choice>``)."""
    return [{"value": label, "alias": value} for value, label in options]


def label_config_single(error_categories: Sequence[str]) -> str:
    """Label Studio config of the individual arm: validity, adequacy, checklist, ..., error category last."""
    return "\n".join(
        [
            "<View>",
            '  <Header value="Question"/>',
            '  <Text name="question" value="$question"/>',
            '  <Header value="Gold answer"/>',
            '  <Text name="gold_answer" value="$gold_answer"/>',
            '  <Header value="Passage (the paragraphs of the article the question was written from)"/>',
            '  <Text name="passage" value="$passage"/>',
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
            "  " + _task_choices("equivalence"),
            '  <Header value="Attribution: is what the response says supported by the passage?"/>',
            "  " + _task_choices("attribution"),
            '  <Header value="Consistency"/>',
            "  " + _task_choices("consistency"),
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


def passage_text(paragraphs: Sequence[tuple[str, str]] | None, passage_ref: Any) -> str:
    """The item's linked paragraphs (``passage_ref``, comma-separated pids), ``¶<pid>`` marked as
    in the models' prompts; an item linked to none (a global question) gets the whole body."""
    if not paragraphs:
        return NO_PASSAGE
    wanted = {p.strip() for p in cell_text(passage_ref).split(",") if p.strip()}
    chosen = [(pid, text) for pid, text in paragraphs if pid in wanted] or list(paragraphs)
    return "\n\n".join(f"¶{pid} {text}" for pid, text in chosen)


def passages_of(paragraphs: pd.DataFrame) -> dict[str, list[tuple[str, str]]]:
    """doc_id -> ``(pid, text)`` in paragraph order, from a ``paragraphs`` frame (one language)."""
    if paragraphs.empty:
        return {}
    ordered = paragraphs.sort_values(["doc_id", "ordinal"], kind="stable")
    out: dict[str, list[tuple[str, str]]] = {}
    for doc_id, pid, text in zip(ordered["doc_id"], ordered["pid"], ordered["text"], strict=True):
        out.setdefault(str(doc_id), []).append((str(pid), str(text)))
    return out


def missing_passages_warning(sample: pd.DataFrame, passages: Passages, reference: str) -> str | None:
    """The warning naming the articles whose individual tasks show no passage (their
    ``reference`` paragraphs are not stored); None when every task has one."""
    individual = sample[sample["kind"].isin(["single", "attention"])] if len(sample) else sample
    docs = individual["doc_id"].astype(str) if len(individual) else pd.Series(dtype=str)
    missing = sorted(set(docs) - set(passages))
    if not missing:
        return None
    more = " ..." if len(missing) > 5 else ""
    return (
        f"annotation export: {int(docs.isin(missing).sum())} individual task(s) show {NO_PASSAGE!r}: "
        f"no {reference!r} paragraphs stored for article(s) {missing[:5]}{more}"
    )


def _ls_single(
    row: Mapping[str, Any], checklist: list[tuple[str, str]], passage: str = NO_PASSAGE
) -> dict[str, Any]:
    attention = row["kind"] == "attention"
    return {
        "data": {
            "task_id": row["task_id"],
            "question": cell_text(row["question"]),
            "gold_answer": cell_text(row["gold_answer"]),
            "passage": passage,
            "response": cell_text(row["response"]),
            "keypoint_prompt": (
                "Tick every fact of the gold answer that the response contains, or None of these facts"
                if checklist
                else "(no fact checklist for this item)"
            ),
            "keypoint_options": [
                *({"value": kid, "hint": text, "html": f"{kid}: {text}"} for kid, text in checklist),
                *([{"value": KEYPOINTS_NONE[0], "html": KEYPOINTS_NONE[1]}] if checklist else []),
            ],
            **{
                f"{name}_options": option_list([NOT_APPLICABLE] if attention else options)
                for name, options in TASK_OPTIONS.items()
            },
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


def planned_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks by their planned place in the forms (the mean of ``positions`` over the task's
    annotators), ties by task id."""

    def place(row: dict[str, Any]) -> float:
        positions = [int(p) for p in row["positions"]]
        return sum(positions) / len(positions) if positions else 0.0

    return sorted(rows, key=lambda r: (place(r), str(r["task_id"])))


def form_shape(rows: list[dict[str, Any]]) -> tuple[int, tuple[int, ...]]:
    """``(form length, the places of its attention checks)`` of the sample's design: the longest
    form, and the check places most forms have (``items_per_form`` 10, check 7th: ``(10, (7,))``)."""
    length = max((int(p) for r in rows for p in r["positions"]), default=0)
    places: dict[str, list[int]] = {}
    for r in rows:
        if r["kind"] == "attention":
            for annotator, p in zip(r["annotators"], r["positions"], strict=True):
                places.setdefault(str(annotator), []).append(int(p))
    shapes = Counter(tuple(sorted(p)) for p in places.values())
    return length, (max(shapes, key=lambda s: (shapes[s], s)) if shapes else ())


def served_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The individual project's tasks in the order Label Studio should hold them: the design's
    forms laid end to end, each block of a form's length with its attention check(s) at the form's
    check place(s) (7th of 10), the individual tasks in their planned order between.

    Label Studio cannot give an annotator their form (Community has no assignment): it serves
    whoever asks a stretch of this order (docs/LABEL_STUDIO.md), and a task of the project is
    answered by as many annotators as any other (its overlap is per project). So each block gets
    one check, answered by the block's annotators like its other tasks, and every annotator meets
    checks at the design's rate wherever they work; the sample's remaining checks (one was planted
    per form) are not pushed (only the CSV's forms use them)."""
    singles = planned_order([r for r in rows if r["kind"] == "single"])
    checks = sorted(
        (r for r in rows if r["kind"] == "attention"),
        key=lambda r: (
            [str(a) for a in r["annotators"]],
            [int(p) for p in r["positions"]],
            str(r["task_id"]),
        ),
    )
    length, places = form_shape(rows)
    between = length - len(places)
    if not singles or not places or between < 1:
        return [*singles, *checks]  # no form to lay out: every check, after the tasks
    out: list[dict[str, Any]] = []
    for start in range(0, len(singles), between):
        block = singles[start : start + between]
        for place in places:
            if checks:
                block.insert(min(place - 1, len(block)), checks.pop(0))
        out += block
    return out


def _passage(row: Mapping[str, Any], passages: Passages | None) -> str:
    return passage_text((passages or {}).get(str(row["doc_id"])), row.get("passage_ref"))


def _csv_tasks(
    rows: list[dict[str, Any]],
    checklists: dict[str, list[tuple[str, str]]],
    passages: Passages | None,
    *,
    fill: bool,
) -> bytes:
    """The flat CSV: one row per assignment, in each annotator's form order, answers empty."""
    buffer = io.StringIO()
    columns = [*CSV_COLUMNS, *FILL_CSV_COLUMNS] if fill else CSV_COLUMNS
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    assignments = sorted(
        ((a, int(p), r) for r in rows for a, p in zip(r["annotators"], r["positions"], strict=True)),
        key=lambda x: (x[0], x[1]),
    )
    for annotator, position, r in assignments:
        checklist = checklists.get(r["item_id"], []) if r["kind"] == "single" else []
        individual = r["kind"] in ("single", "attention")
        writer.writerow(
            {
                "annotator_id": annotator,
                "position": position,
                "task_id": r["task_id"],
                "question": cell_text(r["question"]),
                "gold_answer": cell_text(r["gold_answer"]),
                "passage": _passage(r, passages) if individual else "",
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
    return buffer.getvalue().encode("utf-8")


def export_files(
    sample: pd.DataFrame,
    keypoints: pd.DataFrame,
    error_categories: Sequence[str],
    passages: Passages | None = None,
) -> dict[str, bytes]:
    """File name -> bytes of every export file (the caller writes them atomically).

    ``passages``: the articles' paragraphs in the items' language (``passages_of``); without
    them the passage reads ``NO_PASSAGE``."""
    checklists = keypoints_by_item(keypoints)
    rows = planned_order(
        [
            {**r, "annotators": list(r["annotators"]), "positions": list(r["positions"])}
            for r in sample.to_dict("records")
        ]
    )
    singles = [
        _ls_single(
            r, checklists.get(r["item_id"], []) if r["kind"] == "single" else [], _passage(r, passages)
        )
        for r in served_order(rows)
    ]
    pairs = [_ls_pair(r) for r in rows if r["kind"] == "pair"]
    fills = [_ls_fill(r) for r in rows if r["kind"] == "fill"]
    dump = lambda obj: (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")  # noqa: E731
    files = {
        LS_SINGLE_TASKS: dump(singles),
        LS_SINGLE_CONFIG: label_config_single(error_categories).encode("utf-8"),
        LS_PAIR_TASKS: dump(pairs),
        LS_PAIR_CONFIG: label_config_pair().encode("utf-8"),
        CSV_TASKS: _csv_tasks(rows, checklists, passages, fill=bool(fills)),
        CODEBOOK: codebook(error_categories, fill=bool(fills)).encode("utf-8"),
    }
    if fills:
        files[LS_FILL_TASKS] = dump(fills)
        files[LS_FILL_CONFIG] = label_config_fill().encode("utf-8")
    return files
