from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.config import Repetitions, Sampling, SourceSpec
from clcg_pipeline.corpus import (
    AUDIT_COLUMNS,
    CorpusError,
    audit_corpus,
    count_tokens,
    incomplete_versions,
    load_source,
    sample_articles,
    tokenizer_fertility,
)
from clcg_pipeline.storage import conform


@pytest.fixture
def dirty(fixtures, languages):
    return load_source(SourceSpec(name="d", kind="jsonl", path=str(fixtures / "canonical_dirty")), languages)


def test_audit_counts_defects(dirty):
    audit = audit_corpus(dirty.articles, dirty.paragraphs, reference="en", threshold=0.9)
    assert list(audit.columns) == AUDIT_COLUMNS
    a = audit.set_index("language")
    assert a.loc["en", "complete"] and a.loc["en", "coverage"] == 1.0
    pt = a.loc["pt"]
    assert (pt["n_paragraphs"], pt["n_empty"], pt["n_duplicated"], pt["n_invalid_utf8"]) == (5, 1, 1, 1)
    assert pt["coverage"] == 1.0  # every pid is there ...
    assert pt["usable_coverage"] == pytest.approx(2 / 5)  # ... but only p1 and p5 are usable text
    assert not pt["complete"]
    eu = a.loc["eu"]
    assert eu["coverage"] == pytest.approx(0.8) and eu["n_empty"] == 0
    assert not eu["complete"]  # 0.8 < 0.9
    assert (
        audit_corpus(dirty.articles, dirty.paragraphs, reference="en", threshold=0.8)
        .set_index("language")
        .loc["eu", "complete"]
    )
    assert sorted(incomplete_versions(audit)["language"]) == ["eu", "pt"]
    # The stored text is valid UTF-8 (Parquet-safe) although the source byte was not.
    conform("paragraphs", dirty.paragraphs)
    assert "\ufffd" in dirty.paragraphs.query("language == 'pt' and pid == 'p4'")["text"].iloc[0]


def test_audit_without_reference_version_is_incomplete():
    articles = pd.DataFrame({"doc_id": ["x"], "language": ["pt"]})
    paragraphs = pd.DataFrame(
        {"doc_id": ["x"], "language": ["pt"], "pid": ["p1"], "ordinal": [1], "text": ["t"]}
    )
    row = audit_corpus(articles, paragraphs, reference="en", threshold=0.5).iloc[0]
    assert np.isnan(row["coverage"]) and not row["complete"]
    assert row["n_invalid_utf8"] == 0


def _articles(n: int) -> pd.DataFrame:
    docs = [f"doc-{i:03d}" for i in range(n)]
    rows = [
        {"doc_id": d, "language": lang, "era": "old" if i < n // 4 else "new"}
        for i, d in enumerate(docs)
        for lang in ("en", "pt")
    ]
    return pd.DataFrame(rows)


def test_sample_is_seeded_stratified_and_order_free():
    arts = _articles(100)
    spec = Sampling(size=20, stability_size=8, strata=["era"], seed=7)
    reps = Repetitions(default=1, stability=3)
    s1 = sample_articles(arts, spec, reference="en", repetitions=reps)
    s2 = sample_articles(arts.sample(frac=1, random_state=3), spec, reference="en", repetitions=reps)
    pd.testing.assert_frame_equal(s1, s2)
    assert len(s1) == 20 and s1["doc_id"].is_unique
    assert s1["stratum"].value_counts().to_dict() == {"new": 15, "old": 5}  # proportional 75/25
    assert s1["in_stability"].sum() == 8
    assert s1.loc[s1["in_stability"], "stratum"].value_counts().to_dict() == {"new": 6, "old": 2}
    assert set(s1.loc[s1["in_stability"], "n_reps"]) == {3} and set(
        s1.loc[~s1["in_stability"], "n_reps"]
    ) == {1}
    other = sample_articles(arts, Sampling(size=20, stability_size=8, strata=["era"], seed=8), reference="en")
    assert set(other["doc_id"]) != set(s1["doc_id"])


def test_sample_all_and_errors():
    arts = _articles(10)
    everything = sample_articles(arts, Sampling(size=None, stability_size=2), reference="en")
    assert sorted(everything["doc_id"]) == sorted(arts["doc_id"].unique())
    assert (everything["stratum"] == "all").all() and everything["in_stability"].sum() == 2
    with pytest.raises(CorpusError, match=r"sampling\.size: 11 articles requested"):
        sample_articles(arts, Sampling(size=11), reference="en")
    with pytest.raises(CorpusError, match=r"sampling.strata: column\(s\) \['topic'\]"):
        sample_articles(arts, Sampling(strata=["topic"]), reference="en")


def test_fertility_is_token_ratio_over_shared_paragraphs():
    en = ["The cat sat on the mat.", "It was warm.", "Only in English."]
    xx = ["Le chat était assis sur le tapis, paisiblement, toute la journée.", "Il faisait chaud."]
    paragraphs = pd.DataFrame(
        {
            "doc_id": ["d1"] * 5,
            "language": ["en", "en", "en", "fr", "fr"],
            "pid": ["a", "b", "c", "a", "b"],
            "ordinal": [1, 2, 3, 1, 2],
            "text": en + xx,
        }
    )
    out = tokenizer_fertility(paragraphs, reference="en", sample_size=40, seed=1).set_index("language")
    expected = sum(count_tokens(xx)) / sum(count_tokens(en[:2]))  # paragraph c has no pair
    assert out.loc["fr", "fertility"] == pytest.approx(expected)
    assert out.loc["fr", "n_paragraphs"] == 2 and out.loc["fr", "n_articles"] == 1
    assert out.loc["en", "fertility"] == 1.0
    assert out.loc["fr", "tokenizer"] == "cl100k_base"


def test_fertility_samples_articles_with_seed():
    rows = []
    for i in range(10):
        rows.append({"doc_id": f"d{i}", "language": "en", "pid": "a", "ordinal": 1, "text": "one two"})
        rows.append(
            {
                "doc_id": f"d{i}",
                "language": "sw",
                "pid": "a",
                "ordinal": 1,
                "text": "moja mbili tatu " * (i + 1),
            }
        )
    frame = pd.DataFrame(rows)
    a = tokenizer_fertility(frame, reference="en", sample_size=3, seed=5)
    b = tokenizer_fertility(frame.iloc[::-1], reference="en", sample_size=3, seed=5)
    pd.testing.assert_frame_equal(a, b)
    assert a.set_index("language").loc["sw", "n_articles"] == 3
    with pytest.raises(CorpusError, match="no offline data"):
        tokenizer_fertility(frame, reference="en", tokenizer="p50k_base")
