"""Who rated: Label Studio users, namespaced by instance, and a team's map to the design's ids.

A Label Studio user id (``completed_by``) is unique only within one Label Studio instance, and
nothing in an export names the instance (tasks carry project and user ids only, and the user's
e-mail is not stored here). So imported users are ``ls:<instance>:<user id>``, the instance
named by the team in ``annotations/label_studio_users.csv`` (``label-studio`` when it names
none), and the demo's SIMULATED annotations are their own instance, ``ls:simulated:<id>``, so
real and simulated users never merge. The same file maps users to the design's annotator ids
(the ``annotators`` of ``annotation_sample``); it is checked before any file is imported.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from clcg_pipeline.validation.human._exchange_format import InboxFile

LS_PREFIX = "ls:"
DEFAULT_INSTANCE = "label-studio"
SIMULATED_INSTANCE = "simulated"
MAP_COLUMNS = ("instance", "user_id", "annotator_id")
_INSTANCE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


class AnnotatorMapError(ValueError):
    """The annotator map is invalid; the message names the file, line and field."""


@dataclass(frozen=True)
class AnnotatorMap:
    """The instance name of the team's Label Studio and its users' design annotator ids."""

    instance: str = DEFAULT_INSTANCE
    users: Mapping[int, str] = field(default_factory=dict)

    def annotator(self, user: int, *, simulated: bool) -> str:
        """The annotator id of Label Studio user ``user`` (a simulated one is never mapped)."""
        if simulated:
            return f"{LS_PREFIX}{SIMULATED_INSTANCE}:{user}"
        return self.users.get(user) or f"{LS_PREFIX}{self.instance}:{user}"


def ls_user_id(value: Any) -> int | None:
    """A Label Studio user id (``completed_by``: an int, its text, or the user object); else None."""
    if isinstance(value, dict):
        value = value.get("id")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _where(name: str, line: int, fld: str) -> str:
    return f"annotator map {name!r}, line {line}, field {fld!r}"


def read_annotator_map(file: InboxFile | None, design_ids: Collection[str]) -> AnnotatorMap:
    """The map in ``file`` (None: no file, the default instance and no mapped user), validated
    against the design's annotator ids; raises AnnotatorMapError naming the file, line and field."""
    if file is None:
        return AnnotatorMap()
    try:
        text = file.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AnnotatorMapError(f"annotator map {file.name!r}: not UTF-8 ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in MAP_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise AnnotatorMapError(
            f"annotator map {file.name!r}, header: missing column(s) {missing} (expected {list(MAP_COLUMNS)})"
        )
    instance: tuple[str, int] | None = None
    users: dict[int, tuple[str, int]] = {}
    taken: dict[str, int] = {}
    try:
        for row in reader:
            line = reader.line_num
            name = _instance(file.name, line, (row.get("instance") or "").strip(), instance)
            instance = instance or (name, line)
            mapped = _user_row(file.name, line, row, set(design_ids))
            if mapped is None:
                continue  # a row naming the instance only
            user, annotator = mapped
            if user in users:
                raise AnnotatorMapError(
                    f"{_where(file.name, line, 'user_id')}: user {user} is mapped twice (also line "
                    f"{users[user][1]})"
                )
            if annotator in taken:
                raise AnnotatorMapError(
                    f"{_where(file.name, line, 'annotator_id')}: {annotator!r} is already the id of another "
                    f"user (line {taken[annotator]}); two users mapped to one id would merge their ratings"
                )
            users[user] = (annotator, line)
            taken[annotator] = line
    except csv.Error as exc:
        raise AnnotatorMapError(f"annotator map {file.name!r}, line {reader.line_num}: {exc}") from None
    return AnnotatorMap(instance[0] if instance else DEFAULT_INSTANCE, {u: a for u, (a, _) in users.items()})


def _instance(name: str, line: int, value: str, first: tuple[str, int] | None) -> str:
    """The row's instance name, checked: a slug, not the simulated one, the same on every row."""
    if not _INSTANCE.fullmatch(value):
        raise AnnotatorMapError(
            f"{_where(name, line, 'instance')}: {value!r} is not an instance name (lower-case letters, "
            "digits, '.', '_' and '-', e.g. 'lab-berlin')"
        )
    if value == SIMULATED_INSTANCE:
        raise AnnotatorMapError(
            f"{_where(name, line, 'instance')}: {value!r} is reserved for the demo's simulated annotations"
        )
    if first is not None and value != first[0]:
        raise AnnotatorMapError(
            f"{_where(name, line, 'instance')}: {value!r} differs from {first[0]!r} (line {first[1]}); "
            "one Label Studio instance per study"
        )
    return value


def _user_row(name: str, line: int, row: Mapping[str, Any], design: set[str]) -> tuple[int, str] | None:
    """``(user id, design annotator id)`` of a row; None for a row that names the instance only."""
    raw_user = (row.get("user_id") or "").strip()
    annotator = (row.get("annotator_id") or "").strip()
    if not raw_user and not annotator:
        return None
    user = ls_user_id(raw_user)
    if user is None:
        raise AnnotatorMapError(
            f"{_where(name, line, 'user_id')}: {raw_user!r} is not a Label Studio user id (a whole number)"
        )
    if annotator not in design:
        shown = sorted(design)
        more = f" ... ({len(shown)} in all)" if len(shown) > 8 else ""
        raise AnnotatorMapError(
            f"{_where(name, line, 'annotator_id')}: {annotator!r} is not an annotator of the design "
            f"(annotation_sample's annotators: {shown[:8]}{more})"
        )
    return user, annotator
