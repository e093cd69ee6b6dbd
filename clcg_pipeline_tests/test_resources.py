"""The study resource parses an unchanged config folder once per process, and sees every edit."""

from collections.abc import Callable
from pathlib import Path

import pytest

import clcg_pipeline.resources as resources
from clcg_pipeline.config import ConfigError, load_config
from clcg_pipeline.resources import StudyResource


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The config folders parsed (each a real ``load_config``) while the test runs."""
    seen: list[str] = []

    def counting(config_dir: str) -> object:
        seen.append(config_dir)
        return load_config(config_dir)

    monkeypatch.setattr(resources, "load_config", counting)
    return seen


def test_an_unchanged_config_is_parsed_once(config_dir: Path, tmp_path: Path, parses: list[str]) -> None:
    study = StudyResource(config_dir=str(config_dir), data_dir=str(tmp_path / "data"))
    first = study.load()
    # Every asset of a run loads it (about 21 loads in a small study build): one parse.
    assert all(study.load() is first for _ in range(20))
    assert len(parses) == 1


def test_an_edit_is_seen_at_the_next_load(
    config_dir: Path, tmp_path: Path, parses: list[str], edit_yaml: Callable
) -> None:
    study = StudyResource(config_dir=str(config_dir), data_dir=str(tmp_path / "data"))
    before = study.load()
    # At once, same size of file: a cache keyed on modification times could miss it.
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(seed=doc["seed"] + 1))
    after = study.load()
    assert after.study.seed == before.study.seed + 1
    assert after.config_hash != before.config_hash
    assert len(parses) == 2
    assert study.load() is after


def test_a_broken_config_fails_every_load(config_dir: Path, tmp_path: Path, parses: list[str]) -> None:
    study = StudyResource(config_dir=str(config_dir), data_dir=str(tmp_path / "data"))
    study.load()
    (config_dir / "models.yaml").write_text("models: [", encoding="utf-8")
    for _ in range(2):  # a failure is not cached: each load says it
        with pytest.raises(ConfigError, match=r"models\.yaml: not valid YAML"):
            study.load()
    assert len(parses) == 3
