"""The studies' documents merged into ``study_results.json``, the one document reports read.

Sits above ``analysis``, ``validation`` and ``granularity``: the human validation's class-level
correlation needs the class CLCGs of the estimates, so it is completed here.
"""

from typing import Any, cast

import pandas as pd

from clcg_pipeline.storage import StudyResultsDocument
from clcg_pipeline.validation import CLASS_CLCG_CAVEAT, class_clcg_spearman

#: study_results.json key -> the asset whose document is merged under it
STUDY_SECTIONS = {
    "error_taxonomy": "error_taxonomy_results",
    "human_validation": "human_validation_results",
    "granularity": "granularity_results",
}


def merge_study_sections(
    results: StudyResultsDocument, estimates: pd.DataFrame, sections: dict[str, Any]
) -> None:
    """Put each study's document under its key; a study that is not ``ok`` is listed in warnings.

    The human validation's class-level adequacy is set beside this run's class CLCG
    (``class_raw_primary``), which only exists once the estimates are computed.
    """
    for key, document in sections.items():
        # Keys come from STUDY_SECTIONS, each a field of the typed document.
        cast(dict[str, Any], results)[key] = document
        status = document.get("status")
        if status != "ok":
            results.setdefault("warnings", []).append(
                f"{key}: {status or 'no status'}: {document.get('reason') or 'no reason given'}"
            )
    classes = estimates[estimates["estimand"] == "class_raw_primary"] if len(estimates) else estimates
    clcg = {
        str(group).removeprefix("class="): None if pd.isna(value) else float(value)
        for group, value in zip(classes.get("group", []), classes.get("estimate", []), strict=True)
    }
    human = sections.get("human_validation", {})
    classes = human.get("class_adequacy") or []
    if not classes:
        return
    for row in classes:
        row["clcg"] = clcg.get(str(row.get("joshi_class")))
    # The class-level rank correlation needs those CLCGs: computed here, where they exist.
    row, caveat = class_clcg_spearman(classes)
    human["spearman"] = [r for r in human.get("spearman", []) if r.get("metric") != "clcg_class"]
    if row is not None:
        human["spearman"].append(row)
    human["caveats"] = [c for c in human.get("caveats", []) if not c.startswith(CLASS_CLCG_CAVEAT)]
    if caveat is not None:
        human["caveats"].append(caveat)
