"""The report sections of the validation studies and the granularity tasks (issues 10 and 11).

Rendered from crafted dicts shaped like the contracts (``study_fixtures``), in every status:
ok, not identifiable, awaiting annotations, skipped, empty, absent (an entry of another type is
a ``DocumentError``: test_typed_views.py).
"""

from __future__ import annotations

import re
from html import unescape

import pytest

from clcg_pipeline.report import render_report
from clcg_pipeline.report._heatmap import Cell, heatmap_svg
from clcg_pipeline_tests.report import study_fixtures as fx
from clcg_pipeline_tests.report.test_report import EVIL, _full

SECTIONS = ("error_taxonomy", "human_validation", "granularity")


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _section(html: str, key: str) -> str:
    start = html.index(f'<section id="result-{key}"')
    return html[start : html.index("</section>", start)]


def _render(**blocks: object) -> str:
    results = _full()
    results.update(blocks)
    return render_report(results, None)


def _status(section: str) -> tuple[str, str]:
    match = re.search(r'<p class="status status-(\w+)" data-status="\w+">(.*?)</p>', section, re.S)
    assert match, section[:500]
    return match.group(1), _text(match.group(2))


def _svg(html: str, chart_id: str) -> str:
    start = html.index(f'id="{chart_id}"')
    start = html.rindex("<svg", 0, start)
    return html[start : html.index("</svg>", start) + 6]


def _cells(svg: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(row, column) -> (data-value, the cell's first text) of every drawn heat-map cell."""
    found = {}
    for group in re.findall(r"<g><title>.*?</g>", svg, re.S):
        rect = re.search(r'<rect [^>]*class="cell"[^>]*/>', group)
        if not rect:
            continue
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', rect.group(0)))
        text = re.search(r'class="cell-value[^"]*">([^<]*)</text>', group)
        found[(unescape(attrs["data-row"]), unescape(attrs["data-column"]))] = (
            attrs.get("data-value", ""),
            unescape(text.group(1)) if text else "",
        )
    return found


def test_absent_studies_say_not_run_instead_of_empty_tables() -> None:
    html = render_report(_full(), None)
    for key in SECTIONS:
        section = _section(html, key)
        level, text = _status(section)
        assert level == "missing"
        assert text.startswith("Not run:") and repr(key) in text
        assert "<table" not in section and "<svg" not in section


def test_taxonomy_transition_heat_map_cells_match_the_counts() -> None:
    html = _render(error_taxonomy=fx.taxonomy())
    section = _section(html, "error_taxonomy")
    assert _status(section) == ("ok", "Status: ok (computed).")
    for judge, transitions in fx.TRANSITIONS.items():
        svg = _svg(html, f"heatmap-transitions-{judge}")
        assert 'role="img"' in svg and f'aria-labelledby="heatmap-transitions-{judge}-title' in svg
        assert "<title id=" in svg and "<desc id=" in svg and "rows are the English label" in svg
        cells = _cells(svg)
        assert len(cells) == len(fx.LABELS) ** 2  # every label pair, zeros included
        total = sum(transitions.values())
        for (en, target), n in transitions.items():
            value, text = cells[(en, target)]
            assert text == str(n)
            assert float(value) == pytest.approx(n / total, rel=1e-5)
        assert cells[("other", "refusal")] == ("0", "0")
        # Darker = more: brightness falls with the count (40 > 12 > 0 pairs from EN correct).
        fills = {
            column: sum(int(f[i : i + 2], 16) for i in (0, 2, 4))
            for f, column in re.findall(
                r'fill="#([0-9a-f]{6})" class="cell" data-row="correct" data-column="(\w+)"', svg
            )
        }
        assert fills["correct"] < fills["contradiction"] < fills["refusal"] == 3 * 255
    text = _text(section)
    assert "judge-a: 75 pairs, 50 keep their label" in text


def test_taxonomy_tables_and_charts_show_estimates_and_intervals() -> None:
    html = _render(error_taxonomy=fx.taxonomy())
    section = _section(html, "error_taxonomy")
    text = _text(section)
    # Label frequencies: per judge and side, shares as percentages with intervals.
    assert "judge-a target contradiction 12 75 16.0% [12.0%, 20.0%]" in text
    assert len(re.findall(r'id="chart-taxonomy-labels-judge-[ab]"', section)) == 2
    loss = _svg(html, "chart-taxonomy-loss")
    assert 'data-bars="6"' in loss  # all pairs + two classes, two judges; languages only in the table
    assert "Joshi class 1" in loss and "unclassified" not in loss
    assert "judge-b Swahili (sw) 22.0% [17.0%, 27.0%]" in text
    # Agreement: percent and kappa at three levels, each with its interval.
    assert "fine judge-a vs judge-b 81.0% [76.0%, 86.0%] 0.620 [0.540, 0.700]" in text
    assert "binary judge-a vs judge-b 93.0%" in text
    assert "contradiction 12 16.0% 0.550" in text and 'id="chart-taxonomy-delta"' in section
    assert "judge-a 40 6 15.0% [9.0%, 21.0%]" in text  # order bias
    assert "no pair judged both ways round" in text
    assert "not identifiable: no evaluated model of the judge's family" in text  # self-preference, flagged
    assert "Frequencies describe the stratified diagnostic sample" in text  # caveats
    assert "38.0% (target 40.0%); a score heuristic, not a label" in text


def test_taxonomy_not_identifiable_shows_estimates_with_ci_withheld() -> None:
    html = _render(error_taxonomy=fx.taxonomy("not_identifiable"))
    section = _section(html, "error_taxonomy")
    level, status = _status(section)
    assert level == "warn" and status.startswith("Not identifiable: too few articles: 6")
    assert "CI withheld" in status
    text = _text(section)
    # The withheld interval's cell is a short mark (the letter of the row's reason), spoken and
    # hovered as "CI withheld", which the status line says once (issue 34).
    assert "fine judge-a vs judge-b 81.0% [76.0%, 86.0%] 0.620 \u2014 a" in text
    assert 'aria-label="CI withheld (note a)" title="CI withheld (note a)">\u2014 a</span>' in section
    assert text.count("CI withheld") == 1
    # A long table whose every interval is withheld leaves the column out, said once (issue 34).
    assert "judge-a target contradiction 12 75 16.0% \u26a0" in text
    assert text.count("are left out of the long tables below") == 1
    # The reason is given once in the status line, not repeated on every row.
    assert text.count("too few articles") == 1
    assert 'class="flagged"' in section
    loss = _svg(html, "chart-taxonomy-loss")
    assert 'class="ci"' not in loss and "\u26a0" in loss  # no whiskers; bars marked


@pytest.mark.parametrize(
    ("block", "level", "opening"),
    [
        ({"status": "skipped", "reason": "no judges configured"}, "warn", "Skipped: no judges configured"),
        ({"status": "empty", "reason": "nothing scored yet"}, "warn", "Empty: nothing scored yet"),
        ({"status": "mystery"}, "warn", "Status: mystery"),
    ],
)
def test_other_statuses_are_named_with_their_reason(block: object, level: str, opening: str) -> None:
    section = _section(_render(error_taxonomy=block), "error_taxonomy")
    found_level, text = _status(section)
    assert found_level == level and text.startswith(opening)
    assert "<table" not in section and "<svg" not in section


def test_skipped_study_with_empty_lists_shows_no_empty_table() -> None:
    block = {**fx.taxonomy(), "status": "skipped", "reason": "no usable judgement"}
    for key in ("label_frequencies", "transitions", "crosslingual_loss", "agreement", "delta_contribution",
                "order_bias", "self_preference", "delta", "excluded", "judges"):  # fmt: skip
        block[key] = []
    section = _section(_render(error_taxonomy=block), "error_taxonomy")
    assert _status(section)[1] == "Skipped: no usable judgement"
    assert "<table" not in section and "<svg" not in section and "Label frequencies" not in section
    ok_but_empty = {**block, "status": "ok", "reason": None}
    text = _text(_section(_render(error_taxonomy=ok_but_empty), "error_taxonomy"))
    assert "No label frequencies recorded." in text and "No transitions recorded." in text


def test_simulated_annotations_carry_a_banner_in_the_section_and_the_caveats() -> None:
    html = _render(human_validation=fx.human())
    section = _section(html, "human_validation")
    assert re.search(r'<div class="banner" role="alert">SIMULATED annotations', section)
    assert section.index('class="banner"') < section.index('class="status')
    caveats = html[html.index('<section class="caveat"') :]
    assert "Human validation uses SIMULATED annotations" in caveats[: caveats.index("</section>")]
    real = _render(human_validation=fx.human(simulated=False))
    assert "SIMULATED" not in real and 'class="banner"' not in real


def test_human_validation_results() -> None:
    html = _render(human_validation=fx.human())
    section = _section(html, "human_validation")
    text = _text(section)
    assert "attention check 2 150 10 750" in text  # funnel table
    funnel = _svg(html, "chart-human-funnel")
    assert 'data-bars="4"' in funnel and ">659</text>" in funnel
    alpha = _svg(html, "chart-human-alpha")
    assert 'class="reference"' in alpha and "0.67 (tentative conclusions)" in alpha
    # The reference line sits between the bars' values 0.58 and 0.74 on the axis.
    ref_x = float(re.search(r'<line x1="([\d.]+)"[^>]*class="reference"', alpha).group(1))
    ticks = {
        float(v): float(x)
        for x, v in re.findall(r'<text x="([\d.]+)" y="[\d.]+" class="tick">([\d.]+)<', alpha)
    }
    assert ticks[0.6] < ref_x < ticks[0.8]
    assert "adequacy ordinal 0.740 [0.690, 0.790] at or above 200" in text
    assert "keypoint recall interval 0.580 [0.510, 0.650] below 180" in text
    assert "Token-F1 adequacy 0.610 [0.550, 0.670] <0.001 200" in text
    assert "decisive pairs 88 higher-resource preferred 57" in text
    assert "Raw proportion (exact binomial interval) 0.648 [0.539, 0.747] 0.004" in text
    assert "Mixed model probability (crossed random intercepts) 0.660 [0.550, 0.760] 0.003" in text
    assert "Annotator-cluster bootstrap 0.648 [0.550, 0.740]" in text
    assert "Ceiling rule not triggered: minimum adequacy median across resource classes 4.00" in text
    assert "judge-a 78.0% 0.550 60" in text
    assert "kappa interval" not in text  # the contract carries none: no column of dashes


def test_ceiling_triggered_and_withheld_bootstrap_are_visible() -> None:
    block = fx.human("not_identifiable")
    block["ceiling"] = {"triggered": True, "min_class_adequacy_median": 4.6, "high_low_difference": 0.2}
    section = _section(_render(human_validation=block), "human_validation")
    text = _text(section)
    assert "Ceiling rule TRIGGERED: minimum adequacy median across resource classes 4.60" in text
    assert re.search(r"Annotator-cluster bootstrap 0\.648 \u2014 a", text)
    assert 'role="img" aria-label="CI withheld (note a)"' in section
    assert _status(section)[1].startswith("Not identifiable: only 4 items")


def test_awaiting_annotations_is_said_plainly() -> None:
    section = _section(_render(human_validation=fx.human("awaiting")), "human_validation")
    level, text = _status(section)
    assert level == "warn"
    assert text.startswith("Awaiting annotations: no annotation file imported")
    assert "No annotation has been imported yet" in text
    assert "<table" not in section and "<svg" not in section and "banner" not in section


def test_granularity_heat_maps_per_language_group() -> None:
    block = fx.granularity()
    html = _render(granularity=block)
    section = _section(html, "granularity")
    assert _status(section)[0] == "ok"
    for group in ("high", "mid", "low"):
        svg = _svg(html, f"heatmap-granularity-{group}")
        assert 'data-rows="3" data-columns="3"' in svg
        cells = _cells(svg)
        expected = {
            (
                f"{r['granularity']} \u00b7 {'ROUGE-L' if r['metric'] == 'rouge_l' else r['metric']}",
                r["region"],
            ): r
            for r in block["heatmap"]
            if r["language_group"] == group
        }
        assert set(cells) == set(expected)
        for key, record in expected.items():
            value, text = cells[key]
            assert float(value) == pytest.approx(record["gap"]) and text == f"{record['gap']:.3f}"
    # Group order: high, mid, low; the English reference is never a group of its own.
    order = [section.index(f'id="heatmap-granularity-{g}"') for g in ("high", "mid", "low")]
    assert order == sorted(order) and "heatmap-granularity-reference" not in section
    # Positive gaps (English ahead) are red, on each row's own scale: the middle is the darkest red.
    fills = re.findall(
        r'fill="#([0-9a-f]{6})" class="cell" data-row="word \u00b7 accuracy" data-column="(\w+)"',
        _svg(html, "heatmap-granularity-low"),
    )
    reds = {column: (int(f[:2], 16), int(f[2:4], 16)) for f, column in fills}
    assert all(r > g for r, g in reds.values())
    assert min(reds, key=lambda c: reds[c][1]) == "middle"


def test_granularity_position_curve_tables_and_tokens() -> None:
    html = _render(granularity=fx.granularity())
    section = _section(html, "granularity")
    curve = _svg(html, "curve-word-accuracy")
    assert 'data-points="27" data-series="3"' in curve  # 3 groups x 9 places; no line for English
    assert curve.count('class="whisker"') == 27 and "reference" not in curve
    assert curve.count('class="tick group"') == 3
    scores = _svg(html, "score-curve-word-accuracy")  # the scores, English included, no intervals
    assert 'data-points="28" data-series="4"' in scores and "reference (English)" in scores
    assert "whisker" not in scores and "withheld" not in scores
    # One colour per language group across charts, though the score chart has one series more.
    legend = r'stroke="(#[0-9a-f]{6})" stroke-width="3"/><text[^>]*>low-resource'
    assert re.findall(legend, scores) == re.findall(legend, curve) == ["#7a0177"]
    text = _text(section)
    assert "word \u00b7 accuracy low middle middle 0.630 0.170 [0.140, 0.200] 20" in text
    assert "cloze accuracy sw lexical-reader 0.700 0.200 0.500 [0.400, 0.600]" in text
    assert "Krippendorff's alpha (ordinal, 0\u2013100 totals) 0.710" in text
    assert "ICC not computed: no maintained ICC implementation installed" in text
    assert "Human vs judge correlation: not available (no human ratings imported)" in text
    tokens = _svg(html, "chart-granularity-tokens")
    assert ">990,000</text>" in tokens and "1e+06" not in tokens
    assert "word single qa 90 990,000 11,000 14,000" in text
    assert 'id="chart-granularity-cloze"' in section


def test_granularity_not_identifiable_and_skipped() -> None:
    html = _render(granularity=fx.granularity("not_identifiable"))
    section = _section(html, "granularity")
    text = _text(section)
    assert _status(section)[1].startswith("Not identifiable: too few documents: 2 < study.min_articles = 10")
    # A heat-map cell's withheld interval: a dash under its value, the words in its tooltip.
    assert "interval withheld" in _svg(html, "heatmap-granularity-low")
    assert "(\u201c\u2014\u201d: interval withheld)" in text
    assert "interval withheld" in _svg(html, "curve-word-accuracy")  # hollow points, said in the tooltip
    assert 'class="whisker"' not in _svg(html, "curve-word-accuracy")
    assert "cloze accuracy sw lexical-reader 0.700 0.200 0.500 \u2014 a" in text
    skipped = _section(_render(granularity=fx.granularity("skipped")), "granularity")
    level, status = _status(skipped)
    assert level == "warn" and status.startswith("Skipped: study.granularity.enabled is false")
    assert "<table" not in skipped and "<svg" not in skipped


# Key-shaped strings are assembled here so that no key-looking literal sits in the repository.
LIVE_KEY = "sk-" + "live-" + "abcdefghijklmnop1234"
PROJECT_KEY = "sk-" + "proj-" + "ABCDEFGHIJKLMNOPQRST"


def test_extra_keys_still_render_and_secrets_never_do() -> None:
    block = fx.taxonomy()
    block["api_key"] = LIVE_KEY
    block["judges"][0]["authorization"] = "Bearer abcdefghijklmnopqrstuv"
    block["caveats"].append(f"the judge said: key {PROJECT_KEY} was rejected")
    block["new_measure"] = {"estimate": 0.42, "ci_low": 0.3, "ci_high": 0.5}
    human = fx.human()
    human["settings"] = {"password": "hunter2-hunter2", "inbox": "annotations/inbox"}
    html = _render(error_taxonomy=block, human_validation=human)
    for secret in (LIVE_KEY, "abcdefghijklmnopqrstuv", PROJECT_KEY,
                   "hunter2", "api_key", "password"):  # fmt: skip
        assert secret not in html
    assert "key [redacted] was rejected" in _text(html)
    assert "Further results" in _section(html, "error_taxonomy") and "0.420" in _section(
        html, "error_taxonomy"
    )
    assert "annotations/inbox" in _section(html, "human_validation")


def test_names_from_data_are_escaped_in_tables_and_charts() -> None:
    block = fx.taxonomy()
    for record in block["transitions"] + block["label_frequencies"]:
        if record["judge"] == "judge-a":
            record["judge"] = EVIL
    block["label_frequencies"][0]["label"] = EVIL
    gran = fx.granularity()
    gran["heatmap"][0]["language_group"] = EVIL
    html = _render(error_taxonomy=block, granularity=gran)
    assert "<script" not in html.replace("<script>\n// Show one language", "")
    assert "&lt;script&gt;" in _section(html, "error_taxonomy")
    assert "&lt;script&gt;" in _section(html, "granularity")


def test_heatmap_svg_no_data_cells_slanted_labels_and_signs() -> None:
    rows, columns = ["a", "b"], ["short", "a-very-long-unbreakable-column-label", "x"] * 3
    columns = [f"{c}{i}" for i, c in enumerate(columns)]
    cells = {
        ("a", columns[0]): Cell(0.5, "0.5"),
        ("b", columns[0]): Cell(-0.5, "-0.5"),
        ("b", columns[1]): Cell(None, "n/a"),
    }
    svg = heatmap_svg(rows, columns, cells, title="t", desc="d", diverging=True, chart_id="hm")
    assert 'data-cells="3"' in svg  # the cells given; the rest are drawn as "no data"
    assert svg.count('class="nodata"') == len(rows) * len(columns) - 3 and ">no data</text>" in svg
    assert 'class="cell empty"' in svg and ">n/a<" in svg
    assert 'class="column-label slanted"' in svg and "rotate(35" in svg
    red = re.search(r'fill="#([0-9a-f]{6})" class="cell" data-row="a"', svg).group(1)
    blue = re.search(r'fill="#([0-9a-f]{6})" class="cell" data-row="b"', svg).group(1)
    assert int(red[:2], 16) > int(red[4:], 16) and int(blue[4:], 16) > int(blue[:2], 16)
    assert heatmap_svg([], columns, {}, title="t", desc="d") == ""
    wide = heatmap_svg(["r"], ["begin", "middle"], {("r", "begin"): Cell(0.1, "0.1")}, title="t", desc="d")
    assert "slanted" not in wide


def test_status_spellings_of_the_analysis_modules() -> None:
    # V4 writes "awaiting annotations", G3 may write "not identifiable: ..." in words.
    block = {**fx.human("awaiting"), "status": "awaiting annotations"}
    level, text = _status(_section(_render(human_validation=block), "human_validation"))
    assert level == "warn" and text.startswith("Awaiting annotations: no annotation file imported")
    block = {**fx.granularity("not_identifiable"), "status": "not identifiable"}
    assert _status(_section(_render(granularity=block), "granularity"))[1].startswith("Not identifiable:")


def test_long_tables_are_folded_and_sound_notes_are_not_flags() -> None:
    html = _render(error_taxonomy=fx.taxonomy(), human_validation=fx.human())
    taxonomy = _section(html, "error_taxonomy")
    # 36 label-frequency rows: behind a disclosure, still in the page; short tables stay open.
    folded = re.search(
        r"<details class=\"long-table\"><summary>(.*?)</summary>(.*?)</details>", taxonomy, re.S
    )
    assert folded and _text(folded.group(1)) == "Table: 36 rows \u2014 click to show"
    assert "judge-b" in folded.group(2) and '<details class="long-table"' not in _section(
        html, "human_validation"
    )
    block = fx.human()
    block["spearman"].append(
        {"metric": "clcg_class", "human": "adequacy_mean", "rho": -0.9, "ci_low": None, "ci_high": None,
         "p": 0.04, "n": 4, "status": "ok (no interval: one value per class)"}
    )  # fmt: skip
    block["preference"]["mixed"]["status"] = "ok"
    block["class_adequacy"] = [{**r, "clcg": None} for r in block["class_adequacy"]]
    section = _section(_render(human_validation=block), "human_validation")
    row = next(m for m in re.findall(r"<tr[^>]*>.*?</tr>", section, re.S) if "class CLCG" in m)
    assert 'class="flagged"' not in row and "ok (no interval: one value per class)" in _text(row)
    assert "not computed" in _text(row) and "CI withheld" not in _text(row)
    mixed = next(m for m in re.findall(r"<tr[^>]*>.*?</tr>", section, re.S) if "Mixed model probability" in m)
    assert 'class="flagged"' not in mixed
    assert "CLCG" in _text(section)  # the column stays, as dashes, when no class has a CLCG
    block["preference"]["mixed"]["status"] = "fitted with warnings: Hessian not positive definite"
    section = _section(_render(human_validation=block), "human_validation")
    mixed = next(m for m in re.findall(r"<tr[^>]*>.*?</tr>", section, re.S) if "Mixed model probability" in m)
    assert 'class="flagged"' in mixed and "Hessian not positive definite" in mixed


def test_ok_status_with_every_interval_withheld_warns_and_empty_charts_leave_no_title() -> None:
    # G3 may say "ok" while every interval is withheld (too few documents): the status line says so.
    block = {**fx.granularity("not_identifiable"), "status": "ok", "reason": None}
    section = _section(_render(granularity=block), "granularity")
    level, text = _status(section)
    assert level == "warn" and "Every interval is withheld" in text
    assert _status(_section(_render(granularity=fx.granularity()), "granularity"))[0] == "ok"
    # A panel with scores but no gap at all (translation has no English row): no gap chart, no lone title.
    block = fx.granularity()
    block["position_curve"] = [
        {**r, "granularity": "document", "metric": "bleu", "gap": None, "ci_low": None, "ci_high": None}
        for r in block["position_curve"]
    ]
    section = _section(_render(granularity=block), "granularity")
    assert 'id="score-curve-document-bleu"' in section and 'id="curve-document-bleu"' not in section
    assert "document \u00b7 BLEU: score by position" in _text(section)
    assert "cross-lingual gap by position, with intervals" not in _text(section)


def test_status_reason_is_not_said_twice() -> None:
    block = {"status": "skipped", "reason": "skipped: human_validation.responses and .pairs are 0"}
    text = _status(_section(_render(human_validation=block), "human_validation"))[1]
    assert text == "Skipped: human_validation.responses and .pairs are 0"
    block = fx.taxonomy("not_identifiable")
    text = _status(_section(_render(error_taxonomy=block), "error_taxonomy"))[1]
    assert text == (
        "Not identifiable: too few articles: 6 < study.min_articles = 10. Point estimates are shown as "
        "descriptions; their intervals are withheld (\u201c\u2014 a\u201d: CI withheld, for the reason "
        "under its letter in the note on the rows' flags)."
    )


def test_human_validation_methods_spearman_is_not_labelled_as_the_nomological_one() -> None:
    # QA: the generic label of a "spearman" key belongs to the nomological network; under
    # human_validation it is the metric-vs-human correlation.
    human = fx.human()
    human["methods"] = {"spearman": "scipy spearmanr of Token-F1 with the mean valid rating"}
    text = _text(_section(_render(human_validation=human), "human_validation"))
    assert "Spearman correlation with the language CLCG" not in text
    assert "Spearman correlation of the automatic metric with human ratings scipy spearmanr" in text


def test_taxonomy_names_the_offline_rule_judges_for_what_they_are() -> None:
    llm = _text(_section(_render(error_taxonomy=fx.taxonomy()), "error_taxonomy"))
    assert "Two LLM judges (blind to model" in llm
    block = fx.taxonomy()
    for judge in block["judges"]:
        judge["family"] = "rule"
    offline = _text(_section(_render(error_taxonomy=block), "error_taxonomy"))
    assert "LLM judge" not in offline
    assert "Two rule-based stand-in judges (offline and deterministic, not LLMs) (blind to model" in offline
    assert "Agreement between two rule-based stand-in judges" in offline


def test_judge_validity_by_language_and_script_tables() -> None:
    """Issue 19 item 7: per-language and per-script judge checks, each a table; a group with too
    few clusters keeps its estimate with the interval withheld and the reason named."""
    few = "too few items: 3 < study.min_articles = 10"
    human = fx.human(simulated=False)
    human["judge_kappa_by_language"] = [
        {"judge": "judge-a", "language": "sw", "script": "Latn", "percent": 0.9, "kappa": 0.8,
         "ci_low": 0.7, "ci_high": 0.9, "n": 40, "clusters": 20, "status": "ok", "identifiable": True,
         "reason": None},
        {"judge": "judge-a", "language": "am", "script": "Ethi", "percent": 0.5, "kappa": 0.1,
         "ci_low": None, "ci_high": None, "n": 6, "clusters": 3, "status": "ok", "identifiable": False,
         "reason": few},
    ]  # fmt: skip
    human["judge_kappa_by_script"] = [
        {"judge": "judge-a", "script": "Latn", "languages": ["ht", "sw"], "percent": 0.8, "kappa": 0.6,
         "ci_low": 0.5, "ci_high": 0.7, "n": 60, "clusters": 30, "status": "ok", "identifiable": True},
    ]  # fmt: skip
    taxonomy = fx.taxonomy()
    taxonomy["order_bias_by_language"] = [
        {"judge": "judge-a", "language": "ka", "script": "Geor", "pairs": 20, "flips": 8, "flip_rate": 0.4,
         "ci_low": None, "ci_high": None, "n_articles": 4, "identifiable": False,
         "reason": "too few articles: 4 < study.min_articles = 10"},
    ]  # fmt: skip
    html = _render(human_validation=human, error_taxonomy=taxonomy)
    text = _text(_section(html, "human_validation"))
    assert "Human vs LLM-judge agreement by language" in text
    assert "judge-a sw Latn 90.0% 0.800 [0.700, 0.900] 40 20" in text
    # Computed (status ok) but withheld: the interval cell says so, not "not computed".
    assert "judge-a am Ethi 50.0% 0.100 CI withheld 6 3" in text and few in text
    assert "judge-a Latn ht, sw 80.0% 0.600 [0.500, 0.700] 60 30" in text
    tax = _text(_section(html, "error_taxonomy"))
    assert "Order bias by language" in tax and "judge-a ka Geor 20 8 40.0% CI withheld 4" in tax
    # A document written before the breakdowns says they are not recorded (the pooled rows exist).
    assert "No per-script order-bias measurements recorded." in tax
    older = _text(_section(_render(human_validation=fx.human(simulated=False)), "human_validation"))
    assert "No per-language human-vs-judge agreement recorded." in older
