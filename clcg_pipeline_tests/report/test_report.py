"""render_report / write_report / format_h1_table on minimal and full results documents."""

from __future__ import annotations

import io
import os
import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from clcg_pipeline.report import Bar, bar_chart_svg, format_h1_table, render_report, write_report
from clcg_pipeline.storage._tables import TABLES

EVIL = '<script>alert("x")</script>'


def _est(estimate: float | None, low: float | None, high: float | None, **extra: object) -> dict:
    return {"estimate": estimate, "ci_low": low, "ci_high": high, **extra}


def _h1() -> dict:
    return {
        "h1_micro": _est(0.0781, 0.0723, 0.0845),
        "macro": _est(0.0771, 0.07, 0.084),
        "pt_gap": _est(0.0612, 0.0551, 0.0673),
        "macro_net": _est(0.0159, 0.0131, 0.0201),
        "micro_net": _est(0.0169, 0.0142, 0.0198),
        "by_language": {
            "sw": _est(0.0652, 0.05, 0.08, n=1200),
            "fon": _est(0.1041, 0.09, 0.12, n=1100),
            "quy": _est(0.0712, 0.06, 0.083, n=1000),
            "mt": _est(None, None, None, n=0),
        },
        "by_model": {
            "gpt-x": {
                "h1_micro": _est(0.062, 0.05, 0.07),
                "pt_gap": _est(0.04, 0.03, 0.05),
                "macro_net": _est(0.02, 0.01, 0.03),
            },
            "claude-y": {
                "h1_micro": _est(0.101, 0.09, 0.11),
                "pt_gap": _est(0.07, 0.06, 0.08),
                "macro_net": _est(0.03, 0.02, 0.04),
            },
        },
        "settings": {
            "seed": 42,
            "replicates": 2000,
            "band": {"levels": ["L3", "L4", "L5"], "metric": "token_f1"},
            "rule": "A",
        },
        "n": {"english_rows": 5000, "target_rows": 3300, "articles": 150},
    }


LANGUAGES = [
    {"iso": "sw", "name": "Swahili", "joshi_class": 2},
    {"iso": "fon", "name": "Fon", "joshi_class": 0},
    {"iso": "quy", "name": "Ayacucho Quechua", "joshi_class": None},
    {"iso": "mt", "name": "Maltese", "joshi_class": 2},
]


def _full() -> dict:
    return {
        "h1": _h1(),
        "languages": LANGUAGES,
        "warnings": [
            "Basque coverage below threshold in 51 articles",
            {"message": "mixed model did not converge"},
        ],
        "settings": {"config_hash": "c0ffee1234", "seed": 42, "bootstrap_replicates": 2000},
        "by_class": {"0": _est(0.104, 0.09, 0.12, n=1), "2": _est(0.085, 0.08, 0.09, n=2)},
        "h2": {"pooled": _est(0.012, -0.003, 0.027, p=0.07), "per_model": {"gpt-x": "not identifiable"}},
        "h3": {"slope": _est(0.004, 0.001, 0.007, p=0.004), "levels": [{"name": "L3", "estimate": 0.07}]},
        "h4": _est(-0.01, -0.02, 0.0, p=0.5),
        "bh": [{"estimand": "h1", "p": 0.0001, "p_adj": 0.001}, {"estimand": "h4", "p": 0.5, "p_adj": 0.55}],
        "tost": {"p": 0.31, "equivalent": False, "bounds": [-0.02, 0.02]},
        "mixed_models": {"h1": {"converged": False, "estimate": 0.07}},
        "repetitions": {"kendall_w": 0.93},
        "context_gain": {"by_language": {"sw": _est(0.2, 0.1, 0.3)}},
        "nomological": {"joshi_spearman": _est(-0.594, -0.85, -0.2, n=16)},
        "future_analysis": {"thing": 1.5},
    }


def _estimates() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "estimand": ["h1_micro", "clcg", "tost"],
            "group": ["all", "sw", None],
            "estimate": [0.0781, 0.0652, 0.061],
            "ci_low": [0.0723, 0.05, None],
            "ci_high": [0.0845, 0.08, None],
            "p": [0.00001, None, 0.31],
            "p_adj": [0.0001, None, None],
            "n": [8300, 1200, 2],
        }
    )


def _text(html: str) -> str:
    """Visible text with tags removed, whitespace collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_full_report_numbers_sections_and_figure() -> None:
    html = render_report(_full(), _estimates())
    text = _text(html)
    assert html.startswith("<!DOCTYPE html>")
    # Headline table: estimates and CIs formatted to 3 decimals.
    assert "H1 micro CLCG 0.078 [0.072, 0.085]" in text
    assert "Portuguese gap 0.061 [0.055, 0.067]" in text
    assert "Macro net 0.016 [0.013, 0.020]" in text
    assert "Micro net 0.017 [0.014, 0.020]" in text
    # Per-language table sorted by CLCG, Joshi class shown, unresolved class and missing CLCG.
    assert text.index("fon Fon 0 0.104") < text.index("quy Ayacucho Quechua unresolved 0.071")
    assert text.index("quy Ayacucho Quechua") < text.index("sw Swahili 2 0.065 [0.050, 0.080] 1,200")
    assert "mt Maltese 2 \u2014 \u2014 0" in text
    # The figure: one bar per computable language, legend by class, no bar for Maltese.
    language_svg = html[html.index('<section id="by-language">') : html.index('<section id="by-model">')]
    assert language_svg.count("<rect") == 3 + 3  # 3 bars + legend swatches (class 0, 2, unclassified)
    assert "Fon (fon)" in language_svg and "Maltese (mt)" not in language_svg.split("<table>")[0]
    assert "class 0" in language_svg and "unclassified" in language_svg
    assert "English minus language (token_f1)" in language_svg
    # Per-model table, largest gap first.
    assert text.index("claude-y 0.101 [0.090, 0.110]") < text.index("gpt-x 0.062")
    # Settings from both levels, config hash first among the extras.
    assert "config_hash c0ffee1234" in text and "seed 42" in text and "replicates 2000" in text
    # Caveats box with both warning shapes.
    assert 'class="caveat"' in html
    assert "Basque coverage below threshold" in text and "mixed model did not converge" in text
    # A section per known key, plus unknown keys under their own name.
    for title in (
        "Per Joshi class",
        "H2: memorability",
        "H3: level profile",
        "H4: item source",
        "Multiplicity (Benjamini-Hochberg)",
        "Equivalence (TOST, EN-PT)",
        "Mixed-effects models",
        "Repetitions",
        "Context gain",
        "Nomological network",
        "Future analysis",
    ):
        assert title in text, title
    assert "pooled 0.012 [-0.003, 0.027] 0.070" in text
    assert "slope 0.004 [0.001, 0.007] 0.004" in text
    assert "levels / L3 0.070" in text  # a list of estimates is labelled by its name field
    assert "h1 \u2014 \u2014 <0.001 0.001" in text  # BH row: raw and adjusted p
    assert "converged: no" in text
    assert "h4 -0.010 [-0.020, 0.000] 0.500" in text  # a section whose value is one estimate
    assert "per_model / gpt-x not identifiable" in text
    # The long estimates table is always there.
    assert "h1_micro all 0.078 [0.072, 0.085] <0.001 <0.001 8,300" in text
    assert "tost 0.061 \u2014 0.310 \u2014 2" in text


def test_only_h1_key_renders() -> None:
    html = render_report({"h1": _h1()}, TABLES["estimates"].empty_table().to_pandas())
    text = _text(html)
    assert "H1 micro CLCG 0.078" in text
    assert "The estimates table is empty." in text
    assert 'class="caveat"' not in html
    # Without language metadata: no class column, iso labels in the figure.
    assert "Joshi class" not in text
    assert ">fon<" in html
    assert "seed 42" in text


def test_empty_results_still_render() -> None:
    html = render_report({}, None)
    assert "No H1 results" in html
    with pytest.raises(TypeError, match="study_results"):
        render_report([], None)  # type: ignore[arg-type]


def test_malicious_strings_are_escaped() -> None:
    results = _full()
    results["h1"]["by_model"][EVIL] = results["h1"]["by_model"].pop("gpt-x")
    results["languages"][0]["name"] = EVIL
    results["warnings"].append(EVIL)
    results[EVIL] = {EVIL: EVIL}
    estimates = _estimates()
    estimates.loc[0, "group"] = EVIL
    html = render_report(results, estimates, title=EVIL)
    assert "<script" not in html
    assert "&lt;script&gt;" in html
    assert html.count("&lt;script&gt;") >= 6


def test_no_external_resources() -> None:
    html = render_report(_full(), _estimates())
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html and "<link" not in html and "<img" not in html
    # Data that carries a URL shows as text, never as a resource link.
    results = _full()
    results["settings"]["base_url"] = "https://example.org/v1"
    html = render_report(results, None)
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", html)


def test_write_report_is_atomic_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.html"
    write_report("<p>one</p>", str(target))
    write_report("<p>two</p>", target)
    assert target.read_text(encoding="utf-8") == "<p>two</p>"
    assert os.listdir(target.parent) == ["report.html"]  # no temporary files left


def test_write_report_failure_keeps_old_file(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    write_report("old", target)
    with pytest.raises(TypeError):
        write_report(None, target)  # type: ignore[arg-type]
    assert target.read_text(encoding="utf-8") == "old"
    assert os.listdir(tmp_path) == ["report.html"]


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
