import pandas as pd

from clcg_pipeline.analysis.assets import drop_incomplete_versions


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
    assert excluded.to_dict(orient="records") == [{"doc_id": "d2", "language": "ka", "coverage": 0.4}]


def test_nothing_dropped_without_an_audit() -> None:
    scores = pd.DataFrame({"doc_id": ["d1"], "language": ["ka"], "token_f1": [0.5]})
    kept, excluded = drop_incomplete_versions(scores, pd.DataFrame())
    assert len(kept) == 1 and excluded.empty


def test_languages_without_data_say_why_even_when_nothing_was_scored(project) -> None:
    from clcg_pipeline.analysis import run_suite
    from clcg_pipeline.analysis.assets import explain_missing_languages

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
    from clcg_pipeline.analysis.assets import explain_missing_languages

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
