"""A project with the granularity tasks on, over a small panel: the config the analysis tests share."""

from __future__ import annotations

from typing import Any

from clcg_pipeline.config import LanguagesConfig, ProjectConfig, load_config

#: English reference, a high-resource baseline and two targets far apart in resources.
FOUR_LANGUAGES = (
    ("en", "English", 5, "reference"),
    ("pt", "Portuguese", 4, "baseline"),
    ("sw", "Swahili", 2, "target"),
    ("fon", "Fon", 0, "target"),
)


def granularity_config(
    panel: tuple[tuple[str, str, int, str], ...] = FOUR_LANGUAGES, *, min_articles: int = 10
) -> ProjectConfig:
    """The shipped config with the granularity tasks on and ``panel`` (iso, name, Joshi class, role)."""
    base = load_config("assets_config")
    languages = LanguagesConfig.model_validate(
        {
            "languages": [
                {"iso": iso, "name": name, "script": "Latn", "joshi_class": joshi, "role": role}
                for iso, name, joshi, role in panel
            ]
        }
    )
    granularity = base.study.granularity.model_copy(update={"enabled": True})
    study = base.study.model_copy(update={"granularity": granularity, "min_articles": min_articles})
    return base.model_copy(update={"languages": languages, "study": study})


def one(rows: list[dict[str, Any]], **where: Any) -> dict[str, Any]:
    """The single row of ``rows`` matching ``where``."""
    hits = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    assert len(hits) == 1, (where, len(hits))
    return hits[0]
