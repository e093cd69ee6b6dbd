"""Annotation exchange, import: annotators' answers read back (docs/HUMAN_VALIDATION.md).

Import: a Label Studio export (JSON, JSON-MIN or CSV, told apart by content: ``_ls_formats.py``)
or the CSV filled in. A bad rating is a rating, not a bad file (issue 36): a record that
contradicts itself or the codebook (``EXCLUSION_REASONS``) is imported as excluded with its
reason, and the rest of the file imports. A file that is not an export of this study (unreadable,
an unknown task or control, no annotator) is refused whole with an error naming the file, record
and field (and how many more records are invalid), so it never half-lands. Ratings imported
before are the ledger's business (``_ledger.py``): a re-export's ratings are skipped, ratings
changed in Label Studio kept as revisions, and a rating that contradicts an imported one (an
older export) refuses the file. A file whose content was already imported
(same sha256) is a duplicate, not read again. Label Studio users are namespaced by instance and
mapped to the design's annotators by ``_annotators.py``; a bad map stops the import before any
file is read.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from clcg_pipeline.validation.human._annotators import LS_PREFIX, read_annotator_map
from clcg_pipeline.validation.human._exchange_format import (
    ANSWER_COLUMNS,
    FILL_FIELDS,
    IMPORT_COLUMNS,
    PAIR_FIELDS,
    REFUSED_STATUSES,
    REVISION_COLUMNS,
    SINGLE_FIELDS,
    AnnotationFileError,
    InboxFile,
)
from clcg_pipeline.validation.human._ledger import (
    Ledger,
    Verdict,
    annotations_frame,
    apply,
    judge,
    revisions_frame,
)
from clcg_pipeline.validation.human._ls_formats import LS_CSV, is_ls_csv, parse_json, parse_ls_csv
from clcg_pipeline.validation.human._ratings import Context, context, design_annotators, rating, where

_ANSWERED = (*SINGLE_FIELDS, *PAIR_FIELDS, *FILL_FIELDS)


def parse_csv(file: InboxFile, ctx: Context) -> tuple[str, list[dict[str, Any]], list[str]]:
    """``(format, records, errors)`` of a CSV: the filled-in one (one row per assignment;
    unanswered rows are skipped), or a Label Studio CSV export."""
    try:
        text = file.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AnnotationFileError(f"annotation file {file.name!r}: not UTF-8 ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise AnnotationFileError(f"annotation file {file.name!r}, header: {exc}") from None
    if is_ls_csv(header):
        return (LS_CSV, *parse_ls_csv(file, ctx, text))
    missing = [c for c in ("task_id", "annotator_id") if c not in header]
    if missing:
        raise AnnotationFileError(f"annotation file {file.name!r}, header: missing column(s) {missing}")
    if not any(c in header for c in _ANSWERED):
        raise AnnotationFileError(
            f"annotation file {file.name!r}, header: no answer column ({ANSWER_COLUMNS})"
        )
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    try:
        for row in reader:
            try:
                got = _csv_rating(file, ctx, f"line {reader.line_num}", row)
            except AnnotationFileError as exc:
                errors.append(str(exc))
                continue
            if got is not None:
                records.append(got)
    except csv.Error as exc:
        raise AnnotationFileError(f"annotation file {file.name!r}, line {reader.line_num}: {exc}") from None
    return "csv", records, errors


def _csv_rating(file: InboxFile, ctx: Context, record: str, row: dict[str, Any]) -> dict[str, Any] | None:
    """One row of the filled-in CSV as a rating; None for an assignment not answered (yet)."""
    if None in row:
        raise AnnotationFileError(f"{where(file.name, record)}: more cells than header columns")
    answers = {c: row.get(c) for c in (*ANSWER_COLUMNS, *FILL_FIELDS, "simulated") if c in row}
    if not any((answers.get(c) or "").strip() for c in _ANSWERED):
        return None
    annotator = (row.get("annotator_id") or "").strip()
    if annotator.startswith(LS_PREFIX):
        raise AnnotationFileError(
            f"{where(file.name, record, 'annotator_id')}: {annotator!r}: ids starting with "
            f"{LS_PREFIX!r} are Label Studio users' (map a user to a design id in the annotator map)"
        )
    out = rating(ctx, file.name, record, row.get("task_id"), annotator, answers)
    out.update(ls_annotation_id=None, ls_updated_at=None)
    return out


@dataclass
class ImportResult:
    annotations: pd.DataFrame
    imports: pd.DataFrame
    to_archive: list[InboxFile] = field(default_factory=list)
    #: ``human_annotation_revisions``: every revision of every rating (``current`` marks the counted one).
    revisions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=REVISION_COLUMNS))
    #: (file, sha256) of the log rows this import wrote or changed: new files, files gone stale.
    touched: set[tuple[str, str]] = field(default_factory=set)

    @property
    def excluded(self) -> pd.DataFrame:
        """The ratings whose current revision is excluded (``standing_exclusions``)."""
        return standing_exclusions(self.revisions)

    @property
    def rejected(self) -> pd.DataFrame:
        return self.imports[self.imports["status"].isin(REFUSED_STATUSES)]

    @property
    def now(self) -> pd.DataFrame:
        """The log rows of what this import did (its files, and files that went stale now)."""
        keys = list(zip(self.imports["file"], self.imports["sha256"], strict=True))
        return self.imports[[k in self.touched for k in keys]].reset_index(drop=True)


#: The per-file counts of a log row, in the order they are said.
COUNTS = ("imported", "skipped", "revised", "excluded", "refused")


def _explained(row: Mapping[str, Any]) -> bool:
    """Whether the row's ``error`` says something: why it was refused, or which ratings were excluded."""
    said = isinstance(row.get("error"), str) and bool(row["error"])
    return said and (row["status"] in REFUSED_STATUSES or _n(row, "excluded") > 0)


def _n(row: Mapping[str, Any], column: str) -> int:
    value = row.get(column)
    return 0 if value is None or pd.isna(value) else int(value)


def import_line(row: Mapping[str, Any]) -> str:
    """One file's outcome in a line: status, its ratings imported / skipped / revised / excluded /
    refused, and why it was refused or which ratings were excluded."""
    counts = ", ".join(f"{_n(row, c)} {c}" for c in COUNTS)
    line = f"{row['file']} ({row['format']}): {row['status']}: {counts}"
    return f"{line}: {row['error']}" if _explained(row) else line


def import_lines(imports: pd.DataFrame) -> list[str]:
    """``import_line`` of every row of an ``annotation_imports`` frame, in its order."""
    return [import_line(r) for r in imports.to_dict("records")] if len(imports) else []


def import_table(imports: pd.DataFrame) -> str:
    """A Markdown table of ``annotation_imports`` rows (Dagster metadata): one row per file."""
    head = f"| file | format | status | {' | '.join(COUNTS)} | error |\n" + "|---" * (4 + len(COUNTS)) + "|"
    rows = [
        f"| {r['file']} | {r['format']} | {r['status']} | "
        + " | ".join(str(_n(r, c)) for c in COUNTS)
        + f" | {_md_cell(r['error']) if _explained(r) else ''} |"
        for r in imports.to_dict("records")
    ]
    return "\n".join([head, *rows]) if rows else "no annotation file imported in this run"


def _md_cell(value: Any) -> str:
    return str(value or "").replace("|", "\\|").replace("\n", " ")


def _parse(file: InboxFile, ctx: Context) -> tuple[str, list[dict[str, Any]]]:
    """``(format, records)`` of a file; AnnotationFileError for an invalid one."""
    if file.format == "unknown":
        raise AnnotationFileError(
            f"annotation file {file.name!r}: unsupported format "
            "(expected a Label Studio export .json or .csv, or the filled-in .csv)"
        )
    fmt, records, errors = (parse_json if file.format == "label_studio_json" else parse_csv)(file, ctx)
    if errors:
        more = f" (and {len(errors) - 1} more invalid record(s))" if len(errors) > 1 else ""
        raise AnnotationFileError(errors[0] + more, len(errors), len(records) + len(errors))
    seen: dict[tuple[str, str], str] = {}
    for r in records:
        key = (r["task_id"], r["annotator_id"])
        if key in seen:
            raise AnnotationFileError(
                f"{where(file.name, r['record'], 'annotator_id')}: task {key[0]!r} rated twice by "
                f"{key[1]!r} in this file (also {seen[key]})",
                1,
                len(records),
            )
        seen[key] = r["record"]
    return fmt, records


def import_annotations(
    inbox: Sequence[InboxFile],
    previous: pd.DataFrame,
    archived: Callable[[str], bytes | None],
    sample: pd.DataFrame,
    keypoints: pd.DataFrame,
    error_categories: Sequence[str],
    *,
    imported_at: str,
    annotator_map: InboxFile | None = None,
) -> ImportResult:
    """Rebuild ``human_annotations`` from every accepted file, plus what is new in the inbox.

    ``previous`` is the last ``annotation_imports`` log; ``archived(sha256)`` returns the bytes
    of a file accepted earlier (kept by the caller under the data folder, so clearing the inbox
    loses nothing). New inbox files are taken in name order; a (name, sha256) already logged is
    not looked at again. ``annotator_map``: the team's ``label_studio_users.csv``, if any; an
    invalid one raises AnnotatorMapError before anything is read.
    """
    annotators = read_annotator_map(annotator_map, design_annotators(sample))
    ctx = context(sample, keypoints, error_categories, annotators)
    log = _previous_log(previous)
    was_accepted = {(e["file"], e["sha256"]) for e in log if e["status"] == "accepted"}
    ledger = _reimported(log, archived, ctx)
    touched = {(e["file"], e["sha256"]) for e in log if e["status"] == "stale"} & was_accepted
    logged = {(e["file"], e["sha256"]) for e in log}
    by_sha = {e["sha256"]: e for e in log if e["status"] == "accepted"}
    to_archive: list[InboxFile] = []
    for file in sorted(inbox, key=lambda f: f.name):
        if (file.name, file.sha256) in logged:
            continue
        entry = {
            "file": file.name,
            "sha256": file.sha256,
            "format": file.format,
            **dict.fromkeys(("records", *COUNTS), 0),
            "status": "rejected",
            "error": None,
            "imported_at": imported_at,
        }
        log.append(entry)
        logged.add((file.name, file.sha256))
        touched.add((file.name, file.sha256))
        verdict = _new_verdict(file, entry, ctx, ledger, by_sha)
        if verdict is None:
            continue
        apply(
            ledger,
            verdict,
            {"source_file": file.name, "source_sha256": file.sha256, "imported_at": imported_at},
        )
        entry.update(
            status="accepted",
            imported=verdict.imported,
            skipped=verdict.skipped,
            revised=verdict.revised,
            excluded=verdict.excluded,
            error=_exclusions(verdict),
        )
        by_sha[file.sha256] = entry
        to_archive.append(file)
    annotations = annotations_frame(ledger)
    return ImportResult(
        annotations=annotations,
        imports=pd.DataFrame(log, columns=IMPORT_COLUMNS),
        to_archive=to_archive,
        revisions=revisions_frame(ledger, annotations),
        touched=touched,
    )


def _exclusions(verdict: Verdict) -> str | None:
    """The ``error`` of an accepted file with excluded ratings: how many, the first (file, record,
    field and why) and how many more; None without any."""
    if not verdict.exclusions:
        return None
    more = f" (and {len(verdict.exclusions) - 1} more)" if len(verdict.exclusions) > 1 else ""
    return (
        f"{len(verdict.exclusions)} rating(s) excluded, counted in no statistic until corrected: "
        f"{verdict.exclusions[0]}{more}"
    )


def _previous_log(previous: pd.DataFrame) -> list[dict[str, Any]]:
    """The log's rows; one written before issue 19 (``accepted``/``rejected`` counts) read as
    imported / refused, with nothing skipped or revised; one before issue 36 with nothing excluded."""
    if not len(previous):
        return []
    frame = previous.copy()
    if "imported" not in frame.columns:
        frame["imported"] = frame.get("accepted", 0)
        frame["refused"] = frame.get("rejected", 0)
        frame["skipped"] = frame["revised"] = 0
    if "excluded" not in frame.columns:
        frame["excluded"] = 0
    return frame[IMPORT_COLUMNS].to_dict("records")


def _reimported(log: list[dict[str, Any]], archived: Callable[[str], bytes | None], ctx: Context) -> Ledger:
    """Every file accepted before, read again from the archive against the current sample and
    annotator map, in import order; a file that no longer imports goes stale."""
    ledger = Ledger()
    for entry in log:
        if entry["status"] != "accepted":
            continue
        data = archived(entry["sha256"])
        try:
            if data is None:
                raise AnnotationFileError(f"annotation file {entry['file']!r}: its archived copy is missing")
            _, records = _parse(InboxFile(entry["file"], data), ctx)
            verdict = judge(ledger, records, entry["file"])
            if verdict.conflicts:
                raise AnnotationFileError(verdict.error())
        except AnnotationFileError as exc:
            entry.update(status="stale", error=f"no longer imports against the current sample: {exc}")
            continue
        source = {
            "source_file": entry["file"],
            "source_sha256": entry["sha256"],
            "imported_at": entry["imported_at"],
        }
        apply(ledger, verdict, source)
    return ledger


def _new_verdict(
    file: InboxFile,
    entry: dict[str, Any],
    ctx: Context,
    ledger: Ledger,
    by_sha: dict[str, dict[str, Any]],
) -> Verdict | None:
    """What a new inbox file's ratings do, or None with ``entry`` saying why it imports nothing
    (a duplicate, an invalid record, or a rating contradicting one imported before)."""
    if file.sha256 in by_sha:
        earlier = by_sha[file.sha256]
        entry.update(
            status="duplicate",
            format=earlier["format"],
            records=earlier["records"],
            skipped=earlier["records"],
            error=f"annotation file {file.name!r}: same content (sha256 {file.sha256[:12]}...) as "
            f"{earlier['file']!r}, already imported; nothing imported from it",
        )
        return None
    try:
        fmt, records = _parse(file, ctx)
    except AnnotationFileError as exc:
        entry.update(error=str(exc), refused=exc.rejected, records=exc.records)
        return None
    entry.update(format=fmt, records=len(records))
    verdict = judge(ledger, records, file.name)
    if verdict.conflicts:
        entry.update(refused=len(verdict.conflicts), error=verdict.error())
        return None
    return verdict


def standing_exclusions(revisions: pd.DataFrame | None) -> pd.DataFrame:
    """The ratings whose current revision is excluded (not counted until a later export corrects them)."""
    if revisions is None or not len(revisions) or "excluded_reason" not in revisions.columns:
        return pd.DataFrame(columns=REVISION_COLUMNS)
    return revisions[revisions["current"].astype(bool) & revisions["excluded_reason"].notna()]


def _exclusion_note(standing: pd.DataFrame, shown: int = 3) -> str:
    """The standing exclusions named: task, annotator, file, record and reason of the first few."""
    named = [
        f"task {r['task_id']!r} by {r['annotator_id']!r} ({r['source_file']!r}, {r['record']}): "
        f"{r['excluded_reason']}"
        for r in standing.head(shown).to_dict("records")
    ]
    more = f"; and {len(standing) - shown} more" if len(standing) > shown else ""
    return (
        f"{len(standing)} rating(s) excluded, counted in no statistic until a later export corrects "
        f"them: {'; '.join(named)}{more}"
    )


def import_status(
    imports: pd.DataFrame,
    annotations: pd.DataFrame,
    inbox: str,
    revisions: pd.DataFrame | None = None,
) -> tuple[bool, str]:
    """``(passed, description)`` of the import's check: WARN while awaiting annotations, when a
    file was refused, or while a rating is excluded (``revisions``: its current revision is, named
    with its reason); revisions and skipped files are named; simulated ratings are named as such."""
    if imports.empty:
        passed, description = False, f"awaiting annotations: the inbox {inbox} holds no annotation file yet"
    else:
        refused = imports[imports["status"].isin(REFUSED_STATUSES)]
        accepted = imports[imports["status"] == "accepted"]
        standing = standing_exclusions(revisions)
        passed = refused.empty and standing.empty
        description = f"{len(annotations)} ratings from {len(accepted)} file(s)"
        if not refused.empty:
            description = (
                f"{len(refused)} of {len(imports)} file(s) not imported: {refused['error'].iloc[0]}; "
                + description
            )
        if not standing.empty:
            description += f"; {_exclusion_note(standing)}"
        revised, skipped = int(accepted["revised"].sum()), int(accepted["skipped"].sum())
        duplicates = int((imports["status"] == "duplicate").sum())
        notes = [f"{revised} revised in Label Studio since imported"] if revised else []
        notes += [f"{skipped} already imported, skipped"] if skipped else []
        notes += [f"{duplicates} file(s) identical to one imported, skipped"] if duplicates else []
        if notes:
            description += f" ({'; '.join(notes)})"
    if len(annotations) and bool(annotations["simulated"].any()):
        description += " (SIMULATED demo annotations)"
    return passed, description
