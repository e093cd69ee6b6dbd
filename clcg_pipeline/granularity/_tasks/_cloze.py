"""Sentence-level cloze: gold targets blanked in place, confusions from the writer, one option set."""

from __future__ import annotations

from collections import Counter
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
from clcg_pipeline.granularity._tasks._roles import ROLE_RULE, ROLES, missing_roles, sentence_role
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
    """The gold targets: per region x position cell (diagonal first), one sentence of an unused
    paragraph, by role (the role fewest targets have so far, the document's rarer role first),
    then by its place in the paragraph (cycling begin / middle / end)."""
    n_gold, _ = cloze_counts(builder.doc.n_tokens)
    used: set[str] = set()
    targets: list[dict[str, Any]] = []
    scarcity = Counter(_sentence_roles(builder))
    cells = [CELL_ORDER[i % len(CELL_ORDER)] for i in range(n_gold)]
    for k, (region, position) in enumerate(cells):
        candidates = _cell_candidates(builder, region, position, k, used)
        if not candidates:
            builder.reject(
                "cloze",
                [region, position, k],
                region,
                position,
                "no_candidate",
                f"no unused paragraph of {region}/{position} has a sentence to blank",
            )
            continue
        covered = Counter(t["role"] for t in targets)
        want = THIRDS[k % 3]  # cycle the sentence's place in its paragraph
        best = min(
            candidates,
            key=lambda c: (
                covered[c["role"]],
                scarcity[c["role"]],
                ROLES.index(c["role"]),
                c["para_rank"],
                c["sentence_position"] != want,
                c["sentence_index"],
            ),
        )
        used.add(best["pid"])
        targets.append(best)
    return sorted(targets, key=lambda t: t["ordinal"])


def _cell_candidates(
    builder: TaskBuilder, region: str, position: str, k: int, used: set[str]
) -> list[dict[str, Any]]:
    """Every sentence that may be blanked in the unused paragraphs of one cell (paragraphs in the
    seeded order, ``para_rank``), with its role; unusable paragraphs are recorded as rejections."""
    out: list[dict[str, Any]] = []
    paras = builder.ordered(builder.cell(region, position), "cloze", region, position, k)
    for rank, para in enumerate(p for p in paras if p["pid"] not in used):
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
                "cloze", [para["pid"]], region, position, "sentence_too_short", f"{para['pid']}: no sentence"
            )
            continue
        for index in eligible:
            out.append(
                {
                    "role": sentence_role(sentences, index),
                    "para_rank": rank,
                    "pid": para["pid"],
                    "region": region,
                    "position": position,
                    "sentence_index": index,
                    "sentence_position": sentence_position(index, len(sentences)),
                    "target": " ".join(sentences[index].split()),
                    "paragraph": para["text"],
                    "ordinal": int(para["ordinal"]),
                }
            )
    return out


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
                role=target["role"],
            )
        )
    report_missing_cloze_roles(builder, targets)


def report_missing_cloze_roles(builder: TaskBuilder, targets: list[dict[str, Any]]) -> None:
    """A rejection and a note per role no cloze target of the document has, with how many of the
    document's sentences have that role (none: the role cannot be found; some: not selected)."""
    missing = missing_roles([t["role"] for t in targets])
    if not missing:
        return
    available = _sentence_roles(builder)
    for role in missing:
        found = available.count(role)
        builder.reject(
            "cloze",
            ["role", role],
            None,
            None,
            "role_not_covered",
            f"no cloze target is a {role} sentence ({ROLE_RULE}); the document has {found} such "
            "sentence(s)" + ("" if found else ", so the role cannot be found in it"),
        )
    builder.notes.append(
        f"{builder.doc.doc_id}: cloze has no {', '.join(missing)} target (see task_rejections)"
    )


def _sentence_roles(builder: TaskBuilder) -> list[str]:
    """The role of every sentence of the English document."""
    roles: list[str] = []
    for text in builder.doc.paras["text"]:
        sentences = split_sentences(str(text))
        roles += [sentence_role(sentences, i) for i in range(len(sentences))]
    return roles
