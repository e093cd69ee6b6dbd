"""How the report says things once: a flag shared by rows, empty tables, whiskers not drawn."""

from __future__ import annotations

from clcg_pipeline.report import render_report
from clcg_pipeline_tests.report.test_report import _estimates, _full, _section_html, _text


def test_a_flag_shared_by_rows_is_said_once_per_section() -> None:
    # A small study: every language's estimate carries the same reason; one language differs.
    results = _full()
    reason = "too few articles: 6 < study.min_articles = 10"
    for iso in ("sw", "fon", "quy"):
        results["h1"]["by_language"][iso].update(identifiable=False, reason=reason)
    results["h1"]["by_language"]["mt"].update(identifiable=False, reason="no scored row")
    page = _section_html(render_report(results, _estimates()), "by-language")
    section = _text(page)
    assert section.count(reason) == 1  # once, above the table, not on each row
    # The note and mt's own reason; the three rows show the note's letter (before: three more
    # "\u26a0 not identifiable" marks, one per row).
    assert section.count("\u26a0 not identifiable") == 1 + 1
    assert f"\u26a0 not identifiable \u2014 a: {reason}" in section
    assert section.count("\u26a0 a") == 3
    # Each marked row still says what it is to a screen reader and on hover.
    assert page.count('role="img" aria-label="not identifiable (note a)" title="not identifiable"') == 3
    assert "not identifiable: no scored row" in section  # a reason of one row stays on its row


def test_short_flag_keeps_the_label_and_the_state() -> None:
    from clcg_pipeline.report._flag_notes import short_flag

    assert short_flag("raw: not identifiable: too few articles: 6 < 10") == "raw: not identifiable"
    assert short_flag("not converged: no support") == "not converged"
    assert short_flag("1834 of 2000 bootstrap replicates valid (a replicate ...)") == (
        "1834 of 2000 bootstrap replicates valid"
    )


def test_curve_note_speaks_of_whiskers_only_when_some_are_drawn() -> None:
    from clcg_pipeline_tests.report import study_fixtures as fx

    def note(status: str) -> str:
        html = render_report({**_full(), "granularity": fx.granularity(status)}, None)
        return _text(_section_html(html, "result-granularity"))

    assert "with interval whiskers" in note("ok")
    withheld = note("not_identifiable")
    assert "with interval whiskers" not in withheld and "carry no whiskers" in withheld


def test_a_table_with_no_value_is_one_line() -> None:
    results = _full()
    results["mixed_effects"] = {
        "h1": {"estimate": None, "ci_low": None, "ci_high": None, "n": 12, "converged": False},
        "h2": {"estimate": None, "ci_low": None, "ci_high": None, "n": 12, "converged": False},
    }
    section = _section_html(render_report(results, _estimates()), "result-mixed_effects")
    assert "<table" not in section  # before: a block of dashes
    assert "No value for" in _text(section) and "not converged" in _text(section)


def test_a_caveat_opening_with_the_notes_reason_says_only_the_rest() -> None:
    # The granularity study's caveat restated the rows' reason; the section's note says it once.
    from clcg_pipeline.report._flag_notes import flags_once
    from clcg_pipeline.report._page import Part, Row, Section

    reason = "too few documents: 3 < study.min_articles = 10"
    flagged = [Row(cells=[iso], flags=[f"not identifiable: {reason}"]) for iso in ("pt", "sw")]
    caveats = Part("list", items=[f"{reason}; every interval is withheld", "metrics differ; compare gaps"])
    section = flags_once(Section(key="s", title="S", parts=[Part("table", rows=flagged), caveats]))
    assert caveats.items == ["every interval is withheld", "metrics differ; compare gaps"]
    said = [flag for part in section.parts if part.kind == "flags" for row in part.rows for flag in row.flags]
    assert sum(reason in flag for flag in said) == 1


def test_shared_reasons_get_letters_under_one_state() -> None:
    # The demo's granularity tables: several reasons, one state, labelled flags, and rows whose
    # flag records no reason; each row printed "not identifiable" (732 times on the demo).
    from clcg_pipeline.report._flag_notes import shared_flags_note
    from clcg_pipeline.report._page import Part, Row

    few = "too few documents: 3 < study.min_articles = 10"
    rows = [
        Row(
            cells=["pt"],
            flags=[f"score: not identifiable: {few}", "198 of 200 bootstrap replicates valid (x)"],
        ),
        Row(cells=["sw"], flags=[f"not identifiable: not identifiable: {few}"]),
        Row(cells=["ka"], flags=["not identifiable"]),
        Row(cells=["mt"], flags=["not identifiable", "198 of 200 bootstrap replicates valid (x)"]),
    ]
    note = shared_flags_note([Part("table", rows=rows)])
    assert note is not None
    assert note.rows[0].flags == [
        f"not identifiable \u2014 a: {few}; b: no reason recorded with the estimate",
        "c: 198 of 200 bootstrap replicates valid (x)",
    ]
    # The rows keep their short flags (what the section's checks read) and show the letters.
    assert [row.flags for row in rows] == [
        ["score: not identifiable", "198 of 200 bootstrap replicates valid"],
        ["not identifiable"],
        ["not identifiable"],
        ["not identifiable", "198 of 200 bootstrap replicates valid"],
    ]
    assert [row.marks for row in rows] == [
        {"score: not identifiable": "score: a", "198 of 200 bootstrap replicates valid": "c"},
        {"not identifiable": "a"},
        {"not identifiable": "b"},
        {"not identifiable": "b", "198 of 200 bootstrap replicates valid": "c"},
    ]
