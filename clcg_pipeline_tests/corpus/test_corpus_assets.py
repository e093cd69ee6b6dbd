"""The corpus multi-asset through Dagster: a failed load stores nothing, bad bytes are flagged."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.corpus.assets import build_corpus_defs
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import ParquetIOManager, read_frame
from clcg_pipeline_tests.conftest import materialize

CORPUS_TABLES = ("articles", "paragraphs", "corpus_audit", "item_translations")


@pytest.fixture
def belebele_study(
    tmp_path: Path, config_dir: Path, fixtures: Path, edit_yaml: Callable
) -> tuple[Path, Path, Path]:
    """(config folder, Belebele folder with en + pt, empty data folder)."""
    source = tmp_path / "belebele"
    shutil.copytree(fixtures / "belebele_pt", source)
    edit_yaml(
        config_dir / "sources.yaml",
        lambda doc: doc.update(sources=[{"name": "bb", "kind": "belebele", "path": str(source)}]),
    )
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[x for x in doc["languages"] if x["iso"] in ("en", "pt", "sw")]),
    )
    data = tmp_path / "data"
    data.mkdir()
    return config_dir, source, data


def _corpus_asset(config: Path) -> dg.AssetsDefinition:
    defs = build_corpus_defs(load_config(config))
    return next(a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and a.node_def.name == "corpus")


def _run_corpus(
    corpus: dg.AssetsDefinition, config: Path, data: Path, instance: dg.DagsterInstance, **which: Any
) -> dg.ExecuteInProcessResult:
    """One run of the corpus asset; ``which``: its ``partition_key`` or the range's ``tags``."""
    return materialize(
        [corpus],
        **which,
        resources={
            "study": StudyResource(config_dir=str(config), data_dir=str(data)),
            "io_manager": ParquetIOManager(base_path=str(data)),
        },
        instance=instance,
        raise_on_error=False,
    )


def _materialize(
    config: Path, data: Path, language: str, instance: dg.DagsterInstance
) -> dg.ExecuteInProcessResult:
    return _run_corpus(_corpus_asset(config), config, data, instance, partition_key=language)


def _snapshot(data: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data)): p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file()}


def _failure_message(result: dg.ExecuteInProcessResult) -> str:
    """What a user reads: the UI's failure description, then the root cause ``clcg run`` prints."""
    events = [e for e in result.all_events if e.is_step_failure]
    assert events, "the run was expected to fail"
    data = events[0].step_failure_data
    error = data.error
    while error.cause is not None:
        error = error.cause
    if data.user_failure_data is None:  # an unexpected exception: show it whole
        return str(error.message)
    # clcg run prints the innermost cause without its class prefix (study_run strips
    # "clcg_pipeline...CorpusError: "); the UI shows the Failure's description.
    assert error.cls_name == "CorpusError", error.cls_name
    root = str(error.message).split(": ", 1)[1]
    return f"{data.user_failure_data.description}\n{root}"


def _windows_1252(path: Path) -> None:
    path.write_bytes(path.read_text(encoding="utf-8").encode("cp1252"))


def test_windows_1252_file_is_stored_and_flagged(belebele_study: tuple[Path, Path, Path]) -> None:
    config, source, data = belebele_study
    _windows_1252(source / "por_Latn.jsonl")
    with dg.DagsterInstance.ephemeral() as instance:
        for language in ("en", "pt"):
            result = _materialize(config, data, language, instance)
            assert result.success, _failure_message(result) if not result.success else ""
    audit = read_frame(data / "corpus_audit" / "language=pt" / "data.parquet")
    assert (audit["n_invalid_utf8"] == 1).all() and not audit["complete"].any()
    translations = read_frame(data / "item_translations" / "language=pt" / "data.parquet")
    # Storable text: the undecodable byte became U+FFFD, as in paragraph text.
    assert "\ufffd" in " ".join(translations["options_original"].map(" ".join))
    assert "\ufffd" in " ".join(translations["question_original"])


def _store_good_partitions(config: Path, data: Path, instance: dg.DagsterInstance) -> dict[str, bytes]:
    for language in ("en", "pt"):
        result = _materialize(config, data, language, instance)
        assert result.success, _failure_message(result)
    stored = _snapshot(data)
    assert {f"{t}/language=pt/data.parquet" for t in CORPUS_TABLES} <= set(stored)
    return stored


def _edit_line(path: Path, line: int, **fields: object) -> None:
    rows = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(rows[line - 1])
    record.update(fields)
    rows[line - 1] = json.dumps(record, ensure_ascii=False)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_bad_field_fails_before_anything_is_written_and_names_the_language(
    belebele_study: tuple[Path, Path, Path],
) -> None:
    config, source, data = belebele_study
    with dg.DagsterInstance.ephemeral() as instance:
        stored = _store_good_partitions(config, data, instance)
        # A question that is a number: before, articles/paragraphs/corpus_audit of pt were
        # rewritten and the step then failed writing item_translations.
        _edit_line(source / "por_Latn.jsonl", 2, question=7)
        for language in ("en", "pt"):
            result = _materialize(config, data, language, instance)
            assert not result.success
            message = _failure_message(result)
            # The English partition ran, but the Portuguese file is bad: the message says so.
            assert "language 'pt'" in message
            assert "por_Latn.jsonl:2: field 'question': must be a string" in message
            assert "nothing was stored" in message
            assert "clcg_pipeline.corpus" not in message
        assert _snapshot(data) == stored


def _make_pt_translation_unstorable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The source loader gives pt's first translated question as an int among strings: Arrow
    cannot store the column, after the three tables before it were good."""
    import clcg_pipeline.corpus.assets as corpus_assets

    real = corpus_assets.load_source_cached

    def with_unstorable_translation(source, languages):  # type: ignore[no-untyped-def]
        tables = real(source, languages)
        questions = list(tables.item_translations["question_original"])
        questions[list(tables.item_translations["language"]).index("pt")] = 3
        return dataclasses.replace(
            tables, item_translations=tables.item_translations.assign(question_original=questions)
        )

    monkeypatch.setattr(corpus_assets, "load_source_cached", with_unstorable_translation)


def test_unstorable_table_writes_no_table_of_the_partition(
    belebele_study: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure on the last output (after three good ones) leaves all four stored files as they were."""
    config, _, data = belebele_study
    with dg.DagsterInstance.ephemeral() as instance:
        stored = _store_good_partitions(config, data, instance)
        _make_pt_translation_unstorable(monkeypatch)
        result = _materialize(config, data, "pt", instance)
        assert not result.success
        message = _failure_message(result)
        assert "table 'item_translations' of language 'pt' cannot be stored" in message
        assert "none of ['articles', 'corpus_audit', 'item_translations', 'paragraphs']" in message
        assert _snapshot(data) == stored


@pytest.mark.parametrize("content", [b"", b"\n\n"], ids=["0-byte", "blank-lines"])
def test_empty_language_file_is_an_error_and_keeps_stored_data(
    belebele_study: tuple[Path, Path, Path], content: bytes
) -> None:
    config, source, data = belebele_study
    with dg.DagsterInstance.ephemeral() as instance:
        stored = _store_good_partitions(config, data, instance)
        (source / "por_Latn.jsonl").write_bytes(content)
        result = _materialize(config, data, "pt", instance)
        assert not result.success
        message = _failure_message(result)
        assert "language 'pt'" in message and "por_Latn.jsonl" in message
        assert "must hold records" in message and "delete it" in message
        assert _snapshot(data) == stored


# -- several languages in one run (issue 32: the source parsed once, not once per language) --

_RANGE = {"dagster/asset_partition_range_start": "en", "dagster/asset_partition_range_end": "pt"}


def _materialize_range(config: Path, data: Path, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """One run over en..pt, as a backfill of the corpus (or ``clcg run``) launches it."""
    corpus = _corpus_asset(config)
    assert corpus.backfill_policy == dg.BackfillPolicy.single_run()  # a backfill is one run
    return _run_corpus(corpus, config, data, instance, tags=_RANGE)


def test_a_range_run_stores_and_checks_each_language_as_its_partition(
    belebele_study: tuple[Path, Path, Path],
) -> None:
    config, _, data = belebele_study
    with dg.DagsterInstance.ephemeral() as instance:
        result = _materialize_range(config, data, instance)
        assert result.success, _failure_message(result) if not result.success else ""
        for table in CORPUS_TABLES:
            assert instance.get_materialized_partitions(dg.AssetKey(table)) == {"en", "pt"}, table
            for language in ("en", "pt"):
                stored = read_frame(data / table / f"language={language}" / "data.parquet")
                assert set(stored["language"]) <= {language}, (table, language)
        evaluations = {(e.check_name, str(e.partition)) for e in result.get_asset_check_evaluations()}
        assert evaluations == {
            (check, language)
            for check in ("alignment_coverage", "language_has_paragraphs")
            for language in ("en", "pt")
        }
    paragraphs = read_frame(data / "paragraphs" / "language=pt" / "data.parquet")
    assert len(paragraphs) > 0


def test_an_unstorable_table_in_a_range_run_writes_no_language(
    belebele_study: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pt's table cannot be stored: en, earlier in the range, is not overwritten either."""
    config, _, data = belebele_study
    with dg.DagsterInstance.ephemeral() as instance:
        stored = _store_good_partitions(config, data, instance)
        _make_pt_translation_unstorable(monkeypatch)
        result = _materialize_range(config, data, instance)
        assert not result.success
        assert "table 'item_translations' of language 'pt' cannot be stored" in _failure_message(result)
        assert _snapshot(data) == stored
