"""Benchmark ``clcg release`` and ``clcg reconstruct`` at study scale (~860,000 scored rows).

Writes a seeded synthetic corpus (bench/synthetic_corpus.py, plus two source-authored questions
per article) and a data folder from it: the corpus tables as the pipeline stores them, and
``scores`` and ``predictions`` for 5 models x 7 languages x every item (1% of the responses
copy a whole paragraph, as a paragraph-filling answer can). No human-validation tables (their
size does not scale with the scores). Then times the release build and the reconstruction and
checks the rebuilt scores and predictions equal the originals.

    .venv/bin/python bench/bench_release.py [--articles 950] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from synthetic_corpus import LANGUAGES, write_corpus  # noqa: E402

from clcg_pipeline.config import load_config  # noqa: E402
from clcg_pipeline.corpus import load_source  # noqa: E402
from clcg_pipeline.release import build_release, reconstruct_release  # noqa: E402
from clcg_pipeline.storage import partition_dir, write_frame  # noqa: E402

MODELS = tuple(f"model-{i}" for i in range(5))


def _config(root: Path, corpus: Path) -> Path:
    config = root / "config"
    shutil.copytree(ROOT / "assets_config", config)
    languages = yaml.safe_load((config / "languages.yaml").read_text())
    languages["languages"] = [lang for lang in languages["languages"] if lang["iso"] in LANGUAGES]
    (config / "languages.yaml").write_text(yaml.safe_dump(languages, allow_unicode=True))
    sources = {"sources": [{"name": "synthetic", "kind": "jsonl", "path": str(corpus), "role": "primary"}]}
    (config / "sources.yaml").write_text(yaml.safe_dump(sources))
    return config


def _add_human_questions(corpus: Path) -> None:
    """Two source-authored questions per article, on its English record (the canonical layout)."""
    path = corpus / "articles" / "en.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for a, record in enumerate(records):
        record["questions"] = [
            {
                "question_id": f"{record['doc_id']}-h{k}",
                "question": f"According to the reporter of article {a}, why did point {k} matter so much?",
                "answer": "Because the vote was close.",
                "pids": ["p01"],
            }
            for k in (1, 2)
        ]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def _data_folder(data: Path, config_dir: Path, rng: np.random.Generator) -> int:
    """The corpus tables, scores and predictions; returns the scored rows."""
    config = load_config(config_dir)
    corpus = load_source(config.sources.primary, config.languages)
    for iso in config.languages.isos:
        for name in ("articles", "paragraphs"):
            frame = getattr(corpus, name)
            write_frame(
                partition_dir(data, name, {"language": iso}) / "data.parquet",
                frame[frame["language"] == iso],
                contract=name,
            )
    write_frame(partition_dir(data, "items", None) / "data.parquet", corpus.items, contract="items")
    texts = corpus.paragraphs.set_index(["doc_id", "language"])["text"]
    items = corpus.items[["item_id", "doc_id", "level", "item_source"]]
    rows = 0
    for iso in config.languages.isos:
        for model in MODELS:
            frame = items.assign(model=model, language=iso, rep=0, context_scope="full_body")
            n = len(frame)
            f1 = rng.random(n)
            scores = frame.assign(
                token_f1=f1,
                exact_match=(f1 > 0.9).astype(float),
                accuracy=(f1 > 0.5).astype(float),
                rouge_l=f1,
                semsim=np.nan,
                status="ok",
            )
            write_frame(
                partition_dir(data, "scores", {"language": iso, "model": model}) / "data.parquet",
                scores,
                contract="scores",
            )
            answers = np.array([f"The answer is {x}" for x in rng.integers(0, 10_000, n)], dtype=object)
            copies = np.flatnonzero(rng.random(n) < 0.01)
            for i in copies:
                answers[i] = "It says: " + texts.loc[(frame["doc_id"].iloc[i], iso)].iloc[0]
            predictions = frame[["model", "language", "doc_id", "item_id", "rep", "context_scope"]].assign(
                answer=answers, status="ok", call_id="c"
            )
            write_frame(
                partition_dir(data, "predictions", {"language": iso, "model": model}) / "data.parquet",
                predictions,
                contract="predictions",
            )
            rows += n
    settings = {
        "code_version": {"package": "0.1.0", "git_commit": None},
        "generated_at": "2026-01-01T00:00:00+00:00",
        "config_hash": config.config_hash,
    }
    (data / "study_results.json").write_text(json.dumps({"settings": settings}, indent=2) + "\n")
    return rows


def _megabytes(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=950)
    parser.add_argument("--keep", type=Path, help="work here (kept) instead of a temporary folder")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="clcg-bench-release-"))
    root.mkdir(parents=True, exist_ok=True)
    corpus, data = root / "corpus", root / "data"
    write_corpus(corpus, articles=args.articles, paragraphs=10, items_per_level=4)
    _add_human_questions(corpus)
    config = _config(root, corpus)
    rows = _data_folder(data, config, np.random.default_rng(7))
    os.environ.setdefault("CLCG_RELEASE_KEY", "bench-key-0123456789")
    start = time.perf_counter()
    summary = build_release(data, config, root / "release")
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    rebuilt = reconstruct_release(root / "release", root / "rebuilt", source=str(corpus))
    rebuild_s = time.perf_counter() - start
    for table in ("scores", "predictions", "paragraphs"):
        for file in (data / table).rglob("*.parquet"):
            assert pq.read_table(root / "rebuilt" / file.relative_to(data)).equals(pq.read_table(file)), file
    figures = {
        "scored_rows": rows,
        "texts_redacted": summary.texts,
        "data_folder_mb": round(_megabytes(data), 1),
        "release_mb": round(summary.bytes / 1e6, 1),
        "release_files": summary.files,
        "build_s": round(build_s, 1),
        "reconstruct_s": round(rebuild_s, 1),
        "texts_restored": rebuilt.texts,
    }
    print(json.dumps(figures, indent=2))
    if args.keep is None:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
