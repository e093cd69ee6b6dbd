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
