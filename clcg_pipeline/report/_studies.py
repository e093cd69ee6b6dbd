"""Shared pieces of the validation and granularity sections: status lines, record tables, secrets.

Each study's results dict (``error_taxonomy``, ``human_validation``, ``granularity`` in
study_results.json) carries a ``status`` and a ``reason``. A section always opens with that
status in words, so a study that did not run, was skipped, awaits annotations or could not
identify its intervals never looks like an empty success.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from markupsafe import Markup

from clcg_pipeline.report._format import MISSING, as_float, fmt_ci, fmt_int, fmt_num, fmt_p, fmt_value
from clcg_pipeline.report._page import Part, Row, flags_of
from clcg_pipeline.storage import StudyView

CI_WITHHELD = "CI withheld"
# What a withheld interval shows once its section says "CI withheld" in words (``_consistency``).
WITHHELD_MARK = "\u2014"
# The generic builder's walk (value, heading path, parts to extend, key, context): renders what a
# study's contract does not name.
Walk = Callable[[object, list[str], list[Part], str, str], None]
# Keys that name a credential; values that look like one (provider key prefixes, bearer tokens).
# Narrower than the header's pattern on purpose: "prompt_tokens_by_task" is a result, not a secret.
SECRET_KEY = re.compile(
    r"(api[_-]?key|secret|password|passwd|credential|authori[sz]ation|bearer|private[_-]?key|"
    r"access[_-]?token|auth[_-]?token|session[_-]?token|^token$)",
    re.IGNORECASE,
)
SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_\-]{12,}|AKIA[0-9A-Z]{16}|(?:ghp|gho|ghs|github_pat|xox[abp])_[A-Za-z0-9_]{10,}"
    r"|hf_[A-Za-z0-9]{16,}|Bearer\s+[A-Za-z0-9._\-]{12,}|AIza[0-9A-Za-z_\-]{30,})"
)
REDACTED = "[redacted]"
# Statuses a study's dict may carry, with the status line's level and the words that open it.
_STATUS_WORDS: dict[str, tuple[str, str]] = {
    "ok": ("ok", "Status: ok"),
    "skipped": ("warn", "Skipped"),
    "not_identifiable": ("warn", "Not identifiable"),
    "awaiting": ("warn", "Awaiting annotations"),
    "empty": ("warn", "Empty"),
    "error": ("missing", "Failed"),
    "failed": ("missing", "Failed"),
}
MAX_TABLE_ROWS = 150
# Longer tables start folded (a <details> disclosure: no script, found by the browser's search),
# so the charts above them stay in view; the charts carry the same numbers.
FOLD_ROWS = 25


def clean(value: Any) -> Any:
    """``value`` without credential-named keys and with key-like strings masked (never shown)."""
    if isinstance(value, Mapping):
        return {k: clean(v) for k, v in value.items() if not SECRET_KEY.search(str(k))}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, str):
        return SECRET_VALUE.sub(REDACTED, value)
    return value


def normal_status(block: StudyView | None) -> str:
    """``missing`` when the study has no entry, else its status in snake case (``ok`` when absent)."""
    if block is None:
        return "missing"
    if block.status is None:
        return "ok"
    status = re.sub(r"[\s-]+", "_", block.status.strip().lower()) or "ok"
    # "awaiting annotations", "not identifiable: ..." name the same states as their short forms.
    for short in ("awaiting", "not_identifiable", "skipped"):
        if status.startswith(short):
            return short
    return status


def status_part(block: StudyView | None, *, key: str, what: str, extra: str = "", warn: bool = False) -> Part:
    """The section's first line: what state the study is in, and why."""
    status = normal_status(block)
    if block is None:
        return Part(
            "status",
            level="missing",
            text=f"Not run: study_results.json has no {key!r} entry, so {what} has no result in this "
            "document (the study is not part of this run, or its results were not merged).",
        )
    reason = block.reason or ""
    level, words = _STATUS_WORDS.get(status, ("warn", f"Status: {block.status}"))
    # "skipped: the study is off" under "Skipped" would say it twice.
    reason = re.sub(rf"^{re.escape(status.replace('_', ' '))}\s*:\s*", "", reason, flags=re.IGNORECASE)
    text = words + (f": {reason}" if reason else "")
    if status == "not_identifiable":
        text += (
            f" (shown as \u201c{CI_WITHHELD}\u201d)."
            if "withheld" in reason
            else ". Point estimates are shown as descriptions; their intervals are withheld "
            f"(\u201c{CI_WITHHELD}\u201d)."
        )
    elif status == "ok" and not reason:
        # A warned "ok" (every interval withheld) names what the section shows, not a success.
        text = "Status: descriptive only." if warn else "Status: ok (computed)."
    if extra:
        text += ("" if text.endswith(".") else ".") + " " + extra
    return Part("status", level="warn" if warn and level == "ok" else level, text=text)


def records(block: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = block.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list | tuple) else []


def words(text: object) -> str:
    """``partial_or_omission`` -> ``partial or omission``."""
    return MISSING if text is None else str(text).replace("_", " ")


def fmt_pct(value: object, digits: int = 1) -> str:
    """A proportion (0-1) as a percentage; values above 1 are taken as percentages already."""
    number = as_float(value)
    if number is None:
        return MISSING
    if abs(number) > 1.0 + 1e-9:
        return f"{number:.{digits}f}%"
    text = f"{number * 100:.{digits}f}%"
    return text[1:] if text.startswith("-") and float(text[:-1]) == 0 else text


def withheld(
    record: Mapping[str, Any], value_key: str = "estimate", low: str = "ci_low", high: str = "ci_high"
) -> bool:
    """A point estimate without an interval: the interval was withheld (or never computable).

    Records whose shape has no interval at all (no ``ci_low``/``ci_high`` key) withhold nothing.
    """
    if low not in record and high not in record:
        return False
    return as_float(record.get(value_key)) is not None and (
        as_float(record.get(low)) is None or as_float(record.get(high)) is None
    )


def ci_cell(
    record: Mapping[str, Any],
    value_key: str = "estimate",
    *,
    low: str = "ci_low",
    high: str = "ci_high",
    pct: bool = False,
    digits: int = 3,
) -> str:
    lo, hi = record.get(low), record.get(high)
    if low not in record and high not in record:
        return MISSING
    if str(record.get("status") or "").lower().startswith("ok") and (
        as_float(lo) is None or as_float(hi) is None
    ):
        return "not computed"  # e.g. "ok (no interval: one value per class)": nothing was withheld
    if as_float(lo) is not None and as_float(hi) is not None:
        return f"[{fmt_pct(lo)}, {fmt_pct(hi)}]" if pct else fmt_ci(lo, hi, digits)
    return CI_WITHHELD if as_float(record.get(value_key)) is not None else MISSING


def row_flags(
    record: Mapping[str, Any], value_key: str = "estimate", *, section_status: str = "ok"
) -> list[str]:
    """Why a row should not be read at face value; a withheld interval is always named."""
    flags = flags_of(record)
    status = str(record.get("status") or "")
    if status.lower().startswith("ok"):
        # "ok (no interval: one value per class)": a note on a sound value, not a warning.
        return [f for f in flags if f != status]
    if section_status == "not_identifiable":
        # The status line gives the reason once; repeating it on every row buries the table.
        flags = list(
            dict.fromkeys("not identifiable" if f.startswith("not identifiable") else f for f in flags)
        )
    reason = record.get("reason")
    if as_float(record.get(value_key)) is None and reason and not any(str(reason) in f for f in flags):
        flags.append(str(reason))  # nothing estimated: say why
    if withheld(record, value_key) and not flags:
        flags.append(
            "interval withheld" + (f": {reason}" if reason else "")
            if section_status != "not_identifiable" or reason
            else "not identifiable"
        )
    return flags


# One column of a record table: header, cell function, right-aligned?
Column = tuple[str, Callable[[Mapping[str, Any]], str], bool]


def col(header: str, key: str, kind: str = "text", *, digits: int = 3) -> Column:
    """A column reading ``key`` as text, num, int, pct or p."""
    formats: dict[str, Callable[[object], str]] = {
        "text": lambda v: MISSING if v is None else _text(v),
        "num": lambda v: fmt_num(v, digits),
        "int": fmt_int,
        "pct": fmt_pct,
        "p": fmt_p,
        "words": words,
    }
    fmt = formats[kind]
    return (header, lambda r: fmt(r.get(key)), kind not in ("text", "words"))


def _text(value: object) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    return fmt_value(value)


def record_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    *,
    value_key: str = "estimate",
    section_status: str = "ok",
    known: Iterable[str] = (),
    limit: int = MAX_TABLE_ROWS,
    always: Iterable[str] = (),
) -> list[Part]:
    """A table of ``rows`` (first ``limit``), flags per row, and other fields as a notes column.

    ``known`` are the record keys the columns already show (or that are bookkeeping); any
    other scalar field is kept visible in the notes instead of being dropped.
    """
    skip = {*known, "identifiable", "reason", "flags", "p_bound", "valid_replicates"}
    body: list[Row] = []
    notes_used = False
    for record in rows[:limit]:
        notes = [
            f"{words(k)}: {_text(v)}"
            for k, v in record.items()
            if k not in skip
            and (k != "status" or str(v).lower().startswith("ok ("))  # other statuses are flags
            and (v is None or isinstance(v, str | int | float | bool | list | tuple))
            and not (isinstance(v, list | tuple) and any(isinstance(x, Mapping) for x in v))
        ]
        notes_used = notes_used or bool(notes)
        body.append(
            Row(
                cells=[fn(record) for _, fn, _ in columns] + ["; ".join(notes)],
                flags=row_flags(record, value_key, section_status=section_status),
            )
        )
    headers = [h for h, _, _ in columns]
    flagged = any(r.flags for r in body)
    if flagged or notes_used:
        headers.append("flags and notes")
    else:
        for r in body:
            r.cells.pop()
    # Columns empty in every row (a field this document does not carry) are dropped, except ``always``.
    keep = [
        i
        for i, header in enumerate(headers)
        if i == 0
        or header in always
        or any(r.cells[i] not in ("", MISSING) for r in body)
        or (header.startswith("flags") and flagged)
    ]
    table = Part(
        "table",
        columns=[headers[i] for i in keep],
        rows=[Row(cells=[r.cells[i] for i in keep], flags=r.flags) for r in body],
        numeric=[h for h, _, num in columns if num],
    )
    if len(body) > FOLD_ROWS:
        flagged_rows = sum(1 for r in body if r.flags)
        table.summary = (
            f"Table: {len(rows)} rows"
            + (f" ({flagged_rows} flagged)" if flagged_rows else "")
            + " — click to show"
        )
    parts = [table]
    if len(rows) > limit:
        parts.append(Part("note", text=f"{len(rows) - limit} more rows are in study_results.json."))
    return parts


def empty_note(status: str, what: str) -> list[Part]:
    """Nothing to show: say so when the study ran (``ok``); otherwise the status line said why."""
    if status == "ok":
        return [Part("note", text=f"No {what} recorded.")]
    return []


def opening(title: str, found: bool, status: str, what: str) -> list[Part]:
    """A block's heading; when nothing was ``found``, a "No what recorded." note, or nothing at all.

    The one recipe of every study block: heading, then (if found) charts and tables; a study that did
    not run (status not ``ok``) has its status line say why, so an empty block adds nothing.
    """
    heading = [Part("heading", text=title)]
    if found:
        return heading
    return heading + empty_note(status, what) if status == "ok" else []


def chart(svg: str) -> list[Part]:
    """A chart part, or none when there was nothing to draw (the SVG modules escape every text)."""
    return [Part("chart", chart=Markup(svg))] if svg else []


def further_results(block: Mapping[str, Any], known: Iterable[str], key: str, walk: Walk) -> list[Part]:
    """Keys beyond the contract still render (generically), so nothing computed is hidden."""
    known = set(known)
    rest = {k: v for k, v in block.items() if k not in known}
    parts: list[Part] = []
    if rest:
        parts.append(Part("heading", text="Further results"))
        walk(rest, [], parts, key, key)
    return parts


def caveat_parts(block: StudyView) -> list[Part]:
    # The status line already gives the study's reason; a caveat that only repeats it is left out.
    reason = block.reason or ""
    items = [c for c in block.caveats or [] if c and not (reason and reason.endswith(c))]
    if not items:
        return []
    return [Part("heading", text="Caveats"), Part("list", items=items)]


def facts_part(pairs: Sequence[tuple[str, object]]) -> Part | None:
    facts = [
        (name, value if isinstance(value, str) else _text(value))
        for name, value in pairs
        if value is not None
    ]
    return Part("facts", facts=facts) if facts else None


def tidy(parts: list[Part]) -> list[Part]:
    """Drop a chart title whose chart came out empty (nothing to draw), so no title stands alone."""
    return [
        part
        for i, part in enumerate(parts)
        if part.kind != "chart-title" or (i + 1 < len(parts) and parts[i + 1].kind == "chart")
    ]


def withheld_everywhere(block: Mapping[str, Any], keys: Sequence[str], value_keys: Sequence[str]) -> bool:
    """Every estimated record under ``keys`` that has interval fields has its interval withheld."""
    seen = False
    for key in keys:
        for record in records(block, key):
            for value_key in value_keys:
                if value_key in record and ("ci_low" in record or "ci_high" in record):
                    if as_float(record.get(value_key)) is None:
                        break  # nothing estimated, so nothing withheld (e.g. English's own gap)
                    if not withheld(record, value_key):
                        return False
                    seen = True
                    break
    return seen


# The breakdowns of a pooled study table per target language or per script (``<key>_by_<by>``).
GROUP_KEYS = frozenset({"language", "script", "languages"})
_GROUP_COLUMNS = {
    "language": (col("language", "language"), col("script", "script")),
    "script": (col("script", "script"), col("languages", "languages")),
}


def by_group_parts(
    block: Mapping[str, Any],
    *,
    grouped: str,
    pooled: str,
    by: str,
    title: str,
    what: str,
    columns: Sequence[Column],
    value_key: str,
    status: str,
    known: Iterable[str],
) -> list[Part]:
    """The ``grouped`` records as a table headed ``title by <by>``: the first column, then the
    language or script columns, then the rest. Nothing when the pooled table is empty too (the
    pooled block already says so)."""
    rows = records(block, grouped)
    if not rows and not records(block, pooled):
        return []
    parts = opening(f"{title} by {by}", bool(rows), status, f"per-{by} {what}")
    if not rows:
        return parts
    return parts + record_table(
        rows,
        [columns[0], *_GROUP_COLUMNS[by], *columns[1:]],
        value_key=value_key,
        section_status=status,
        known=GROUP_KEYS | set(known),
    )
