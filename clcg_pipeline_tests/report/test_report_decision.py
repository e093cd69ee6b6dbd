"""The report leads with the decision, says a shared reason once, and its statuses agree (issue 34)."""

from __future__ import annotations

import re
from typing import Any

from clcg_pipeline.report import render_report
from clcg_pipeline_tests.report import study_fixtures as fx
from clcg_pipeline_tests.report.test_report import _estimates, _full, _section_html, _text

REASON = "too few articles: 6 < study.min_articles = 10"


def _small_study() -> dict[str, Any]:
    """Every headline estimate withheld for the same reason, as on the 6-article demo."""
    results = _full()
    h1 = results["h1"]
    blocks = [h1[k] for k in ("h1_micro", "macro", "pt_gap", "macro_net", "micro_net") if k in h1]
    blocks += list(h1["by_language"].values())
    blocks += [m["h1_micro"] for m in h1["by_model"].values()]
    for block in blocks:
        block.update(identifiable=False, reason=REASON, ci_low=None, ci_high=None)
    return results


def _decision(html: str) -> str:
    start = html.index('<div id="decision"')
    return html[start : html.index("</div>\n\n<dl", start)]


def test_the_first_screen_has_the_gap_per_language_and_the_models_ranked() -> None:
    html = render_report(_full(), _estimates())
    first = _decision(html)
    # Before the study facts, the caveats and every section.
    assert html.index('<div id="decision"') < html.index('id="study-facts"') < html.index('<section id="h1"')
    languages = re.findall(r"<tr", first.split('class="decision-models"')[0])
    assert len(languages) == 1 + len(_full()["h1"]["by_language"])  # the header row and one per language
    text = _text(first)
    assert "The models ranked" in text and "rank interval" in text
    # Maltese has no scored row: said in the list of what cannot be concluded, not "every interval".
    assert "Every estimate above has its interval" not in text and "no estimate: no scored rows" in text


def test_a_reason_shared_by_every_headline_estimate_is_said_once_at_the_top() -> None:
    html = render_report(_small_study(), _estimates())
    first = _text(_decision(html))
    assert first.count(REASON) == 1 and "applies to every estimate above" in first
    assert "n/i" in first
    # The sections point to the top instead of repeating it.
    for section in ("h1", "by-language", "by-model"):
        text = _text(_section_html(html, section))
        assert REASON not in text, section
        assert "given once at the top" in text or section == "h1"


def test_sections_after_the_headline_are_folded_and_keep_their_content() -> None:
    results = {**_full(), "error_taxonomy": fx.taxonomy("not_identifiable")}
    html = render_report(results, _estimates())
    section = _section_html(html, "result-error_taxonomy")
    assert section.startswith('<section id="result-error_taxonomy" class="folded"><details>')
    summary = _text(re.search(r"<summary>(.*?)</summary>", section, re.S).group(1))
    assert summary.endswith("went wrong Not identifiable")  # the state; its reason is said once inside
    assert _text(section).count("too few articles") == 1
    for appendix in ("estimates", "settings"):
        assert f'<section id="{appendix}" class="folded"><details>' in html


def test_no_green_ok_under_the_simulated_banner() -> None:
    html = render_report({**_full(), "human_validation": fx.human()}, None)
    section = _section_html(html, "result-human_validation")
    assert "SIMULATED annotations" in section
    status = re.search(r'<p class="status[^"]*" data-status="(\w+)">', section)
    assert status and status.group(1) == "warn" and "ok (computed)" not in section
    assert "Status: simulated" in _text(section)


def test_a_section_whose_rows_are_all_not_identifiable_does_not_say_estimated() -> None:
    results = _full()
    results["h2"] = {
        "status": "estimated",
        "by_model": {
            m: {
                "difference": {
                    "estimate": 0.02,
                    "ci_low": None,
                    "ci_high": None,
                    "identifiable": False,
                    "reason": REASON,
                }
            }
            for m in ("a", "b")
        },
    }
    section = _section_html(render_report(results, None), "result-h2")
    text = _text(section)
    assert "Status estimated" not in text and "Status not identifiable" in text
    # The folded section's title line says the same.
    assert '<span class="hint">Status: not identifiable</span>' in section


def test_the_funnel_and_the_counts_give_one_annotator_figure() -> None:
    human = fx.human()
    # As the demo: one annotator not excluded loses every rating to the speed rule.
    for row in human["qc_funnel"]:
        row["annotators_with_ratings"] = row["remaining_annotators"]
    last = human["qc_funnel"][-1]
    last["annotators_with_ratings"] = last["remaining_annotators"] - 1
    human["annotators"] = last["annotators_with_ratings"]
    text = _text(
        _section_html(render_report({**_full(), "human_validation": human}, None), "result-human_validation")
    )
    assert "annotators remaining" not in text
    shown = int(re.search(r"annotators after QC (\d+)", text).group(1))
    assert shown == last["annotators_with_ratings"]
    assert (
        f"{last['remaining_annotators']} annotators were not excluded, but 1 of them lost every rating"
        in text
    )


def test_a_simulated_reader_is_said_on_the_first_screen() -> None:
    """The demo's reader invents its per-language gap: the first screen says so above its numbers."""
    results = _full()
    plain = _text(_decision(render_report(results, _estimates())))
    assert "SIMULATED" not in plain
    results["settings"]["models"] = [
        {"id": "reader", "simulated": "SIMULATED per-language gap on the demo corpus (drop rates ht 0.75)"},
        {"id": "real-model"},
    ]
    first = _text(_decision(render_report(results, _estimates())))
    assert "reader: SIMULATED per-language gap" in first and "real-model:" not in first
