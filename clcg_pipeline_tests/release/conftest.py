"""The demo study's release, built once per test session with a fake API key in the environment."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from clcg_pipeline_tests.demo_study import DemoStudy

FAKE_KEY = "clcg-release-test-not-a-key-0d1e2a3d4b5e"
PSEUDONYM_KEY = "release-test-pseudonym-key"


@pytest.fixture(scope="session")
def release(demo_study: DemoStudy, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The demo's release, built while a (fake) provider key and the pseudonym key are set."""
    from clcg_pipeline.release import build_release

    out = tmp_path_factory.mktemp("release") / "v1"
    with mock.patch.dict(os.environ, {"OPENAI_API_KEY": FAKE_KEY, "CLCG_RELEASE_KEY": PSEUDONYM_KEY}):
        build_release(demo_study.data_dir, demo_study.config_dir, out)
    yield out


@pytest.fixture
def local_corpus(tmp_path: Path) -> Path:
    """A local copy of the demo corpus, as a reader would have downloaded it."""
    import importlib.resources

    with importlib.resources.as_file(importlib.resources.files("clcg_pipeline.corpus") / "demo_data") as src:
        shutil.copytree(src, tmp_path / "corpus")
    return tmp_path / "corpus"
