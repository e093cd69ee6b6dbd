"""render_report / write_report / format_h1_table on minimal and full results documents."""

from __future__ import annotations

import os
import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.report import render_report, write_report
from clcg_pipeline.storage import DocumentError
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
        "languages": [dict(m) for m in LANGUAGES],  # a copy: tests rename languages
        "warnings": [
            "Basque coverage below threshold in 51 articles",
            {"message": "mixed model did not converge"},
        ],
        "settings": {"config_hash": "c0ffee1234", "seed": 42, "bootstrap_replicates": 2000},
        "by_class": {"0": _est(0.104, 0.09, 0.12, n=1), "2": _est(0.085, 0.08, 0.09, n=2)},
        "h2": {
            "status": "estimated",
            "pooled": {"difference": _est(0.012, -0.003, 0.027, p=0.07)},
            "by_model": {"gpt-x": {"status": "not identifiable", "identifiable": False, "n_new": 0}},
        },
        "h3": {"slope": _est(0.004, 0.001, 0.007, p=0.004)},
        "h4": {"difference": _est(-0.01, -0.02, 0.0, p=0.5)},
        "bh": [{"estimand": "h1", "p": 0.0001, "p_adj": 0.001}, {"estimand": "h4", "p": 0.5, "p_adj": 0.55}],
        "tost": {"p": 0.31, "equivalent": False, "bounds": [-0.02, 0.02]},
        "mixed_models": {"h1": {"converged": False, "estimate": 0.07}},
        "repetitions": {"kendalls_w": 0.93},
        "context_gain": {"by_language": {"sw": {"gain": 0.2, "n": 36, "n_pairs": 6, "n_articles": 1}}},
        "nomological": {"spearman": {"joshi_class": _est(-0.594, -0.85, -0.2, n=16)}},
        # A section the report does not know, with a list of records (rendered as a table).
        "future_analysis": {"thing": 1.5, "levels": [{"name": "L3", "estimate": 0.07}]},
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


def _section_html(html: str, section_id: str) -> str:
    start = html.index(f'<section id="{section_id}"')
    return html[start : html.index("</section>", start)]


def test_full_report_numbers_sections_and_figure() -> None:
    html = render_report(_full(), _estimates())
    text = _text(html)
    assert html.startswith("<!DOCTYPE html>")
    # Headline table: estimates and CIs formatted to 3 decimals.
    assert "H1 micro CLCG 0.078 [0.072, 0.085]" in text
    assert "Portuguese gap 0.061 [0.055, 0.067]" in text
    assert "Macro net 0.016 [0.013, 0.020]" in text
    assert "Micro net 0.017 [0.014, 0.020]" in text
    # Per-language table sorted by CLCG, Joshi class shown, unclassified class and missing CLCG.
    table = _text(_section_html(html, "by-language").split("</svg>")[1])
    assert table.index("Fon (fon) 0 0.104") < table.index("Ayacucho Quechua (quy) unclassified 0.071")
    assert table.index("Ayacucho Quechua (quy)") < table.index("Swahili (sw) 2 0.065 [0.050, 0.080] 1,200")
    assert "Maltese (mt) 2 \u2014 \u2014 0" in table
    # The figure: one bar per computable language, legend by class, no bar for Maltese.
    language_svg = _section_html(html, "by-language").split("</svg>")[0]
    assert language_svg.count('class="bar') == 3
    assert language_svg.count('class="swatch"') == 3  # class 0, class 2, unclassified
    assert "Fon (fon)" in language_svg and "Maltese (mt)" not in language_svg
    assert "class 0" in language_svg and "unclassified" in language_svg
    assert "English minus language (token_f1)" in language_svg
    # Per-model table, largest gap first.
    assert text.index("claude-y 0.101 [0.090, 0.110]") < text.index("gpt-x 0.062")
    # Settings from both levels.
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
    assert "Pooled over models estimate 95% CI p Difference 0.012 [-0.003, 0.027] 0.070" in text
    assert "Slope over levels 0.004 [0.001, 0.007] 0.004" in text
    assert "Levels Name Estimate L3 0.070" in text  # a list of records is a table with a header
    assert "Estimand p p (adj.) h1 <0.001 0.001 h4 0.500 0.550" in text  # BH: raw and adjusted p
    assert "H1 model 0.070 \u2014 \u26a0 not converged" in text
    # H4 as its producer writes it (human, llm, difference), drawn from its typed model.
    assert "H4: item source estimate 95% CI p Difference -0.010 [-0.020, 0.000] 0.500" in text
    assert "Per model: no value for gpt-x (not identifiable)" in text
    assert "Kendall's W 0.930" in text
    # The long estimates table is always there.
    assert "h1_micro all 0.078 [0.072, 0.085] <0.001 <0.001 8,300" in text
    assert "tost 0.061 \u2014 0.310 \u2014 2" in text


def test_sections_are_labelled_tables_not_json_paths() -> None:
    results = _full()
    results["h2"] = {
        "status": "estimated",
        "by_class_sensitivity": {"0": {"status": "not identifiable"}, "2": _est(0.027, -0.05, 0.09, n=564)},
        "by_model": {"gpt-x": {"difference": _est(0.03, -0.01, 0.07, n=804, p=0.2)}},
    }
    results["repetitions"] = {"per_repetition": {"0": _est(0.11, 0.1, 0.13), "1": _est(0.12, 0.1, 0.13)}}
    results["h3"]["standardization"] = {"L3": {"mean": 0.03, "sd": 0.07}, "L4": {"mean": 0.02, "sd": 0.08}}
    html = render_report(results, None)
    text = _text(html)
    assert " / " not in text  # no "by_class_sensitivity / 0 / status" rows
    assert "by_class_sensitivity" not in text
    h2 = _text(_section_html(html, "result-h2"))
    assert "Per Joshi class (primary mapping, pooled class rows)" in h2
    assert "class 0 \u2014 \u2014 \u26a0 not identifiable" in h2
    assert "class 2 0.027 [-0.050, 0.090]" in h2
    assert "Per model estimate 95% CI p n gpt-x \u00b7 Difference 0.030 [-0.010, 0.070] 0.200 804" in h2
    assert "repetition 0 0.110" in _text(_section_html(html, "result-repetitions"))
    # A mapping of flat records is one table (level, mean, SD), not a list per key.
    assert "Standardization (per level) Mean SD L3 0.030 0.070 L4 0.020 0.080" in text


def test_no_negative_zero() -> None:
    results = _full()
    results["context_gain"] = {"by_language": {"sw": {"gain": -7.7e-19, "n": 36}}}
    results["h1"]["macro_net"] = _est(-0.0004, -0.0011, 0.0002)
    estimates = _estimates()
    estimates.loc[1, "estimate"] = -1e-17
    html = render_report(results, estimates)
    assert "-0.000" not in html and "\u22120.000" not in html
    assert "Swahili (sw) 0.000" in _text(_section_html(html, "result-context_gain"))
    assert "Macro net 0.000 [-0.001, 0.000]" in _text(html)


def _described() -> dict:
    results = _full()
    results["settings"].update(
        {
            "sources": [{"name": "demo", "kind": "jsonl", "role": "primary"}],
            "models": [  # a model entry stays open: its credential-looking key is never shown
                {
                    "id": "gpt-x",
                    "provider": "openai",
                    "model": "gpt-x-2025",
                    "knowledge_cutoff": "2024-06",
                    "api_key": "sk-secret-123",
                },
                {"id": "claude-y", "provider": "anthropic", "model": "claude-y-1", "knowledge_cutoff": None},
            ],
            "generated_at": "2026-12-01T09:00:00Z",
            "code_version": "0.1.0+g1234abc",
            "languages_with_data": ["en", "pt", "sw", "fon", "quy"],
        }
    )
    results["languages_without_data"] = ["mt", {"iso": "eu", "reason": "source has no Basque file"}]
    results["excluded_versions"] = []
    results["definitions"] = {
        "h1_micro": {
            "definition": "Mean English score minus mean target score over every target row",
            "direction": "higher = larger loss",
            "sided": "one-sided (greater)",
            "metric": "token_f1",
        }
    }
    return results


def test_header_names_corpus_models_languages_date_and_version() -> None:
    html = render_report(_described(), _estimates())
    header = _text(
        _section_html(html.replace("<header", "<section").replace("</header>", "</section>"), "header")
    )
    assert "corpus demo (jsonl, primary)" in header
    assert (
        "models gpt-x (openai, gpt-x-2025, cutoff 2024-06); "
        "claude-y (anthropic, claude-y-1, no knowledge cutoff)" in header
    )
    assert "languages analysed en, pt, Swahili (sw), Fon (fon), Ayacucho Quechua (quy)" in header
    assert "languages without data Maltese (mt), eu (2 panel languages" in header
    assert "generated 2026-12-01T09:00:00Z" in header and "code version 0.1.0+g1234abc" in header
    assert "sk-secret-123" not in html  # secrets never reach a report


def test_a_source_entry_carrying_a_credential_is_refused_without_showing_it() -> None:
    # settings.sources entries are closed (the config declares five fields): the report refuses
    # the document, and its message names the key, never the value.
    results = _described()
    results["settings"]["sources"][0]["api_key"] = "sk-source-secret-456"
    with pytest.raises(DocumentError) as raised:
        render_report(results, _estimates())
    message = str(raised.value)
    assert "field settings.sources[0].api_key: a key its shape does not declare" in message, message
    assert "sk-source" not in message and "456" not in message


def test_languages_without_data_are_never_shown_as_all_fine() -> None:
    html = render_report(_described(), _estimates())
    text = _text(html)
    assert "Empty" not in text
    assert (
        "2 panel language(s) have no data and no estimate: Maltese (mt), eu (source has no Basque file)"
        in text
    )
    excluded = _text(_section_html(html, "result-excluded_versions"))
    assert "No version was excluded" in excluded and "Maltese (mt), eu have no scored rows" in excluded
    # Older documents without the list: derived from the panel (targets with no H1 estimate).
    older = _full()
    older["excluded_versions"] = []
    text = _text(render_report(older, None))
    assert "languages without data Maltese (mt)" in text and "Empty" not in text
    # Everything covered: said so, not left blank.
    complete = _full()
    complete["languages_without_data"] = []
    assert "languages without data none: every panel language has data" in _text(
        render_report(complete, None)
    )


def test_flagged_estimates_are_marked_in_every_table() -> None:
    results = _full()
    results["mixed_effects"] = {
        "h1": _est(0.109, 0.08, 0.138, p=1e-13, converged=False, status="not converged: no support")
    }
    results["nomological"] = {
        "spearman": {"isolate": {"rho": 0.655, "ci_low": 0.664, "ci_high": 0.949, "n": 6}}
    }
    results["h1"]["pt_gap"] = _est(
        0.1, 0.1, 0.1, identifiable=False, reason="1 article (< 10)", p=0.0005, p_bound=True
    )
    results["estimands"] = {"pt_gap/all": {"identifiable": False, "reason": "1 article (< 10)"}}
    estimates = pd.concat(
        [
            _estimates(),
            pd.DataFrame(
                {
                    "estimand": ["mixed_h1", "pt_gap"],
                    "group": ["all", "all"],
                    "estimate": [0.109, 0.1],
                    "ci_low": [0.08, 0.1],
                    "ci_high": [0.138, 0.1],
                    "p": [1e-13, 0.0005],
                    "p_adj": [float("nan"), float("nan")],
                    "n": [12, 100],
                }
            ),
        ],
        ignore_index=True,
    )
    html = render_report(results, estimates)
    mixed = _section_html(html, "result-mixed_effects")
    assert 'class="flagged"' in mixed and "not converged: no support" in mixed
    assert _text(mixed).count("not converged") == 1  # the longer status replaces the bare flag
    assert "estimate outside its interval" in _section_html(html, "result-nomological")
    summary = _text(_section_html(html, "h1"))
    assert "Portuguese gap 0.100 [0.100, 0.100] \u22640.0005" in summary
    assert "\u26a0 not identifiable: 1 article (< 10)" in summary
    all_estimates = _section_html(html, "estimates")
    rows = {_text(m)[: _text(m).find(" ")]: m for m in re.findall(r"<tr[^>]*>.*?</tr>", all_estimates, re.S)}
    assert 'class="flagged"' in rows["mixed_h1"] and "not converged: no support" in rows["mixed_h1"]
    assert 'class="flagged"' in rows["pt_gap"] and "not identifiable" in rows["pt_gap"]
    assert 'class="flagged"' not in rows["h1_micro"]


def test_definitions_are_shown_as_captions_and_tooltips() -> None:
    html = render_report(_described(), _estimates())
    definition = "Mean English score minus mean target score over every target row"
    assert (
        f'title="{definition}; direction: higher = larger loss; p: one-sided (greater); metric: token_f1"'
        in html
    )
    assert definition in _text(_section_html(html, "h1"))  # the "what it is" column
    assert definition in _text(_section_html(html, "definitions"))


def test_definitions_show_no_markdown_backticks() -> None:
    """study_results.json keeps the docs' `code` marks; the page shows plain words."""
    results = _described()
    results["definitions"]["clcg_language"] = {
        "definition": "language CLCG_l = mean_en - mean_l for the target language in `group`",
        "direction": "higher = larger loss",
        "sided": "none",
        "metric": "the band metric (`study.band.metric`)",
    }
    html = render_report(results, _estimates())
    assert "`" not in _text(html)
    assert "for the target language in group" in _text(_section_html(html, "definitions"))


def _chart_attrs(svg: str) -> dict[str, str]:
    return dict(re.findall(r'([\w-]+)="([^"]*)"', svg[: svg.index(">")]))


def test_charts_fill_the_page_with_readable_text() -> None:
    results = _full()
    results["language_net"] = {"sw": _est(0.004, 0.001, 0.007), "fon": _est(0.04, 0.03, 0.05)}
    results["joshi_class"] = {
        "primary": {
            "0": {"languages": ["fon"], "raw": _est(0.104, 0.09, 0.12), "net": _est(0.04, 0.03, 0.05)},
            "2": {"languages": ["sw", "mt"], "raw": _est(0.085, 0.08, 0.09), "net": _est(0.01, 0.0, 0.02)},
        }
    }
    results["h3"]["standardized"] = {f"L{i}": _est(0.1 * i, 0.05 * i, 0.15 * i) for i in range(6)}
    html = render_report(results, None)
    charts = re.findall(r"<svg[^>]*>", html)
    expected = {
        "chart-by-language": 3,
        "chart-by-model": 2,
        "chart-language_net": 2,
        "chart-joshi_class": 2,
        "chart-h3-standardized": 6,
    }
    found = {}
    for svg in charts:
        attrs = _chart_attrs(svg)
        assert "width" not in attrs and "height" not in attrs  # CSS scales it to the page width
        assert attrs["viewbox".replace("b", "B")].startswith("0 0 1000 ")
        assert int(attrs["font-size"]) >= 15  # 15 of 1000 units: about 16 px on a 1100-px column
        found[attrs["id"]] = int(attrs["data-bars"])
    assert found == expected
    assert "svg.chart { display: block; width: 100%;" in html
    for chart_id, bars in expected.items():
        svg = html[html.index(f'id="{chart_id}"') :]
        svg = svg[: svg.index("</svg>")]
        assert svg.count('class="bar') == bars, chart_id


def test_drilldown_selector_shows_one_language_with_answers_side_by_side() -> None:
    results = _full()
    results["drilldown"] = {
        "sw": [
            {
                "model": "gpt-x",
                "doc_id": "d1",
                "item_id": "d1-L3-1",
                "level": "L3",
                "question": "Why did the shops suffer?",
                "gold": "The works ran through the summer season.",
                "en_answer": "Because works ran through summer.",
                "target_answer": EVIL,
                "en_score": 0.8,
                "target_score": 0.0,
                "difference": 0.8,
                "reps": 3,
            }
        ],
        "fon": [],
    }
    html = render_report(results, None)
    section = _section_html(html, "drilldown")
    assert '<select id="dd-select">' in section
    assert re.findall(r'<option value="(\w+)"', section) == ["sw", "fon"]  # evidence first
    assert 'data-lang="sw"' in section and 'data-lang="fon"' in section
    row = _text(section)
    assert (
        "Why did the shops suffer? gpt-x \u00b7 d1 \u00b7 d1-L3-1 \u00b7 L3 \u00b7 3 rep. "
        "The works ran through the summer season. Because works ran through summer. token_f1 0.800"
    ) in row
    assert "&lt;script&gt;" in section and EVIL not in section
    assert "No item where English scored higher" in row  # fon's empty panel says so
    assert 'select.addEventListener("change", show)' in section


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
    results = _full()
    # A URL in a field the settings' shape declares (a source's path; an undeclared key is refused).
    results["settings"]["sources"] = [{"name": "web", "kind": "http", "path": "https://example.org/v1"}]
    results["drilldown"] = {"sw": [{"question": "see https://example.org", "difference": 0.5}]}
    html = render_report(results, _estimates())
    # Only inline CSS, SVG and one inline script: nothing is fetched.
    assert "<link" not in html and "<img" not in html and "<iframe" not in html
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert "@import" not in html and "url(" not in html
    # Data that carries a URL shows as text, never as a resource link.
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", html)
    assert html.count("<script") == 1


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


def test_a_typed_code_version_is_one_line_not_the_models_repr() -> None:
    # ``settings.code_version`` is a ``CodeVersion`` model in the typed settings: read its fields.
    results = _full()
    results["settings"]["code_version"] = {"package": "0.1.0", "git_commit": "03f342a1abf6709f00d6"}
    text = _text(render_report(results, None))
    assert "code version 0.1.0 git 03f342a1abf6" in text and "package=" not in text
    results["settings"]["code_version"] = {"package": None, "git_commit": None}
    assert "code version not recorded" in _text(render_report(results, None))


def test_language_net_is_read_typed_and_a_wrong_type_is_refused_naming_it() -> None:
    results = _full()
    results["language_net"] = {
        "sw": _est(0.004, -0.01, 0.02, flags=["few items"]),
        "fon": _est(0.043, 0.03, 0.06),
    }
    section = _text(_section_html(render_report(results, None), "result-language_net"))
    assert section.index("Fon (fon)") < section.index("Swahili (sw)")  # largest gap first
    assert "few items" in section
    results["language_net"] = {"sw": _est("0.004", -0.01, 0.02)}
    with pytest.raises(DocumentError, match=r"section 'language_net', field language_net\.sw\.estimate"):
        render_report(results, None)
