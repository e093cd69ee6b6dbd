"""Paragraph-level filling: a paragraph with a neighbour on each side, never next to another target."""

from __future__ import annotations

from clcg_pipeline.corpus import count_tokens
from clcg_pipeline.granularity._documents import THIRDS
from clcg_pipeline.granularity._tasks._base import OUTPUT_FACTOR, TaskBuilder, fill_per_region


def add_paragraph_fill(builder: TaskBuilder) -> None:
    per_region = fill_per_region(builder.doc.n_tokens)
    p = builder.doc.paras
    last = int(p["ordinal"].max())
    chosen: set[int] = set()
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
            candidates.sort(key=lambda r: r["position"] != want)
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
                )
            )
            got += 1
