"""Human-vs-judge Cohen's kappa per language and per script (issue 19, item 7).

The pooled kappa of ``_analysis._judge_section`` can hide a judge that agrees with the annotators
in high-resource languages and not in low-resource ones (multilingual LLM judges are known to
do so). The same rows (individual annotator x item, the study's unit) are split by the rated
response's language and by that language's script (``Language.script`` of the panel config);
each group keeps the pooled computation: ``cohen_kappa`` with its item-cluster bootstrap, and
below ``study.min_articles`` items the interval is withheld (``identifiable: False``, a reason).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.validation.human._agreement import cohen_kappa

#: The script of a rated language that is not in the panel config.
UNKNOWN_SCRIPT = "unknown"


def scripts_of(config: ProjectConfig) -> dict[str, str]:
    """Language iso -> ISO 15924 script, from the panel config."""
    return {lang.iso: lang.script for lang in config.languages.languages}


def kappa_by_language_and_script(
    rows: pd.DataFrame,
    scripts: Mapping[str, str],
    min_clusters: int,
    boot: Mapping[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Per judge, the kappa of each language and of each script, and the caveats they need.

    ``rows`` are ``judge_rows`` (``judge``, ``language``, ``task_id``, ``human``, ``judge_label``).
    """
    if rows.empty or "language" not in rows.columns:
        return [], [], []
    rows = rows.assign(language=rows["language"].astype(str))
    rows = rows.assign(script=rows["language"].map(lambda iso: scripts.get(iso, UNKNOWN_SCRIPT)))
    by_language = []
    for (judge, language), g in rows.groupby(["judge", "language"], sort=True):
        head = {"judge": str(judge), "language": str(language), "script": g["script"].iloc[0]}
        by_language.append({**head, **_kappa(g, min_clusters, boot)})
    by_script = []
    for (judge, script), g in rows.groupby(["judge", "script"], sort=True):
        head = {"judge": str(judge), "script": str(script), "languages": sorted(g["language"].unique())}
        by_script.append({**head, **_kappa(g, min_clusters, boot)})
    return by_language, by_script, _caveats(rows, by_language, by_script)


def _kappa(g: pd.DataFrame, min_clusters: int, boot: Mapping[str, Any]) -> dict[str, Any]:
    """The pooled computation on one group's rows (the same clusters, rule and bootstrap)."""
    return cohen_kappa(g["human"], g["judge_label"], clusters=g["task_id"], min_clusters=min_clusters, **boot)


def _caveats(
    rows: pd.DataFrame,
    by_language: list[dict[str, Any]],
    by_script: list[dict[str, Any]],
) -> list[str]:
    """What the breakdown cannot say: languages off the panel, groups too small for an interval."""
    out = []
    unknown = sorted(rows.loc[rows["script"] == UNKNOWN_SCRIPT, "language"].unique())
    if unknown:
        out.append(
            f"human vs judge kappa by script: language(s) {unknown} are not in the panel config, so their "
            f"script is {UNKNOWN_SCRIPT!r}"
        )
    for what, records in (("language", by_language), ("script", by_script)):
        # The rule decided per group (``_agreement.withhold``) and its row says why; the caveat
        # counts those rows without restating the reason, so the report says it once, on the row.
        few = [r for r in records if r.get("identifiable") is False and r.get("reason")]
        if few:
            out.append(
                f"human vs judge kappa by {what}: {len(few)} of {len(records)} judge x {what} group(s) are "
                "not identifiable (each row gives the rule's reason); their kappa is a description and "
                "its interval is withheld"
            )
    return out


def group_label(record: Mapping[str, Any]) -> str:
    """A breakdown row's ``group`` in the estimates table: ``judge|language=sw``, ``judge|script=Geor``."""
    key = "language" if "language" in record else "script"
    return f"{record['judge']}|{key}={record[key]}"
