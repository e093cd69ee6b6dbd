"""Paragraph-level filling: a paragraph with a neighbour on each side, never next to another target."""

from __future__ import annotations

from collections import Counter
from typing import Any

from clcg_pipeline.corpus import count_tokens
from clcg_pipeline.granularity._documents import THIRDS
from clcg_pipeline.granularity._tasks._base import OUTPUT_FACTOR, TaskBuilder, fill_per_region
from clcg_pipeline.granularity._tasks._roles import ROLE_RULE, missing_roles, paragraph_role


def add_paragraph_fill(builder: TaskBuilder) -> None:
    per_region = fill_per_region(builder.doc.n_tokens)
    p = builder.doc.paras
    last = int(p["ordinal"].max())
    chosen: set[int] = set()
    roles: list[str] = []
    role_of = _paragraph_roles(builder)
    scarcity = Counter(role_of.values())
    for region in THIRDS:
        got = 0
        for k in range(per_region):
            want = THIRDS[(k + 1) % 3] if per_region == 1 else THIRDS[k % 3]
            candidates = [
                r
                for r in builder.ordered(builder.cell(region), "fill", region, k)
                if 1 < int(r["ordinal"]) < last
                and not ({r["ordinal"] - 1, r["ordinal"], r["ordinal"] + 1} & chosen)
            ]
            covered = Counter(roles)
            # By role (the one fewest tasks have so far, the document's rarer first), then position.
            candidates.sort(
                key=lambda r: (covered[role_of[r["pid"]]], scarcity[role_of[r["pid"]]], r["position"] != want)
            )
            if not candidates:
                builder.reject(
                    "paragraph_fill",
                    [region, k],
                    region,
                    None,
                    "no_neighbours",
                    f"region {region}: no paragraph with a neighbour on each side and away "
                    "from other targets",
                )
                continue
            para = candidates[0]
            ordinal = int(para["ordinal"])
            chosen.add(ordinal)
            before, after = builder.neighbour(ordinal, -1), builder.neighbour(ordinal, 1)
            assert before is not None and after is not None
            n = count_tokens([para["text"]], builder.tokenizer)[0]
            roles.append(role_of[para["pid"]])
            builder.tasks.append(
                builder.task(
                    "paragraph_fill",
                    [para["pid"]],
                    region=region,
                    position=para["position"],
                    question="Write the missing paragraph at the blank.",
                    gold=para["text"],
                    blank_pids=[para["pid"]],
                    evidence_pids=[para["pid"]],
                    context_pids=[before["pid"], after["pid"]],
                    max_output_tokens=max(128, OUTPUT_FACTOR * n),
                    builder="rule-fill-v1",
                    answer_type="paragraph",
                    role=roles[-1],
                )
            )
            got += 1
    _report_missing_roles(builder, roles)


def _paragraph_roles(builder: TaskBuilder) -> dict[str, str]:
    """pid -> role of every paragraph with a neighbour on each side (those that can be filled)."""
    rows = builder.doc.paras.sort_values("ordinal").to_dict("records")
    return {str(r["pid"]): paragraph_role(r, _article_of(builder, r)) for r in rows[1:-1]}


def _article_of(builder: TaskBuilder, para: dict[str, Any]) -> list[dict[str, Any]]:
    """The English rows (by ordinal) of the paragraph's source article; the whole document when
    the document has no ``source_doc_id`` (a long-document corpus record is its own article)."""
    p = builder.doc.paras.sort_values("ordinal")
    if "source_doc_id" in p.columns and para.get("source_doc_id") is not None:
        p = p[p["source_doc_id"] == para["source_doc_id"]]
    rows: list[dict[str, Any]] = p.to_dict("records")
    return rows


def _report_missing_roles(builder: TaskBuilder, roles: list[str]) -> None:
    """A rejection and a note per role no filling task of the document has, with how many of the
    document's paragraphs (with a neighbour on each side) have that role."""
    missing = missing_roles(roles)
    if not missing or not roles:
        return
    available = list(_paragraph_roles(builder).values())
    for role in missing:
        found = available.count(role)
        builder.reject(
            "paragraph_fill",
            ["role", role],
            None,
            None,
            "role_not_covered",
            f"no filling task is a {role} paragraph ({ROLE_RULE}); the document has {found} such "
            "paragraph(s) with a neighbour on each side"
            + ("" if found else ", so the role cannot be found in it"),
        )
    builder.notes.append(
        f"{builder.doc.doc_id}: paragraph_fill has no {', '.join(missing)} task (see task_rejections)"
    )
