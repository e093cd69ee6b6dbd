import pandas as pd

from clcg_pipeline.results import drop_incomplete_versions


def test_incomplete_versions_are_dropped_and_listed() -> None:
    scores = pd.DataFrame(
        {
            "doc_id": ["d1", "d1", "d2", "d2"],
            "language": ["en", "ka", "en", "ka"],
            "token_f1": [1.0, 0.5, 0.8, 0.1],
        }
    )
    audit = pd.DataFrame(
        {
            "doc_id": ["d1", "d1", "d2", "d2"],
            "language": ["en", "ka", "en", "ka"],
            "coverage": [1.0, 1.0, 1.0, 0.4],
            "complete": [True, True, True, False],
        }
    )
    kept, excluded = drop_incomplete_versions(scores, audit)
    assert list(zip(kept["doc_id"], kept["language"], strict=True)) == [
        ("d1", "en"),
        ("d1", "ka"),
        ("d2", "en"),
    ]
    assert excluded.to_dict(orient="records") == [
        {
            "doc_id": "d2",
            "language": "ka",
            "coverage": 0.4,
            "reason": "usable coverage 0.40 below study.completeness_threshold; "
            "only 40% of the English paragraphs present",
        }
    ]


def test_an_excluded_version_says_why_when_its_coverage_looks_complete() -> None:
    # A version decoded with invalid UTF-8 has every pid (coverage 1.0) but no usable text:
    # the listing used to show only "coverage: 1.0", hiding why it was excluded.
    scores = pd.DataFrame({"doc_id": ["d1", "d1"], "language": ["en", "pt"], "token_f1": [1.0, 0.2]})
    audit = pd.DataFrame(
        {
            "doc_id": ["d1", "d1"],
            "language": ["en", "pt"],
            "coverage": [1.0, 1.0],
            "usable_coverage": [1.0, 0.0],
            "n_invalid_utf8": [0, 9],
            "n_empty": [0, 0],
            "n_duplicated": [0, 0],
            "complete": [True, False],
        }
    )
    _, excluded = drop_incomplete_versions(scores, audit)
    (row,) = excluded.to_dict(orient="records")
    assert row["usable_coverage"] == 0.0 and row["n_invalid_utf8"] == 9
    assert row["reason"] == (
        "usable coverage 0.00 below study.completeness_threshold; 9 paragraph(s) with invalid UTF-8"
    )


def test_nothing_dropped_without_an_audit() -> None:
    scores = pd.DataFrame({"doc_id": ["d1"], "language": ["ka"], "token_f1": [0.5]})
    kept, excluded = drop_incomplete_versions(scores, pd.DataFrame())
    assert len(kept) == 1 and excluded.empty


def test_languages_without_data_say_why_even_when_nothing_was_scored(project) -> None:
    from clcg_pipeline.analysis import run_suite
    from clcg_pipeline.results import explain_missing_languages

    results = run_suite(pd.DataFrame(), project, replicates=5).results
    audit = pd.DataFrame(
        {
            "doc_id": ["d1", "d1", "d1"],
            "language": ["en", "ka", "pt"],
            "coverage": [1.0, 0.3, 1.0],
            "complete": [True, False, True],
        }
    )
    excluded = audit.loc[~audit["complete"], ["doc_id", "language", "coverage"]]
    explain_missing_languages(results, audit, excluded)
    reasons = {e["iso"]: e["reason"] for e in results["languages_without_data"]}
    assert set(reasons) == set(project.languages.isos)
    assert reasons["ka"].startswith("every version below the completeness threshold")
    assert reasons["en"].startswith("no scored rows")
    assert reasons["sw"].startswith("no corpus version")
    assert results["settings"]["languages_without_data"] == results["languages_without_data"]
    assert results["excluded_versions"] == [] and any("no scored rows" in w for w in results["warnings"])


def test_an_empty_item_bank_is_named_as_the_reason(project) -> None:
    """A FLORES primary with no item bank: every language has text but nothing to ask; say so
    rather than "nothing scored yet" (issue 8, "empty is not green")."""
    from clcg_pipeline.analysis import run_suite
    from clcg_pipeline.results import explain_missing_languages

    results = run_suite(pd.DataFrame(), project, replicates=5).results
    audit = pd.DataFrame(
        {"doc_id": ["d1", "d1"], "language": ["en", "ka"], "coverage": [1.0, 1.0], "complete": [True, True]}
    )
    excluded = audit.iloc[0:0][["doc_id", "language", "coverage"]]
    explain_missing_languages(results, audit, excluded, pd.DataFrame(columns=["item_id", "doc_id"]))
    reasons = {e["iso"]: e["reason"] for e in results["languages_without_data"]}
    assert reasons["en"].startswith("no items: the item bank is empty")
    assert reasons["ka"].startswith("no items: the item bank is empty")
    assert reasons["sw"].startswith("no corpus version")


def test_scores_outside_the_band_say_what_they_are(project) -> None:
    """A Belebele primary: everything is scored, at level MC, outside the L3-L5 llm band. The
    H1 table must say so and how to fix it, not 'a group has no scored rows'."""
    from clcg_pipeline.analysis import run_suite

    rows = [
        {
            "model": project.models.models[0].id,
            "language": iso,
            "doc_id": f"d{d}",
            "item_id": f"q{d}",
            "rep": 0,
            "level": "MC",
            "item_source": "belebele",
            "context_scope": "full_body",
            "token_f1": 1.0,
            "accuracy": 1.0,
            "rouge_l": 1.0,
            "semsim": None,
            "exact_match": 1.0,
            "status": "ok",
        }
        for iso in ("en", "pt", "sw")
        for d in range(3)
    ]
    results = run_suite(pd.DataFrame(rows), project, replicates=5).results
    reason = results["h1"]["reason"]
    assert "no scored rows in the study band" in reason
    assert "item_source belebele at level MC (full_body)" in reason and "set study.band" in reason
    assert results["warnings"][0] == f"H1 not identifiable: {reason}"
