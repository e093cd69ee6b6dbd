from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clcg_pipeline.config import LanguagesConfig, StudyConfig, load_config


@pytest.fixture(scope="session")
def project():
    from clcg_pipeline.synthetic import synthetic_config

    return synthetic_config(load_config("assets_config"))


@pytest.fixture(scope="session")
def small_langs() -> LanguagesConfig:
    return LanguagesConfig.model_validate(
        {
            "languages": [
                {"iso": "en", "name": "English", "script": "Latn", "joshi_class": 5, "role": "reference"},
                {"iso": "pt", "name": "Portuguese", "script": "Latn", "joshi_class": 4, "role": "baseline"},
                {"iso": "sw", "name": "Swahili", "script": "Latn", "joshi_class": 2, "role": "target"},
                {"iso": "am", "name": "Amharic", "script": "Ethi", "joshi_class": 2, "role": "target"},
                {"iso": "fon", "name": "Fon", "script": "Latn", "joshi_class": 0, "role": "target"},
            ]
        }
    )


def small_config(project, small_langs: LanguagesConfig, n_models: int, replicates: int, seed: int = 42):
    """The synthetic project on the five-language panel, with ``n_models`` models."""
    from clcg_pipeline.synthetic import synthetic_config

    return synthetic_config(project, n_models=n_models).model_copy(
        update={"languages": small_langs, "study": StudyConfig(bootstrap_replicates=replicates, seed=seed)}
    )


def band_scores(languages: LanguagesConfig, n_models: int, n_articles: int, seed: int) -> pd.DataFrame:
    """Synthetic scores of the primary band only: no stability, human, probe or closed-book rows."""
    from clcg_pipeline.synthetic import synthetic_scores

    return synthetic_scores(
        languages,
        n_models=n_models,
        n_articles=n_articles,
        n_stability=0,
        items_per_level=2,
        human_per_article=0,
        probe_articles=0,
        closed_book=False,
        seed=seed,
    )


@pytest.fixture(scope="session")
def study() -> StudyConfig:
    return StudyConfig(bootstrap_replicates=300)


def make_scores(seed: int = 0, n_docs: int = 12, models: tuple[str, ...] = ("m1", "m2")) -> pd.DataFrame:
    """Small unbalanced band panel with some failures and off-band rows."""
    rng = np.random.default_rng(seed)
    rows = []
    langs = ["en", "pt", "sw", "am", "fon"]
    shift = {"en": 0.0, "pt": 0.03, "sw": 0.08, "am": 0.1, "fon": 0.15}
    for d in range(n_docs):
        n_items = int(rng.integers(2, 6))
        for m in models:
            for lang in langs:
                if lang == "am" and d % 4 == 0:
                    continue  # unbalanced coverage
                for i in range(n_items):
                    lvl = ["L3", "L4", "L5"][i % 3]
                    f1 = float(np.clip(0.6 - shift[lang] + rng.normal(0, 0.2), 0, 1))
                    status = "ok" if rng.random() > 0.1 else str(rng.choice(["unparseable", "missing"]))
                    rows.append((m, lang, f"d{d}", f"d{d}-i{i}", 0, "full_body", lvl, "llm", f1, status))
                # off-band rows must never enter the band
                rows.append((m, lang, f"d{d}", f"d{d}-h", 0, "full_body", "L3", "human", 0.99, "ok"))
                rows.append((m, lang, f"d{d}", f"d{d}-l1", 0, "full_body", "L1", "llm", 0.99, "ok"))
                rows.append((m, lang, f"d{d}", f"d{d}-i0", 0, "closed_book", "L3", "llm", 0.99, "ok"))
    frame = pd.DataFrame(
        rows,
        columns=[
            "model",
            "language",
            "doc_id",
            "item_id",
            "rep",
            "context_scope",
            "level",
            "item_source",
            "token_f1",
            "status",
        ],
    )
    frame["exact_match"] = (frame["token_f1"] > 0.9).astype(float)
    frame["accuracy"] = frame["exact_match"]
    frame["rouge_l"] = frame["token_f1"]
    frame["semsim"] = np.nan
    return frame


def write_score_file(
    path: Path, rows: int, semsim: list[float | None] | None = None, row_group_size: int | None = None
) -> Path:
    """A scores Parquet file of ``rows`` rows (three models, two languages, four articles) at
    ``path``; ``semsim`` has no value unless given (a study run without it), ``accuracy`` none."""
    frame = pd.DataFrame(
        {
            "model": [f"m{i % 3}" for i in range(rows)],
            "language": ["en", "sw"] * (rows // 2),
            "doc_id": [f"d{i % 4}" for i in range(rows)],
            "item_id": [f"i{i}" for i in range(rows)],
            "rep": [0] * rows,
            "context_scope": ["full_body"] * rows,
            "level": ["L3"] * rows,
            "item_source": ["llm"] * rows,
            "status": ["ok"] * rows,
            "token_f1": np.linspace(0, 1, rows),
            "accuracy": [np.nan] * rows,
            "rouge_l": np.linspace(1, 0, rows),
            "semsim": np.array(semsim if semsim is not None else [None] * rows, dtype=np.float64),
        }
    )
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=row_group_size)
    return path
