"""Invalid UTF-8 outside paragraph text, empty language files, and errors that name the language."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clcg_pipeline.config import LanguagesConfig, SourceSpec
from clcg_pipeline.corpus import CorpusError, load_source
from clcg_pipeline.storage import conform

pytestmark = pytest.mark.filterwarnings("ignore::clcg_pipeline.corpus.CorpusWarning")


def _src(kind: str, path: Path, split: str | None = None) -> SourceSpec:
    return SourceSpec(name=kind, kind=kind, path=str(path), split=split)


def _replace_bytes(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


def test_belebele_bad_byte_in_question_and_option_is_reported_and_storable(
    fixtures: Path, languages: LanguagesConfig, tmp_path: Path
) -> None:
    shutil.copytree(fixtures / "belebele_pt", tmp_path / "bb")
    por = tmp_path / "bb" / "por_Latn.jsonl"
    # Line 2: "árbitro" (option 3) and "Quem" (question) get a Windows-1252 byte each.
    _replace_bytes(por, "O árbitro".encode(), "O \xe1rbitro".encode("cp1252"))
    _replace_bytes(por, b'"Quem o', b'"Qu\xe9m o')
    tables = load_source(_src("belebele", tmp_path / "bb"), languages)
    conform("items", tables.items)
    translations = tables.item_translations.query("language == 'pt'")
    # Parquet-storable, like paragraph text: the bad byte is U+FFFD.
    import pyarrow as pa

    pa.Table.from_pandas(translations, preserve_index=False)
    row = translations.set_index("item_id").loc["belebele-0001-q2"]
    assert row["question_original"] == "Qu\ufffdm o treinador elogiou?"
    assert row["options_original"][2] == "O \ufffdrbitro"
    located = tables.invalid_utf8_for("pt")
    assert any(loc.endswith("por_Latn.jsonl:2: field 'question'") for loc in located)
    assert any(loc.endswith("por_Latn.jsonl:2: field 'mc_answer3'") for loc in located)
    assert tables.invalid_utf8_for("en") == []
    # The passages were valid: no paragraph of pt is flagged.
    assert tables.paragraphs.query("language == 'pt'")["utf8_valid"].all()


def test_flores200_bad_byte_in_metadata_is_reported_and_storable(
    fixtures: Path, languages: LanguagesConfig, tmp_path: Path
) -> None:
    shutil.copytree(fixtures / "flores200", tmp_path / "f")
    meta = tmp_path / "f" / "metadata_dev.tsv"
    lines = meta.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"sports", b"sp\xf6rts")  # the first sentence of article 1
    meta.write_bytes(b"\n".join(lines))
    tables = load_source(_src("flores", tmp_path / "f", "dev"), languages)
    conform("articles", tables.articles)  # raised UnicodeEncodeError (surrogates) before
    assert "sp\ufffdrts" in set(tables.articles["topic"])
    expected = "metadata_dev.tsv:2: field 'topic'"
    # Metadata is shared by every language, so every language's partition reports it.
    for iso in ("en", "pt", "sw"):
        assert any(loc.endswith(expected) for loc in tables.invalid_utf8_for(iso))


def test_flores200_bad_byte_in_sentence_is_flagged_for_the_audit(
    fixtures: Path, languages: LanguagesConfig, tmp_path: Path
) -> None:
    shutil.copytree(fixtures / "flores200", tmp_path / "f")
    sw = tmp_path / "f" / "dev" / "swh_Latn.dev"
    lines = sw.read_bytes().split(b"\n")
    lines[0] = lines[0] + b" \x93"
    sw.write_bytes(b"\n".join(lines))
    tables = load_source(_src("flores", tmp_path / "f", "dev"), languages)
    flagged = tables.paragraphs.query("language == 'sw' and not utf8_valid")
    assert flagged["pid"].tolist() == ["s1"]
    assert any(loc.endswith("swh_Latn.dev:1: field 'sentence'") for loc in tables.invalid_utf8_for("sw"))


def test_flores_plus_bad_byte_in_domain_is_storable(
    fixtures: Path, languages: LanguagesConfig, tmp_path: Path
) -> None:
    shutil.copytree(fixtures / "floresplus", tmp_path / "fp")
    sw = tmp_path / "fp" / "dev" / "swh_Latn.jsonl"
    _replace_bytes(sw, b'"domain": "wikinews"', b'"domain": "wikin\xe9ws"')
    tables = load_source(_src("flores", tmp_path / "fp", "dev"), languages)
    conform("articles", tables.articles)
    assert any(loc.endswith("swh_Latn.jsonl:1: field 'domain'") for loc in tables.invalid_utf8_for("sw"))


@pytest.mark.parametrize("content", [b"", b"\n \n"], ids=["0-byte", "blank-lines"])
def test_empty_language_file_is_the_same_error_for_every_source_kind(
    fixtures: Path, languages: LanguagesConfig, tmp_path: Path, content: bytes
) -> None:
    cases = [
        ("belebele", "belebele_pt", "por_Latn.jsonl", None, "pt"),
        ("flores", "flores200", "dev/por_Latn.dev", "dev", "pt"),
        ("flores", "floresplus", "dev/swh_Latn.jsonl", "dev", "sw"),
        ("jsonl", "canonical", "articles/pt.jsonl", None, "pt"),
    ]
    for kind, fixture, name, split, iso in cases:
        root = tmp_path / f"{fixture}-{len(content)}"
        shutil.copytree(fixtures / fixture, root)
        (root / name).write_bytes(content)
        with pytest.raises(CorpusError) as raised:
            load_source(_src(kind, root, split), languages)
        message = str(raised.value)
        assert message.startswith(f"language {iso!r}: "), (kind, message)
        assert str(root / name) in message
        assert "must hold records" in message and f"delete it to leave {iso!r} uncovered" in message
        assert raised.value.language == iso


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "is empty (0 bytes); a language file that is present must hold records"),
        (b"PAR1 junk", "not a readable Parquet file"),
    ],
    ids=["0-byte", "corrupt"],
)
def test_flores_plus_parquet_file_that_is_empty_or_broken_names_language_and_file(
    fixtures: Path, languages: LanguagesConfig, tmp_path: Path, content: bytes, expected: str
) -> None:
    """Same rule as the JSONL files: not pyarrow's "ArrowInvalid: ... '<Buffer>'" naming no file."""
    root = tmp_path / "fp"
    shutil.copytree(fixtures / "floresplus", root)
    (root / "dev" / "por_Latn.parquet").write_bytes(content)
    with pytest.raises(CorpusError) as raised:
        load_source(_src("flores", root, "dev"), languages)
    message = str(raised.value)
    assert message.startswith("language 'pt': "), message
    assert str(root / "dev" / "por_Latn.parquet") in message and expected in message
    assert raised.value.language == "pt"


def test_bad_record_error_names_its_language(fixtures: Path, languages: LanguagesConfig) -> None:
    with pytest.raises(CorpusError, match=r"^language 'sw': .*swh_Latn\.jsonl:2: field 'correct_answer_num'"):
        load_source(_src("belebele", fixtures / "belebele_bad_answer"), languages)
    with pytest.raises(CorpusError, match=r"^language 'sw': .*swh_Latn\.dev: 5 sentences"):
        load_source(_src("flores", fixtures / "flores200_bad_counts", "dev"), languages)
    with pytest.raises(CorpusError, match=r"^language 'sw': .*swh_Latn\.jsonl:4: field 'url'"):
        load_source(_src("flores", fixtures / "floresplus_bad_field", "dev"), languages)


def test_canonical_jsonl_bad_bytes_in_question_bank_and_title_are_storable(
    fixtures: Path, languages: LanguagesConfig, tmp_path: Path
) -> None:
    shutil.copytree(fixtures / "canonical", tmp_path / "c")
    en = tmp_path / "c" / "articles" / "en.jsonl"
    _replace_bytes(en, b"How much money", b"How much m\xf6ney")  # a human question
    _replace_bytes(tmp_path / "c" / "items.jsonl", b"Were the lamps", b"Were the l\xe2mps")  # frozen bank
    pt = tmp_path / "c" / "articles" / "pt.jsonl"
    _replace_bytes(pt, "Faróis do porto".encode(), b"Far\\ud800is do porto")  # a JSON-escaped lone surrogate
    tables = load_source(_src("jsonl", tmp_path / "c"), languages)
    conform("items", tables.items)  # raised UnicodeEncodeError (surrogates) before
    conform("articles", tables.articles)
    questions = " ".join(tables.items["question"])
    assert "How much m\ufffdney" in questions and "Were the l\ufffdmps" in questions
    assert "Far\ufffdis do porto reacesos" in set(tables.articles["title"])
    en_locations = tables.invalid_utf8_for("en")
    assert any(loc.endswith("en.jsonl:1: field 'questions[0].question'") for loc in en_locations), (
        en_locations
    )
    assert any(loc.endswith("items.jsonl:1: field 'question'") for loc in en_locations)
    assert any(loc.endswith("pt.jsonl:1: field 'title'") for loc in tables.invalid_utf8_for("pt"))
