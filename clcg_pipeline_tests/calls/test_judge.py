"""The shared judge machinery through the fake provider server and the real SDKs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pydantic
import pytest

from clcg_pipeline.calls import CallOptions, bind
from clcg_pipeline.calls._judge import (
    JudgeTemplate,
    judge_settings,
    parse_judgement,
    render_judge_request,
    run_judge,
)
from clcg_pipeline.calls._results import CallResult, estimate_cost
from clcg_pipeline.calls.fake_server import FakeServer, reply_marker
from clcg_pipeline.config import ConditionSettings
from clcg_pipeline_tests.calls.conftest import FAST, PROVIDERS, spec_for

pytestmark = pytest.mark.usefixtures("fake_key")


class _Verdict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    label: Literal["good", "bad"]
    evidence: str
    rationale: str


TEMPLATE = JudgeTemplate(
    version="test-judge-v1",
    system="You grade answers. Reply with one JSON object: label, evidence, rationale.",
    user="### PASSAGE\n{passage}\n### RESPONSE\n{response}\n### END",
    schema=_Verdict,
)
PASSAGE = "The bridge was built in 1932 by the harbour board."


def _ok(evidence: str = "built in 1932") -> str:
    return json.dumps({"label": "good", "evidence": evidence, "rationale": "matches"})


def _subject(name: str, reply: str | None = None, marker: str = "") -> tuple[dict[str, str], dict[str, str]]:
    response = f"It was built in 1932. {marker or (reply_marker(reply) if reply is not None else '')}"
    keys = {"pair_id": name, "model": "secret-model-x", "language": "sw"}
    return keys, {"passage": PASSAGE, "response": response}


def _result(text: str | None, outcome: str = "ok", finish: str | None = "stop") -> CallResult:
    return CallResult("c", text, finish, outcome, None, 1, 1, 0.0, 0.0, 1, False)


def test_template_hash_covers_every_part_and_schema_must_forbid_extras() -> None:
    base = TEMPLATE.template_hash
    assert len(base) == 64 and TEMPLATE.family == "test-judge" and TEMPLATE.fields == ("passage", "response")
    assert JudgeTemplate("test-judge-v2", TEMPLATE.system, TEMPLATE.user, _Verdict).template_hash != base
    assert (
        JudgeTemplate("test-judge-v1", TEMPLATE.system + ".", TEMPLATE.user, _Verdict).template_hash != base
    )

    class _Loose(pydantic.BaseModel):
        label: str

    with pytest.raises(ValueError, match="extra='forbid'"):
        JudgeTemplate("test-judge-v1", "s", "{x}", _Loose)
    with pytest.raises(ValueError, match="family-vN"):
        JudgeTemplate("judge", "s", "{x}", _Verdict)


def test_render_blinds_metadata_and_requires_every_field() -> None:
    settings = ConditionSettings(temperature=0.0, max_output_tokens=512)
    keys, fields = _subject("p1")
    request = render_judge_request(
        TEMPLATE, {**fields, "model": "secret-model-x"}, settings=settings, metadata=keys
    )
    assert "secret-model-x" not in request.text and "sw" not in request.text.split()
    assert request.prompt_version == "test-judge-v1" and request.metadata["model"] == "secret-model-x"
    # Metadata is not hashed: the same fields for another model/language is the same request.
    other = render_judge_request(
        TEMPLATE, fields, settings=settings, metadata={"model": "m2", "language": "en"}
    )
    assert other.request_hash == request.request_hash
    with pytest.raises(ValueError, match=r"\['response'\] not given"):
        render_judge_request(TEMPLATE, {"passage": PASSAGE}, settings=settings)


def test_parse_is_strict() -> None:
    assert parse_judgement(_result(_ok()), TEMPLATE, evidence_in=[PASSAGE]).status == "ok"
    fenced = parse_judgement(_result("```json\n" + _ok() + "\n```"), TEMPLATE, evidence_in=[PASSAGE])
    assert fenced.status == "ok" and fenced.value is not None and fenced.value.label == "good"  # type: ignore[attr-defined]
    # Whitespace differences in the quote are forgiven, nothing else is.
    assert parse_judgement(_result(_ok("built  in\n1932")), TEMPLATE, evidence_in=[PASSAGE]).status == "ok"
    cases = {
        "prose around": "Sure! " + _ok(),
        "prose and fence": "Here:\n```json\n" + _ok() + "\n```",
        "array": "[" + _ok() + "]",
        "broken": _ok()[:-1],
        "extra key": json.dumps({"label": "good", "evidence": "built in 1932", "rationale": "x", "score": 1}),
        "bad label": json.dumps({"label": "great", "evidence": "built in 1932", "rationale": "x"}),
        "coerced type": json.dumps({"label": "good", "evidence": 1932, "rationale": "x"}),
        "fabricated evidence": _ok("built in 1931"),
        "empty evidence": _ok(" "),
        "empty": "",
    }
    for name, text in cases.items():
        parsed = parse_judgement(_result(text), TEMPLATE, evidence_in=[PASSAGE])
        assert (parsed.status, parsed.value) == ("unparseable", None), name
        assert parsed.error, name
    assert parse_judgement(_result(_ok(), "truncated", "length"), TEMPLATE).status == "unparseable"
    assert parse_judgement(_result(None, "refused", "content_filter"), TEMPLATE).status == "refused"
    assert parse_judgement(_result(_ok(), "ok", "SAFETY"), TEMPLATE).status == "refused"
    for outcome in ("error", "skipped_budget", "batch_pending"):
        missing = parse_judgement(_result(None, outcome, None), TEMPLATE)
        assert missing.status == "missing" and outcome in (missing.error or "")


def test_judge_settings_defaults_and_overrides() -> None:
    spec = spec_for("openai", "http://x")
    assert judge_settings(spec) == ConditionSettings(temperature=0.0, max_output_tokens=512)
    own = spec.model_copy(update={"temperature": 0.3, "max_output_tokens": 100})
    assert judge_settings(own) == ConditionSettings(temperature=0.3, max_output_tokens=100)
    assert judge_settings(own, ConditionSettings(temperature=0.0)).temperature == 0.0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_run_judge_through_the_fake_server(provider: str, server: FakeServer, tmp_path: Path) -> None:
    subjects = [
        _subject("ok", _ok()),
        _subject("fenced", "```json\n" + _ok("harbour board") + "\n```"),
        _subject("malformed", '{"label": "good", "evidence": "built in 1932", '),
        _subject(
            "extra", json.dumps({"label": "bad", "evidence": "1932", "rationale": "r", "confidence": 0.9})
        ),
        _subject("fabricated", _ok("opened by the queen")),
        _subject("refused", marker="[[answer:refusal]]"),
        _subject("dead", _ok(), marker="[[fault:500x99]]"),
    ]
    spec = spec_for(provider, server.url, max_attempts=2)
    judgements, calls = run_judge(
        spec,
        TEMPLATE,
        subjects,
        CallOptions(cache_dir=str(tmp_path), policy=FAST),
        evidence_fields=("passage", "response"),
    )
    status = dict(zip(judgements["pair_id"], judgements["status"], strict=True))
    assert status == {
        "ok": "ok",
        "fenced": "ok",
        "malformed": "unparseable",
        "extra": "unparseable",
        "fabricated": "unparseable",
        "refused": "refused",
        "dead": "missing",
    }
    ok = judgements.set_index("pair_id").loc["ok"]
    assert json.loads(ok["judgement"]) == {
        "evidence": "built in 1932",
        "label": "good",
        "rationale": "matches",
    }
    assert ok["judge"] == spec.id and ok["template_hash"] == TEMPLATE.template_hash
    assert judgements.set_index("pair_id").loc["malformed", "judgement"] is None
    assert (
        judgements.set_index("pair_id").loc["extra", "error"]
        == "schema: confidence: Extra inputs are not permitted"
    )
    assert "occurs in none" in judgements.set_index("pair_id").loc["fabricated", "error"]
    # Blinding: the key columns never reached the provider.
    sent = json.dumps(list(server.state.bodies.values()))
    assert "secret-model-x" not in sent
    assert len(calls) == len(subjects) and set(calls["judge"]) == {spec.id}
    assert calls.set_index("call_id").loc[ok["call_id"], "outcome"] == "ok"


def test_cached_rerun_sends_nothing_and_budget_stops(server: FakeServer, tmp_path: Path) -> None:
    spec = spec_for("openai", server.url)
    subjects = [_subject(f"s{i}", _ok()) for i in range(6)]
    # Distinct requests: vary the response text.
    subjects = [(k, {**f, "response": f["response"] + f" ({i})"}) for i, (k, f) in enumerate(subjects)]
    first, _ = run_judge(spec, TEMPLATE, subjects, CallOptions(cache_dir=str(tmp_path), policy=FAST))
    assert set(first["status"]) == {"ok"}
    sent = server.state.requests.total()
    again, calls = run_judge(spec, TEMPLATE, subjects, CallOptions(cache_dir=str(tmp_path), policy=FAST))
    assert server.state.requests.total() == sent
    assert calls["cached"].all() and again["judgement"].tolist() == first["judgement"].tolist()

    # Budget: a fresh cache and room for exactly two calls whatever the timing (a call passes while
    # spent + its worst case fits); the rest are skipped, recorded as missing.
    per_call = float(calls["cost_usd"].max())
    assert per_call > 0
    settings = judge_settings(spec, None)
    rendered = bind(spec, [render_judge_request(TEMPLATE, f, settings=settings) for _, f in subjects])
    worst = max(estimate_cost(spec, r) for r in rendered)
    budget_dir = tmp_path / "budget"
    stopped, budget_calls = run_judge(
        spec,
        TEMPLATE,
        subjects,
        CallOptions(cache_dir=str(budget_dir), policy=FAST, budget_usd=worst + 1.5 * per_call),
    )
    outcomes = budget_calls["outcome"].tolist()
    assert outcomes.count("ok") == 2 and outcomes.count("skipped_budget") == 4
    assert set(stopped.loc[stopped["status"] != "ok", "status"]) == {"missing"}
    assert stopped.loc[stopped["status"] == "missing", "error"].str.contains("BudgetExceeded").all()
