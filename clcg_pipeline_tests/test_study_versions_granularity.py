"""Editing a long-document corpus (study.granularity.source) makes the study assets stale."""

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.orchestration._versions import code_versions

DEMO = Path(__file__).resolve().parents[1] / "clcg_pipeline" / "corpus" / "demo_data"


def test_editing_the_long_document_source_changes_the_study_version(
    config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    source = tmp_path / "long" / "articles"
    shutil.copytree(DEMO / "articles", source)
    edit_yaml(config_dir / "study.yaml", lambda doc: doc["granularity"].update(source=str(source.parent)))
    before = code_versions(load_config(config_dir))
    pt = source / "pt.jsonl"
    pt.write_bytes(pt.read_bytes().replace(b"a", b"b", 1))
    after = code_versions(load_config(config_dir))
    # Only long_documents and what follows read it: the corpus assets stay current.
    assert after["study"] != before["study"] and after["corpus"] == before["corpus"]
    # long_documents is a study input, upstream of every model's partitions: they are stale too.
    assert after["inputs"] != before["inputs"]
