from __future__ import annotations

import warnings

import pytest

from clcg_pipeline.config import SourceSpec
from clcg_pipeline.corpus import MC_LEVEL, CorpusError, CorpusWarning, load_source
from clcg_pipeline.storage import conform


def _src(kind, path, split=None):
    return SourceSpec(name=kind, kind=kind, path=str(path), split=split, role="primary")


def test_flores200_groups_sentences_by_url(fixtures, languages):
    with pytest.warns(CorpusWarning, match="fra_Latn"):
        t = load_source(_src("flores", fixtures / "flores200", "dev"), languages)
    conform("articles", t.articles)
    conform("paragraphs", t.paragraphs)
    assert "fra_Latn" in t.dropped_languages  # no panel language has that flores_code
    assert set(t.articles["language"]) == {"en", "pt", "sw"}
    # 3 URLs -> 3 articles, first-appearance order
    assert sorted(t.articles["doc_id"].unique()) == ["flores-dev-0001", "flores-dev-0002", "flores-dev-0003"]
    first = t.paragraphs.query("doc_id == 'flores-dev-0001' and language == 'sw'")
    # sentences 1, 2 and 4 share the first URL; the pid is the FLORES sentence id
    assert first["pid"].tolist() == ["s1", "s2", "s4"]
    assert first["ordinal"].tolist() == [1, 2, 3]
    assert first["text"].iloc[2] == "Mashabiki walisherehekea uwanjani."
    arts = t.articles.set_index(["doc_id", "language"])
    assert arts["published"].isna().all()
    assert arts.loc[("flores-dev-0002", "pt"), "url"] == "https://en.wikivoyage.example/b"
    assert arts.loc[("flores-dev-0003", "sw"), "topic"] == "science"
    assert (arts["coverage"] == 1.0).all()


@pytest.mark.filterwarnings("ignore::clcg_pipeline.corpus.CorpusWarning")
def test_flores200_split_selection(fixtures, languages):
    t = load_source(_src("flores", fixtures / "flores200", "devtest"), languages)
    assert set(t.articles["doc_id"]) == {"flores-devtest-0001"}
    both = load_source(_src("flores", fixtures / "flores200"), languages)
    assert both.articles["doc_id"].str.startswith("flores-devtest").sum() == 2  # en + sw
    assert both.articles["doc_id"].str.startswith("flores-dev-").sum() == 9


def test_flores200_broken(fixtures, languages):
    with pytest.raises(CorpusError, match=r"swh_Latn\.dev: 5 sentences, but .*metadata_dev\.tsv has 6"):
        load_source(_src("flores", fixtures / "flores200_bad_counts", "dev"), languages)
    with pytest.raises(CorpusError, match=r"metadata_dev\.tsv:1: header lacks column\(s\) \['URL'\]"):
        load_source(_src("flores", fixtures / "flores200_bad_metadata", "dev"), languages)


@pytest.mark.filterwarnings("ignore::clcg_pipeline.corpus.CorpusWarning")
def test_flores_plus_jsonl_and_parquet(fixtures, languages):
    plus = load_source(_src("flores", fixtures / "floresplus", "dev"), languages)
    classic = load_source(_src("flores", fixtures / "flores200", "dev"), languages)
    assert set(plus.articles["language"]) == {"en", "pt", "sw"}  # pt came from Parquet
    cols = ["doc_id", "language", "pid", "ordinal", "text"]
    a = plus.paragraphs[cols].sort_values(cols).reset_index(drop=True)
    b = classic.paragraphs[cols].sort_values(cols).reset_index(drop=True)
    assert a.equals(b)  # the two distributions of the same data give the same tables


def test_flores_plus_missing_field(fixtures, languages):
    with pytest.raises(CorpusError, match=r"swh_Latn\.jsonl:4: field 'url'"):
        load_source(_src("flores", fixtures / "floresplus_bad_field", "dev"), languages)


def test_belebele_passages_and_mc_items(fixtures, languages):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # both files map to panel languages: no warning
        t = load_source(_src("belebele", fixtures / "belebele"), languages)
    conform("items", t.items)
    conform("articles", t.articles)
    assert sorted(t.articles["doc_id"].unique()) == ["belebele-0001", "belebele-0002"]
    assert set(t.articles["language"]) == {"en", "sw"}
    items = t.items.set_index("item_id")
    assert sorted(items.index) == ["belebele-0001-q1", "belebele-0001-q2", "belebele-0002-q1"]
    q = items.loc["belebele-0001-q1"]
    assert q["question"] == "Which match did the team win?"  # English text for every language
    assert list(q["options"]) == ["First", "Second", "Third", "Fourth"]
    assert q["gold_answer"] == "Third"
    assert q["answer_format"] == "mc" and q["level"] == MC_LEVEL and q["item_source"] == "belebele"
    tr = t.item_translations.set_index(["item_id", "language"])
    assert tr.loc[("belebele-0001-q1", "sw"), "question_original"] == "Timu ilishinda mechi ipi?"
    assert tr.loc[("belebele-0002-q1", "sw"), "options_original"][1] == "Daraja la zamani"
    sw = t.paragraphs.query("doc_id == 'belebele-0002' and language == 'sw'")
    assert sw["text"].tolist() == ["Daraja la zamani limefungwa kwa magari."]


def test_belebele_broken(fixtures, languages):
    with pytest.raises(CorpusError, match=r"swh_Latn\.jsonl:2: field 'correct_answer_num': must be 1-4"):
        load_source(_src("belebele", fixtures / "belebele_bad_answer"), languages)
    with pytest.raises(CorpusError, match="reference language 'en'"):
        load_source(_src("belebele", fixtures / "belebele_no_english"), languages)


def test_flores_plus_url_disagreement_names_file_and_line(fixtures, languages, tmp_path):
    import json
    import shutil

    shutil.copytree(fixtures / "floresplus", tmp_path / "fp")
    (tmp_path / "fp" / "dev" / "por_Latn.parquet").unlink()
    path = tmp_path / "fp" / "dev" / "swh_Latn.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[2]["url"] = "https://elsewhere.example/z"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(CorpusError, match=r"swh_Latn\.jsonl:3: field 'url'"):
        load_source(_src("flores", tmp_path / "fp", "dev"), languages)
