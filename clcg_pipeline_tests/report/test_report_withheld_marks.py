"""A withheld interval is a short mark, "CI withheld" said once per section (issue 34).

The demo report printed "CI withheld" 94 times, once per withheld cell (67 in the granularity
section), and "valid replicates: 198 of 200" on each row whose flag already said it.
"""

from __future__ import annotations

from clcg_pipeline.report._builder import Labeller, SectionBuilder
from clcg_pipeline.report._consistency import withheld_once
from clcg_pipeline.report._page import Part, Row, Section
from clcg_pipeline.report._studies import CI_WITHHELD

_COLUMNS = ["", "estimate", "interval", "flags and notes"]


def _section(rows: list[Row], status: str = "Status: ok (computed).") -> Section:
    return Section(
        key="k",
        title="t",
        parts=[Part("status", level="ok", text=status), Part("table", columns=_COLUMNS, rows=rows)],
    )


def _said(section: Section) -> list[str]:
    return [part.text for part in section.parts if part.kind in ("note", "status")]


def test_withheld_cells_show_the_rows_letter_and_the_words_once() -> None:
    rows = [
        Row(
            cells=["pt", "0.1", CI_WITHHELD, ""], flags=["not identifiable"], marks={"not identifiable": "a"}
        ),
        Row(
            cells=["sw", "0.2", CI_WITHHELD, ""],
            flags=["score: not identifiable"],
            marks={"score: not identifiable": "score: b"},
        ),
        Row(cells=["ka", "0.3", CI_WITHHELD, ""]),  # no flag of its own: the status line says why
        Row(cells=["mt", "0.4", "[0.1, 0.5]", ""]),
    ]
    section = withheld_once(_section(rows))
    assert [row.cell_marks for row in rows] == [
        {2: ("\u2014 a", "CI withheld (note a)")},
        {2: ("\u2014 b", "CI withheld (note b)")},
        {2: ("\u2014 *", "CI withheld")},
        {},
    ]
    # The cells keep their words: the section's checks (withheld columns, statuses) read them.
    assert [row.cells[2] for row in rows] == [CI_WITHHELD, CI_WITHHELD, CI_WITHHELD, "[0.1, 0.5]"]
    said = _said(section)
    assert sum(text.count(CI_WITHHELD) for text in said) == 1
    # The marks the rows show, each by name (before: "\u201c\u2014 a\u201d" above a row showing "\u2014 b").
    assert (
        "\u201c\u2014 a\u201d or \u201c\u2014 b\u201d: CI withheld, for the reason under its letter"
        in said[1]
    )
    assert "\u201c\u2014 *\u201d: for the reason on the row's own flag" in said[1]


def test_a_status_line_that_names_the_mark_says_what_it_now_is() -> None:
    status = "Not identifiable: too few. Intervals are withheld (\u201cCI withheld\u201d)."
    rows = [
        Row(cells=[x, "0.1", CI_WITHHELD, ""], flags=["not identifiable"], marks={"not identifiable": "a"})
        for x in "ab"
    ]
    section = withheld_once(_section(rows, status))
    assert _said(section) == [
        "Not identifiable: too few. Intervals are withheld (\u201c\u2014 a\u201d: CI withheld, for the "
        "reason under its letter in the note on the rows' flags)."
    ]


def test_one_withheld_cell_keeps_its_words() -> None:
    rows = [
        Row(cells=["pt", "0.1", CI_WITHHELD, ""], flags=["not identifiable"], marks={"not identifiable": "a"})
    ]
    section = withheld_once(_section(rows))
    assert rows[0].cell_marks == {}
    assert any(
        text.startswith("\u201cCI withheld\u201d: the row's interval is withheld") for text in _said(section)
    )


def test_the_rendered_cell_is_spoken_and_hovered_as_ci_withheld() -> None:
    from clcg_pipeline.report import render_report
    from clcg_pipeline_tests.report import study_fixtures as fx
    from clcg_pipeline_tests.report.test_report import _full

    results = _full()
    results["error_taxonomy"] = fx.taxonomy("not_identifiable")
    page = render_report(results, None)
    cell = (
        '<td class="num"><span class="withheld" role="img" aria-label="CI withheld (note a)" '
        'title="CI withheld (note a)">\u2014 a</span></td>'
    )
    assert page.count(cell) >= 2
    assert f'<td class="num">{CI_WITHHELD}</td>' not in page
    # The letter "a" points to the status line's reason (the rows carry the bare state), not to
    # "no reason recorded with the estimate" as the note said before.
    assert "not identifiable \u2014 a: the reason given in the section&#39;s status line" in page
    assert "no reason recorded" not in page


def test_a_valid_replicates_note_is_left_out_when_a_flag_says_it() -> None:
    builder = SectionBuilder(Labeller({}), {}, "95% CI", replicates=200)
    flag = "139 of 200 bootstrap replicates valid (a replicate without a group is dropped)"
    block = {
        "estimate": 0.1,
        "ci_low": 0.0,
        "ci_high": 0.2,
        "valid_replicates": 139,
        "resamples": 200,
        "valid_resamples": 139,
        "flags": [flag],
        "note": "kept",
    }
    row = builder.estimate_row("Isolate", block)
    assert row.flags == [flag]
    assert (
        row.cells[-1] == "Note: kept"
    )  # before: "valid replicates: 139 of 200; Resamples: 200; valid resamples: 139; ..."
    # Without the flag the note still says it.
    block["flags"] = []
    assert "valid replicates: 139 of 200" in builder.estimate_row("Isolate", block).cells[-1]
