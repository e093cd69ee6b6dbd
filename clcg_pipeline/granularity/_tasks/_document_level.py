"""Document-level tasks: the source's own summary, and one translation excerpt per region."""

from __future__ import annotations

from clcg_pipeline.corpus import count_tokens
from clcg_pipeline.granularity._documents import THIRDS
from clcg_pipeline.granularity._tasks._base import OUTPUT_FACTOR, TaskBuilder, rng


def add_summary(builder: TaskBuilder) -> None:
    if not builder.doc.summary:
        builder.reject(
            "summary",
            [],
            None,
            None,
            "no_source_summary",
            "the document has no summary of its own (assembled documents never do; member "
            "articles' titles or leads would summarise an article, not the document)",
        )
        return
    n = count_tokens([builder.doc.summary], builder.tokenizer)[0]
    builder.tasks.append(
        builder.task(
            "summary",
            [],
            question="Summarise the document.",
            gold=builder.doc.summary,
            evidence_pids=list(builder.doc.paras["pid"]),
            max_output_tokens=max(256, OUTPUT_FACTOR * n),
            builder="source-summary-v1",
            answer_type="summary",
        )
    )


def add_translation(builder: TaskBuilder) -> None:
    limit = builder.settings.translation_excerpt_tokens
    for region in THIRDS:
        rows = builder.cell(region).sort_values("ordinal").to_dict("records")
        counts = count_tokens([r["text"] for r in rows], builder.tokenizer)
        starts = list(range(len(rows)))
        rng(builder.settings.seed, builder.doc.doc_id, "translation", region).shuffle(starts)
        excerpt: list[int] = []
        for start in starts:
            if counts[start] > limit:
                continue
            excerpt, total = [start], counts[start]
            for j in range(start + 1, len(rows)):
                if total + counts[j] > limit:
                    break
                excerpt.append(j)
                total += counts[j]
            break
        if not excerpt:
            builder.reject(
                "translation",
                [region],
                region,
                None,
                "excerpt_too_long",
                f"region {region}: every paragraph exceeds {limit} English tokens",
            )
            continue
        pids = [rows[j]["pid"] for j in excerpt]
        total = sum(counts[j] for j in excerpt)
        builder.tasks.append(
            builder.task(
                "translation",
                pids,
                region=region,
                question="\n\n".join(rows[j]["text"] for j in excerpt),
                gold=None,
                evidence_pids=pids,
                max_output_tokens=max(128, OUTPUT_FACTOR * total),
                builder="rule-translation-v1",
                answer_type="translation",
            )
        )
