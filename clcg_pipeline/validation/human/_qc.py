"""The quality-control funnel of the human-validation study (docs/HUMAN_VALIDATION.md).

Applied in a fixed order, each step on what the previous ones kept, with its counts:

1. attention check: an annotator who failed a planted attention item is excluded in full;
2. contradiction rule: an annotator whose individual ratings contradict themselves across
   rubric fields (adequacy 5 with equivalence "not equivalent", ...) in more than
   ``contradiction_max_share`` of them is excluded in full;
3. item-level controls: a rating with a required field missing, an impossible value, an
   unknown task, or a second rating of the same task by the same annotator is removed;
4. speed outliers: a rating answered faster than ``speed_min_seconds`` or with a robust z of
   log-seconds below ``-speed_robust_z`` is removed.

The criteria never look at model, language, resource class or automatic score (the study
applied them symmetrically). Every rating keeps its row, with ``qc_step`` naming the step that
removed it (``kept`` otherwise) and ``qc_reason`` saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from clcg_pipeline.config import HumanValidationSettings

Level = Literal["nominal", "ordinal", "interval"]
KEPT = "kept"
STEPS = ("attention_check", "contradiction_rule", "item_controls", "speed_outliers")


@dataclass(frozen=True)
class RubricField:
    """One field of the annotation rubric: its level of measurement and its value domain."""

    name: str
    level: Level
    kinds: tuple[str, ...]
    values: tuple[Any, ...] | None = None  # ordered domain; None = numeric within [low, high]
    low: float | None = None
    high: float | None = None
    required: bool = False


# The rubric fields (docs/HUMAN_VALIDATION.md). Ordinal string scales are ordered worst to best.
RUBRIC: tuple[RubricField, ...] = (
    RubricField("adequacy", "ordinal", ("single",), values=(1, 2, 3, 4, 5), required=True),
    RubricField("keypoint_recall", "interval", ("single",), low=0.0, high=1.0),
    RubricField("question_valid", "nominal", ("single",), values=("no", "yes")),
    RubricField(
        "equivalence", "ordinal", ("single",), values=("not_equivalent", "partially_equivalent", "equivalent")
    ),
    RubricField(
        "attribution", "ordinal", ("single",), values=("not_supported", "partially_supported", "supported")
    ),
    RubricField("consistency", "nominal", ("single",), values=("inconsistent", "consistent")),
    RubricField("primary_error_category", "nominal", ("single",)),
    RubricField("preference", "nominal", ("pair",), values=("A", "B", "none"), required=True),
    RubricField("confidence", "ordinal", ("pair",), values=(1, 2, 3, 4, 5)),
)
FIELDS = {f.name: f for f in RUBRIC}

# Spellings annotation tools produce for the same answer (Label Studio choice values, CSV
# cells typed by hand) mapped onto the canonical value.
_SYNONYMS: dict[str, dict[str, Any]] = {
    "question_valid": {
        "yes": "yes",
        "true": "yes",
        "1": "yes",
        "valid": "yes",
        "no": "no",
        "false": "no",
        "0": "no",
        "invalid": "no",
    },
    "equivalence": {
        "equivalent": "equivalent",
        "yes": "equivalent",
        "fully_equivalent": "equivalent",
        "partially_equivalent": "partially_equivalent",
        "partial": "partially_equivalent",
        "partially": "partially_equivalent",
        "not_equivalent": "not_equivalent",
        "no": "not_equivalent",
        "not": "not_equivalent",
    },
    "attribution": {
        "supported": "supported",
        "fully_supported": "supported",
        "yes": "supported",
        "partially_supported": "partially_supported",
        "partial": "partially_supported",
        "partially": "partially_supported",
        "not_supported": "not_supported",
        "unsupported": "not_supported",
        "no": "not_supported",
    },
    "consistency": {
        "consistent": "consistent",
        "yes": "consistent",
        "true": "consistent",
        "inconsistent": "inconsistent",
        "not_consistent": "inconsistent",
        "no": "inconsistent",
        "false": "inconsistent",
    },
    "preference": {
        "a": "A",
        "answer_a": "A",
        "b": "B",
        "answer_b": "B",
        "none": "none",
        "no_preference": "none",
        "tie": "none",
        "neither": "none",
        "equal": "none",
    },
}


def missing_required(kind: str, values: Mapping[str, Any]) -> list[str]:
    """The required rubric fields of a ``kind`` rating that ``values`` leaves unanswered (the
    import excludes such a rating; the item-level controls remove one that reaches QC anyway)."""
    return [
        spec.name
        for spec in RUBRIC
        if spec.required
        and kind in spec.kinds
        and normalize_value(spec.name, values.get(spec.name)) == (None, None)
    ]


def _key(value: Any) -> str:
    return str(value).strip().lower().replace(" ", "_").replace("-", "_")


def normalize_value(name: str, value: Any) -> tuple[Any, str | None]:
    """``(canonical value, None)``, ``(None, None)`` when missing, or ``(None, why)`` when impossible."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None, None
    if isinstance(value, str) and not value.strip():
        return None, None
    spec = FIELDS[name]
    if name in _SYNONYMS:
        canon = _SYNONYMS[name].get(_key(value))
        if isinstance(value, bool | np.bool_) and name in ("question_valid", "consistency"):
            canon = _SYNONYMS[name]["true" if value else "false"]
        return (canon, None) if canon is not None else (None, f"{name}={value!r} is not one of {spec.values}")
    if spec.values is None and spec.low is None:
        return _key(value), None  # free nominal scale (error categories): normalised spelling only
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None, f"{name}={value!r} is not a number"
    if not np.isfinite(number):
        return None, f"{name}={value!r} is not a finite number"
    if spec.values is not None:
        if number not in spec.values:
            return None, f"{name}={value!r} is outside {spec.values[0]}..{spec.values[-1]}"
        return int(number), None
    if (spec.low is not None and number < spec.low) or (spec.high is not None and number > spec.high):
        return None, f"{name}={value!r} is outside [{spec.low}, {spec.high}]"
    return number, None


# Internally contradictory combinations of fields within one individual rating: each is a
# pair of answers that cannot both be sincere (max adequacy of an answer judged not equivalent
# to the gold, ...). Max adequacy with incomplete keypoint coverage is NOT one: the study kept
# those (global adequacy and exhaustive coverage are different constructs).
CONTRADICTIONS: tuple[tuple[str, Any], ...] = (
    (
        "adequacy 5 with equivalence not_equivalent",
        lambda r: r["adequacy"] == 5 and r["equivalence"] == "not_equivalent",
    ),
    (
        "adequacy 1 with equivalence equivalent",
        lambda r: r["adequacy"] == 1 and r["equivalence"] == "equivalent",
    ),
    (
        # Recall 0 only from the checklist's explicit "none of these facts": an unanswered
        # checklist is missing (None), not 0, and contradicts nothing.
        "keypoint_recall 0 with equivalence equivalent",
        lambda r: _is_zero(r["keypoint_recall"]) and r["equivalence"] == "equivalent",
    ),
)


def _is_zero(value: Any) -> bool:
    """An answered 0 (None, NaN and NA are not answered)."""
    return value is not None and not pd.isna(value) and float(value) == 0.0


def contradictions(row: pd.Series | dict[str, Any]) -> list[str]:
    """The contradiction rules a normalised individual rating breaks (empty when consistent)."""
    return [name for name, test in CONTRADICTIONS if test(row)]


@dataclass
class QCResult:
    """Every rating with its QC verdict, the funnel table and the caveats to report."""

    ratings: pd.DataFrame
    funnel: pd.DataFrame
    caveats: list[str] = field(default_factory=list)

    @property
    def kept(self) -> pd.DataFrame:
        return self.ratings[self.ratings["qc_step"] == KEPT].reset_index(drop=True)


def _normalise(frame: pd.DataFrame) -> pd.DataFrame:
    """Canonical values in every rubric column; impossible ones collected in ``_invalid``."""
    out = frame.copy()
    invalid: list[list[str]] = [[] for _ in range(len(out))]
    for spec in RUBRIC:
        if spec.name not in out.columns:
            out[spec.name] = None
            continue
        values = []
        for i, (value, kind) in enumerate(zip(out[spec.name].tolist(), out["kind"].tolist(), strict=True)):
            canon, why = normalize_value(spec.name, value)
            if why is not None and kind in spec.kinds:
                invalid[i].append(why)
            values.append(canon if kind in spec.kinds else None)
        out[spec.name] = pd.Series(values, index=out.index, dtype=object)
    out["_invalid"] = invalid
    return out


def _count(ratings: pd.DataFrame, excluded_annotators: set[str]) -> tuple[int, int, int]:
    alive = ratings[ratings["qc_step"] == KEPT]
    remaining_annotators = int(ratings["annotator_id"].nunique()) - len(excluded_annotators)
    return len(alive), remaining_annotators, int(alive["annotator_id"].nunique())


def _flag(ratings: pd.DataFrame, mask: pd.Series | np.ndarray, step: str, reasons: pd.Series | str) -> int:
    mask = pd.Series(np.asarray(mask, dtype=bool), index=ratings.index) & (ratings["qc_step"] == KEPT)
    ratings.loc[mask, "qc_step"] = step
    ratings.loc[mask, "qc_reason"] = reasons if isinstance(reasons, str) else reasons[mask]
    return int(mask.sum())


def run_qc(
    annotations: pd.DataFrame,
    settings: HumanValidationSettings,
    *,
    task_ids: set[str] | None = None,
) -> QCResult:
    """Apply the funnel to imported annotations (``human_annotations`` rows).

    ``task_ids``: the tasks of the annotation sample; a rating of any other task is removed
    by the item-level controls. Attention items are not ratings: they decide step 1 and are
    then left out of every count.
    """
    frame = _checked_frame(annotations)
    caveats: list[str] = []
    failed = _failed_attention(frame, caveats)
    ratings = _normalise(frame[frame["kind"] != "attention"].reset_index(drop=True))
    ratings["qc_step"] = KEPT
    ratings["qc_reason"] = None
    n0, a0, w0 = _count(ratings, set())
    all_annotators = set(ratings["annotator_id"])
    rows: list[dict[str, Any]] = [
        _row("imported", "every imported rating (attention items not counted)", 0, 0, n0, a0, w0)
    ]

    # 1. attention check
    excluded: set[str] = failed & all_annotators
    lost = _flag(
        ratings, ratings["annotator_id"].isin(excluded), "attention_check", "failed the attention check"
    )
    rows.append(
        _row(
            "attention_check",
            "annotator failed a planted attention item: excluded in full",
            len(excluded),
            lost,
            *_count(ratings, excluded),
        )
    )

    # 2. contradiction rule (individual ratings of the annotators still in)
    contradictory, why_contra = _contradictory_annotators(ratings, settings)
    lost = _flag(ratings, ratings["annotator_id"].isin(contradictory), "contradiction_rule", why_contra)
    excluded |= contradictory
    rows.append(
        _row(
            "contradiction_rule",
            f"annotator with > {settings.contradiction_max_share:.0%} contradictory individual ratings "
            f"(judged from {settings.contradiction_min_ratings} ratings): excluded in full",
            len(contradictory),
            lost,
            *_count(ratings, excluded),
        )
    )

    # 3. item-level controls
    reasons = _item_control_reasons(ratings, task_ids)
    lost = _flag(ratings, reasons.notna(), "item_controls", reasons)
    rows.append(
        _row(
            "item_controls",
            "missing required field, impossible value, unknown task or duplicate: rating removed",
            0,
            lost,
            *_count(ratings, excluded),
        )
    )

    # 4. speed outliers
    lost = _flag_speed_outliers(ratings, settings, caveats)
    rows.append(
        _row(
            "speed_outliers",
            f"rating faster than {settings.speed_min_seconds:g} s or log-seconds robust z "
            f"< -{settings.speed_robust_z:g}: rating removed",
            0,
            lost,
            *_count(ratings, excluded),
        )
    )
    n, a, w = _count(ratings, excluded)
    rows.append(_row("analysed", "ratings entering the analysis", 0, 0, n, a, w))
    ratings = ratings.drop(columns=["_invalid"])
    return QCResult(ratings=ratings, funnel=pd.DataFrame(rows), caveats=caveats)


def _checked_frame(annotations: pd.DataFrame) -> pd.DataFrame:
    """A copy with string annotator ids and kinds; a missing column or unknown kind raises."""
    need = ["annotation_id", "task_id", "annotator_id", "kind"]
    missing = [c for c in need if c not in annotations.columns]
    if missing:
        raise ValueError(f"human_annotations: missing column(s) {missing}")
    frame = annotations.copy()
    frame["annotator_id"] = frame["annotator_id"].astype(str)
    frame["kind"] = frame["kind"].astype(str)
    unknown_kind = ~frame["kind"].isin(["single", "pair", "attention"])
    if unknown_kind.any():
        first = frame[unknown_kind].iloc[0]
        raise ValueError(
            f"human_annotations: record {first['annotation_id']!r} has kind {first['kind']!r} "
            "(expected single, pair or attention)"
        )
    return frame


def _failed_attention(frame: pd.DataFrame, caveats: list[str]) -> set[str]:
    """The annotators with a failed attention item; caveats when some or all answered none."""
    passed = (
        frame["attention_passed"]
        if "attention_passed" in frame.columns
        else pd.Series(None, index=frame.index)
    )
    attention = frame[frame["kind"] == "attention"]
    failed_rows = passed.map(lambda v: v is not None and v == v and not bool(v))
    failed = set(frame.loc[failed_rows, "annotator_id"])
    without_check = set(frame["annotator_id"]) - set(attention["annotator_id"]) - failed
    if without_check and len(attention):
        caveats.append(
            f"{len(without_check)} annotator(s) answered no attention-check item; they were kept "
            "(only a failed check excludes)"
        )
    if attention.empty:
        caveats.append("no attention-check answers imported: the attention step excluded nobody")
    return failed


def _contradictory_annotators(
    ratings: pd.DataFrame, settings: HumanValidationSettings
) -> tuple[set[str], pd.Series]:
    """Annotators whose individual ratings contradict themselves too often, and why (per row)."""
    singles = ratings[(ratings["kind"] == "single") & (ratings["qc_step"] == KEPT)]
    broken = (
        singles.apply(lambda r: bool(contradictions(r)), axis=1) if len(singles) else pd.Series(dtype=bool)
    )
    per = pd.DataFrame({"annotator_id": singles["annotator_id"], "broken": broken}).groupby("annotator_id")
    share = per["broken"].mean()
    judged = per.size() >= settings.contradiction_min_ratings
    contradictory = set(share[(share > settings.contradiction_max_share) & judged].index)
    sums, sizes = per["broken"].sum(), per.size()
    why_contra = ratings["annotator_id"].map(
        {
            a: f"pervasive internal contradictions: {int(sums[a])} of {int(sizes[a])} individual ratings "
            f"({share[a]:.0%}) contradict themselves across rubric fields"
            for a in contradictory
        }
    )
    return contradictory, why_contra


def _item_control_reasons(ratings: pd.DataFrame, task_ids: set[str] | None) -> pd.Series:
    """Why each rating fails the item-level controls (None where it passes)."""
    reasons = pd.Series([None] * len(ratings), index=ratings.index, dtype=object)
    for i, row in ratings.iterrows():
        why: list[str] = list(row["_invalid"])
        for name in missing_required(str(row["kind"]), row):
            if not any(w.startswith(f"{name}=") for w in why):
                why.append(f"required field {name} missing")
        if task_ids is not None and str(row["task_id"]) not in task_ids:
            why.append(f"task {row['task_id']!r} is not in the annotation sample")
        if why:
            reasons[i] = "; ".join(why)
    alive = ratings["qc_step"] == KEPT
    dup = ratings[alive & reasons.isna()].duplicated(["annotator_id", "task_id"], keep="first")
    reasons[dup[dup].index] = "second rating of the same task by the same annotator"
    return reasons


def _flag_speed_outliers(ratings: pd.DataFrame, settings: HumanValidationSettings, caveats: list[str]) -> int:
    """Flag the ratings under the speed floor or with a low robust z of log-seconds; how many."""
    if "seconds" not in ratings.columns:
        caveats.append("no seconds column imported: the speed rule could not judge any rating")
        return 0
    seconds = pd.to_numeric(ratings["seconds"], errors="coerce")
    alive = (ratings["qc_step"] == KEPT) & seconds.notna()
    z = _robust_log_z(seconds[alive & (seconds > 0)])
    fast = pd.Series(False, index=ratings.index)
    why = pd.Series([None] * len(ratings), index=ratings.index, dtype=object)
    floor = alive & (seconds < settings.speed_min_seconds)
    fast |= floor
    why[floor] = seconds[floor].map(lambda s: f"{s:g} s < speed_min_seconds {settings.speed_min_seconds:g}")
    low_z = z[z < -settings.speed_robust_z].index.difference(fast[fast].index)
    fast[low_z] = True
    why[low_z] = [f"log-seconds robust z {z[j]:.2f} < -{settings.speed_robust_z:g}" for j in low_z]
    lost = _flag(ratings, fast, "speed_outliers", why)
    if seconds.isna().any():
        caveats.append(
            f"{int(seconds.isna().sum())} rating(s) have no seconds: the speed rule could not judge them"
        )
    return lost


def _robust_log_z(seconds: pd.Series) -> pd.Series:
    """Robust z of log-seconds (median and MAD scaled to a normal SD); empty when MAD is 0."""
    if len(seconds) < 3:
        return pd.Series(dtype=float)
    logs = np.log(seconds.astype(float))
    med = float(np.median(logs))
    mad = 1.4826 * float(np.median(np.abs(logs - med)))
    if mad <= 0:
        return pd.Series(dtype=float)
    return (logs - med) / mad


def _row(step: str, rule: str, ex_a: int, ex_r: int, rem_r: int, rem_a: int, with_r: int) -> dict[str, Any]:
    return {
        "step": step,
        "rule": rule,
        "excluded_annotators": ex_a,
        "excluded_ratings": ex_r,
        "remaining_annotators": rem_a,
        "remaining_ratings": rem_r,
        "annotators_with_ratings": with_r,
    }
