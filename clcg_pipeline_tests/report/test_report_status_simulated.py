"""No section status reads as a success that its section, or the page, contradicts (issue 34).

Found by reading the demo report in Chromium (fresh clone, ``make run``): the error taxonomy said
"Status: ok (computed)" in green under the page's red SIMULATED banner, the ceiling rule's verdict
was green inside the SIMULATED human-validation section, and granularity said "Status: ok" while
every one of its intervals was withheld.
"""

from __future__ import annotations

import re
from typing import Any

from clcg_pipeline.report import render_report
from clcg_pipeline_tests.report import study_fixtures as fx
from clcg_pipeline_tests.report.test_report import _full
from clcg_pipeline_tests.report.test_studies import _section, _status, _text

_SIMULATED_MODEL = {
    "id": "lexical-reader",
    "provider": "offline",
    "model": "lexical-overlap-v1",
    "simulated": "SIMULATED per-language gap on the demo corpus: its gap describes no real model",
}


def _render(*, simulated_model: bool, **blocks: object) -> str:
    results: dict[str, Any] = _full()
    if simulated_model:
        results["settings"] = {**results["settings"], "models": [_SIMULATED_MODEL]}
    results.update(blocks)
    return render_report(results, None)


def _green_lines(section: str) -> list[str]:
    found = re.findall(r'<p class="status status-ok" data-status="ok">(.*?)</p>', section, re.S)
    return [_text(line) for line in found]


def test_a_simulated_model_leaves_no_green_ok_in_any_section() -> None:
    html = _render(simulated_model=True, error_taxonomy=fx.taxonomy(), granularity=fx.granularity())
    assert "SIMULATED per-language gap" in _text(html)  # the page's banner
    for key in ("error_taxonomy", "granularity"):
        section = _section(html, key)
        level, text = _status(section)
        assert level == "warn" and "simulated answers" in text, (key, level, text)
        assert "Status: ok" not in _text(section) and _green_lines(section) == [], key
    # Without a simulated model the same sections stay green.
    plain = _render(simulated_model=False, error_taxonomy=fx.taxonomy())
    assert _status(_section(plain, "error_taxonomy")) == ("ok", "Status: ok (computed).")


def test_the_ceiling_verdict_on_simulated_ratings_is_not_green() -> None:
    section = _section(_render(simulated_model=False, human_validation=fx.human()), "human_validation")
    assert "SIMULATED" in _text(section)
    assert _green_lines(section) == []
    assert "Ceiling rule not triggered" in _text(section) and "(on simulated ratings)" in _text(section)
    # Ratings by people: the verdict is a finding, in green.
    real = _section(
        _render(simulated_model=False, human_validation=fx.human(simulated=False)), "human_validation"
    )
    assert any(line.startswith("Ceiling rule not triggered") for line in _green_lines(real))


def test_ok_with_every_interval_withheld_does_not_say_ok() -> None:
    block = {**fx.granularity("not_identifiable"), "status": "ok", "reason": None}
    level, text = _status(_section(_render(simulated_model=False, granularity=block), "granularity"))
    assert level == "warn" and not text.startswith("Status: ok"), text
    assert text.startswith("Status: descriptive only.") and "Every interval is withheld" in text
