"""Word-level tasks: one masked distinctive word (single) and the larger of two masked numbers (multi)."""

from __future__ import annotations

from typing import Any

from clcg_pipeline.granularity._documents import THIRDS, split_sentences
from clcg_pipeline.granularity._tasks._base import (
    GAP,
    NAME,
    NUMBER,
    TaskBuilder,
    number_value,
    sentence_position,
)
from clcg_pipeline.granularity._validate import MIN_WORDS, tokens


def word_candidates(
    builder: TaskBuilder, para: dict[str, Any], task: str = "word_single_qa"
) -> list[dict[str, Any]]:
    """Validated (sentence, answer) candidates of one paragraph; rejections recorded."""
    out: list[dict[str, Any]] = []
    pid = para["pid"]
    for s_index, sentence in enumerate(split_sentences(para["text"])):
        found = [(m, "number") for m in NUMBER.finditer(sentence)]
        if task == "word_single_qa":
            found += [(m, "name") for m in NAME.finditer(sentence) if m.start() > 0]
        for match, kind in found:
            answer = match.group(0)
            key = [pid, s_index, answer]
            masked = sentence[: match.start()] + GAP + sentence[match.end() :]
            if len(tokens(sentence)) < MIN_WORDS:
                rule, detail = "sentence_too_short", f"{pid}: {sentence[:80]!r}"
            elif sum(1 for t in tokens(sentence) if t == answer.lower()) > 1:
                rule, detail = "answer_repeated", f"{pid}: {answer!r} occurs twice in its sentence"
            elif builder.all_sentences.count(" ".join(sentence.split())) > 1:
                rule, detail = "sentence_not_unique", f"{pid}: {sentence[:80]!r}"
            elif missing := builder.missing_languages(pid, answer):
                rule, detail = "gold_missing_in_language", f"{pid}: {answer!r} not found in {missing}"
            else:
                out.append(
                    {
                        "pid": pid,
                        "sentence_index": s_index,
                        "n_sentences": len(split_sentences(para["text"])),
                        "answer": answer,
                        "masked": " ".join(masked.split()),
                        "kind": kind,
                        "region": para["region"],
                        "position": para["position"],
                    }
                )
                continue
            builder.reject(task, key, para["region"], para["position"], rule, detail)
    # Numbers first: they survive translation and are the most distinctive.
    return sorted(out, key=lambda c: c["kind"] != "number")


def add_word_single_qa(builder: TaskBuilder) -> None:
    for region in THIRDS:
        for position in THIRDS:
            chosen = None
            for para in builder.ordered(builder.cell(region, position), "single", region, position):
                candidates = word_candidates(builder, para)
                if candidates:
                    chosen = candidates[0]
                    break
            if chosen is None:
                builder.reject(
                    "word_single_qa",
                    [region, position],
                    region,
                    position,
                    "no_candidate",
                    f"no paragraph of {region}/{position} has a valid sentence with a distinctive word",
                )
                continue
            builder.tasks.append(
                builder.task(
                    "word_single_qa",
                    [chosen["pid"], chosen["sentence_index"], chosen["answer"]],
                    region=region,
                    position=position,
                    question="Which single word fills the gap in this sentence of the document: "
                    f'"{chosen["masked"]}"',
                    gold=chosen["answer"],
                    evidence_pids=[chosen["pid"]],
                    builder="rule-word-qa-v1",
                    sentence_index=chosen["sentence_index"],
                    sentence_position=sentence_position(chosen["sentence_index"], chosen["n_sentences"]),
                    answer_type=chosen["kind"],
                )
            )


def add_word_multi_qa(builder: TaskBuilder) -> None:
    for region in THIRDS:
        pool: list[dict[str, Any]] = []
        for para in builder.ordered(builder.cell(region), "multi", region):
            candidates = word_candidates(builder, para, "word_multi_qa")
            if candidates:
                pool.append(candidates[0])
        pair = None
        for i, first in enumerate(pool):
            for second in pool[i + 1 :]:
                if number_value(first["answer"]) != number_value(second["answer"]):
                    pair = (first, second)
                    break
            if pair:
                break
        if pair is None:
            builder.reject(
                "word_multi_qa",
                [region],
                region,
                None,
                "no_candidate",
                f"region {region}: fewer than two paragraphs with a valid sentence holding distinct numbers",
            )
            continue
        first, second = sorted(pair, key=lambda c: builder.ordinal(c["pid"]))
        larger = max(pair, key=lambda c: number_value(c["answer"]))
        builder.tasks.append(
            builder.task(
                "word_multi_qa",
                [first["pid"], first["sentence_index"], second["pid"], second["sentence_index"]],
                region=region,
                position=larger["position"],
                question=(
                    "Two sentences of the document each have a number replaced by a gap: "
                    f'(1) "{first["masked"]}" (2) "{second["masked"]}" '
                    "Which is the larger of the two missing numbers?"
                ),
                gold=larger["answer"],
                evidence_pids=[first["pid"], second["pid"]],
                builder="rule-word-qa-v1",
                answer_type="number",
            )
        )
