"""Code versions by content: what makes `clcg run` (and the daemon) treat a partition as current."""

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.orchestration._freshness import Freshness
from clcg_pipeline.orchestration._versions import code_versions

DEMO = Path(__file__).resolve().parents[1] / "clcg_pipeline" / "corpus" / "demo_data"


@pytest.fixture
def jsonl_config(
    config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The default config reading a copy of the demo corpus as a jsonl source."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    source = tmp_path / "checkout-a" / "corpus"
    shutil.copytree(DEMO / "articles", source)
    edit_yaml(
        config_dir / "sources.yaml",
        lambda doc: doc.update(sources=[{"name": "mine", "kind": "jsonl", "path": str(source)}]),
    )
    return config_dir


def _source(config_dir: Path) -> Path:
    return Path(load_config(config_dir).sources.primary.path or "")


def test_touching_a_source_file_changes_nothing(jsonl_config: Path) -> None:
    before = code_versions(load_config(jsonl_config))
    for file in _source(jsonl_config).iterdir():
        stat = file.stat()
        os.utime(file, ns=(stat.st_atime_ns + 10**10, stat.st_mtime_ns + 10**10))
    assert code_versions(load_config(jsonl_config)) == before


def test_editing_a_source_file_changes_the_version(jsonl_config: Path) -> None:
    before = code_versions(load_config(jsonl_config))
    ka = _source(jsonl_config) / "ka.jsonl"
    ka.write_bytes(ka.read_bytes().replace(b"a", b"b", 1))
    after = code_versions(load_config(jsonl_config))
    assert after["corpus"] != before["corpus"] and after["study"] != before["study"]


def test_a_second_checkout_of_the_same_files_has_the_same_version(
    jsonl_config: Path, tmp_path: Path, edit_yaml: Callable
) -> None:
    before = code_versions(load_config(jsonl_config))
    other = tmp_path / "checkout-b" / "corpus"
    shutil.copytree(_source(jsonl_config), other)  # new paths, new modification times
    edit_yaml(jsonl_config / "sources.yaml", lambda doc: doc["sources"][0].update(path=str(other)))
    assert code_versions(load_config(jsonl_config)) == before


def test_a_new_model_leaves_the_corpus_version_alone(jsonl_config: Path, edit_yaml: Callable) -> None:
    before = code_versions(load_config(jsonl_config))

    def add_model(doc: dict) -> None:
        doc["models"].append({**doc["models"][0], "id": "another-reader"})

    edit_yaml(jsonl_config / "models.yaml", add_model)
    after = code_versions(load_config(jsonl_config))
    assert after["corpus"] == before["corpus"]
    assert after["study"] != before["study"]
    # Nor the study inputs' or the first model's: only the new model's partitions are stale.
    assert after["inputs"] == before["inputs"]
    assert after["model:lexical-reader"] == before["model:lexical-reader"]


def test_content_hashes_are_cached_across_processes(jsonl_config: Path, tmp_path: Path) -> None:
    code_versions(load_config(jsonl_config))
    assert (tmp_path / "home" / "clcg_source_hashes.json").exists()


def test_a_responses_partition_stopped_by_the_budget_is_unfinished() -> None:
    cases = [
        ({"ok": 5}, False),
        ({"ok": 3, "skipped_budget": 2}, True),
        ({"batch_pending": 1}, True),
        ({}, False),
    ]
    fresh = Freshness.__new__(Freshness)
    fresh.folder_record = lambda asset, partition: None  # type: ignore[method-assign]
    assert fresh.unfinished_calls("en|m") is True  # never recorded here
    for outcomes, unfinished in cases:  # the folder's records say
        record = {"metadata": {"outcomes": outcomes}, "path": "x"}
        fresh.folder_record = lambda asset, partition, r=record: r  # type: ignore[method-assign]
        assert fresh.unfinished_calls("en|m") is unfinished, outcomes
