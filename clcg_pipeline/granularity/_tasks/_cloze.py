"""Sentence-level cloze: gold targets blanked in place, confusions from the writer, one option set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pydantic

from clcg_pipeline.calls import JudgeTemplate
from clcg_pipeline.granularity._documents import THIRDS, split_sentences
from clcg_pipeline.granularity._tasks._base import (
    CLOZE_MAX_OUTPUT_TOKENS,
    TaskBuilder,
    cloze_counts,
    rng,
    sentence_position,
)
from clcg_pipeline.granularity._validate import MIN_WORDS, confusion_problem, tokens

# The diagonal first: three targets cover every region and every position.
CELL_ORDER: tuple[tuple[str, str], ...] = (
    ("begin", "begin"),
    ("middle", "middle"),
    ("end", "end"),
    ("begin", "middle"),
    ("middle", "end"),
    ("end", "begin"),
    ("begin", "end"),
    ("middle", "begin"),
    ("end", "middle"),
)


class ConfusionReply(pydantic.BaseModel):
    """What the confusion writer returns."""

    model_config = pydantic.ConfigDict(extra="forbid")
    confusions: list[str]


CONFUSION_TEMPLATE = JudgeTemplate(
    version="cloze-confusion-v1",
    system=(
        "You write distractor sentences for a sentence-level cloze test on a long document. A "
        "distractor stays on the topic of the target sentence and its paragraph but is wrong at "
        "the blank: change a detail (a number, a name, a date, a cause or a negation) so that it "
        "contradicts the document. Never copy or paraphrase any correct option. Reply with a JSON "
        "object only."
    ),
    user=(
        "Write {n} distractor sentence(s) for the target sentence.\n\n"
        "Paragraph before:\n<<<{before}>>>\n\n"
        "Paragraph with the target sentence:\n<<<{paragraph}>>>\n\n"
        "Paragraph after:\n<<<{after}>>>\n\n"
        "Target sentence (the correct answer at the blank):\n<<<{target}>>>\n\n"
        "Other correct options (every distractor must differ from each):\n<<<{others}>>>\n\n"
        'Reply with {{"confusions": ["...", "..."]}} and nothing else.'
    ),
    schema=ConfusionReply,
)
WRITER_CANDIDATES = 3  # distractors asked per target; the first valid one is used


def cloze_targets(builder: TaskBuilder) -> list[dict[str, Any]]:
    n_gold, _ = cloze_counts(builder.doc.n_tokens)
    used: set[str] = set()
    targets: list[dict[str, Any]] = []
    cells = [CELL_ORDER[i % len(CELL_ORDER)] for i in range(n_gold)]
    for k, (region, position) in enumerate(cells):
        want = THIRDS[k % 3]  # cycle the sentence's place in its paragraph
        best: dict[str, Any] | None = None
        for para in builder.ordered(builder.cell(region, position), "cloze", region, position, k):
            if para["pid"] in used:
                continue
            sentences = split_sentences(para["text"])
            counts = {
                lang: len(split_sentences(builder.doc.texts[(lang, para["pid"])]))
                for lang in builder.doc.languages
            }
            off = sorted(lang for lang, n in counts.items() if n != len(sentences))
            if off:
                builder.reject(
                    "cloze",
                    [para["pid"]],
                    region,
                    position,
                    "sentence_count_mismatch",
                    f"{para['pid']}: {len(sentences)} sentence(s) in English, "
                    + ", ".join(f"{lang} {counts[lang]}" for lang in off),
                )
                continue
            eligible = [
                i
                for i, s in enumerate(sentences)
                if len(tokens(s)) >= MIN_WORDS and builder.all_sentences.count(" ".join(s.split())) == 1
            ]
            if not eligible:
                builder.reject(
                    "cloze",
                    [para["pid"]],
                    region,
                    position,
                    "sentence_too_short",
                    f"{para['pid']}: no sentence",
                )
                continue
            preferred = [i for i in eligible if sentence_position(i, len(sentences)) == want]
            index = (preferred or eligible)[0]
            best = {
                "pid": para["pid"],
                "region": region,
                "position": position,
                "sentence_index": index,
                "sentence_position": sentence_position(index, len(sentences)),
                "target": " ".join(sentences[index].split()),
                "paragraph": para["text"],
                "ordinal": int(para["ordinal"]),
            }
            break
        if best is None:
            builder.reject(
                "cloze",
                [region, position, k],
                region,
                position,
                "no_candidate",
                f"no unused paragraph of {region}/{position} has a sentence to blank",
            )
            continue
        used.add(best["pid"])
        targets.append(best)
    return sorted(targets, key=lambda t: t["ordinal"])


def confusion_fields(builder: TaskBuilder, target: dict[str, Any], golds: Sequence[str]) -> dict[str, str]:
    before = builder.neighbour(target["ordinal"], -1)
    after = builder.neighbour(target["ordinal"], 1)
    return {
        "n": str(WRITER_CANDIDATES),
        "before": before["text"] if before else "",
        "paragraph": target["paragraph"],
        "after": after["text"] if after else "",
        "target": target["target"],
        "others": "\n".join(g for g in golds if g != target["target"]),
    }


def add_cloze(
    builder: TaskBuilder, targets: list[dict[str, Any]], replies: Mapping[str, list[str]], writer_id: str
) -> None:
    """Option sets from the gold targets and the writer's replies (pid -> candidate list)."""
    _, n_conf = cloze_counts(builder.doc.n_tokens)
    golds = [t["target"] for t in targets]
    sentences = builder.all_sentences
    confusions: list[str] = []
    order = list(targets)
    rng(builder.settings.seed, builder.doc.doc_id, "confusion-order").shuffle(order)
    for target in order:
        if len(confusions) >= n_conf:
            break
        for candidate in replies.get(target["pid"], []):
            problem = confusion_problem(
                candidate, golds + confusions, sentences, max_overlap=builder.settings.near_duplicate_overlap
            )
            if problem is None:
                confusions.append(" ".join(candidate.split()))
                break
            builder.reject(
                "cloze",
                [target["pid"], "confusion", candidate],
                target["region"],
                target["position"],
                problem[0],
                f"{target['pid']}: {problem[1]}",
            )
    if len(targets) < 3 or len(confusions) < n_conf:
        builder.reject(
            "cloze",
            ["group"],
            None,
            None,
            "too_few_confusions" if len(targets) >= 3 else "no_candidate",
            f"{len(targets)} gold target(s) (need 3 or more) and {len(confusions)} valid confusion(s) "
            f"(need {n_conf}); the document has no cloze task",
        )
        return
    options = golds + confusions
    rng(builder.settings.seed, builder.doc.doc_id, "options").shuffle(options)
    group_id = f"{builder.doc.doc_id}:cloze"
    for number, target in enumerate(targets, start=1):
        marker = f"[BLANK {number}]"
        builder.tasks.append(
            builder.task(
                "cloze",
                [target["pid"], target["sentence_index"]],
                group_id=group_id,
                region=target["region"],
                position=target["position"],
                question=f"Which option fills {marker}?",
                gold=target["target"],
                options=list(options),
                blank_pids=[target["pid"]],
                evidence_pids=[target["pid"]],
                max_output_tokens=CLOZE_MAX_OUTPUT_TOKENS,
                builder=f"rule-cloze-v1+{writer_id}",
                sentence_index=target["sentence_index"],
                sentence_position=target["sentence_position"],
                marker=marker,
                answer_type="sentence",
            )
        )
