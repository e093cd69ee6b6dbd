"""The judges' order bias and self-preference per language and per script (issue 19, item 7).

Multilingual LLM judges are known to be less reliable on low-resource languages, which the pooled
flip rate and self-preference can hide. Each breakdown is the pooled computation on the pairs of
one target language (both sides of a pair belong to its target language, as in the pooled
estimates), or of every language written in one script (``Language.script`` of the panel
config). The analysis's one article bootstrap is shared, so a group is resampled with the same
articles as the pooled estimate; a group carried by fewer than ``study.min_articles`` articles
keeps its estimate as a description, with the interval withheld (``identifiable: False``, a reason).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from clcg_pipeline.analysis import ClusterBootstrap, withheld_caveat
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.validation.taxonomy._inputs import AnalysisInputs
from clcg_pipeline.validation.taxonomy._judges import OrderFlips, flip_rate_entry, self_preference_rows
from clcg_pipeline.validation.taxonomy._label_set import Taxonomy

#: The script of a language that is not in the panel config.
UNKNOWN_SCRIPT = "unknown"
#: The results keys of the breakdowns (each a list of records shaped like the pooled ones).
BY_GROUP_KEYS = (
    "order_bias_by_language",
    "order_bias_by_script",
    "self_preference_by_language",
    "self_preference_by_script",
)


@dataclass(frozen=True)
class Group:
    """One language or one script: its fields in a record, its languages and its estimates-table group."""

    head: dict[str, Any]
    languages: frozenset[str]
    label: str


def scripts_of(config: ProjectConfig) -> dict[str, str]:
    """Language iso -> ISO 15924 script, from the panel config."""
    return {lang.iso: lang.script for lang in config.languages.languages}


def groups_of(languages: Sequence[str], scripts: Mapping[str, str]) -> tuple[list[Group], list[Group]]:
    """The language groups and the script groups of ``languages`` (sorted)."""
    script = {lang: scripts.get(lang, UNKNOWN_SCRIPT) for lang in sorted(set(languages))}
    by_language = [
        Group({"language": lang, "script": s}, frozenset({lang}), f"language={lang}")
        for lang, s in script.items()
    ]
    by_script = []
    for s in sorted(set(script.values())):
        members = sorted(lang for lang, of in script.items() if of == s)
        by_script.append(Group({"script": s, "languages": members}, frozenset(members), f"script={s}"))
    return by_language, by_script


def judge_checks_by_group(
    flips: OrderFlips | None,
    sides: pd.DataFrame,
    taxonomy: Taxonomy,
    inputs: AnalysisInputs,
    scripts: Mapping[str, str],
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
    caveats: list[str],
    self_preference: Sequence[Mapping[str, Any]] = (),
) -> dict[str, list[dict[str, Any]]]:
    """Order-bias flip rate and self-preference per language and per script, under ``BY_GROUP_KEYS``.

    ``self_preference`` (the pooled rows) limits that breakdown to the judges with an own-family
    contrast at all: a judge whose family evaluated no model (or every one) is unidentified in every
    group for the reason the pooled table already gives.
    """
    contrasted = {str(r["judge"]) for r in self_preference if r.get("difference") is not None}
    order_languages = [] if flips is None else flips.singles["language"].astype(str).tolist()
    order_lang, order_script = groups_of(order_languages, scripts)
    self_lang, self_script = groups_of(sides["language"].astype(str).tolist(), scripts)
    out = {
        "order_bias_by_language": _order_bias(flips, inputs.judges, order_lang, boot, est),
        "order_bias_by_script": _order_bias(flips, inputs.judges, order_script, boot, est),
        "self_preference_by_language": _self_preference(
            sides, taxonomy, inputs, self_lang, boot, est, contrasted
        ),
        "self_preference_by_script": _self_preference(
            sides, taxonomy, inputs, self_script, boot, est, contrasted
        ),
    }
    caveats.extend(_caveats(out, [*order_languages, *sides["language"].astype(str)], scripts, inputs))
    return out


def _order_bias(
    flips: OrderFlips | None,
    judges: Sequence[str],
    groups: list[Group],
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    if flips is None:
        return []
    return [
        {
            "judge": judge,
            **g.head,
            **flip_rate_entry(flips, judge, boot, est, group=g.label, languages=g.languages),
        }
        for g in groups
        for judge in judges
    ]


def _self_preference(
    sides: pd.DataFrame,
    taxonomy: Taxonomy,
    inputs: AnalysisInputs,
    groups: list[Group],
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
    judges: Collection[str],
) -> list[dict[str, Any]]:
    """Self-preference of ``judges`` per group; every judge still enters the others' excess."""
    out = []
    for g in groups:
        mine = sides[sides["language"].astype(str).isin(g.languages)]
        rows: list[dict[str, Any]] = []
        # The pooled caveat ("no evaluated model shares a judge's family") is said once, not per group.
        for entry in self_preference_rows(mine, taxonomy, inputs, boot, rows, [], group=g.label):
            if entry["judge"] in judges:
                out.append({"judge": entry["judge"], **g.head, **entry})
        est.extend(r for r in rows if r["judge"] in judges)
    return out


def _caveats(
    out: Mapping[str, list[dict[str, Any]]],
    languages: Sequence[str],
    scripts: Mapping[str, str],
    inputs: AnalysisInputs,
) -> list[str]:
    """Languages off the panel, and breakdowns whose groups are too small for an interval."""
    notes = []
    unknown = sorted({lang for lang in languages if lang not in scripts})
    if unknown:
        notes.append(
            f"judge checks by script: language(s) {unknown} are not in the panel config, so their script "
            f"is {UNKNOWN_SCRIPT!r}"
        )
    for key, records in out.items():
        # Which records the rule withheld, and the words for it, are the rule's own (analysis).
        note = withheld_caveat(key.replace("_", " "), records, inputs.min_articles)
        if note is not None:
            notes.append(note)
    return notes
