"""format_h1_table, the bar chart and the remaining sections on minimal and full results documents
(split from ``test_report``, whose document builders they share)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from clcg_pipeline.report import Bar, bar_chart_svg, format_h1_table, render_report
from clcg_pipeline_tests.report.test_report import (
    LANGUAGES,
    _described,
    _est,
    _full,
    _h1,
    _section_html,
    _text,
)


def test_format_h1_table_rows_and_summary() -> None:
    table = format_h1_table(_h1(), LANGUAGES)
    assert [c.header for c in table.columns] == ["iso", "language", "class", "CLCG", "95% CI", "n"]
    isos = list(table.columns[0].cells)
    assert isos[:4] == ["fon", "quy", "sw", "mt"]  # largest CLCG first, missing last
    labels = list(table.columns[1].cells)[4:]
    assert labels == ["H1 micro CLCG", "Macro CLCG", "Portuguese gap", "Macro net", "Micro net"]
    assert list(table.columns[3].cells)[4] == "0.078"
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(table)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "[0.072, 0.085]" in out and "Ayacucho Quechua" in out and "1,200" in out


def test_format_h1_table_escapes_markup() -> None:
    languages = [{"iso": "sw", "name": "[bold]Swahili[/bold]", "joshi_class": 2}]
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(format_h1_table(_h1(), languages))
    assert "[bold]Swahili[/bold]" in console.file.getvalue()  # type: ignore[attr-defined]


def test_bar_chart_scales_and_whiskers() -> None:
    svg = bar_chart_svg([Bar("a", 0.1, 0.05, 0.15), Bar("b", -0.05)], title="t", legend=False)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<rect") == 2
    assert svg.count('class="ci"') == 3  # one whisker (line + two caps) for the bar with a CI
    widths = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)"', svg)]
    assert widths[0] == pytest.approx(2 * widths[1], rel=0.01)  # bar length proportional to |value|
    assert bar_chart_svg([], title="t") == ""


def test_format_h1_table_says_what_it_measured_and_which_languages_lack_data() -> None:
    results = _described()
    results["settings"]["band"] = {"levels": ["L3", "L4", "L5"], "metric": "token_f1", "item_source": "llm"}
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(format_h1_table(results["h1"], LANGUAGES, results=results))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "measured: metric token_f1; levels L3, L4, L5; llm items" in out
    assert "corpus: demo (jsonl, primary)" in out
    assert "models: gpt-x, claude-y" in out
    # Each language once, under why it has no data, so an empty table explains itself.
    assert "no data (2 panel languages):" in out
    assert "source has no Basque file: eu" in out and out.count("Maltese (mt)") == 1
    assert "sk-secret-123" not in out
    # Without the whole document (older callers): the panel still tells which targets had no data.
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(format_h1_table(_h1(), LANGUAGES))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "no data (1 panel language), no scored rows: Maltese (mt)" in out
    assert "measured: metric token_f1; levels L3, L4, L5" in out


def test_metric_sensitivity_side_by_side() -> None:
    results = _full()
    results["metric_sensitivity"] = {
        "band_metric": "token_f1",
        "metrics": {
            "rouge_l": {
                "computed": True,
                "h1_micro": _est(0.119, 0.1, 0.13),
                "pt_gap": _est(0.114, 0.1, 0.12),
            },
            "semsim": {
                "computed": False,
                "status": "not computed",
                "reason": "the semsim extra is not installed",
            },
            "token_f1": {
                "computed": True,
                "h1_micro": _est(0.112, 0.09, 0.13),
                "pt_gap": _est(0.107, 0.1, 0.11),
            },
        },
    }
    section = _section_html(render_report(results, None), "result-metric_sensitivity")
    text = _text(section)
    assert "estimand Token-F1 (band) 95% CI ROUGE-L 95% CI semantic similarity 95% CI" in text
    assert "H1 micro CLCG 0.112 [0.090, 0.130] 0.119 [0.100, 0.130] \u2014 \u2014" in text
    assert "\u26a0 semantic similarity: the semsim extra is not installed" in text


def test_terminal_table_marks_flagged_estimates() -> None:
    h1 = _h1()
    h1["by_language"]["sw"] = _est(
        0.065, None, None, n=1200, identifiable=False, reason="too few articles: 6 < 10"
    )
    console = Console(file=io.StringIO(), width=160, color_system=None)
    table = format_h1_table(h1, LANGUAGES)
    console.print(table)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert [c.header for c in table.columns][-1] == "flag"
    assert (
        "not identifiable" in dict(zip(table.columns[0].cells, table.columns[-1].cells, strict=False))["sw"]
    )
    assert "flag: not identifiable: too few articles: 6 < 10" in out


def test_header_reads_a_structured_code_version_and_keeps_withheld_intervals() -> None:
    results = _described()
    results["settings"]["code_version"] = {"package": "0.1.0", "git_commit": "03f342a1abf6709f00d6"}
    results["h1"]["h1_micro"] = _est(0.112, None, None, n=684, identifiable=False, reason="too few articles")
    html = render_report(results, None)
    assert "code version 0.1.0 git 03f342a1abf6" in _text(html)
    summary = _text(_section_html(html, "h1"))
    # The interval column stays (as a dash) when every interval is withheld, so the gap is visible.
    assert "H1 micro CLCG 0.112 \u2014" in summary and "95% CI" in summary


def test_p_at_the_bootstrap_floor_is_a_bound_not_a_warning() -> None:
    results = _full()
    note = "p is the smallest attainable with 40 replicates: p <= 0.0244"
    results["h1"]["h1_micro"] = _est(0.093, 0.084, 0.103, p=0.0244, p_bound=True, flags=[note])
    results["h1"]["pt_gap"] = _est(0.05, 0.04, 0.06, flags=["estimate outside its own percentile interval"])
    summary = _section_html(render_report(results, None), "h1")
    rows = {_text(m)[:14]: m for m in re.findall(r"<tr[^>]*>.*?</tr>", summary, re.S)}
    assert "\u22640.024" in _text(rows["H1 micro CLCG "]) and 'class="flagged"' not in rows["H1 micro CLCG "]
    assert 'class="flagged"' in rows["Portuguese gap"]  # a real flag still marks its row


def test_the_terminal_table_marks_a_simulated_reader() -> None:
    results = _described()
    results["settings"]["models"] = [
        {"id": "reader", "simulated": "SIMULATED per-language gap"},
        {"id": "real"},
    ]
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(format_h1_table(results["h1"], LANGUAGES, results=results))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "models: reader (SIMULATED gap, see the report), real" in out
