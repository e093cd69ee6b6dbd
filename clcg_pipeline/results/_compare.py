"""Two runs side by side, estimand by estimand (``clcg compare A B``).

For a prompt change or a new version of a model: each estimand of run A, of run B, and B - A.

* **Pairing.** Rows are paired on (model, language, article, item, level, context scope, item
  source, repetition) answered in both runs. The H1 family is recomputed on those common rows
  with the same article-cluster draws for both runs (the draws depend only on the sorted article
  list and the seed), so the difference's interval is paired. A model that skipped items in one
  run is compared on the items it answered in both, never against its own answers to items only
  the other run has.
* **What only one run has** (models, languages, items) is named in ``info["only_in"]``.
* **Where each number comes from.** Every H1 estimand of a run given with its scores is
  recomputed from those scores; every other row comes from the run's document (its estimates
  table or study_results.json), and says so in ``source``. A document whose H1 estimates do
  not match the run's own scores is stale: its rows are withheld, with the reason.
* **Intervals and p.** An unpaired difference gets the normal-approximation interval from the
  two runs' own intervals and no p (no bootstrap distribution of B - A exists). A paired one
  gets the percentile interval and the suite's bootstrap p, (k+1)/(B+1), two-sided
  (``analysis.bootstrap_p``). Whether an interval and p may be shown is the suite's rule
  (``analysis.withheld_reason``), applied with this comparison's ``study.min_articles`` to every
  row, recomputed or read from a document: a document's row that its own run marked not
  identifiable, or that rests on fewer articles, keeps its estimate and loses its interval. Every
  missing interval has its ``reason``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis import bootstrap_p, h1_core, percentile_ci, valid_replicates, withheld_reason
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.results._compare_document import COMPARE_COLUMNS

__all__ = ["COMPARE_COLUMNS", "ITEM_KEY", "PAIR_KEY", "RunSide", "compare_runs", "paired_h1"]

# What identifies one answered item: two runs' rows are paired on it. The model is part of it: a
# model that skipped items in one run is compared on the items it answered in both.
PAIR_KEY = ["model", "language", "doc_id", "item_id", "level", "context_scope", "item_source", "rep"]
# What a scores frame must have for its rows to be paired (the rest of PAIR_KEY where present).
REQUIRED_KEY = ["model", "language", "doc_id", "item_id", "rep"]
# One item of one model in one language: what "items present in only one run" counts.
ITEM_KEY = ["model", "language", "doc_id", "item_id"]
# h1_core's vector names -> the estimates table's (estimand, group), so each estimand is one row.
_FAMILY = {
    "clcg": "clcg_language",
    "h1_micro": "h1_micro_model",
    "pt_gap": "pt_gap_model",
    "macro_net": "macro_net_model",
}
_VALUE_KEYS = ("estimate", "ci_low", "ci_high")
# The suite's bootstrap p (analysis.bootstrap_p), said once in every comparison.
P_RULE = (
    "paired rows: two-sided bootstrap p = min(1, 2 min(1 + #{d <= 0}, 1 + #{d >= 0}) / (B + 1)) over the "
    "B valid replicates d of B - A, as the suite computes it; unpaired rows: no p"
)
Key = tuple[str, str]
Values = dict[Key, dict[str, Any]]  # one run's estimands: (estimand, group) -> values, reason, source


@dataclass(frozen=True)
class RunSide:
    """One run as compared: its label, estimates table, scores (when given) and the file the
    estimates were read from (``document``; None when the run is a scores file alone)."""

    label: str
    estimates: pd.DataFrame
    scores: pd.DataFrame | None = None
    document: str | None = None


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def check_scores(side: RunSide) -> None:
    """A scores frame without the pairing key is refused, naming the run and the columns."""
    if side.scores is None:
        return
    missing = [c for c in REQUIRED_KEY if c not in side.scores.columns]
    if missing:
        raise ValueError(f"{side.label}: scores lack column(s) {', '.join(missing)}: rows cannot be paired")


# -- what the two runs share -----------------------------------------------------------------


def _keys(frame: pd.DataFrame, key: list[str]) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(frame[key].astype(str))


def common_rows(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of each run on the items both answered (PAIR_KEY, model included)."""
    key = [c for c in PAIR_KEY if c in a.columns and c in b.columns]
    keys_a, keys_b = _keys(a, key), _keys(b, key)
    return a[keys_a.isin(keys_b)], b[keys_b.isin(keys_a)]


def _only_in(mine: pd.DataFrame, other: pd.DataFrame) -> dict[str, Any]:
    """The models, languages and items of ``mine`` the other run lacks, and its unpaired rows."""
    key = [c for c in PAIR_KEY if c in mine.columns and c in other.columns]
    models = sorted(set(mine["model"].astype(str)) - set(other["model"].astype(str)))
    languages = sorted(set(mine["language"].astype(str)) - set(other["language"].astype(str)))
    unpaired = int((~_keys(mine, key).isin(_keys(other, key))).sum())
    # An item the other run did not answer at all (in any level or repetition); those of a
    # model or language the other run lacks altogether are said by that name instead.
    alone = mine[~_keys(mine, ITEM_KEY).isin(_keys(other, ITEM_KEY))]
    shared = alone[~alone["model"].astype(str).isin(models) & ~alone["language"].astype(str).isin(languages)]
    items = shared[ITEM_KEY].astype(str).drop_duplicates().sort_values(ITEM_KEY)
    by_cell = items.groupby(["model", "language"]).size()
    return {
        "models": models,
        "languages": languages,
        "rows": unpaired,
        "items": len(items),
        "items_by_model_language": [
            {"model": m, "language": lang, "items": int(n)} for (m, lang), n in by_cell.items()
        ],
        "item_list": items.to_dict("records"),
    }


def coverage(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """What each run has that the other lacks: ``{"A": ..., "B": ...}``."""
    return {"A": _only_in(a, b), "B": _only_in(b, a)}


# -- one run's values: recomputed from its scores, else read from its document ----------------


def _estimand_of(vector: str) -> Key:
    estimand, _, group = vector.partition("/")
    return (_FAMILY.get(estimand, estimand), group) if group else (estimand, "all")


def _articles_of(core: Any, vector: str, config: ProjectConfig) -> int:
    """Articles with rows in the cells the estimand reads (as the suite counts them)."""
    langs = config.languages
    en, pt, targets = langs.reference, langs.baseline, list(langs.targets)
    name, _, group = vector.partition("/")
    if name == "clcg":
        return core.panel.n_articles(language=[en, group])
    languages = {"pt_gap": [en, pt], "macro_net": [en, pt, *targets], "micro_net": [en, pt, *targets]}
    return core.panel.n_articles(language=languages.get(name, [en, *targets]), model=group or None)


def _reason(vector: Any, articles: int, config: ProjectConfig) -> str | None:
    """Why the interval of a point-first bootstrap vector is withheld: the suite's rule."""
    return withheld_reason(_number(vector[0]), articles, config.study.min_articles, valid_replicates(vector))


def scored_values(scores: pd.DataFrame, config: ProjectConfig) -> Values:
    """The H1 family of one run, recomputed from its scores, each with its reason if withheld."""
    core = h1_core(scores, config.languages, config.study)
    values: Values = {}
    for name, vector in core.vectors.items():
        estimate = _number(vector[0])
        low, high = (_number(v) for v in percentile_ci(vector[1:], config.study.confidence))
        reason = _reason(vector, _articles_of(core, name, config), config)
        values[_estimand_of(name)] = {
            "estimate": estimate,
            "ci_low": None if reason else low,
            "ci_high": None if reason else high,
            "reason": reason,
            "source": "scores",
        }
    return values


def _count(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _own_reason(record: dict[str, Any]) -> str | None:
    """The reason a document gives for a row its run marked not identifiable, else None."""
    status = str(record.get("status") or "")
    identifiable = record.get("identifiable")
    marked = status.startswith("not identifiable") or (
        isinstance(identifiable, bool | np.bool_) and not identifiable
    )
    if not marked:
        return None
    reason = record.get("reason")
    if isinstance(reason, str) and reason:
        return reason
    return status.removeprefix("not identifiable: ") or "not identifiable in the run's document"


def _document_reason(record: dict[str, Any], min_articles: int) -> str | None:
    """Why a document's row shows no interval: its run's own decision, else the suite's rule with
    this comparison's ``study.min_articles`` (a document written under a smaller one shows
    intervals this rule withholds), else that the document gives none."""
    own = _own_reason(record)
    if own is not None:
        return own
    estimate = _number(record.get("estimate"))
    counts = (_count(record.get("n_articles")), min_articles, _count(record.get("valid_replicates")))
    rule = withheld_reason(estimate, *counts)
    if rule is not None and estimate is not None:
        return rule
    if rule is None and None not in (_number(record.get("ci_low")), _number(record.get("ci_high"))):
        return None
    # No estimate, or no interval in the document: the document's own words first.
    said = record.get("reason")
    return said if isinstance(said, str) and said else rule or "no interval in the run's document"


def document_values(side: RunSide, min_articles: int) -> Values:
    """Every estimand of a run's document (estimates table or study_results.json); an interval
    the rule withholds is not read."""
    values: Values = {}
    for record in side.estimates.to_dict("records"):
        key = (str(record["estimand"]), str(record["group"]))
        reason = _document_reason(record, min_articles)
        values[key] = {
            "estimate": _number(record.get("estimate")),
            **{k: None if reason else _number(record.get(k)) for k in ("ci_low", "ci_high")},
            "reason": reason,
            "source": "document",
        }
    return values


def stale_document(document: Values, scored: Values) -> str | None:
    """What shows a run's document no longer matches its scores (the first H1 estimate that
    differs from the one recomputed from them), else None."""
    for key in sorted(set(document) & set(scored)):
        there, here = document[key]["estimate"], scored[key]["estimate"]
        if there is None and here is None:
            continue
        if there is None or here is None or abs(there - here) > 1e-9 * max(1.0, abs(here)):
            shown = [f"{v:.4f}" if v is not None else "none" for v in (there, here)]
            return (
                f"its {key[0]} ({key[1]}) is {shown[0]} there but {shown[1]} from its scores "
                "(written before its scores changed, or under another config)"
            )
    return None


def side_values(side: RunSide, name: str, config: ProjectConfig) -> tuple[Values, str | None]:
    """One run's values by (estimand, group): scores first, the document for the rest; and why
    its document is stale (then the document's rows are withheld)."""
    document = document_values(side, config.study.min_articles)
    scored = scored_values(side.scores, config) if side.scores is not None and len(side.scores) else {}
    stale = stale_document(document, scored) if scored else None
    if stale is not None:
        withheld = f"run {name}'s document {side.document or ''} is stale: {stale}".replace("  ", " ")
        document = {
            key: {**dict.fromkeys(_VALUE_KEYS), "reason": withheld, "source": "stale document"}
            for key in document
        }
    return {**document, **scored}, stale


# -- the rows: paired on common rows, else unpaired -----------------------------------------


def paired_h1(a: pd.DataFrame, b: pd.DataFrame, config: ProjectConfig) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The H1 family of both runs on their common rows, with paired B - A intervals and p."""
    common_a, common_b = common_rows(a, b)
    articles = int(common_a["doc_id"].nunique()) if len(common_a) else 0
    info = {"common_rows": len(common_a), "common_articles": articles, "rows_a": len(a), "rows_b": len(b)}
    if articles < 2:
        return pd.DataFrame(columns=COMPARE_COLUMNS), {**info, "paired": False}
    study = config.study
    core_a = h1_core(common_a, config.languages, study)
    core_b = h1_core(common_b, config.languages, study)
    note = f"paired on {len(common_a)} common rows of {articles} articles"
    rows = []
    for name in sorted(set(core_a.vectors) & set(core_b.vectors)):
        va, vb = core_a.vectors[name], core_b.vectors[name]
        diff = vb - va
        estimate = _number(diff[0])
        low, high = (_number(v) for v in percentile_ci(diff[1:], study.confidence))
        reason = _reason(diff, _articles_of(core_a, name, config), config)
        sides = [(v, percentile_ci(v[1:], study.confidence)) for v in (va, vb)]
        estimand, group = _estimand_of(name)
        p = _number(bootstrap_p(diff[1:], "two-sided"))
        rows.append(
            {
                "estimand": estimand,
                "group": group,
                **{
                    f"{s}_{k}": None if reason and k != "estimate" else _number(value)
                    for s, (v, ci) in zip("ab", sides, strict=True)
                    for k, value in zip(_VALUE_KEYS, (v[0], *ci), strict=True)
                },
                "difference": estimate,
                "difference_ci_low": None if reason else low,
                "difference_ci_high": None if reason else high,
                "p": None if reason else p,
                "pairing": "paired",
                "source": "scores",
                "reason": reason,
                "note": note,
            }
        )
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS), {**info, "paired": True}


def _normal_z(confidence: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(0.5 + confidence / 2))


def _difference_interval(
    a: dict[str, Any], b: dict[str, Any], confidence: float
) -> tuple[float, float] | None:
    """B - A's interval for two independent estimates, from each run's own interval."""
    widths = [
        side["ci_high"] - side["ci_low"]
        for side in (a, b)
        if side.get("ci_low") is not None and side.get("ci_high") is not None
    ]
    if len(widths) < 2 or a["estimate"] is None or b["estimate"] is None:
        return None
    z = _normal_z(confidence)
    se = math.hypot(*(w / (2 * z) for w in widths))
    difference = b["estimate"] - a["estimate"]
    return difference - z * se, difference + z * se


def _unpaired_reason(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str | None:
    """Why an unpaired difference has no interval; None when it has one."""
    if a is None or b is None:
        return f"only in run {'B' if a is None else 'A'}"
    for name, side in (("A", a), ("B", b)):
        if side["estimate"] is None or side["ci_low"] is None:
            return f"run {name}: {side['reason'] or 'no interval'}"
    return None


def _source(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    sources = [f"{name}: {side['source']}" for name, side in (("A", a), ("B", b)) if side is not None]
    kinds = {side["source"] for side in (a, b) if side is not None}
    return kinds.pop() if len(kinds) == 1 and len(sources) == 2 else "; ".join(sources)


def unpaired_row(
    key: Key, a: dict[str, Any] | None, b: dict[str, Any] | None, config: ProjectConfig
) -> dict[str, Any]:
    """B - A of two independent estimates (or one run's value alone), with the reason for any
    missing interval. No p: the two runs' values give no distribution of B - A to test."""
    empty: dict[str, Any] = {**dict.fromkeys(_VALUE_KEYS), "reason": None, "source": ""}
    left, right = a or empty, b or empty
    reason = _unpaired_reason(a, b)
    interval = None if reason else _difference_interval(left, right, config.study.confidence)
    if reason is None and interval is None:
        reason = "no interval"
    both = a is not None and b is not None and None not in (left["estimate"], right["estimate"])
    note = "unpaired: normal approximation from the two runs' intervals; p only for paired rows"
    return {
        "estimand": key[0],
        "group": key[1],
        **{f"a_{k}": left[k] for k in _VALUE_KEYS},
        **{f"b_{k}": right[k] for k in _VALUE_KEYS},
        "difference": right["estimate"] - left["estimate"] if both else None,
        "difference_ci_low": interval[0] if interval else None,
        "difference_ci_high": interval[1] if interval else None,
        "p": None,
        "pairing": "unpaired",
        "source": _source(a, b),
        "reason": reason,
        "note": note if a is not None and b is not None else reason,
    }


def _only_note(key: Key, only: dict[str, Any]) -> str | None:
    """Which run alone has the model or language a row is about, where the key names one."""
    for side in ("A", "B"):
        entry = only.get(side) or {}
        for kind in ("models", "languages"):
            if key[1] in entry.get(kind, []):
                return f"only in run {side}: {kind[:-1]} {key[1]} is not in run {'B' if side == 'A' else 'A'}"
    return None


def compare_runs(a: RunSide, b: RunSide, config: ProjectConfig) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Every estimand of either run, A, B and B - A; paired for H1 on the rows both answered."""
    for side in (a, b):
        check_scores(side)
    values_a, stale_a = side_values(a, "A", config)
    values_b, stale_b = side_values(b, "B", config)
    info: dict[str, Any] = {
        "a": a.label,
        "b": b.label,
        "paired": False,
        "documents": {"A": a.document, "B": b.document},
        "stale": {name: why for name, why in (("A", stale_a), ("B", stale_b)) if why},
        "p_rule": P_RULE,
    }
    paired = pd.DataFrame(columns=COMPARE_COLUMNS)
    if a.scores is not None and b.scores is not None:
        info["only_in"] = coverage(a.scores, b.scores)
        paired, pairing = paired_h1(a.scores, b.scores, config)
        info.update(pairing)
    done = set(zip(paired["estimand"], paired["group"], strict=True))
    rows = []
    for key in sorted((set(values_a) | set(values_b)) - done):
        row = unpaired_row(key, values_a.get(key), values_b.get(key), config)
        named = _only_note(key, info.get("only_in", {}))
        if named and str(row["reason"]).startswith("only in run"):
            row["reason"] = row["note"] = named
        rows.append(row)
    table = pd.DataFrame([*paired.to_dict("records"), *rows], columns=COMPARE_COLUMNS)
    table = table.astype(object).where(table.notna(), None)
    return table.sort_values(["estimand", "group"], kind="stable").reset_index(drop=True), info
