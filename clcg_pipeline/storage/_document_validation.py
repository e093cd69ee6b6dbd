"""``study_results.json`` and its section documents checked against their shapes, when written and read.

The shapes stay the ``TypedDict`` classes of ``_documents`` and ``_granularity_documents``
(every producer builds plain dicts typed by them, and the report reads those dicts); pydantic
validates a document against them here with a ``TypeAdapter`` whose config refuses what the
shapes do not declare (``extra="forbid"``) and any value of another type (``strict``: no
``"12"`` for an int, no ``True`` for a number). The config set on the top shape holds for every
shape nested in it. A document that does not fit raises :class:`DocumentError` naming the file,
the section and the field (pydantic's ``loc``), before any work is done with it. The message
never holds a value of the document (an entry may carry a credential): the field, the kind of
problem and the value's JSON type (``got a string``).
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails
from upath import UPath

from clcg_pipeline.storage._documents import (
    ErrorTaxonomyResults,
    HumanValidationResults,
    StudyResultsDocument,
)
from clcg_pipeline.storage._granularity_documents import GranularityResults
from clcg_pipeline.storage._json import jsonable
from clcg_pipeline.storage._result_models import StudyResults

#: the document each file holds -> its shape (the sections are also assets of their own)
DOCUMENT_SHAPES: dict[str, type] = {
    "study_results": StudyResultsDocument,
    "error_taxonomy": ErrorTaxonomyResults,
    "human_validation": HumanValidationResults,
    "granularity": GranularityResults,
}

Model = TypeVar("Model", bound=BaseModel)

# How many further problems the message names after the first (the rest are counted).
_MORE = 3

# A document's values never reach the message (a settings entry may hold a credential): the
# message names the field, the problem and the JSON type of the value. bool before int (a subclass).
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (dict, "an object"),
    ((list, tuple), "an array"),
    (type(None), "null"),
)
# pydantic error types whose message is built from the input (or from a validator's own text).
_MESSAGE_CARRIES_INPUT = frozenset({"value_error", "assertion_error", "union_tag_invalid"})
# Shorter texts ("1", "ok") are not taken for a quoted value: messages contain such words anyway.
_ECHO_MIN = 3


class DocumentError(ValueError):
    """A results document that does not fit its shape; the message names file, section and field."""


@functools.cache
def _adapter(shape: type) -> TypeAdapter[Any]:
    # Built once per shape: building the whole document's validator takes ~0.3 s, checking one ~0.1 s.
    return TypeAdapter(shape)


def _field(loc: tuple[int | str, ...]) -> str:
    """``h1.by_language.sw.estimate``; list positions as ``[0]``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _document_path(document: object, loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """``loc`` without the union members pydantic names in it (``warnings.0.str``): only the keys
    and positions the document has (an unknown key is one of them; no shape requires a key)."""
    path: list[int | str] = []
    value = document
    for part in loc:
        inside = isinstance(value, dict) and part in value
        if inside or (isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)):
            value = value[part]  # type: ignore[index]
            path.append(part)
    return tuple(path)


def _json_type(value: object) -> str:
    """What a value is in its JSON file (``a string``, ``an object``), never the value itself."""
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return f"a {type(value).__name__}"


def _said(error: ErrorDetails) -> str:
    """The kind of problem, without the value: pydantic's own message for the fixed ones
    (``Input should be a valid integer``), a plain sentence for those whose message can carry
    the input (a validator's ``Value error, ...``, a union tag) or does here."""
    if error["type"] == "extra_forbidden":  # "Extra inputs are not permitted", said for a document
        return "a key its shape does not declare"
    if error["type"] in _MESSAGE_CARRIES_INPUT or _echoes(error["msg"], error.get("input")):
        return "a value its field does not accept"
    return error["msg"]


def _echoes(message: str, value: object) -> bool:
    """Whether ``message`` quotes ``value`` (or its text, when it is a scalar)."""
    if isinstance(value, (dict, list)) or value is None or isinstance(value, bool):
        return False
    text = str(value)
    return len(text) >= _ECHO_MIN and text in message


def _problems(exc: ValidationError, document: object) -> list[tuple[tuple[int | str, ...], str]]:
    """One problem per field, in pydantic's order: a value that fits none of a union's members
    gives one line saying what each would have needed."""
    found: dict[tuple[int | str, ...], list[str]] = {}
    shown: dict[tuple[int | str, ...], str] = {}
    for error in exc.errors():
        path = _document_path(document, tuple(error["loc"]))
        if error["type"] == "missing":  # the key the document lacks (an exported shape requires some)
            path += tuple(error["loc"][-1:])
        said = _said(error)
        if said not in found.setdefault(path, []):
            found[path].append(said)
        if error["type"] not in ("missing", "extra_forbidden"):
            shown.setdefault(path, f" (got {_json_type(error.get('input'))})")
    return [(path, " or ".join(said) + shown.get(path, "")) for path, said in found.items()]


def _message(
    exc: ValidationError,
    document: object,
    source: str,
    kind: str,
    shape: str,
    owner: str = "clcg_pipeline.storage",
) -> str:
    problems = _problems(exc, document)
    loc, said = problems[0]
    where = f"section {loc[0]!r}, " if kind == "study_results" and loc else ""
    head = f"{source}: {where}field {_field(loc) or '(top level)'}: {said}"
    more = [f"{_field(path)}: {text}" for path, text in problems[1 : 1 + _MORE]]
    rest = len(problems) - 1 - len(more)
    if more:
        head += "; also " + "; ".join(more) + (f"; and {rest} more" if rest else "")
    return head + f" (the shape is {shape}, {owner})"


def validate_document(document: object, kind: str = "study_results", *, source: str) -> None:
    """Raise :class:`DocumentError` unless ``document`` fits the shape of ``kind`` (``DOCUMENT_SHAPES``).

    ``document`` is checked as its JSON file holds it (tuples as lists, NumPy scalars unboxed);
    ``source`` is the file (or asset) named in the error.
    """
    plain = jsonable(document, unknown="keep")
    try:
        _adapter(DOCUMENT_SHAPES[kind]).validate_python(plain)
    except ValidationError as exc:
        raise DocumentError(_message(exc, plain, source, kind, DOCUMENT_SHAPES[kind].__name__)) from None


def study_results_view(document: object, *, source: str = "study_results.json") -> StudyResults:
    """``document`` as the typed :class:`StudyResults` its readers use; :class:`DocumentError` when a
    field it names has another type (the keys it does not name are :func:`validate_document`'s)."""
    plain = jsonable(document, unknown="keep")
    try:
        return StudyResults.model_validate(plain)
    except ValidationError as exc:
        raise DocumentError(_message(exc, plain, source, "study_results", StudyResults.__name__)) from None


def _owner(model: type[BaseModel]) -> str:
    """The public package a model is used through: ``clcg_pipeline.results`` for ``..results._x``."""
    return ".".join(model.__module__.split(".")[:2])


def validate_model(model: type[Model], document: object, *, source: str) -> Model:
    """``document`` as ``model`` (an exported document's pydantic shape: compare's output, the
    leaderboard); :class:`DocumentError` naming ``source`` and the field when it does not fit."""
    plain = jsonable(document, unknown="keep")
    try:
        return model.model_validate(plain)
    except ValidationError as exc:
        raise DocumentError(_message(exc, plain, source, "export", model.__name__, _owner(model))) from None


def read_model(model: type[Model], path: str | os.PathLike[str]) -> Model:
    """The JSON file at ``path`` read back as ``model``; :class:`DocumentError` naming the file
    when it is not JSON or a field does not fit."""
    try:
        document = json.loads(UPath(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DocumentError(f"{path}: not a readable {model.__name__} JSON file ({exc})") from None
    return validate_model(model, document, source=str(path))


def model_json(document: BaseModel) -> bytes:
    """A validated document as the bytes of its JSON file (2-space indent, a final newline)."""
    return document.model_dump_json(indent=2).encode("utf-8") + b"\n"
