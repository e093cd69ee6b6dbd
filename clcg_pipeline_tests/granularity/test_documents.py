"""Long documents: buckets, aligned pids, regions and positions, the JSONL source, the assets."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.config import GranularityBucket, GranularitySettings, load_config
from clcg_pipeline.corpus import audit_corpus, load_source_cached
from clcg_pipeline.corpus._tokens import count_tokens
from clcg_pipeline.corpus.assets import build_corpus_defs
from clcg_pipeline.granularity._documents import (
    DocumentError,
    assemble_documents,
    assign_positions,
    assign_regions,
    blank_sentence,
    build_long_documents,
    load_long_documents,
    split_sentences,
)
from clcg_pipeline.granularity.assets import build_task_bank_defs
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import ParquetIOManager
from clcg_pipeline_tests.conftest import materialize

DEMO = Path(__file__).resolve().parents[2] / "assets_config"
LANGS = ["en", "pt", "is", "mt", "ka", "ht", "sw"]


@pytest.fixture(scope="module")
def demo_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    config = load_config(DEMO)
    tables = load_source_cached(config.sources.primary, config.languages)
    audit = audit_corpus(tables.articles, tables.paragraphs, reference="en", threshold=0.9)
    return tables.paragraphs, audit


def _settings(**kw: object) -> GranularitySettings:
    base: dict[str, object] = {
        "enabled": True,
        "buckets": [
            GranularityBucket(name="1K-2K", min_tokens=1000, max_tokens=2000, documents=2),
            GranularityBucket(name="2K-4K", min_tokens=2000, max_tokens=4000, documents=1),
        ],
    }
    base.update(kw)
    return GranularitySettings(**base)  # type: ignore[arg-type]


def test_demo_assembles_every_configured_bucket_with_same_pids_in_every_language(
    demo_tables: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    paragraphs, audit = demo_tables
    result = assemble_documents(paragraphs, audit, _settings(), languages=LANGS, reference="en")
    assert result.problems == []
    docs, paras = result.documents, result.paragraphs
    assert sorted(docs.loc[docs["language"] == "en", "bucket"]) == ["1K-2K", "1K-2K", "2K-4K"]
    # demo-006 has no Haitian Creole version: not complete in every included language.
    assert not any("demo-006" in m for ms in docs["member_doc_ids"] for m in ms)
    assert any("demo-006" in n for n in result.notes)
    for doc_id, group in paras.groupby("doc_id"):
        pid_lists = {lang: list(g.sort_values("ordinal")["pid"]) for lang, g in group.groupby("language")}
        assert set(pid_lists) == set(LANGS)
        assert all(p == pid_lists["en"] for p in pid_lists.values()), doc_id
        en = group[group["language"] == "en"]
        assert all(
            pid == f"{s}:{p}"
            for pid, s, p in zip(en["pid"], en["source_doc_id"], en["source_pid"], strict=True)
        )
    for row in docs[docs["language"] == "en"].itertuples():
        assert row.assembly.startswith(f"assembled from {len(row.member_doc_ids)} articles")
        assert "seed 42" in row.assembly
        assert row.summary is None


def test_bucket_lengths_are_respected_counted_on_english(
    demo_tables: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    paragraphs, audit = demo_tables
    result = assemble_documents(paragraphs, audit, _settings(), languages=LANGS, reference="en")
    limits = {"1K-2K": (1000, 2000), "2K-4K": (2000, 4000)}
    for row in result.documents.itertuples():
        en = result.paragraphs[
            (result.paragraphs["doc_id"] == row.doc_id) & (result.paragraphs["language"] == "en")
        ]
        recount = sum(count_tokens(list(en["text"])))
        assert row.n_tokens_reference == recount
        low, high = limits[row.bucket]
        assert low <= recount <= high
    # Articles are not reused within a bucket.
    small = result.documents[(result.documents["bucket"] == "1K-2K") & (result.documents["language"] == "en")]
    members = [m for ms in small["member_doc_ids"] for m in ms]
    assert len(members) == len(set(members))


def test_an_impossible_bucket_is_reported_not_silently_empty(
    demo_tables: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    paragraphs, audit = demo_tables
    settings = _settings(buckets=[GranularityBucket(name="8K-16K", min_tokens=8000, max_tokens=16000)])
    result = assemble_documents(paragraphs, audit, settings, languages=LANGS, reference="en")
    (report,) = result.buckets
    assert report.status == "empty" and report.wanted == 10 and report.built == 0
    assert "English tokens in all" in (report.reason or "")
    assert result.documents.empty
    assert result.problems and "8K-16K" in result.problems[0]


def test_regions_and_positions_are_balanced() -> None:
    regions = assign_regions([100] * 12, "tokens")
    assert [regions.count(r) for r in ("begin", "middle", "end")] == [4, 4, 4]
    assert assign_positions(regions) == ["begin", "begin", "middle", "end"] * 3
    assert assign_positions(assign_regions([100] * 9, "paragraphs")) == ["begin", "middle", "end"] * 3
    # Token rule: one long paragraph takes its third; the paragraph rule counts paragraphs.
    assert assign_regions([900, 50, 50], "tokens") == ["middle", "end", "end"]
    assert assign_regions([900, 50, 50], "paragraphs") == ["begin", "middle", "end"]
    with pytest.raises(ValueError, match="region_split"):
        assign_regions([1], "words")


def test_demo_documents_have_every_region_and_position(
    demo_tables: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    paragraphs, audit = demo_tables
    result = assemble_documents(paragraphs, audit, _settings(), languages=LANGS, reference="en")
    en = result.paragraphs[result.paragraphs["language"] == "en"]
    for doc_id, group in en.groupby("doc_id"):
        cells = set(zip(group["region"], group["position"], strict=True))
        assert len(cells) == 9, doc_id
        shares = group.groupby("region")["n_tokens"].sum() / group["n_tokens"].sum()
        assert shares.between(0.2, 0.45).all(), (doc_id, shares.to_dict())


def test_sentence_splitter_keeps_abbreviations_quotes_and_caseless_scripts() -> None:
    text = "Dr. Arlen spoke on 28 October. 'Our town grew,' he said. The cost was 4.6 million euros."
    assert split_sentences(text) == [
        "Dr. Arlen spoke on 28 October.",
        "'Our town grew,' he said.",
        "The cost was 4.6 million euros.",
    ]
    assert len(split_sentences("Framkvæmdir hófust í mars og lauk 28. október 2019. Nýtt.")) == 2
    assert len(split_sentences("ეს პირველია. ეს მეორეა.")) == 2
    assert blank_sentence(text, 1, "[BLANK 1]") == (
        "Dr. Arlen spoke on 28 October. [BLANK 1] The cost was 4.6 million euros."
    )
    with pytest.raises(IndexError):
        blank_sentence(text, 3, "x")


def _write(folder: Path, lang: str, records: list[dict | str]) -> Path:
    (folder / "articles").mkdir(parents=True, exist_ok=True)
    path = folder / "articles" / f"{lang}.jsonl"
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records) + "\n",
        encoding="utf-8",
    )
    return path


def _doc(doc_id: str, lang: str, n: int, words: int, summary: str | None = None) -> dict:
    paragraphs = [
        {"pid": f"p{i:02d}", "text": f"Paragraph {i} of {doc_id} says " + " ".join(["word"] * words) + "."}
        for i in range(1, n + 1)
    ]
    record = {"doc_id": doc_id, "language": lang, "paragraphs": paragraphs}
    if summary is not None:
        record["summary"] = summary
    return record


def test_jsonl_long_document_source_buckets_documents_and_keeps_summaries(tmp_path: Path) -> None:
    _write(tmp_path, "en", [_doc("un-1", "en", 20, 60, "An English summary."), _doc("un-2", "en", 3, 5)])
    _write(tmp_path, "pt", [_doc("un-1", "pt", 20, 60, "Um resumo."), _doc("un-2", "pt", 3, 5)])
    settings = _settings(
        source=str(tmp_path), buckets=[GranularityBucket(name="1K-2K", min_tokens=1000, max_tokens=2000)]
    )
    result = load_long_documents(
        str(tmp_path), settings, languages=["en", "pt"], reference="en", threshold=0.9
    )
    docs = result.documents
    assert list(docs["doc_id"].unique()) == ["un-1"]
    assert dict(zip(docs["language"], docs["summary"], strict=True)) == {
        "en": "An English summary.",
        "pt": "Um resumo.",
    }
    assert docs["source"].iloc[0] == str(tmp_path)
    assert any("un-2" in n for n in result.notes)  # too short for every bucket: said, not dropped silently
    assert result.buckets[0].status == "short"  # 1 of the default 10
    same = result.paragraphs.groupby("language")["pid"].apply(list)
    assert same["en"] == same["pt"]


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"doc_id": "un-1", "language": "en", "paragraphs": [{"pid": "p01"}]}, "paragraphs.0.text"),
        (
            {"doc_id": "un-1", "language": "en", "paragraphs": [{"pid": "p01", "text": "x"}], "summary": 3},
            "summary",
        ),
        ({"doc_id": "un-1", "language": "en", "paragraphs": [], "extra": 1}, "paragraphs"),
    ],
)
def test_malformed_jsonl_record_names_file_record_and_field(tmp_path: Path, record: dict, field: str) -> None:
    path = _write(tmp_path, "en", [_doc("un-0", "en", 2, 3), record])
    with pytest.raises(DocumentError) as info:
        load_long_documents(str(tmp_path), _settings(), languages=["en"], reference="en", threshold=0.9)
    message = str(info.value)
    assert f"{path}:2" in message and f"field '{field}'" in message


def test_invalid_json_and_missing_folder_are_named(tmp_path: Path) -> None:
    path = _write(tmp_path, "en", ['{"doc_id": "un-1",'])
    with pytest.raises(DocumentError, match=f"{path}:1: not valid JSON"):
        load_long_documents(str(tmp_path), _settings(), languages=["en"], reference="en", threshold=0.9)
    with pytest.raises(DocumentError, match="not found"):
        build_long_documents(
            _settings(source=str(tmp_path / "nope")),
            paragraphs=pd.DataFrame(),
            audit=pd.DataFrame(),
            languages=["en"],
            reference="en",
            threshold=0.9,
        )


def _materialize(config_dir: Path, data: Path, *, tasks_only: bool = False) -> dg.ExecuteInProcessResult:
    config = load_config(config_dir)
    resources = {
        "study": StudyResource(config_dir=str(config_dir), data_dir=str(data)),
        "io_manager": ParquetIOManager(base_path=str(data)),
    }
    corpus = next(
        a
        for a in build_corpus_defs(config).assets
        if getattr(a, "node_def", None) and a.node_def.name == "corpus"
    )
    mine = [a for a in build_task_bank_defs(config).assets if isinstance(a, dg.AssetsDefinition)]
    with dg.DagsterInstance.ephemeral() as instance:
        if tasks_only:
            bank = [a for a in mine if "granularity_tasks" in {k.to_user_string() for k in a.keys}]
            return materialize(mine, selection=bank, resources=resources, instance=instance)
        for language in ("en", "pt"):
            assert materialize(
                [corpus], partition_key=language, resources=resources, instance=instance
            ).success
        return materialize([corpus, *mine], selection=mine, resources=resources, instance=instance)


def test_assets_store_documents_and_tasks_and_warn_on_an_impossible_bucket(
    config_dir: Path, edit_yaml: Callable[[Path, Callable[[dict], None]], None], tmp_path: Path
) -> None:
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[x for x in doc["languages"] if x["iso"] in ("en", "pt")]),
    )

    def buckets(doc: dict) -> None:
        doc["granularity"]["buckets"] = [
            {"name": "1K-2K", "min_tokens": 1000, "max_tokens": 2000, "documents": 1},
            {"name": "50K-60K", "min_tokens": 50000, "max_tokens": 60000},
        ]

    edit_yaml(config_dir / "study.yaml", buckets)
    result = _materialize(config_dir, tmp_path / "data")
    assert result.success
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    bucket = checks["every_bucket_has_documents"]
    assert not bucket.passed and bucket.severity == dg.AssetCheckSeverity.WARN
    assert "50K-60K: empty, 0 of 10" in (bucket.description or "")
    assert checks["task_bank_not_empty"].passed, checks["task_bank_not_empty"].description
    docs = pd.read_parquet(tmp_path / "data" / "long_documents")
    assert sorted(docs["language"]) == ["en", "pt"]
    tasks = pd.read_parquet(tmp_path / "data" / "granularity_tasks")
    assert {"word_single_qa", "word_multi_qa", "cloze", "paragraph_fill", "translation"} <= set(tasks["task"])
    # Built again: the stored bank is kept (frozen), identical.
    again = _materialize(config_dir, tmp_path / "data", tasks_only=True)
    (event,) = [
        m
        for m in again.get_asset_materialization_events()
        if m.asset_key.to_user_string() == "granularity_tasks"
    ]
    assert event.materialization.metadata["provenance"].value.startswith("stored bank kept")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "data" / "granularity_tasks"), tasks)


def test_disabled_family_stores_empty_tables_with_a_visible_status(
    config_dir: Path, edit_yaml: Callable[[Path, Callable[[dict], None]], None], tmp_path: Path
) -> None:
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[x for x in doc["languages"] if x["iso"] in ("en", "pt")]),
    )
    edit_yaml(config_dir / "study.yaml", lambda doc: doc["granularity"].update(enabled=False))
    result = _materialize(config_dir, tmp_path / "data")
    assert result.success
    for check in result.get_asset_check_evaluations():
        assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
        assert "enabled is false" in (check.description or "")
    events = {m.asset_key.to_user_string(): m for m in result.get_asset_materialization_events()}
    assert events["long_documents"].materialization.metadata["status"].value.startswith("skipped")
    assert pd.read_parquet(tmp_path / "data" / "granularity_tasks").empty
