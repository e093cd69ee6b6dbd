"""A long-document source's bad language file: named (language and file) and nothing stored changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from clcg_pipeline.config import GranularityBucket, GranularitySettings, load_config
from clcg_pipeline.corpus import CorpusError
from clcg_pipeline.granularity._documents import DocumentError, load_long_documents
from clcg_pipeline.granularity.assets import build_task_bank_defs
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import ParquetIOManager
from clcg_pipeline_tests.conftest import materialize

EMPTY = pytest.mark.parametrize("content", [b"", b"\n \n\t\n"], ids=["0-byte", "whitespace-only"])


def _record(doc_id: str, lang: str) -> dict:
    paragraphs = [
        {"pid": f"p{i:02d}", "text": f"Paragraph {i} of {doc_id} says " + " ".join(["word"] * 60) + "."}
        for i in range(1, 21)
    ]
    return {"doc_id": doc_id, "language": lang, "paragraphs": paragraphs}


def _source(root: Path, languages: list[str]) -> Path:
    (root / "articles").mkdir(parents=True, exist_ok=True)
    for lang in languages:
        (root / "articles" / f"{lang}.jsonl").write_text(
            json.dumps(_record("un-1", lang)) + "\n", encoding="utf-8"
        )
    return root


def _load(root: Path, languages: list[str]) -> object:
    settings = GranularitySettings(
        enabled=True,
        source=str(root),
        buckets=[GranularityBucket(name="1K-2K", min_tokens=1000, max_tokens=2000, documents=1)],
    )
    return load_long_documents(str(root), settings, languages=languages, reference="en", threshold=0.9)


@EMPTY
def test_an_empty_language_file_is_an_error_naming_language_and_file(tmp_path: Path, content: bytes) -> None:
    root = _source(tmp_path / "long", ["en", "pt", "sw"])
    path = root / "articles" / "sw.jsonl"
    path.write_bytes(content)
    with pytest.raises(DocumentError) as raised:
        _load(root, ["en", "pt", "sw"])
    message = str(raised.value)
    assert message.startswith("language 'sw': "), message
    assert str(path) in message and "must hold records" in message
    assert ("0 bytes" in message) == (content == b"")
    # The study corpus's error type: reported the same way, with the language and file set.
    assert isinstance(raised.value, CorpusError)
    assert (raised.value.language, raised.value.file) == ("sw", str(path))


def test_a_bad_record_names_its_language_too(tmp_path: Path) -> None:
    root = _source(tmp_path / "long", ["en", "pt"])
    path = root / "articles" / "pt.jsonl"
    path.write_text('{"doc_id": "un-1",\n', encoding="utf-8")
    with pytest.raises(DocumentError) as raised:
        _load(root, ["en", "pt"])
    assert str(raised.value).startswith(f"language 'pt': {path}:1: not valid JSON")
    assert raised.value.language == "pt"


def _run(config_dir: Path, data: Path, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    config = load_config(config_dir)
    resources = {
        "study": StudyResource(config_dir=str(config_dir), data_dir=str(data)),
        "io_manager": ParquetIOManager(base_path=str(data)),
    }
    assets = [a for a in build_task_bank_defs(config).assets if isinstance(a, dg.AssetsDefinition)]
    documents = [a for a in assets if "long_documents" in {k.to_user_string() for k in a.keys}]
    return materialize(documents, resources=resources, instance=instance, raise_on_error=False)


def _snapshot(data: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data)): p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file()}


@EMPTY
def test_an_empty_language_file_fails_the_asset_and_keeps_what_is_stored(
    config_dir: Path,
    edit_yaml: Callable[[Path, Callable[[dict], None]], None],
    tmp_path: Path,
    content: bytes,
) -> None:
    root = _source(tmp_path / "long", ["en", "pt"])
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[x for x in doc["languages"] if x["iso"] in ("en", "pt")]),
    )
    edit_yaml(config_dir / "study.yaml", lambda doc: doc["granularity"].update(source=str(root)))
    data = tmp_path / "data"
    with dg.DagsterInstance.ephemeral() as instance:
        assert _run(config_dir, data, instance).success
        stored = _snapshot(data)
        assert any(name.startswith("long_documents") for name in stored)
        (root / "articles" / "pt.jsonl").write_bytes(content)
        result = _run(config_dir, data, instance)
        assert not result.success
        (failure,) = [e for e in result.all_events if e.is_step_failure]
        message = str(failure.step_failure_data.error.message if failure.step_failure_data.error else "")
        message += str(failure.step_failure_data.user_failure_data)
        assert "language 'pt'" in message and str(root / "articles" / "pt.jsonl") in message
        assert _snapshot(data) == stored
