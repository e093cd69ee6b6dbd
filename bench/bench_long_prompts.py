"""Benchmark prompt building and token counting of a 128K-token long document in each script.

One synthetic document of about 128,000 English tokens (cl100k_base) with a version per script
(the same paragraphs, as many made-up words in the script's letters). For each version it times
the token count of the whole text, and the build of its task prompts through ``plan_tasks``
(render, bind, and the context-window check, which counts the prompt's tokens) for a hosted
model: the first prompt (cold) and the mean of nine more tasks on the same document (the
paragraphs' counts are remembered). Figures are also given as ratios to English in the same run.

    .venv/bin/python bench/bench_long_prompts.py [--tokens 128000] [--tasks 10]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import pandas as pd

# ISO 15924 script -> code points of its made-up words (Latn is English from a small vocabulary).
SCRIPTS = {
    "Latn": None,
    "Cyrl": (0x430, 0x44F),
    "Arab": (0x627, 0x64A),
    "Deva": (0x915, 0x939),
    "Ethi": (0x1200, 0x1357),
    "Geor": (0x10D0, 0x10F0),
    "Hani": (0x4E00, 0x9FFF),
    "Thai": (0xE01, 0xE2E),
}
_ENGLISH = (
    "the council voted to rebuild the old bridge after years of complaints from farmers and "
    "fishermen who crossed the river every morning with their goods for the market in town"
)


def paragraph(rng: random.Random, script: str, n_words: int) -> str:
    """One paragraph of ``n_words`` words in ``script`` (CJK: no spaces between words)."""
    span = SCRIPTS[script]
    if span is None:
        vocabulary = _ENGLISH.split()
        return " ".join(rng.choice(vocabulary) for _ in range(n_words)) + "."
    low, high = span
    words = ["".join(chr(rng.randint(low, high)) for _ in range(rng.randint(2, 7))) for _ in range(n_words)]
    return ("" if script == "Hani" else " ").join(words) + ("。" if script == "Hani" else ".")


def long_paragraphs(english_tokens: int, count_tokens: object) -> pd.DataFrame:
    """``long_paragraphs`` rows of one document, a version per script (language = script code)."""
    rng = random.Random(7)
    rows, total, k = [], 0, 0
    while total < english_tokens:
        k += 1
        n_words = rng.randint(60, 140)
        for script in SCRIPTS:
            text = paragraph(rng, script, n_words)
            if script == "Latn":
                total += count_tokens(text)  # type: ignore[operator]
            rows.append(
                {"doc_id": "long-1", "language": script, "pid": f"p{k:04d}", "ordinal": k, "text": text}
            )
    return pd.DataFrame(rows)


def word_tasks(n: int) -> pd.DataFrame:
    base = {"doc_id": "long-1", "task": "word_single_qa", "gold": "bridge", "options": [], "blank_pids": []}
    return pd.DataFrame(
        [
            base
            | {"task_id": f"t{i}", "group_id": f"t{i}", "question": f"Question {i}: what was rebuilt?"}
            | {"max_output_tokens": 16, "bucket": "120K-128K"}
            for i in range(n)
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=128_000)
    parser.add_argument("--tasks", type=int, default=10)
    args = parser.parse_args()

    from clcg_pipeline.calls import count_tokens
    from clcg_pipeline.config import GranularitySettings, ModelSpec
    from clcg_pipeline.granularity import plan_tasks

    model = ModelSpec(
        id="hosted",
        provider="openai_compatible",
        model="long-v1",
        base_url="http://127.0.0.1:9/v1",
        context_window=4_000_000,
    )
    settings = GranularitySettings(enabled=True, contexts=["full"])
    frame = long_paragraphs(args.tokens, count_tokens)
    figures: dict[str, dict[str, float]] = {}
    for script in SCRIPTS:
        own = frame[frame["language"] == script]
        text = "\n\n".join(own["text"])
        t0 = time.perf_counter()
        n_tokens = count_tokens(text)
        count_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        first = plan_tasks(
            model=model, language=script, paragraphs=own, tasks=word_tasks(1), settings=settings
        )
        cold_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        more = plan_tasks(
            model=model, language=script, paragraphs=own, tasks=word_tasks(args.tasks), settings=settings
        )
        warm_s = (time.perf_counter() - t0) / len(more)
        assert first[0].refused is None and len(more) == args.tasks
        figures[script] = {
            "document_tokens": n_tokens,
            "count_s": count_s,
            "first_prompt_s": cold_s,
            "per_prompt_s_remembered": warm_s,
            "bytes": len(text.encode("utf-8")),
        }
    english = figures["Latn"]
    head = ("script", "tokens", "x en", "count s", "x en", "1st prompt s", "x en", "next s", "x en")
    print("{:6} {:>10} {:>6} {:>8} {:>6} {:>12} {:>6} {:>8} {:>6}".format(*head))
    for script, f in figures.items():
        ratios = [f[key] / english[key] for key in ("document_tokens", "count_s", "first_prompt_s")]
        ratios.append(f["per_prompt_s_remembered"] / english["per_prompt_s_remembered"])
        print(
            f"{script:6} {f['document_tokens']:>10,} {ratios[0]:>6.2f} {f['count_s']:>8.3f} "
            f"{ratios[1]:>6.2f} {f['first_prompt_s']:>12.3f} {ratios[2]:>6.2f} "
            f"{f['per_prompt_s_remembered']:>8.4f} {ratios[3]:>6.2f}"
        )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
