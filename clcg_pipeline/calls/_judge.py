"""LLM judges: versioned, hashed judge prompts, strict structured replies, the same runner.

A judge is any model of ``models.yaml`` asked to label something with a JSON object. Judge
calls go through :func:`~clcg_pipeline.calls._runner.run_requests` like the responses,
so they are cached, budgeted, resumable and batchable, and the call id covers the rendered
prompt, the template version and the judge model.

Parsing is strict on purpose: a judgement is a label that feeds frequencies and agreement
statistics, so a reply that is not exactly one JSON object valid against the template's
schema, or whose quoted evidence does not occur in the texts the judge was shown, is
recorded as ``unparseable`` rather than repaired or guessed.

Metadata blinding: the judge sees only the template's fields. Whatever the caller wants to
keep for bookkeeping (evaluated model, language code, resource class) goes into the
request's ``metadata``, which is never sent and never hashed.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import pydantic

from clcg_pipeline.calls._options import CallOptions
from clcg_pipeline.calls._requests import ChatRequest, resolve_settings
from clcg_pipeline.calls._results import REFUSAL_REASONS, TRUNCATED_REASONS, CallResult, call_row
from clcg_pipeline.calls._runner import run_requests
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.storage import TABLES

JudgeStatus = Literal["ok", "unparseable", "refused", "missing"]
JUDGE_STATUSES: tuple[str, ...] = ("ok", "unparseable", "refused", "missing")

#: Defaults for judge calls where neither the caller nor the judge's models.yaml entry sets them.
DEFAULT_TEMPERATURE = 0.0
DEFAULT_MAX_OUTPUT_TOKENS = 512

_VERSION = re.compile(r"^[a-z0-9][a-z0-9-]*-v\d+$")
# The whole reply is one fenced block (```json ... ``` or ``` ... ```) and nothing else.
_FENCED = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)

JUDGEMENT_COLUMNS = ("judge", "prompt_version", "template_hash", "status", "error", "judgement", "call_id")
# The judge API's call rows: the contract of task_judge_calls, the fullest judge-calls table
# (judge_calls and keypoint_calls keep a subset of these columns).
CALL_COLUMNS = tuple(TABLES["task_judge_calls"].names)


@dataclass(frozen=True)
class JudgeTemplate:
    """One versioned judge prompt: ``user`` is a ``str.format`` template with named fields.

    ``schema`` is the JSON object the judge must return; it must forbid extra keys, so a
    judge that invents a field is caught rather than silently accepted.
    """

    version: str
    system: str
    user: str
    schema: type[pydantic.BaseModel]

    def __post_init__(self) -> None:
        if not _VERSION.match(self.version):
            raise ValueError(f"judge template version {self.version!r} must look like 'family-vN'")
        if self.schema.model_config.get("extra") != "forbid":
            raise ValueError(
                f"judge template {self.version!r}: schema {self.schema.__name__} must set extra='forbid'"
            )
        for _, name, spec, conv in string.Formatter().parse(self.user):
            if name is not None and (not name.isidentifier() or spec or conv):
                raise ValueError(
                    f"judge template {self.version!r}: field {{{name}}} must be a plain named field"
                )

    @property
    def family(self) -> str:
        """``error-judge-v1`` -> ``error-judge`` (the offline provider routes by it)."""
        return self.version.rsplit("-v", 1)[0]

    @property
    def fields(self) -> tuple[str, ...]:
        """The named fields of ``user``, in first-use order."""
        names: list[str] = []
        for _, name, _, _ in string.Formatter().parse(self.user):
            if name is not None and name not in names:
                names.append(name)
        return tuple(names)

    @property
    def template_hash(self) -> str:
        """sha256 of the version, both texts and the schema's JSON schema."""
        blob = json.dumps(
            {
                "version": self.version,
                "system": self.system,
                "user": self.user,
                "schema": self.schema.model_json_schema(),
            },
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def judge_settings(judge: ModelSpec, settings: ConditionSettings | None = None) -> ConditionSettings:
    """``settings`` over the judge's own models.yaml settings over the judge defaults (T=0, 512 tokens)."""
    resolved = resolve_settings(judge, settings)
    return resolved.model_copy(
        update={
            "temperature": DEFAULT_TEMPERATURE if resolved.temperature is None else resolved.temperature,
            "max_output_tokens": resolved.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS,
        }
    )


def render_judge_request(
    template: JudgeTemplate,
    fields: Mapping[str, str],
    *,
    settings: ConditionSettings,
    metadata: Mapping[str, str] | None = None,
) -> ChatRequest:
    """The exact request for one subject. Every template field is required; other keys of
    ``fields`` are not rendered (the judge never sees them)."""
    missing = [name for name in template.fields if name not in fields]
    if missing:
        raise ValueError(f"judge template {template.version!r}: field(s) {missing} not given")
    values: dict[str, str] = {}
    for name in template.fields:
        value = fields[name]
        if not isinstance(value, str):
            raise ValueError(
                f"judge template {template.version!r}: field {name!r} must be a string, got "
                f"{type(value).__name__}"
            )
        values[name] = value
    return ChatRequest(
        messages=[
            {"role": "system", "content": template.system},
            {"role": "user", "content": template.user.format(**values)},
        ],
        settings=settings,
        rep=0,
        prompt_version=template.version,
        metadata={str(k): str(v) for k, v in (metadata or {}).items()},
    )


@dataclass(frozen=True)
class Judgement:
    """One parsed judge reply: ``value`` only when ``status`` is ``ok``."""

    status: str  # ok | unparseable | refused | missing
    value: pydantic.BaseModel | None
    error: str | None


def normalise_ws(text: str) -> str:
    """Whitespace runs collapsed to one space, ends stripped (for evidence matching)."""
    return " ".join(text.split())


def _evidence_quotes(value: pydantic.BaseModel) -> list[str] | None:
    """The quoted evidence span(s) of a validated judgement, or None when the schema has none."""
    if "evidence" not in type(value).model_fields:
        return None
    evidence = value.evidence  # type: ignore[attr-defined]
    if evidence is None:
        return []
    if isinstance(evidence, str):
        return [evidence]
    return [str(e) for e in evidence]


def _first_error(exc: pydantic.ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "(object)"
    return f"schema: {where}: {err.get('msg', 'invalid')}"


def parse_judgement(
    result: CallResult, template: JudgeTemplate, *, evidence_in: Sequence[str] = ()
) -> Judgement:
    """Strictly parse one judge reply; never guesses.

    ``ok``: the reply is exactly one JSON object (one fenced ```json block tolerated),
    valid against ``template.schema`` in strict mode (no extra keys, no coercion), and, when
    ``evidence_in`` is given and the schema has an ``evidence`` field, every quote is a
    non-empty substring of one of those texts after whitespace normalisation.
    ``refused``: the provider or model refused. ``missing``: no reply (error, budget skip,
    batch still pending). Everything else is ``unparseable`` with the reason.
    """
    if result.outcome == "refused" or (result.finish_reason or "") in REFUSAL_REASONS:
        return Judgement("refused", None, f"refused ({result.finish_reason or result.error or 'no reason'})")
    if result.outcome not in ("ok", "truncated"):
        reason = result.outcome if not result.error else f"{result.outcome}: {result.error}"
        return Judgement("missing", None, reason)
    if result.outcome == "truncated" or (result.finish_reason or "") in TRUNCATED_REASONS:
        return Judgement("unparseable", None, f"truncated reply (finish_reason {result.finish_reason})")
    text = (result.text or "").strip()
    if not text:
        return Judgement("unparseable", None, "empty reply")
    fenced = _FENCED.fullmatch(text)
    body = fenced.group(1).strip() if fenced else text
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        return Judgement("unparseable", None, f"not a JSON object: {exc.msg} at char {exc.pos}")
    if not isinstance(obj, dict):
        return Judgement("unparseable", None, f"not a JSON object: got a JSON {type(obj).__name__}")
    try:
        value = template.schema.model_validate(obj, strict=True)
    except pydantic.ValidationError as exc:
        return Judgement("unparseable", None, _first_error(exc))
    quotes = _evidence_quotes(value)
    if evidence_in and quotes is not None:
        haystacks = [normalise_ws(t) for t in evidence_in if isinstance(t, str)]
        if not quotes:
            return Judgement("unparseable", None, "evidence: no quote given")
        for quote in quotes:
            needle = normalise_ws(quote)
            if not needle:
                return Judgement("unparseable", None, "evidence: empty quote")
            if not any(needle in hay for hay in haystacks):
                return Judgement(
                    "unparseable", None, f"evidence: quote {needle[:60]!r} occurs in none of the given texts"
                )
    return Judgement("ok", value, None)


def _cell(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else value


def run_judge(
    judge: ModelSpec,
    template: JudgeTemplate,
    subjects: Sequence[tuple[Mapping[str, Any], Mapping[str, str]]],
    options: CallOptions,
    *,
    settings: ConditionSettings | None = None,
    evidence_fields: Sequence[str] = (),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judge every subject ``(key columns, template fields)`` with ``judge``.

    Returns ``(judgements, calls)``. ``judgements``: one row per subject, its key columns then
    judge, prompt_version, template_hash, status, error, judgement (the validated JSON object
    as a string, keys sorted; None unless ok), call_id. ``calls``: the ``calls`` table's shape
    plus judge, template_hash, request_hash and finish_reason, one row per distinct request.
    ``evidence_fields`` names the template fields an ``evidence`` quote must come from.
    Key columns go to the request's metadata (never sent, never hashed).
    """
    unknown = [f for f in evidence_fields if f not in template.fields]
    if unknown:
        raise ValueError(f"judge template {template.version!r}: evidence field(s) {unknown} not in template")
    for keys, _ in subjects:
        clash = sorted(set(map(str, keys)) & set(JUDGEMENT_COLUMNS))
        if clash:
            raise ValueError(f"run_judge: key column(s) {clash} clash with the judgement columns")
    resolved = judge_settings(judge, settings)
    requests = [
        render_judge_request(
            template,
            fields,
            settings=resolved,
            metadata={str(k): str(v) for k, v in keys.items() if _cell(v) is not None},
        )
        for keys, fields in subjects
    ]
    results = run_requests(judge, requests, options) if requests else []
    template_hash = template.template_hash
    rows: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    key_names: list[str] = []
    for (keys, fields), request, result in zip(subjects, requests, results, strict=True):
        for name in keys:
            if name not in key_names:
                key_names.append(str(name))
        parsed = parse_judgement(result, template, evidence_in=[fields[f] for f in evidence_fields])
        rows.append(
            {
                **keys,
                "judge": judge.id,
                "prompt_version": template.version,
                "template_hash": template_hash,
                "status": parsed.status,
                "error": parsed.error,
                "judgement": (
                    json.dumps(parsed.value.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
                    if parsed.value is not None
                    else None
                ),
                "call_id": result.call_id,
            }
        )
        if result.call_id not in calls:
            calls[result.call_id] = call_row(
                judge,
                request,
                result,
                doc_id=_cell(keys.get("doc_id")),
                language=_cell(keys.get("language")),
                context_scope=_cell(keys.get("context_scope")),
                judge=judge.id,
                template_hash=template_hash,
            )
    judgements = pd.DataFrame(rows, columns=[*key_names, *JUDGEMENT_COLUMNS])
    return judgements, pd.DataFrame(list(calls.values()), columns=list(CALL_COLUMNS))


__all__ = [
    "CALL_COLUMNS",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_TEMPERATURE",
    "JUDGEMENT_COLUMNS",
    "JUDGE_STATUSES",
    "JudgeStatus",
    "JudgeTemplate",
    "Judgement",
    "judge_settings",
    "normalise_ws",
    "parse_judgement",
    "render_judge_request",
    "run_judge",
]
