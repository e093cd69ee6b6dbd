"""Benchmark the sentence splitter on a 128K-token document in each script of the panel (and a few more).

For every script, builds one document of ``--tokens`` cl100k_base tokens (paragraphs of four
sentences) and times splitting every paragraph, as the task builder does, with the splitter in
``clcg_pipeline.granularity._documents`` (sentencex plus the project's rules) and, in the same
run on the same text, the regex-only splitter it replaced (copied below as the baseline).
Reports ms per document (best of ``--repeats``), the ratio new / old, and the sentences each
found per paragraph (the new one must find all four in every script).

    .venv/bin/python bench/bench_sentences.py [--tokens 128000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from clcg_pipeline.corpus import count_tokens
from clcg_pipeline.granularity import split_sentences

# Per script: a sentence with slots {i} {j} so no two sentences of a document are equal.
SENTENCES: dict[str, str] = {
    "Latn": "In {i}, the cooperative replaced {j} metres of old pipe under the market square.",
    "Geor": "{i} წელს კოოპერატივმა ბაზრის მოედნის ქვეშ {j} მეტრი ძველი მილი შეცვალა.",
    "Deva": "सन् {i} मा सहकारीले बजार चोकमुनि {j} मिटर पुरानो पाइप बदल्यो।",
    "Ethi": "በ{i} ዓ.ም ማህበሩ በገበያው አደባባይ ስር {j} ሜትር አሮጌ ቧንቧ ቀየረ።",
    "Arab": "في عام {i} استبدلت التعاونية {j} مترا من الأنابيب القديمة تحت ساحة السوق.",
    "Cyrl": "В {i} году кооператив заменил {j} метров старых труб под рыночной площадью.",
    "Hans": "{i}年，合作社更换了市场广场下{j}米的旧管道。",
}
PER_PARAGRAPH = 4

# The regex-only splitter before sentencex (granularity/_documents/_sentences.py at issue 20).
_OLD_END = re.compile(r"[.!?…。][\"'”’»“)\]]*\s+")
_OLD_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "no", "nos", "vs", "etc", "e.g", "i.e", "fig"}
    | {"sr", "jr", "co", "ltd", "inc", "dept", "approx", "sra", "dra"}
)


def _old_starts(rest: str) -> bool:
    head = rest.lstrip("\"'“‘«„([ ")
    if not head:
        return False
    ch = head[0]
    return ch.isdigit() or (ch.isalpha() and (not ch.islower() or "\u10d0" <= ch <= "\u10ff"))


def old_split(text: str) -> list[str]:
    out: list[str] = []
    start = 0
    for match in _OLD_END.finditer(text):
        if not _old_starts(text[match.end() :]):
            continue
        words = text[start : match.start()].split()
        last = words[-1].lower() if words else ""
        if last in _OLD_ABBREVIATIONS or (len(last) == 1 and text[match.start() - 1].isupper()):
            continue
        if text[start : match.end()].strip():
            out.append(text[start : match.end()].strip())
        start = match.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def document(script: str, tokens: int) -> list[str]:
    """Paragraphs of one script's sentences until the document holds ``tokens`` tokens."""
    sentence = SENTENCES[script]
    joiner = "" if script == "Hans" else " "
    paragraphs: list[str] = []
    total, n = 0, PER_PARAGRAPH
    while total < tokens:
        first = len(paragraphs)
        batch = [
            joiner.join(sentence.format(i=1900 + k + j, j=k * PER_PARAGRAPH + j) for j in range(n))
            for k in range(first, first + 50)
        ]
        paragraphs.extend(batch)
        total += sum(count_tokens(batch))
    return paragraphs


def best_ms(split: Callable[[str], list[str]], paragraphs: list[str], repeats: int) -> tuple[float, float]:
    """(best wall in ms, mean sentences per paragraph) of splitting every paragraph."""
    walls = []
    found = 0
    for _ in range(repeats):
        started = time.perf_counter()
        found = sum(len(split(p)) for p in paragraphs)
        walls.append((time.perf_counter() - started) * 1000)
    return min(walls), found / len(paragraphs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=128_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    ok = True
    print(f"{'script':6} {'paras':>6} {'old ms':>8} {'new ms':>8} {'ratio':>6} {'old s/p':>8} {'new s/p':>8}")
    for script in SENTENCES:
        paragraphs = document(script, args.tokens)
        old_ms, old_found = best_ms(old_split, paragraphs, args.repeats)
        new_ms, new_found = best_ms(split_sentences, paragraphs, args.repeats)
        ok = ok and new_found == PER_PARAGRAPH
        print(
            f"{script:6} {len(paragraphs):6d} {old_ms:8.1f} {new_ms:8.1f} {new_ms / old_ms:5.1f}x "
            f"{old_found:8.2f} {new_found:8.2f}"
        )
    print("PASS" if ok else f"FAIL: the new splitter missed sentences (want {PER_PARAGRAPH} per paragraph)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
