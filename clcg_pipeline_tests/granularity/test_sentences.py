"""The sentence splitter in every script of the panel, and the cloze it makes possible there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.config import GranularityBucket, GranularitySettings, load_config
from clcg_pipeline.granularity._documents import blank_sentence, load_long_documents, split_sentences
from clcg_pipeline.granularity._tasks import build_tasks, judge_writer

DEMO = Path(__file__).resolve().parents[2] / "assets_config"

# Two sentences per script; the panel's scripts first (checked below), then others seen in studies.
TWO_SENTENCES: dict[str, tuple[str, str]] = {
    "Latn": ("The pipes were replaced in 2019.", "Water losses fell by a third."),
    "Geor": ("მილები 2019 წელს შეიცვალა.", "წყლის დანაკარგი მესამედით შემცირდა."),
    "Deva": ("पाइपहरू २०१९ मा बदलिए।", "पानीको नोक्सानी एक तिहाइले घट्यो।"),
    "Ethi": ("ቧንቧዎቹ በ2019 ተቀየሩ።", "የውሃ ብክነት በሶስተኛ ቀንሷል።"),
    "Arab": ("هل استبدلت الأنابيب في عام 2019؟", "نعم، وانخفض الفاقد بمقدار الثلث."),
    "Cyrl": ("Трубы заменили в 2019 году.", "Потери воды снизились на треть."),
    "Hans": ("管道于2019年更换。", "水的损失减少了三分之一。"),
    "Jpan": ("配管は2019年に交換された。", "水の損失は三分の一減った。"),
}


def test_every_script_of_the_panel_has_a_case() -> None:
    scripts = {lang.script for lang in load_config(DEMO).languages.languages}
    assert scripts <= set(TWO_SENTENCES), (
        f"add a two-sentence case for {sorted(scripts - set(TWO_SENTENCES))}"
    )


@pytest.mark.parametrize("script", sorted(TWO_SENTENCES))
@pytest.mark.parametrize("space", [" ", "\n"], ids=["space", "newline"])
def test_a_two_sentence_text_splits_in_two_in_every_script(script: str, space: str) -> None:
    first, second = TWO_SENTENCES[script]
    # CJK is written without a space between sentences.
    text = first + ("" if script in ("Hans", "Jpan") else space) + second
    assert split_sentences(text) == [first, second]
    assert blank_sentence(text, 1, "[BLANK 1]") == text.replace(second, "[BLANK 1]")


@pytest.mark.parametrize(
    "sentences",
    [
        # Maltese elision: an apostrophe that opens no quotation.
        ["Iċ-ċifri juru tendenza 'l fuq.", "Fl-ewwel snin qatt ma qabeż l-4,000."],
        # Haitian one-letter words end sentences; they are not initials.
        ["Yo te planifye l.", "Travay la te kòmanse nan mwa mas."],
        ["A Sra. Silva chegou cedo.", "O Dr. Costa também."],
        ["He met J. Smith at St. Mary's.", "It cost 4.6 million, see example.com."],
        ["Framkvæmdir lauk 28. október 2019.", "Nýtt."],
        # Ethiopic ends sentences with ።; its "." marks abbreviations (ዓ.ም., the Ethiopian era).
        ["በ1900 ዓ.ም. ማህበሩ ቧንቧ ቀየረ።", "በ1901 ዓ.ም ማህበሩ ቀየረ።"],
        # No space after a full-width stop, and a sentence may open with a digit.
        ["在1900年，合作社更换了管道。", "1901年，合作社更换了水表。"],
        ["「これは文です。」", "次の文です。"],
    ],
)
def test_edge_cases_of_each_script(sentences: list[str]) -> None:
    joiner = "" if "。" in sentences[0] else " "
    assert split_sentences(joiner.join(sentences)) == sentences


def _record(doc_id: str, lang: str, sentence: str) -> dict:
    paragraphs = [
        {"pid": f"p{i:02d}", "text": " ".join(sentence.format(i=i, j=j) for j in range(1, 4))}
        for i in range(1, 13)
    ]
    return {"doc_id": doc_id, "language": lang, "paragraphs": paragraphs}


@pytest.mark.parametrize(
    ("lang", "sentence"),
    [
        ("ne", "अनुच्छेद {i} को वाक्य {j} ले पानीको पाइप बदल्ने योजनाको बारेमा बताउँछ।"),
        ("am", "አንቀጽ {i} ዓረፍተ ነገር {j} ስለ ውሃ ቧንቧ ለውጥ እቅድ ይናገራል።"),
    ],
    ids=["ne", "am"],
)
def test_cloze_is_built_for_a_language_ending_sentences_in_its_own_script(
    tmp_path: Path, lang: str, sentence: str
) -> None:
    english = (
        "Paragraph {i} sentence {j} of the report describes how the cooperative replaced "
        "the old water pipes under the town in {i}{j} days."
    )
    (tmp_path / "articles").mkdir()
    for code, text in (("en", english), (lang, sentence)):
        record = _record("un-1", code, text)
        (tmp_path / "articles" / f"{code}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    settings = GranularitySettings(
        enabled=True,
        source=str(tmp_path),
        buckets=[GranularityBucket(name="0-4K", min_tokens=1, max_tokens=4000, documents=1)],
    )
    docs = load_long_documents(str(tmp_path), settings, languages=["en", lang], reference="en", threshold=0.9)
    assert set(docs.documents["language"]) == {"en", lang}
    writer = load_config(DEMO).models.get("offline-writer")
    bank = build_tasks(
        docs.documents,
        docs.paragraphs,
        settings,
        reference="en",
        writer=judge_writer(writer, CallOptions(cache_dir=str(tmp_path / "cache"))),
        writer_id=writer.id,
    )
    mismatches = bank.rejections[bank.rejections["rule"] == "sentence_count_mismatch"]
    assert mismatches.empty, mismatches["detail"].tolist() if "detail" in mismatches else mismatches
    assert (bank.tasks["task"] == "cloze").any()
