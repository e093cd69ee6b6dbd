"""The generic section builder: any nested results value as headed fact lists and estimate tables.

Results keys without a dedicated section (and keys beyond a study's contract) render through it,
so nothing computed is hidden.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from clcg_pipeline.analysis import GROUP_METRIC
from clcg_pipeline.report._format import (
    as_float,
    fmt_ci,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_value,
    is_p_name,
)
from clcg_pipeline.report._labels import LABELS
from clcg_pipeline.report._page import _VALUE_KEYS, Part, Row, _pruned, flags_of
from clcg_pipeline.storage import Definitions, DefinitionView

_ESTIMATE_FIELDS = {
    *_VALUE_KEYS,
    "ci_low",
    "ci_high",
    "p",
    "p_value",
    "p_adj",
    "p_bound",
    "n",
    "n_articles",
    "identifiable",
    "reason",
    "valid_replicates",
    "flags",
    "converged",
    "status",
    "warnings",
}
_MAX_NOTE = 240
# Counts of a bootstrap's resamples, said by its "N of M bootstrap replicates valid" flag when it has one.
_RESAMPLE_COUNTS = {"resamples", "valid_resamples"}


def _says_valid_count(flags: list[str], valid: float) -> bool:
    """Whether a flag already says how many bootstrap replicates were valid ("198 of 200 ...")."""
    return any(re.match(rf"{int(valid)} of \d+ bootstrap replicates valid", flag) for flag in flags)


def title_words(key: str) -> str:
    text = str(key).replace("_", " ").strip()
    return text[:1].upper() + text[1:] if text else str(key)


def is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def is_scalar_list(value: object) -> bool:
    return isinstance(value, list | tuple) and all(is_scalar(v) for v in value)


def shorten(text: str) -> str:
    return text if len(text) <= _MAX_NOTE else text[: _MAX_NOTE - 1] + "\u2026"


def fact_text(value: object) -> str:
    """A scalar or a list of scalars as text (lists joined by commas, floats to 3 decimals)."""
    if isinstance(value, list | tuple):
        return ", ".join(fact_text(v) for v in value) if value else "none"
    if isinstance(value, float):
        return fmt_num(value, 4 if abs(value) < 0.01 and value != 0 else 3)
    return fmt_value(value)


def is_estimate(value: object) -> bool:
    if not isinstance(value, Mapping):
        return False
    if any(k in value for k in _VALUE_KEYS):
        return True
    return "p" in value and ("ci_low" in value or "n" in value)


def is_status_only(value: object) -> bool:
    """``{"status": "not identifiable", ...}``: an estimate that could not be computed."""
    if not isinstance(value, Mapping) or is_estimate(value):
        return False
    if value.get("identifiable") is False:
        return True
    return "status" in value and all(is_scalar(v) or is_scalar_list(v) for v in value.values())


def _p_cell(block: Mapping[str, Any]) -> str:
    return fmt_p(block.get("p", block.get("p_value")), bound=bool(block.get("p_bound")))


def plain(text: object) -> str:
    """Definition text without the Markdown code marks it keeps for docs/ESTIMANDS.md."""
    return str(text).replace("`", "")


def metric_text(metric: str | None) -> str:
    """A family's metric as a reader reads it: a document written before the family's own entry
    was worded (``analysis.GROUP_METRIC``) kept the raw template ``{group}`` there."""
    return (metric or "").replace("{group}", GROUP_METRIC)


def definition_text(definitions: Definitions, *names: str) -> str:
    """A tooltip text for the first of ``names`` with a definition."""
    for name in names:
        entry = definitions.get(name)
        if isinstance(entry, DefinitionView) and entry.definition:
            parts = [plain(entry.definition)]
            said = (("direction", entry.direction), ("p", entry.sided), ("metric", metric_text(entry.metric)))
            parts += [f"{label}: {plain(value)}" for label, value in said if value]
            return "; ".join(parts)
        if isinstance(entry, str) and entry:
            return plain(entry)
    return ""


class Labeller:
    """Readable labels: language isos as names, class and repetition keys spelled out.

    ``context`` is the path of keys above ``key`` ("joshi_class/primary"), which says what a
    bare number means there.
    """

    def __init__(self, langs: Mapping[str, Mapping[str, Any]]) -> None:
        self.langs = langs

    def __call__(self, key: object, context: str = "") -> str:
        key = str(key)
        if key in self.langs:
            name = self.langs[key].get("name")
            return f"{name} ({key})" if name else key
        context = context.lower()
        if re.fullmatch(r"-?\d+", key):
            if "class" in context:
                return f"class {key}"
            if "rep" in context:
                return f"repetition {key}"
        if re.fullmatch(r"\d+-\d+", key) and "spearman" in context:
            return "repetitions " + key.replace("-", " vs ")
        if context.endswith(("by_model", "per_model")):
            return key  # a model id, spelled as configured
        if key == "spearman" and context.startswith("human_validation"):
            # LABELS' "spearman" is the nomological network's; here it is the metric vs the humans.
            return "Spearman correlation of the automatic metric with human ratings"
        if key in LABELS:
            return LABELS[key]
        if len(key) <= 2:
            return key
        return title_words(key)


def _table_like(value: Mapping[str, Any]) -> bool:
    """A mapping of flat records (e.g. mean and SD per level): one table, not one list per key."""
    return len(value) >= 2 and all(
        isinstance(v, Mapping)
        and v
        and all(is_scalar(x) or is_scalar_list(x) for x in v.values())
        and not is_estimate(v)
        and not is_status_only(v)
        for v in value.values()
    )


class SectionBuilder:
    """Turns any nested results value into headed fact lists and estimate tables."""

    def __init__(
        self, label: Labeller, definitions: Definitions, ci_label: str, replicates: int | None = None
    ) -> None:
        self.label = label
        self.definitions = definitions
        self.ci_label = ci_label
        self.replicates = replicates

    @property
    def estimate_columns(self) -> list[str]:
        return ["", "estimate", self.ci_label, "p", "p (adj.)", "n", "articles", "flags and notes"]

    def estimate_row(self, label: str, block: Mapping[str, Any], *, key: str = "", context: str = "") -> Row:
        value = next((block.get(k) for k in _VALUE_KEYS if k in block), None)
        flags = flags_of(block)
        notes = []
        valid = as_float(block.get("valid_replicates"))
        # A flag saying "198 of 200 bootstrap replicates valid" says it for the note, and for the
        # resample counts beside it: in the note too, it repeated a flag said once per section.
        counted = valid is not None and _says_valid_count(flags, valid)
        if valid is not None and not counted and (self.replicates is None or valid < self.replicates):
            # Only worth a note when some replicates were dropped (or the planned count is unknown).
            notes.append(
                f"valid replicates: {fmt_int(valid)}" + (f" of {self.replicates}" if self.replicates else "")
            )
        for k, v in block.items():
            if k in _ESTIMATE_FIELDS or (counted and k in _RESAMPLE_COUNTS):
                continue
            if is_p_name(str(k)) and isinstance(v, float):
                # A p in a note reads as the p column does: never "0.0000" for a tiny p.
                notes.append(f"{self.label(k, context)}: {fmt_p(v)}")
            elif is_scalar(v) or is_scalar_list(v):
                notes.append(f"{self.label(k, context)}: {fact_text(v)}")
            elif (
                isinstance(v, Mapping)
                and all(is_scalar(x) for x in v.values())
                and not (is_estimate(v) or is_status_only(v))  # those get a table of their own
            ):
                notes.append(
                    f"{self.label(k, context)}: " + ", ".join(f"{a} {fact_text(b)}" for a, b in v.items())
                )
        warnings = block.get("warnings")
        if isinstance(warnings, list | tuple):
            notes.extend(f"warning: {w}" for w in warnings)
        elif isinstance(warnings, str):
            notes.append(f"warning: {warnings}")
        return Row(
            cells=[
                label,
                fmt_num(value),
                fmt_ci(block.get("ci_low"), block.get("ci_high")),
                _p_cell(block),
                fmt_p(block.get("p_adj")),
                fmt_int(block.get("n")) if block.get("n") is not None else "",
                fmt_int(block.get("n_articles")) if block.get("n_articles") is not None else "",
                shorten("; ".join(notes)),
            ],
            flags=flags,
            title=definition_text(self.definitions, key) if key else "",
        )

    def estimate_table(self, rows: list[Row]) -> Part:
        return _pruned(Part("table", columns=self.estimate_columns, rows=rows))

    def walk(
        self, value: object, path: list[str], parts: list[Part], key: str = "", context: str = ""
    ) -> None:
        """Append headed parts for ``value``; ``path`` are the labels above it (its heading)."""
        heading = " \u203a ".join(path)
        if is_status_only(value) and isinstance(value, Mapping):
            # Nothing was estimated: say why, as a flag, instead of a row of dashes.
            if heading:
                parts.append(Part("heading", text=heading))
            parts.append(Part("flags", rows=[Row(cells=[], flags=flags_of(value) or ["not available"])]))
            return
        if is_estimate(value) and isinstance(value, Mapping):
            if heading:
                parts.append(Part("heading", text=heading))
            label = path[-1] if path else self.label(key) if key else "estimate"
            row = self.estimate_row(label, value, key=key, context=context)
            parts.append(self.estimate_table([row]))
            self._nested(value, path, parts, context)
            return
        if isinstance(value, Mapping):
            if _table_like(value):
                if heading:
                    parts.append(Part("heading", text=heading))
                records = [{"": self.label(k, context), **v} for k, v in value.items()]
                parts.append(self.record_table(records, context))
                return
            facts = [
                (self.label(k, context), fact_text(v))
                for k, v in value.items()
                if is_scalar(v) or is_scalar_list(v)
            ]
            estimates = [
                self.estimate_row(self.label(k, context), v, key=str(k), context=f"{context}/{k}")
                for k, v in value.items()
                if is_estimate(v) or is_status_only(v)
            ]
            if (facts or estimates) and heading:
                parts.append(Part("heading", text=heading))
            if facts:
                parts.append(Part("facts", facts=facts))
            if estimates:
                parts.append(self.estimate_table(estimates))
            for k, v in value.items():
                below = f"{context}/{k}"
                if is_estimate(v) or is_status_only(v):
                    if isinstance(v, Mapping):
                        self._nested(v, [*path, self.label(k, context)], parts, below)
                    continue
                if isinstance(v, Mapping | list | tuple) and not is_scalar_list(v):
                    name = "rows counted" if k == "n" else self.label(k, context)
                    self.walk(v, [*path, name], parts, str(k), below)
            return
        if isinstance(value, list | tuple):
            if is_scalar_list(value):
                parts.append(Part("facts", facts=[(heading or "values", fact_text(value))]))
                return
            if heading:
                parts.append(Part("heading", text=heading))
            parts.append(self.record_table([v for v in value if isinstance(v, Mapping)], context))
            return
        parts.append(Part("facts", facts=[(heading or "value", fact_text(value))]))

    def _nested(self, block: Mapping[str, Any], path: list[str], parts: list[Part], context: str) -> None:
        """Sub-results inside an estimate (e.g. the two TOST variants) get their own tables."""
        for k, v in block.items():
            if k in _ESTIMATE_FIELDS or not isinstance(v, Mapping):
                continue
            nested = not all(is_scalar(x) for x in v.values())
            if nested or is_estimate(v) or is_status_only(v):
                self.walk(v, [*path, self.label(k, context)], parts, str(k), f"{context}/{k}")

    def record_table(self, records: Sequence[Mapping[str, Any]], context: str = "") -> Part:
        """A list of records (e.g. the BH family) as a table with one column per field."""
        columns: list[str] = []
        for record in records:
            columns.extend(k for k in record if k not in columns)
        rows = []
        for record in records:
            cells = []
            for column in columns:
                v = record.get(column)
                if (column in ("p", "p_adj", "p_value") or column.startswith("p_")) and not isinstance(
                    v, bool
                ):
                    cells.append(fmt_p(v, bound=bool(record.get("p_bound"))))
                elif is_scalar(v) or is_scalar_list(v):
                    cells.append(shorten(fact_text(v)))
                else:
                    cells.append(shorten(json.dumps(v, default=str, sort_keys=True)))
            rows.append(Row(cells=cells, flags=flags_of(record)))
        labels = [self.label(c, context) if c else "" for c in columns]
        if any(row.flags for row in rows):
            labels.append("flags")
            for row in rows:
                row.cells.append("")
        return Part("table", columns=labels, rows=rows)
