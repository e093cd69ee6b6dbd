"""Seeded synthetic ``scores`` panels with a known gap structure, for tests and benchmarks.

Scores follow ``clip(base + article + item + model - gap_l * model_scale + noise, 0, 1)`` with
``gap_l`` decreasing in Joshi class, so the true ordering of languages is known.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from clcg_pipeline.config import LanguagesConfig, ModelsConfig, ModelSpec, ProjectConfig

LEVEL_NAMES = ("L0", "L1", "L2", "L3", "L4", "L5")

# Knowledge cutoffs chosen so H2 is identifiable for most models and not for the last one
# (every synthetic article precedes its cutoff).
_CUTOFFS = (
    dt.date(2023, 6, 1),
    dt.date(2023, 12, 1),
    dt.date(2024, 6, 1),
    dt.date(2024, 12, 1),
    dt.date(2030, 1, 1),
)


def synthetic_models(n_models: int = 5) -> ModelsConfig:
    """Offline model specs ``model-a``, ``model-b``... with staggered knowledge cutoffs."""
    return ModelsConfig(
        models=[
            ModelSpec(
                id=f"model-{chr(ord('a') + i)}",
                provider="offline",
                model="synthetic",
                knowledge_cutoff=_CUTOFFS[i % len(_CUTOFFS)],
            )
            for i in range(n_models)
        ]
    )


def synthetic_config(base: ProjectConfig, n_models: int = 5) -> ProjectConfig:
    """``base`` with its models replaced by :func:`synthetic_models`."""
    return base.model_copy(update={"models": synthetic_models(n_models)})


def language_gaps(languages: LanguagesConfig, scale: float = 0.02) -> dict[str, float]:
    """True per-language gap used by the generator: 0 for the reference, rising as class falls."""
    gaps: dict[str, float] = {}
    for lang in languages.languages:
        if lang.role == "reference":
            gaps[lang.iso] = 0.0
            continue
        cls = lang.joshi_class if lang.joshi_class is not None else (lang.joshi_class_sensitivity or 1)
        gaps[lang.iso] = scale * (6 - cls)
    return gaps


def synthetic_scores(
    languages: LanguagesConfig,
    *,
    n_models: int = 5,
    n_articles: int = 150,
    n_stability: int = 40,
    items_per_level: int = 4,
    human_per_article: int = 15,
    failure_rate: float = 0.02,
    probe_articles: int = 10,
    closed_book: bool = True,
    gap_scale: float = 0.02,
    noise: float = 0.2,
    seed: int = 0,
) -> pd.DataFrame:
    """A ``scores`` frame: every model x language x article x repetition x item.

    The first ``n_stability`` articles have three repetitions. An optional language (Basque
    in the default panel) misses a third of the articles. ``probe_articles`` articles also get
    ``item_grounded`` rows; with ``closed_book`` the study's selector items get closed-book rows.
    """
    rng = np.random.default_rng(seed)
    isos = languages.isos
    gaps = language_gaps(languages, gap_scale)
    lang_gap = np.array([gaps[i] for i in isos])
    models = [m.id for m in synthetic_models(n_models).models]
    doc_ids = np.array([str(i + 1) for i in range(n_articles)], dtype=object)
    item_src, item_lvl, item_suffix = _item_layout(items_per_level, human_per_article)
    n_items = len(item_lvl)

    unit_art, unit_rep, unit_item = _unit_rows(n_articles, n_stability, n_items)
    row_unit, row_model, row_lang = _cell_rows(len(unit_art), len(models), len(isos))
    frame = _score_rows(
        rng,
        art=unit_art[row_unit],
        item=unit_item[row_unit],
        rep=unit_rep[row_unit],
        model=row_model,
        lang=row_lang,
        n_articles=n_articles,
        n_items=n_items,
        item_lvl=item_lvl,
        lang_gap=lang_gap,
        noise=noise,
        failure_rate=failure_rate,
    )
    frame["scope"] = 0
    parts = [frame]
    if probe_articles > 0:
        parts.append(_probe_rows(frame, item_lvl, lang_gap, probe_articles))
    if closed_book:
        parts.append(_closed_book_rows(frame, item_suffix, isos.index(languages.reference)))
    allrows = _drop_optional(pd.concat(parts, ignore_index=True), languages)
    return _scores_frame(
        allrows,
        models=models,
        isos=isos,
        doc_ids=doc_ids,
        item_src=item_src,
        item_lvl=item_lvl,
        item_suffix=item_suffix,
    )


def _item_layout(items_per_level: int, human_per_article: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item_source, level, id suffix) of each of an article's items: llm items per level, then human ones."""
    per_article_items: list[tuple[str, str, str]] = []
    for lvl in LEVEL_NAMES:
        for k in range(items_per_level):
            per_article_items.append(("llm", lvl, f"llm-{lvl}-{k}"))
    human_levels = ("L1", "L2", "L3", "L4", "L5")
    for k in range(human_per_article):
        per_article_items.append(("human", human_levels[k % len(human_levels)], f"hum-{k:02d}"))
    item_src = np.array([s for s, _, _ in per_article_items], dtype=object)
    item_lvl = np.array([lvl for _, lvl, _ in per_article_items], dtype=object)
    item_suffix = np.array([name for _, _, name in per_article_items], dtype=object)
    return item_src, item_lvl, item_suffix


def _unit_rows(n_articles: int, n_stability: int, n_items: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(article, repetition, item) index of each unit: one per article x repetition x item."""
    reps_per_article = np.where(np.arange(n_articles) < n_stability, 3, 1)
    art_idx = np.repeat(np.arange(n_articles), reps_per_article)
    rep_no = np.concatenate([np.arange(r) for r in reps_per_article])
    unit_art = np.repeat(art_idx, n_items)
    unit_rep = np.repeat(rep_no, n_items)
    unit_item = np.tile(np.arange(n_items), len(art_idx))
    return unit_art, unit_rep, unit_item


def _cell_rows(n_units: int, n_models: int, n_langs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit, model, language) index of each row: every unit crossed with model x language."""
    row_unit = np.tile(np.arange(n_units), n_models * n_langs)
    row_model = np.repeat(np.arange(n_models), n_langs * n_units)
    row_lang = np.tile(np.repeat(np.arange(n_langs), n_units), n_models)
    return row_unit, row_model, row_lang


def _probe_rows(
    frame: pd.DataFrame, item_lvl: np.ndarray, lang_gap: np.ndarray, probe_articles: int
) -> pd.DataFrame:
    """``item_grounded`` rows: L3-L5 items of the first repetition of the first ``probe_articles``."""
    probe = frame[(frame["art"] < probe_articles) & (frame["rep"] == 0)].copy()
    probe = probe[np.isin(item_lvl[probe["item"]], ["L3", "L4", "L5"])]
    # Linked paragraphs only: a little harder, and harder still away from English.
    shift = 0.03 + 0.3 * lang_gap[probe["lang"]]
    probe["token_f1"] = np.clip(probe["token_f1"] - shift, 0, 1)
    probe["scope"] = 1
    return probe


def _closed_book_rows(frame: pd.DataFrame, item_suffix: np.ndarray, reference: int) -> pd.DataFrame:
    """``closed_book`` rows: the selector items (two per level L3-L5) of six articles, in the reference."""
    sel = frame[(frame["art"] < 6) & (frame["rep"] == 0) & (frame["lang"] == reference)]
    sel = sel[
        np.isin(item_suffix[sel["item"]], [f"llm-{lvl}-{k}" for lvl in ("L3", "L4", "L5") for k in (0, 1)])
    ]
    cb = sel.copy()
    cb["token_f1"] = np.clip(cb["token_f1"] * 0.5, 0, 1)
    cb["scope"] = 2
    return cb


def _drop_optional(allrows: pd.DataFrame, languages: LanguagesConfig) -> pd.DataFrame:
    """Without every third article of the optional languages."""
    optional = [i for i, lang in enumerate(languages.languages) if lang.optional]
    if optional:
        drop = np.isin(allrows["lang"], optional) & (allrows["art"] % 3 == 2)
        allrows = allrows.loc[~drop]
    return allrows


def _scores_frame(
    allrows: pd.DataFrame,
    *,
    models: list[str],
    isos: list[str],
    doc_ids: np.ndarray,
    item_src: np.ndarray,
    item_lvl: np.ndarray,
    item_suffix: np.ndarray,
) -> pd.DataFrame:
    """The index rows as a ``scores`` frame (labels for the indices, the other metrics from token F1)."""
    scopes = np.array(["full_body", "item_grounded", "closed_book"], dtype=object)
    statuses = np.array(["ok", "unparseable", "missing"], dtype=object)
    art = allrows["art"].to_numpy()
    item = allrows["item"].to_numpy()
    out = pd.DataFrame(
        {
            "model": pd.Categorical.from_codes(allrows["model"].to_numpy(), categories=models),
            "language": pd.Categorical.from_codes(allrows["lang"].to_numpy(), categories=isos),
            "doc_id": doc_ids[art],
            "item_id": doc_ids[art] + "-" + item_suffix[item],
            "rep": allrows["rep"].to_numpy().astype(np.int64),
            "context_scope": scopes[allrows["scope"].to_numpy()],
            "level": item_lvl[item],
            "item_source": item_src[item],
            "token_f1": allrows["token_f1"].to_numpy(),
            "exact_match": (allrows["token_f1"].to_numpy() > 0.9).astype(np.float64),
            "accuracy": allrows["accuracy"].to_numpy(),
            "rouge_l": allrows["token_f1"].to_numpy() * 0.95,
            "semsim": np.full(len(allrows), np.nan),
            "status": statuses[allrows["status"].to_numpy()],
        }
    )
    return out.reset_index(drop=True)


def _score_rows(
    rng: np.random.Generator,
    *,
    art: np.ndarray,
    item: np.ndarray,
    rep: np.ndarray,
    model: np.ndarray,
    lang: np.ndarray,
    n_articles: int,
    n_items: int,
    item_lvl: np.ndarray,
    lang_gap: np.ndarray,
    noise: float,
    failure_rate: float,
) -> pd.DataFrame:
    n = len(art)
    art_eff = rng.normal(0, 0.08, n_articles)
    item_eff = rng.normal(0, 0.1, (n_articles, n_items))
    model_eff = np.linspace(-0.05, 0.05, max(model.max() + 1, 1))
    model_scale = np.linspace(0.8, 1.3, max(model.max() + 1, 1))
    level_idx = np.array([int(lvl[1]) for lvl in item_lvl])
    mean = (
        0.62
        - 0.04 * level_idx[item]
        + art_eff[art]
        + item_eff[art, item]
        + model_eff[model]
        - lang_gap[lang] * model_scale[model]
    )
    f1 = np.clip(mean + rng.normal(0, noise, n).astype(np.float64), 0.0, 1.0)
    accuracy = (rng.random(n) < np.clip(mean + 0.2, 0, 1)).astype(np.float64)
    status = np.zeros(n, dtype=np.int64)
    fails = rng.random(n) < failure_rate
    status[fails] = rng.integers(1, 3, int(fails.sum()))
    f1[fails] = 0.0
    accuracy[fails] = 0.0
    return pd.DataFrame(
        {
            "art": art,
            "item": item,
            "rep": rep,
            "model": model,
            "lang": lang,
            "token_f1": f1,
            "accuracy": accuracy,
            "status": status,
        }
    )


def synthetic_articles(n_articles: int = 150, *, seed: int = 0) -> pd.DataFrame:
    """``articles``-style frame (doc_id, published) with dates spread over 2022-2025."""
    rng = np.random.default_rng(seed + 1)
    start = np.datetime64("2022-01-01")
    days = rng.integers(0, 4 * 365, n_articles)
    return pd.DataFrame(
        {
            "doc_id": [str(i + 1) for i in range(n_articles)],
            "published": (start + days.astype("timedelta64[D]")).astype("datetime64[D]"),
        }
    )


def synthetic_fertility(languages: LanguagesConfig, *, seed: int = 0) -> pd.DataFrame:
    """``fertility``-style frame: higher for non-Latin scripts and lower-resource languages."""
    rng = np.random.default_rng(seed + 2)
    rows = []
    for lang in languages.languages:
        cls = lang.joshi_class if lang.joshi_class is not None else 1
        value = 1.0 if lang.role == "reference" else 1.3 + 0.15 * (5 - cls) + (0.8 if lang.non_latin else 0.0)
        rows.append({"language": lang.iso, "fertility": float(value + rng.normal(0, 0.05))})
    return pd.DataFrame(rows)
