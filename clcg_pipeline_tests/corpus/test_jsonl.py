from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.config import SourceSpec
from clcg_pipeline.corpus import (
    HUMAN_LEVEL,
    CorpusError,
    CorpusWarning,
    canonical_json_schema,
    count_tokens,
    load_source,
)
from clcg_pipeline.storage import conform

SCHEMA = Path(__file__).resolve().parents[2] / "clcg_pipeline" / "corpus" / "canonical.schema.json"


def _load(path: Path, languages):
    with pytest.warns(CorpusWarning, match="fr"):
        return load_source(SourceSpec(name="fx", kind="jsonl", path=str(path)), languages)


def test_canonical_folder_tables_follow_contracts(fixtures, languages):
    t = _load(fixtures / "canonical", languages)
    for name in ("articles", "paragraphs", "items"):
        conform(name, getattr(t, name))  # raises on a contract break
    assert t.dropped_languages == ("fr",)
    assert set(t.articles["language"]) == {"en", "pt"}
    arts = t.articles.set_index(["doc_id", "language"])
    # pt of fx-002 has one of the two English pids.
    assert arts.loc[("fx-002", "pt"), "coverage"] == pytest.approx(0.5)
    assert arts.loc[("fx-001", "pt"), "coverage"] == 1.0
    assert arts.loc[("fx-001", "en"), "published"].isoformat() == "2021-03-04"
    assert (t.articles["source"] == "fx").all()
    # n_tokens is the cl100k_base count of the body paragraphs.
    body = t.paragraphs.query("doc_id == 'fx-001' and language == 'en'")["text"].tolist()
    assert arts.loc[("fx-001", "en"), "n_tokens"] == sum(count_tokens(body))
    p = t.paragraphs.query("doc_id == 'fx-002' and language == 'en'")
    assert p["pid"].tolist() == ["a", "b"] and p["ordinal"].tolist() == [1, 2]


def test_human_questions_and_frozen_bank(fixtures, languages):
    items = _load(fixtures / "canonical", languages).items.set_index("item_id")
    human = items[items["item_source"] == "human"]
    assert sorted(human.index) == ["fx-001-h1", "fx-001-h2", "fx-002-h1"]
    assert human.loc["fx-001-h1", "level"] == HUMAN_LEVEL
    assert human.loc["fx-002-h1", "level"] == "L1"  # the source said so
    assert human.loc["fx-001-h1", "answer_format"] == "free"
    assert human.loc["fx-001-h1", "gold_answerable"] and not human.loc["fx-001-h2", "gold_answerable"]
    assert list(human.loc["fx-001-h1", "supporting_pids"]) == ["p3"]
    assert items.loc["fx-001-L0-1", "generator"] == "frozen:fx"  # default provenance
    assert items.loc["fx-001-L4-1", "generator"] == "some-model"
    assert items.loc["fx-001-L4-1", "prompt_hash"] == "abc"
    assert not items["level_label_validated"].any()


@pytest.mark.parametrize(
    ("folder", "needle"),
    [
        ("canonical_bad_json", r"en\.jsonl:2: not valid JSON"),
        ("canonical_bad_field", r"en\.jsonl:2: field 'paragraphs\.0\.text'"),
        ("canonical_bad_date", r"en\.jsonl:1: field 'published'"),
        ("canonical_bad_pid", r"en\.jsonl:1: .*unknown pid\(s\) \['p9'\]"),
        ("canonical_bad_items", r"items\.jsonl:3: field 'level'"),
    ],
)
def test_broken_canonical_input_names_file_line_field(fixtures, languages, folder, needle):
    with pytest.raises(CorpusError, match=needle):
        load_source(SourceSpec(name="fx", kind="jsonl", path=str(fixtures / folder)), languages)


def test_duplicate_version_and_unknown_item_doc(fixtures, languages, tmp_path):
    shutil.copytree(fixtures / "canonical", tmp_path / "c")
    (tmp_path / "c" / "articles" / "fr.jsonl").unlink()
    shutil.copy(tmp_path / "c" / "articles" / "pt.jsonl", tmp_path / "c" / "articles" / "pt2.jsonl")
    with pytest.raises(CorpusError, match=r"language 'pt': .*pt2\.jsonl:1: article 'fx-001' appears twice"):
        load_source(SourceSpec(name="fx", kind="jsonl", path=str(tmp_path / "c")), languages)
    (tmp_path / "c" / "articles" / "pt2.jsonl").unlink()
    with open(tmp_path / "c" / "items.jsonl", "a") as f:
        f.write(
            json.dumps(
                {
                    "item_id": "z",
                    "doc_id": "nope",
                    "level": "L2",
                    "question": "q?",
                    "gold_answer": "a",
                    "answer_format": "free",
                }
            )
            + "\n"
        )
    with pytest.raises(CorpusError, match=r"items\.jsonl:3: field 'doc_id': no article 'nope'"):
        load_source(SourceSpec(name="fx", kind="jsonl", path=str(tmp_path / "c")), languages)


def test_demo_source_loads_with_items(languages):
    t = load_source(SourceSpec(name="demo", kind="demo"), languages)
    assert "en" in set(t.articles["language"])
    assert t.articles.query("language == 'en'")["coverage"].eq(1.0).all()
    counts = t.items["item_source"].value_counts()
    assert counts["llm"] > 0 and counts["human"] > 0
    assert set(t.items.query("item_source == 'llm'")["level"]) <= {"L0", "L1", "L2", "L3", "L4", "L5"}
    # every item refers to an article of the source
    assert set(t.items["doc_id"]) <= set(t.articles["doc_id"])
    conform("items", t.items)
    assert not math.isnan(t.articles["n_tokens"].sum())


def test_schema_file_matches_models():
    on_disk = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert on_disk == canonical_json_schema(), "regenerate canonical.schema.json from canonical_json_schema()"
    article = on_disk["$defs"]["ArticleRecord"]
    assert {"doc_id", "language", "paragraphs"} <= set(article["required"])


def test_count_tokens_offline_only():
    assert count_tokens([]) == []
    assert count_tokens(["hello world", ""]) == [2, 0]
    with pytest.raises(CorpusError, match="no offline data"):
        count_tokens(["x"], "o200k_base")


def test_row_order_is_stable(fixtures, languages):
    a = _load(fixtures / "canonical", languages)
    b = _load(fixtures / "canonical", languages)
    pd.testing.assert_frame_equal(a.articles, b.articles)
    assert a.articles[["doc_id", "language"]].values.tolist() == sorted(
        a.articles[["doc_id", "language"]].values.tolist()
    )


def test_count_tokens_chunked_path_matches_single_calls():
    from clcg_pipeline.corpus import get_encoding

    texts = [f"paragraph {i} " + "word " * (i % 17) for i in range(4500)]  # > one chunk
    enc = get_encoding()
    assert count_tokens(texts) == [len(enc.encode_ordinary(t)) for t in texts]


def test_fsspec_url_and_missing_reference_version(fixtures, languages):
    import fsspec

    fs = fsspec.filesystem("memory")
    for lang in ("pt",):  # no English version at all
        src = fixtures / "canonical" / "articles" / f"{lang}.jsonl"
        fs.pipe(f"/fx-url/articles/{lang}.jsonl", src.read_bytes())
    t = load_source(SourceSpec(name="fx", kind="jsonl", path="memory://fx-url"), languages)
    assert set(t.articles["language"]) == {"pt"}
    assert t.articles["coverage"].isna().all()  # nothing to compare against
    assert t.items.empty
